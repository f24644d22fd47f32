"""The variant checks' findings, implicated items and verdicts on hand-made findings (issue 38: survivors of
mutmut over `audits/checks/variants.py`). Every expected line and cell is worked by hand from the planted rows."""

from __future__ import annotations

import json

import polars as pl

from tests.check_inputs import check_findings
from tomforge.audits.check import Findings
from tomforge.audits.checks.variants import OracleDisagreements, VariantLeaks
from tomforge.audits.config import AuditParams
from tomforge.audits.verdict import AuditFacts

LEAK, ORACLE = "overlap:variant_leak", "consistency:oracle_disagreement"


def finding(check: str, evidence: dict, selection: str = "train") -> dict:
    return {"check": check, "severity": "x", "selection": selection, "message": "m"} | {
        "evidence": json.dumps(evidence),
        "baseline": "b",
    }


def leak(train: list[str], heldout: list[str], variants: list[str], story: str = "s" * 16) -> dict:
    evidence = {"train_item_ids": train, "heldout_item_ids": heldout, "variant_item_ids": variants}
    return finding(LEAK, evidence | {"story_context_id": story})


def oracle(source: str, items: list[str], checked: int, unparsed: int, in_warehouse: int | None = None) -> dict:
    evidence = {"source": source, "rule_set": "tomi|v1", "item_ids": items, "n_checked": checked}
    evidence |= {"n_unparsed": unparsed} | ({} if in_warehouse is None else {"n_rejected_in_warehouse": in_warehouse})
    return finding(ORACLE, evidence)


ITEMS = pl.DataFrame(
    {
        "item_id": ["t1", "t2", "t3", "t4", "t5", "h1", "h2", "x"],
        "side": ["train"] * 5 + ["heldout"] * 2 + ["train"],
        "source_ref": ["r#5", "r#1", None, "r#4", "r#3", "h_*1*", "h#2", "other"],
    }
)


def facts(rows: list[dict], items: pl.DataFrame = ITEMS) -> AuditFacts:
    table = pl.DataFrame(rows, schema=Findings.SCHEMA) if rows else pl.DataFrame(schema=Findings.SCHEMA)
    return AuditFacts({"audit_findings": table}, items, items.head(0), AuditParams(), True)


def test_findings_take_each_checks_own_rows() -> None:
    rows = pl.DataFrame([leak(["t1"], ["h1"], ["t1"]), oracle("tomi", ["t2"], 4, 0)], schema=Findings.SCHEMA)
    for check, kind in ((VariantLeaks(), LEAK), (OracleDisagreements(), ORACLE)):
        assert [r["check"] for r in check_findings(check, variant_rows=rows)] == [kind]


def test_no_findings_no_verdict_lines() -> None:
    assert VariantLeaks().verdict(facts([])) is None and OracleDisagreements().verdict(facts([])) is None
    assert VariantLeaks().verdict(facts([oracle("tomi", ["t1"], 1, 0)])) is None
    assert OracleDisagreements().verdict(facts([leak(["t1"], ["h1"], [])])) is None
    no_table = AuditFacts({}, ITEMS, ITEMS.head(0), AuditParams(), True)
    assert VariantLeaks().verdict(no_table) is None


def test_leaks_implicate_their_items_on_each_side() -> None:
    got = VariantLeaks().implicated(facts([leak(["t1", "h2"], ["h1"], []), leak(["t2"], ["t3"], [])]), ITEMS)
    # h2 is named on the train side but sits held out; t3 the other way round: neither is implicated
    assert sorted(got["item_id"].to_list()) == ["h1", "t1", "t2"]


def test_one_leak_verdict() -> None:
    verdict = VariantLeaks().verdict(facts([leak(["t1", "t2", "t3", "t4", "t5"], ["h1"], ["t1", "t2"])]))
    assert verdict is not None and verdict.check == "variant leaks" and verdict.status == "fail"
    assert verdict.finding == "1 story with items on both sides, variants included (5 train items); expected 0"
    assert verdict.action == (
        "keep every variant on its original's side: select by story (`meta.variant_of`), not by item"
    )
    assert verdict.explain.startswith("A variant (`tomforge variants`) and its original are one story")
    assert verdict.evidence == [
        {
            "train items": "r#5, r#1, ? (+2)",  # by item id: t1, t2, t3 (no ref), then two more
            "held-out items": "h_\\*1\\*",
            "variants among them": "2",
            "story context id": "`ssssssssssss`",
        }
    ]


def test_many_leaks_verdict_counts_and_caps() -> None:
    leaks = [leak(["t1"], ["h1"], [], story=f"{i:016d}") for i in range(9)] + [leak(["t2", "t4", "t5"], ["h2"], [])]
    verdict = VariantLeaks().verdict(facts(leaks))
    assert verdict is not None
    assert verdict.finding == "10 stories with items on both sides, variants included (12 train items); expected 0"
    assert len(verdict.evidence) == 8 and verdict.evidence[0]["story context id"] == "`000000000000`"
    three = VariantLeaks().verdict(facts(leaks[-1:]))
    assert three is not None and three.evidence[0]["train items"] == "r#1, r#4, r#3"


def test_oracle_verdict() -> None:
    rows = [oracle("to*mi", ["t1", "t2"], 10, 3, in_warehouse=7), oracle("hitom", ["t4"], 5, 0)]
    verdict = OracleDisagreements().verdict(facts(rows))
    assert verdict is not None and verdict.check == "oracle disagreements" and verdict.status == "warn"
    assert verdict.finding == (
        "the checker rejects 3 published golds in the audited selections (8 in the warehouse's `oracle_checks`, "
        "for the sources selected; under each source's own rules); expected 0"
    )
    assert verdict.action == (
        "`tomforge clean --quarantine-oracle` quarantines the 3 items (see `oracle_checks` for the deciding event)"
    )
    assert verdict.explain.startswith("Every gold of a parsed real story re-derived by `schemas/world/checker.py`")
    assert verdict.evidence == [
        {"source": "to\\*mi", "rule set": "tomi\\|v1", "rejected golds": "2 of 7 parsed", "items": "r#5, r#1"},
        {"source": "hitom", "rule set": "tomi\\|v1", "rejected golds": "1 of 5 parsed", "items": "r#4"},
    ]
    many = OracleDisagreements().verdict(facts([oracle("s", ["t1"], 1, 0)] * 9))
    assert many is not None and len(many.evidence) == 8


def test_the_checks_names() -> None:
    assert (VariantLeaks.name, VariantLeaks.emits, VariantLeaks.by_source) == ("variant leaks", (LEAK,), "items")
    assert (OracleDisagreements.name, OracleDisagreements.emits) == ("oracle disagreements", (ORACLE,))


def test_the_verdicts_explain_themselves_in_full() -> None:
    leaks = VariantLeaks().verdict(facts([leak(["t1"], ["h1"], [])]))
    oracle_verdict = OracleDisagreements().verdict(facts([oracle("tomi", ["t1"], 1, 0)]))
    assert leaks is not None and leaks.explain == (
        "A variant (`tomforge variants`) and its original are one story: a variant of a held-out story in train "
        "teaches the test."
    )
    assert oracle_verdict is not None and oracle_verdict.explain == (
        "Every gold of a parsed real story re-derived by `schemas/world/checker.py` (no code shared with the generator) "
        "under the source's documented rules."
    )
