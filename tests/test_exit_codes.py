"""The exit codes are an interface (scripts and schedulers branch on them): pinned by hand here."""

from __future__ import annotations

from tomforge.flows.exit_codes import ExitCode


def test_exit_codes_keep_their_documented_values() -> None:
    documented = {
        "OK": 0,
        "INTERNAL": 1,
        "BAD_INPUT": 2,
        "UNRECONCILED": 3,
        "MISMATCH": 4,
        "REMOTE": 5,
        "CONFLICT": 6,
        "FINDINGS": 7,
        "STALE_AUDIT": 8,
        "LOCKED": 9,
        "INTERRUPTED": 130,
    }  # docs/cli.md and schemas/errors.py
    assert {code.name: int(code) for code in ExitCode} == documented
