"""Several GPUs of one host (issue 41), the parts that need no training: the launcher's command and the checked-in
accelerate configs as accelerate itself reads them, the evaluation's shards and their merge (worked out by hand),
and the rank helpers, with `gather_to_main` across two real processes on gloo. The trainings of two processes
against one are in tests/rl/test_rl_several_gpus.py."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tomforge.rl import distributed, stage  # noqa: E402
from tomforge.rl.evaluate import merge_shards  # noqa: E402
from tomforge.rl.trl_backend import TrlSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- the launcher and the configs (no processes)


def test_launcher_is_accelerate_with_the_checked_in_configs_on_cuda_and_torchrun_on_the_cpu(tmp_path: Path) -> None:
    ddp = distributed.launcher(4, cuda=True)
    assert ddp[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert Path(ddp[ddp.index("--config_file") + 1]) == (ROOT / "rl" / "accelerate_ddp.yaml").resolve()
    assert ddp[ddp.index("--num_processes") + 1] == "4" and ddp[ddp.index("--num_machines") + 1] == "1"
    assert ddp[ddp.index("--mixed_precision") + 1] == "no"
    fsdp = distributed.launcher(2, "fsdp", bf16=True, cuda=True)
    assert Path(fsdp[fsdp.index("--config_file") + 1]) == (ROOT / "rl" / "accelerate_fsdp.yaml").resolve()
    assert fsdp[fsdp.index("--mixed_precision") + 1] == "bf16"
    own = tmp_path / "mine.yaml"
    assert distributed.launcher(2, str(own), cuda=True)[4] == str(own)
    assert distributed.launcher(3, "fsdp", cuda=False) == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "3",
    ]
    settings = TrlSettings(model="m", num_generations=2, per_device_train_batch_size=4)
    one = stage.plan_trl(settings, "org/tom", None, "tomforge_gen/train")
    assert one.command[1:4] == ["-m", "tomforge.rl.launch", "trl"]  # one GPU: this process, no launcher
    many = stage.plan_trl(settings, "org/tom", None, "tomforge_gen/train", n_gpus=8, accelerate_config="fsdp")
    here = distributed.launcher(8, "fsdp")  # this machine's launcher: torchrun without CUDA
    assert many.command[: len(here)] == here
    assert many.command[len(here) :][:3] == ["-m", "tomforge.rl.launch", "trl"]


@pytest.mark.parametrize("name", ["ddp", "fsdp"])
def test_accelerate_reads_the_checked_in_configs_as_documented(name: str) -> None:
    """accelerate's own parser and environment builder, given the command `tomforge train --gpus 4` would run."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    command = distributed.launcher(4, name, bf16=True, cuda=True)
    args = launch_command_parser().parse_args([*command[3:], "-m", "tomforge.rl.launch"])
    args, _, _ = _validate_launch_command(args)
    env = prepare_multi_gpu_env(args)
    assert args.num_processes == 4 and env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    if name == "ddp":
        assert args.multi_gpu and not args.use_fsdp and "ACCELERATE_USE_FSDP" not in env
    else:
        assert args.use_fsdp and env["ACCELERATE_USE_FSDP"] == "true" and env["FSDP_VERSION"] == "2"
        assert env["FSDP_AUTO_WRAP_POLICY"] == "TRANSFORMER_BASED_WRAP"
        assert env["FSDP_STATE_DICT_TYPE"] == "FULL_STATE_DICT"  # a plain model folder at the end


