"""Staging a big input in several processes at once, with the same result as one pass.

Staging is Python work (parse, build records, validate, convert to Arrow) and holds the GIL, so
threads do not help; processes do. An adapter that can read its input in slices (`split_input`,
`read_part`: HiToM's JSON file, ExploreToM's CSV file) is run on slice 0 here and on the other
slices in worker processes started with `python -c` (no `fork` of a process that holds DuckDB
and polars threads, no re-import of the caller's `__main__` as with `spawn`). Each worker writes
its staged slice as Arrow IPC files; the slices are joined in input order:
  * items and rejects: concatenated;
  * contexts: the first record of each context across the slices (input order, as in one pass);
  * digest: sha256 over the slices' digest trails in order (= the one-pass digest);
  * a duplicate item_id within or across slices falls back to staging in one pass, so duplicate
    rejects keep their input record numbers. So does any failure of a worker.
Small inputs stay in one process: starting a worker (~0.5-1 s of imports) would cost more than
it saves. Each worker parses the whole input (then stages only its slice), so splitting costs
CPU time to save wall time, and on two CPUs it saves none: measured with the column path, whole
ingests of 500k questions (bench/ingest.py, 2 CPUs, three interleaved runs each, 2026-12-03) ran
at 27.7k, 30.3k and 32.0k q/s with two processes against 28.5k, 30.0k and 30.4k with one, for ~45%
more CPU (49-58 against 35-37 us per question). So one process is the default and splitting is
opt-in (`TOMFORGE_INGEST_WORKERS=N`), for machines with more idle CPUs than the DuckDB insert uses.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tomforge.schemas.progress import SILENT, Progress, Stage
from tomforge.warehouse.db import WarehouseError
from tomforge.warehouse.load import Collector, Staged, collect, gc_paused, info_of, stage
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.base import Adapter, AdapterInfo, SourceError
from tomforge.warehouse.sources.sniff import describe, sniff

MIN_BYTES = 64 << 20  # inputs smaller than this are staged in one process
WORKERS_ENV = "TOMFORGE_INGEST_WORKERS"  # processes per staging (1: never split)


@dataclass
class _Part:
    """One slice of an input, staged: the pieces `_join` puts back together."""

    items: pa.Table
    contexts: pa.Table
    rejects: pa.Table
    trail: bytes
    count: int
    duplicates: int


def default_workers() -> int:
    """Processes per staging: `TOMFORGE_INGEST_WORKERS`, else 1 (see the module doc for why)."""
    value = os.environ.get(WORKERS_ENV, "").strip() or "1"
    if not value.isdecimal() or int(value) < 1:  # isdigit() admits "²", which int() refuses
        raise WarehouseError(f"{WORKERS_ENV}={value!r}: expected a whole number of processes, 1 or more")
    return int(value)


def stage_input(
    info: AdapterInfo,
    adapter: Adapter,
    root: Path,
    input_ref: str,
    progress: Progress = SILENT,
    *,
    workers: int | None = None,
    min_bytes: int | None = None,
) -> Staged:
    """`stage(info, adapter.read(root), ...)`, split over `workers` processes when the input allows it
    (an adapter whose `split_input` names one input file of at least `min_bytes`, default `MIN_BYTES`).
    `read` is the adapter's own count of the input (`count_input`), taken after parsing succeeded
    (so a file it cannot read is reported by the parser's clear error first): the stage
    "count <source>"."""
    found = sniff(Path(root)) if Path(root).is_file() else None
    if (
        found is not None and found.name not in adapter.binary_formats
    ):  # before any adapter opens it: say what it is and how to convert it
        raise SourceError(root, describe(found, f"the {info.name} format (the adapters read UTF-8 text)"))
    processes = staging_processes(adapter, root, workers=workers, min_bytes=min_bytes)
    staged = _stage_split(info, adapter, Path(root), input_ref, progress, processes) if processes > 1 else None
    if staged is None:
        staged = stage(info, adapter.read_columns(root), input_ref, progress)
    with progress.stage(f"count {info.name}") as counting:
        read = adapter.count_input(Path(root))
        counting.advance(read)
    return replace(staged, read=read)


def staging_processes(adapter: Adapter, root: Path, *, workers: int | None = None, min_bytes: int | None = None) -> int:
    """How many processes `stage_input` splits `root` over: `workers` (default `default_workers()`) for
    an adapter whose `split_input` names one input file of at least `min_bytes` (default `MIN_BYTES`), else 1."""
    workers = default_workers() if workers is None else workers
    min_bytes = MIN_BYTES if min_bytes is None else min_bytes
    source_file = adapter.split_input(root) if workers > 1 else None
    return workers if source_file is not None and source_file.stat().st_size >= min_bytes else 1


def _stage_split(
    info: AdapterInfo, adapter: Adapter, root: Path, input_ref: str, progress: Progress, parts: int
) -> Staged | None:
    """Slice 0 staged here, the others by worker processes; None when a worker cannot start or fails
    (the caller then stages the input in one pass). The stage "stage <source> in N processes"
    advances by slice 0's records as they come, then by each other slice's when it is joined."""
    with progress.stage(f"stage {info.name} in {parts} processes") as staging:
        return _run_parts(info, adapter, root, input_ref, progress, staging, parts)


def _run_parts(
    info: AdapterInfo, adapter: Adapter, root: Path, input_ref: str, progress: Progress, staging: Stage, parts: int
) -> Staged | None:
    with tempfile.TemporaryDirectory(prefix="tomforge-stage-") as tmp:
        folders = [Path(tmp) / f"part-{part}" for part in range(parts)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        workers: list[subprocess.Popen] = []
        try:
            for part in range(1, parts):
                with (Path(tmp) / f"part-{part}.err").open("wb") as errors:  # a file: a full pipe would stall it
                    workers.append(
                        subprocess.Popen(
                            [
                                sys.executable,
                                "-c",
                                "import sys; from warehouse.parallel import part_main; part_main(sys.argv[1:])",
                                adapter.name,
                                str(root),
                                str(part),
                                str(parts),
                                str(folders[part]),
                            ],
                            env=env,
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=errors,
                        )
                    )
        except OSError as exc:
            progress.info(f"cannot start a staging worker ({exc}); staging {root} in one process")
            _stop(workers)
            return None
        try:
            results = [_stage_part(info, adapter, root, 0, parts, staging)]
            for part, worker in enumerate(workers, start=1):
                if worker.wait() != 0:
                    message = (Path(tmp) / f"part-{part}.err").read_text("utf-8", "replace").strip().splitlines()
                    progress.info(
                        f"staging worker {part} of {root} failed "
                        f"({message[-1] if message else f'exit status {worker.returncode}'}); "
                        "staging it in one process"
                    )
                    return None
                results.append(_read_part(folders[part]))
                staging.advance(results[-1].count)
        finally:
            _stop(workers)
        return _join(info, input_ref, results)


def _stop(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def _stage_part(
    info: AdapterInfo, adapter: Adapter, root: Path, part: int, parts: int, progress: Stage | None = None
) -> _Part:
    trail = bytearray()
    collector = Collector(info, trail)
    with gc_paused():
        count = collect(collector, adapter.read_part(root, part, parts), progress)
        staged = collector.staged("", count)
    return _Part(staged.items, staged.contexts, staged.rejects, bytes(trail), count, collector.duplicates)


def part_main(argv: list[str]) -> None:
    """Worker entry point: stage slice `part` of `parts` of an input and write it to `folder`."""
    source, root, part, parts, folder = argv
    adapter = get_adapter(source)
    result = _stage_part(info_of(adapter), adapter, Path(root), int(part), int(parts))
    out = Path(folder)
    out.mkdir(parents=True)
    for name in ("items", "contexts", "rejects"):
        table = getattr(result, name)
        with pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    (out / "trail.bin").write_bytes(result.trail)
    (out / "part.json").write_text(json.dumps({"count": result.count, "duplicates": result.duplicates}))


def _read_part(folder: Path) -> _Part:
    tables = {
        name: pa.ipc.open_file(pa.memory_map(str(folder / f"{name}.arrow"))).read_all()
        for name in ("items", "contexts", "rejects")
    }
    facts = json.loads((folder / "part.json").read_text())
    return _Part(trail=(folder / "trail.bin").read_bytes(), **tables, **facts)


def _join(info: AdapterInfo, input_ref: str, parts: list[_Part]) -> Staged | None:
    """The slices put back together in input order, or None when item ids repeat (see the module doc)."""
    items = pa.concat_tables([part.items for part in parts])
    if any(part.duplicates for part in parts) or pc.count_distinct(items.column("item_id")).as_py() != items.num_rows:
        return None
    contexts = pa.concat_tables([part.contexts for part in parts])
    first: dict[str, int] = {}
    for index, context_id in enumerate(contexts.column("context_id").to_pylist()):
        first.setdefault(context_id, index)
    if len(first) < contexts.num_rows:
        contexts = contexts.take(list(first.values()))
    rejects = pa.concat_tables([part.rejects for part in parts])
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.trail)
    return Staged(info, input_ref, items, contexts, rejects, digest.hexdigest(), sum(part.count for part in parts))
