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

from tomforge.flows.config import (
    AuditConfig,
    CleanConfig,
    Config,
    ConfigError,
    GenerateConfig,
    PublishConfig,
    RunnerConfig,
    SourceSpec,
    VariantsConfig,
    load_config,
)
from tomforge.flows.staging import (
    generated_folder,
    is_staged,
    open_staged,
    stage_generated,
    stage_source,
    staged_folder,
)
from tomforge.schemas.errors import TrainingFailed
from tomforge.schemas.progress import PlainLineProgress
from tomforge.warehouse import db
from tomforge.warehouse.load import LoadReport, Unreconciled, write_staged
from tomforge.warehouse.lock import configured_timeout, hold

PROGRESS_INTERVAL = 10.0  # seconds between two progress lines of one running stage in a run's log


def run_progress() -> PlainLineProgress:
    """Progress of a step inside a flow: lines in the task's (or flow's) run log, no bars; a long
    stage logs its count every PROGRESS_INTERVAL seconds, and every stage its count and time at the end."""
    return PlainLineProgress(get_run_logger().info, interval=PROGRESS_INTERVAL)


def _folder_key(folder: Path) -> str:
    """Names the input's fingerprint (the folder name) and where it is kept (hash of its absolute path);
    Prefect also uses the key as the result's file name, so it must be a plain name."""
    folder = folder.resolve()
    return f"{folder.name}-{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}"


def _stage_key(context: Any, parameters: dict[str, Any]) -> str:
    return _folder_key(
        staged_folder(
            Path(parameters["staging"]), parameters["source"], parameters["location"], parameters.get("options")
        )
    )


@task(
    name="stage-source",
    cache_key_fn=_stage_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    retries=2,
    retry_delay_seconds=[2, 10],
    task_run_name="stage-{source}",
)
def stage_task(staging: str, source: str, location: str, options: dict[str, Any] | None = None) -> str:
    """Parse + validate one source (retried: a Hub id downloads over the network)."""
    return str(stage_source(Path(staging), source, location, run_progress(), options))


def _generated_key(context: Any, parameters: dict[str, Any]) -> str:
    return _folder_key(generated_folder(Path(parameters["staging"]), parameters["settings"], parameters["split"]))


@task(
    name="generate-split",
    cache_key_fn=_generated_key,
    cache_expiration=timedelta(days=30),
    persist_result=True,
    task_run_name="generate-{split}",
)
def generate_task(staging: str, settings: GenerateConfig, split: str) -> str:
    """Generate one split; cached on every generator argument and the generator's version."""
    return str(stage_generated(Path(staging), settings, split, run_progress()))


@task(name="assemble-warehouse")
def assemble_task(warehouse: str, folders: list[str]) -> list[dict[str, Any]]:
    """Write every staged source into a fresh warehouse, swapped in only if all of it succeeds."""
    reports: list[LoadReport] = []
    progress = run_progress()
    with db.building(Path(warehouse), fresh=True) as con:
        for folder in folders:
            reports.append(write_staged(con, open_staged(Path(folder)), progress=progress))
    return [r.as_dict() for r in reports]


@task(name="variants", task_run_name="variants-{source}")
def variants_task(warehouse: str, source: str, settings: VariantsConfig) -> dict[str, Any]:
    """Oracle checks and variants of one real source (`tomforge variants`), one atomic rebuild."""
    from tomforge.generators.real.store import run_variants

    run = run_variants(Path(warehouse), source, settings.settings)
    report = run.report
    get_run_logger().info(
        "%s: %d variants of %d candidates; oracle rejects %d of %d golds",
        report.source,
        report.loaded,
        run.outcome.candidates,
        sum(c.agrees is False for c in run.checks if c.source == source),
        sum(c.source == source for c in run.checks),
    )
    return report.as_dict()


