"""The scan as a Prefect flow (deployment `scan` in prefect.yaml): one task calling the plain step
`audits.scan.run_scan`, its progress in the run log, its summary as a Markdown artifact. Shards
run in the task's process, or as Ray tasks when `ray_address` is given ("local": a local Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from tomforge.audits.scan_config import DEFAULT_BENCHMARK
from tomforge.flows.pipeline import run_progress


@task(name="scan")
def scan_task(
    corpus: list[str],
    warehouse: str,
    benchmark: str,
    out: str,
    purify: str | None,
    text_field: str | None,
    id_field: str | None,
    revision: str | None,
    ray_address: str | None,
) -> dict[str, Any]:
    from tomforge.audits.scan import ShardRunner, run_local, run_scan
    from tomforge.audits.scan_ray import RayShards

    runner: ShardRunner = run_local if ray_address is None else RayShards("" if ray_address == "local" else ray_address)
    summary = run_scan(
        Path(warehouse),
        corpus,
        Path(out),
        benchmark_where=benchmark,
        text_field=text_field,
        id_field=id_field,
        revision=revision,
        purify=Path(purify) if purify else None,
        runner=runner,
        progress=run_progress(),
    )
    for line in summary.lines():
        get_run_logger().info(line)
    return {
        "read": summary.read,  # = scanned + rejected
        "scanned": summary.scanned,
        "rejected": summary.rejected,
        "hits": summary.hits.height,
        "contaminated": summary.contaminated,
        "ledger": summary.ledger,
        "summary": "\n".join(summary.lines()),
        "report": str(Path(out) / "scan_report.md"),
    }


@flow(name="scan", log_prints=True)
def scan_flow(
    corpus: list[str],
    warehouse: str = "var/warehouse.duckdb",
    benchmark: str = DEFAULT_BENCHMARK,
    out: str = "var/scan",
    purify: str | None = None,
    text_field: str | None = None,
    id_field: str | None = None,
    revision: str | None = None,
    ray_address: str | None = None,
) -> dict[str, Any]:
    """Scan a training corpus (shards or hub:ORG/NAME at `revision`) against the warehouse's held-out items."""
    result = scan_task(corpus, warehouse, benchmark, out, purify, text_field, id_field, revision, ray_address)
    create_markdown_artifact("\n".join(f"- {line}" for line in result["summary"].splitlines()), key="scan-summary")
    return result
