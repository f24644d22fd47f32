"""Record validation (issue 38: mutmut over `warehouse/validate.py`, hit by an independent check): planted
schema violations, each with the field path and reason worked out by hand from `schemas/record.schema.json`."""

from __future__ import annotations

import copy

import pytest

from tests.warehouse.test_warehouse import toy_record
from tomforge.warehouse import validate
from tomforge.warehouse.validate import are_valid, first_error, is_valid


def test_a_built_record_is_valid_one_by_one_and_in_a_batch() -> None:
    record = toy_record(0)
    assert is_valid(record)
    assert are_valid([record, toy_record(1)])
    assert are_valid([])
    assert first_error(record) == ("(record)", "rejected by the compiled validator only")


def test_a_missing_field_is_named() -> None:
    record = toy_record(0)
    del record["question"]
    assert not is_valid(record)
    assert first_error(record) == ("question", "'question' is a required property")


def test_the_first_of_two_missing_fields_in_the_schemas_order() -> None:
    record = toy_record(0)
    del record["answer"]
    del record["context"]  # the schema requires context before answer
    assert first_error(record) == ("context", "'context' is a required property")


def test_a_nested_violation_gives_its_path() -> None:
    record = toy_record(0)
    record["turns"] = [{"speaker": "Anne", "text": "hi"}, {"speaker": "Bob", "text": 3}]
    assert not is_valid(record)
    assert first_error(record) == ("turns/1/text", "3 is not of type 'string'")


def test_a_field_the_schema_does_not_allow() -> None:
    record = toy_record(0)
    record["extra"] = 1
    path, reason = first_error(record)
    assert path == "(record)"
    assert reason == "Additional properties are not allowed ('extra' was unexpected)"


def test_a_batch_with_one_bad_record_is_not_valid() -> None:
    bad = copy.deepcopy(toy_record(1))
    bad["belief_order"] = "one"
    assert not are_valid([toy_record(0), bad])
    assert not are_valid([{"item_id": "x"}])
    assert first_error(bad) == ("belief_order", "'one' is not of type 'integer', 'null'")  # integer or null


def test_a_missing_field_inside_a_turn_gives_the_turns_path() -> None:
    record = toy_record(0)
    record["turns"] = [{"speaker": "Anne"}]
    assert first_error(record) == ("turns/0", "'text' is a required property")


def test_missing_field_reads_required_errors_only() -> None:
    class Error:
        validator = "required"
        validator_value = ["a", "b", "c"]
        instance = {"a": 1}

    assert validate._missing_field(Error()) == "b"
    Error.instance = {"a": 1, "b": 2, "c": 3}
    assert validate._missing_field(Error()) is None
    Error.instance = ["not", "a", "dict"]
    assert validate._missing_field(Error()) is None
    Error.validator = "type"
    Error.instance = {}
    assert validate._missing_field(Error()) is None


@pytest.mark.parametrize("name", ["_fast_validator", "_fast_batch_validator", "_detailed_validator"])
def test_each_validator_is_built_once(name: str) -> None:
    function = getattr(validate, name)
    assert function() is function()
