"""The rows of RL training files, read in bounded batches, and their count by a separate pass.

Formats: parquet (verl, TRL; read a row group batch at a time with pyarrow, never whole), JSON
lines (`.jsonl`, or a `.json` holding one object per line), a `.json` array, and the Arrow files
of a `datasets` folder (`save_to_disk`: `data-NNNNN-of-NNNNN.arrow` with `state.json`, a
`DatasetDict` one folder per split). A folder is every such file under it, in sorted path order
(hidden folders and the `datasets` bookkeeping JSON skipped).

Each row is `(file, index, row)`: `row` is a dict, or a `BadRow` (a JSON line that does not parse
or is not an object) that the adapter turns into a reject, so the count still reconciles.
`count_rows` counts from parquet footers, non-blank lines, array lengths and Arrow batch lengths:
never through the row reader.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.warehouse.sources.base import SourceError

SUFFIXES = (".parquet", ".jsonl", ".json", ".arrow")
BOOKKEEPING = frozenset({"dataset_info.json", "dataset_infos.json", "state.json", "dataset_dict.json"})
BATCH_ROWS = 1024
_SHARD_NAME = re.compile(r"^(?P<split>[A-Za-z_][\w.]*?)-\d{5}-of-\d{5}")
SPLIT_WORDS = frozenset({"train", "test", "validation", "valid", "val", "dev", "eval", "evaluation"})
_NAME_SPLIT = re.compile(r"[_\-./\s]+")


@dataclass(frozen=True)
class BadRow:
    """A row that is not an object: its raw text and why."""

    raw: str
    reason: str


def input_files(root: Path) -> list[Path]:
    """The data files `root` names: itself, or every data file under the folder."""
    if not root.exists():
        raise SourceError(root, "path not found")
    if root.is_file():
        if root.suffix not in SUFFIXES:
            raise SourceError(root, f"not an RL data file: expected one of {', '.join(SUFFIXES)}")
        return [root]
    files = sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix in SUFFIXES
        and path.name not in BOOKKEEPING
        and not any(part.startswith(".") for part in path.relative_to(root).parts)
    )
    if not files:
        raise SourceError(root, f"no {', '.join(SUFFIXES)} files in the folder")
    return files


@dataclass(frozen=True)
class SplitChoice:
    """The split a file's place names (None: nothing does) and why, as the load prints it."""

    split: str | None
    reason: str


def name_parts(name: str) -> list[str]:
    """A name's parts, split on `_ - . /` and whitespace, in lower case (`ToM_test.v2` -> tom, test, v2)."""
    return [part.lower() for part in _NAME_SPLIT.split(name) if part]


def _split_words(name: str) -> list[str]:
    """The split words among a name's whole parts, each once, in order: `latest`, `contest` and
    `device` are parts of their own and name no split."""
    found: list[str] = []
    for part in name_parts(name):
        if part in SPLIT_WORDS and part not in found:
            found.append(part)
    return found


def split_choice(path: Path, root: Path | None = None) -> SplitChoice:
    """The split a file's place names: a `datasets` folder's split, a Hub shard name
    (`train-00000-of-00002.parquet`), a split word among the parts of the file's name
    (`ToM_test_HiExTi_hint.parquet`, `my-dev-set.parquet`) or of a folder's name under `root`
    (nearest first), or a parent folder named exactly like a split. A name with two split words
    (`train_test_mix`) names none."""
    state = path.parent / "state.json"
    if path.suffix == ".arrow" and state.is_file():
        try:
            named = json.loads(state.read_text(encoding="utf-8")).get("_split")
        except ValueError:
            named = None
        if isinstance(named, str) and named:
            return SplitChoice(named, "from the datasets folder's state.json")
        if (path.parent.parent / "dataset_dict.json").is_file():
            return SplitChoice(path.parent.name, "from the DatasetDict's folder")
    shard = _SHARD_NAME.match(path.name)
    if shard:
        return SplitChoice(shard.group("split"), "from the Hub shard name")
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    inside = root is not None and path != root and path.is_relative_to(root)
    folders = path.parent.relative_to(root).parts if root is not None and inside else ()
    for number, name in enumerate([stem, *reversed(folders)]):  # the file's name, then its folders nearest first
        words = _split_words(name)
        where = "the name" if number == 0 else f"the folder {name!r}"
        if len(words) > 1:
            return SplitChoice(None, f"{where} says both {' and '.join(words)}")
        if words:
            return SplitChoice(words[0], f"from {where}: {words[0]!r}")
    if path.parent.name.lower() in SPLIT_WORDS:
        return SplitChoice(path.parent.name.lower(), f"from the folder {path.parent.name!r}")
    return SplitChoice(None, "no train/test/validation/dev part in the name")


