"""Reading a training corpus as a stream of bounded batches: jsonl, jsonl.gz and parquet shards
(files, folders, globs) or the files of a Hub dataset at a pinned revision.

Why its own module: the scan holds only the benchmark in memory; the corpus passes through here
one batch of `batch_docs` documents at a time, so memory does not grow with the corpus. A shard
is the unit of work (a Ray task reads its own shard), so a shard is a name plus a way to open it.
A document's text is its `text` field (or `--text-field`); a verl-style row without one gives its
`prompt` chat messages' contents, joined by newlines.
"""

from __future__ import annotations

import glob
import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.errors import TomforgeError

SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".ndjson", ".parquet")
HUB_PREFIX = "hub:"


class ScanInputError(TomforgeError, ValueError):
    """A corpus that cannot be read: one line naming the file, record and field."""


@dataclass(frozen=True)
class Shard:
    """One corpus file: `name` is what hits and the ledger call it (relative to the folder given,
    or the path inside the Hub repo); `location` is where it is opened from."""

    name: str
    location: str
    hub_revision: str | None = None  # a Hub file: the revision it is read at

    @property
    def fmt(self) -> str:
        return "parquet" if self.name.endswith(".parquet") else "jsonl"

    @property
    def gzipped(self) -> bool:
        return self.name.endswith(".gz")

    def open(self) -> BinaryIO:
        if self.hub_revision is not None:
            from huggingface_hub import HfFileSystem

            return HfFileSystem().open(self.location, "rb", revision=self.hub_revision)
        return open(self.location, "rb")


@dataclass
class Batch:
    """Consecutive documents of one shard: their ids and texts, and the raw rows for a purified copy
    (the jsonl lines as read, or a parquet record batch)."""

    shard: Shard
    first_row: int
    ids: list[str]
    texts: list[str]
    raw_lines: list[bytes] | None = None
    raw_table: pa.Table | None = None

    def __len__(self) -> int:
        return len(self.texts)


def _is_corpus_file(path: str) -> bool:
    return path.endswith(SUFFIXES)


def resolve_shards(specs: list[str], revision: str | None = None) -> list[Shard]:
    """Files, folders (every corpus file below, recursively) and globs, in sorted order; or one
    `hub:ORG/NAME` dataset (with `revision`). An input naming nothing is an error."""
    shards: list[Shard] = []
    for spec in specs:
        if spec.startswith(HUB_PREFIX):
            shards += _hub_shards(spec[len(HUB_PREFIX) :], revision)
            continue
        path = Path(spec)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*") if p.is_file() and _is_corpus_file(p.name))
            shards += [Shard(os.path.relpath(p, path), p) for p in found]
        elif path.is_file():
            if not _is_corpus_file(path.name):
                raise ScanInputError(f"{spec}: not a corpus file (expected {', '.join(SUFFIXES)})")
            shards.append(Shard(path.name, str(path)))
        else:
            found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p) and _is_corpus_file(p))
            if not found:
                raise ScanInputError(f"{spec}: no such file, folder or matching corpus files ({', '.join(SUFFIXES)})")
            shards += [Shard(os.path.relpath(p), p) for p in found]
    if not shards:
        raise ScanInputError(f"{' '.join(specs)}: no corpus files ({', '.join(SUFFIXES)})")
    names = [s.name for s in shards]
    if len(set(names)) != len(names):
        raise ScanInputError("two corpus files have the same name: give one folder or distinct files")
    return shards


def _hub_shards(repo: str, revision: str | None) -> list[Shard]:
    """The corpus files of a Hub dataset at a pinned revision (a branch name moves: give a commit or tag)."""
    if not revision:
        raise ScanInputError(f"hub:{repo}: pin the revision with --revision (a commit id or tag)")
    from huggingface_hub import HfFileSystem

    root = f"datasets/{repo}"
    try:
        files = HfFileSystem().find(root, revision=revision)
    except Exception as exc:  # noqa: BLE001  (the client's errors are many; one line names the repo)
        raise ScanInputError(f"hub:{repo}@{revision}: cannot list the dataset: {type(exc).__name__}") from None
    # listed paths carry the revision (`datasets/ORG/NAME@REV/...`): a shard is named by its path in the repo
    names = sorted(f.split("/", 3)[3] for f in files if _is_corpus_file(f))
    if not names:
        raise ScanInputError(f"hub:{repo}@{revision}: no corpus files ({', '.join(SUFFIXES)})")
    return [Shard(name, f"{root}/{name}", hub_revision=revision) for name in names]


