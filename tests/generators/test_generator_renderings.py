"""The second-person rendering: the same worlds and golds as third person, the reader as "you",
grammatical agreement, every gold re-derived by the checker, and the audit's rank table unchanged."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tomforge.audits.config import AuditParams
from tomforge.audits.features import records_frame
from tomforge.audits.ranks import gold_ranks
from tomforge.generators import generate_records
from tomforge.generators.renderings import second_person
from tomforge.schemas.world.checker import check_record

ARGS = {"n": 600, "max_order": 4, "seed": 5}
# what English never says with "you" as the subject (written here apart from the rendering's rules)
UNGRAMMATICAL = re.compile(
    r"\b[Yy]ou (really )?(likes|dislikes|loves|hates|admires|is|has|does|thinks|believes|was)\b"
    r"|\b[Dd]oes you\b|\bIs you\b|\byou's\b|\b[Yy]ou (made|checked) their\b"
)


@pytest.fixture(scope="module")
def both() -> tuple[list[dict], list[dict]]:
    n = ARGS["n"]
    rest = {k: v for k, v in ARGS.items() if k != "n"}
    return list(generate_records(n, **rest)), list(generate_records(n, rendering="second_person", **rest))


def test_worked_example() -> None:
    story = "1 Anne and Bob entered the hall.\n2 Anne likes the box.\n3 Bob told Anne that the pear is in the box.\n4 Anne is fond of it."
    assert second_person(story, "Anne") == (
        "1 You and Bob entered the hall.\n2 You like the box.\n"
        "3 Bob told you that the pear is in the box.\n4 You are fond of it."
    )
    assert (
        second_person("Where does Bob think Anne thinks the pear is?", "Anne")
        == "Where does Bob think you think the pear is?"
    )
    assert (
        second_person("What is Anne's belief about where the pear is?", "Anne")
        == "What is your belief about where the pear is?"
    )
    assert (
        second_person("Does Anne believe that Bob believes the pear is in the box?", "Anne")
        == "Do you believe that Bob believes the pear is in the box?"
    )


def test_same_worlds_and_golds_told_to_the_reader(both) -> None:
    third, second = both
    assert len(third) == len(second) == ARGS["n"]
    for a, b in zip(third, second):
        for field in (
            "trace",
            "answer",
            "options",
            "answer_index",
            "perspective_chain",
            "belief_order",
            "answer_format",
        ):
            assert a[field] == b[field], field
        assert a["item_id"] != b["item_id"] and a["meta"]["rendering"] == "third_person"
        reader = b["meta"]["reader"]
        assert b["meta"]["rendering"] == "second_person" and reader == b["trace"][0]["agents"][0]
        assert not re.search(rf"\b{reader}\b", b["context"] + " " + b["question"]), b["source_ref"]
        assert re.search(r"\bYou\b", b["context"]), b["source_ref"]
        assert not UNGRAMMATICAL.search(b["context"]) and not UNGRAMMATICAL.search(b["question"]), b["source_ref"]
        if reader in b["perspective_chain"]:
            assert re.search(r"\byou\b", b["question"], re.IGNORECASE), b["question"]


def test_the_checker_rederives_every_second_person_gold(both) -> None:
    assert [p for r in both[1] for p in check_record(r)] == []


def test_the_audit_sees_the_same_ranks(both) -> None:
    tables = [gold_ranks(records_frame(rs).with_columns(pl.lit("t").alias("selection")), AuditParams()) for rs in both]
    assert tables[0].height and tables[0].equals(tables[1])
