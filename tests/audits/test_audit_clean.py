"""Cleaning policy: overlapping train items dropped, conflicts quarantined, duplicates collapsed,
gold positions balanced deterministically, counts reconcile; and the CLI commands."""

from __future__ import annotations

from collections import Counter

import duckdb
import pytest
from typer.testing import CliRunner

from tests.audit_data import FAST, load, planted_overlap_records, shortcut_records, variant
from tomforge.audits.clean import CleaningError, apply_cleaning
from tomforge.audits.config import CleaningPolicy
from tomforge.audits.run import run_audit
from tomforge.audits.synthetic import clean_records
from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory: pytest.TempPathFactory):
    records, keys = planted_overlap_records()
    dup = next(r for r in records if r["split"] == "train" and r["meta"].get("story") == 9)
    records.append(variant(dup, "dup", "train"))  # same context, question and answer under another key
    path = load(tmp_path_factory.mktemp("clean") / "w.duckdb", records)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    result = apply_cleaning(path, CleaningPolicy(seed=3))
    with duckdb.connect(str(path), read_only=True) as con:
        removed = con.sql("SELECT item_id, side, context_id, reason FROM clean_removed").fetchall()
        kept = con.sql("SELECT item_id, side, context_id, options, answer, answer_index FROM clean_items").fetchall()
    return path, keys, dup, result, removed, kept


def test_counts_reconcile(cleaned) -> None:
    path, _, _, result, removed, kept = cleaned
    with duckdb.connect(str(path), read_only=True) as con:  # the selections, counted here from the items
        selected = {
            "train": con.sql("SELECT count(*) FROM items_full WHERE split = 'train'").fetchall()[0][0],
            "heldout": con.sql("SELECT count(*) FROM items_full WHERE split = 'test'").fetchall()[0][0],
        }
    assert result.reconciled
    for row in result.summary.iter_rows(named=True):
        side = row["side"]
        assert row["selected"] == selected[side] == row["kept"] + row["removed"]
        assert row["kept"] == sum(1 for k in kept if k[1] == side)
        assert row["removed"] == sum(1 for r in removed if r[1] == side)
    assert not {r[0] for r in removed} & {k[0] for k in kept}


def test_an_item_lost_in_cleaning_fails_it(tmp_path, monkeypatch) -> None:
    """`selected` is the audit's own count, so an item lost between the audit and the cleaned
    tables (here: dropped when cleaning reads the selections) makes cleaning fail, exit 3."""
    from tomforge.audits import clean

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    real = clean._read

    def lossy(warehouse):
        run, items, *rest = real(warehouse)
        return (run, items.slice(1), *rest)

    monkeypatch.setattr(clean, "_read", lossy)
    with duckdb.connect(str(path), read_only=True) as con:
        n = con.sql("SELECT count(*) FROM items_full WHERE split = 'test'").fetchall()[0][0]
    with pytest.raises(CleaningError, match=rf"heldout: selected {n} = kept {n - 1} \+ removed 0"):
        apply_cleaning(path)
    res = CliRunner().invoke(app, ["clean", "-w", str(path)])
    assert res.exit_code == ExitCode.UNRECONCILED and "do not reconcile" in res.output, res.output
    with duckdb.connect(str(path), read_only=True) as con:
        assert not con.sql("SELECT * FROM duckdb_tables() WHERE table_name = 'clean_items'").fetchall()


def test_overlapping_train_contexts_dropped(cleaned) -> None:
    _, keys, _, _, removed, kept = cleaned
    reasons = {(r[2], r[3]) for r in removed if r[1] == "train"}
    assert (keys["exact"], "overlap_exact") in reasons
    assert (keys["near"], "overlap_near_duplicate") in reasons
    assert (keys["partial"], "overlap_ngram") in reasons
    kept_train_contexts = {k[2] for k in kept if k[1] == "train"}
    assert keys["struct"] in kept_train_contexts, "structural twins are dropped only when the policy says so"
    assert not {keys["exact"], keys["near"], keys["partial"]} & kept_train_contexts


def test_conflicts_quarantined_and_duplicates_collapsed(cleaned) -> None:
    _, keys, dup, _, removed, _ = cleaned
    by_reason = Counter(r[3] for r in removed)
    assert by_reason["label_conflict"] == 2
    assert keys["conflict"] in {r[0] for r in removed if r[3] == "label_conflict"}
    dups = [r for r in removed if r[3] == "duplicate"]
    assert len(dups) == 1 and dups[0][2] == dup["context_id"]


