"""Prefect flows: the scheduled rebuild and each step alone. Tasks only call plain step functions.

Caching: staging a source is keyed on the fingerprint of its input files (plus adapter and schema
versions), so an unchanged source is not parsed again; the warehouse itself is always assembled
from the staged folders, so a cached task never skips a side effect it owes (a deleted staging
folder forces the task to run again).
"""
from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from flows.config import Config, ConfigError, GenerateConfig, SourceSpec, load_config
from flows.staging import generated_folder, is_staged, open_staged, stage_generated, stage_source, staged_folder
from warehouse import db
from warehouse.load import LoadReport, write_staged


def _stage_key(context: Any, parameters: dict[str, Any]) -> str:
    """Names the input's fingerprint (the folder name) and where it is kept (hash of its absolute path);
    Prefect also uses the key as the result's file name, so it must be a plain name."""
    folder = staged_folder(Path(parameters["staging"]), parameters["source"], parameters["location"]).resolve()
    return f"{folder.name}-{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}"


@task(name="stage-source", cache_key_fn=_stage_key, cache_expiration=timedelta(days=30), persist_result=True,
      retries=2, retry_delay_seconds=[2, 10], task_run_name="stage-{source}")
def stage_task(staging: str, source: str, location: str) -> str:
    """Parse + validate one source (retried: a Hub id downloads over the network)."""
    return str(stage_source(Path(staging), source, location))


def _generated_key(context: Any, parameters: dict[str, Any]) -> str:
    folder = generated_folder(Path(parameters["staging"]), parameters["settings"], parameters["split"]).resolve()
    return f"{folder.name}-{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}"


@task(name="generate-split", cache_key_fn=_generated_key, cache_expiration=timedelta(days=30), persist_result=True,
      task_run_name="generate-{split}")
def generate_task(staging: str, settings: GenerateConfig, split: str) -> str:
    """Generate one split; cached on every generator argument and the generator's version."""
    return str(stage_generated(Path(staging), settings, split))


@task(name="assemble-warehouse")
def assemble_task(warehouse: str, folders: list[str]) -> list[dict[str, Any]]:
    """Write every staged source into a fresh warehouse, swapped in only if all of it succeeds."""
    reports: list[LoadReport] = []
    with db.building(Path(warehouse), fresh=True) as con:
        for folder in folders:
            reports.append(write_staged(con, open_staged(Path(folder))))
    return [vars(r) | {"reconciled": r.reconciled} for r in reports]


def task_runner_of(config: Config) -> Any:
    """Threads on one machine, or Prefect's Ray task runner (local Ray, or the cluster at `ray_address`)."""
    if config.runner.task_runner == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError:
            raise ConfigError("runner.task_runner = 'ray' needs prefect-ray: pip install -e '.[ray]'") from None
        if config.runner.ray_address:
            return RayTaskRunner(address=config.runner.ray_address)
        return RayTaskRunner(init_kwargs={"include_dashboard": False, "num_cpus": config.runner.max_workers})
    return ThreadPoolTaskRunner(max_workers=config.runner.max_workers)


def submit_stage(config: Config, spec: SourceSpec):
    """Submit staging; refresh the cache when the staged folder it points to is gone."""
    staging = str(config.warehouse.staging)
    folder = staged_folder(config.warehouse.staging, spec.name, spec.resolved)
    return stage_task.with_options(refresh_cache=not is_staged(folder)).submit(staging, spec.name, spec.resolved)


def submit_generate(config: Config) -> list:
    """One task per split: they run in parallel (threads or Ray workers)."""
    if not config.generate.enabled:
        return []
    staging = config.warehouse.staging
    return [
        generate_task.with_options(refresh_cache=not is_staged(generated_folder(staging, config.generate, split)))
        .submit(str(staging), config.generate, split)
        for split, size in config.generate.split_sizes().items() if size
    ]


def summary_markdown(reports: list[dict[str, Any]], extra: dict[str, str]) -> str:
    lines = ["# tomforge rebuild", "", "| source | read | loaded | rejected | reconciled |", "|---|---|---|---|---|"]
    for r in reports:
        lines.append(f"| {r['source']} | {r['read']} | {r['loaded']} | {r['rejected']} | {r['reconciled']} |")
    lines += ["", f"**items**: {sum(r['loaded'] for r in reports)}  **rejects**: {sum(r['rejected'] for r in reports)}"]
    lines += [f"**{key}**: {value}" for key, value in extra.items()]
    return "\n".join(lines)


@flow(name="ingest-sources", log_prints=True)
def ingest_flow(config_path: str | None = None) -> list[dict[str, Any]]:
    """Stage every configured source and generated split (cached by input fingerprint / arguments)
    and assemble the warehouse."""
    return run_ingest(load_config(Path(config_path) if config_path else None))


def run_ingest(config: Config) -> list[dict[str, Any]]:
    """Run staging + assembly as a subflow on the configured task runner."""
    return stage_and_assemble.with_options(task_runner=task_runner_of(config))(config)


@flow(name="stage-and-assemble", log_prints=True)
def stage_and_assemble(config: Config) -> list[dict[str, Any]]:
    futures = [submit_stage(config, spec) for spec in config.sources] + submit_generate(config)
    folders = [future.result() for future in futures]
    reports = assemble_task(str(config.warehouse.path), folders)
    for r in reports:
        get_run_logger().info("%s: read %d = loaded %d + rejected %d", r["source"], r["read"], r["loaded"], r["rejected"])
    return reports


@flow(name="rebuild", log_prints=True)
def rebuild_flow(config_path: str | None = None) -> dict[str, Any]:
    """The scheduled rebuild: ingest every source, then the later steps configured."""
    config = load_config(Path(config_path) if config_path else None)
    reports = run_ingest(config)
    if not all(r["reconciled"] for r in reports):
        raise RuntimeError("counts do not reconcile (read != loaded + rejected)")
    extra = {"warehouse": str(config.warehouse.path)}
    create_markdown_artifact(summary_markdown(reports, extra), key="rebuild-summary",
                             description="counts, rejects, audit summary and release of this rebuild")
    return {"sources": reports, **extra}
