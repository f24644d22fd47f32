"""The one progress path (`schemas.progress`): steps report their stages with totals that match
sizes known apart from the step, the plain-line renderer keeps a sensible rate, and the CLI's rich
renderer draws nothing but the info lines when its output is not a terminal."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from rich.console import Console

from tests.audit_data import FAST, load
from tests.recording import Recording
from tests.warehouse.test_warehouse import INFO, toy_record
from tomforge.audits.synthetic import clean_records
from tomforge.flows.progress import RichProgress
from tomforge.generators import generate_records, generator_info
from tomforge.hub.export import ExportOptions
from tomforge.hub.publish_and_verify import publish_warehouse, verify_release
from tomforge.hub.release import ReleaseOptions
from tomforge.schemas.progress import PlainLineProgress, Progress, Timer
from tomforge.warehouse.ingest import ingest
from tomforge.warehouse.load import ingest_records

SAMPLES = Path(__file__).resolve().parents[2] / "warehouse" / "samples"


def test_ingest_reports_every_record_of_the_file_in_each_stage(tmp_path: Path) -> None:
    path = SAMPLES / "hitom" / "Hi-ToM_data.json"
    rows = len(json.loads(path.read_text(encoding="utf-8"))["data"])  # HiToM: one question per row of "data"
    progress = Recording()
    report = ingest(tmp_path / "w.duckdb", "hitom", path, progress)
    assert progress.names() == ["stage hitom", "count hitom", "write hitom"]
    assert [(s.done, s.ok) for s in progress.stages] == [(rows, True)] * 3
    assert report.read == rows


def test_staging_advances_in_chunks_up_to_the_records_asked(tmp_path: Path) -> None:
    n = 12_001  # chunks of 5000: 5000 + 5000 + 2001
    progress = Recording()
    ingest_records(tmp_path / "w.duckdb", INFO, (toy_record(i) for i in range(n)), "toy", progress, read=n)
    staged, written = progress.only("stage toy"), progress.only("write toy")
    assert (staged.total, staged.done, staged.advances) == (n, n, 3)
    assert (written.total, written.done) == (None, n)


def test_generated_records_report_the_size_asked(tmp_path: Path) -> None:
    progress = Recording()
    ingest_records(tmp_path / "w.duckdb", generator_info(), generate_records(37, seed=1), "gen", progress, read=37)
    assert progress.only("stage tomforge_gen").total == progress.only("stage tomforge_gen").done == 37


def test_a_rejected_load_ends_its_stage_and_writes_nothing(tmp_path: Path) -> None:
    from tomforge.warehouse.load import Unreconciled

    progress = Recording()
    with pytest.raises(Unreconciled):
        ingest_records(tmp_path / "w.duckdb", INFO, [toy_record(i) for i in range(4)], "toy", progress, read=5)
    assert [(s.name, s.total, s.done, s.ok) for s in progress.stages] == [("stage toy", 5, 4, True)]


OVERLAP_PHASES = [
    "distinct texts",
    "shingles and signatures",
    "near duplicates",
    "13-gram test",
    "sentences",
    "skeletons",
    "structural twins",
]  # audits/overlap.py audit_overlap, in the order it runs them
AUDIT_PHASES = [
    "read",
    "overlap",
    *[f"overlap: {name}" for name in OVERLAP_PHASES],  # then what the side thread ran
    "baselines: own thread",
    "baselines",
    "artifacts: own thread",
    "artifacts",
    "findings",
    "write",
    "report",
]


def test_audit_reports_each_phase_once_and_times_it(tmp_path: Path) -> None:
    from tomforge.audits.run import run_audit

    path = load(
        tmp_path / "w.duckdb", clean_records(60, seed=1, split="train") + clean_records(20, seed=2, split="test")
    )
    progress = Recording()
    summary = run_audit(path, "split = 'train'", "split = 'test'", tmp_path / "audit", FAST, progress=progress)
    assert [s.name.split(" (")[0] for s in progress.stages] == [
        "audit: read selections",
        "audit: overlap",
        *[f"audit: overlap: {name}" for name in OVERLAP_PHASES],
        "audit: partial-input baselines",
        "audit: template artifacts",  # waits for the side thread, in its order
        "audit: findings and verdicts",
        "audit: write tables",
        "audit: report",
    ]
    assert all(s.ok for s in progress.stages)
    assert list(summary.timings) == AUDIT_PHASES and all(t >= 0 for t in summary.timings.values())


def test_a_failing_audit_phase_ends_as_failed(tmp_path: Path) -> None:
    from tomforge.audits.run import run_audit
    from tomforge.audits.store import SelectionError

    path = load(tmp_path / "w.duckdb", clean_records(10, seed=1, split="train"))
    progress = Recording()
    with pytest.raises(SelectionError):
        run_audit(path, "split = 'train'", "split = 'nosuch'", None, FAST, progress=progress)
    assert [(s.name, s.ok) for s in progress.stages] == [("audit: read selections", False)]


def test_publish_and_verify_of_a_folder_report_their_stages(tmp_path: Path) -> None:
    records = clean_records(12, seed=1, split="train")
    path = load(tmp_path / "w.duckdb", records)
    progress = Recording()
    release = publish_warehouse(
        path,
        "org/tom",
        target=str(tmp_path / "rel"),
        progress=progress,
        options=ReleaseOptions("org/tom", tag="v1", export=ExportOptions(max_rows_per_shard=5)),
    )
    assert progress.names() == ["build release"]
    n = len(records)
    assert progress.lines[0] == f"wrote release v1 to {release.root} ({n} rows)"
    assert progress.lines[1].startswith(f"ledger: warehouse {n} = released {n} + removed 0 ")
    checking = Recording()
    assert verify_release(str(release.root), progress=checking).ok
    on_disk = [p for p in release.root.rglob("*") if p.is_file() and p.name != "manifest.json"]
    assert (checking.only("check files").total, checking.only("check files").done) == (len(on_disk), len(on_disk))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_report_a_running_stage_at_most_once_per_interval() -> None:
    out: list[str] = []
    clock = FakeClock()
    progress = PlainLineProgress(out.append, interval=10, clock=clock)
    with progress.stage("stage x", total=100) as stage:
        for t, n in ((1, 10), (9.9, 10), (10, 10), (15, 10), (21, 10), (40, 50)):
            clock.now = t
            stage.advance(n)
    progress.info("a line")
    assert [line.split(" (")[0] for line in out[:3]] == ["stage x: 30/100", "stage x: 50/100", "stage x: 100/100"]
    assert out[3].startswith("stage x: 100/100 in ") and out[4] == "a line" and len(out) == 5


def test_lines_say_when_a_stage_failed_or_counted_nothing() -> None:
    out: list[str] = []
    progress = PlainLineProgress(out.append)
    with progress.stage("quiet"):
        pass
    with pytest.raises(KeyError), progress.stage("broken", total=3) as stage:
        stage.advance(1)
        raise KeyError("x")
    assert (
        out[0].startswith("quiet: done in ") and out[1].startswith("broken: failed after ") and out[1].endswith("(1/3)")
    )


def test_timer_keeps_each_phase_under_its_key_and_shows_its_name() -> None:
    progress = Recording()
    timer = Timer(progress)
    with timer("read", "reading things", total=2) as stage:
        stage.advance(2)
    with timer("write"):
        pass
    assert list(timer.seconds) == ["read", "write"] and progress.names() == ["reading things", "write"]
    assert progress.only("reading things").done == 2


def test_rich_progress_prints_only_info_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    with RichProgress(Console(file=out, force_terminal=False, width=100)) as progress:
        with progress.stage("stage hitom", total=None) as stage:
            stage.advance(5)
        progress.info("wrote release v1 to /x [bold]12[/bold] items")
    assert out.getvalue() == "wrote release v1 to /x [bold]12[/bold] items\n"


def test_rich_progress_draws_bars_on_a_terminal() -> None:
    out = io.StringIO()
    with RichProgress(Console(file=out, force_terminal=True, width=100)) as progress:
        with progress.stage("stage hitom", total=10) as stage:
            stage.advance(4)
            progress.bars.refresh()
    assert "stage hitom" in out.getvalue() and "4/10" in out.getvalue()


def test_flow_tasks_log_their_stages_to_the_run_logger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tomforge.flows import pipeline
    from tomforge.flows.config import AuditConfig

    path = load(
        tmp_path / "w.duckdb", clean_records(40, seed=1, split="train") + clean_records(10, seed=2, split="test")
    )
    logged: list[str] = []

    class RunLogger(logging.Logger):
        def info(self, msg: object, *args: object, **kwargs: object) -> None:
            logged.append(str(msg) % args if args else str(msg))

    monkeypatch.setattr(pipeline, "get_run_logger", lambda: RunLogger("run"))
    pipeline.audit_task.fn(str(path), AuditConfig(out=tmp_path / "audit", params=FAST, heldout="split = 'test'"))
    ends = [line for line in logged if line.startswith("audit: ")]
    assert [line.split(" (")[0].split(": done in")[0] for line in ends] == [
        "audit: read selections",
        *[f"audit: overlap: {name}" for name in OVERLAP_PHASES],
        "audit: overlap",
        "audit: partial-input baselines",
        "audit: template artifacts",  # waits for the side thread, in its order
        "audit: findings and verdicts",
        "audit: write tables",
        "audit: report",
    ]
    assert all(": done in " in line for line in ends)


def test_the_base_progress_is_silent_and_costs_a_stage_object() -> None:
    with Progress().stage("anything", total=1) as stage:
        stage.advance(1)
    assert stage.done == 1 and stage.seconds is not None
