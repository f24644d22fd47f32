"""`tomforge train` and `eval`: the RL stage on a published release. Light to import: torch, trl and the
warehouse's libraries are imported inside the commands, so the GPU machine's environment runs them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

from tomforge.flows.commands.field_flags import FlagValues, field_flags
from tomforge.flows.commands.flags import SettingsHelp, WarehouseOption, flags_set, setting_option
from tomforge.flows.commands.terminal import console
from tomforge.rl.eval_settings import EvalSettings
from tomforge.rl.trl_settings import TrlSettings
from tomforge.rl.verl_backend import VerlSettings
from tomforge.schemas.errors import EvaluationFailed, MissingExtra, TrainingFailed

group = typer.Typer()


class Backend(str, Enum):
    trl = "trl"
    verl = "verl"


RL_EXTRAS = ("torch", "trl", "accelerate", "matplotlib")  # pyproject.toml's `rl` extra, as modules
RL_EXTRAS_HINT = "the RL stage needs the rl extras: pip install -e '.[rl]'"


def require_rl_extras(*modules: str) -> None:
    """Checked before anything is downloaded or loaded, so a missing extra is one line, not a traceback."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(f"{RL_EXTRAS_HINT} (missing: {', '.join(missing)})")


def check_training_licenses(dataset: str, revision: str | None, train_split: str, allow: bool) -> None:
    """The license guard before a training starts (schemas/rl/licenses.py): refused, or a warning when overridden."""
    from tomforge.rl.release import check_training_release

    for found in check_training_release(dataset, revision, train_split, allow):
        console.print(
            f"warning: {found} in {train_split}: its license forbids training (--allow-restricted-training)",
            soft_wrap=True,
        )


@group.command(cls=SettingsHelp)
@field_flags({"trl": TrlSettings, "verl": VerlSettings}, after="val_split")  # each field's flag: its declaration
def train(
    backend: Backend = typer.Option(Backend.trl, "--backend", "-b", help="trl (RLOO/GRPO) or verl (REINFORCE++)."),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Hub dataset repo ORG/NAME or a local release folder."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Release tag to download."),
    model: str = typer.Option(..., "--model", "-m", help="Model to start from: Hub id, model folder or .gguf file."),
    train_split: str = typer.Option(
        "all/train",
        "--train",
        help="CONFIG/SPLIT to train on (CONFIG/SPLIT:RENDERING: that rendering's rows only, docs/rl.md).",
    ),
    val_split: str = typer.Option("all/test", "--val", help="CONFIG/SPLIT to validate on (verl)."),
    gpus: int = typer.Option(
        1,
        "--gpus",
        min=1,
        help="GPUs per node: TRL runs one process per GPU (accelerate launch; docs/rl.md, Several GPUs), "
        "verl gets trainer.n_gpus_per_node.",
    ),
    nnodes: int = typer.Option(1, "--nnodes", min=1, help="verl: nodes of the Ray cluster."),
    accelerate_config: Optional[str] = typer.Option(
        None,
        "--accelerate-config",
        help="TRL with --gpus N on CUDA: ddp (the default), fsdp (rl/accelerate_*.yaml) or your own config file.",
    ),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="verl: submit as a Ray job to this cluster."),
    data_dir: Optional[str] = setting_option(
        "--data-dir",
        setting="tomforge.rl.stage:launch.data_dir",
        help="verl: where the job writes the RL parquet files.",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the full command and config; run nothing."),
    allow_restricted_training: bool = typer.Option(
        False,
        "--allow-restricted-training",
        help="Train on a split holding a source whose license forbids training anyway.",
    ),
    *,
    flags: FlagValues,
) -> None:
    """Train on a published release with RL (TRL on one or several GPUs, or verl on a Ray cluster). Unset flags
    take the backend's settings (`TrlSettings`, `VerlSettings`)."""
    _check_train_ready(backend, model, dry_run)
    from tomforge.rl import stage

    local = _licenses_checked(dataset, revision, train_split, allow_restricted_training, dry_run)
    settings = stage.make_settings(backend.value, model, _overrides(backend, flags), gpus=gpus, nnodes=nnodes)
    outcome = stage.launch(
        settings,
        dataset,
        revision,
        train_split,
        val_split,
        gpus=gpus,
        accelerate_config=accelerate_config,
        ray_address=ray_address,
        dry_run=dry_run,
        **flags_set(data_dir=data_dir),
    )
    _show_training(outcome, dry_run=dry_run, local=local)


def _check_train_ready(backend: Backend, model: str, dry_run: bool) -> None:
    """A TRL run (not a dry run, which only plans) needs the RL extras and a model it can find: checked before
    anything is downloaded or loaded."""
    from tomforge.rl.models import check_model_spec

    if backend is Backend.trl and not dry_run:
        require_rl_extras("torch", "trl", "accelerate")
        check_model_spec(model)


