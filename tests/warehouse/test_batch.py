"""Records built as columns (`warehouse.batch`) are the records `build_record` builds, byte for byte,
and a batch with anything wrong in it is sorted record by record, as plain records are."""

from __future__ import annotations

import json
import json.encoder
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tomforge.schemas.record import FIELDS
from tomforge.warehouse.batch import BatchError, ColumnBatch, batched, expand
from tomforge.warehouse.load import _to_arrow, info_of, stage
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.base import Reject

CONSTANTS = {"source": "hitom", "source_version": "v1", "split": "unsplit", "question_type": "reality"}
text = st.text(min_size=1, max_size=12)  # any code point but lone surrogates (orjson refuses those)
text = text.filter(lambda value: not any(0xD800 <= ord(char) <= 0xDFFF for char in value))
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
row = st.fixed_dictionaries(
    {
        "source_key": text,
        "source_ref": text,
        "context": st.sampled_from(["1 A entered.\n2 B left.", "one story", "x\ty \u00e9\u2028"]) | text,
        "question": text,
        "answer": st.sampled_from(["a", "b", "yes"]),
        "answer_format": st.sampled_from(["multiple_choice", "yes_no", "free_text"]),
        "options": st.lists(st.sampled_from(["a", "b", 'c"\\']), max_size=3).map(tuple) | st.lists(text, max_size=2),
        "belief_order": st.none() | st.integers(0, 4),
        "answer_index": st.none() | st.integers(0, 3),
        "is_false_belief": st.none() | st.booleans(),
        "n_agents": st.none() | st.integers(0, 9),
        "perspective_chain": st.lists(text, max_size=3),
        "meta": st.none() | st.dictionaries(text, json_value, max_size=4),
        "trace": st.none() | st.lists(json_value, max_size=3),
    }
)


def as_columns(rows: list[dict], constant: set[str]) -> ColumnBatch:
    """A batch of `rows`, with the fields in `constant` taken from the first row for all."""
    columns = {name: [r[name] for r in rows] for name in rows[0] if name not in constant}
    constants = {**CONSTANTS, **{name: rows[0][name] for name in constant}}
    fixed = [{**r, **{name: rows[0][name] for name in constant}} for r in rows]
    return ColumnBatch(len(rows), columns, constants), fixed


@settings(max_examples=60, deadline=None)
@given(
    st.lists(row, min_size=1, max_size=6),
    st.sets(st.sampled_from(["answer_format", "options", "meta", "context", "answer_index"])),
)
def test_column_batch_is_build_record_byte_for_byte(rows: list[dict], constant: set[str]) -> None:
    batch, fixed = as_columns(rows, constant)
    expected = _to_arrow(list(batch.records()), FIELDS)
    assert batch.table().equals(expected)
    assert [batch.kwargs(i) for i in range(len(rows))] == [{**CONSTANTS, **r} for r in fixed]


def test_string_encoder_escapes_every_code_point_as_orjson() -> None:
    encode = json.encoder.encode_basestring
    chars = (chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF)
    assert all(encode(char) == orjson.dumps(char).decode("utf-8") for char in chars)


def test_values_arrow_cannot_hold_raise_batch_error() -> None:
    batch = ColumnBatch(
        2,
        {
            "source_key": ["a", "b"],
            "source_ref": ["a", "b"],
            "question": ["q?", 7],
            "context": ["s", "s"],
            "answer": ["x", "y"],
            "answer_format": ["yes_no"] * 2,
        },
        CONSTANTS,
    )
    with pytest.raises(BatchError):
        batch.table()
    surrogate = ColumnBatch(
        1,
        {
            "source_key": ["a"],
            "source_ref": ["a"],
            "question": ["q\ud800"],
            "context": ["s"],
            "answer": ["x"],
            "answer_format": ["yes_no"],
        },
        CONSTANTS,
    )
    with pytest.raises(BatchError):
        surrogate.table()


def test_batched_keeps_rejects_in_input_order() -> None:
    reject = Reject("hitom", "f#1", "f", "1", "story", "bad")
    produced = [("a",), reject, ("b",), ("c",), ("d",)]
    out = list(batched(produced, ("source_key",), {}, size=2))
    assert [x.rows["source_key"] if isinstance(x, ColumnBatch) else x for x in out] == [
        ["a"],
        reject,
        ["b", "c"],
        ["d"],
    ]
    one = ColumnBatch(
        1,
        {
            "source_key": ["a"],
            "source_ref": ["f#0"],
            "context": ["s"],
            "question": ["q?"],
            "answer": ["x"],
            "answer_format": ["yes_no"],
        },
        CONSTANTS,
    )
    record, passed = expand([one, reject])
    assert record == next(one.records()) and passed is reject


def hitom_with_problems(samples: Path, folder: Path) -> Path:
    """Own HiToM rows, a few of them rejected by the adapter."""
    base = json.loads((samples / "hitom" / "Hi-ToM_data.json").read_text(encoding="utf-8"))["data"]
    data = [dict(base[i % len(base)], sample_id=i) for i in range(60)]
    data[5]["question"] = ""  # not a HiToM question form: the adapter's own reject
    data[7]["answer"] = data[7]["answer"] + " "  # not among the choices
    data[9], data[11] = data[11], data[9]  # rows out of order: same records, other positions
    path = folder / "Hi-ToM_data.json"
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["hitom", "exploretom"])
def test_column_path_stages_what_the_row_path_stages(name: str, samples: Path, tmp_path: Path) -> None:
    adapter = get_adapter(name)
    path = hitom_with_problems(samples, tmp_path) if name == "hitom" else samples / "exploretom"
    by_rows = stage(info_of(adapter), adapter.read(path), "in")
    by_columns = stage(info_of(adapter), adapter.read_columns(path), "in")
    for table in ("items", "contexts", "rejects"):
        assert getattr(by_columns, table).equals(getattr(by_rows, table)), table
    assert by_columns.digest == by_rows.digest
    assert by_rows.report.reconciled and by_columns.report.reconciled
    # the input's own count (a JSON array's length, CSV rows by the csv module) agrees with both paths
    assert adapter.count_input(path) == by_rows.read == by_columns.read == (60 if name == "hitom" else 28)


def test_a_batch_with_an_invalid_or_repeated_record_is_sorted_record_by_record() -> None:
    good = {
        "source_key": "k",
        "source_ref": "f#0",
        "context": "s",
        "question": "q?",
        "answer": "x",
        "answer_format": "yes_no",
    }
    rows = [good, {**good, "source_key": "k2", "source_ref": "f#1", "question": ""}, {**good, "source_ref": "f#2"}]
    batch = ColumnBatch(3, {name: [r[name] for r in rows] for name in good}, CONSTANTS)
    info = info_of(get_adapter("hitom"))
    staged = stage(info, [batch], "in")
    assert staged.items.column("source_ref").to_pylist() == ["f#0"]
    assert staged.rejects.column("field").to_pylist() == ["question", "item_id"]
    report = staged.report  # 3 records handed in (counted as they stream past): 1 kept, 2 rejected
    assert (report.read, report.loaded, report.rejected, report.reconciled) == (3, 1, 2, True)
    assert staged.digest == stage(info, batch.records(), "in").digest
