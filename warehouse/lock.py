"""One writer at a time: an exclusive lock beside each warehouse file and each release folder.

Every write is a read-modify-write (copy the file, change it, validate, swap it in). Two of them at
once both start from the same file and the last swap wins, silently dropping the other's work. So a
writer holds `<target>.lock` (an OS lock through `filelock`: `flock` on POSIX, which the kernel drops
when the process dies, so a killed writer never leaves it taken) from its first read to its swap. A
second writer waits, says once on stderr who holds the lock (the side file `<target>.lock.holder`:
pid, command, since when), and after the timeout fails with `LockBusy` (exit 9 on the command line).
The timeout: `TOMFORGE_LOCK_TIMEOUT` when set, else the config's `[warehouse] lock_timeout` (the flows
set it with `configured_timeout`), else 600 s; a value that is not a number of seconds is bad input
(`BadLockTimeout`, exit 2), not a busy lock.
Readers never take it: they open the live file, which a swap replaces in one `rename`.

The lock is re-entrant within one flow of control (a context: a step that holds it calls `db.building`,
which takes it too; a Prefect flow holds it and its tasks run on worker threads with a copy of its
context), while an unrelated thread of the same process waits like another process would.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shlex
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Callable, Concatenate, Iterator, ParamSpec, TypeVar

import filelock

from tomforge.schemas.errors import ExitCode, TomforgeError

TIMEOUT_ENV = "TOMFORGE_LOCK_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
P = ParamSpec("P")
R = TypeVar("R")


class LockBusy(TomforgeError):
    """Another writer held the lock for longer than the timeout."""

    exit_code = ExitCode.LOCKED


class BadLockTimeout(TomforgeError):
    """`TOMFORGE_LOCK_TIMEOUT` is not a number of seconds: the user's input, not a busy lock (exit 2)."""

    exit_code = ExitCode.BAD_INPUT


# the locks held by this flow of control: a nested `hold` (a step calling `db.building`) and a Prefect
# task started from a flow that holds the lock (Prefect copies the context into its worker threads)
# re-enter; an unrelated thread starts with an empty context and waits like another process
_held_here: ContextVar[frozenset[str]] = ContextVar("tomforge_writer_locks", default=frozenset())
# the config's `[warehouse] lock_timeout` for this flow of control (a Prefect flow's tasks see it too)
_configured: ContextVar[float | None] = ContextVar("tomforge_lock_timeout", default=None)


def lock_path(target: Path) -> Path:
    """The lock file of a warehouse file or release folder: beside it (a folder is swapped whole)."""
    target = Path(target).absolute()
    return target.with_name(target.name + ".lock")


def holder_path(target: Path) -> Path:
    return lock_path(target).with_name(lock_path(target).name + ".holder")


def timeout_from_env() -> float:
    """How long a writer waits: `TOMFORGE_LOCK_TIMEOUT` seconds when set (0: fail at once), else the
    config's `[warehouse] lock_timeout` (`configured_timeout`), else the default of 10 minutes."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        configured = _configured.get()
        return DEFAULT_TIMEOUT_S if configured is None else configured
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise BadLockTimeout(
            f"{TIMEOUT_ENV}={raw!r}: not a number of seconds, 0 or more (how long a writer waits "
            f"for another one's lock; 0 fails at once; unset: the config's [warehouse] lock_timeout, "
            f"else {DEFAULT_TIMEOUT_S:g})"
        )
    return value


@contextmanager
def configured_timeout(seconds: float | None) -> Iterator[None]:
    """The config's `[warehouse] lock_timeout` for the block (None: the default); the environment variable
    still overrides it, so one run can wait longer or shorter without editing the file."""
    token = _configured.set(seconds)
    try:
        yield
    finally:
        _configured.reset(token)


def command_line() -> str:
    """This process's command, as the lock's holder file shows it (`tomforge ingest ...`)."""
    argv = list(sys.argv) or ["python"]
    if argv[0].endswith(("cli.py", "tomforge")) or argv[0] == "-m":
        argv[0] = "tomforge"
    return shlex.join(argv)


def describe_holder(target: Path) -> str:
    """Who holds the lock, from its side file (written by the holder right after taking it)."""
    try:
        info = json.loads(holder_path(target).read_text(encoding="utf-8"))
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(info["since"])))
        return f"pid {info['pid']} ({info['command']}), since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (no holder file yet)"


def _write_holder(target: Path) -> None:
    side = holder_path(target)
    temp = side.with_name(f"{side.name}.{os.getpid()}")
    temp.write_text(json.dumps({"pid": os.getpid(), "command": command_line(), "since": time.time()}), encoding="utf-8")
    os.replace(temp, side)  # a waiter reads the old or the new holder, never half of one


def _notice(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _acquire(target: Path, timeout: float, notice: Callable[[str], None]) -> filelock.BaseFileLock:
    where = lock_path(target)
    where.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(where, thread_local=False)
    try:
        lock.acquire(timeout=0)
        return lock
    except filelock.Timeout:
        pass
    holder = describe_holder(target)
    notice(f"waiting for {target}: locked by {holder}; giving up after {timeout:g} s ({TIMEOUT_ENV})")
    try:
        lock.acquire(timeout=timeout, poll_interval=0.05)
    except filelock.Timeout:
        raise LockBusy(
            f"{target}: still locked by {holder} after {timeout:g} s; another writer is working on it "
            f"(wait and run again, or raise {TIMEOUT_ENV})"
        ) from None
    return lock


@contextmanager
def hold(target: Path, *, timeout: float | None = None, notice: Callable[[str], None] = _notice) -> Iterator[None]:
    """Hold the writer lock of `target` (a warehouse file or a release folder) for the block."""
    key = str(Path(target).absolute())
    if key in _held_here.get():
        yield
        return
    lock = _acquire(Path(key), timeout_from_env() if timeout is None else timeout, notice)
    token = None
    try:
        _write_holder(Path(key))
        token = _held_here.set(_held_here.get() | {key})
        yield
    finally:
        if token is not None:
            _held_here.reset(token)
        holder_path(Path(key)).unlink(missing_ok=True)
        lock.release()


def writes_warehouse(step: Callable[Concatenate[Path, P], R]) -> Callable[Concatenate[Path, P], R]:
    """A step whose first argument is the warehouse it rewrites: it holds that warehouse's lock from
    its first read to its swap, so a concurrent writer starts from its result."""

    @functools.wraps(step)
    def locked(warehouse: Path, *args: P.args, **kwargs: P.kwargs) -> R:
        with hold(Path(warehouse)):
            return step(warehouse, *args, **kwargs)

    return locked
