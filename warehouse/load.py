"""Loading unified records into the warehouse: validate, upsert, reject, reconcile.

Every record an adapter or generator produces ends either in `items` (with its context in
`contexts`) or in `rejects` with file, record, field and reason. Loading is an upsert keyed by
`item_id`, so loading the same input twice changes nothing, and it runs inside
`warehouse.db.building`, so a failure leaves the previous warehouse untouched.

`read` is counted apart from the parsing path (the adapter's `count_input` pass over the raw
input, or the number of records asked of a generator), so read = loaded + rejected fails when a
record is lost or doubled between parsing and loading; such a load is refused (`Unreconciled`).
Every load is logged in `loads` (new, changed, unchanged and removed items), so the
`reconciliation` view can check the rows really in `items` against the log.
"""

from __future__ import annotations

import gc
import hashlib
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tomforge.schemas.columns import JSON_COLUMNS, arrow_schema
from tomforge.schemas.errors import ExitCode
from tomforge.schemas.progress import SILENT, Progress, Stage
from tomforge.schemas.record import CONTEXT_FIELDS, ITEM_FIELDS, canonical_json
from tomforge.warehouse import db
from tomforge.warehouse.batch import BatchError, ColumnBatch
from tomforge.warehouse.db import WarehouseError
from tomforge.warehouse.sources.base import AdapterInfo, RecordOrReject, Reject
from tomforge.warehouse.validate import are_valid, first_error, is_valid
from tomforge.warehouse.validate_columns import invalid_mask

_CHUNK_ROWS = 8192  # records converted to Arrow at a time, so their dicts are freed (and memory reused) early
_VALIDATE_ROWS = 1024  # records per call of the compiled validator (measured best: ~0.4 us less per record)
STAGED_FORMAT = "2"  # the layout of a saved `Staged` (2: `read` counted apart); part of staging cache keys


@dataclass
class LoadReport:
    """Counts of one load; `reconciled` is the invariant read = loaded + rejected, where `read` was
    counted apart from the parser. `removed`: items of earlier loads this load deleted without
    loading them again (an earlier generated run's leftovers, records now rejected)."""

    source: str
    input_ref: str
    read: int = 0
    loaded: int = 0
    rejected: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0

    @property
    def reconciled(self) -> bool:
        return self.read == self.loaded + self.rejected

    def as_dict(self) -> dict[str, Any]:
        """The counts and `reconciled`, as a Prefect task returns them."""
        return vars(self) | {"reconciled": self.reconciled}

    @classmethod
    def from_dict(cls, counts: dict[str, Any]) -> "LoadReport":
        """The report `as_dict` wrote (`reconciled` is derived, so it is read back from the counts)."""
        return cls(**{name: value for name, value in counts.items() if name != "reconciled"})


class Unreconciled(WarehouseError):
    """A load whose counts do not add up (a record lost or doubled between parsing and loading): refused
    before anything is written, or (`loaded`) found by a later check. Carries the report, so the counts can
    be shown; `counts_shown`: the command printed them already (the CLI's handler does not repeat them)."""

    exit_code = ExitCode.UNRECONCILED

    def __init__(self, report: LoadReport, loaded: bool = False, counts_shown: bool = False) -> None:
        self.report, self.loaded, self.counts_shown = report, loaded, counts_shown
        super().__init__(
            f"{report.source} {report.input_ref}: counts do not reconcile: read {report.read} "
            f"!= loaded {report.loaded} + rejected {report.rejected}" + ("" if loaded else "; nothing was loaded")
        )

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (Prefect may carry it across a task boundary)
        return (Unreconciled, (self.report, self.loaded, self.counts_shown))


