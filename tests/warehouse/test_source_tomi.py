"""ToMi adapter: own samples, real samples, missing or misaligned traces, and malformed inputs."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from tests.source_helpers import by_ref, read_all, source_error
from tomforge import schemas
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.tomi import ADAPTER, split_of

VALIDATOR = jsonschema.Draft202012Validator(schemas.record_schema())


@pytest.fixture()
def own(samples: Path) -> Path:
    return samples / "tomi"


@pytest.fixture()
def copy(tmp_path: Path, own: Path) -> Path:
    """A writable copy of the own train file and its trace."""
    for suffix in (".txt", ".trace"):
        shutil.copy(own / f"tomi_sample_train{suffix}", tmp_path / f"tomi_sample_train{suffix}")
    return tmp_path


def question_lines(story_file: Path) -> list[str]:
    """A ToMi example ends with its question line, the only line holding tabs (question, answer, support)."""
    return [line for line in story_file.read_text(encoding="utf-8").splitlines() if "\t" in line]


def distinct_stories(story_file: Path) -> int:
    """Examples repeat their story, numbered from 1; count the distinct texts before each question."""
    stories, current = set(), []
    for line in story_file.read_text(encoding="utf-8").splitlines():
        number, _, text = line.partition(" ")
        if number == "1":
            current = []
        if "\t" in line:
            stories.add(tuple(current))
        else:
            current.append(text)
    return len(stories)


def expected_from_trace(trace_file: Path) -> tuple[Counter, Counter, Counter]:
    """(question types, belief orders, is_false_belief) as the trace's question field says: memory and
    reality are order 0 with no false belief; first/second_order_*_tom are false beliefs, *_no_tom not."""
    kinds = [line.split(",")[-2] for line in trace_file.read_text(encoding="utf-8").splitlines() if line]
    qtype = {"memory": "memory", "reality": "reality", "first": "first_order_belief", "second": "higher_order_belief"}
    order = {"memory": 0, "reality": 0, "first": 1, "second": 2}
    heads = [kind.split("_")[0] for kind in kinds]
    false_belief = [
        None if head in ("memory", "reality") else not kind.endswith("_no_tom") for head, kind in zip(heads, kinds)
    ]
    return Counter(qtype[h] for h in heads), Counter(order[h] for h in heads), Counter(false_belief)


def test_registry_and_static_facts() -> None:
    adapter = get_adapter("tomi")
    assert adapter is ADAPTER
    assert adapter.version.startswith("tomi@dea2bca") and adapter.license == "CC BY-NC 4.0"


def test_own_samples_load_completely(own: Path) -> None:
    records, rejects = read_all(ADAPTER, own)
    assert rejects == []
    files = {split: own / f"tomi_sample_{split}.txt" for split in ("train", "test")}
    assert Counter(record["split"] for record in records) == {
        split: len(question_lines(f)) for split, f in files.items()
    }
    types, orders, false_beliefs = (
        sum(counters, Counter())
        for counters in zip(*(expected_from_trace(f.with_suffix(".trace")) for f in files.values()))
    )
    assert Counter(record["question_type"] for record in records) == types
    assert Counter(record["belief_order"] for record in records) == orders
    assert Counter(record["is_false_belief"] for record in records) == false_beliefs
    assert types == {
        "memory": 4,
        "reality": 4,
        "first_order_belief": 8,
        "higher_order_belief": 8,
    }  # the fixture's design
    for record in records:
        assert not list(VALIDATOR.iter_errors(record)), record["source_ref"]
        assert record["answer_format"] == "free_text" and record["options"] == []
        assert record["answer"] in record["meta"]["containers"]
        assert record["meta"]["type_source"] == "trace"


def test_own_sample_fields(own: Path) -> None:
    records = by_ref(read_all(ADAPTER, own)[0])
    second = records["tomi_sample_train.txt#8"]
    assert second["question"] == "Where does Nadia think that Soren searches for the radish?"
    assert (second["question_type"], second["belief_order"]) == ("higher_order_belief", 2)
    assert second["perspective_chain"] == ["Nadia", "Soren"] and second["is_false_belief"] is True
    assert second["answer"] == "white_sack" and second["answer_index"] is None
    assert second["n_agents"] == 3 and second["n_events"] == 8
    meta = second["meta"]
    assert meta["story_type"] == "false_belief" and meta["trace_question_type"] == "second_order_0_tom"
    assert meta["containers"] == ["white_sack", "yellow_hamper"] and meta["support"] == ["1"]
    assert meta["events"][:2] == ["enter_agent_1", "enter_agent_0"]
    memory = records["tomi_sample_train.txt#6"]
    assert (memory["question_type"], memory["belief_order"], memory["is_false_belief"]) == ("memory", 0, None)
    assert records["tomi_sample_train.txt#7"]["is_false_belief"] is False


def test_examples_of_one_story_share_context(own: Path) -> None:
    records = read_all(ADAPTER, own)[0]
    contexts = Counter(record["context_id"] for record in records)
    assert len(contexts) == sum(distinct_stories(own / f"tomi_sample_{s}.txt") for s in ("train", "test")) == 4
    assert sorted(contexts.values()) == [6, 6, 6, 6]
    first = by_ref(records)["tomi_sample_test.txt#0"]
    assert first["context"].startswith("1 Zoe entered the porch.") and "\t" not in first["context"]


def test_ids_stable_and_unique(own: Path) -> None:
    first, second = read_all(ADAPTER, own)[0], read_all(ADAPTER, own)[0]
    assert [r["item_id"] for r in first] == [r["item_id"] for r in second]
    assert [r["content_hash"] for r in first] == [r["content_hash"] for r in second]
    assert len({r["item_id"] for r in first}) == len(first)


def test_real_samples(real_samples: Path) -> None:
    records, rejects = read_all(ADAPTER, real_samples / "tomi")
    story_file = real_samples / "tomi" / "fb_all_test.txt"
    assert rejects == [] and len(records) == len(question_lines(story_file)) > 0
    assert {record["split"] for record in records} == {"test"}
    types, orders, false_beliefs = expected_from_trace(story_file.with_suffix(".trace"))
    assert Counter(record["question_type"] for record in records) == types
    assert Counter(record["is_false_belief"] for record in records) == false_beliefs
    assert Counter(record["belief_order"] for record in records) == orders
    for record in records:
        assert not list(VALIDATOR.iter_errors(record)), record["source_ref"]
    assert len({record["context_id"] for record in records}) == distinct_stories(story_file)


def test_missing_trace_still_loads(copy: Path) -> None:
    _, orders, _ = expected_from_trace(copy / "tomi_sample_train.trace")
    (copy / "tomi_sample_train.trace").unlink()
    records, rejects = read_all(ADAPTER, copy / "tomi_sample_train.txt")
    assert not rejects and len(records) == len(question_lines(copy / "tomi_sample_train.txt"))
    assert {record["is_false_belief"] for record in records} == {None}
    assert {record["meta"]["type_source"] for record in records} == {"question_text"}
    assert Counter(record["belief_order"] for record in records) == orders  # read off the wording instead
    assert by_ref(records)["tomi_sample_train.txt#2"]["perspective_chain"] == ["Greta", "Hamid"]


def test_misaligned_trace_is_fatal(copy: Path) -> None:
    trace = copy / "tomi_sample_train.trace"
    trace.write_text("\n".join(trace.read_text().splitlines()[:-1]) + "\n")
    source_error(ADAPTER, copy, "tomi_sample_train.trace", "11 trace lines for 12 examples")


def test_malformed_examples_become_rejects(copy: Path) -> None:
    story = copy / "tomi_sample_train.txt"
    n_examples = len(question_lines(story))
    lines = story.read_text().splitlines()
    lines[6] = lines[6].split("\t")[0]  # example 0: question without answer
    lines[15] = "9 Lucia entered the porch."  # example 2: its second line is numbered 9
    trace = copy / "tomi_sample_train.trace"
    trace_lines = trace.read_text().splitlines()
    # example 3: the trace contradicts the question
    trace_lines[3] = trace_lines[3].replace(",reality,", ",first_order_0_no_tom,")
    trace.write_text("\n".join(trace_lines) + "\n")
    story.write_text("\n".join(lines[:-1]) + "\n")  # last example loses its question line (truncated)
    records, rejects = read_all(ADAPTER, copy)
    assert len(records) + len(rejects) == n_examples  # every example of the intact file, good or bad
    fields = {reject.record: reject.field for reject in rejects}
    assert fields == {"0": "answer", "2": "line", "3": "trace", "11": "question"}
    assert all(reject.file == "tomi_sample_train.txt" and reject.raw for reject in rejects)


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("stories_test.txt", b"1 Ana entered the den.\n2 Where is the fig r\xe9ally?\tbox\t1\n", "not UTF-8"),
        ("stories_test.txt", b"story,question,answer\nAna entered,Where?,box\n", "not a bAbI-style ToMi file"),
        ("stories_test.txt", b"", "empty file"),
        ("stories.json", b'{"data": []}', "not a ToMi story file"),
    ],
)
def test_whole_file_problems_raise_source_error(tmp_path: Path, name: str, content: bytes, problem: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    source_error(ADAPTER, path, name, problem)


def test_missing_or_empty_root_raises(tmp_path: Path) -> None:
    source_error(ADAPTER, tmp_path / "nowhere", "nowhere", "not found")
    source_error(ADAPTER, tmp_path, "no ToMi")


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("fb_all_test.txt", "test"),
        ("train.txt", "train"),
        ("tomi_val.txt", "val"),
        ("stories.txt", "unsplit"),
        ("contest.txt", "unsplit"),
    ],
)
def test_split_from_file_name(name: str, split: str) -> None:
    assert split_of(Path(name)) == split
