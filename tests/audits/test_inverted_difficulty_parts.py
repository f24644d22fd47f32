"""`InvertedDifficulty.verdict` on a hand-made curve (issue 39: the verdict split into `_inverted_rules`,
`_order_curve`, `_curve_key`, `_curve_rows`, `_inverted_parts`): belief orders 2 and 10 read as numbers (10 after
2, not before it as text), and the explanation a reader sees, written out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl

from tomforge.audits.checks.artifacts import InvertedDifficulty

EXPLANATION = (
    "A rule whose accuracy rises with belief order (Cochran-Armitage trend test) and beats chance on the higher half "
    "of the orders (one-sided binomial test), both Bonferroni-corrected: a rule below chance that only gets less "
    "wrong is not reported."
)


def test_a_rule_getting_easier_up_to_order_10() -> None:
    heur = pl.DataFrame(
        {
            "selection": ["train"] * 3,
            "heuristic": ["first"] * 3,
            "belief_order": ["10", "2", "all"],
            "n": [40, 50, 90],
            "accuracy": [0.9, 0.3, 0.6],
            "chance": [0.5, 0.5, 0.5],
            "inverted_difficulty": [False, False, True],
            "trend_z": [None, None, 3.0],
            "trend_p": [None, None, 0.001],
            "high_orders_accuracy": [None, None, 0.9],
            "high_orders_chance": [None, None, 0.5],
        }
    )
    verdict = InvertedDifficulty().verdict(SimpleNamespace(tables={"audit_heuristics": heur}))  # type: ignore[arg-type]
    assert verdict is not None
    assert verdict.status == "fail"
    assert verdict.finding == (
        "train: first-mentioned candidate rule right on 30% at order 2, 90% at order 10 (higher orders 90%, chance 50%)"
    )
    assert [(r["order"], r["items"], r["accuracy"]) for r in verdict.evidence] == [
        ("2", "50", "30%"),
        ("10", "40", "90%"),
    ]
    assert verdict.explain == EXPLANATION