def test_a_shard_takes_every_nth_batch_of_the_one_process_order() -> None:
    order = [4, 0, 3, 1, 2]  # five items sorted by length; batches of 2: [4, 0], [3, 1], [2]
    assert distributed.Shard(0, 2).of_batches(order, 2) == [4, 0, 2]
    assert distributed.Shard(1, 2).of_batches(order, 2) == [3, 1]
    assert distributed.Shard(0, 3).of_batches(order, 2) == [4, 0]
    assert distributed.Shard(1, 3).of_batches(order, 2) == [3, 1]
    assert distributed.Shard(2, 3).of_batches(order, 2) == [2]
    assert distributed.Shard(2, 4).of_batches(order, 2) == [2]
    assert distributed.Shard(3, 4).of_batches(order, 2) == []  # more processes than batches
    assert distributed.Shard(0, 1).of_batches(order, 2) == order
    assert distributed.Shard(1, 2).of_batches(order, 1) == [0, 1]
    with pytest.raises(ValueError, match="rank 2 is not one of the 2"):
        distributed.Shard(2, 2)
    with pytest.raises(ValueError, match="rank -1"):
        distributed.Shard(-1, 2)
    with pytest.raises(ValueError, match=r"^batch_size must be at least 1$"):
        distributed.Shard(0, 2).of_batches(order, 0)


def test_merge_shards_restores_split_then_item_order_and_refuses_an_item_twice() -> None:
    first = ([(1, 0), (0, 2), (0, 0)], [{"r": "b0"}, {"r": "a2"}, {"r": "a0"}])
    second = ([(0, 1), (1, 1)], [{"r": "a1"}, {"r": "b1"}])
    assert [row["r"] for row in merge_shards([first, second])] == ["a0", "a1", "a2", "b0", "b1"]
    with pytest.raises(ValueError, match=r"item \(0, 1\) was evaluated by two processes"):
        merge_shards([first, second, ([(0, 1)], [{"r": "again"}])])
    with pytest.raises(ValueError):  # a position without its row
        merge_shards([([(0, 0), (0, 1)], [{"r": "a0"}])])


def test_rank_and_world_come_from_the_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert (distributed.rank(), distributed.world_size(), distributed.is_main_process()) == (0, 1, True)
    assert not distributed.under_launcher() and distributed.current_shard() == distributed.Shard(0, 1)
    assert distributed.gather_to_main("alone") == ["alone"]
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (distributed.rank(), distributed.world_size(), distributed.is_main_process()) == (1, 2, False)
    assert distributed.under_launcher() and distributed.current_shard() == distributed.Shard(1, 2)


def gather_in(process: int, port: int, out: str) -> None:
    """The second of two processes: join over gloo as the launcher's environment says, gather a value."""
    import os

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(process), LOCAL_RANK=str(process))
    os.environ["WORLD_SIZE"] = "2"
    gathered = distributed.gather_to_main({"rank": process, "rows": list(range(process + 2))})
    Path(out, f"{process}.json").write_text(json.dumps(gathered))
    distributed.init_process_group().destroy_process_group()


