"""Checks the adapter tests share: what an adapter reads from a path, and how it fails on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tomforge.warehouse.sources.base import Reject, SourceError


def read_all(adapter: Any, root: Path) -> tuple[list[dict], list[Reject]]:
    """Everything `adapter` produces from `root`, as (records, rejects) in input order."""
    produced = list(adapter.read(root))
    return [p for p in produced if not isinstance(p, Reject)], [p for p in produced if isinstance(p, Reject)]


def by_ref(records: list[dict]) -> dict[str, dict]:
    return {record["source_ref"]: record for record in records}


def source_error(adapter: Any, path: Path, *expected: str) -> str:
    """Read `path` with `adapter`; the SourceError it must raise is one line (no traceback, no
    multi-line dump) that contains the `expected` pieces in the order given (file name, record,
    problem). Returns it."""
    with pytest.raises(SourceError) as caught:
        list(adapter.read(path))
    message = str(caught.value)
    assert "\n" not in message, message
    position = 0
    for piece in expected:
        found = message.find(piece, position)
        assert found >= 0, f"{piece!r} not in {message!r} after position {position}"
        position = found + len(piece)
    return message