@dataclass
class Staged:
    """One input read, validated and converted to Arrow tables, not yet written anywhere.

    Staging is the expensive part (parse + validate); it can be saved to parquet and reused
    (Prefect caches it by the input's fingerprint) while writing into a warehouse is cheap."""

    info: AdapterInfo
    input_ref: str
    items: pa.Table
    contexts: pa.Table
    rejects: pa.Table
    digest: str
    read: int  # records in the input, counted apart from the parsing path

    @property
    def report(self) -> LoadReport:
        loaded, rejected = self.items.num_rows, self.rejects.num_rows
        return LoadReport(self.info.name, self.input_ref, read=self.read, loaded=loaded, rejected=rejected)

    def save(self, folder: Path) -> Path:
        """Write the staged tables as parquet plus a small JSON of the rest."""
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("items", "contexts", "rejects"):
            pq.write_table(getattr(self, name), folder / f"{name}.parquet")
        facts = {
            "info": asdict(self.info),
            "input_ref": self.input_ref,
            "digest": self.digest,
            "read": self.read,
            "format": STAGED_FORMAT,
        }
        (folder / "staged.json").write_text(json.dumps(facts, sort_keys=True), encoding="utf-8")
        return folder

    @classmethod
    def open(cls, folder: Path) -> "Staged":
        facts = json.loads((folder / "staged.json").read_text(encoding="utf-8"))
        if facts.get("format") != STAGED_FORMAT:
            raise WarehouseError(f"{folder}: staged by an older tomforge (no independent read count); delete it")
        tables = {name: pq.read_table(folder / f"{name}.parquet") for name in ("items", "contexts", "rejects")}
        return cls(
            AdapterInfo(**facts["info"]), facts["input_ref"], digest=facts["digest"], read=facts["read"], **tables
        )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while staging.

    Staging allocates millions of small containers (records, lists, dicts) that stay alive until
    the Arrow tables are built, so every automatic collection re-traverses a growing heap for
    nothing: measured, that was ~40% of the per-record cost. Reference counting still frees
    everything as usual; the collector is restored (and catches up) afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def stage(
    info: AdapterInfo,
    produced: Iterable[RecordOrReject],
    input_ref: str,
    progress: Progress = SILENT,
    *,
    read: int | None = None,
) -> Staged:
    """Validate every produced record; keep the valid ones, turn the rest into rejects.

    `read`: how many records the input holds, counted apart from `produced` (an adapter's
    `count_input`, the size asked of a generator); by default, how many `produced` yielded.
    Reported as the stage "stage <source>", advancing per record (of `read`, when given)."""
    with gc_paused(), progress.stage(f"stage {info.name}", total=read) as staging:
        collector = Collector(info)
        count = collect(collector, produced, staging)
        return collector.staged(input_ref, count if read is None else read)


def collect(collector: "Collector", produced: Iterable[RecordOrReject | ColumnBatch], progress: Stage | None) -> int:
    """Feed every produced record (or batch of records) to `collector`; returns how many records there
    were. `progress` advances by the records fed, every 5000 or so (a call per record costs)."""
    batch: list[RecordOrReject] = []
    count = reported = 0
    for record in produced:
        if isinstance(record, ColumnBatch):
            collector.take(batch, count - len(batch) + 1)
            batch = []
            collector.take_columns(record, count + 1)
            count += record.size
        else:
            count += 1
            batch.append(record)
            if len(batch) == _CHUNK_ROWS:
                collector.take(batch, count - len(batch) + 1)
                batch = []
        if progress is not None and count - reported >= 5000:
            progress.advance(count - reported)
            reported = count
    collector.take(batch, count - len(batch) + 1)
    if progress is not None and count > reported:
        progress.advance(count - reported)
    return count