def split_of(path: Path, root: Path | None = None) -> str | None:
    """The split a file's place names, if any (`split_choice` says why)."""
    return split_choice(path, root).split


def read_rows(path: Path) -> Iterator[Any]:
    """Every row of one file, in order: a dict or a `BadRow`."""
    if path.suffix == ".parquet":
        yield from _parquet_rows(path)
    elif path.suffix == ".arrow":
        yield from _arrow_rows(path)
    else:
        yield from _json_rows(path)


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = pq.ParquetFile(path)
        for batch in handle.iter_batches(batch_size=BATCH_ROWS):
            yield from batch.to_pylist()
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceError(path, f"not a readable parquet file ({_first_line(exc)})") from None


def _arrow_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with pa.memory_map(str(path)) as source:
            for batch in _ipc_reader(source):
                yield from batch.to_pylist()
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceError(path, f"not a readable Arrow file ({_first_line(exc)})") from None


def _ipc_reader(source: Any) -> Any:
    """`datasets` writes the Arrow stream format; the file format is read too."""
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        source.seek(0)
        reader = pa.ipc.open_file(source)
        return (reader.get_batch(i) for i in range(reader.num_record_batches))


def _json_rows(path: Path) -> Iterator[Any]:
    if _is_json_array(path):
        for row in _json_array(path):
            yield row if isinstance(row, dict) else BadRow(orjson.dumps(row).decode(), "not a JSON object")
        return
    with _open_text(path) as lines:
        for line in _nonblank(path, lines):
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield BadRow(line.rstrip("\r\n"), f"invalid JSON ({exc.msg})")
                continue
            yield row if isinstance(row, dict) else BadRow(line.rstrip("\r\n"), "not a JSON object")


def _open_text(path: Path) -> Any:
    return path.open(encoding="utf-8", newline="")


def _nonblank(path: Path, lines: Any) -> Iterator[str]:
    try:
        for line in lines:
            if line.strip():
                yield line
    except UnicodeDecodeError as exc:
        raise SourceError(path, f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def _is_json_array(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def _json_array(path: Path) -> list[Any]:
    try:
        data = orjson.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError as exc:
        raise SourceError(path, f"invalid or truncated JSON array ({exc.msg})") from None
    if not isinstance(data, list):
        raise SourceError(path, "expected a JSON array of rows")
    return data


def count_rows(path: Path) -> int:
    """Rows of one file by a pass that does not parse rows: parquet footer, Arrow batch lengths,
    array length, non-blank lines."""
    if path.suffix == ".parquet":
        try:
            return pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowInvalid, OSError) as exc:
            raise SourceError(path, f"not a readable parquet file ({_first_line(exc)})") from None
    if path.suffix == ".arrow":
        with pa.memory_map(str(path)) as source:
            return sum(batch.num_rows for batch in _ipc_reader(source))
    if _is_json_array(path):
        return len(_json_array(path))
    with _open_text(path) as lines:
        return sum(1 for _ in _nonblank(path, lines))


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().split("\n", 1)[0]