def _licenses_checked(dataset: str, revision: str | None, train_split: str, allow: bool, dry_run: bool) -> bool:
    """The license guard of `train`, run unless this is a dry run on a Hub release (not downloaded for a dry run;
    a local one is checked as the training would): whether the release is local."""
    local = Path(dataset).is_dir()
    if not dry_run or local:
        check_training_licenses(dataset, revision, train_split, allow)
    return local


def _overrides(backend: Backend, flags: FlagValues) -> dict[str, Any]:
    """The fields of the backend's settings that the given flags set. `--compile` is declared on `compile_layers`
    (its shown default) and sets `compile_rollouts` too."""
    overrides = flags.given(TrlSettings if backend is Backend.trl else VerlSettings)
    if backend is Backend.trl and "compile_layers" in overrides:
        overrides["compile_rollouts"] = overrides["compile_layers"]
    return overrides


def _show_training(outcome: dict[str, Any], *, dry_run: bool, local: bool) -> None:
    """What `train` prints: a dry run's plan (noting that a Hub release's licenses were not checked), or the
    steps trained; a training that exited non-zero is `TrainingFailed`."""
    if dry_run:
        unchecked = (
            "" if local else "\n(licenses of the train split: checked when the training starts, not in a dry run)"
        )
        sys.stdout.write(outcome["plan"] + unchecked + "\n")
        return
    if "steps" in outcome:
        console.print(f"trained {outcome['steps']} steps in {outcome['seconds']:.0f} s -> {outcome['output_dir']}")
    if outcome.get("exit_code"):
        raise TrainingFailed(f"training exited with status {outcome['exit_code']}")


@group.command("eval", cls=SettingsHelp)
@field_flags({"eval": EvalSettings}, after="limit")  # each field's flag: its declaration (rl/eval_settings.py)
def eval_(
    model: str = typer.Option(..., "--model", "-m", help="Model to evaluate: folder, .gguf file or Hub id."),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Hub dataset repo ORG/NAME or a local release folder."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Release tag."),
    splits: list[str] = typer.Option(
        ["all/test"],
        "--split",
        "-s",
        help="CONFIG/SPLIT to evaluate (repeatable; "
        "CONFIG/SPLIT:RENDERING: that rendering's rows, for the format-transfer block).",
    ),
    in_distribution: list[str] = typer.Option(
        [], "--in-distribution", help="Configs or CONFIG/SPLIT trained on (repeatable); the rest count as held-out."
    ),
    label: Optional[str] = typer.Option(
        None, "--label", help="Name of this model in the matrix (default: folder name)."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Items per split at most."),
    warehouse: Path = WarehouseOption,
    store: bool = typer.Option(True, "--store/--no-store", help="Write per-item results to the warehouse."),
    out: Path = typer.Option(Path("var/eval"), "--out", help="Folder for summary.json and the belief-order plot."),
    gpus: int = typer.Option(
        1,
        "--gpus",
        min=1,
        help="Processes, one per GPU: each generates every N-th batch of each split, the first gathers the rows "
        "(the same rows as one process).",
    ),
    *,
    flags: FlagValues,
) -> None:
    """Generate answers, score them with the training reward, store them, print the ID vs held-out matrix, each
    format's accuracy beside its chance, and the learning gate (rl/gate.py)."""
    given = dict(locals())  # the flags again, for the processes `--gpus N` starts
    from tomforge.rl import distributed

    refs = _check_eval_ready(model, store, splits)
    if gpus > 1 and not distributed.under_launcher():
        _launch_eval_processes(gpus, dataset, revision, given)
        return
    settings = flags.build(EvalSettings)  # the flags given, each declared on its EvalSettings field
    parts = _evaluate_here(model, dataset, revision, refs, in_distribution, label, limit, settings)
    if parts is None:  # not the first process: it handed its rows over
        return
    _report_eval(model, parts, settings.gate, out, warehouse if store else None)


def _check_eval_ready(model: str, store: bool, splits: list[str]) -> list[Any]:
    """What `eval` checks before it loads anything or starts a process: the RL extras, the lock timeout when it
    stores (a bad TOMFORGE_LOCK_TIMEOUT found now, not after the generation), the model's name or path and the
    splits, returned parsed."""
    from tomforge.rl.models import check_model_spec
    from tomforge.rl.release import SplitRef

    require_rl_extras("torch", "matplotlib")
    if store:
        from tomforge.warehouse.lock import timeout_from_env

        timeout_from_env()
    check_model_spec(model)
    return [SplitRef.parse(s) for s in splits]


