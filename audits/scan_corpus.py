"""Reading a training corpus as a stream of bounded batches: jsonl, jsonl.gz and parquet shards
(files, folders, globs) or the files of a Hub dataset at a pinned revision.

Why its own module: the scan holds only the benchmark in memory; the corpus passes through here
one batch of `batch_docs` documents at a time, so memory does not grow with the corpus. A shard
is the unit of work (a Ray task reads its own shard), so a shard is a name plus a way to open it.
A document's text is its `text` field (or `--text-field`); a verl-style row without one gives its
`prompt` chat messages' contents, joined by newlines (a content of OpenAI-style parts gives its text
parts). A record that cannot give a text (a line that is not JSON, no text field, a null) is a
`ScanReject` naming its shard, line or row, field and reason, counted and left out of the scan; with
`strict` the first one stops the scan instead. A file that cannot be read at all is a `ScanInputError`.
"""

from __future__ import annotations

import glob
import gzip
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.sources.base import RecordError
from tomforge.warehouse.sources.rl_prompt import content_parts

SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".ndjson", ".parquet")
HUB_PREFIX = "hub:"
RAW_CHARS = 300  # of a rejected record, kept in scan_rejects.parquet
MAX_REJECTS_KEPT = 10_000  # per shard: the rejects beyond are counted, not kept


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


BadRecord = RecordError  # one record without a document text: its field and why (becomes a `ScanReject`)


@dataclass(frozen=True)
class ScanReject:
    """A record left out of the scan: where (`row`: 0-based record of the shard, a jsonl line's
    number - 1), the field and the reason, and the start of its raw text."""

    shard: str
    row: int
    place: str  # "line 7" (jsonl) or "row 6" (parquet)
    field: str
    reason: str
    raw: str

    def line(self) -> str:
        return f"{self.shard} {self.place} ({self.field}): {self.reason}"


@dataclass
class Batch:
    """Consecutive documents of one shard: their ids, texts and rows in the shard (`rows`; a jsonl row is
    its line number - 1), the raw rows for a purified copy (the jsonl lines as read, or a parquet record
    batch, of the documents only), and the records rejected on the way (`n_rejected` counts them all,
    `rejects` keeps the first `MAX_REJECTS_KEPT` of the shard)."""

    shard: Shard
    first_row: int
    ids: list[str]
    texts: list[str]
    raw_lines: list[bytes] | None = None
    raw_table: pa.Table | None = None
    rows: list[int] | None = None  # None: first_row, first_row + 1, ...
    rejects: list[ScanReject] = field(default_factory=list)
    n_rejected: int = 0

    def __len__(self) -> int:
        return len(self.texts)

    def doc_rows(self) -> list[int]:
        return self.rows if self.rows is not None else list(range(self.first_row, self.first_row + len(self.texts)))


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
    """A verl/TRL prompt as text: a string as is, a list of chat messages as their contents joined (a
    content of OpenAI-style parts as its text parts, `rl_prompt.content_parts`); None for another shape."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and all(isinstance(m, dict) and "content" in m for m in prompt):
        return "\n".join(content_parts(m["content"], f"message {i}")[0] for i, m in enumerate(prompt))
    return None


def row_text(record: Any, text_field: str | None) -> str:
    """The document text of one row, or `BadRecord` (field, reason)."""
    if not isinstance(record, dict):
        raise BadRecord("row", "not a JSON object")
    name = text_field or ("text" if "text" in record or "prompt" not in record else "prompt")
    if name not in record:
        raise BadRecord(name, f"no field {name!r} (choose one with --text-field)")
    value = record[name]
    if value is None:
        raise BadRecord(name, f"field {name!r} is null")
    try:
        text = message_text(value)  # a string as is, or chat messages (verl's `prompt`) joined
    except BadRecord as bad:
        raise BadRecord(name, f"field {name!r}: {bad.reason}") from None
    if text is None:
        raise BadRecord(name, f"field {name!r} is {type(value).__name__}, not text or chat messages")
    return text


def record_text(record: Any, text_field: str | None, where: str) -> str:
    """The document text of one row (`where` names the file and row in errors)."""
    try:
        return row_text(record, text_field)
    except BadRecord as bad:
        raise ScanInputError(f"{where}: {bad.reason}") from None


def _record_id(record: dict, id_field: str | None, shard: Shard, row: int) -> str:
    if id_field is None:
        return f"{shard.name}:{row}"
    if id_field not in record or record[id_field] is None:
        raise BadRecord(id_field, f"no field {id_field!r} (--id-field)")
    return str(record[id_field])


class _Rejects:
    """The rejects of one shard: counted, the first `MAX_REJECTS_KEPT` kept; with `strict` the first stops."""

    def __init__(self, shard: Shard, strict: bool) -> None:
        self.shard, self.strict = shard, strict
        self.batch: list[ScanReject] = []
        self.n_batch = 0
        self.kept = 0

    def add(self, row: int, place: str, bad: BadRecord, raw: str) -> None:
        if self.strict:
            raise ScanInputError(
                f"{self.shard.name} {place}, field {bad.field}: {bad.reason} (--strict stops at the first bad record; "
                "without it, bad records are counted and left out)"
            )
        self.n_batch += 1
        if self.kept < MAX_REJECTS_KEPT:
            self.kept += 1
            self.batch.append(ScanReject(self.shard.name, row, place, bad.field, bad.reason, raw[:RAW_CHARS]))

    def take(self) -> tuple[list[ScanReject], int]:
        out, n = self.batch, self.n_batch
        self.batch, self.n_batch = [], 0
        return out, n


def read_batches(
    shard: Shard,
    text_field: str | None,
    batch_docs: int,
    id_field: str | None = None,
    keep_raw: bool = False,
    strict: bool = False,
) -> Iterator[Batch]:
    """The shard's documents in batches of `batch_docs` (the last one shorter), each with the records
    rejected since the batch before (a last batch may hold rejects only)."""
    rejects = _Rejects(shard, strict)
    if shard.fmt == "parquet":
        yield from _parquet_batches(shard, text_field, batch_docs, id_field, keep_raw, rejects)
    else:
        yield from _jsonl_batches(shard, text_field, batch_docs, id_field, keep_raw, rejects)


def _jsonl_batches(
    shard: Shard, text_field: str | None, batch_docs: int, id_field: str | None, keep_raw: bool, rejects: _Rejects
) -> Iterator[Batch]:
    """A record a non-blank line (a blank line is no record); a document's row is its line number - 1."""
    with shard.open() as raw:
        stream: BinaryIO = gzip.open(raw) if shard.gzipped else raw  # type: ignore[assignment]
        line_no = 0
        ids: list[str] = []
        texts: list[str] = []
        rows: list[int] = []
        lines: list[bytes] = []
        try:
            for line in stream:
                line_no += 1
                if not line.strip():
                    continue
                row = line_no - 1
                try:
                    try:
                        record = orjson.loads(line.rstrip(b"\r\n"))
                    except orjson.JSONDecodeError as exc:
                        raise BadRecord("row", f"not JSON ({exc})") from None
                    text = row_text(record, text_field)
                    ident = _record_id(record, id_field, shard, row)
                except BadRecord as bad:
                    rejects.add(row, f"line {line_no}", bad, line.decode("utf-8", "replace").rstrip("\r\n"))
                    continue
                texts.append(text)
                ids.append(ident)
                rows.append(row)
                if keep_raw:
                    lines.append(line if line.endswith(b"\n") else line + b"\n")
                if len(texts) == batch_docs:
                    kept_rejects, n_bad = rejects.take()
                    yield Batch(
                        shard, rows[0], ids, texts, lines if keep_raw else None, None, rows, kept_rejects, n_bad
                    )
                    ids, texts, rows, lines = [], [], [], []
        except (OSError, EOFError) as exc:
            raise ScanInputError(
                f"{shard.name}: unreadable after line {line_no} ({type(exc).__name__}: {exc})"
            ) from None
        kept_rejects, n_bad = rejects.take()
        if texts or n_bad:
            first = rows[0] if rows else line_no
            yield Batch(shard, first, ids, texts, lines if keep_raw else None, None, rows, kept_rejects, n_bad)


