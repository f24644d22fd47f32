"""The columnar validator gives, row by row, the verdict of jsonschema-rs and jsonschema on the dicts."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import jsonschema_rs
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tomforge.schemas import record_schema
from tomforge.schemas.record import FIELDS, build_record
from tomforge.warehouse.load import _to_arrow
from tomforge.warehouse.validate_columns import UnsupportedSchema, compile_checks, invalid_mask

RS = jsonschema_rs.Draft202012Validator(record_schema())
PY = jsonschema.Draft202012Validator(record_schema())
PATTERN_FIELDS = ("item_id", "context_id", "source", "content_hash")


def _record(key: str, **fields: Any) -> dict[str, Any]:
    base = dict(
        source="toy_src",
        source_version="1",
        source_key=key,
        source_ref=f"toy.json#{key}",
        split="test",
        context="Anne put the ball in the box.",
        question="Where is the ball?",
        question_type="reality",
        answer="box",
        answer_format="free_text",
    )
    return build_record(**{**base, **fields})


VALID = [
    _record(
        "mc",
        answer_format="multiple_choice",
        options=["box", "basket"],
        belief_order=1,
        perspective_chain=["Anne"],
        is_false_belief=True,
        n_agents=2,
        n_events=3,
        meta={"a": {"b": [1, None]}},
    ),
    _record("yn", answer="yes", answer_format="yes_no", question_type="first_order_belief", is_false_belief=False),
    _record(
        "ft",
        generator="gen",
        generator_version="2",
        template_id="t1",
        seed=7,
        operators=["swap", "leave"],
        trace=[{"event": "move", "to": "box"}, "x", 3],
    ),
    _record("ls", answer_format="list", answer_list=["box", "lid"], question_type="multihop", trace=[]),
    _record(
        "dl",
        context_kind="dialogue",
        turns=[{"speaker": "A", "text": "hi"}, {"speaker": "B", "text": ""}],
        question_type="knowledge",
        meta={"lang": "en", "n": 1.5},
    ),
    _record("uc", context="é", question="¿?", split="all", question_type="action", n_agents=0, belief_order=0),
]

# Each mutation overrides a few fields of a valid record; the schema forbids all but those in KEEPS_VALID.
MUTATIONS: list[dict[str, Any]] = [
    *(
        {name: value}
        for name in ("item_id", "context_id")
        for value in ("0" * 31, "0" * 33, "A" * 32, "g" * 32, "0" * 32 + "\n", " " + "0" * 32, None)
    ),
    *({"content_hash": value} for value in ("0" * 63, "F" * 64, "0" * 64 + "\n", None)),
    *({"source": value} for value in ("Toy", "1toy", "to-y", "", "toy\n", None)),
    *(
        {name: value}
        for name in ("source_version", "source_ref", "split", "context", "question")
        for value in ("", None)
    ),
    {"context_kind": "novel"},
    {"context_kind": "Story"},
    {"context_kind": None},
    {"question_type": "belief"},
    {"question_type": None},
    {"answer_format": "mcq"},
    {"answer_format": None},
    *({name: -1} for name in ("n_agents", "n_events", "belief_order", "answer_index")),
    *({name: None} for name in ("perspective_chain", "options", "operators", "answer", "meta")),
    *({name: ["a", None]} for name in ("perspective_chain", "options", "operators", "answer_list")),
    {"answer_format": "multiple_choice", "options": ["a"], "answer_index": 0},
    {"answer_format": "multiple_choice", "options": [], "answer_index": 0},
    {"answer_format": "multiple_choice", "options": ["a", "b"], "answer_index": None},
    {"answer_format": "list", "answer_list": None},
    {"context_kind": "dialogue", "turns": None},
    {"context_kind": "dialogue", "turns": []},
    {"turns": [{"speaker": None, "text": "hi"}]},
    {"turns": [{"speaker": "A", "text": None}]},
    {"turns": [{"speaker": "A", "text": "hi"}, None]},
    {"turns": [{"speaker": "A"}]},
    {"meta": []},
    {"meta": [{"a": 1}]},
    {"meta": "x"},
    {"meta": 1},
    {"meta": True},
    {"trace": {"a": 1}},
    {"trace": "x"},
    {"trace": 3},
    {"trace": False},
]
KEEPS_VALID: list[dict[str, Any]] = [
    {"answer": ""},
    {"seed": -1},
    {"n_agents": 0},
    {"context": "é"},
    {"trace": None},
    {"trace": [[]]},
    {"meta": {}},
    {"context_kind": "story", "turns": []},
    {"answer_format": "list", "answer_list": []},
    {"answer_format": "yes_no", "answer_index": 9},
    {"answer_format": "free_text", "options": []},
    {"is_false_belief": None},
    {"generator": None, "template_id": None},
    {"context_kind": "dialogue", "turns": [{"speaker": "", "text": ""}]},
    {"answer_format": "multiple_choice", "options": ["a", "b"], "answer_index": 1},
]
ALL_MUTATIONS = MUTATIONS + KEEPS_VALID


def _mutated(record: dict[str, Any], *mutations: dict[str, Any]) -> dict[str, Any]:
    out = dict(record)
    for mutation in mutations:
        out.update(copy.deepcopy(mutation))
    return out


def _assert_agrees(rows: list[dict[str, Any]], table: pa.Table | None = None) -> list[bool]:
    """The mask equals jsonschema-rs on every row, and jsonschema except where `$` meets a final newline."""
    mask = invalid_mask(_to_arrow(rows, FIELDS) if table is None else table)
    got = mask.to_pylist()
    assert mask.null_count == 0 and len(got) == len(rows)
    for row, invalid in zip(rows, got):
        assert invalid == (not RS.is_valid(row)), row
        if invalid != (not PY.is_valid(row)):  # the one known disagreement: Python's `$` allows a final "\n"
            assert invalid and any(isinstance(row[f], str) and row[f].endswith("\n") for f in PATTERN_FIELDS), row
    return got


def test_valid_records_pass() -> None:
    assert not any(_assert_agrees(VALID))
    assert all(PY.is_valid(row) for row in VALID)


def test_each_mutation_alone() -> None:
    rows = [_mutated(record, mutation) for record in VALID for mutation in ALL_MUTATIONS]
    got = _assert_agrees(rows)
    expected = [mutation not in KEEPS_VALID for _ in VALID for mutation in ALL_MUTATIONS]
    assert got == expected


def test_trailing_newline_is_the_known_disagreement() -> None:
    row = _mutated(VALID[0], {"item_id": VALID[0]["item_id"] + "\n"})
    assert invalid_mask(_to_arrow([row], FIELDS)).to_pylist() == [True]
    assert not RS.is_valid(row) and PY.is_valid(row)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(VALID), st.lists(st.sampled_from(ALL_MUTATIONS), max_size=3)), min_size=1, max_size=40
    ),
    st.data(),
)
def test_random_combinations(cases: list[tuple[dict, list[dict]]], data: st.DataObject) -> None:
    rows = [_mutated(record, *mutations) for record, mutations in cases]
    split = data.draw(st.integers(0, len(rows)))  # several chunks, and a slice with an offset
    table = pa.concat_tables([_to_arrow(rows[:split], FIELDS), _to_arrow(rows[split:], FIELDS)])
    got = _assert_agrees(rows, table)
    start = data.draw(st.integers(0, len(rows)))
    assert invalid_mask(table.slice(start)).to_pylist() == got[start:]


def test_min_length_counts_code_points() -> None:
    schema = copy.deepcopy(record_schema())
    schema["properties"]["question"]["minLength"] = 2
    rows = [_mutated(VALID[0], {"question": "é"}), _mutated(VALID[0], {"question": "éé"})]
    assert compile_checks(schema)(_to_arrow(rows, FIELDS)).to_pylist() == [True, False]
    assert [not jsonschema_rs.Draft202012Validator(schema).is_valid(row) for row in rows] == [True, False]


def test_empty_table() -> None:
    assert invalid_mask(_to_arrow([], FIELDS)).to_pylist() == []


@pytest.mark.parametrize("change", ["drop", "extra", "retype"])
def test_table_layout_errors(change: str) -> None:
    table = _to_arrow(VALID, FIELDS)
    if change == "drop":
        table = table.drop_columns(["meta"])
    elif change == "extra":
        table = table.append_column("extra", pa.array([None] * len(VALID), pa.string()))
    else:
        table = table.set_column(FIELDS.index("seed"), "seed", pa.array([1] * len(VALID), pa.int32()))
    with pytest.raises(ValueError, match="meta|extra|seed"):
        invalid_mask(table)


@pytest.mark.parametrize(
    ("edit", "keyword", "where"),
    [
        (lambda s: s["properties"]["item_id"].update(maxLength=32), "maxLength", "item_id"),
        (lambda s: s["properties"]["source"].update(format="hostname"), "format", "source"),
        (
            lambda s: s["properties"]["turns"]["items"]["properties"]["text"].update(maxLength=9),
            "maxLength",
            "turns[]/text",
        ),
        (lambda s: s["properties"]["trace"].update(minItems=1), "minItems", "trace"),
        (lambda s: s["properties"]["meta"].update(required=["x"]), "required", "meta"),
        (lambda s: s["allOf"][0].update({"else": {}}), "else", "(record)"),
        (lambda s: s["properties"]["n_agents"].update(pattern="^1"), "pattern", "n_agents"),
        (lambda s: s["properties"]["source"].update(pattern="^(?=a)"), "pattern", "source"),
        (lambda s: s["properties"]["seed"].update(type=["number", "null"]), "type", "seed"),
        (lambda s: s.update(additionalProperties=True), "additionalProperties", "(record)"),
        (lambda s: s.update(dependentRequired={"seed": ["generator"]}), "dependentRequired", "(record)"),
    ],
)
def test_unknown_keywords_are_refused(edit: Any, keyword: str, where: str) -> None:
    schema = copy.deepcopy(record_schema())
    edit(schema)
    with pytest.raises(UnsupportedSchema, match=keyword) as refused:
        compile_checks(schema)
    assert repr(where) in str(refused.value)
