"""rl/sft.py's small parts against hand-worked values (issue 38: the mutants mutmut left alive; the SFT runs
themselves are in tests/test_rl_sft*.py): the exact target of each answer format, the neutral thought and the
rationale in its place, how many processes tokenize, the environment put back, the length-grouping spelling,
and the JSON written. No model, no torch (the loss is tests/rl/test_rl_sft_loss.py's)."""

from __future__ import annotations

import json
import os
from dataclasses import make_dataclass
from pathlib import Path

import pytest

import tomforge.rl.sft as sft
from tomforge.rl.sft import (
    PARALLEL_TOKENIZE_ROWS,
    length_grouping,
    original_environ,
    save_json,
    target_answer,
    target_completion,
    tokenize_processes,
)


def truth(**fields: object) -> str:
    return json.dumps(fields)


@pytest.mark.parametrize(
    ("ground_truth", "answer"),
    [
        (truth(answer_format="multiple_choice", options=["a", "b", "c", "d"], answer_index=2, answer="c"), "C"),
        (truth(answer_format="multiple_choice", options=["a", "b"], answer_index=0, answer="a"), "A"),
        (
            truth(answer_format="multiple_choice", options=[str(i) for i in range(30)], answer_index=27, answer="x"),
            "28",
        ),
        (truth(answer_format="multiple_choice", options=["a", "b"], answer_index=None, answer="b"), "b"),
        (truth(answer_format="multiple_choice", options=["a", "b"], answer="b"), "b"),
        (truth(answer_format="list", answer_list=["Ann", "Bob"], answer="x"), "Ann, Bob"),
        (truth(answer_format="list", answer_list=["Ann"], answer="x"), "Ann"),
        (truth(answer_format="list", answer_list=[], answer=""), "none"),  # nobody: the word the reward reads
        (truth(answer_format="list", answer_list=None, answer="Ann and Bob"), "Ann and Bob"),
        (truth(answer_format="list", answer="Cid"), "Cid"),
        (truth(answer_format="yes_no", answer="yes", answer_index=0, options=["yes", "no"]), "yes"),
        (truth(answer_format="free_text", answer=3, answer_list=["q"]), "3"),
    ],
)
def test_the_target_answer_of_each_format(ground_truth: str, answer: str) -> None:
    assert target_answer(ground_truth) == answer


def row(info: dict, rationale: dict | None = None) -> dict:
    gt = truth(answer_format="multiple_choice", options=["a", "b", "c"], answer_index=1, answer="b")
    out = {"extra_info": info, "reward_model": {"ground_truth": gt}}
    if rationale is not None:
        out["rationale_text"] = rationale
    return out


def test_the_neutral_thought_and_the_rationale_in_its_place() -> None:
    neutral = "<think>This is a first order belief question of order 2; I track who saw each event.</think>"
    info = {"belief_order": 2, "question_type": "first_order_belief"}
    assert target_completion(row(info)) == neutral + "<answer>B</answer>"
    assert target_completion(row({"belief_order": 0, "question_type": "reality"})) == (
        "<think>This is a reality question of order 0; I track who saw each event.</think><answer>B</answer>"
    )
    assert target_completion(row({})) == (
        "<think>This is a question question; I track who saw each event.</think><answer>B</answer>"
    )
    rationale = {"steps": "1. Ann saw it. 2. So the box.", "prose": "Ann saw it."}
    assert target_completion(row(info, rationale), "steps") == (
        "<think>1. Ann saw it. 2. So the box.</think><answer>B</answer>"
    )
    assert target_completion(row(info, rationale)) == neutral + "<answer>B</answer>"  # no form asked
    assert target_completion(row(info, rationale), "chain") == neutral + "<answer>B</answer>"  # not this row's
    assert target_completion(row(info, {"steps": ""}), "steps") == neutral + "<answer>B</answer>"
    assert target_completion(row(info, None), "steps") == neutral + "<answer>B</answer>"
    assert target_completion({**row(info), "rationale_text": None}, "steps") == neutral + "<answer>B</answer>"


def test_sft_pairs_are_conversational_prompt_completion_rows() -> None:
    pytest.importorskip("datasets")
    prompt = [{"role": "user", "content": "Where?"}]
    data = sft.sft_dataset([{**row({"belief_order": 1}), "prompt": prompt}])
    assert data.to_list() == [
        {
            "prompt": prompt,
            "completion": [
                {
                    "role": "assistant",
                    "content": "<think>This is a question question of order 1; I track who saw each event.</think>"
                    "<answer>B</answer>",
                }
            ],
        }
    ]


def test_how_many_processes_tokenize(monkeypatch) -> None:
    assert PARALLEL_TOKENIZE_ROWS == 20_000
    assert [tokenize_processes(n, 10) for n in (0, 1, 2, 16)] == [None, None, 2, 16]  # as chosen; 1: this one
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert tokenize_processes(None, 19_999) is None
    assert tokenize_processes(None, 20_000) == 8  # one per CPU, at most 8
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert tokenize_processes(None, 20_000) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert tokenize_processes(None, 20_000) == 2  # two CPUs: two processes
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5}, raising=False)
    assert tokenize_processes(None, 10**6) is None  # one CPU: this process
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert tokenize_processes(None, 20_000) == 4
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert tokenize_processes(None, 20_000) is None


def test_the_environment_object_is_put_back_with_the_copys_contents(monkeypatch) -> None:
    monkeypatch.setenv("TOMFORGE_M38_GONE", "1")
    monkeypatch.delenv("TOMFORGE_M38_NEW", raising=False)
    original = os.environ
    try:
        with original_environ():
            copy = dict(os.environ)
            del copy["TOMFORGE_M38_GONE"]
            copy["TOMFORGE_M38_NEW"] = "2"
            os.environ = copy  # type: ignore[assignment]  # noqa: B003 (as datasets' parallel map does)
        assert os.environ is original
        assert "TOMFORGE_M38_GONE" not in original
        assert original["TOMFORGE_M38_NEW"] == "2"
        with original_environ():
            os.environ["TOMFORGE_M38_NEW"] = "3"  # the same object: nothing to put back
        assert os.environ is original and original["TOMFORGE_M38_NEW"] == "3"
    finally:
        os.environ = original  # noqa: B003 (the original object back)
        original.pop("TOMFORGE_M38_NEW", None)


def test_the_length_grouping_in_each_spelling() -> None:
    both = make_dataclass("Both", ["train_sampling_strategy", "group_by_length"])
    old = make_dataclass("Old", ["group_by_length", "x"])
    neither = make_dataclass("Neither", ["x"])
    assert length_grouping(both) == {"train_sampling_strategy": "group_by_length"}
    assert length_grouping(old) == {"group_by_length": True}
    assert length_grouping(neither) == {}


def test_save_json_makes_the_folder_and_writes_sorted_indented_text(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "result.json"
    save_json(path, {"b": 1, "a": Path("p")})
    assert path.read_text() == '{\n "a": "p",\n "b": 1\n}'
    save_json(path, [1])  # the folder exists now
    assert path.read_text() == "[\n 1\n]"


def test_sft_pairs_carry_the_rationale_form_asked_for() -> None:
    pytest.importorskip("datasets")
    item = {**row({"belief_order": 1}, {"steps": "1. Ann saw it."}), "prompt": [{"role": "user", "content": "Q"}]}
    data = sft.sft_dataset([item], "steps")
    assert data.to_list()[0]["completion"][0]["content"] == "<think>1. Ann saw it.</think><answer>B</answer>"
