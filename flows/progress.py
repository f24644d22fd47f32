"""The CLI's rendering of `schemas.progress`: a live rich bar per stage on a terminal.

When the output is captured (a pipe, a log, CI, tests) rich draws nothing, so only the info
lines appear, each on its own line: what a pipe reads is the same as before bars existed.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bars

from tomforge.schemas.progress import Progress, Stage


class RichProgress(Progress):
    """Bars on `console` while used as a context manager (`with RichProgress(console) as progress:`);
    a stage of unknown total shows a pulsing bar and its count."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bars = Bars(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TextColumn("{task.fields[count]}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self._tasks: dict[Stage, TaskID] = {}

    def __enter__(self) -> "RichProgress":
        self.bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.bars.stop()

    def info(self, message: str) -> None:
        self.console.print(message, highlight=False, markup=False, soft_wrap=True)

    def started(self, stage: Stage) -> None:
        self._tasks[stage] = self.bars.add_task(stage.name, total=stage.total, count=_count(stage))

    def advanced(self, stage: Stage, n: int) -> None:
        self.bars.update(self._tasks[stage], advance=n, count=_count(stage))

    def ended(self, stage: Stage, ok: bool) -> None:
        task = self._tasks.pop(stage)
        if stage.total is None:  # the bar stops pulsing: full at what was done
            self.bars.update(task, total=max(stage.done, 1), completed=max(stage.done, 1))
        self.bars.stop_task(task)


def _count(stage: Stage) -> str:
    """'done/total'; 'done' when the total is unknown; nothing for a phase that counts no units."""
    return stage.count() if stage.done or stage.total is not None else ""
