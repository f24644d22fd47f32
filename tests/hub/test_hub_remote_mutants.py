"""hub/remote.py against hand-worked values (issue 38: the mutants mutmut left alive): which answers are retried,
the backoff's delays with the jitter pinned, the exact retry and give-up lines, the token never printed, and the
API pointed where the environment says at call time. Fake exceptions and a recording sleep: no server (< 1 s)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

import tomforge.hub.remote as remote
from tomforge.hub.remote import TRANSIENT_STATUS, RetryPolicy, is_transient, make_api, with_retries
from tomforge.schemas.hub_errors import PublishError, UnreachableError


def answered(status: int, text: str = "down") -> Exception:
    class Answered(Exception):
        response = SimpleNamespace(status_code=status)

    return Answered(text)


def named(name: str, text: str = "x") -> Exception:
    return type(name, (Exception,), {})(text)


def test_the_transient_answers_are_exactly_these() -> None:
    assert TRANSIENT_STATUS == {408, 429, 500, 502, 503, 504}
    for status in (408, 429, 500, 502, 503, 504):
        assert is_transient(answered(status))
    for status in (400, 401, 403, 404, 409, 412, 501, 505):
        assert not is_transient(answered(status))


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (TimeoutError("slow"), True),
        (ConnectionResetError("reset"), True),  # a ConnectionError: dropped mid-way
        (named("TimeoutException"), True),
        (named("NetworkError"), True),
        (named("RemoteProtocolError"), True),
        (named("ReadTimeoutError"), False),  # only the names listed
        (ValueError("bad"), False),
        (named("ConnectError"), False),  # no connection at all: not retried
    ],
)
def test_errors_without_an_answer_are_retried_by_their_kind(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_an_answer_decides_before_the_chain() -> None:
    exc = answered(503)
    exc.__cause__ = named("ConnectError")  # a status came back, so a connection was made
    assert is_transient(exc)


def test_the_backoff_doubles_from_base_up_to_the_cap_with_jitter_between_half_and_whole(monkeypatch) -> None:
    policy = RetryPolicy()
    assert (policy.attempts, policy.base_delay, policy.max_delay, policy.sleep) == (5, 1.0, 30.0, time.sleep)
    monkeypatch.setattr(remote.random, "random", lambda: 0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5, 6, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    monkeypatch.setattr(remote.random, "random", lambda: 0.5)
    assert RetryPolicy(base_delay=2.0, max_delay=5.0).delay(2) == 3.0  # min(5, 2*2) * 0.75
    assert RetryPolicy(base_delay=2.0, max_delay=5.0).delay(3) == 3.75  # min(5, 8) * 0.75


def flaky(failures: list[Exception], result: str = "done"):
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return result

    return call, calls


def test_transient_failures_are_retried_with_one_line_each_then_succeed(monkeypatch) -> None:
    monkeypatch.setattr(remote.random, "random", lambda: 0.0)
    slept: list[float] = []
    lines: list[str] = []
    call, calls = flaky([answered(429, "too many requests"), answered(503, "busy hf_abcdefgh1234")])
    out = with_retries("upload", call, RetryPolicy(attempts=4, sleep=slept.append), on_retry=lines.append)
    assert (out, len(calls), slept) == ("done", 3, [0.5, 1.0])
    assert lines == [
        "upload: Answered: HTTP 429: too many requests; retry 1/3",
        "upload: Answered: HTTP 503: busy hf_***; retry 2/3",
    ]
    call, calls = flaky([answered(500)])
    assert with_retries("x", call, RetryPolicy(sleep=slept.append)) == "done"  # no on_retry: silent


def test_it_gives_up_after_the_last_attempt_with_one_redacted_line(monkeypatch) -> None:
    slept: list[float] = []
    call, calls = flaky([answered(503, "down for my-secret")] * 9)
    with pytest.raises(PublishError) as info:
        with_retries("push", call, RetryPolicy(attempts=3, sleep=slept.append), token="my-secret")
    assert str(info.value) == "push failed: Answered: HTTP 503: down for ***"
    assert type(info.value) is PublishError
    assert (len(calls), len(slept)) == (3, 2)  # three tries, a wait between each two
    assert info.value.__cause__ is None and info.value.__suppress_context__  # the original (token) is not chained
    call, calls = flaky([answered(503)] * 9)
    with pytest.raises(PublishError):
        with_retries("push", call, RetryPolicy(attempts=1, sleep=slept.append))
    assert (len(calls), len(slept)) == (1, 2)  # one attempt: no retry, no wait


def test_a_permanent_failure_is_not_retried() -> None:
    slept: list[float] = []
    lines: list[str] = []
    call, calls = flaky([answered(404, "no such repo")])
    with pytest.raises(PublishError, match=r"^tag failed: Answered: HTTP 404: no such repo$"):
        with_retries("tag", call, RetryPolicy(sleep=slept.append), on_retry=lines.append)
    assert (len(calls), slept, lines) == (1, [], [])
    own = PublishError("already worded")
    call, calls = flaky([own])
    with pytest.raises(PublishError) as info:
        with_retries("tag", call, RetryPolicy(sleep=slept.append))
    assert info.value is own and len(calls) == 1


def test_no_connection_at_all_fails_at_once_with_the_unreachable_line() -> None:
    slept: list[float] = []
    call, calls = flaky([named("ConnectError", "refused by tok-123")])
    with pytest.raises(UnreachableError) as info:
        with_retries("fetch", call, RetryPolicy(sleep=slept.append), token="tok-123")
    assert str(info.value) == (
        "fetch failed: cannot reach the Hub (ConnectError: refused by ***); check the network connection, "
        "HF_ENDPOINT and HF_HUB_OFFLINE"
    )
    assert (len(calls), slept) == (1, [])
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_the_api_reads_the_endpoint_and_token_when_called(monkeypatch) -> None:
    from tomforge.hub.manifest import producer_version

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_TOKEN", "hf_fromtheenvironment")
    api = make_api()
    assert (api.endpoint, api.token) == ("http://127.0.0.1:9", "hf_fromtheenvironment")
    assert (api.library_name, api.library_version) == ("tomforge", producer_version())
    given = make_api("http://127.0.0.1:8", "hf_given")
    assert (given.endpoint, given.token) == ("http://127.0.0.1:8", "hf_given")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:7")
    assert make_api("").endpoint == "http://127.0.0.1:7"  # read now, not at import
    assert remote.resolve_token() == "hf_fromtheenvironment"


def test_a_dropped_connection_caused_by_no_connection_at_all_is_not_retried() -> None:
    exc = ConnectionRefusedError("refused")  # a ConnectionError by name, which alone would be retried
    exc.__cause__ = named("ConnectError")
    assert not is_transient(exc)


def test_the_retry_line_never_carries_the_token(monkeypatch) -> None:
    monkeypatch.setattr(remote.random, "random", lambda: 0.0)
    lines: list[str] = []
    call, _ = flaky([answered(502, "bad gateway for Bearer plain-token-9")])  # not shaped like hf_...
    policy = RetryPolicy(attempts=2, sleep=lambda _: None)
    assert with_retries("upload", call, policy, token="plain-token-9", on_retry=lines.append) == "done"
    assert lines == ["upload: Answered: HTTP 502: bad gateway for Bearer ***; retry 1/1"]
