"""BigToM adapter: the items derived per row (as generate_conditions.py derives them), rejects, errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from tests.source_helpers import source_error
from tomforge.schemas import record_schema
from tomforge.warehouse.sources.base import Reject
from tomforge.warehouse.sources.bigtom import ADAPTER, FIELDS, ITEMS_PER_ROW, ordered_options

FIXTURE = "bigtom/bigtom-sample.csv"
# Fixture row 0, split on "." as the original does.
P0 = "Tomasz is shelving books in a small public library"
P1 = " Tomasz wants to put the rare atlas back in the locked display case"
P2 = " Tomasz sees the atlas lying on the returns cart"
P3 = " Tomasz believes that the atlas on the cart is undamaged"
P4 = " While Tomasz helps a visitor, a child spills juice across the atlas on the cart"


@pytest.fixture(scope="module")
def records(samples: Path) -> list:
    return list(ADAPTER.read(samples / "bigtom"))


def _item(records: list, row: int, key: str) -> dict:
    return next(r for r in records if r["source_ref"] == f"bigtom-sample.csv#row{row}/{key}")


def _lines(samples: Path) -> list[str]:
    return (samples / FIXTURE).read_text(encoding="utf-8").splitlines()


def test_adapter_facts() -> None:
    assert (ADAPTER.name, ADAPTER.license, ADAPTER.hub_repo) == ("bigtom", "MIT", None)
    assert ADAPTER.version and ITEMS_PER_ROW == 25 and len(FIELDS) == 19


def test_fixture_counts(records: list) -> None:
    assert not [r for r in records if isinstance(r, Reject)]
    assert len(records) == 5 * 25
    assert Counter(r["meta"]["variable"] for r in records) == {
        "forward_belief": 40,
        "forward_action": 40,
        "backward_belief": 40,
        "percept_to_belief": 5,
    }
    assert Counter(r["meta"]["condition"] for r in records) == {
        "true_belief": 35,
        "false_belief": 30,
        "true_control": 30,
        "false_control": 30,
    }
    assert Counter(r["question_type"] for r in records) == {"first_order_belief": 85, "action": 40}
    assert Counter(r["is_false_belief"] for r in records) == {True: 30, False: 90, None: 5}
    assert {r["belief_order"] for r in records} == {1}
    assert {r["answer_format"] for r in records} == {"multiple_choice"}
    assert {tuple(r["perspective_chain"]) for r in records} == {
        ("Tomasz",),
        ("Beatriz",),
        ("Haruki",),
        ("Oluwaseun",),
        ("Dagny",),
    }


def test_options_hold_the_gold_in_a_varying_position(records: list) -> None:
    for r in records:
        assert len(r["options"]) == 2 and r["options"][r["answer_index"]] == r["answer"]
    first = sum(r["answer_index"] == 0 for r in records)
    assert 0.3 < first / len(records) < 0.7
    assert ordered_options("k", "a", "b") == ordered_options("k", "a", "b")


def test_forward_conditions_follow_the_original(records: list) -> None:
    fb = _item(records, 0, "1_forward_belief_false_belief")
    assert fb["context"] == f"{P0}.{P1}.{P2}.{P3}.{P4}. Tomasz does not notice the juice on the atlas."
    assert fb["question"] == "Does Tomasz believe the atlas is undamaged or stained with juice?"
    assert fb["answer"] == "Tomasz believes the atlas is undamaged."
    assert set(fb["options"]) == {
        "Tomasz believes the atlas is undamaged.",
        "Tomasz believes the atlas is stained with juice.",
    }
    assert fb["is_false_belief"] is True

    tb = _item(records, 0, "0_forward_action_true_belief")  # initial belief hidden: part 3 left out
    assert tb["context"] == f"{P0}.{P1}.{P2}.{P4}. Tomasz notices the juice spreading over the atlas."
    assert tb["answer"] == "Tomasz will take the atlas to the repair desk to dry it."
    assert tb["question_type"] == "action" and tb["is_false_belief"] is False

    control = _item(records, 0, "0_forward_belief_true_control")  # random event; initial belief stands
    assert control["context"] == (
        f"{P0}.{P1}.{P2}. A delivery van parks outside the library entrance. Tomasz sees the delivery van parking outside."
    )
    assert control["answer"] == "Tomasz believes the atlas is undamaged."


def test_backward_and_percept_follow_the_original(records: list) -> None:
    bb = _item(records, 0, "1_backward_belief_true_belief")
    assert bb["context"] == f"{P0}.{P1}.{P2}.{P3}.{P4}. Tomasz takes the atlas to the repair desk to dry it."
    assert bb["answer"] == "Tomasz believes the atlas is stained with juice."
    a = _item(records, 0, "1_backward_belief_true_control")
    b = _item(records, 0, "1_backward_belief_false_control")
    assert (
        a["context"]
        == b["context"]
        == (
            f"{P0}.{P1}.{P2}.{P3}. A delivery van parks outside the library entrance. Tomasz places the atlas in the locked display case."
        )
    )
    percept = _item(records, 0, "1_percept_to_belief_true_belief")
    assert percept["context"] == f"{P0}.{P1}.{P2}."
    assert percept["answer"] == "Tomasz believes the atlas is stained with juice."  # as the original writes it
    assert percept["is_false_belief"] is None


def test_meta_keeps_raw_fields(records: list, samples: Path) -> None:
    raw = _lines(samples)[2].split(";")
    meta = _item(records, 2, "0_forward_belief_false_belief")["meta"]
    assert [meta[name] for name in FIELDS] == raw
    assert (meta["init_belief"], meta["variable"], meta["condition"]) == (0, "forward_belief", "false_belief")
    assert meta["unused_18"] == "user"


def test_every_record_validates(records: list) -> None:
    validator = jsonschema.Draft202012Validator(record_schema())
    for record in records:
        errors = [e.message for e in validator.iter_errors(record)]
        assert not errors, (record["source_ref"], errors)


def test_ids_stable_and_unique(samples: Path, records: list) -> None:
    again = list(ADAPTER.read(samples / FIXTURE))
    assert [r["item_id"] for r in again] == [r["item_id"] for r in records]
    assert [r["content_hash"] for r in again] == [r["content_hash"] for r in records]
    assert [r["options"] for r in again] == [r["options"] for r in records]
    assert len({r["item_id"] for r in records}) == len(records)


def test_real_sample(real_samples: Path) -> None:
    """12 rows x 25 derived items; the full release's 200 rows give the published 5,000."""
    produced = list(ADAPTER.read(real_samples / "bigtom"))
    assert not [r for r in produced if isinstance(r, Reject)]
    assert len(produced) == 12 * 25
    validator = jsonschema.Draft202012Validator(record_schema())
    assert all(not list(validator.iter_errors(r)) for r in produced)
    assert all(len(r["perspective_chain"]) == 1 for r in produced)


