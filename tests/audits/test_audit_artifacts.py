"""Artifact audit: planted gold-position bias and a first-container shortcut whose accuracy rises
with belief order are found; clean generated data passes every check."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from tests.audit_data import FAST, load, shortcut_records
from tomforge.audits.artifacts import _trend
from tomforge.audits.run import run_audit
from tomforge.generators import ADAPTER_INFO, generate_records
from tomforge.warehouse.load import ingest_records


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory):
    path = load(tmp_path_factory.mktemp("art") / "w.duckdb", shortcut_records())
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    with duckdb.connect(str(path), read_only=True) as con:
        tables = {
            name: con.sql(f"SELECT * FROM {name}").pl()
            for name in ("audit_positions", "audit_heuristics", "audit_feature_assoc", "audit_partial_input")
        }
    return summary, tables


def test_position_bias_found(audited) -> None:
    summary, tables = audited
    pos = tables["audit_positions"].filter(
        (pl.col("selection") == "train") & (pl.col("belief_order") == "all") & (pl.col("position") == 0)
    )
    assert pos.height >= 1 and pos["flagged"].all() and (pos["z"] > 4).all()
    held = tables["audit_positions"].filter((pl.col("selection") == "heldout") & pl.col("flagged"))
    assert held.height == 0, "the held-out side has no position bias"
    assert summary.findings.filter(pl.col("check") == "artifact:gold_position").height >= 1


def test_position_bias_is_seen_by_partial_input_baselines(audited) -> None:
    _, tables = audited
    opt = tables["audit_partial_input"].filter(
        (pl.col("input") == "question_only") & (pl.col("answer_format") == "multiple_choice")
    )
    assert opt.height == 1
    row = opt.row(0, named=True)
    assert row["cv_accuracy"] > row["chance"] + 0.15  # train-side group k-fold learns "position 0"


def test_first_container_shortcut_and_inverted_difficulty_found(audited) -> None:
    summary, tables = audited
    heur = tables["audit_heuristics"].filter((pl.col("selection") == "heldout") & (pl.col("heuristic") == "first"))
    curve = heur.filter(pl.col("belief_order") != "all").sort("belief_order")["accuracy"].to_list()
    assert curve[-1] > 0.95 and curve[0] < 0.6
    assert heur["inverted_difficulty"].all() and heur.filter(pl.col("belief_order") == "all")["above_chance"].item()
    checks = summary.findings.filter(pl.col("selection") == "heldout")["check"].to_list()
    assert "artifact:inverted_difficulty" in checks and "artifact:heuristic" in checks
    train = tables["audit_heuristics"].filter((pl.col("selection") == "train") & pl.col("inverted_difficulty"))
    assert train.height == 0


def test_feature_association_finds_the_token_cue(audited) -> None:
    _, tables = audited
    hits = tables["audit_feature_assoc"].filter(
        pl.col("flagged")
        & (pl.col("selection") == "train")
        & (pl.col("belief_order") == "all")
        & (pl.col("feature") == "q:really")
    )
    assert hits.height >= 1
    positive = hits.filter(pl.col("z") > 0)
    assert positive.height >= 1
    assert all(
        label == str(int(kind.split("=")[1]) - 1) for kind, label in positive.select("label_kind", "label").iter_rows()
    )
    assert tables["audit_feature_assoc"].filter(pl.col("flagged") & (pl.col("selection") == "heldout")).height == 0


def test_trend_statistic() -> None:
    rising = _trend([(0, 100, 30), (1, 100, 50), (2, 100, 70), (3, 100, 90)])
    flat = _trend([(0, 100, 50), (1, 100, 49), (2, 100, 51), (3, 100, 50)])
    assert rising[0] > 8 and rising[1] < 1e-10
    assert abs(flat[0]) < 1 and flat[1] > 0.3
    assert _trend([(0, 10, 5), (1, 10, 5)]) == (None, None)


def test_clean_data_passes_every_artifact_check(tmp_path) -> None:
    records = [
        *generate_records(800, max_order=3, seed=21, split="train"),
        *generate_records(300, max_order=3, seed=22, split="test"),
    ]
    path = tmp_path / "w.duckdb"
    ingest_records(path, ADAPTER_INFO, records, "generated")
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    artifacts = summary.findings.filter(
        pl.col("check").str.starts_with("artifact") | pl.col("check").str.starts_with("consistency")
    )
    assert artifacts.height == 0, summary.lines()


def test_heuristic_accuracy_and_chance_are_item_means() -> None:
    """Worked by hand: 3 items with 2 options (chance 0.5) and 1 with 4 (0.25), 2 of them right:
    accuracy 2/4 and chance (0.5 + 0.5 + 0.5 + 0.25) / 4 = 0.4375, whatever the row order."""
    import polars as pl

    from tomforge.audits.artifacts import baselines_from_scores
    from tomforge.audits.config import AuditParams

    scores = pl.DataFrame(
        {
            "item_id": ["a", "b", "c", "d"],
            "selection": ["train"] * 4,
            "stratum": ["1"] * 4,
            "answer_format": ["multiple_choice"] * 4,
            "heuristic": ["first"] * 4,
            "hit": [True, False, True, False],
            "chance": [0.5, 0.25, 0.5, 0.5],
        }
    )
    for frame in (scores, scores.reverse()):
        row = (
            baselines_from_scores(frame, AuditParams(min_group_items=1))
            .filter(pl.col("belief_order") == "all")
            .row(0, named=True)
        )
        assert (row["n"], row["correct"], row["accuracy"], row["chance"]) == (4, 2, 0.5, 0.4375)
