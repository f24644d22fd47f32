"""flows/commands/rl.py (`tomforge train` and `eval`) against hand-worked values (issue 38: the mutants mutmut left
alive): the extras named when missing, the license warning line, what each flag reaches the RL stage and the
evaluation with, `eval --gpus N`'s command line, a process's share of an evaluation, and the report's figures and
files. The stage, the evaluation and the launcher are replaced by recorders (the real runs are tests/test_rl_*.py,
which train and generate); tests/flows/test_train_command_parts.py has `train`'s parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tomforge.rl.distributed as distributed
import tomforge.rl.evaluate as evaluate
import tomforge.rl.release as release
import tomforge.rl.stage as stage
from tomforge.flows.cli import app
from tomforge.flows.commands import rl
from tomforge.rl.distributed import Shard
from tomforge.rl.evaluate import GenerationStats
from tomforge.rl.release import SplitRef
from tomforge.rl.trl_settings import TrlSettings
from tomforge.rl.verl_backend import VerlSettings
from tomforge.schemas.errors import MissingExtra
from tomforge.warehouse.lock import LockBusy


def test_rl_extras_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    assert rl.RL_EXTRAS == ("torch", "trl", "accelerate", "matplotlib")
    asked: list[str] = []

    def find_spec(name: str) -> object | None:
        asked.append(name)
        return None if name in ("trl", "matplotlib") else object()

    monkeypatch.setattr(rl.importlib.util, "find_spec", find_spec)
    rl.require_rl_extras("torch", "accelerate")
    assert asked == ["torch", "accelerate"]
    with pytest.raises(MissingExtra) as caught:
        rl.require_rl_extras("torch", "trl", "accelerate", "matplotlib")
    assert str(caught.value) == "the RL stage needs the rl extras: pip install -e '.[rl]' (missing: trl, matplotlib)"


def test_license_warning_line(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple] = []
    monkeypatch.setattr(release, "check_training_release", lambda *a: seen.append(a) or ["fantom (CC-BY-NC)", "x"])
    printed: list[tuple] = []
    monkeypatch.setattr(rl.console, "print", lambda text, **kw: printed.append((text, kw)))
    rl.check_training_licenses("org/d", "v1", "all/train", True)
    assert seen == [("org/d", "v1", "all/train", True)]
    line = "warning: {} in all/train: its license forbids training (--allow-restricted-training)"
    assert printed == [(line.format("fantom (CC-BY-NC)"), {"soft_wrap": True}), (line.format("x"), {"soft_wrap": True})]


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    monkeypatch.setattr(rl, "check_training_licenses", lambda *a: calls.append(("licenses", *a)))
    monkeypatch.setattr(stage, "launch", lambda *a, **kw: calls.append(("launch", a, kw)) or {"plan": "PLAN"})
    return calls


def test_train_dry_run_defaults(launched: list[tuple]) -> None:
    result = CliRunner().invoke(app, ["train", "-d", "org/x", "-m", "org/m", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output == "PLAN\n(licenses of the train split: checked when the training starts, not in a dry run)\n"
    assert launched == [
        (
            "launch",
            (TrlSettings(model="org/m"), "org/x", None, "all/train", "all/test"),
            {"gpus": 1, "accelerate_config": None, "ray_address": None, "dry_run": True},
        )
    ]


def test_train_flags_reach_the_stage(launched: list[tuple], tmp_path: Path) -> None:
    args = ["train", "-b", "verl", "-d", str(tmp_path), "-m", "org/m", "--revision", "v", "--train", "a/b"]
    args += ["--val", "c/d", "--gpus", "2", "--nnodes", "3", "--accelerate-config", "fsdp", "--ray-address", "r"]
    args += ["--data-dir", "dd", "--dry-run", "--allow-restricted-training", "--epochs", "4"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output == "PLAN\n"  # a local release: its licenses were checked
    settings = VerlSettings(model="org/m", train_files=[], val_files=[], n_gpus_per_node=2, nnodes=3, total_epochs=4)
    assert launched == [
        ("licenses", str(tmp_path), "v", "a/b", True),
        (
            "launch",
            (settings, str(tmp_path), "v", "a/b", "c/d"),
            {"gpus": 2, "accelerate_config": "fsdp", "ray_address": "r", "dry_run": True, "data_dir": "dd"},
        ),
    ]


@pytest.fixture
def evaluation(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """Every call `eval` makes outside the command, recorded; one process, rows labelled by the model."""
    seen: dict[str, list] = {name: [] for name in ("extras", "model", "fetch", "evaluate", "summarize", "files")}
    seen.update(store=[], call=[], init=[])
    monkeypatch.setattr(rl, "require_rl_extras", lambda *m: seen["extras"].append(m))
    monkeypatch.setattr("tomforge.rl.models.check_model_spec", lambda model: seen["model"].append(model))
    monkeypatch.setattr(release, "fetch_release", lambda d, r: seen["fetch"].append((d, r)) or Path("root"))
    monkeypatch.setattr(distributed, "under_launcher", lambda: False)
    monkeypatch.setattr(distributed, "current_shard", lambda: Shard(0, 1))
    monkeypatch.setattr(distributed, "init_process_group", lambda backend: seen["init"].append(backend))
    monkeypatch.setattr(distributed, "launcher", lambda gpus, cuda=None: ["launch", f"n={gpus}", f"cuda={cuda}"])

    def fake_evaluate(model: str, root: Path, refs: list, **kw: Any) -> list[dict]:
        seen["evaluate"].append((model, root, refs, kw))
        kw["stats"].n_sequences, kw["stats"].new_tokens, kw["stats"].seconds = 3, 30, 2.34567
        kw["positions"].append((0, 0))
        return [{"label": kw["label"] or "mine", "id": 1}]

    monkeypatch.setattr(evaluate, "evaluate", fake_evaluate)
    monkeypatch.setattr(evaluate, "merge_shards", lambda parts: [row for _, rows in parts for row in rows])
    monkeypatch.setattr(evaluate, "summarize", lambda rows, **kw: seen["summarize"].append((rows, kw)) or {})
    monkeypatch.setattr(evaluate, "write_summary", lambda s, path: seen["files"].append(("summary", dict(s), path)))
    monkeypatch.setattr(evaluate, "plot_by_order", lambda s, path: seen["files"].append(("plot", dict(s), path)))
    monkeypatch.setattr(evaluate, "write_rows", lambda rows, path: seen["files"].append(("rows", rows, path)) or path)
    monkeypatch.setattr(evaluate, "store_results", lambda w, rows: seen["store"].append((w, rows)) or len(rows))
    monkeypatch.setattr(evaluate, "format_matrix", lambda s: "MATRIX" if "generation" in s else "no summary")
    monkeypatch.setattr("tomforge.rl.trained_on.read_training_record", lambda model: {"from": model})
    monkeypatch.setattr(rl.subprocess, "call", lambda command: seen["call"].append(command) or 0)
    return seen


def test_eval_defaults(evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x"])
    assert result.exit_code == 0, result.output
    assert result.output == "stored 1 rows in var/warehouse.duckdb (eval_results)\nMATRIX\n"
    assert evaluation["extras"] == [("torch", "matplotlib")] and evaluation["model"] == ["org/m"]
    assert evaluation["fetch"] == [("org/x", None)] and evaluation["init"] == [] and evaluation["call"] == []
    ((model, root, refs, kw),) = evaluation["evaluate"]
    assert (model, root, refs) == ("org/m", Path("root"), [SplitRef("all", "test")])
    assert kw.pop("stats") == GenerationStats(3, 30, 2.34567) and kw.pop("positions") == [(0, 0)]
    expected = {"dataset": "org/x", "revision": None, "in_distribution": [], "label": None, "limit": None}
    # eval hands its settings flags to `evaluate` (issue 39: EvalSettings), at their documented defaults
    assert kw == {**expected, "shard": None, "backend": "auto", "batch_size": 64, "max_new_tokens": 256}
    rows = [{"label": "mine", "id": 1}]
    assert evaluation["summarize"] == [
        (rows, {"training": {"mine": None}, "threshold": 0.9})
    ]  # not a folder: no training record; the gate at its documented 0.90
    generation = {"sequences": 3, "new_tokens": 30, "seconds": 2.346, "tokens_per_s": 12.8}  # 30 / 2.34567 = 12.79
    assert evaluation["files"] == [
        ("summary", {"generation": generation}, Path("var/eval/summary.json")),
        ("plot", {"generation": generation}, Path("var/eval/accuracy_by_order.png")),
        ("rows", rows, Path("var/eval/eval_rows.jsonl")),
    ]
    assert evaluation["store"] == [(Path("var/warehouse.duckdb"), rows)]


def test_eval_flags_reach_the_evaluation(evaluation: dict[str, list], tmp_path: Path) -> None:
    args = ["eval", "-m", str(tmp_path), "-d", "org/x", "--revision", "v", "-s", "a/b:dialogue", "-s", "c/d"]
    args += ["--in-distribution", "a", "--label", "L", "--limit", "5", "--batch-size", "8", "--max-new-tokens", "16"]
    args += ["--generator", "hf", "--gate", "0.5", "--no-store", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output == "MATRIX\n" and evaluation["store"] == [] and evaluation["fetch"] == [("org/x", "v")]
    ((_, _, refs, kw),) = evaluation["evaluate"]
    assert refs == [SplitRef("a", "b", "dialogue"), SplitRef("c", "d")]
    assert {k: kw[k] for k in ("revision", "in_distribution", "label", "limit", "batch_size")} == {
        "revision": "v",
        "in_distribution": ["a"],
        "label": "L",
        "limit": 5,
        "batch_size": 8,
    }
    assert (kw["max_new_tokens"], kw["backend"]) == (16, "hf")
    assert evaluation["summarize"] == [
        ([{"label": "L", "id": 1}], {"training": {"L": {"from": str(tmp_path)}}, "threshold": 0.5})
    ]
    assert [f[-1] for f in evaluation["files"]] == [
        tmp_path / "o" / n for n in ("summary.json", "accuracy_by_order.png", "eval_rows.jsonl")
    ]


def test_eval_checks_the_lock_timeout_only_when_it_stores(
    evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "soon")
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x"])
    assert result.exit_code == 2 and "TOMFORGE_LOCK_TIMEOUT='soon'" in result.output
    assert evaluation["model"] == [] and evaluation["fetch"] == []  # before anything else
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x", "--no-store"])
    assert result.exit_code == 0, result.output


def test_eval_refuses_a_bad_split_before_loading(evaluation: dict[str, list]) -> None:
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x", "-s", "nosplit", "--no-store"])
    assert result.exit_code == 2 and "'nosplit': expected CONFIG/SPLIT" in result.output
    assert evaluation["fetch"] == []


@pytest.mark.parametrize("code", [0, 3])
def test_eval_on_several_gpus_starts_the_processes(
    evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    monkeypatch.setattr(rl.subprocess, "call", lambda command: evaluation["call"].append(command) or code)
    args = ["eval", "-m", "org/m", "-d", "org/x", "--gpus", "2", "--no-store", "--revision", "v"]
    result = CliRunner().invoke(app, args)
    assert evaluation["fetch"] == [("org/x", "v")] and evaluation["evaluate"] == []  # downloaded once, here
    assert evaluation["call"] == [
        ["launch", "n=2", "cuda=False", "-m", "tomforge.flows.cli", "eval"]
        + ["--model", "org/m", "--dataset", "org/x", "--warehouse", "var/warehouse.duckdb", "--out", "var/eval"]
        + ["--no-store", "--revision", "v", "--split", "all/test"]
    ]
    if code:
        assert result.exit_code == 1 and "the 2 evaluation processes exited with status 3" in result.output
    else:
        assert result.exit_code == 0 and result.output == ""


@pytest.mark.parametrize("rank", [0, 1])
def test_a_launched_process_evaluates_its_shard(
    evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch, rank: int
) -> None:
    monkeypatch.setattr(distributed, "under_launcher", lambda: True)
    monkeypatch.setattr(distributed, "current_shard", lambda: Shard(rank, 2))
    other = ([(1, 0)], [{"label": "mine", "id": 2}], GenerationStats(1, 5, 4.0))
    monkeypatch.setattr(distributed, "gather_to_main", lambda part: [part, other] if rank == 0 else None)
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x", "--gpus", "2", "--no-store"])
    assert result.exit_code == 0, result.output
    assert evaluation["call"] == [] and evaluation["init"] == ["gloo"]
    assert evaluation["evaluate"][0][3]["shard"] == Shard(rank, 2)
    if rank:
        assert result.output == "" and evaluation["summarize"] == []
        return
    assert result.output == "MATRIX\n"
    assert evaluation["summarize"][0][0] == [{"label": "mine", "id": 1}, {"label": "mine", "id": 2}]
    generation = {"sequences": 4, "new_tokens": 35, "seconds": 4.0, "tokens_per_s": 8.8}  # 35 / 4.0 = 8.75
    assert evaluation["files"][0][1] == {"generation": generation}


def test_a_model_that_cannot_load_is_one_line(evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*a: Any, **kw: Any) -> None:
        raise OSError("  org/m is not a local folder\nand not on the Hub  ")

    monkeypatch.setattr(evaluate, "evaluate", missing)
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x", "--no-store"])
    assert result.exit_code == 2
    assert result.output == "error: org/m: cannot load the model: org/m is not a local folder\n"


def test_a_busy_warehouse_keeps_the_rows(evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)

    def busy(warehouse: Path, rows: list) -> int:
        raise LockBusy("w.duckdb is locked by pid 7 after 0 s")

    monkeypatch.setattr(evaluate, "store_results", busy)
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x", "--out", "o"])
    assert result.exit_code == 9
    assert result.output == (
        "error: w.duckdb is locked by pid 7 after 0 s; the 1 evaluated rows are kept in o/eval_rows.jsonl, "
        "the summary beside it\n"
    )


def test_the_stored_line_is_printed_plain(evaluation: dict[str, list], monkeypatch: pytest.MonkeyPatch) -> None:
    """No rich highlighting of the numbers and path in the stored line (a terminal would colour them)."""
    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)
    printed: list[tuple] = []
    monkeypatch.setattr(rl.console, "print", lambda text, **kw: printed.append((text, kw)))
    result = CliRunner().invoke(app, ["eval", "-m", "org/m", "-d", "org/x", "-w", "w.duckdb"])
    assert result.exit_code == 0, result.output
    assert printed == [("stored 1 rows in w.duckdb (eval_results)", {"highlight": False})]