def run_variants_step(config: Config) -> list[dict[str, Any]]:
    """The variants of every chosen source, one after the other (each rebuilds the warehouse file)."""
    if not config.variants.enabled:
        return []
    warehouse = str(config.warehouse.path)
    return [
        variants_task(warehouse, source, config.variants)
        for source in config.variants.chosen([spec.name for spec in config.sources])
    ]


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
    folder = staged_folder(config.warehouse.staging, spec.name, spec.resolved, spec.options)
    return stage_task.with_options(refresh_cache=not is_staged(folder)).submit(
        staging, spec.name, spec.resolved, spec.options
    )


def submit_generate(config: Config) -> list:
    """One task per split: they run in parallel (threads or Ray workers)."""
    if not config.generate.enabled:
        return []
    staging = config.warehouse.staging
    return [
        generate_task.with_options(
            refresh_cache=not is_staged(generated_folder(staging, config.generate, split))
        ).submit(str(staging), config.generate, split)
        for split, size in config.generate.split_sizes().items()
        if size
    ]


def audit_passes_of(runner: RunnerConfig | None) -> Any:
    """The audit's shingle and signature passes: in this process, or Ray tasks over shards when
    the runner is Ray (the cluster at `ray_address`, else a local Ray of `max_workers` CPUs)."""
    if runner is None or runner.task_runner != "ray":
        from tomforge.audits.passes import run_local

        return run_local
    from tomforge.audits.ray_passes import RayPasses

    return RayPasses(address=runner.ray_address, num_cpus=None if runner.ray_address else runner.max_workers)


@task(name="audit")
def audit_task(warehouse: str, settings: AuditConfig, runner: RunnerConfig | None = None) -> dict[str, Any]:
    """Overlap and template-artifact audit of train vs held-out; report under `settings.out`."""
    from tomforge.audits.run import run_audit

    summary = run_audit(
        Path(warehouse),
        settings.train,
        settings.heldout,
        settings.out,
        settings.params,
        progress=run_progress(),
        passes=audit_passes_of(runner),
    )
    for line in summary.lines():
        get_run_logger().info(line)
    return {
        "run_id": summary.run_id,
        "n_flagged": summary.n_flagged,
        "summary": "\n".join(summary.lines()),
        "report": str(settings.out),
    }


@task(name="clean")
def clean_task(warehouse: str, settings: CleanConfig) -> dict[str, Any]:
    """Apply the cleaning policy to the latest audit (clean_items, clean_removed, clean_summary)."""
    from tomforge.audits.clean import CleaningError, apply_cleaning

    summary = apply_cleaning(Path(warehouse), settings.policy)
    if not summary.reconciled:
        raise CleaningError("cleaning does not reconcile (selected != kept + removed)")
    return {"summary": "\n".join(summary.lines())}


def _hub_still_failing(task: Any, task_run: Any, state: Any) -> bool:
    """Retry the publish task only when the Hub kept failing (5xx, 429, timeouts after the step's own
    retries); never for a conflict, an unreachable Hub, bad input or a ledger that does not add up."""
    from tomforge.schemas.hub_errors import ConflictError, PublishError, UnreachableError

    try:
        exc = state.result(raise_on_failure=False)
    except Exception:  # noqa: BLE001 - an unreadable state is not worth a retry
        return False
    return isinstance(exc, PublishError) and not isinstance(exc, (ConflictError, UnreachableError))


@task(name="publish", retries=2, retry_delay_seconds=[10, 60], retry_condition_fn=_hub_still_failing)
def publish_task(warehouse: str, settings: PublishConfig, audit_report: str | None) -> dict[str, Any]:
    """Export the cleaned tables as a tagged release to a local folder or the Hub (retried: network)."""
    from tomforge.hub.export import ExportOptions
    from tomforge.hub.ledger import lines as ledger_lines
    from tomforge.hub.publish_and_verify import choose_table, publish_warehouse
    from tomforge.hub.release import ReleaseOptions

    export = ExportOptions(table=choose_table(Path(warehouse), None), max_rows_per_shard=settings.max_rows_per_shard)
    options = ReleaseOptions(
        settings.repo,
        tag=settings.tag or None,
        export=export,
        audit_report=Path(audit_report) if audit_report else None,
        allow_restricted_training=settings.allow_restricted_training,
    )
    result = publish_warehouse(
        Path(warehouse),
        settings.repo,
        target=settings.target,
        options=options,
        private=settings.private,
        progress=run_progress(),
    )
    where = settings.repo if settings.target == "hub" else str(Path(settings.target).resolve())
    if result.manifest is None:  # publish_warehouse attaches the built release's manifest to every result
        raise RuntimeError(f"{settings.repo}: the publish step returned no release manifest")
    return {
        "tag": result.tag,
        "where": where,
        "table": export.table,
        "ledger": "\n".join(ledger_lines(result.manifest["ledger"])),
    }


