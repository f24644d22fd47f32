"""Talking to the Hub safely: an `HfApi` built at call time, retries with backoff on transient
errors, and error messages that can never carry the token.

The endpoint and token are read when a command runs (HF_ENDPOINT, HF_TOKEN or the stored
`hf auth login` token), so tests and users can point the same code at another server.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from tomforge.schemas.hub_errors import (
    PublishError,
    _names,
    describe,
    is_unreachable,
    status_of,
    unreachable,
)

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def resolve_token() -> str | None:
    """HF_TOKEN, else the token `hf auth login` stored; None for anonymous reads."""
    from huggingface_hub import get_token

    return get_token()


def make_api(endpoint: str | None = None, token: str | None = None):
    """An HfApi for HF_ENDPOINT as set now (not at import) and the resolved token."""
    from huggingface_hub import HfApi

    from tomforge.hub.manifest import producer_version

    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    return HfApi(
        endpoint=endpoint, token=token or resolve_token(), library_name="tomforge", library_version=producer_version()
    )


def is_transient(exc: BaseException) -> bool:
    """5xx/429/408 answers, timeouts and connections dropped mid-way are worth retrying; the rest are not."""
    status = status_of(exc)
    if status is not None:
        return status in TRANSIENT_STATUS
    if is_unreachable(exc):
        return False
    return bool(
        _names(exc) & {"TimeoutException", "NetworkError", "RemoteProtocolError", "ConnectionError", "TimeoutError"}
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter: base, 2*base, 4*base... capped; `attempts` tries in all."""

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int) -> float:
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def with_retries(
    action: str,
    call: Callable[[], T],
    policy: RetryPolicy,
    token: str | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> T:
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
