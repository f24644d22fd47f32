"""What every source adapter provides, and the errors and rejects they report.

An adapter turns one published dataset layout into unified records. It yields, for every input
question it reads, either a record (from `schemas.record.build_record`) or a `Reject` that says
why not. `count_input` counts the questions of the same input by a separate, simple pass over the
raw files (a JSON array's length, CSV rows by the csv module, story starts in a ToMi file, files in
a HiToM tree), never through the parser: so read = loaded + rejected is a check that a record lost
(or doubled) between parsing and loading fails. A file that cannot be read at all (missing,
truncated JSON, not UTF-8, wrong columns) raises `SourceError`, which aborts the load.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

from tomforge.schemas.errors import TomforgeError


class SourceError(TomforgeError):
    """An input that cannot be read at all; the message is one line naming the file (and record)."""

    def __init__(self, file: str | Path, problem: str, record: str | None = None) -> None:
        self.file = str(file)
        self.record = record
        self.problem = problem
        where = f"{self.file}, record {record}" if record is not None else self.file
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Reject:
    """One input record that did not become an item, with where it came from and why."""

    source: str
    source_ref: str
    file: str
    record: str
    field: str
    reason: str
    raw: str = ""

    @staticmethod
    def raw_of(value: Any) -> str:
        """The raw input kept in the rejects table so nothing is lost."""
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


RecordOrReject = Union[dict[str, Any], Reject]


@dataclass
class AdapterInfo:
    """Static facts about a source that the `sources` table records (and that a staging carries)."""

    name: str
    version: str
    license: str
    hub_repo: str | None = None
    hub_patterns: list[str] | None = field(default=None)


class Adapter(AdapterInfo, ABC):
    """One published format: the contract every `warehouse/sources/<name>.py` fulfils.

    Required: `read` (a record or a `Reject` per input question) and `count_input` (the same
    questions counted without the parser). Optional hooks, with defaults that keep a small adapter
    small: `read_columns` (the fast path: column batches instead of records) and the pair
    `split_input` / `read_part` (one big file staged by several processes, `warehouse/parallel.py`).
    `binary_formats` names the formats `warehouse.sources.sniff` recognizes that the adapter reads
    itself (the RL files adapter reads Parquet); any other is refused before the adapter opens it.
    """

    binary_formats: frozenset[str] = frozenset()

    @abstractmethod
    def read(self, root: Path) -> Iterator[RecordOrReject]:
        """Every input question under `root` (a file or folder exactly as published)."""

    @abstractmethod
    def count_input(self, root: Path) -> int:
        """The questions `root` holds (one per record `read` should yield), counted without the parser."""

    def read_columns(self, root: Path) -> Iterable[Any]:
        """What `read` yields, where the adapter can, as column batches (`warehouse.batch`); by default
        the records themselves (`stage` takes both)."""
        return self.read(root)

    def load_notes(self, items: Any, root: Path) -> list[str]:
        """Lines the load of `root` should print about the staged `items` (an Arrow table), beyond the
        counts; by default none (the RL files adapter says the split of each file and how many
        prompts it could not split)."""
        return []

    def split_input(self, root: Path) -> Path | None:
        """The one file `read_part` can split `root` into parts of, or None (the default: never split)."""
        return None

    def read_part(self, root: Path, part: int, parts: int) -> Iterable[Any]:
        """Part `part` of `parts` of `split_input(root)`, like `read_columns`; needed only by adapters
        whose `split_input` returns a file."""
        raise NotImplementedError(f"{self.name}: split_input returned a file but read_part is not implemented")


class RecordError(TomforgeError):
    """One malformed input record: the input field at fault and why. Adapters raise it while parsing
    a record and turn it into that record's `Reject` (it never escapes an adapter)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


def read_text(path: Path) -> str:
    """Whole file as UTF-8, or a SourceError that says the file is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        from tomforge.warehouse.sources.sniff import describe, sniff

        found = sniff(path)
        if found is not None:
            raise SourceError(path, describe(found, "UTF-8 text")) from None
        raise SourceError(
            path,
            f"not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8 "
            f"(iconv -f <its encoding> -t UTF-8 {path.name})",
        ) from None
    except IsADirectoryError:
        raise SourceError(path, "expected a file, found a folder") from None


def read_json(path: Path) -> Any:
    """Parsed JSON, or a SourceError naming the line and column where it breaks (e.g. truncated)."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(
            path, f"invalid or truncated JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    refuse_lone_surrogates(path, text, data)
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def refuse_lone_surrogates(path: Path, text: str, data: Any) -> None:
    """A SourceError naming where a `\\udXXX` escape left half a surrogate pair in a string.

    The json module accepts such escapes, but the result is not Unicode: no canonical JSON (and so
    no id or content hash) can be made of it. Paired escapes (emoji) decode to one character."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return
    where = _surrogate_in(data, "")
    if where is not None:
        raise SourceError(path, f"a lone surrogate escape (not valid Unicode) at {where or '/'}")


def _surrogate_in(value: Any, pointer: str) -> str | None:
    """The JSON pointer of the first string (or key) holding a lone surrogate, else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return pointer
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _surrogate_in(key, pointer) if isinstance(key, str) else None
        found = found if found is not None else _surrogate_in(item, f"{pointer}/{key}")
        if found is not None:
            return found
    return None


def relative_name(path: Path, root: Path) -> str:
    """The file name as `source_ref` records it: relative to the ingest root, POSIX separators."""
    if root.is_file():
        return path.name
    return path.relative_to(root).as_posix()