class Collector:
    """Sorts produced records, one batch at a time, into items (as Arrow), contexts and rejects.

    A batch is validated in one call of the compiled validator; only a batch that fails is
    validated record by record (to find which ones, and why). Items are converted to Arrow per
    batch, so their dicts are freed (and the memory reused) early. With a `trail`, the bytes the
    input digest is taken over are appended to it instead (a part of a split input: the parts'
    trails, hashed in order, give the digest of the whole)."""

    def __init__(self, info: AdapterInfo, trail: bytearray | None = None) -> None:
        self.info = info
        self.parts: list[pa.Table] = []
        self.contexts: dict[str, dict[str, Any]] = {}  # context_id -> first record with it (input order)
        self.rejects: list[Reject] = []
        self.seen: set[str] = set()
        self.duplicates = 0
        self.digest = hashlib.sha256()
        self._feed = self.digest.update if trail is None else trail.extend

    def take(self, batch: list[RecordOrReject], first_count: int) -> None:
        """Sort `batch`, whose first record is input record number `first_count` (1-based)."""
        rejects, seen, contexts, feed = self.rejects, self.seen, self.contexts, self._feed
        records = [record for record in batch if not isinstance(record, Reject)]
        all_valid = all(
            are_valid(records[start : start + _VALIDATE_ROWS]) for start in range(0, len(records), _VALIDATE_ROWS)
        )
        items: list[dict[str, Any]] = []
        for count, record in enumerate(batch, start=first_count):
            if isinstance(record, Reject):
                rejects.append(record)
                feed(record.raw.encode("utf-8"))
            elif not (all_valid or is_valid(record)):
                field, reason = first_error(record)
                rejects.append(_reject_of(self.info, record, field, reason))
            elif record["item_id"] in seen:
                self.duplicates += 1
                duplicate = _reject_of(
                    self.info, record, "item_id", "duplicate of an earlier record with the same source key"
                )
                rejects.append(replace(duplicate, source_ref=f"{duplicate.source_ref} (input record {count})"))
            else:
                seen.add(record["item_id"])
                items.append(record)
                contexts.setdefault(record["context_id"], record)
                feed(record["content_hash"].encode("ascii"))
        if items or not self.parts:
            self.parts.append(_to_arrow(items, ITEM_FIELDS))

    def take_columns(self, batch: ColumnBatch, first_count: int) -> None:
        """Sort a batch of records built as columns: when every record is valid and new, as one
        Arrow table; otherwise (rare) record by record, as `take`, so rejects say which and why."""
        try:
            table = batch.table()
        except BatchError:
            table = None
        ids = [] if table is None else table.column("item_id").to_pylist()
        if (
            table is None
            or pc.any(invalid_mask(table)).as_py()
            or len(set(ids)) < len(ids)
            or not self.seen.isdisjoint(ids)
        ):
            self.take(list(batch.records()), first_count)
            return
        self.seen.update(ids)
        contexts, first = self.contexts, {}
        for index, context_id in enumerate(table.column("context_id").to_pylist()):
            if context_id not in contexts and context_id not in first:
                first[context_id] = index
        if first:
            for row in table.select(["context_id", *CONTEXT_FIELDS]).take(list(first.values())).to_pylist():
                contexts[row["context_id"]] = row
        self._feed("".join(table.column("content_hash").to_pylist()).encode("ascii"))
        self.parts.append(table.select(list(ITEM_FIELDS)))

    def staged(self, input_ref: str, read: int) -> Staged:
        items = pa.concat_tables(self.parts)
        contexts = _to_arrow(list(self.contexts.values()), ("context_id", *CONTEXT_FIELDS))
        return Staged(
            self.info, input_ref, items, contexts, _rejects_table(self.rejects), self.digest.hexdigest(), read
        )


def _reject_of(info: AdapterInfo, record: Any, field: str, reason: str) -> Reject:
    ref = str(record.get("source_ref", "?")) if isinstance(record, dict) else "?"
    file, _, rec = ref.partition("#")
    return Reject(info.name, ref, file, rec or ref, field, f"schema: {reason}", Reject.raw_of(record))


