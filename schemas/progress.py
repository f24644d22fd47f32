"""The one way a step reports what it is doing: named stages that advance, and info lines.

A step (ingest, generate, audit, publish) takes a `Progress` and wraps each phase in
`with progress.stage(name, total) as stage:`, calling `stage.advance(n)` as work gets done, and
says what the user should read with `progress.info(line)`. Steps never print, log or import a
display library: the front end chooses the rendering.

- `Progress` itself (`SILENT`) shows nothing: the default of every step, for library callers and tests.
- `PlainLineProgress` writes plain lines to any callable (`print`, a logger's `info`): every info line, a
  stage's count at most every `interval` seconds while it runs, and its count and time when it
  ends. Inside Prefect flows it writes to the run logger (`flows.pipeline`).
- `flows.progress.RichProgress` draws live bars on a terminal for the CLI (nothing but the info
  lines when the output is a pipe or a log).

`Timer` keeps the seconds of each phase of a step, as text-dedup's `Timer` does, each phase
being a stage of the step's progress.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator


class Stage:
    """One running phase: `done` units of `total` (None when unknown in advance); `seconds` once it ended."""

    def __init__(self, owner: "Progress", name: str, total: int | None) -> None:
        self.owner, self.name, self.total = owner, name, total
        self.done = 0
        self.started = time.perf_counter()
        self.seconds: float | None = None

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.owner.advanced(self, n)

    def count(self) -> str:
        """'done/total', or 'done' when the total is unknown."""
        return f"{self.done}/{self.total}" if self.total is not None else str(self.done)


class Progress:
    """The interface steps call, and the renderer that shows nothing. A renderer overrides the
    hooks `started`, `advanced`, `ended` and `info`; steps call only `stage` and `info`."""

    @contextmanager
    def stage(self, name: str, total: int | None = None) -> Iterator[Stage]:
        """A phase named `name` (shown as is) of `total` units, None when unknown."""
        stage = Stage(self, name, total)
        self.started(stage)
        try:
            yield stage
        except BaseException:
            stage.seconds = time.perf_counter() - stage.started
            self.ended(stage, ok=False)
            raise
        stage.seconds = time.perf_counter() - stage.started
        self.ended(stage, ok=True)

    def info(self, message: str) -> None:
        """A line for the user (a plan, a count, a retry)."""

    def started(self, stage: Stage) -> None:
        """Hook: `stage` began."""

    def advanced(self, stage: Stage, n: int) -> None:
        """Hook: `stage` did `n` more units (`stage.done` is already updated)."""

    def ended(self, stage: Stage, ok: bool) -> None:
        """Hook: `stage` ended (`ok` False: by an exception); `stage.seconds` is set."""


SILENT = Progress()


class PlainLineProgress(Progress):
    """Plain lines through `write`, for logs and pipes: each info line; while a stage runs, its count
    at most every `interval` seconds (from `clock`); when it ends, its count and seconds."""

    def __init__(
        self, write: Callable[[str], None] = print, interval: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.write, self.interval, self.clock = write, interval, clock
        self._last: dict[Stage, float] = {}  # when each running stage last got a line (or began)

    def info(self, message: str) -> None:
        self.write(message)

    def started(self, stage: Stage) -> None:
        self._last[stage] = self.clock()

    def advanced(self, stage: Stage, n: int) -> None:
        now = self.clock()
        since = self._last.get(stage, now)
        if now - since >= self.interval:
            self._last[stage] = now
            self.write(f"{stage.name}: {stage.count()} ({time.perf_counter() - stage.started:.0f} s)")

    def ended(self, stage: Stage, ok: bool) -> None:
        self._last.pop(stage, None)
        what = stage.count() if stage.done or stage.total is not None else "done"
        self.write(
            f"{stage.name}: {what} in {stage.seconds:.1f} s"
            if ok
            else f"{stage.name}: failed after {stage.seconds:.1f} s ({stage.count()})"
        )


class Timer:
    """Seconds per phase of one step (text-dedup's `Timer`): `with timer("read", "reading"):` runs a
    stage of `progress` named "reading" and keeps its seconds (rounded to ms) under "read"."""

    def __init__(self, progress: Progress = SILENT) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, key: str, name: str | None = None, total: int | None = None) -> Iterator[Stage]:
        with self.progress.stage(name or key, total) as stage:
            yield stage
        assert stage.seconds is not None  # set by `stage` on the way out
        self.seconds[key] = round(stage.seconds, 3)
