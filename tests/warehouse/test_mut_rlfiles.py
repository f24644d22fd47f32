"""The RL files adapter part by part, on hand-written rows and small JSON-lines files (issue 38: survivors of
mutmut over `warehouse/sources/rlfiles.py`). Each expected record field, reject and load note is worked by hand
from the planted row."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest

from tomforge.warehouse.sources import rlfiles
from tomforge.warehouse.sources.base import RecordError, Reject
from tomforge.warehouse.sources.rl_prompt import PromptMarkers, SplitPrompt
from tomforge.warehouse.sources.rlfiles import ADAPTER, ANSWER_FIELDS, RLFileOptions, field_value, jsonable

PROMPT = "Story: Anne put the ball in the box.\nQuestion: Where is the ball?"


def produce(row, options: RLFileOptions | None = None, index: int = 3, split: str = "train"):
    adapter = ADAPTER.configured(options) if options else ADAPTER
    return adapter._produce(row, "d/f.jsonl", index, split)


def test_the_adapter_and_its_defaults() -> None:
    assert (ADAPTER.name, ADAPTER.version, ADAPTER.hub_repo) == ("rlfiles", "1", None)
    assert ADAPTER.license == "as published (see the files' own card)"
    assert ADAPTER.hub_patterns == ["*.parquet", "*.jsonl", "*.json", "*.arrow"]
    assert ADAPTER.binary_formats == frozenset({"Parquet"})
    options = RLFileOptions()
    assert (options.split, options.answer_field, options.prompt_field) == (None, None, "prompt")
    assert options.text_columns == (("story", "question"), ("extra_info.story", "extra_info.question"))
    assert options.markers == PromptMarkers()
    assert ANSWER_FIELDS[0] == "reward_model.ground_truth" and rlfiles.DEFAULT_SPLIT == "train"
    assert rlfiles.ORDER_FIELDS == ("belief_order", "order", "question_order", "tom_order")
    other = ADAPTER.configured(RLFileOptions(split="dev"))
    assert other.options.split == "dev" and ADAPTER.options.split is None and other.name == "rlfiles"


def test_field_values_by_dotted_path() -> None:
    row = {"a.b": 1, "a": {"b": 2, "c": {"d": 3}}, "n": None}
    assert field_value(row, "a.b") == 1  # a column named with a dot wins
    assert field_value({"a": {"b": 2}}, "a.b") == 2
    assert field_value(row, "a.c.d") == 3
    assert field_value(row, "a.x") is None and field_value(row, "a.b.c") is None and field_value(row, "n") is None
    assert field_value(row, "n.x") is None and field_value(row, "z") is None


def test_jsonable_values() -> None:
    marker = object()
    assert jsonable(None) is None and jsonable("s") == "s" and jsonable(2) == 2 and jsonable(1.5) == 1.5
    assert jsonable({1: b"\x00\x01", "t": (1, [b"\xff"])}) == {"1": {"base64": "AAE="}, "t": [1, [{"base64": "/w=="}]]}
    assert jsonable(decimal.Decimal("1.50")) == "1.50"
    assert jsonable(datetime.date(2026, 1, 2)) == "2026-01-02"
    assert jsonable(datetime.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05"
    assert jsonable(datetime.time(3, 4)) == "03:04:00"
    assert jsonable(datetime.timedelta(days=1, seconds=5)) == "1 day, 0:00:05"
    assert jsonable(marker) is marker


def test_present() -> None:
    assert [rlfiles._present(v) for v in (None, "", [], {}, 0, False, "x", [0], {"a": None})] == [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
    ]


# --- one row ----------------------------------------------------------------------------------------------------


def test_a_row_becomes_a_record() -> None:
    row = {
        "prompt": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": PROMPT}, {"type": "image_url"}]},
        ],
        "reward_model": {"ground_truth": "box"},
        "extra_info": {"belief_order": True, "order": "2", "question_order": 2, "tom_order": 1},
        "data_source": "tomi",
    }
    record = produce(row, split="test")
    assert (record["source"], record["source_version"], record["source_ref"], record["split"]) == (
        "rlfiles",
        "1",
        "d/f.jsonl#row3",
        "test",
    )
    assert (record["context"], record["question"], record["context_kind"], record["turns"]) == (
        "Anne put the ball in the box.",
        "Where is the ball?",
        "story",
        None,
    )
    assert (record["answer"], record["answer_format"], record["belief_order"]) == ("box", "free_text", 2)
    assert record["question_type"] == "higher_order_belief"  # order 2 (the first int field; a bool is no order)
    assert record["meta"] == row | {
        "tomforge_rl": {
            "prompt_split": "story_and_question",
            "answer_field": "reward_model.ground_truth",
            "story_marker": "Story:",
            "ignored_parts": ["image_url"],
        }
    }


@pytest.mark.parametrize(
    "extra, order, question_type",
    [
        ({"tom_order": 1}, 1, "first_order_belief"),
        ({"order": 0}, 0, "reality"),
        ({"order": -1}, None, "unknown"),
        ({"order": 2, "question_type": "memory"}, 2, "memory"),
        ({"question_type": "no such type"}, None, "unknown"),
        ({"question_type": "reality"}, None, "reality"),
        ("not a dict", None, "unknown"),
        ({"belief_order": False}, None, "unknown"),
    ],
)
def test_order_and_question_type_from_extra_info(extra, order, question_type: str) -> None:
    record = produce({"prompt": PROMPT, "answer": "box", "extra_info": extra})
    assert (record["belief_order"], record["question_type"]) == (order, question_type)


def test_a_dialogue_prompt_and_the_story_question_columns() -> None:
    dialogue = produce({"prompt": "Dialogue:\nAnne: hi\nBob: bye\nQuestion: Who left?", "answer": "Bob"})
    assert dialogue["context_kind"] == "dialogue" and dialogue["turns"] == [
        {"speaker": "Anne", "text": "hi"},
        {"speaker": "Bob", "text": "bye"},
    ]
    assert dialogue["meta"]["tomforge_rl"] == {"prompt_split": "story_and_question", "answer_field": "answer"} | {
        "story_marker": "Dialogue:"
    }
    columns = {
        "story": "Anne left.",
        "question": "Where?",
        "answer": "x",
        "prompt": [{"role": "user", "content": [{"type": "image_url"}]}],
    }
    record = produce(columns)
    assert (record["context"], record["question"]) == ("Anne left.", "Where?")
    assert record["meta"]["tomforge_rl"] == {"prompt_split": "columns", "answer_field": "answer", "story_marker": None}


def test_text_columns_in_order_then_the_prompt() -> None:
    options = RLFileOptions(prompt_field="text")
    adapter = ADAPTER.configured(options)
    assert adapter._text_of({"story": "S", "question": "Q"}) == SplitPrompt("S", "Q", "columns")
    nested = {"story": " ", "question": "Q1", "extra_info": {"story": "S2", "question": "Q2"}}
    assert adapter._text_of(nested) == SplitPrompt("S2", "Q2", "columns")
    assert adapter._text_of({"story": "S", "question": "  ", "text": PROMPT}).how == "story_and_question"
    assert adapter._text_of({"story": "S", "question": 5, "text": PROMPT}).how == "story_and_question"
    assert adapter._text_of({"story": 5, "question": "Q", "text": PROMPT}).how == "story_and_question"
    for row in ({"prompt": PROMPT}, {"text": ""}, {"text": []}):
        with pytest.raises(RecordError) as bad:
            adapter._text_of(row)
        assert (bad.value.field, bad.value.reason) == (
            "text",
            "no prompt (null or empty) and no story/question columns",
        )
    marked = ADAPTER.configured(RLFileOptions(markers=PromptMarkers(story=("Tale:",), question=("Q:",))))
    assert marked._text_of({"prompt": "Tale: x\nQ: y?"}) == SplitPrompt("x", "y?", "story_and_question", "Tale:")


def test_the_first_answer_field_holding_a_value() -> None:
    row = {"answer": "", "ground_truth": None, "solution": "box", "completion": "bag"}
    name, answer = ADAPTER._answer_of(row)
    assert (name, answer.answer) == ("solution", "box")
    assert ADAPTER._answer_of({"reward_model": {"ground_truth": "a"}, "answer": "b"})[0] == "reward_model.ground_truth"
    assert ADAPTER._answer_of({"extra_info": {"ground_truth": "g"}})[0] == "extra_info.ground_truth"
    with pytest.raises(RecordError) as none:
        ADAPTER._answer_of({"answer": ""})
    assert (none.value.field, none.value.reason) == (
        "reward_model.ground_truth",
        "no answer: none of reward_model.ground_truth, answer, ground_truth, solution, completion, "
        "extra_info.answer, extra_info.ground_truth holds a value",
    )
    chosen = ADAPTER.configured(RLFileOptions(answer_field="meta.gold"))
    assert chosen._answer_of({"meta": {"gold": "yes"}, "answer": "no"})[1].answer == "yes"
    with pytest.raises(RecordError) as missing:
        chosen._answer_of({"answer": "no"})
    assert (missing.value.field, missing.value.reason) == ("meta.gold", "no answer (null or empty)")


def test_bad_rows_are_rejects_naming_row_and_field() -> None:
    reject = produce({"prompt": PROMPT, "answer": "", "blob": b"\x00"}, index=7)
    assert reject == Reject(
        "rlfiles",
        "d/f.jsonl#row7",
        "d/f.jsonl",
        "row7",
        "reward_model.ground_truth",
        reject.reason,
        Reject.raw_of({"prompt": PROMPT, "answer": "", "blob": {"base64": "AA=="}}),
    )
    assert reject.reason.startswith("no answer: none of reward_model.ground_truth")
    bad = rlfiles.BadRow(raw="{oops", reason="not JSON")
    assert produce(bad, index=2) == Reject("rlfiles", "d/f.jsonl#row2", "d/f.jsonl", "row2", "row", "not JSON", "{oops")


# --- files ------------------------------------------------------------------------------------------------------


def write_lines(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")


def test_split_for_a_file() -> None:
    root = Path("/data")
    assert ADAPTER.configured(RLFileOptions(split="dev")).split_for(root / "test.jsonl", root) == (
        "dev",
        "from --split",
    )
    assert ADAPTER.split_for(root / "x_test.jsonl", root) == ("test", "from the name: 'test'")
    assert ADAPTER.split_for(root / "rows.jsonl", root) == (
        "train",
        "default: no train/test/validation/dev part in the name",
    )


def test_reading_files_counting_rows_and_the_load_notes(tmp_path: Path) -> None:
    row = {"prompt": PROMPT, "answer": "box"}
    write_lines(tmp_path / "a_test.jsonl", [row, "{not json", {"prompt": "no markers here", "answer": "x"}])
    write_lines(tmp_path / "sub" / "rows.jsonl", [{"prompt": "Anne left.\nQuestion: Where?", "answer": "y"}])
    write_lines(tmp_path / "b.jsonl", [{"story": "S", "question": "Q", "answer": "z"}])
    assert ADAPTER.count_input(tmp_path) == 5
    read = list(ADAPTER.read(tmp_path))
    refs = [r["source_ref"] if isinstance(r, dict) else r.source_ref for r in read]
    assert refs == [
        "a_test.jsonl#row0",
        "a_test.jsonl#row1",
        "a_test.jsonl#row2",
        "b.jsonl#row0",
        "sub/rows.jsonl#row0",
    ]
    assert isinstance(read[1], Reject) and read[1].field == "row"
    assert [r["split"] for r in read if isinstance(r, dict)] == ["test", "test", "train", "train"]
    loaded = [r for r in read if isinstance(r, dict)]
    items = pa.table({"source_ref": [r["source_ref"] for r in loaded], "meta": [json.dumps(r["meta"]) for r in loaded]})
    assert ADAPTER.load_notes(items, tmp_path) == [
        "rlfiles: a_test.jsonl -> split test (from the name: 'test'; 2 rows loaded)",
        "rlfiles: b.jsonl -> split train (default: no train/test/validation/dev part in the name; 1 row loaded)",
        "rlfiles: sub/rows.jsonl -> split train (default: no train/test/validation/dev part in the name; 1 row loaded)",
        "rlfiles: 1 of 4 loaded rows keep the whole prompt as their context (no story/question markers found: "
        "meta.tomforge_rl.prompt_split = 'none'); 1 split at story and question markers, 1 at the question marker "
        "only, 1 read from story/question columns",
    ]


def test_load_notes_name_the_content_parts_left_out(tmp_path: Path) -> None:
    write_lines(tmp_path / "rows.jsonl", [{}])
    metas = [
        {"tomforge_rl": {"prompt_split": "story_and_question", "ignored_parts": ["image_url", "input_audio"]}},
        {"tomforge_rl": {"prompt_split": "story_and_question", "ignored_parts": ["image_url"]}},
        {"tomforge_rl": {"prompt_split": "none"}},
    ]
    items = pa.table({"source_ref": ["other.jsonl#row0"] * 3, "meta": [json.dumps(m) for m in metas]})
    assert ADAPTER.load_notes(items, tmp_path) == [
        "rlfiles: rows.jsonl -> split train (default: no train/test/validation/dev part in the name; 0 rows loaded)",
        "rlfiles: 2 of 3 loaded rows hold content parts that are not text (image_url 2, input_audio 1), left out: "
        "only text parts are read",
        "rlfiles: 1 of 3 loaded rows keep the whole prompt as their context (no story/question markers found: "
        "meta.tomforge_rl.prompt_split = 'none'); 2 split at story and question markers, 0 at the question marker "
        "only, 0 read from story/question columns",
    ]


def test_a_folder_whose_name_holds_a_split_word_names_the_split(tmp_path: Path) -> None:
    write_lines(tmp_path / "my_test_set" / "rows.jsonl", [{"prompt": PROMPT, "answer": "box"}])
    (record,) = ADAPTER.read(tmp_path)
    assert record["split"] == "test"


def test_a_tomforge_ground_truth_keeps_its_options_index_and_list() -> None:
    truth = {"answer": "bag", "answer_format": "multiple_choice", "options": ["box", "bag"], "answer_index": 1}
    record = produce({"prompt": PROMPT, "ground_truth": json.dumps(truth)})
    assert (record["answer"], record["answer_format"], record["options"], record["answer_index"]) == (
        "bag",
        "multiple_choice",
        ["box", "bag"],
        1,
    )
    listed = produce({"prompt": PROMPT, "answer": ["Anne", "Bob"]})
    assert (listed["answer"], listed["answer_format"], listed["answer_list"]) == ("Anne, Bob", "list", ["Anne", "Bob"])


def test_the_gold_index_is_read_not_searched() -> None:
    """Two options with one text: the ground truth's index says which is the gold, not the first match."""
    truth = {"answer": "bag", "answer_format": "multiple_choice", "options": ["bag", "bag"], "answer_index": 1}
    assert produce({"prompt": PROMPT, "ground_truth": json.dumps(truth)})["answer_index"] == 1
