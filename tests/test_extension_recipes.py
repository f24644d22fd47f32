"""ARCHITECTURE.md's "Where to add" recipes, followed (issue 39 item 5): a check, a source and a generator
operator are each added in one edit, the declaration the recipe shows, and each appears everywhere it
should (the report and verdict; the `--source` help, the config, the ingest and the dataset card; the
`--operators` parser and the generated records). The registries are restored after each test."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Iterator

import polars as pl
import pytest
from typer.testing import CliRunner

from tests.audit_data import FAST, load
from tests.warehouse.test_adapter_contract import TwoLineAdapter
from tomforge.audits.check import REGISTRY, AuditCheck, TableInputs, register
from tomforge.audits.report import ReportSection
from tomforge.audits.run import run_audit
from tomforge.audits.synthetic import clean_records
from tomforge.audits.verdict import AuditFacts, Verdict
from tomforge.flows.cli import app
from tomforge.generators import operators as generated
from tomforge.generators.generate import generate_records
from tomforge.generators.operator_registry import Operator
from tomforge.generators.world import Story
from tomforge.hub.card import render_body
from tomforge.hub.export import SplitExport
from tomforge.warehouse.sources.registry import SOURCES, Source

runner = CliRunner()
CITATION = "@misc{twoline2026,\n  title = {Two Lines},\n  year = {2026}\n}"


@pytest.fixture
def registries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each registry as it is, restored after the test (the recipe's edit undone)."""
    monkeypatch.setattr(REGISTRY, "entries", list(REGISTRY.entries))
    monkeypatch.setattr(SOURCES, "entries", list(SOURCES.entries))
    monkeypatch.setattr(generated.OPERATORS, "_by_name", dict(generated.OPERATORS._by_name))
    yield


def test_a_check_is_one_decorated_class(tmp_path: Path, registries: None) -> None:
    """The recipe's check, declared once: its verdict line comes last (a family of its own), its table is
    written, and its report section sits after the other checks' sections, before the trailing ones."""

    @register
    class Orders(AuditCheck):
        name = "order count"
        owns = ("audit_order_count",)
        sections = (ReportSection("audit_order_count", "Items per belief order", "Counted by the recipe's check."),)

        def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
            return {"audit_order_count": data.items.group_by("belief_order").len().sort("belief_order")}

        def verdict(self, facts: AuditFacts) -> Verdict | None:
            return Verdict(self.name, "pass", f"{facts.tables['audit_order_count']['len'].sum()} items", "none")

    records = clean_records(3, seed=1, split="train") + clean_records(2, seed=2, split="test")
    summary = run_audit(load(tmp_path / "w.duckdb", records), "split = 'train'", "split = 'test'", tmp_path / "a", FAST)
    assert summary.verdicts[-1].check == "order count"
    assert summary.verdicts[-1].finding == f"{len(records)} items"  # every record counted once
    report = (tmp_path / "a" / "audit_report.md").read_text(encoding="utf-8")
    # the report's order by hand: heuristics (the last check section), then this one, then label consistency
    at = [report.index(f"### {title}\n") for title in ("Heuristic rules by belief order and answer format",)]
    at += [report.index("### Items per belief order\n"), report.index("### Label consistency\n")]
    assert at == sorted(at)
    assert "| order count |" in report and "Counted by the recipe's check." in report


def test_a_source_is_its_adapter_and_one_declaration(tmp_path: Path, registries: None, monkeypatch) -> None:
    """The recipe's source: the adapter module (here put in place of a file) and one `Source(...)`. The
    `--source` help lists it with its note, the config and `ingest` accept it, and the card cites it."""
    adapter_module = types.ModuleType("tomforge.warehouse.sources.twoline")
    adapter_module.ADAPTER = TwoLineAdapter(name="twoline", version="1", license="MIT")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tomforge.warehouse.sources.twoline", adapter_module)  # as a file would be

    SOURCES.add(Source("twoline", citation=CITATION, note="one question per line"))

    shown = " ".join(runner.invoke(app, ["ingest", "--help"], env={"COLUMNS": "300"}).output.split())
    assert "bigtom, rlfiles (RL training files: docs/rl-files.md) or twoline (one question per line)." in shown
    data = tmp_path / "questions.txt"
    data.write_text("Where is Ann?\nno question here\nIs Ann here?\n", encoding="utf-8")
    warehouse = tmp_path / "w.duckdb"
    done = runner.invoke(app, ["ingest", "--source", "twoline", "--path", str(data), "--warehouse", str(warehouse)])
    assert done.exit_code == 0, done.output
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM items WHERE source = 'twoline'").fetchone() == (
            2,
        )  # 3 lines, 1 reject
        assert con.execute("SELECT count(*) FROM rejects WHERE source = 'twoline'").fetchone() == (1,)

    from tomforge.flows.config import SourceSpec

    assert SourceSpec(name="twoline", location=str(data)).name == "twoline"
    card = render_body(
        repo_id="org/tom",
        tag="v1",
        pretty_name="ToM",
        exports=[SplitExport("all", "unsplit", "unsplit", 2, ())],
        facts=[{"source": "twoline", "versions": ["1"], "license": "MIT", "n_items": 2}],
        audit={},
        report_paths=[],
    )
    assert f"```bibtex\n{CITATION}\n```" in card and "No citation recorded" not in card


def _mopped(story: Story, rng: object, pools: object) -> Story | None:
    """The recipe's operator: changes nothing but says it acted (the checker re-derives the same golds)."""
    return story.with_events(story.events, operators=story.operators + ("mopped_floor",))


def test_an_operator_is_one_declaration(registries: None) -> None:
    """The recipe's operator, added to the generated stories' registry: `all` and `--operators` take it,
    and a run asked for it alone applies it to its stories."""
    ops = generated.OPERATORS
    ops._by_name["mopped_floor"] = Operator("mopped_floor", _mopped, "nothing (a test's operator)")

    assert ops.resolve("all")[-1] == "mopped_floor" and ops.parse("mopped_floor,none") == ["mopped_floor"]
    records = list(generate_records(6, seed=3, operators=["mopped_floor"], operator_rate=1.0))
    assert records and all(r["operators"] == ["mopped_floor"] for r in records)
