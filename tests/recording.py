"""A `Progress` that records what a step reports, for tests: stages in order with their totals,
units done and outcome, and the info lines."""

from __future__ import annotations

from dataclasses import dataclass

from tomforge.schemas.progress import Progress, Stage


@dataclass
class Recorded:
    name: str
    total: int | None
    done: int = 0
    advances: int = 0
    ok: bool | None = None  # None while running


class Recording(Progress):
    def __init__(self) -> None:
        self.stages: list[Recorded] = []
        self.lines: list[str] = []
        self._open: dict[Stage, Recorded] = {}

    def info(self, message: str) -> None:
        self.lines.append(message)

    def started(self, stage: Stage) -> None:
        self._open[stage] = Recorded(stage.name, stage.total)
        self.stages.append(self._open[stage])

    def advanced(self, stage: Stage, n: int) -> None:
        self._open[stage].done += n
        self._open[stage].advances += 1

    def ended(self, stage: Stage, ok: bool) -> None:
        self._open.pop(stage).ok = ok

    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def only(self, name: str) -> Recorded:
        """The one stage called `name` (fails when there are none or several)."""
        (found,) = [s for s in self.stages if s.name == name]
        return found