# ---- malformed rows: a Reject naming the field; the other rows still load ----


def _with_row(samples: Path, tmp_path: Path, index: int, line: str) -> list:
    lines = _lines(samples)
    lines[index] = line
    path = tmp_path / "bigtom.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return list(ADAPTER.read(path))


def _item_keys(produced: list, row: int) -> list[str]:
    """The item keys (after 'rowN/') of the records a well-formed row gave, in order."""
    prefix = f"bigtom.csv#row{row}/"
    return [
        r["source_ref"].removeprefix(prefix)
        for r in produced
        if isinstance(r, dict) and r["source_ref"].startswith(prefix)
    ]


def test_row_with_wrong_field_count(samples: Path, tmp_path: Path) -> None:
    line = _lines(samples)[1]
    produced = _with_row(samples, tmp_path, 1, line.rsplit(";", 1)[0])
    rejects = [r for r in produced if isinstance(r, Reject)]
    assert len(produced) == 5 * 25  # one reject in place of each item the row should have given
    keys = _item_keys(produced, 0)
    assert len(keys) == 25
    assert [(r.field, r.record, r.file, r.source_ref) for r in rejects] == [
        ("row", f"row1/{key}", "bigtom.csv", f"bigtom.csv#row1/{key}") for key in keys
    ]
    assert all("18" in r.reason and r.raw == rejects[0].raw for r in rejects) and rejects[0].raw


@pytest.mark.parametrize(
    ("field", "value"),
    [("belief_question", ""), ("story", "A story with no full stops at all"), ("random_event", "  ")],
)
def test_row_with_bad_field(samples: Path, tmp_path: Path, field: str, value: str) -> None:
    values = _lines(samples)[3].split(";")
    values[FIELDS.index(field)] = value
    produced = _with_row(samples, tmp_path, 3, ";".join(values))
    rejects = [r for r in produced if isinstance(r, Reject)]
    assert [(r.field, r.record) for r in rejects] == [(field, f"row3/{key}") for key in _item_keys(produced, 0)]
    assert len(produced) == 5 * 25


def test_count_input_is_rows_times_25(samples: Path, tmp_path: Path) -> None:
    rows = len(_lines(samples))  # the sample's non-blank lines
    assert ADAPTER.count_input(samples / "bigtom") == rows * 25 == len(list(ADAPTER.read(samples / "bigtom")))
    line = _lines(samples)[1]
    produced = _with_row(samples, tmp_path, 1, line.rsplit(";", 1)[0])  # a broken row still counts 25
    assert ADAPTER.count_input(tmp_path / "bigtom.csv") == rows * 25 == len(produced)


# ---- whole-file problems: SourceError naming the file ----


def test_not_utf8(samples: Path, tmp_path: Path) -> None:
    path = tmp_path / "bigtom.csv"
    path.write_bytes((samples / FIXTURE).read_bytes().replace(b"Dagny", "D\u00e4gny".encode("latin-1")))
    source_error(ADAPTER, path, "bigtom.csv", "UTF-8")


def test_other_formats_are_not_bigtom(samples: Path, tmp_path: Path) -> None:
    source_error(ADAPTER, samples / "exploretom" / "exploretom-sample.csv", "exploretom-sample.csv", "not BigToM")
    path = tmp_path / "data.csv"
    path.write_text('[{"story": "x"}]', encoding="utf-8")
    source_error(ADAPTER, path, "data.csv", "JSON")


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    source_error(ADAPTER, tmp_path / "nowhere", "nowhere")
    source_error(ADAPTER, tmp_path, "no bigtom.csv")