def _column_texts(table: pa.Table, name: str, shard: Shard) -> list[str | BadRecord]:
    """One column as texts, or why a row gives none: strings as they are, chat-message lists as their
    contents joined (a content of parts, or any other list shape, row by row through `message_text`)."""
    column = pl.from_arrow(table.column(name))
    assert isinstance(column, pl.Series)
    if column.dtype == pl.Utf8:
        texts = column
    elif (
        isinstance(column.dtype, pl.List)
        and isinstance(column.dtype.inner, pl.Struct)
        and {f.name: f.dtype for f in column.dtype.inner.fields}.get("content") == pl.Utf8
    ):
        texts = column.list.eval(pl.element().struct.field("content")).list.join("\n")
    elif isinstance(column.dtype, pl.List):
        return [_python_text(value, name) for value in table.column(name).to_pylist()]
    else:
        raise ScanInputError(f"{shard.name}: column {name!r} is {column.dtype}, not text or chat messages")
    null = BadRecord(name, f"field {name!r} is null")
    return [null if text is None else text for text in texts.to_list()]


def _python_text(value: Any, name: str) -> str | BadRecord:
    try:
        return row_text({name: value}, name)
    except BadRecord as bad:
        return bad


def _parquet_batches(
    shard: Shard, text_field: str | None, batch_docs: int, id_field: str | None, keep_raw: bool, rejects: _Rejects
) -> Iterator[Batch]:
    with shard.open() as raw:
        try:
            reader = pq.ParquetFile(raw)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScanInputError(f"{shard.name}: not a readable parquet file ({exc})") from None
        names = reader.schema_arrow.names
        name = text_field or ("text" if "text" in names or "prompt" not in names else "prompt")
        if name not in names:
            raise ScanInputError(f"{shard.name}: no column {name!r} (choose one with --text-field)")
        if id_field is not None and id_field not in names:
            raise ScanInputError(f"{shard.name}: no column {id_field!r} (--id-field)")
        columns = None if keep_raw else [c for c in (name, id_field) if c]
        first = 0
        for record_batch in reader.iter_batches(batch_size=batch_docs, columns=columns):
            table = pa.Table.from_batches([record_batch])
            values = _column_texts(table, name, shard)
            good = [i for i, v in enumerate(values) if not isinstance(v, BadRecord)]
            for i, v in enumerate(values):
                if isinstance(v, BadRecord):
                    rejects.add(first + i, f"row {first + i}", v, _raw_row(table, i))
            if len(good) < len(values):
                table = table.take(pa.array(good, type=pa.int64()))
            texts = [values[i] for i in good]
            rows = [first + i for i in good]
            if id_field is None:
                ids = [f"{shard.name}:{row}" for row in rows]
            else:
                ids = [str(v) for v in table.column(id_field).to_pylist()]
            kept_rejects, n_bad = rejects.take()
            yield Batch(shard, first, ids, texts, None, table if keep_raw else None, rows, kept_rejects, n_bad)  # type: ignore[arg-type]
            first += len(values)


def _raw_row(table: pa.Table, i: int) -> str:
    try:
        return orjson.dumps(table.slice(i, 1).to_pylist()[0], default=str).decode()
    except TypeError:
        return str(table.slice(i, 1).to_pylist()[0])
