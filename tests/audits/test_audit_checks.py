"""Issue 29 (audit checks) and issue 25 item 9: each audit check is one object in one registry, and a
mixed-source audit names the source behind every failing check, statistical ones included."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from tests.audit_data import FAST, load, planted_overlap_records, variant
from tests.audit_reference import heuristic_choices, norm
from tomforge.audits.check import AuditCheck
from tomforge.audits.checks import FINDINGS_ORDER, owner_of, registered
from tomforge.audits.run import run_audit
from tomforge.audits.synthetic import clean_records
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.sources.base import AdapterInfo


def _verdict(summary, name: str):
    return next(v for v in summary.verdicts if v.check.startswith(name))


def test_each_check_is_declared_once_and_owns_what_it_says(tmp_path: Path) -> None:
    """Names and owned tables are unique; on planted problems every finding row is of a kind its
    check declares, every declared table is written, and the verdict lines come in registry order."""
    known = registered()
    names = [check.name for check in known]
    assert len(set(names)) == len(names)
    owned = [table for check in known for table in check.owns]
    assert len(set(owned)) == len(owned) and all(owner_of(t).owns.count(t) == 1 for t in owned)  # type: ignore[union-attr]
    # a check recomputed per source must be able to recompute every table it reads
    assert all(
        owner_of(t) is not None for check in known if check.by_source == "recompute" for t in check.owns + check.reads
    )
    emitted = {kind for check in known for kind in check.emits}
    assert set(FINDINGS_ORDER) == emitted  # the order lists exactly the kinds the checks emit

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    found = set(summary.findings["check"].to_list())
    # the planted problems (audit_data.planted_overlap_records): each one's finding kind, worked out by hand
    assert {"overlap:exact", "overlap:near_duplicate", "overlap:structural", "consistency:label_conflict"} <= found
    assert found <= emitted
    kinds = summary.findings["check"].to_list()
    assert kinds == sorted(kinds, key=FINDINGS_ORDER.index)  # grouped in the table's declared order
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        written = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert set(owned) <= written
    shown = [v.check for v in summary.verdicts]
    order = [next(i for i, c in enumerate(known) if line.startswith(c.name)) for line in shown]
    assert order == sorted(order) and len(shown) >= 12


def test_a_new_check_is_one_object_in_the_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check registered alone (`@register`) gets its table computed (once, in its phase) and written, its
    findings in `audit_findings` and its line in the verdict: nothing else to edit."""
    from tomforge.audits.check import REGISTRY, register
    from tomforge.audits.verdict import Verdict

    monkeypatch.setattr(REGISTRY, "entries", list(REGISTRY.entries))  # the registration undone after the test

    @register
    class Orders(AuditCheck):
        name = "order count"
        owns = ("audit_order_count",)
        emits = ("artifact:order_count",)

        calls = 0

        def tables(self, data):
            Orders.calls += 1
            return {"audit_order_count": data.items.group_by("belief_order").len().sort("belief_order")}

        def findings(self, out, data):
            for order, n in data.tables["audit_order_count"].iter_rows():
                out.add("artifact:order_count", "info", "both", f"order {order}: {n}", {"n": n}, "none")

        def verdict(self, facts):
            n = facts.tables["audit_order_count"]["len"].sum()
            return Verdict(self.name, "pass", f"{n} items counted by order", "none")

    records = clean_records(6, seed=1, split="train") + clean_records(3, seed=2, split="test")
    path = load(tmp_path / "w.duckdb", records)
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert summary.verdicts[-1].finding == f"{len(records)} items counted by order"  # 9 stories x 4 orders
    assert summary.findings.filter(pl.col("check") == "artifact:order_count").height == 4
    assert Orders.calls == 1  # in its own phase only
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT sum(len) FROM audit_order_count").fetchone()[0] == len(records)


