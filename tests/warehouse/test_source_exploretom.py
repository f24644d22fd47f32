"""ExploreToM adapter: own fixture, real excerpt, malformed rows and unreadable files."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import jsonschema
import polars as pl
import pytest

from tests.source_helpers import source_error
from tomforge.schemas import record_schema
from tomforge.warehouse.batch import expand
from tomforge.warehouse.load import stage
from tomforge.warehouse.sources import exploretom
from tomforge.warehouse.sources.base import Reject
from tomforge.warehouse.sources.exploretom import ADAPTER, COLUMNS, typed

FIXTURE = "exploretom/exploretom-sample.csv"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(record_schema())


@pytest.fixture(scope="module")
def fixture_records(samples: Path) -> list:
    return list(ADAPTER.read(samples / "exploretom"))


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _write(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    return path


def _by_question(records: list, text: str) -> dict:
    return next(r for r in records if r["question"] == text)


def test_adapter_facts() -> None:
    assert ADAPTER.name == "exploretom"
    assert ADAPTER.hub_repo == "facebook/ExploreToM"
    assert ADAPTER.license == "CC BY-NC 4.0"
    assert ADAPTER.hub_patterns == ["*.csv"]
    assert ADAPTER.version


def test_fixture_counts_and_vocabulary(fixture_records: list) -> None:
    assert not [r for r in fixture_records if isinstance(r, Reject)]
    assert len(fixture_records) == 28
    assert Counter(r["question_type"] for r in fixture_records) == {
        "memory": 5,
        "reality": 3,
        "first_order_belief": 8,
        "higher_order_belief": 7,
        "knowledge": 5,
    }
    assert Counter(r["answer_format"] for r in fixture_records) == {"free_text": 23, "yes_no": 5}
    assert Counter(r["belief_order"] for r in fixture_records) == {0: 8, 1: 10, 2: 10}
    assert Counter(r["is_false_belief"] for r in fixture_records) == {False: 13, True: 4, None: 11}
    assert len({r["context_id"] for r in fixture_records}) == 5
    assert all(r["split"] == "unsplit" and r["options"] == [] and r["context_kind"] == "story" for r in fixture_records)
    assert [r["source_ref"] for r in fixture_records] == [f"exploretom-sample.csv#row{i}" for i in range(28)]


def test_fixture_field_mapping(fixture_records: list) -> None:
    marisol = _by_question(fixture_records, "In which container will Marisol search for the brass key?")
    assert marisol["answer"] == "clay jar"
    assert marisol["perspective_chain"] == ["Marisol"]
    assert marisol["is_false_belief"] is True  # relation container_location-False
    assert marisol["context"].startswith("Marisol entered the pottery studio.")
    assert marisol["n_agents"] == 2 and marisol["n_events"] == 6

    second = _by_question(
        fixture_records, "In which container does Lorenzo think that Maeve will search for the old map?"
    )
    assert (second["question_type"], second["belief_order"], second["perspective_chain"]) == (
        "higher_order_belief",
        2,
        ["Lorenzo", "Maeve"],
    )
    assert second["is_false_belief"] is True

    knows = _by_question(
        fixture_records,
        "What does Ivo think about Jules's belief on regatta schedule? (knows about it / does not know about it)",
    )
    assert (knows["question_type"], knows["answer"], knows["answer_format"], knows["is_false_belief"]) == (
        "knowledge",
        "does not know about it",
        "free_text",
        True,
    )

    state = _by_question(fixture_records, "Does Wendell believe that the sourdough loaf is sliced? Answer yes or no.")
    assert (state["answer_format"], state["answer"], state["question_type"]) == ("yes_no", "no", "first_order_belief")
    assert state["is_false_belief"] is None  # no -True/-False; the story flag says a false belief exists somewhere

    memory = _by_question(fixture_records, "In which container was the brass key at the beginning?")
    assert (
        memory["question_type"],
        memory["belief_order"],
        memory["perspective_chain"],
        memory["is_false_belief"],
    ) == ("memory", 0, [], None)


def test_meta_keeps_every_other_column_typed(fixture_records: list) -> None:
    meta = fixture_records[0]["meta"]
    assert set(meta) == set(COLUMNS) - {"story_structure", "question", "expected_answer"}
    assert meta["infilled_story"].startswith("Dust from the wheels")
    assert meta["qprop=params"] == [None, "brass key", "memory-container_location"]
    assert meta["qprop=nth_order"] == -1
    assert meta["qprop=non_unique_mental_state"] is True
    assert meta["sprop=story_accuracy_1st_raw"] == 0.5
    assert meta["sprop=global_idx"] == 0
    assert meta["param=story_type"] == "tomi"
    assert meta["param=num_moves"] == 3
    attic = fixture_records[14]["meta"]
    assert attic["sprop=story_accuracy_1st_raw"] is None  # an empty cell (pandas NaN) is null
    assert fixture_records[14]["meta"]["qprop=params"] == [None, "old map", "memory-container_location"]


def test_typed_cells() -> None:
    assert [
        typed(v) for v in ("True", "False", "-1", "2", "0.5", "1e3", "", None, "nan", "tomi+asymmetric", "1.2.3")
    ] == [True, False, -1, 2, 0.5, 1000.0, None, None, None, "tomi+asymmetric", "1.2.3"]


def test_every_record_validates(fixture_records: list, validator: jsonschema.Draft202012Validator) -> None:
    for record in fixture_records:
        errors = [e.message for e in validator.iter_errors(record)]
        assert not errors, (record["source_ref"], errors)


def test_ids_stable_and_unique(samples: Path, fixture_records: list) -> None:
    again = list(ADAPTER.read(samples / "exploretom"))
    assert [r["item_id"] for r in again] == [r["item_id"] for r in fixture_records]
    assert [r["content_hash"] for r in again] == [r["content_hash"] for r in fixture_records]
    assert len({r["item_id"] for r in fixture_records}) == len(fixture_records)
    single = list(ADAPTER.read(samples / FIXTURE))  # a file as root names it the same way
    assert [r["item_id"] for r in single] == [r["item_id"] for r in fixture_records]


def test_csv_module_fallback_reads_the_same(
    samples: Path, fixture_records: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args, **kwargs):
        raise pl.exceptions.ComputeError("forced")

    monkeypatch.setattr(exploretom.pl, "read_csv", broken)
    assert list(ADAPTER.read(samples / "exploretom")) == fixture_records


def test_real_sample(real_samples: Path, validator: jsonschema.Draft202012Validator) -> None:
    records = list(ADAPTER.read(real_samples / "exploretom"))
    assert not [r for r in records if isinstance(r, Reject)]
    assert len(records) == 40
    assert Counter(r["question_type"] for r in records) == {
        "memory": 7,
        "reality": 5,
        "first_order_belief": 8,
        "higher_order_belief": 20,
    }
    assert all(not list(validator.iter_errors(r)) for r in records)
    assert all(r["perspective_chain"] == r["meta"]["qprop=params"][0] or r["belief_order"] == 0 for r in records)


# ---- malformed rows: one Reject naming the field, the other rows still load ----


@pytest.mark.parametrize(
    ("column", "value", "field"),
    [
        ("qprop=params", "(['Oskar'], 'seed packet', 'container_location-True'", "qprop=params"),
        ("qprop=params", "__import__('os').getcwd()", "qprop=params"),
        ("qprop=params", "(['Oskar', 'Priya'], 'seed packet', 'container_location-True')", "qprop=params"),
        ("qprop=nth_order", "3", "qprop=nth_order"),
        ("question", "", "question"),
        ("expected_answer", "  ", "expected_answer"),
    ],
)
def test_malformed_row_is_rejected(samples: Path, tmp_path: Path, column: str, value: str, field: str) -> None:
    rows = _rows(samples / FIXTURE)
    rows[1 + 9][rows[0].index(column)] = value  # data row 9: a first-order question
    produced = list(ADAPTER.read(_write(tmp_path / "bad.csv", rows)))
    rejects = [r for r in produced if isinstance(r, Reject)]
    assert len(produced) == 28 and len(rejects) == 1
    reject = rejects[0]
    assert (reject.field, reject.source_ref, reject.record, reject.file) == (field, "bad.csv#row9", "row9", "bad.csv")
    assert reject.source == "exploretom" and reject.reason
    if not value.strip():  # a blank required cell: the reason says so
        assert reject.reason == "empty or missing value"
    raw = json.loads(reject.raw)  # the whole row is kept, its cells by column name
    assert raw["story_structure"] == rows[1 + 9][rows[0].index("story_structure")]
    assert raw[column] == (value or None)  # polars reads an empty cell as null


def test_row_with_extra_field_is_rejected(samples: Path, tmp_path: Path) -> None:
    rows = _rows(samples / FIXTURE)
    rows[3].append("surplus")
    produced = list(ADAPTER.read(_write(tmp_path / "ragged.csv", rows)))
    rejects = [r for r in produced if isinstance(r, Reject)]
    assert len(produced) == 28
    assert [(r.field, r.record) for r in rejects] == [("row", "row2")]


def _rejects_and_staged(path: Path) -> tuple[list[Reject], object]:
    produced = list(ADAPTER.read_columns(path))
    staged = stage(ADAPTER, produced, path.name, read=ADAPTER.count_input(path))
    return [p for p in expand(produced) if isinstance(p, Reject)], staged


def test_row_with_too_few_fields_is_rejected_on_both_paths(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row cut short (its last 6 cells missing) is a Reject naming file, record and field, exactly as
    the csv module's row-by-row path rejects it; polars alone would fill the missing cells with nulls.
    A row whose last cell is merely empty (quoted "") still loads, on both paths."""
    rows = _rows(samples / FIXTURE)
    width = len(rows[0])
    rows[1 + 4] = rows[1 + 4][: width - 6]  # data row 4
    rows[1 + 7][-1] = ""  # data row 7: an empty last cell, not a short row
    path = _write(tmp_path / "short.csv", rows)
    on_polars, staged_polars = _rejects_and_staged(path)

    def broken(*args, **kwargs):
        raise pl.exceptions.ComputeError("forced")

    monkeypatch.setattr(exploretom.pl, "read_csv", broken)
    on_csv_module, staged_csv = _rejects_and_staged(path)
    expected = [
        ("exploretom", "short.csv#row4", "short.csv", "row4", "row", f"expected {width} fields, found {width - 6}")
    ]
    assert [(r.source, r.source_ref, r.file, r.record, r.field, r.reason) for r in on_polars] == expected
    assert on_polars == on_csv_module
    for staged in (staged_polars, staged_csv):
        assert (staged.report.read, staged.report.loaded, staged.report.rejected) == (28, 27, 1)
    assert staged_polars.items.equals(staged_csv.items) and staged_polars.rejects.equals(staged_csv.rejects)
    empty_last = [
        r
        for r in expand(ADAPTER.read_columns(path))
        if not isinstance(r, Reject) and r["source_ref"] == "short.csv#row7"
    ]
    assert len(empty_last) == 1 and empty_last[0]["meta"][rows[0][-1]] is None