def test_gold_positions_balanced_and_answers_kept(tmp_path) -> None:
    path = load(tmp_path / "w.duckdb", shortcut_records(n=60))
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    apply_cleaning(path, CleaningPolicy(seed=1))
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.sql(
            "SELECT side, belief_order, len(options), answer_index, options[answer_index + 1] = answer, "
            "options FROM clean_items ORDER BY item_id"
        ).fetchall()
    assert all(r[4] for r in rows), "the gold answer moved with its index"
    groups: dict[tuple, Counter] = {}
    for side, order, k, index, _, _ in rows:
        groups.setdefault((side, order, k), Counter())[index] += 1
    for (side, order, k), counts in groups.items():
        assert max(counts.values()) - min(counts.get(i, 0) for i in range(k)) <= 1, (side, order, k, counts)
    apply_cleaning(path, CleaningPolicy(seed=1))
    with duckdb.connect(str(path), read_only=True) as con:
        again = con.sql(
            "SELECT side, belief_order, len(options), answer_index, options[answer_index + 1] = answer, "
            "options FROM clean_items ORDER BY item_id"
        ).fetchall()
    assert again == rows, "deterministic under the seed"


def test_cli_audit_and_clean(tmp_path) -> None:
    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    runner = CliRunner()
    out = tmp_path / "report"
    res = runner.invoke(
        app,
        [
            "audit",
            "-w",
            str(path),
            "--train",
            "split = 'train'",
            "--heldout",
            "split = 'test'",
            "--out",
            str(out),
            "--strict",
        ],
    )
    assert res.exit_code == ExitCode.FINDINGS, res.output
    assert (
        "FAIL  exact copies" in res.output and (out / "audit_report.md").is_file() and (out / "lsh_curve.png").is_file()
    )
    report = (out / "audit_report.md").read_text()
    assert "Null calibration" in report and "LSH detection probability" in report and "datasketch" in report
    res = runner.invoke(app, ["clean", "-w", str(path)])
    assert res.exit_code == 0 and "reconciled: yes" in res.output, res.output
    res = runner.invoke(app, ["audit", "-w", str(path), "--train", "no_such_column = 1"])
    assert res.exit_code == ExitCode.BAD_INPUT
    res = runner.invoke(app, ["clean", "-w", str(tmp_path / "missing.duckdb")])
    assert res.exit_code == ExitCode.BAD_INPUT


def test_an_original_is_never_removed_for_its_own_variant(tmp_path) -> None:
    """A variant (`meta.variant_of`) re-asks its original's story. Planted: an exact re-asking whose item
    id sorts before its original's (the old smallest-id rule removed the original), a variant asking
    something new, and two variants repeating each other's new question. Expected by hand: the original
    stays; the exact re-asking goes as a `duplicate` of its original; the new question stays; of the two
    repeats the smaller item id stays (the ordinary rule between items that are not originals)."""
    records = clean_records(40, seed=1, split="train") + clean_records(10, seed=2, split="test")
    original = next(r for r in records if r["split"] == "train")
    of_original = {"variant_of": original["item_id"]}
    same = next(
        v
        for k in range(100)
        if (v := variant(original, f"re-ask-{k}", "train", meta=of_original))["item_id"] < original["item_id"]
    )
    new_q = {"question": "Which container did the story name last?", "answer": original["answer"]}
    asks_new = variant(original, "new-question", "train", meta=of_original, question="Which container held it first?")
    repeat_a = variant(original, "repeat-a", "train", meta=of_original, **new_q)
    repeat_b = variant(original, "repeat-b", "train", meta=of_original, **new_q)
    path = load(tmp_path / "w.duckdb", [*records, same, asks_new, repeat_a, repeat_b])
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    apply_cleaning(path, CleaningPolicy(seed=3))
    with duckdb.connect(str(path), read_only=True) as con:
        removed = {r[0]: (r[1], r[2]) for r in con.sql("SELECT item_id, reason, detail FROM clean_removed").fetchall()}
        kept = {r[0] for r in con.sql("SELECT item_id FROM clean_items").fetchall()}
    first, second = sorted([repeat_a["item_id"], repeat_b["item_id"]])
    assert original["item_id"] in kept and original["item_id"] not in removed
    assert removed[same["item_id"]][0] == "duplicate" and original["item_id"] in removed[same["item_id"]][1]
    assert {asks_new["item_id"], first} <= kept
    assert removed[second] == ("duplicate", f"duplicate of {first}")