def _to_arrow(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> pa.Table:
    """Rows -> Arrow: plain fields in one C++ pass (`from_pylist` picks them out of the dicts),
    JSON fields serialized canonically as columns of their own. The rows are not copied:
    rebuilding a dict per row with the JSON fields replaced cost ~3x the whole conversion."""
    json_fields = [name for name in fields if name in JSON_COLUMNS]
    schema = arrow_schema(fields)
    if not json_fields:
        return pa.Table.from_pylist(rows, schema=schema)
    plain = pa.Table.from_pylist(rows, schema=pa.schema([f for f in schema if f.name not in JSON_COLUMNS]))
    columns = {name: plain.column(name) for name in plain.column_names}
    for name in json_fields:
        columns[name] = pa.array(
            [None if (value := row.get(name)) is None else canonical_json(value) for row in rows], type=pa.string()
        )
    return pa.Table.from_arrays([columns[name] for name in fields], schema=schema)


def _rejects_table(rejects: list[Reject]) -> pa.Table:
    names = ("source", "source_ref", "file", "record", "field", "reason", "raw")
    return pa.table({name: pa.array([getattr(r, name) for r in rejects], type=pa.string()) for name in names})


def write_staged(
    con: duckdb.DuckDBPyConnection, staged: Staged, *, replace_source: bool = False, progress: Progress = SILENT
) -> LoadReport:
    """Upsert staged tables into an open (private, being-built) warehouse connection.

    Refused (`Unreconciled`, nothing written) when read != loaded + rejected. With `replace_source`
    the load replaces every earlier item, reject and input of its source (a new generated run
    replaces the last one); otherwise only the items it loads again, as any re-ingest does.
    Reported as the stage "write <source>", advancing by the rows written (items and rejects)."""
    report = staged.report
    if not report.reconciled:
        raise Unreconciled(report)
    with progress.stage(f"write {staged.info.name}") as writing:
        _upsert(con, staged, report, replace_source)
        writing.advance(report.loaded + report.rejected)
    return report


def _upsert(con: duckdb.DuckDBPyConnection, staged: Staged, report: LoadReport, replace_source: bool) -> None:
    """The writes of `write_staged`, counting new / changed / unchanged / removed items into `report`.

    Items go in with one INSERT after staging. Streaming each staged batch into DuckDB from a
    second thread while staging went on was measured no faster (250k HiToM rows, 2 CPUs, three
    interleaved runs, 2026-12-03: 10.2-10.7 s against 9.0-11.4 s) for ~1.5 s more CPU: per-batch
    inserts cost DuckDB more than one bulk insert, and the inserting thread slows staging."""
    con.register("new_items", staged.items)
    con.register("new_contexts", staged.contexts)
    con.register("new_rejects", staged.rejects)
    report.new, report.changed = db.one_row(
        con,
        """SELECT count(*) FILTER (WHERE o.item_id IS NULL),
                  count(*) FILTER (WHERE o.item_id IS NOT NULL AND o.content_hash <> n.content_hash)
           FROM new_items n LEFT JOIN items o USING (item_id)""",
    )
    report.unchanged = report.loaded - report.new - report.changed
    replaced = _delete_replaced(con, staged.info.name, report, replace_source)
    con.execute(f"INSERT INTO items SELECT {', '.join(ITEM_FIELDS)} FROM new_items")
    con.execute("INSERT INTO rejects SELECT * FROM new_rejects")
    con.execute("INSERT INTO contexts SELECT * FROM new_contexts ANTI JOIN contexts USING (context_id)")
    replaced += _deleted(con, "DELETE FROM contexts WHERE context_id NOT IN (SELECT context_id FROM items)")
    _vacuum_only_if_replaced(con, replaced)
    _record_load(con, staged, report)
    for view in ("new_items", "new_contexts", "new_rejects"):
        con.unregister(view)


def _delete_replaced(con: duckdb.DuckDBPyConnection, source: str, report: LoadReport, replace_source: bool) -> int:
    """Before the staged rows go in: delete the items and rejects they replace (all of `source`'s with
    `replace_source`), counting into `report.removed` the items whose rows are now rejects or gone from the
    source; the number of rows deleted (whether the load replaced anything)."""
    replaced = _deleted(con, "DELETE FROM items WHERE item_id IN (SELECT item_id FROM new_items)")
    report.removed = _deleted(
        con, "DELETE FROM items WHERE (source, source_ref) IN (SELECT (source, source_ref) FROM new_rejects)"
    )
    if replace_source:
        report.removed += _deleted(con, "DELETE FROM items WHERE source = ?", [source])
        replaced += _deleted(con, "DELETE FROM rejects WHERE source = ?", [source])
        con.execute("DELETE FROM sources WHERE source = ?", [source])
    replaced += report.removed
    return replaced + _deleted(
        con,
        "DELETE FROM rejects WHERE (source, source_ref) IN "
        "(SELECT (source, source_ref) FROM new_rejects UNION ALL SELECT (source, source_ref) FROM new_items)",
    )


def _record_load(con: duckdb.DuckDBPyConnection, staged: Staged, report: LoadReport) -> None:
    """The input's row of `sources` (replacing the one of the same input) and the load's row of `loads`."""
    info, input_ref = staged.info, staged.input_ref
    con.execute("DELETE FROM sources WHERE source = ? AND input_ref = ?", [info.name, input_ref])
    con.execute(
        "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            info.name,
            input_ref,
            info.version,
            info.license,
            info.hub_repo,
            staged.digest,
            report.read,
            report.loaded,
            report.rejected,
        ],
    )
    con.execute(
        "INSERT INTO loads SELECT coalesce(max(load_no), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM loads",
        [
            info.name,
            input_ref,
            report.read,
            report.loaded,
            report.rejected,
            report.new,
            report.changed,
            report.unchanged,
            report.removed,
        ],
    )