def _launch_eval_processes(gpus: int, dataset: str, revision: str | None, given: dict[str, Any]) -> None:
    """`eval --gpus N`: the release downloaded once, before the processes read it, then N processes of `eval`
    started by torch's launcher (gathering over gloo only), each with the same flags."""
    from tomforge.rl import distributed
    from tomforge.rl.release import fetch_release

    fetch_release(dataset, revision)
    code = subprocess.call(
        [*distributed.launcher(gpus, cuda=False), "-m", "tomforge.flows.cli", "eval", *eval_arguments(given)]
    )
    if code:
        raise EvaluationFailed(f"the {gpus} evaluation processes exited with status {code}")


def _evaluate_here(
    model: str,
    dataset: str,
    revision: str | None,
    refs: list[Any],
    in_distribution: list[str],
    label: str | None,
    limit: int | None,
    settings: EvalSettings,
) -> list[Any] | None:
    """This process's share of `eval` (all of it in one process): its rows generated and scored, then every
    process's `(positions, rows, stats)` on the first process, None on the others."""
    from tomforge.rl import distributed
    from tomforge.rl.evaluate import GenerationStats, evaluate
    from tomforge.rl.models import ModelSourceError
    from tomforge.rl.release import fetch_release

    root = fetch_release(dataset, revision)
    stats = GenerationStats()
    shard = distributed.current_shard()
    positions: list[tuple[int, int]] = []
    if shard.world > 1:  # each process on its own GPU before the model loads
        distributed.init_process_group("gloo")
    try:
        rows = evaluate(
            model,
            root,
            refs,
            dataset=dataset,
            revision=revision,
            in_distribution=in_distribution,
            label=label,
            limit=limit,
            stats=stats,
            shard=shard if shard.world > 1 else None,
            positions=positions,
            batch_size=settings.batch_size,
            max_new_tokens=settings.max_new_tokens,
            backend=settings.backend,
        )
    except OSError as exc:  # what transformers raises for a model it cannot find or download
        raise ModelSourceError(f"{model}: cannot load the model: {str(exc).strip().splitlines()[0]}") from exc
    return distributed.gather_to_main((positions, rows, stats))


def _report_eval(model: str, parts: list[Any], gate: float, out: Path, warehouse: Path | None) -> None:
    """The first process's part of `eval`: every process's rows merged, summarized (with the learning gate),
    written under `out`, stored in `warehouse` (None: not stored) and printed as the matrix."""
    from tomforge.rl.evaluate import (
        GenerationStats,
        format_matrix,
        merge_shards,
        plot_by_order,
        store_results,
        summarize,
        write_rows,
        write_summary,
    )
    from tomforge.rl.trained_on import read_training_record
    from tomforge.warehouse.lock import LockBusy

    rows = merge_shards((where, part) for where, part, _ in parts)
    stats = GenerationStats(
        n_sequences=sum(s.n_sequences for _, _, s in parts),
        new_tokens=sum(s.new_tokens for _, _, s in parts),
        seconds=max(s.seconds for _, _, s in parts),  # side by side: the slowest process's time
    )
    labels = {row["label"] for row in rows}
    record = read_training_record(model) if Path(model).is_dir() else None
    summary = summarize(rows, training={name: record for name in labels}, threshold=gate)
    summary["generation"] = {
        "sequences": stats.n_sequences,
        "new_tokens": stats.new_tokens,
        "seconds": round(stats.seconds, 3),
        "tokens_per_s": round(stats.tokens_per_s, 1),
    }
    write_summary(summary, out / "summary.json")
    plot_by_order(summary, out / "accuracy_by_order.png")
    kept = write_rows(rows, out / "eval_rows.jsonl")  # on disk before the store: a busy lock loses nothing
    if warehouse is not None:
        try:
            stored = store_results(warehouse, rows)
        except LockBusy as busy:
            raise LockBusy(
                f"{busy}; the {len(rows)} evaluated rows are kept in {kept}, the summary beside it"
            ) from None
        console.print(f"stored {stored} rows in {warehouse} (eval_results)", highlight=False)
    sys.stdout.write(format_matrix(summary) + "\n")


def eval_arguments(given: dict[str, Any]) -> list[str]:
    """`tomforge eval`'s own arguments again (from its parameters and its `flags`), for the processes `--gpus N`
    starts."""
    args = ["--model", given["model"], "--dataset", given["dataset"], "--warehouse", str(given["warehouse"])]
    args += ["--out", str(given["out"]), "--store" if given["store"] else "--no-store"]
    for flag, name in (("--revision", "revision"), ("--label", "label"), ("--limit", "limit")):
        if given[name] is not None:
            args += [flag, str(given[name])]
    args += given["flags"].arguments()  # the EvalSettings flags given, in field order
    for flag, name in (("--split", "splits"), ("--in-distribution", "in_distribution")):
        for value in given[name]:
            args += [flag, value]
    return args
