"""RL-ready columns: prompts per answer format, stable arrow types, read back with `datasets`."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tomforge.schemas.record import build_record
from tomforge.schemas.rl.columns import (
    RL_COLUMNS,
    RL_SCHEMA,
    decode_ground_truth,
    rl_columns,
    rl_table,
    with_rl_columns,
)
from tomforge.schemas.rl.prompts import FORMAT_INSTRUCTIONS, SYSTEM_PROMPT

STORY = "Sally puts the marble in the basket. Sally leaves the room. Anne moves the marble to the box."


def make(fmt: str, **kw) -> dict:
    base = dict(
        source="demo",
        source_version="1",
        source_key=f"k-{fmt}-{kw.get('belief_order')}",
        source_ref="demo.json#0",
        split="test",
        context=STORY,
        question="Where will Sally look for the marble?",
        question_type="first_order_belief",
        answer="basket",
        answer_format=fmt,
        belief_order=1,
        perspective_chain=["Sally"],
        is_false_belief=True,
    )
    base.update(kw)
    return build_record(**base)


RECORDS = {
    "multiple_choice": make("multiple_choice", options=["box", "basket", "drawer"]),
    "yes_no": make(
        "yes_no",
        question="Does Sally know where the marble is?",
        answer="no",
        question_type="knowledge",
        belief_order=None,
    ),
    "free_text": make("free_text"),
    "list": make(
        "list",
        question="Which containers held the marble?",
        answer="basket, box",
        answer_list=["basket", "box"],
        question_type="reality",
        belief_order=0,
    ),
    "dialogue": make(
        "free_text",
        context_kind="dialogue",
        context="A: hi\nB: hello",
        turns=[{"speaker": "Ann", "text": "I hid the key."}, {"speaker": "Bob", "text": "Where?"}],
        question="Does Bob know where the key is?",
    ),
}


@pytest.mark.parametrize("fmt", ["multiple_choice", "yes_no", "free_text", "list"])
def test_prompt_per_format(fmt: str) -> None:
    cols = rl_columns(RECORDS[fmt])
    system, user = cols["prompt"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    assert "<think>" in system["content"] and "<answer>" in system["content"]
    assert user["content"].startswith("Story:\n" + STORY)
    assert "Question: " + RECORDS[fmt]["question"] in user["content"]
    assert user["content"].endswith(FORMAT_INSTRUCTIONS[fmt])
    assert ("Options:" in user["content"]) == (fmt == "multiple_choice")


def test_multiple_choice_letters_and_ground_truth() -> None:
    cols = rl_columns(RECORDS["multiple_choice"], index=7)
    assert "A. box\nB. basket\nC. drawer" in cols["prompt"][1]["content"]
    truth = json.loads(cols["reward_model"]["ground_truth"])
    assert truth["answer_index"] == 1 and truth["option_labels"] == ["A", "B", "C"]
    assert truth["answer"] == "basket" == cols["answer"]
    assert cols["extra_info"]["index"] == 7 and cols["extra_info"]["belief_order"] == 1
    assert cols["data_source"] == "tomforge/demo" and cols["ability"] == "theory_of_mind"
    assert cols["reward_model"]["style"] == "rule"


def test_list_answer_and_dialogue() -> None:
    cols = rl_columns(RECORDS["list"])
    assert json.loads(cols["reward_model"]["ground_truth"])["answer_list"] == ["basket", "box"]
    assert cols["answer"] == "basket, box"
    user = rl_columns(RECORDS["dialogue"])["prompt"][1]["content"]
    assert user.startswith("Dialogue:\nAnn: I hid the key.\nBob: Where?")


def test_plain_string_ground_truth_is_free_text() -> None:
    assert decode_ground_truth("the box")["answer"] == "the box"
    assert decode_ground_truth("[1, 2]")["answer_format"] == "free_text"


def test_all_null_column_keeps_its_type() -> None:
    table = rl_table([RECORDS["yes_no"]])  # belief_order None in every row
    assert table.schema == RL_SCHEMA
    assert table.schema.field("extra_info").type.field("belief_order").type == pa.int64()


def test_parquet_round_trip_with_datasets(tmp_path) -> None:
    from datasets import load_dataset

    records = list(RECORDS.values())
    published = pa.Table.from_pylist(
        [
            {k: r[k] for k in ("item_id", "split", "question", "answer")}
            | {
                "source": r["source"],
                "answer_format": r["answer_format"],
                "options": r["options"],
                "answer_index": r["answer_index"],
                "answer_list": r["answer_list"],
                "question_type": r["question_type"],
                "belief_order": r["belief_order"],
                "context": r["context"],
                "context_kind": r["context_kind"],
                "turns": r["turns"],
                "perspective_chain": r["perspective_chain"],
                "is_false_belief": r["is_false_belief"],
                "template_id": r["template_id"],
                "context_id": r["context_id"],
            }
            for r in records
        ]
    )
    table = with_rl_columns(published)
    for name in RL_COLUMNS:
        assert table.schema.field(name).type == RL_SCHEMA.field(name).type
    path = tmp_path / "data" / "default" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(table, path)
    ds = load_dataset("parquet", data_files={"test": str(path)}, split="test")
    assert len(ds) == len(records)
    row = ds[0]
    assert row["prompt"][1]["role"] == "user"
    assert json.loads(row["reward_model"]["ground_truth"])["options"] == ["box", "basket", "drawer"]
    assert [r["extra_info"]["index"] for r in ds] == list(range(len(records)))
    assert ds[1]["extra_info"]["belief_order"] is None
