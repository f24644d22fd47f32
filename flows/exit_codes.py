"""The exit codes of the `tomforge` command, in one place (scripts and schedulers branch on them).

    0  OK            success
    1  INTERNAL      an unexpected internal error (a traceback), or a training that failed
    2  BAD_INPUT     bad input: path, source, file format, query, config, a missing extra
    3  UNRECONCILED  counts do not reconcile (read != loaded + rejected; a release's ledger)
    4  MISMATCH      a release does not match its manifest (`verify`)
    5  REMOTE        the Hugging Face Hub failed after retries
    6  CONFLICT      a publish conflict: the branch moved or the tag is taken
    7  FINDINGS      `audit --strict`: a check of the verdict failed
    8  STALE_AUDIT   `clean`/`publish`: the audit (or cleaning) is older than the warehouse content
    9  LOCKED        another writer held the warehouse (or release folder) lock past the timeout
"""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a `tomforge` process exits with (an int: `typer.Exit` and `sys.exit` take it as is)."""

    OK = 0
    INTERNAL = 1
    BAD_INPUT = 2
    UNRECONCILED = 3
    MISMATCH = 4
    REMOTE = 5
    CONFLICT = 6
    FINDINGS = 7
    STALE_AUDIT = 8
    LOCKED = 9