@flow(name="rl-stage", log_prints=True)
def rl_flow(
    dataset: str,
    revision: str | None = None,
    backend: str = "trl",
    model: str = "Qwen/Qwen2.5-0.5B-Instruct",
    train: str = "all/train",
    val: str = "all/test",
    gpus: int = 1,
    ray_address: str = "",
    data_dir: str = "var/rl-data",
    dry_run: bool = False,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The GPU RL stage on a published release (deployed on the GPU work pool)."""
    from tomforge.rl import stage

    backend_settings = stage.make_settings(backend, model, settings, gpus=gpus)
    outcome = stage.launch(
        backend_settings,
        dataset,
        revision,
        train,
        val,
        gpus=gpus,
        ray_address=ray_address or None,
        data_dir=data_dir,
        dry_run=dry_run,
    )
    get_run_logger().info(outcome["plan"])
    if outcome.get("exit_code"):
        raise TrainingFailed(f"training exited with status {outcome['exit_code']}")
    return {k: v for k, v in outcome.items() if k != "plan"}


def launch_rl(config: Config, release: dict[str, Any]) -> str:
    """Start the RL stage on the release just published: inline, or as the GPU deployment."""
    rl = config.rl
    parameters: dict[str, Any] = dict(
        dataset=rl.dataset or release["where"],
        revision=rl.revision or release["tag"],
        backend=rl.backend,
        model=rl.model,
        train=rl.train,
        val=rl.val,
        gpus=rl.gpus,
        ray_address=rl.ray_address,
        data_dir=rl.data_dir,
        dry_run=rl.dry_run,
        settings=rl.settings,
    )
    if rl.launch == "inline":
        rl_flow(**parameters)
        return "ran inline"
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment

    run = run_deployment("rl-stage/gpu", parameters=parameters, timeout=0)
    if not isinstance(run, FlowRun):  # prefect returns a coroutine instead when called from async code
        raise TypeError("launch_rl must be called from synchronous code (run_deployment returned a coroutine)")
    return f"submitted flow run {run.id} to rl-stage/gpu"


def summary_markdown(reports: list[dict[str, Any]], extra: dict[str, str]) -> str:
    lines = ["# tomforge rebuild", "", "| source | read | loaded | rejected | reconciled |", "|---|---|---|---|---|"]
    for r in reports:
        lines.append(f"| {r['source']} | {r['read']} | {r['loaded']} | {r['rejected']} | {r['reconciled']} |")
    lines += ["", f"**items**: {sum(r['loaded'] for r in reports)}  **rejects**: {sum(r['rejected'] for r in reports)}"]
    for key, value in extra.items():
        lines += [f"**{key}**: {value}"] if "\n" not in value else [f"**{key}**:", "```", value, "```"]
    return "\n".join(lines)


@flow(name="ingest-sources", log_prints=True)
def ingest_flow(config_path: str | None = None) -> list[dict[str, Any]]:
    """Stage every configured source and generated split (cached by input fingerprint / arguments)
    and assemble the warehouse."""
    config = load_config(Path(config_path) if config_path else None)
    with configured_timeout(config.warehouse.lock_timeout):
        return run_ingest(config)


def run_ingest(config: Config) -> list[dict[str, Any]]:
    """Run staging + assembly as a subflow on the configured task runner."""
    return stage_and_assemble.with_options(task_runner=task_runner_of(config))(config)


@flow(name="stage-and-assemble", log_prints=True)
def stage_and_assemble(config: Config) -> list[dict[str, Any]]:
    futures = [submit_stage(config, spec) for spec in config.sources] + submit_generate(config)
    folders = [future.result() for future in futures]
    reports = assemble_task(str(config.warehouse.path), folders)
    for r in reports:
        get_run_logger().info(
            "%s: read %d = loaded %d + rejected %d", r["source"], r["read"], r["loaded"], r["rejected"]
        )
    return reports


def audit_clean_publish(config: Config, extra: dict[str, str]) -> dict[str, Any] | None:
    """The steps after ingest, as configured; adds their summaries to `extra`; returns the release."""
    warehouse = str(config.warehouse.path)
    audit = audit_task(warehouse, config.audit, config.runner) if config.audit.enabled else None
    if audit:
        extra["audit"] = audit["summary"]
    if audit and config.clean.enabled:
        extra["cleaning"] = clean_task(warehouse, config.clean)["summary"]
    if not config.publish.enabled:
        return None
    release = publish_task(warehouse, config.publish, audit["report"] if audit else None)
    extra["release"] = f"{release['tag']} at {release['where']} (from {release['table']})"
    extra["ledger"] = release["ledger"]
    return release


@flow(name="publish", log_prints=True)
def publish_flow(config_path: str | None = None) -> dict[str, Any] | None:
    """Audit, clean and publish the warehouse as it is (no re-ingest)."""
    config = load_config(Path(config_path) if config_path else None)
    extra: dict[str, str] = {}
    # audit, clean and publish see one warehouse (warehouse/lock.py), waiting as long as the config says
    with configured_timeout(config.warehouse.lock_timeout), hold(config.warehouse.path):
        release = audit_clean_publish(config, extra)
    create_markdown_artifact("\n\n".join(f"**{k}**:\n```\n{v}\n```" for k, v in extra.items()), key="publish-summary")
    return release


@flow(name="rebuild", log_prints=True)
def rebuild_flow(config_path: str | None = None) -> dict[str, Any]:
    """The scheduled rebuild: ingest + generate -> variants of real stories -> audit -> clean -> publish ->
    (optionally) RL."""
    config = load_config(Path(config_path) if config_path else None)
    # one writer at a time: the whole rebuild holds the warehouse lock, so a person's ingest waits and
    # lands on the rebuilt warehouse instead of being overwritten by it (docs/concurrency.md)
    with configured_timeout(config.warehouse.lock_timeout), hold(config.warehouse.path):
        reports = run_ingest(config)
        reports += run_variants_step(config)
        unreconciled = [r for r in reports if not r["reconciled"]]
        if unreconciled:
            raise Unreconciled(LoadReport.from_dict(unreconciled[0]), loaded=True)
        extra = {"warehouse": str(config.warehouse.path.resolve())}
        release = audit_clean_publish(config, extra)
    if config.audit.enabled:
        extra["audit report"] = str((Path(config.audit.out) / "audit_report.md").resolve())
    if release and config.rl.launch != "none":
        extra["rl"] = launch_rl(config, release)
    create_markdown_artifact(
        summary_markdown(reports, extra),
        key="rebuild-summary",
        description="counts, rejects, audit summary and release of this rebuild",
    )
    return {"sources": reports, **extra}


def where_things_are(result: dict[str, Any]) -> list[str]:
    """The end of a rebuild as the terminal shows it: where the warehouse, audit report and release
    are, and the release ledger (warehouse = released + removed)."""
    items = sum(r["loaded"] for r in result["sources"])
    rejects = sum(r["rejected"] for r in result["sources"])
    out = [f"warehouse: {result['warehouse']} ({items} items, {rejects} rejects)"]
    out += [f"{key}: {result[key]}" for key in ("audit report", "release", "rl") if key in result]
    if "ledger" in result:
        out += result["ledger"].splitlines()
    return out