def _skewed(records: list[dict]) -> list[dict]:
    """Source `skewco`: every gold is the story's first-mentioned container and the first option."""
    out = []
    for r in records:
        first = heuristic_choices([norm(o) for o in r["options"]], norm(r["context"]))["first"]
        answer = next(o for o in r["options"] if norm(o) == first)
        options = [answer] + [o for o in r["options"] if o != answer]
        out.append(
            variant(
                r,
                f"skew-{r['source_ref']}",
                r["split"],
                source="skewco",
                source_version="s-1",
                answer=answer,
                options=options,
            )
        )
    return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory):
    """Two sources of 40 + 20 stories each: `synth` clean (options shuffled uniformly), `skewco` with
    the planted skew in both splits."""
    tmp = tmp_path_factory.mktemp("mixed")
    clean = clean_records(40, seed=1, split="train") + clean_records(20, seed=2, split="test")
    skewed = _skewed(clean_records(40, seed=3, split="train") + clean_records(20, seed=4, split="test"))
    path = load(tmp / "w.duckdb", clean)
    ingest_records(path, AdapterInfo("skewco", "s-1", "CC0"), skewed, "skew")
    return run_audit(path, "split = 'train'", "split = 'test'", None, FAST), skewed


def test_a_mixed_source_statistical_fail_names_the_skewed_source_only(mixed) -> None:
    """Gold position and the first-container rule fail pooled; recomputed per source they fail in
    `skewco` alone (its gold is at A on 100% of its items: counted from the records) and pass in `synth`."""
    summary, skewed = mixed
    position = _verdict(summary, "gold position")
    assert position.status == "fail", position
    tail = position.finding[position.finding.index("[by source:") :]
    alone = re.search(
        r"fails in skewco alone \(train: gold at A on 100% of (\d+) items \((\d) options\), uniform \d+%; "
        r"held-out: gold at A on 100% of (\d+) items \((\d) options\)",
        tail,
    )
    assert alone, tail
    n_train, k_train, n_held, k_held = map(int, alone.groups())  # counted again from the planted records
    assert n_train == sum(r["split"] == "train" and len(r["options"]) == k_train for r in skewed)
    assert n_held == sum(r["split"] == "test" and len(r["options"]) == k_held for r in skewed)
    assert "passes in synth" in tail and "fails in synth" not in tail
    rules = _verdict(summary, "heuristic rules")
    assert rules.status == "fail", rules
    tail = rules.finding[rules.finding.index("[by source:") :]
    n_train = sum(r["split"] == "train" for r in skewed)
    assert re.search(
        rf"fails in skewco alone \(train: [a-z' -]+ rule right on 100% of {n_train} items, chance \d+%; "
        rf"held-out: [a-z' -]+ rule right on 100% of {len(skewed) - n_train} items",
        tail,
    ), tail
    assert "passes in synth" in tail and "fails in synth" not in tail


def test_only_failing_lines_name_sources(mixed) -> None:
    summary, _ = mixed
    for v in summary.verdicts:
        if v.status != "fail":
            assert "[by source:" not in v.finding and "[items by source:" not in v.finding, v


def test_a_source_on_the_held_out_side_only_is_named(tmp_path: Path) -> None:
    """The usual layout (generated train, a real source held out): a source without train items is
    still judged on its held-out items; only the partial-input baselines need train items."""
    clean = clean_records(30, seed=1, split="train") + clean_records(10, seed=2, split="test")
    skewed = _skewed(clean_records(20, seed=4, split="test"))
    path = load(tmp_path / "w.duckdb", clean)
    ingest_records(path, AdapterInfo("skewco", "s-1", "CC0"), skewed, "skew")
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    position = _verdict(summary, "gold position")
    assert position.status == "fail", position
    tail = position.finding[position.finding.index("[by source:") :]
    alone = re.search(r"fails in skewco alone \(held-out: gold at A on 100% of (\d+) items \((\d) options\)", tail)
    assert alone, tail
    assert int(alone.group(1)) == sum(len(r["options"]) == int(alone.group(2)) for r in skewed)
    assert "passes in synth" in tail and "fails in synth" not in tail
