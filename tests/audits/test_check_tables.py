"""`run_audit`'s `_check_tables` (`audits/run.py`, split in issue 39): what each phase is handed, the stages and
seconds it reports, the side threads' schedule and how the tables are merged, with every phase replaced by a
recorder (no warehouse is read, no audit runs)."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.recording import Recording
from tomforge.audits import run
from tomforge.audits.config import AuditParams
from tomforge.schemas.progress import Timer

WAREHOUSE = Path("/nowhere/w.duckdb")
SEL = SimpleNamespace(train="TRAIN", heldout="HELDOUT", items="ITEMS")
P = AuditParams(min_group_items=7)
PASSES = object()


class Phases:
    """Stand-ins for the connection, the selections, the overlap and the two side jobs, recording their calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, overlap_fails: bool = False) -> None:
        self.calls: dict[str, tuple] = {}
        self.closed: list[bool] = []
        self.artifacts_started = threading.Event()
        self.baselines_saw_artifacts: bool | None = None
        self.threads: list[str] = []
        self.overlap_fails = overlap_fails
        phases = self

        class Connection:
            def close(self) -> None:
                phases.closed.append(True)

        self.con = Connection()
        monkeypatch.setattr(run, "connect_readonly", self.connect)
        monkeypatch.setattr(run, "_read_selections", self.read)
        monkeypatch.setattr(run, "_baseline_tables", self.baselines)
        monkeypatch.setattr(run, "_artifact_tables", self.artifacts)
        monkeypatch.setattr(run, "audit_overlap", self.overlap)
        monkeypatch.setattr(run.store, "cached_signatures", lambda *args: ("cached", *args))
        monkeypatch.setattr(run, "_run_id", self.run_id)
        monkeypatch.setattr(run, "_overlap_tables", self.overlap_tables)

    def run_id(self, *args: object) -> str:
        self.calls["run_id"] = args
        return "RUN"

    def overlap_tables(self, *args: object) -> dict[str, str]:
        self.calls["overlap_tables"] = args
        return {"audit_overlap": "O"}

    def connect(self, warehouse: Path) -> object:
        self.calls["connect"] = (warehouse,)
        return self.con

    def read(self, *args: object) -> SimpleNamespace:
        self.calls["read"] = args
        return SEL

    def baselines(self, *args: object) -> dict[str, str]:
        self.threads.append(threading.current_thread().name)
        self.calls["baselines"] = args
        # the artifacts must not queue behind the baselines: they start while these still run
        self.baselines_saw_artifacts = self.artifacts_started.wait(10)
        return {"audit_baselines": "B", "shared": "from the baselines"}

    def artifacts(self, *args: object) -> tuple[dict[str, str], str]:
        self.threads.append(threading.current_thread().name)
        self.artifacts_started.set()
        self.calls["artifacts"] = args
        return {"audit_positions": "A", "shared": "from the artifacts"}, "SCORES"

    def overlap(self, items: object, p: AuditParams, **kw: object) -> SimpleNamespace:
        self.calls["overlap"] = (items, p)
        self.closed_before_overlap = list(self.closed)
        self.artifacts_before_largest = self.artifacts_started.is_set()  # they wait for the largest phases
        self.looked_up = kw["lookup"]("KEYS", "PK", 3)  # type: ignore[operator]
        self.kw = kw
        if self.overlap_fails:
            raise RuntimeError("overlap failed")
        kw["largest_done"]()  # type: ignore[operator]
        return SimpleNamespace(timings={"minhash": {"wall_s": 1.5}, "lsh": {"wall_s": 0.25}})


def test_each_phase_gets_its_inputs_and_the_tables_are_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    phases = Phases(monkeypatch)
    progress = Recording()
    timer = Timer(progress)
    sel, ov, tables, scores, (run_id, overlap_tables) = run._check_tables(
        WAREHOUSE,
        "split = 'a'",
        "split = 'b'",
        P,
        timer,
        PASSES,  # type: ignore[arg-type]
    )
    assert sel is SEL and ov.timings["lsh"] == {"wall_s": 0.25} and scores == "SCORES"
    assert tables == {"audit_positions": "A", "shared": "from the baselines", "audit_baselines": "B"}
    assert (run_id, overlap_tables) == ("RUN", {"audit_overlap": "O"})
    assert phases.calls == {
        "connect": (WAREHOUSE,),
        "read": (phases.con, WAREHOUSE, "split = 'a'", "split = 'b'"),
        "baselines": ("TRAIN", "HELDOUT", P),
        "artifacts": ("ITEMS", P),
        "overlap": ("ITEMS", P),
        "run_id": ("split = 'a'", "split = 'b'", P, "ITEMS", ov),
        "overlap_tables": (ov, P, "RUN", "ITEMS"),
    }
    assert phases.closed_before_overlap == [True] and not phases.artifacts_before_largest
    assert phases.looked_up == ("cached", WAREHOUSE, "KEYS", "PK", 3)
    assert phases.kw["passes"] is PASSES and phases.kw["progress"] is progress
    assert phases.baselines_saw_artifacts is True
    assert len(phases.threads) == 2 and all(name.startswith("audit-side") for name in phases.threads)
    assert [s.name for s in progress.stages] == [
        "audit: read selections",
        "audit: overlap (MinHash LSH, n-grams, skeletons)",
        "audit: partial-input baselines (waiting for their thread)",
        "audit: template artifacts (the overlap's tables, then waiting for their thread)",
    ]
    assert list(timer.seconds) == [
        "read",
        "overlap",
        "overlap: minhash",
        "overlap: lsh",
        "baselines: own thread",
        "baselines",
        "artifacts: own thread",
        "artifacts",
    ]
    assert (timer.seconds["overlap: minhash"], timer.seconds["overlap: lsh"]) == (1.5, 0.25)
    assert timer.seconds["baselines: own thread"] >= 0 and timer.seconds["artifacts: own thread"] >= 0


def test_without_a_heldout_selection_the_baselines_get_none(monkeypatch: pytest.MonkeyPatch) -> None:
    phases = Phases(monkeypatch)
    run._check_tables(WAREHOUSE, "split = 'a'", None, P, Timer(), PASSES)  # type: ignore[arg-type]
    assert phases.calls["baselines"] == ("TRAIN", None, P)
    assert phases.calls["read"] == (phases.con, WAREHOUSE, "split = 'a'", None)


def test_a_failed_overlap_still_lets_the_artifacts_run_and_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    phases = Phases(monkeypatch, overlap_fails=True)
    with pytest.raises(RuntimeError, match="overlap failed"):
        run._check_tables(WAREHOUSE, "split = 'a'", "split = 'b'", P, Timer(), PASSES)  # type: ignore[arg-type]
    assert phases.artifacts_started.is_set() and phases.calls["artifacts"] == ("ITEMS", P)
