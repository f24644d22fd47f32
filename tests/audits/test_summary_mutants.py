"""The audit's one-screen summary (issue 38: mutmut over `audits/summary.py`, hit by an independent check):
every line `tomforge audit` prints after a run, written out here by hand for hand-made verdicts and figures."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tomforge.audits.summary import AuditSummary
from tomforge.audits.verdict import Verdict


def _summary(**changes) -> AuditSummary:
    values = {
        "run_id": "r1",
        "train_where": "split = 'train'",
        "heldout_where": "split = 'test'",
        "n_train": 120,
        "n_heldout": 30,
        "n_in_both": 0,
        "findings": pl.DataFrame({"item_id": ["a", "b", "c"]}),
        "stats": {},
    }
    return AuditSummary(**(values | changes))


def test_defaults_and_the_flagged_count() -> None:
    summary = _summary()
    assert (summary.out_dir, summary.timings, summary.verdicts) == (None, {}, [])
    assert summary.n_flagged == 3
    assert _summary().timings is not summary.timings  # a fresh dict each


def test_the_header_with_and_without_a_held_out_side() -> None:
    assert _summary().header() == "audit r1: train 120 items (split = 'train'), held-out 30 items (split = 'test')"
    assert _summary(heldout_where=None).header() == "audit r1: train 120 items (split = 'train'), no held-out side"
    assert _summary(heldout_where="").header() == "audit r1: train 120 items (split = 'train'), no held-out side"


def test_verdict_lines_aligned_with_the_action_under_each_that_does_not_pass() -> None:
    verdicts = [
        Verdict("overlap", "fail", "12 of 30 copied", "run `tomforge clean`"),
        Verdict("label balance", "pass", "even", "none"),
        Verdict("ranks", "warn", "gold first 70%", "see `audit_ranks`"),
    ]
    assert _summary(verdicts=verdicts).verdict_lines() == [
        "  FAIL  overlap        12 of 30 copied",
        "                       -> run tomforge clean",
        "  pass  label balance  even",
        "  warn  ranks          gold first 70%",
        "                       -> see audit_ranks",
    ]
    assert _summary().verdict_lines() == []


def test_lines_with_every_figure() -> None:
    stats = {
        "contexts": 40,
        "docs": 35,
        "bands": 16,
        "rows": 8,
        "lsh_candidates": 9,
        "verified_pairs": 4,
        "signatures_cached": 30,
        "signatures_computed": 5,
    }
    summary = _summary(
        n_in_both=2, stats=stats, out_dir=Path("var/audit"), verdicts=[Verdict("overlap", "pass", "none", "none")]
    )
    assert summary.lines() == [
        "audit r1: train 120 items (split = 'train'), held-out 30 items (split = 'test')",
        "  pass  overlap  none",
        "  overlap of the selections: 2 items match both (train and held-out); `tomforge clean` keeps them "
        "held-out and drops them from train (reason in_both_selections)",
        "  contexts 40 (distinct texts 35), LSH bands x rows 16x8, candidates 9, verified 4, signatures cached 30 "
        "/ computed 5; 3 findings in audit_findings",
        "  report: var/audit/audit_report.md (and audit_report.html)",
    ]


def test_lines_without_figures_overlap_or_report() -> None:
    assert _summary(findings=pl.DataFrame({"item_id": []})).lines() == [
        "audit r1: train 120 items (split = 'train'), held-out 30 items (split = 'test')",
        "  contexts 0 (distinct texts 0), LSH bands x rows NonexNone, candidates 0, verified 0, signatures cached 0 "
        "/ computed 0; 0 findings in audit_findings",
    ]
