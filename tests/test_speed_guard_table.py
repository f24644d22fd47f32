"""The speed guard's arithmetic (`bench/speed_table.py`) on a hand-made table: which recorded figures
a run is set against, the ratio now / recorded, which figures slipped, and what `--record` writes.
Nothing is timed here (speed stays out of the tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import speed_table

TABLE = {
    "generation": {"measured": "then", "figures": {"gen_controls_qps_cpu": 5000, "gen_plain_qps_cpu": 10000}},
    "audit": {
        "1000": {"figures": {"audit_wall_s": 10.0, "audit_peak_rss_gb": 6.0}},
        "50": {"figures": {"audit_wall_s": 1.0}},
    },
}


def test_a_size_is_set_against_its_own_recorded_audit_only() -> None:
    assert speed_table.recorded_figures(TABLE, 1000) == {
        "gen_controls_qps_cpu": 5000,
        "gen_plain_qps_cpu": 10000,
        "audit_wall_s": 10.0,
        "audit_peak_rss_gb": 6.0,
    }
    assert speed_table.recorded_figures(TABLE, 50)["audit_wall_s"] == 1.0
    assert "audit_wall_s" not in speed_table.recorded_figures(TABLE, 100)  # never recorded at 100 items
    assert "audit_wall_s" not in speed_table.recorded_figures(TABLE, None)  # no audit this run


def test_ratios_and_slips_hand_worked() -> None:
    measured = {
        "gen_controls_qps_cpu": 4000.0,  # 0.8x: 4000 * 1.2 = 4800 < 5000, a slip
        "gen_plain_qps_cpu": 8500.0,  # 0.85x: 8500 * 1.2 = 10200 >= 10000, no slip
        "audit_wall_s": 12.5,  # 1.25x the time: a slip
        "audit_peak_rss_gb": 7.2,  # 1.2x exactly: not more than 20% worse
        "audit_cpu_s": 3.0,  # never recorded: no row
    }
    rows = speed_table.compare(measured, speed_table.recorded_figures(TABLE, 1000))
    assert [(r.key, r.ratio, r.slipped) for r in rows] == [
        ("audit_wall_s", 1.25, True),
        ("audit_peak_rss_gb", pytest.approx(1.2), False),
        ("gen_controls_qps_cpu", 0.8, True),
        ("gen_plain_qps_cpu", 0.85, False),
    ]
    assert rows[0].line().endswith("1.25x s  SLIP") and "SLIP" not in rows[1].line()
    faster = speed_table.compare(
        {"gen_controls_qps_cpu": 9000.0, "audit_wall_s": 2.0}, {"gen_controls_qps_cpu": 5000, "audit_wall_s": 10.0}
    )
    assert [(r.ratio, r.slipped) for r in faster] == [(0.2, False), (1.8, False)]


def test_nothing_recorded_to_divide_by_is_an_infinite_ratio() -> None:
    row = speed_table.Row("audit_wall_s", 3.0, 0.0)
    assert row.ratio == float("inf") and row.slipped


def test_recording_keeps_the_other_sizes_and_splits_the_figures() -> None:
    measured = {"gen_controls_qps_cpu": 6000, "gen_controls_ratio_cpu": 0.55, "audit_wall_s": 0.9}
    out = speed_table.with_run(TABLE, measured, 50, {"measured": "now"})
    assert out["generation"] == {
        "measured": "now",
        "figures": {"gen_controls_qps_cpu": 6000, "gen_controls_ratio_cpu": 0.55},
    }
    assert out["audit"]["50"] == {"measured": "now", "figures": {"audit_wall_s": 0.9}}
    assert out["audit"]["1000"] == TABLE["audit"]["1000"]
    assert TABLE["audit"]["50"]["figures"] == {"audit_wall_s": 1.0}  # the table given is left as it was
    only_generation = speed_table.with_run(TABLE, measured, None, {})
    assert only_generation["audit"] == TABLE["audit"]


def test_the_recorded_table_names_only_known_figures() -> None:
    """docs/speed-reference.json, as the guard reads it: every figure one the guard can compare."""
    table = json.loads((Path(__file__).resolve().parents[1] / "docs" / "speed-reference.json").read_text())
    assert set(table["generation"]["figures"]) <= set(speed_table.FIGURES)
    for entry in table["audit"].values():
        assert set(entry["figures"]) <= set(speed_table.FIGURES)
    assert "1000000" in table["audit"]
