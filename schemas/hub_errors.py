"""The Hub's errors and how they are worded: one redacted line, whatever layer met them.

Every layer that talks to the Hub (a source downloaded by `warehouse.sources`, a release fetched by
`rl.release`, a publish by `hub.remote`) words a failure here, so "cannot reach the Hub" is the same
line and exit code (5) in every command, and no message can carry the token. It imports nothing of
the project but `tomforge.schemas.errors`: the lowest layer (ARCHITECTURE.md).
"""

from __future__ import annotations

import re

from tomforge.schemas.errors import ExitCode, TomforgeError

_TOKEN_SHAPE = re.compile(r"\bhf_[A-Za-z0-9]{8,}\b")


class PublishError(TomforgeError):
    """A remote step failed for good (after retries); the message is redacted."""

    exit_code = ExitCode.REMOTE


class ConflictError(PublishError):
    """Someone else changed the repo (parent commit moved) or the tag holds another release."""

    exit_code = ExitCode.CONFLICT


class UnreachableError(PublishError):
    """No connection to the Hub could be made (offline, refused, unknown host): not retried."""


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
    return UnreachableError(
        f"{action} failed: cannot reach the Hub ({describe(cause, token)}); check the "
        "network connection, HF_ENDPOINT and HF_HUB_OFFLINE"
    )


def describe(exc: BaseException, token: str | None = None) -> str:
    """One redacted line: the error type, the HTTP status, the first line and the server's own
    message (which a proxy may have filled with anything, credentials included)."""
    status = status_of(exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    prefix = f"HTTP {status}: " if status is not None else ""
    server = " ".join(str(getattr(exc, "server_message", "") or "").split())
    detail = f" ({server})" if server and server not in first else ""
    return redact(f"{type(exc).__name__}: {prefix}{first}{detail}", token)
