"""audits/checks/artifacts.py `_inverted_rules`: the rules flagged over all orders, steepest trend first, once per
(side, rule), against hand-worked rows (issue 39's split left its filter, order and de-duplication unchecked)."""

from __future__ import annotations

import polars as pl

from tomforge.audits.checks.artifacts import _inverted_rules


def _heur(rows: list[tuple]) -> pl.DataFrame:
    schema = {"selection": pl.Utf8, "heuristic": pl.Utf8, "answer_format": pl.Utf8, "belief_order": pl.Utf8}
    return pl.DataFrame(rows, schema={**schema, "inverted_difficulty": pl.Boolean, "trend_z": pl.Float64}, orient="row")


def test_flagged_over_all_orders_steepest_first_once_per_side_and_rule() -> None:
    heur = _heur(
        [
            ("train", "first", "multiple_choice", "all", True, 2.5),  # the same side and rule as the next, less steep
            ("train", "first", None, "all", True, 4.0),
            ("heldout", "last", None, "all", True, 3.0),
            ("train", "most", None, "all", False, 9.0),  # not flagged
            ("train", "last", None, "2", True, 8.0),  # one order, not all
            ("train", "last", None, "all", True, 1.0),
        ]
    )
    got = _inverted_rules(heur).select("selection", "heuristic", "answer_format", "trend_z").rows()
    assert got == [("train", "first", None, 4.0), ("heldout", "last", None, 3.0), ("train", "last", None, 1.0)]


def test_many_rules_come_out_in_the_order_of_their_trends() -> None:
    trends = [float((i * 37) % 101) for i in range(60)]  # distinct, scrambled
    heur = _heur([("train", f"rule{i}", None, "all", True, z) for i, z in enumerate(trends)])
    assert _inverted_rules(heur)["trend_z"].to_list() == sorted(trends, reverse=True)
