"""The one error hierarchy of tomforge, and the exit codes the `tomforge` command answers with.

Every error a user can cause is a `TomforgeError`; each subclass says, in `exit_code`, what the
command exits with when it escapes a step (scripts and schedulers branch on these codes). The
command line has one handler (`flows/cli.py`, `user_errors`) that prints such an error as one line
and exits with its code, so a new error class needs no edit there; no command sets an exit code
itself (a failed `--strict` check, a release that does not match its manifest, a training that
failed: each is a class). This module sits beneath every
layer (it imports nothing of the project), so the record contract, the adapters, the audit, the
release and the RL stage can all raise into it; the RL stage's GPU machine imports nothing more.

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
  130  INTERRUPTED   Ctrl-C: nothing was swapped in (the shell's 128 + SIGINT)
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
    INTERRUPTED = 130


class TomforgeError(Exception):
    """An error of tomforge. `exit_code` BAD_INPUT (the default) and the other user codes are printed
    as one line; INTERNAL marks a bug or an internal signal that keeps its traceback."""

    exit_code: ExitCode = ExitCode.BAD_INPUT

    def keeps_traceback(self) -> bool:
        """Whether the handler raises it on with its traceback (a bug or an internal signal) instead of
        printing one line: by default the INTERNAL ones."""
        return self.exit_code is ExitCode.INTERNAL


class MissingExtra(TomforgeError):
    """An optional dependency a command needs is not installed (the `rl` or `ray` extra): bad input,
    one line with the `pip install` that fixes it."""


class TrainingFailed(TomforgeError):
    """The training process (TRL or verl, a child process) exited with a non-zero status: exit 1, one
    line; its own output above says why, so no traceback of ours is added."""

    exit_code = ExitCode.INTERNAL

    def keeps_traceback(self) -> bool:
        return False


class EvaluationFailed(TrainingFailed):
    """`eval --gpus N`: the evaluation processes (children of the launcher) exited with a non-zero status: exit 1,
    one line; their own output above says why."""
