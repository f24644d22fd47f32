"""The speed guard's recorded table (`docs/speed-reference.json`) and its arithmetic: which recorded
figures a run is set against, each figure's ratio now / recorded, and which ones slipped. Apart from
`bench/speed_guard.py` (which measures) so that a test can check the arithmetic on a hand-made
table without timing anything.

The table: `generation` (the generation rates of one run: `figures`, with `measured`, `command`,
`load`) and `audit`, one entry per audit size (items, as a string) with its own `figures`, so a quick
run at a smaller size is set against a run of that size, never against the million-item one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SLIP = 1.2  # a figure more than 20% worse than its recorded value is a slip
# figure name -> (label, unit, True when larger is better)
FIGURES = {
    "audit_wall_s": ("audit, wall", "s", False),
    "audit_cpu_s": ("audit, CPU", "s", False),
    "audit_peak_rss_gb": ("audit, peak RSS", "GB", False),
    "gen_controls_qps_cpu": ("generation with controls, per CPU s", "q/s", True),
    "gen_controls_qps_wall": ("generation with controls, per wall s", "q/s", True),
    "gen_plain_qps_cpu": ("generation without controls, per CPU s", "q/s", True),
    "gen_plain_qps_wall": ("generation without controls, per wall s", "q/s", True),
    "gen_controls_ratio_cpu": ("controls / no controls, per CPU s", "x", True),
}


@dataclass(frozen=True)
class Row:
    """One figure set against its recorded value."""

    key: str
    now: float
    recorded: float

    @property
    def ratio(self) -> float:
        """now / recorded (infinite when nothing was recorded to divide by)."""
        return self.now / self.recorded if self.recorded else float("inf")

    @property
    def slipped(self) -> bool:
        """More than `SLIP` worse: a rate below recorded / SLIP, a time or size above recorded * SLIP."""
        larger_is_better = FIGURES[self.key][2]
        return self.ratio * SLIP < 1 if larger_is_better else self.ratio > SLIP

    def line(self) -> str:
        label, unit, _ = FIGURES[self.key]
        flag = "  SLIP" if self.slipped else ""
        return f"{label:42s} {self.now:10.2f} {self.recorded:10.2f} {self.ratio:8.2f}x {unit}{flag}"


def recorded_figures(table: dict[str, Any], items: int | None) -> dict[str, float]:
    """The recorded figures a run is set against: the generation's, and the audit's of `items` items
    (none when that size was never recorded, or `items` is None: no audit this run)."""
    figures = dict(table.get("generation", {}).get("figures", {}))
    if items is not None:
        figures |= table.get("audit", {}).get(str(items), {}).get("figures", {})
    return figures


def compare(measured: dict[str, float], recorded: dict[str, float]) -> list[Row]:
    """A row for each figure of `FIGURES` both measured and recorded, in `FIGURES`' order."""
    return [
        Row(key, float(measured[key]), float(recorded[key])) for key in FIGURES if key in measured and key in recorded
    ]


def with_run(table: dict[str, Any], measured: dict[str, float], items: int | None, note: dict[str, Any]) -> dict:
    """The table with this run recorded: its generation figures, and its audit figures under its size
    (the other sizes kept). `note`: when, the command and the load."""
    out = dict(table)
    generation = {key: value for key, value in measured.items() if key.startswith("gen_")}
    out["generation"] = {**note, "figures": generation}
    if items is not None:
        audit = {key: value for key, value in measured.items() if key.startswith("audit_")}
        out["audit"] = {**table.get("audit", {}), str(items): {**note, "figures": audit}}
    return out