def message_text(prompt: Any) -> str | None:
    """A verl/TRL prompt as text: a string as is, a list of chat messages as their contents joined."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt):
        return "\n".join(m["content"] for m in prompt)
    return None


def record_text(record: Any, text_field: str | None, where: str) -> str:
    """The document text of one row (`where` names the file and row in errors)."""
    if not isinstance(record, dict):
        raise ScanInputError(f"{where}: not a JSON object")
    field = text_field or ("text" if "text" in record or "prompt" not in record else "prompt")
    if field not in record:
        raise ScanInputError(f"{where}: no field {field!r} (choose one with --text-field)")
    value = record[field]
    text = message_text(value)  # a string as is, or chat messages (verl's `prompt`) joined
    if text is None:
        raise ScanInputError(f"{where}: field {field!r} is {type(value).__name__}, not text or chat messages")
    return text


def _record_id(record: dict, id_field: str | None, shard: Shard, row: int) -> str:
    if id_field is None:
        return f"{shard.name}:{row}"
    if id_field not in record or record[id_field] is None:
        raise ScanInputError(f"{shard.name} row {row}: no field {id_field!r} (--id-field)")
    return str(record[id_field])


def read_batches(
    shard: Shard, text_field: str | None, batch_docs: int, id_field: str | None = None, keep_raw: bool = False
) -> Iterator[Batch]:
    """The shard's documents in batches of `batch_docs` (the last one shorter)."""
    if shard.fmt == "parquet":
        yield from _parquet_batches(shard, text_field, batch_docs, id_field, keep_raw)
    else:
        yield from _jsonl_batches(shard, text_field, batch_docs, id_field, keep_raw)


def _jsonl_batches(
    shard: Shard, text_field: str | None, batch_docs: int, id_field: str | None, keep_raw: bool
) -> Iterator[Batch]:
    with shard.open() as raw:
        stream: BinaryIO = gzip.open(raw) if shard.gzipped else raw  # type: ignore[assignment]
        row, first = 0, 0
        ids: list[str] = []
        texts: list[str] = []
        lines: list[bytes] = []
        try:
            for line in stream:
                if not line.strip():
                    raise ScanInputError(
                        f"{shard.name} line {row + 1}: empty line (a jsonl corpus holds one object a line)"
                    )
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ScanInputError(f"{shard.name} line {row + 1}: not JSON ({exc})") from None
                where = f"{shard.name} line {row + 1}"
                texts.append(record_text(record, text_field, where))
                ids.append(_record_id(record, id_field, shard, row))
                if keep_raw:
                    lines.append(line if line.endswith(b"\n") else line + b"\n")
                row += 1
                if len(texts) == batch_docs:
                    yield Batch(shard, first, ids, texts, lines if keep_raw else None)
                    first, ids, texts, lines = row, [], [], []
        except (OSError, EOFError) as exc:
            raise ScanInputError(f"{shard.name}: unreadable after line {row} ({type(exc).__name__}: {exc})") from None
        if texts:
            yield Batch(shard, first, ids, texts, lines if keep_raw else None)


def _column_texts(table: pa.Table, field: str, shard: Shard, first: int) -> list[str]:
    """One column as texts: strings as they are, chat-message lists as their contents joined."""
    column = pl.from_arrow(table.column(field))
    assert isinstance(column, pl.Series)
    if column.dtype == pl.Utf8:
        texts = column
    elif (
        isinstance(column.dtype, pl.List)
        and isinstance(column.dtype.inner, pl.Struct)
        and "content" in [f.name for f in column.dtype.inner.fields]
    ):
        texts = column.list.eval(pl.element().struct.field("content")).list.join("\n")
    else:
        raise ScanInputError(f"{shard.name}: column {field!r} is {column.dtype}, not text or chat messages")
    missing = texts.is_null().arg_true()
    if len(missing):
        raise ScanInputError(f"{shard.name} row {first + int(missing[0])}: field {field!r} is null")
    return texts.to_list()


def _parquet_batches(
    shard: Shard, text_field: str | None, batch_docs: int, id_field: str | None, keep_raw: bool
) -> Iterator[Batch]:
    with shard.open() as raw:
        try:
            reader = pq.ParquetFile(raw)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScanInputError(f"{shard.name}: not a readable parquet file ({exc})") from None
        names = reader.schema_arrow.names
        field = text_field or ("text" if "text" in names or "prompt" not in names else "prompt")
        if field not in names:
            raise ScanInputError(f"{shard.name}: no column {field!r} (choose one with --text-field)")
        if id_field is not None and id_field not in names:
            raise ScanInputError(f"{shard.name}: no column {id_field!r} (--id-field)")
        columns = None if keep_raw else [c for c in (field, id_field) if c]
        first = 0
        for record_batch in reader.iter_batches(batch_size=batch_docs, columns=columns):
            table = pa.Table.from_batches([record_batch])
            texts = _column_texts(table, field, shard, first)
            if id_field is None:
                ids = [f"{shard.name}:{row}" for row in range(first, first + len(texts))]
            else:
                ids = [str(v) for v in table.column(id_field).to_pylist()]
            yield Batch(shard, first, ids, texts, raw_table=table if keep_raw else None)
            first += len(texts)
