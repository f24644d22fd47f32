"""Talking to the Hub safely: an `HfApi` built at call time, retries with backoff on transient
errors, and error messages that can never carry the token.

The endpoint and token are read when a command runs (HF_ENDPOINT, HF_TOKEN or the stored
`hf auth login` token), so tests and users can point the same code at another server.
"""
from __future__ import annotations

import os
import random
import re
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from tomforge.errors import ExitCode, TomforgeError

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_TOKEN_SHAPE = re.compile(r"\bhf_[A-Za-z0-9]{8,}\b")


class PublishError(TomforgeError):
    """A remote step failed for good (after retries); the message is redacted."""

    exit_code = ExitCode.REMOTE


class ConflictError(PublishError):
    """Someone else changed the repo (parent commit moved) or the tag holds another release."""

    exit_code = ExitCode.CONFLICT


class UnreachableError(PublishError):
    """No connection to the Hub could be made (offline, refused, unknown host): not retried."""


def resolve_token() -> str | None:
    """HF_TOKEN, else the token `hf auth login` stored; None for anonymous reads."""
    from huggingface_hub import get_token

    return get_token()


def make_api(endpoint: str | None = None, token: str | None = None):
    """An HfApi for HF_ENDPOINT as set now (not at import) and the resolved token."""
    from huggingface_hub import HfApi

    from tomforge.hub.manifest import producer_version

    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    return HfApi(endpoint=endpoint, token=token or resolve_token(), library_name="tomforge",
                 library_version=producer_version())


def redact(text: str, token: str | None = None) -> str:
    """Remove the token (and anything shaped like a Hub token) from a message."""
    if token:
        text = text.replace(token, "***")
    return _TOKEN_SHAPE.sub("hf_***", text)


def status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


_UNREACHABLE = frozenset({"ConnectError", "OfflineModeIsEnabled", "NewConnectionError", "NameResolutionError"})


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it (huggingface_hub wraps a refused connection in LocalEntryNotFoundError)."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def unreachable_cause(exc: BaseException) -> BaseException | None:
    """The error in `exc`'s chain that says no connection could be made, or None."""
    return next((e for e in _chain(exc) if _names(e) & _UNREACHABLE), None)


def is_unreachable(exc: BaseException) -> bool:
    """No connection could be made at all (refused, no route, name not resolved, offline mode):
    retrying for seconds would not help, so it fails at once, dry run or not."""
    return unreachable_cause(exc) is not None


def unreachable(action: str, exc: BaseException, token: str | None = None) -> UnreachableError:
    """The one line every command prints when the Hub cannot be reached (exit 5), whatever it was doing."""
    cause = unreachable_cause(exc) or exc
    return UnreachableError(f"{action} failed: cannot reach the Hub ({describe(cause, token)}); check the "
                            "network connection, HF_ENDPOINT and HF_HUB_OFFLINE")


def is_transient(exc: BaseException) -> bool:
    """5xx/429/408 answers, timeouts and connections dropped mid-way are worth retrying; the rest are not."""
    status = status_of(exc)
    if status is not None:
        return status in TRANSIENT_STATUS
    if is_unreachable(exc):
        return False
    return bool(_names(exc) & {"TimeoutException", "NetworkError", "RemoteProtocolError", "ConnectionError",
                               "TimeoutError"})


def describe(exc: BaseException, token: str | None = None) -> str:
    """One redacted line: the error type, the HTTP status, the first line and the server's own
    message (which a proxy may have filled with anything, credentials included)."""
    status = status_of(exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    prefix = f"HTTP {status}: " if status is not None else ""
    server = " ".join(str(getattr(exc, "server_message", "") or "").split())
    detail = f" ({server})" if server and server not in first else ""
    return redact(f"{type(exc).__name__}: {prefix}{first}{detail}", token)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter: base, 2*base, 4*base... capped; `attempts` tries in all."""

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int) -> float:
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def with_retries(action: str, call: Callable[[], T], policy: RetryPolicy, token: str | None = None,
                 on_retry: Callable[[str], None] | None = None) -> T:
    """Run `call`, retrying transient failures; raise PublishError (redacted) when it gives up."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return call()
        except PublishError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised redacted
            if is_unreachable(exc):
                raise unreachable(action, exc, token) from None
            if not is_transient(exc) or attempt == policy.attempts:
                raise PublishError(f"{action} failed: {describe(exc, token)}") from None
            if on_retry is not None:
                on_retry(f"{action}: {describe(exc, token)}; retry {attempt}/{policy.attempts - 1}")
            policy.sleep(policy.delay(attempt))
    raise AssertionError("unreachable")