def _deleted(con: duckdb.DuckDBPyConnection, statement: str, parameters: list[Any] | None = None) -> int:
    return int(db.one_row(con, statement, parameters)[0])


def _vacuum_only_if_replaced(con: duckdb.DuckDBPyConnection, replaced: int) -> None:
    """Skip DuckDB's checkpoint-time vacuum on connections whose loads only appended.

    Vacuum reclaims deleted rows and merges partial row groups. After a load that deleted nothing
    there is nothing to reclaim, yet merging the previous load's partial last row group made the
    checkpoint rewrite every appended row group (measured: 3.1 s CPU for 250k ExploreToM rows
    appended after 250k HiToM rows, more than the 2.7 s insert itself; 0.0 s with vacuum off).
    Once any load on the connection replaces rows, vacuum is back on (default) for good."""
    try:
        if replaced:
            con.execute("SET VARIABLE tomforge_replaced_rows = true")
            con.execute("RESET max_vacuum_tasks")
        elif db.one_row(con, "SELECT getvariable('tomforge_replaced_rows')")[0] is None:
            con.execute("SET max_vacuum_tasks = 0")
    except duckdb.CatalogException:  # a DuckDB without this setting: only speed is at stake
        pass


def load_into(
    con: duckdb.DuckDBPyConnection,
    info: AdapterInfo,
    produced: Iterable[RecordOrReject],
    input_ref: str,
    progress: Progress = SILENT,
    *,
    read: int | None = None,
    replace_source: bool = False,
) -> LoadReport:
    """Validate and upsert into an open (private, being-built) warehouse connection."""
    return write_staged(
        con, stage(info, produced, input_ref, progress, read=read), replace_source=replace_source, progress=progress
    )


def ingest_records(
    warehouse: Path,
    info: AdapterInfo,
    produced: Iterable[RecordOrReject],
    input_ref: str,
    progress: Progress = SILENT,
    *,
    read: int | None = None,
    replace_source: bool = False,
) -> LoadReport:
    """Load records into `warehouse` atomically (build a copy, validate, swap); `read` and
    `replace_source` as in `stage` and `write_staged`."""
    with db.building(Path(warehouse)) as con:
        return load_into(con, info, produced, input_ref, progress, read=read, replace_source=replace_source)


def info_of(adapter: AdapterInfo) -> AdapterInfo:
    """The static facts of an adapter as the `sources` table records them."""
    return AdapterInfo(adapter.name, adapter.version, adapter.license, adapter.hub_repo, adapter.hub_patterns)