def test_split_column_is_used(samples: Path, tmp_path: Path) -> None:
    rows = _rows(samples / FIXTURE)
    rows[0].append("split")
    for i, row in enumerate(rows[1:]):
        row.append("test" if i % 2 else "train")
    records = list(ADAPTER.read(_write(tmp_path / "split.csv", rows)))
    assert Counter(r["split"] for r in records) == {"train": 14, "test": 14}
    assert "split" in records[0]["meta"]


# ---- whole-file problems: SourceError naming the file ----


def test_missing_column(samples: Path, tmp_path: Path) -> None:
    rows = _rows(samples / FIXTURE)
    drop = rows[0].index("qprop=nth_order")
    path = _write(tmp_path / "nocol.csv", [row[:drop] + row[drop + 1 :] for row in rows])
    source_error(ADAPTER, path, "nocol.csv", "qprop=nth_order")


def test_not_utf8(samples: Path, tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes((samples / FIXTURE).read_bytes().replace(b"Marisol", "Mar\u00eesol".encode("latin-1")))
    source_error(ADAPTER, path, "latin.csv", "UTF-8")


def test_json_given(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text('{"data": [{"story": "x"}]}', encoding="utf-8")
    source_error(ADAPTER, path, "data.csv", "JSON")


def test_other_csv_given(samples: Path) -> None:
    source_error(ADAPTER, samples / "bigtom" / "bigtom-sample.csv", "bigtom-sample.csv", "missing column")


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    source_error(ADAPTER, tmp_path / "nowhere", "nowhere")
    source_error(ADAPTER, tmp_path, "no .csv")
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    source_error(ADAPTER, tmp_path / "empty.csv", "empty.csv", "empty")
