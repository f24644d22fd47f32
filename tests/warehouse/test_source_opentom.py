"""The OpenToM adapter: the project's sample, the real excerpt, derived fields and bad inputs."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.source_helpers import source_error
from tomforge.schemas import record_schema
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.base import Reject
from tomforge.warehouse.sources.opentom import ADAPTER, perspective_chain

QUESTIONS_PER_STORY = {  # as published: 23 questions per story
    "location_cg_fo.json": 2,
    "location_cg_so.json": 2,
    "location_fg_fo_new.json": 4,
    "location_fg_so_new.json": 2,
    "multihop_fo.json": 6,
    "multihop_so.json": 6,
    "attitude.json": 1,
}


@pytest.fixture(scope="module")
def sample_dir(samples: Path) -> Path:
    return samples / "opentom" / "opentom_data"


@pytest.fixture(scope="module")
def records(samples: Path) -> list[Any]:
    return list(ADAPTER.read(samples / "opentom"))


@pytest.fixture()
def copy(tmp_path: Path, sample_dir: Path) -> Path:
    """A writable copy of the sample folder to break."""
    return Path(shutil.copytree(sample_dir, tmp_path / "opentom_data"))


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _by_ref(produced: list[Any]) -> dict[str, Any]:
    return {item.source_ref if isinstance(item, Reject) else item["source_ref"]: item for item in produced}


def _file_of(record: dict[str, Any]) -> str:
    return record["source_ref"].split("#")[0].rsplit("/", 1)[-1]


def test_registry_returns_this_adapter() -> None:
    adapter = get_adapter("opentom")
    assert adapter is ADAPTER
    assert adapter.hub_repo == "SeacowX/OpenToM" and adapter.hub_patterns == ["opentom_data/*.json"]
    assert adapter.license.startswith("CC BY-NC 4.0") and adapter.version


def test_sample_loads_every_question_without_rejects(records: list[Any]) -> None:
    assert not [item for item in records if isinstance(item, Reject)]
    assert len(records) == 3 * 23
    assert Counter(_file_of(r) for r in records) == {name: 3 * n for name, n in QUESTIONS_PER_STORY.items()}
    assert Counter((r["question_type"], r["belief_order"], r["answer_format"]) for r in records) == {
        ("location", 1, "yes_no"): 6,
        ("location", 2, "yes_no"): 6,
        ("location", 0, "free_text"): 6,
        ("location", 1, "free_text"): 6,
        ("location", 2, "free_text"): 6,
        ("multihop", 1, "multiple_choice"): 18,
        ("multihop", 2, "multiple_choice"): 18,
        ("attitude", 1, "multiple_choice"): 3,
    }
    assert len({r["context_id"] for r in records}) == 3
    assert {(r["source"], r["split"], r["context_kind"]) for r in records} == {("opentom", "unsplit", "story")}


def test_every_record_validates_against_the_schema(records: list[Any]) -> None:
    validator = jsonschema.Draft202012Validator(record_schema())
    for record in records:
        errors = [error.message for error in validator.iter_errors(record)]
        assert not errors, (record["source_ref"], errors)


def test_ids_are_stable_and_unique(records: list[Any], samples: Path, sample_dir: Path) -> None:
    same = list(ADAPTER.read(samples / "opentom"))
    assert [(r["item_id"], r["content_hash"]) for r in records] == [(r["item_id"], r["content_hash"]) for r in same]
    assert len({r["item_id"] for r in records}) == len(records)
    again = list(ADAPTER.read(sample_dir))  # the data folder itself: refs change, item ids do not
    assert [r["item_id"] for r in records] == [r["item_id"] for r in again]
    assert records[0]["source_ref"] == "opentom_data/location_cg_fo.json#10000001/0"
    assert again[0]["source_ref"] == "location_cg_fo.json#10000001/0"


def test_story_fields_and_answers(records: list[Any], sample_dir: Path) -> None:
    meta = json.loads((sample_dir / "meta_data.json").read_text(encoding="utf-8"))["10000002"]
    refs = _by_ref(records)
    coarse = refs["opentom_data/location_cg_fo.json#10000002/1"]
    assert coarse["context"] == meta["narrative"]
    assert {k: coarse["meta"][k] for k in meta if k != "narrative"} == {
        k: v for k, v in meta.items() if k != "narrative"
    }
    assert (coarse["answer"], coarse["options"], coarse["meta"]["raw_answer"]) == ("yes", ["yes", "no"], "Yes")
    assert coarse["meta"]["location_granularity"] == "coarse" and coarse["perspective_chain"] == ["Rosa"]
    assert (coarse["n_agents"], coarse["n_events"]) == (2, 5)
    fine = refs["opentom_data/location_fg_so_new.json#10000002/1"]
    assert (fine["answer_format"], fine["answer"], fine["belief_order"]) == ("free_text", "closet", 2)
    assert fine["perspective_chain"] == ["Rosa", "Owen"] and fine["meta"]["location_granularity"] == "fine"
    attitude = refs["opentom_data/attitude.json#10000002/0"]
    assert attitude["options"] == ["positive", "neutral", "negative"] and attitude["answer_index"] == 1
    fullness = refs["opentom_data/multihop_so.json#10000002/3"]
    assert fullness["options"] == ["more full", "equally full", "less full"]
    assert (fullness["answer"], fullness["answer_index"], fullness["perspective_chain"]) == (
        "equally full",
        1,
        ["Rosa", "Owen"],
    )
    access = refs["opentom_data/multihop_so.json#10000002/4"]
    assert access["options"] == ["more accessible", "equally accessible", "less accessible"]
    assert access["perspective_chain"] == ["Owen", "Rosa"] and access["answer_index"] == 2


def test_narrator_questions_are_order_zero(records: list[Any]) -> None:
    narrator = [r for r in records if r["question"].startswith("From narrator's perspective")]
    assert len(narrator) == 6
    assert {(r["belief_order"], tuple(r["perspective_chain"])) for r in narrator} == {(0, ())}
    assert Counter(r["meta"]["narrator_probe"] for r in narrator) == {"reality": 3, "memory": 3}
    assert all(r["meta"]["source_order"] == 1 for r in narrator)


def test_perspective_chain_parsing() -> None:
    assert perspective_chain("From Marcos's perspective, does Abe think that the melon is in place?", 2) == [
        "Marcos",
        "Abe",
    ]
    assert perspective_chain("From Ana's perspective, how would pen's accessibility change for Ben by the end?", 2) == [
        "Ana",
        "Ben",
    ]
    assert perspective_chain("From Ana's perspective, where is the pen located precisely?", 1) == ["Ana"]
    assert perspective_chain("As Ben, what is your attitude towards Ana's action?", 1) == ["Ben"]
    assert perspective_chain("From narrator's perspective, where is pen located?", 0) == []


def test_real_sample_loads_without_rejects(real_samples: Path) -> None:
    produced = list(ADAPTER.read(real_samples / "opentom"))
    assert not [item for item in produced if isinstance(item, Reject)]
    assert len(produced) == 4 * 23 == 92
    assert Counter(_file_of(r) for r in produced) == {name: 4 * n for name, n in QUESTIONS_PER_STORY.items()}
    assert len({r["context_id"] for r in produced}) == 4
    assert sum(1 for r in produced if r["belief_order"] == 0) == 8
    validator = jsonschema.Draft202012Validator(record_schema())
    assert all(validator.is_valid(r) for r in produced)
    multihop = {r["answer"] for r in produced if r["question_type"] == "multihop"}
    assert multihop <= {
        "more full",
        "equally full",
        "less full",
        "more accessible",
        "equally accessible",
        "less accessible",
    }


def test_question_on_a_missing_story_is_rejected_naming_the_key(copy: Path) -> None:
    _edit(copy / "meta_data.json", lambda data: data.pop("10000003"))
    produced = list(ADAPTER.read(copy))
    rejects = [r for r in produced if isinstance(r, Reject)]
    assert len(produced) == 69 and len(rejects) == 23
    assert {r.field for r in rejects} == {"key"} and all("10000003" in r.reason for r in rejects)
    assert rejects[0].record == "10000003/0" and rejects[0].file == "location_cg_fo.json"


def test_malformed_questions_are_rejected_by_field(copy: Path) -> None:
    _edit(copy / "attitude.json", lambda data: data["10000001"][0].update(answer="delighted"))
    _edit(copy / "location_cg_so.json", lambda data: data["10000002"][1].pop("question"))
    _edit(copy / "multihop_fo.json", lambda data: data["10000003"].__setitem__(2, "less full"))
    _edit(copy / "multihop_so.json", lambda data: data.__setitem__("10000001", {"question": "x"}))
    _edit(copy / "location_cg_fo.json", lambda data: data["10000001"][0].update(answer="Perhaps"))
    produced = list(ADAPTER.read(copy))
    rejects = {r.source_ref: r for r in produced if isinstance(r, Reject)}
    assert {ref: r.field for ref, r in rejects.items()} == {
        "attitude.json#10000001/0": "answer",
        "location_cg_so.json#10000002/1": "question",
        "multihop_fo.json#10000003/2": "(record)",
        "multihop_so.json#10000001": "(record)",
        "location_cg_fo.json#10000001/0": "answer",
    }
    assert "delighted" in rejects["attitude.json#10000001/0"].reason
    assert len(produced) == 69 - 6 + 1  # a story's six multihop questions became one reject


def test_story_without_narrative_rejects_its_questions(copy: Path) -> None:
    _edit(copy / "meta_data.json", lambda data: data["10000001"].pop("narrative"))
    rejects = [r for r in ADAPTER.read(copy) if isinstance(r, Reject)]
    assert len(rejects) == 23 and {r.field for r in rejects} == {"narrative"}


def test_a_single_question_file_reads_only_that_file(sample_dir: Path) -> None:
    produced = list(ADAPTER.read(sample_dir / "attitude.json"))
    assert len(produced) == 3 and {r["question_type"] for r in produced} == {"attitude"}
    assert produced[0]["source_ref"] == "attitude.json#10000001/0"
    assert len(list(ADAPTER.read(sample_dir / "meta_data.json"))) == 69


def test_superseded_fine_location_file_is_skipped_when_the_new_one_exists(copy: Path) -> None:
    shutil.copy(copy / "location_fg_fo_new.json", copy / "location_fg_fo.json")
    assert len(list(ADAPTER.read(copy))) == 69
    (copy / "location_fg_fo_new.json").unlink()
    produced = list(ADAPTER.read(copy))
    assert len(produced) == 69 and sum(_file_of(r) == "location_fg_fo.json" for r in produced) == 12


def test_missing_meta_data_raises_source_error(copy: Path) -> None:
    (copy / "meta_data.json").unlink()
    source_error(ADAPTER, copy, str(copy), "meta_data.json")


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("attitude.json", b'{"10000001": [{"question": "As Felix', "truncated"),
        ("meta_data.json", '{"10000001": {"narrative": "caf\u00e9"}}'.encode("cp1252"), "UTF-8"),
        ("multihop_fo.json", b"key,question,answer\n10000001,x,more full\n", "JSON"),
        ("multihop_so.json", b'[{"question": "x", "answer": "y"}]', "lists of questions"),
        ("meta_data.json", b'{"10000001": "a story"}', "story objects"),
        (
            "meta_data.json",
            b'{"10000001": {"narrative": "x \\ud800"}}',
            "lone surrogate escape (not valid Unicode) at /10000001/narrative",
        ),
    ],
    ids=["truncated", "not-utf8", "csv", "wrong-shape", "meta-wrong-shape", "lone-surrogate"],
)
def test_unreadable_files_raise_source_error_naming_the_file(
    copy: Path, name: str, content: bytes, problem: str
) -> None:
    (copy / name).write_bytes(content)
    source_error(ADAPTER, copy, str(copy / name), problem)


def test_paths_that_are_not_opentom_raise_source_error(tmp_path: Path) -> None:
    source_error(ADAPTER, tmp_path / "absent", "absent", "path not found")
    source_error(ADAPTER, tmp_path, "no OpenToM question files")
    other = tmp_path / "stories.csv"
    other.write_text("a,b\n", encoding="utf-8")
    source_error(ADAPTER, other, "stories.csv", "not an OpenToM file")