def test_gather_to_main_hands_every_part_to_the_first_process_in_rank_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process is rank 0, a spawned one rank 1, on gloo over loopback."""
    import torch.distributed as dist
    import torch.multiprocessing as mp

    with socket.socket() as s:  # a free loopback port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name, value in dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", LOCAL_RANK="0").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WORLD_SIZE", "2")
    other = mp.get_context("spawn").Process(target=gather_in, args=(1, port, str(tmp_path)), daemon=True)
    other.start()
    got: list = []
    # in a thread, so that a gather that never returns fails this test in 2 minutes instead of hanging it
    mine = threading.Thread(target=lambda: got.append(distributed.gather_to_main({"rank": 0, "rows": [0, 1]})))
    mine.daemon = True
    mine.start()
    mine.join(timeout=120)
    other.join(timeout=30)
    if other.is_alive():
        other.kill()
    assert not mine.is_alive() and len(got) == 1, "the gather did not return"
    assert dist.get_backend() == "gloo"
    dist.destroy_process_group()
    first = got[0]
    assert other.exitcode == 0
    assert first == [{"rank": 0, "rows": [0, 1]}, {"rank": 1, "rows": [0, 1, 2]}]
    assert json.loads((tmp_path / "1.json").read_text()) is None  # the others hand their part over


class FakeDist:
    """What `init_process_group` asks of torch.distributed, recorded."""

    def __init__(self, initialized: bool) -> None:
        self.initialized, self.calls = initialized, []

    def is_initialized(self) -> bool:
        return self.initialized

    def init_process_group(self, backend) -> None:
        self.calls.append(("init", backend))


@pytest.mark.parametrize(
    "cuda, backend, initialized, calls",
    [
        (False, None, False, [("init", "gloo")]),
        (True, None, False, [("device", 3), ("init", "nccl")]),
        (True, "gloo", False, [("device", 3), ("init", "gloo")]),  # the evaluation: gloo, each process its own GPU
        (False, "gloo", False, [("init", "gloo")]),
        (True, None, True, []),  # joined already: nothing again
    ],
)
def test_init_process_group_picks_the_backend_and_the_gpu(
    monkeypatch: pytest.MonkeyPatch, cuda: bool, backend, initialized: bool, calls: list
) -> None:
    import torch
    import torch.distributed

    fake = FakeDist(initialized)
    monkeypatch.setattr(torch.distributed, "is_initialized", fake.is_initialized)
    monkeypatch.setattr(torch.distributed, "init_process_group", fake.init_process_group)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: fake.calls.append(("device", index)))
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert distributed.init_process_group(backend) is torch.distributed
    assert fake.calls == calls
    monkeypatch.delenv("LOCAL_RANK")
    fake.calls.clear()
    fake.initialized = initialized
    distributed.init_process_group(backend)
    assert fake.calls == ([("device", 0), *calls[1:]] if cuda and not initialized else calls)  # LOCAL_RANK unset: 0


def test_cuda_available_follows_torch_and_is_false_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert distributed.cuda_available() is True
    assert distributed.launcher(2)[:3] == [sys.executable, "-m", "accelerate.commands.launch"]  # CUDA: accelerate
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert distributed.cuda_available() is False
    assert distributed.launcher(2)[2] == "torch.distributed.run"
    monkeypatch.setitem(sys.modules, "torch", None)  # not installed: `import torch` raises ImportError
    assert distributed.cuda_available() is False


# (train_batch_size, rollout_n, n_gpus_per_node, nnodes) -> accepted, worked out by hand: 64 x 8 = 512 splits over
# 8 x 2 = 16 GPUs; 3 x 2 = 6 completions split over 3 or 6 GPUs, not over 4, nor 2 x 2
GPU_SPLITS = [((64, 8, 8, 2), True), ((3, 2, 3, 1), True), ((3, 2, 4, 1), False), ((3, 2, 2, 2), False)]
GPU_SPLITS += [((3, 2, 6, 1), True), ((5, 2, 1, 1), True)]


def split_settings(batch: int, n: int, gpus: int, nodes: int):
    from tomforge.rl.verl_backend import VerlSettings

    return VerlSettings(
        model="m",
        train_files=["t.parquet"],
        val_files=["v.parquet"],
        train_batch_size=batch,
        rollout_n=n,
        ppo_mini_batch_size=1,
        n_gpus_per_node=gpus,
        nnodes=nodes,
    )


@pytest.mark.parametrize("split, accepted", GPU_SPLITS)
def test_verl_gpus_must_split_a_steps_completions_evenly(split: tuple[int, int, int, int], accepted: bool) -> None:
    from tomforge.rl.verl_backend import VerlConfigError, compose_overrides

    settings = split_settings(*split)
    if accepted:
        overrides = compose_overrides(settings)
        assert (overrides["trainer.n_gpus_per_node"], overrides["trainer.nnodes"]) == split[2:]
    else:
        with pytest.raises(
            VerlConfigError,
            match="^"
            + re.escape(
                f"a step's {split[0] * split[1]} completions (batch size x rollout n) do not split evenly over "
                f"{split[2] * split[3]} GPUs (verl's validate_config)"
            )
            + "$",
        ):
            compose_overrides(settings)


def test_train_gpus_reaches_verls_trainer_settings() -> None:
    settings = stage.make_settings("verl", "m", {"train_batch_size": 16}, gpus=4, nnodes=2)
    plan = stage.plan_verl(settings, "org/tom", None, "all/train", "all/test", "var/d")
    assert plan.verl_command is not None
    assert {"trainer.n_gpus_per_node=4", "trainer.nnodes=2"} <= set(plan.verl_command)


VERL_PYTHON = Path(os.environ.get("TOMFORGE_VERL_PYTHON", "/tmp/verl-venv/bin/python"))


@pytest.mark.skipif(not VERL_PYTHON.exists(), reason=f"no verl venv at {VERL_PYTHON} (docs/rl.md: the verl contract)")
def test_verls_own_validation_draws_the_same_line(tmp_path: Path) -> None:
    """verl 0.9.1's validate_config, on the config Hydra composes from verl's files with each case's overrides
    (the tomforge check bypassed): it refuses exactly the cases tomforge refuses."""
    import subprocess

    from tomforge.rl.verl_backend import compose_overrides, package_parent

    cases = []
    for split, _ in GPU_SPLITS:
        bigger = dataclasses.replace(split_settings(*split), n_gpus_per_node=1, nnodes=1)
        overrides = compose_overrides(bigger)  # composed where tomforge accepts it, then given the case's GPUs
        overrides.update({"trainer.n_gpus_per_node": split[2], "trainer.nnodes": split[3]})
        cases.append(overrides)
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    script = (
        "import json, sys\n"
        "from tomforge.rl.verl_probe import compose_config\n"
        "verdicts = []\n"
        "for overrides in json.load(open('cases.json')):\n"
        "    try:\n"
        "        compose_config(overrides)\n"
        "        verdicts.append(True)\n"
        "    except AssertionError as error:\n"
        "        verdicts.append(str(error))\n"
        "json.dump(verdicts, open('verdicts.json', 'w'))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(package_parent()), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [str(VERL_PYTHON), "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = json.loads((tmp_path / "verdicts.json").read_text())
    assert [v is True for v in verdicts] == [accepted for _, accepted in GPU_SPLITS], verdicts
    assert all("real_train_batch_size" in v for v in verdicts if v is not True)


def test_generation_order_sorts_as_the_generator_it_picks(tmp_path: Path) -> None:
    """Three prompts whose order by characters and by tokens differ: a run of 16 z's the tokenizer learned as one
    token, six one-letter words (six tokens, 11 characters) and two (two tokens, 3 characters)."""
    from tomforge.rl.evaluate import generation_order
    from tomforge.rl.tiny_model import build_model, build_tokenizer

    tokenizer = build_tokenizer(["z" * 16] * 50 + ["q w e r t y x"], vocab_size=300)
    model = build_model(tokenizer, hidden_size=16, num_layers=1)
    contents = ("z" * 16, "q w e r t y", "x y")
    prompts = [[{"role": "user", "content": c}] for c in contents]
    tokens = [len(tokenizer(c, add_special_tokens=False)["input_ids"]) for c in contents]
    assert tokens[0] < tokens[2] < tokens[1]  # the premise: by tokens z's, x y, the six words
    assert generation_order("m", prompts, "hf", model, tokenizer) == [2, 1, 0]  # by characters: 3, 11, 16
    assert generation_order("m", prompts, "fast", model, tokenizer) == [0, 2, 1]  # by tokens
    assert generation_order("m", prompts, "auto", model, tokenizer) == [0, 2, 1]  # a model given: the fast path
    assert generation_order("m", prompts, "vllm") == [0, 1, 2]  # vLLM batches on its own: input order
    # two prompts of one length keep their input order (the generators' sort is stable)
    same = [[{"role": "user", "content": c}] for c in ("ab", "x", "cd")]
    assert generation_order("m", same, "hf", model, tokenizer) == [1, 0, 2]
    # from a folder: the model and tokenizer as the generator loads them; a model given without its tokenizer
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    assert generation_order(str(tmp_path / "m"), prompts, "hf") == [2, 1, 0]
    assert generation_order(str(tmp_path / "m"), prompts, "fast") == [0, 2, 1]
    assert generation_order(str(tmp_path / "m"), prompts, "fast", model) == [0, 2, 1]


def test_generation_order_of_a_model_the_fast_path_refuses_is_transformers_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tomforge.rl import fastgen
    from tomforge.rl.evaluate import generation_order
    from tomforge.rl.tiny_model import build_model, build_tokenizer

    def refuse(model) -> None:
        raise fastgen.UnsupportedModel("planted")

    monkeypatch.setattr(fastgen, "check_supported", refuse)
    tokenizer = build_tokenizer(["z" * 16] * 50 + ["q w e r t y x"], vocab_size=300)
    model = build_model(tokenizer, hidden_size=16, num_layers=1)
    prompts = [[{"role": "user", "content": c}] for c in ("z" * 16, "q w e r t y", "x y")]
    assert generation_order("m", prompts, "auto", model, tokenizer) == [2, 1, 0]  # falls back to characters


def test_eval_arguments_repeat_the_command_line_for_the_processes() -> None:
    from tomforge.flows.commands.field_flags import FlagValues, field_options
    from tomforge.flows.commands.rl import eval_arguments
    from tomforge.rl.eval_settings import EvalSettings

    options = tuple(field_options({"eval": EvalSettings}))

    def flags(**values: object) -> FlagValues:
        return FlagValues(options, values)

    given = dict(
        model="m",
        dataset="org/tom",
        warehouse=Path("w.duckdb"),
        out=Path("var/e"),
        store=False,
        revision="v1",
        label=None,
        limit=5,
        flags=flags(batch_size=None, max_new_tokens=7, generator="hf", gate=0.5),
        splits=["a/test", "b/test:second_person"],
        in_distribution=["a"],
    )
    assert eval_arguments(given) == [
        *("--model", "m", "--dataset", "org/tom", "--warehouse", "w.duckdb", "--out", "var/e", "--no-store"),
        *("--revision", "v1", "--limit", "5", "--max-new-tokens", "7", "--generator", "hf", "--gate", "0.5"),
        *("--split", "a/test", "--split", "b/test:second_person", "--in-distribution", "a"),
    ]
    given.update(store=True, revision=None, label="x", limit=None)
    given.update(flags=flags(batch_size=8, max_new_tokens=7, generator=None, gate=None))
    given.update(splits=["a/test"], in_distribution=[])
    assert eval_arguments(given) == [
        *("--model", "m", "--dataset", "org/tom", "--warehouse", "w.duckdb", "--out", "var/e", "--store"),
        *("--label", "x", "--batch-size", "8", "--max-new-tokens", "7", "--split", "a/test"),
    ]


def test_generation_order_follows_the_generator_auto_picks_and_the_tokenizer_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """auto: vLLM (input order) only for a model named by path where vLLM is; a tokenizer given is the one that
    counts, also when the model is loaded from its folder."""
    from tomforge.rl import evaluate
    from tomforge.rl.tiny_model import build_model, build_tokenizer

    tokenizer = build_tokenizer(["z" * 16] * 50 + ["q w e r t y x"], vocab_size=300)
    model = build_model(tokenizer, hidden_size=16, num_layers=1)
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    folder = str(tmp_path / "m")
    prompts = [[{"role": "user", "content": c}] for c in ("z" * 16, "q w e r t y", "x y")]
    monkeypatch.setattr(evaluate, "_has_vllm", lambda: True)
    assert evaluate.generation_order(folder, prompts, "auto") == [0, 1, 2]  # vLLM where it is
    assert evaluate.generation_order(folder, prompts, "auto", model, tokenizer) == [0, 2, 1]  # a model: fast
    assert evaluate.generation_order(folder, prompts, "fast") == [0, 2, 1]  # asked for: fast, vLLM or not
    assert evaluate.generation_order(folder, prompts, "hf") == [2, 1, 0]
    monkeypatch.setattr(evaluate, "_has_vllm", lambda: False)
    assert evaluate.generation_order(folder, prompts, "auto") == [0, 2, 1]  # no vLLM: the fast path
    # a tokenizer that never learned the z's: sixteen tokens, so by its count the z's come last
    plain = build_tokenizer(["q w e r t y x"] * 5, vocab_size=270)
    assert len(plain("z" * 16, add_special_tokens=False)["input_ids"]) == 16
    assert evaluate.generation_order(folder, prompts, "fast", None, plain) == [2, 1, 0]
