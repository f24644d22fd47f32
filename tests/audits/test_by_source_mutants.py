"""Which source a failing check is about (issue 38: mutmut over `audits/by_source.py`, hit by an independent
check). Stand-in checks and table owners record what they are given; every finding's text is written out by
hand from the mixed selections planted here."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from tomforge.audits import by_source
from tomforge.audits.config import AuditParams
from tomforge.audits.verdict import AuditFacts, Verdict

FAIL = Verdict("gold position", "fail", "gold first 80%", "rebalance")


def _items() -> pl.DataFrame:
    rows = [
        # item_id, context_id, side, source
        ("h1", "c1", "heldout", "hitom"),
        ("h2", "c1", "heldout", "hitom"),
        ("h2", "c7", "heldout", "hitom"),  # the same item twice on one side (another story): counted once
        ("t1", "c2", "heldout", "tomi"),
        ("t2", "c3", "train", "tomi"),
        ("t3", "c3", "train", "tomi"),
        ("t4", "c4", "train", "tomi"),
        ("b1", "c5", "train", "bigtom"),
        ("a1", "c6", "train", "atom"),
    ]
    return pl.DataFrame(
        {
            "item_id": [r[0] for r in rows],
            "context_id": [r[1] for r in rows],
            "side": [r[2] for r in rows],
            "source": [r[3] for r in rows],
            "selection": ["sel"] * len(rows),
            "answer": ["x"] * len(rows),
        }
    )


def _facts(items: pl.DataFrame | None = None, has_heldout: bool = True) -> AuditFacts:
    items = _items() if items is None else items
    tables = {"kept": pl.DataFrame({"a": [1]}), "t_own": pl.DataFrame({"pooled": [1]})}
    return AuditFacts(tables, items, pl.DataFrame({"item_id": ["z"]}), AuditParams(), has_heldout)


class _ItemsCheck:
    by_source = "items"
    owns: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()

    def __init__(self, ids: list[str] | None) -> None:
        self.ids = ids
        self.given: pl.DataFrame | None = None

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame | None:
        assert facts.conflict_items.to_dicts() == [{"item_id": "z"}], "not the audit's facts"
        self.given = items
        return None if self.ids is None else items.filter(pl.col("item_id").is_in(self.ids))


def test_only_a_failing_verdict_of_a_splitting_check_is_split() -> None:
    check = _ItemsCheck(["h1"])
    passing = Verdict("overlap", "pass", "none", "none")
    warning = Verdict("overlap", "warn", "some", "look")
    assert by_source.with_sources(check, passing, _facts(), lambda t: None) is passing
    assert by_source.with_sources(check, warning, _facts(), lambda t: None) is warning
    check.by_source = None
    assert by_source.with_sources(check, FAIL, _facts(), lambda t: None) is FAIL
    assert check.given is None


def test_items_counted_per_side_and_source_most_first_then_by_name() -> None:
    check = _ItemsCheck(["h1", "h2", "t1", "t2", "t3", "b1", "a1"])
    out = by_source.with_sources(check, FAIL, _facts(), lambda t: None)
    assert out.finding == ("gold first 80% [items by source: held-out hitom 2, tomi 1; train tomi 2, atom 1, bigtom 1]")
    assert (out.check, out.status, out.action) == (FAIL.check, FAIL.status, FAIL.action)
    assert check.given.columns == ["item_id", "context_id", "side", "source"]
    assert check.given.height == 8  # h2 once per side


def test_items_of_one_side_only_and_of_none() -> None:
    out = by_source.with_sources(_ItemsCheck(["t4"]), FAIL, _facts(), lambda t: None)
    assert out.finding == "gold first 80% [items by source: train tomi 1]"
    assert by_source.with_sources(_ItemsCheck([]), FAIL, _facts(), lambda t: None) is FAIL
    assert by_source.with_sources(_ItemsCheck(None), FAIL, _facts(), lambda t: None) is FAIL


class _Owner:
    """Computes `t_own` on the items it is given (their train count), or refuses a source."""

    def __init__(self, phase: str = "artifacts", refuse: str | None = None, table: str = "t_own") -> None:
        self.phase = phase
        self.refuse = refuse
        self.table = table
        self.calls: list[Any] = []

    def tables(self, data: Any) -> dict[str, pl.DataFrame]:
        self.calls.append(data)
        if self.refuse and self.refuse in data.items["source"].to_list():
            raise ValueError("too few groups")
        if self.table == "t_scores":  # as a check whose tables computed the heuristic scores
            data.__dict__["scores"] = pl.DataFrame({"source": data.items["source"].unique().to_list()})
        return {self.table: pl.DataFrame({"train": [data.train.height]})}


class _Recompute:
    by_source = "recompute"
    owns = ("t_own",)
    reads = ("t_own", "t_free", "t_scores")

    def __init__(self, results: dict[str, Verdict | None]) -> None:
        self.results = results
        self.facts: dict[str, AuditFacts] = {}

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        (source,) = facts.items["source"].unique().to_list()
        self.facts[source] = facts
        return self.results[source]


def _verdict(status: str, finding: str = "f") -> Verdict:
    return Verdict("gold position", status, finding, "none")


def test_each_source_alone_with_its_tables_computed_again() -> None:
    owner = _Owner()
    second = _Owner(table="t_scores")
    owners = {"t_own": owner, "t_scores": second}.get
    check = _Recompute({s: _verdict("pass") for s in ("atom", "bigtom", "hitom", "tomi")})
    alone = by_source.source_verdicts(check, _facts(), owners)
    assert list(alone) == ["atom", "bigtom", "hitom", "tomi"]
    assert len(owner.calls) == 4  # one owner read twice is asked once per source
    assert len(second.calls) == 4  # and every other owner too
    tomi = check.facts["tomi"]
    assert tomi.tables["t_own"].to_dicts() == [{"train": 3}]
    assert tomi.tables["t_scores"].to_dicts() == [{"train": 3}]
    assert tomi.tables["kept"].to_dicts() == [{"a": 1}]
    assert tomi.has_heldout is True
    assert tomi.scores.to_dicts() == [{"source": "tomi"}]  # the scores the owner's tables computed
    facts = _facts()
    assert tomi.params == facts.params and owner.calls[3].params == facts.params
    assert tomi.conflict_items.to_dicts() == [{"item_id": "z"}]
    data = owner.calls[3]
    assert data.train["item_id"].to_list() == ["t2", "t3", "t4"]
    assert data.heldout["item_id"].to_list() == ["t1"]
    assert data.train.columns == data.heldout.columns == ["item_id", "context_id", "source", "answer"]
    assert data.items["side"].to_list() == ["heldout", "train", "train", "train"]
    bigtom = owner.calls[1]
    assert bigtom.heldout is None and check.facts["bigtom"].has_heldout is False
    assert check.facts["hitom"].tables["t_own"].to_dicts() == [{"train": 0}]


def test_an_audit_without_a_held_out_side_keeps_none() -> None:
    owner = _Owner()
    check = _Recompute({s: _verdict("pass") for s in ("atom", "bigtom", "hitom", "tomi")})
    by_source.source_verdicts(check, _facts(has_heldout=False), {"t_own": owner}.get)
    assert [data.heldout for data in owner.calls] == [None] * 4
    assert not any(facts.has_heldout for facts in check.facts.values())


def test_a_source_that_cannot_be_computed_alone_says_why() -> None:
    check = _Recompute({"atom": _verdict("pass"), "bigtom": None, "tomi": _verdict("pass")})
    owners = {"t_own": _Owner(refuse="hitom")}.get
    assert by_source.source_verdicts(check, _facts(), owners) == {
        "atom": _verdict("pass"),
        "bigtom": "not applicable to its items alone",
        "hitom": "not computed: too few groups",
        "tomi": _verdict("pass"),
    }


def test_a_baselines_owner_needs_train_items() -> None:
    check = _Recompute({s: _verdict("pass") for s in ("atom", "bigtom", "tomi")})
    owners = {"t_own": _Owner(phase="baselines")}.get
    alone = by_source.source_verdicts(check, _facts(), owners)
    assert alone["hitom"] == "no train items (the baselines learn from them)"
    assert alone["tomi"] == _verdict("pass")


def test_the_recomputed_finding_names_the_sources_that_fail_alone() -> None:
    check = _Recompute(
        {
            "atom": _verdict("fail", "gold first 90%"),
            "bigtom": _verdict("warn"),
            "hitom": _verdict("pass"),
            "tomi": None,
        }
    )
    out = by_source.with_sources(check, FAIL, _facts(), {"t_own": _Owner()}.get)
    assert out.finding == (
        "gold first 80% [by source: fails in atom alone (gold first 90%); passes in bigtom, hitom; "
        "tomi: not applicable to its items alone]"
    )
    check = _Recompute({"atom": _verdict("fail", "a"), "bigtom": _verdict("fail", "b"), "hitom": None, "tomi": None})
    out = by_source.with_sources(check, FAIL, _facts(), {"t_own": _Owner()}.get)
    assert out.finding == (
        "gold first 80% [by source: fails in atom alone (a); fails in bigtom alone (b); "
        "hitom: not applicable to its items alone; tomi: not applicable to its items alone]"
    )


@pytest.mark.parametrize(
    ("results", "text"),
    [
        (
            {"atom": "pass", "bigtom": "pass", "hitom": "warn", "tomi": "pass"},
            "no source fails alone (atom, bigtom, hitom, tomi): the mixture does",
        ),
        (
            {"atom": "fail", "bigtom": "fail", "hitom": "fail", "tomi": "fail"},
            "; ".join(f"fails in {s} alone (f)" for s in ("atom", "bigtom", "hitom", "tomi")),
        ),
        (
            {"atom": None, "bigtom": None, "hitom": None, "tomi": None},
            "no source fails alone (none tested): the mixture does; "
            + "; ".join(f"{s}: not applicable to its items alone" for s in ("atom", "bigtom", "hitom", "tomi")),
        ),
    ],
)
def test_the_recomputed_finding_when_none_or_all_fail(results: dict[str, str | None], text: str) -> None:
    check = _Recompute({s: None if r is None else _verdict(r) for s, r in results.items()})
    out = by_source.with_sources(check, FAIL, _facts(), {"t_own": _Owner()}.get)
    assert out.finding == f"gold first 80% [by source: {text}]"
