"""The FANToM adapter: the project's sample, the unified fields it derives, and bad inputs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.source_helpers import source_error
from tomforge.schemas import record_schema
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.base import Reject
from tomforge.warehouse.sources.fantom import ADAPTER, parse_turns, perspective_chain


@pytest.fixture(scope="module")
def sample_file(samples: Path) -> Path:
    return samples / "fantom" / "fantom_v1.json"


@pytest.fixture(scope="module")
def records(samples: Path) -> list[Any]:
    return list(ADAPTER.read(samples / "fantom"))


def _sets(sample_file: Path) -> list[dict[str, Any]]:
    return json.loads(sample_file.read_text(encoding="utf-8"))


def _write(tmp_path: Path, data: Any, name: str = "fantom_v1.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _by_ref(produced: list[Any]) -> dict[str, Any]:
    return {item.source_ref if isinstance(item, Reject) else item["source_ref"]: item for item in produced}


def test_registry_returns_this_adapter() -> None:
    adapter = get_adapter("fantom")
    assert adapter is ADAPTER
    assert (adapter.name, adapter.hub_repo) == ("fantom", None)
    assert adapter.license.startswith("MIT") and adapter.version


def test_sample_loads_every_question_without_rejects(records: list[Any], sample_file: Path) -> None:
    assert not [item for item in records if isinstance(item, Reject)]
    expected = sum(
        1 + len(s["beliefQAs"]) + 2 + len(s["answerabilityQAs_binary"]) + len(s["infoAccessibilityQAs_binary"])
        for s in _sets(sample_file)
    )
    assert len(records) == expected == 37
    assert Counter(r["question_type"] for r in records) == {
        "factual": 4,
        "first_order_belief": 5,
        "higher_order_belief": 5,
        "answerability": 12,
        "info_accessibility": 11,
    }
    assert Counter(r["answer_format"] for r in records) == {
        "free_text": 4,
        "multiple_choice": 10,
        "list": 8,
        "yes_no": 15,
    }
    assert {r["source"] for r in records} == {"fantom"} and {r["split"] for r in records} == {"unsplit"}
    assert {r["context_kind"] for r in records} == {"dialogue"}


def test_every_record_validates_against_the_schema(records: list[Any]) -> None:
    validator = jsonschema.Draft202012Validator(record_schema())
    for record in records:
        errors = [error.message for error in validator.iter_errors(record)]
        assert not errors, (record["source_ref"], errors)


def test_ids_are_stable_and_unique(records: list[Any], samples: Path) -> None:
    again = list(ADAPTER.read(samples / "fantom" / "fantom_v1.json"))
    assert [(r["item_id"], r["content_hash"]) for r in records] == [(r["item_id"], r["content_hash"]) for r in again]
    assert len({r["item_id"] for r in records}) == len(records)


def test_source_refs_name_file_set_and_question_path(records: list[Any]) -> None:
    refs = _by_ref(records)
    assert "fantom_v1.json#0/factQA" in refs
    assert "fantom_v1.json#3/beliefQAs/1" in refs
    assert "fantom_v1.json#2/answerabilityQAs_binary/2" in refs
    assert refs["fantom_v1.json#1/infoAccessibilityQA_list"]["meta"]["set_id"] == "101-1-2"


def test_context_turns_and_speakers(records: list[Any], sample_file: Path) -> None:
    refs = _by_ref(records)
    first, second, bakery = (
        refs["fantom_v1.json#0/factQA"],
        refs["fantom_v1.json#1/factQA"],
        refs["fantom_v1.json#2/factQA"],
    )
    assert first["context"] == _sets(sample_file)[0]["full_context"]
    assert first["context_id"] == second["context_id"] != bakery["context_id"]  # two sets, one conversation
    assert first["meta"]["short_context"].startswith("Maya: So, Lena")
    assert bakery["n_agents"] == 4 and [t["speaker"] for t in bakery["turns"]][:3] == ["Priya", "Sam", "Elif"]
    jonah = bakery["turns"][3]
    assert jonah["speaker"] == "Jonah" and jonah["text"].count("\n") == 2  # two unlabeled lines appended
    assert bakery["n_events"] == len(bakery["turns"]) == 8


def test_belief_questions_are_two_way_choices_keeping_both_answers(records: list[Any], sample_file: Path) -> None:
    raw = _sets(sample_file)[0]["beliefQAs"][0]
    record = _by_ref(records)["fantom_v1.json#0/beliefQAs/0"]
    assert record["question"] == raw["question"]
    assert sorted(record["options"]) == sorted([raw["correct_answer"], raw["wrong_answer"]])
    assert record["options"][record["answer_index"]] == record["answer"] == raw["correct_answer"]
    assert record["meta"]["wrong_answer"] == raw["wrong_answer"]
    assert (record["question_type"], record["belief_order"], record["is_false_belief"]) == (
        "first_order_belief",
        1,
        True,
    )
    beliefs = [r for r in records if r["answer_format"] == "multiple_choice"]
    assert {r["answer_index"] for r in beliefs} == {0, 1}  # the gold is not always first
    accessible = _by_ref(records)["fantom_v1.json#0/beliefQAs/1"]
    assert accessible["is_false_belief"] is False


def test_perspective_chains(records: list[Any]) -> None:
    refs = _by_ref(records)
    assert refs["fantom_v1.json#0/beliefQAs/0"]["perspective_chain"] == ["Tomas"]
    second = refs["fantom_v1.json#0/beliefQAs/2"]
    assert (second["question_type"], second["belief_order"]) == ("higher_order_belief", 2)
    assert second["perspective_chain"] == ["Lena", "Tomas"]
    assert refs["fantom_v1.json#2/beliefQAs/1"]["perspective_chain"] == ["Jonah", "Elif"]
    assert refs["fantom_v1.json#2/answerabilityQAs_binary/1"]["perspective_chain"] == ["Sam"]
    assert refs["fantom_v1.json#2/answerabilityQA_list"]["perspective_chain"] == []
    assert refs["fantom_v1.json#2/factQA"]["perspective_chain"] == []


def test_perspective_chain_ignores_names_outside_mental_verbs() -> None:
    speakers = ("Ana", "Kofi", "Ben")
    assert perspective_chain("What does Kofi believe about Ben's belief regarding Ana's sister?", speakers, 2) == [
        "Kofi",
        "Ben",
    ]
    assert perspective_chain("Where is Ana's sister getting married?", speakers, 1) == []
    assert perspective_chain("What does Kofi think Ben knows?", speakers, 1) == ["Kofi"]


def test_list_and_binary_questions(records: list[Any], sample_file: Path) -> None:
    refs = _by_ref(records)
    fact = _sets(sample_file)[2]["factQA"]
    listing = refs["fantom_v1.json#2/answerabilityQA_list"]
    assert listing["answer_list"] == ["Jonah", "Priya", "Sam"]
    assert listing["options"] == ["Elif", "Jonah", "Priya", "Sam"]
    assert listing["question"].startswith(f"Target: {fact['question']}\n")
    assert listing["meta"]["raw_question"].startswith("List all the characters")
    info = refs["fantom_v1.json#2/infoAccessibilityQAs_binary/0"]
    assert info["question"].startswith(f"Information: {fact['question']} {fact['correct_answer']}\n")
    assert (info["answer_format"], info["answer"], info["options"]) == ("yes_no", "no", ["yes", "no"])
    long_no = refs["fantom_v1.json#3/answerabilityQAs_binary/0"]
    assert long_no["answer"] == "no" and long_no["meta"]["correct_answer"] == "no:long"
    assert refs["fantom_v1.json#3/factQA"]["meta"]["wrong_answer"].startswith("Ana's sister")


def test_parse_turns_keeps_continuations_and_leading_narration() -> None:
    turns = parse_turns("(they meet at the gym)\nAmy: hi\nthere\n\nBo Li: hello: again")
    assert turns == [
        {"speaker": "", "text": "(they meet at the gym)"},
        {"speaker": "Amy", "text": "hi\nthere"},
        {"speaker": "Bo Li", "text": "hello: again"},
    ]


def test_pandas_column_layout_reads_like_the_array(tmp_path: Path, sample_file: Path, records: list[Any]) -> None:
    rows = _sets(sample_file)
    columns = {name: {str(i): row[name] for i, row in enumerate(rows)} for name in rows[0]}
    produced = list(ADAPTER.read(_write(tmp_path, columns)))
    assert [r["item_id"] for r in produced] == [r["item_id"] for r in records]


def test_malformed_questions_are_rejected_by_field(tmp_path: Path, sample_file: Path) -> None:
    rows = _sets(sample_file)
    del rows[0]["beliefQAs"][1]["wrong_answer"]
    rows[0]["answerabilityQAs_binary"][0]["correct_answer"] = "maybe"
    rows[1]["answerabilityQA_list"]["correct_answer"] = "Maya"
    rows[2]["beliefQAs"][0]["tom_type"] = "zeroth"
    produced = list(ADAPTER.read(_write(tmp_path, rows)))
    assert len(produced) == 37
    rejects = {r.source_ref: r for r in produced if isinstance(r, Reject)}
    assert {ref: r.field for ref, r in rejects.items()} == {
        "fantom_v1.json#0/beliefQAs/1": "wrong_answer",
        "fantom_v1.json#0/answerabilityQAs_binary/0": "correct_answer",
        "fantom_v1.json#1/answerabilityQA_list": "correct_answer",
        "fantom_v1.json#2/beliefQAs/0": "tom_type",
    }
    reject = rejects["fantom_v1.json#0/answerabilityQAs_binary/0"]
    assert (reject.source, reject.file, reject.record) == ("fantom", "fantom_v1.json", "0/answerabilityQAs_binary/0")
    assert "maybe" in reject.raw and "maybe" in reject.reason


def test_set_level_problems_reject_every_question_of_the_set(tmp_path: Path, sample_file: Path) -> None:
    rows = _sets(sample_file)
    del rows[0]["full_context"]
    rows[2]["set_id"] = rows[1]["set_id"]
    rows[3]["beliefQAs"] = "not a list"
    rows.append(["not", "a", "set"])
    produced = list(ADAPTER.read(_write(tmp_path, rows)))
    rejects = [r for r in produced if isinstance(r, Reject)]
    fields = Counter(r.field for r in rejects)
    assert fields == {"full_context": 10, "set_id": 11, "beliefQAs": 1, "(record)": 1}
    assert len(produced) == 37 - 2 + 1 + 1  # set 3's two beliefs become one reject; one extra bad set


def test_set_without_fact_question_rejects_the_questions_that_need_it(tmp_path: Path, sample_file: Path) -> None:
    rows = _sets(sample_file)[:1]
    del rows[0]["factQA"]
    produced = list(ADAPTER.read(_write(tmp_path, rows)))
    rejects = [r for r in produced if isinstance(r, Reject)]
    assert len(rejects) == 6 and {r.field for r in rejects} == {"factQA"}
    assert sum(1 for r in produced if not isinstance(r, Reject)) == 3  # the belief questions


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'[{"set_id": "1-1-1", "full_context": "A: hi"', "truncated"),
        ('[{"set_id": "1-1-1", "full_context": "Zo\u00eb: h\u00e9"}]'.encode("latin-1"), "UTF-8"),
        (b"set_id,full_context\n1-1-1,A: hi\n", "JSON"),
        (b'{"data": [{"story": "x"}]}', "JSON array"),
        (b'[{"story": "x", "question": "y"}]', "no FANToM question sets"),
        (b'{"set_id": "1-1-1", "full_context": "A: hi"}\n{"set_id": "1-1-2", "full_context": "A: hi"}\n', "JSON Lines"),
        (
            b'[{"set_id": "1-1-1", "full_context": "A: \\ud83d\\ude00 hi \\udc00"}]',
            "lone surrogate escape (not valid Unicode) at /0/full_context",
        ),
    ],
    ids=["truncated", "not-utf8", "csv", "wrong-shape", "other-dataset", "json-lines", "lone-surrogate"],
)
def test_unreadable_files_raise_source_error_naming_the_file(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "fantom_v1.json"
    path.write_bytes(content)
    source_error(ADAPTER, path, str(path), problem)


def test_missing_paths_raise_source_error(tmp_path: Path) -> None:
    source_error(ADAPTER, tmp_path / "absent.json", "absent.json", "path not found")
    source_error(ADAPTER, tmp_path, "no fantom_v1.json")
