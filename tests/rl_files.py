"""RL training files written by the tests, in the published layouts (verl parquet, TRL jsonl), with
every value the tests expect worked out by hand beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SYSTEM = "You are a careful reader. Think inside <think></think>, answer inside <answer></answer>."
MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
VERL_SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", MESSAGES),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([("index", pa.int64()), ("order", pa.int64()), ("id", pa.string())])),
        ("difficulty", pa.float64()),
    ]
)


def _user(*texts: str, system: bool = True, replies: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """System message, then user turns with the given assistant replies between them."""
    messages = [{"role": "system", "content": SYSTEM}] if system else []
    for number, text in enumerate(texts):
        messages.append({"role": "user", "content": text})
        if number < len(replies):
            messages.append({"role": "assistant", "content": replies[number]})
    return messages


def _row(source: str, prompt: Any, truth: Any, extra: dict[str, Any] | None, difficulty: float | None = 0.5) -> dict:
    return {
        "data_source": source,
        "prompt": prompt,
        "ability": "tom",
        "reward_model": None if truth is None else {"style": "rule", "ground_truth": truth},
        "extra_info": extra,
        "difficulty": difficulty,
    }


# (row, expected context, question, answer, answer_format, prompt_split) or (row, rejected field)
VERL_CASES: list[tuple[dict, tuple]] = [
    (
        _row(
            "tomi_rl",
            _user(
                "Story: Ann put the apple in the basket. Ann left. Bob moved the apple to the box.\n"
                "Question: Where will Ann look for the apple?\n\nAnswer in one word."
            ),
            "basket",
            {"index": 0, "order": 1, "id": "a"},
        ),
        (
            "Ann put the apple in the basket. Ann left. Bob moved the apple to the box.",
            "Where will Ann look for the apple?",
            "basket",
            "free_text",
            "story_and_question",
        ),
    ),
    (
        _row(
            "fewshot_rl",
            _user(
                "Story: Cy sat down.\nQuestion: Who sat?",
                "Story: Dee hid the coin in the jar.\n\nQuestion: Where is the coin?",
                replies=("<answer>Cy</answer>",),
            ),
            '["jar", "table"]',
            {"index": 1, "order": 0, "id": "b"},
            None,
        ),
        ("Dee hid the coin in the jar.", "Where is the coin?", "jar, table", "list", "story_and_question"),
    ),
    (
        _row(
            "two_turns",
            _user(
                "Story: Eve hid the key under the mat.",
                "Question: Where is the key? Answer:",
                system=False,
                replies=("OK.",),
            ),
            "mat",
            None,
        ),
        ("Eve hid the key under the mat.", "Where is the key?", "mat", "free_text", "story_and_question"),
    ),
    (
        _row(
            "plain",
            _user("Fay put the pen in the cup. Where is the pen?\nThink first."),
            "no",
            {"index": 3, "order": None, "id": "d"},
        ),
        (
            "Fay put the pen in the cup. Where is the pen?\nThink first.",
            "Fay put the pen in the cup. Where is the pen?",
            "no",
            "yes_no",
            "none",
        ),
    ),
    (
        _row(
            "dialogue",
            _user("Dialogue:\nGus: I left the cake here.\nHal: I ate it.\n\nQuestion: Who ate the cake?"),
            "Hal",
            {"index": 4, "order": 2, "id": "e"},
        ),
        ("Gus: I left the cake here.\nHal: I ate it.", "Who ate the cake?", "Hal", "free_text", "story_and_question"),
    ),
    (
        _row(
            "two_lines",
            _user("Story: Jan saw Kai.\nQuestion: Target: Who saw Kai?\nDoes Kai know?\n\nSay yes or no."),
            "yes",
            {"index": 5, "order": 1, "id": "f"},
        ),
        ("Jan saw Kai.", "Target: Who saw Kai?\nDoes Kai know?", "yes", "yes_no", "story_and_question"),
    ),
    (
        _row(
            "question_first",
            _user(
                "Question: Where will Lea look for the cup?\nStory: Lea left the cup on the desk. "
                "Max moved it.\nAnswer: think first."
            ),
            "desk",
            None,
        ),
        (
            "Lea left the cup on the desk. Max moved it.",
            "Where will Lea look for the cup?",
            "desk",
            "free_text",
            "story_and_question",
        ),
    ),
    (_row("noprompt", None, "box", {"index": 6, "order": 1, "id": "g"}), ("prompt",)),
    (
        _row("notruth", _user("Story: Ivy ran.\nQuestion: Who ran?"), None, {"index": 7, "order": 1, "id": "h"}),
        ("reward_model.ground_truth",),
    ),
]


def write_verl(path: Path, rows: list[dict] | None = None) -> Path:
    """A verl parquet file of `rows` (default: the cases above), in row groups of two rows, so the
    reader must cross row groups."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [row for row, _ in VERL_CASES] if rows is None else rows
    pq.write_table(pa.Table.from_pylist(rows, schema=VERL_SCHEMA), path, row_group_size=2)
    return path


# TRL rows (a JSON line each, or a raw line) with what each must become
TRL_LINES: list[tuple[str, tuple]] = [
    (
        json.dumps(
            {
                "prompt": "Story: Jo put the hat on the shelf.\nQuestion: Where is the hat?",
                "completion": "<think>easy</think><answer>shelf</answer>",
            }
        ),
        ("Jo put the hat on the shelf.", "Where is the hat?", "<think>easy</think><answer>shelf</answer>", "free_text"),
    ),
    (
        json.dumps(
            {
                "prompt": [{"role": "user", "content": "Story: Kim has 3 cats.\nQuestion: How many cats?"}],
                "ground_truth": 3,
                "extra": {"tags": ["count", None]},
            }
        ),
        ("Kim has 3 cats.", "How many cats?", "3", "free_text"),
    ),
    (
        json.dumps({"prompt": "Story: Lu met Mo and Ned.\nQuestion: Whom did Lu meet?", "answer": ["Mo", "Ned"]}),
        ("Lu met Mo and Ned.", "Whom did Lu meet?", "Mo, Ned", "list"),
    ),
    ('{"prompt": "Story: broken', ("row",)),
    ("[1, 2]", ("row",)),
]


def write_trl(path: Path) -> Path:
    """JSON lines with a blank line in the middle (not a row) and CRLF line ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [line for line, _ in TRL_LINES]
    path.write_bytes(("\r\n".join(lines[:2] + ["", "  "] + lines[2:]) + "\r\n").encode("utf-8"))
    return path
