"""Record validation against the JSON Schema: a compiled validator on the hot path, and
`jsonschema` for a precise message (field and reason) on the records that fail."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jsonschema
import jsonschema_rs

from tomforge.schemas import record_schema


@lru_cache(maxsize=1)
def _fast_validator() -> Any:
    return jsonschema_rs.Draft202012Validator(record_schema())


@lru_cache(maxsize=1)
def _fast_batch_validator() -> Any:
    """The record schema applied to every item of a list: one call per batch instead of per record."""
    return jsonschema_rs.Draft202012Validator(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array", "items": record_schema()}
    )


@lru_cache(maxsize=1)
def _detailed_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(record_schema())


def is_valid(record: dict[str, Any]) -> bool:
    return _fast_validator().is_valid(record)


def are_valid(records: list[Any]) -> bool:
    """True when every record is valid (False says only that some record is not: check them one by one)."""
    return _fast_batch_validator().is_valid(records)


def first_error(record: dict[str, Any]) -> tuple[str, str]:
    """(field path, reason) of the most relevant schema violation of an invalid record."""
    error = jsonschema.exceptions.best_match(_detailed_validator().iter_errors(record))
    if error is None:  # the two validators disagree: report it rather than lose the record
        return "(record)", "rejected by the compiled validator only"
    path = "/".join(str(part) for part in error.absolute_path) or _missing_field(error) or "(record)"
    return path, error.message


def _missing_field(error: jsonschema.ValidationError) -> str | None:
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        return missing[0] if missing else None
    return None
