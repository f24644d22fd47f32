"""The rationale experiment (issue 27, item 4), GPU side: does supervision with belief-state rationales teach a
135M model to track beliefs, where answer-only supervision and outcome-only RL did not?

    python -m experiments.rationale_experiment run --release out/rexp/release --model SmolLM2-135M-Instruct.Q4_1.gguf \
        --work /tmp/rexp --seeds 0,1,2 --deadline-s 540

Arms (same SFT budget for every arm; the RL arms add the same RL budget on top of the rationale arm's model of
the same seed):
- `answer-only`: SFT on the controlled generator's training split, target `<think>neutral</think><answer>X</answer>`;
- `rationale`: the same items, the `events` rationale inside `<think>` (the form the pilots favoured,
  docs/rationales.md; pinned, so run 7 repeats, while the recipe's default form is now `curriculum`);
- `rationale-templated`: the same, on the generator with `controls=False`;
- `rationale-rl`: the rationale model, then TRL RLOO with the outcome reward (format + correctness);
- `rationale-rl-process`: the same with the process reward added (`RewardWeights.process`);
- `rationale-beliefs`, `rationale-curriculum`: the `rationale` arm with the other text forms of
  `generators.rationale_text.FORMS` (run 9: which form to keep), evaluated with room for their longer texts;
- `rationale-curriculum-rl-process`: the curriculum model, then RL with outcome + process reward (run 11);
- `answer-only-Nk`, `curriculum-Nk`, `events-Nk`, `steps-Nk`: the scaling curve (issue 37), SFT on N examples of
  one training split with that target (`steps`: the form whose order k is k applications of one step).

Every model is evaluated (greedy, the fast path) on controlled held-out orders 0-3 and 4-6 (never trained),
templated held-out orders 0-3, HiToM's held-out stories and order 4, and the ToMi test sample; the rows, with
their trace-fidelity columns, go to `<job>/eval.parquet`; `experiments.rationale_report` makes the metrics.

The work is a queue of jobs (`sft`, `rl`, `eval` per arm and seed) run as processes side by side (a 135M model
leaves an H200 mostly idle) up to `--parallel`, each started only when what it needs is done and the time it is
expected to take fits before `--deadline-s`; a job done in an earlier call (the machine keeps `/tmp` while warm)
is not run again, one cut by the deadline is run again from the start. `--in-process` runs the jobs one after
another in this process (the CPU smoke test: one import of torch instead of one per job).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.demo import peak_gpu_gb

EVAL_SPLITS = (
    "tomforge_gen/test_orders0to3",
    "tomforge_gen/test_orders4to6",
    "tomforge_gen/test_templated",
    "hitom/test_stories",
    "hitom/test_order4",
    "tomi/test",
)
IN_DISTRIBUTION = ("tomforge_gen/test_orders0to3",)  # same generator and orders as the training splits


@dataclass(frozen=True)
class Arm:
    """An arm: SFT on `train` with `rationale` targets (None: answer only), or RL from `start`'s SFT model."""

    train: str
    rationale: bool = True
    start: str | None = None  # an SFT arm whose model (same seed) the RL starts from
    process: float = 0.0  # weight of the process reward in RL
    form: str | None = None  # the rationale's text form (None: the recipe's `rationale_form`)
    eval_tokens: int | None = None  # new tokens at evaluation (None: the recipe's `eval_tokens`)
    sft_examples: int | None = None  # training examples seen (steps = this // sft_batch; None: the recipe's steps)


# beyond the split's rows (128k in runs 15-17) an arm makes more passes over the same rows: 256k = two passes
SCALING_EXAMPLES = (8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 384_000, 512_000)

ARMS = {
    "answer-only": Arm("tomforge_gen/train_controlled", rationale=False),
    # run 7's arms keep the `events` form (and the RL arms start from it), so they repeat run 7 whatever the default
    "rationale": Arm("tomforge_gen/train_controlled", form="events"),
    "rationale-templated": Arm("tomforge_gen/train_templated", form="events"),
    "rationale-rl": Arm("tomforge_gen/train_controlled", start="rationale"),
    "rationale-rl-process": Arm("tomforge_gen/train_controlled", start="rationale", process=1.0),
    # the other forms run to ~200 words at order 3 and ~280-360 at order 6 (docs/rationales.md): 640 tokens keep
    # an untrained order's rationale from being cut before its answer
    "rationale-beliefs": Arm("tomforge_gen/train_controlled", form="beliefs", eval_tokens=640),
    "rationale-curriculum": Arm("tomforge_gen/train_controlled", form="curriculum", eval_tokens=640),
    # run 11: the two best changes so far together, the curriculum form's SFT then RL with outcome + process reward
    "rationale-curriculum-rl-process": Arm(
        "tomforge_gen/train_controlled", start="rationale-curriculum", process=1.0, eval_tokens=640
    ),
    # issue 37's scaling curve: answer-only SFT on N examples of one 128k-item training split (docs/runs/README.md)
    **{
        f"answer-only-{n // 1000}k": Arm("tomforge_gen/train_controlled", rationale=False, sft_examples=n)
        for n in SCALING_EXAMPLES
    },
    # the same curve for rationale targets (run 16): N examples of the same split, each rationale form; `steps`
    # (issue 37 item 3: order k is k applications of one step) runs to ~220 words (~390 SmolLM2 tokens) at order 6 (docs/rationales.md)
    **{
        f"{form}-{n // 1000}k": Arm("tomforge_gen/train_controlled", form=form, sft_examples=n, eval_tokens=640)
        for form in ("curriculum", "events", "steps")
        for n in SCALING_EXAMPLES
    },
}
RECIPE: dict[str, Any] = dict(
    sft_steps=250,
    sft_batch=32,
    sft_lr=3e-5,
    sft_gradient_checkpointing=False,  # run 7: off; on, an SFT process takes a fraction of the memory (run 8)
    # UNGATED default: chosen in run 11 from arms that all failed the learning gate (rl/gate.py; every arm 0.33-0.41
    # on held-out orders 0-3, chance 0.335, gate 0.90), so it rests on no evidence; kept so that runs 7-11 repeat
    # as they ran (issue 37). An arm's own `form` comes first. Choose the default again from gated results only.
    rationale_form="curriculum",
    rl_steps=30,
    generations=8,
    rl_batch=128,
    rl_micro_batch=32,
    rl_lr=5e-6,
    kl_coef=0.001,
    completion=320,
    eval_batch=256,
    eval_tokens=384,
    eval_limit=None,
    generator="fast",
    compile=False,  # SFT's and RL's layers compiled: pays after about 70 RL steps (run 14); runs 7-11 ran without
)
# seconds a job is expected to take before any has finished (the queue then uses the measured ones)
FIRST_GUESS = {"sft": 330.0, "rl": 290.0, "eval": 120.0}  # rl: run 7 measured 243-286 s


@dataclass(frozen=True)
class Job:
    kind: str  # sft | rl | eval
    arm: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.arm}-s{self.seed}"

    def needs(self) -> list["Job"]:
        spec = ARMS[self.arm]
        if self.kind == "rl":
            return [Job("sft", spec.start or "rationale", self.seed)]
        if self.kind == "eval":
            return [Job("rl" if spec.start else "sft", self.arm, self.seed)]
        return []


def plan_jobs(arms: list[str], seeds: list[int], seeds_of: dict[str, list[int]] | None = None) -> list[Job]:
    """Jobs in priority order (the queue starts the first that is ready): the SFT arms that carry the conclusion
    (answer-only, rationale) for every seed, then the first seed's RL and other SFT arms, the evaluations of the
    first group, the first seed's remaining evaluations, then the other seeds' RL and other SFT arms, and theirs.
    `seeds_of` gives an arm its own seeds (a subset of `seeds`), e.g. a third seed of the RL arms alone."""
    own = seeds_of or {}

    def has(arm: str, seed: int) -> bool:
        return seed in own.get(arm, seeds)

    core = [a for a in arms if a in ("answer-only", "rationale")]
    more = [a for a in arms if a not in core]
    jobs = [Job("sft", a, s) for s in seeds for a in core if has(a, s)]
    for group in (seeds[:1], seeds[1:]):
        jobs += [Job("rl" if ARMS[a].start else "sft", a, s) for s in group for a in more if has(a, s)]
        if group == seeds[:1]:
            jobs += [Job("eval", a, s) for s in seeds for a in core if has(a, s)]
        jobs += [Job("eval", a, s) for s in group for a in more if has(a, s)]
    return jobs


def drop_jobs(jobs: list[Job], names: set[str]) -> list[Job]:
    """The plan without the jobs named (e.g. the evaluation of a start model an earlier run evaluated); a name
    the plan does not hold is an error, not a silent no-op. A job that needs a dropped one is not started."""
    unknown = names - {j.name for j in jobs}
    if unknown:
        raise ValueError(f"not planned: {', '.join(sorted(unknown))}")
    return [j for j in jobs if j.name not in names]


def sft_steps(spec: Arm, recipe: dict[str, Any]) -> int:
    """Optimizer steps of an SFT arm: its examples over the recipe's batch, else the recipe's steps."""
    return spec.sft_examples // recipe["sft_batch"] if spec.sft_examples else recipe["sft_steps"]


def examples_of(table: Any, examples: int | None, seed: int) -> Any:
    """A scaling arm's distinct examples: a seeded sample of `examples` rows of the training split, in split order
    (all rows when the arm names none or the split holds no more). Run 15 handed SFT the whole 128k-row split and
    let the trainer's sampler draw its examples: tokenizing every row cost ~230 s a job for rows never seen."""
    import random

    if examples is None or table.num_rows <= examples:
        return table
    return table.take(sorted(random.Random(seed).sample(range(table.num_rows), examples)))


def target_form(spec: Arm, recipe: dict[str, Any]) -> str | None:
    """The rationale form an SFT arm trains on: its own, else the recipe's; None: answer-only targets."""
    return (spec.form or recipe["rationale_form"]) if spec.rationale else None


def model_dir(work: Path, arm: str, seed: int) -> Path:
    """Where an arm's trained model lives (an RL arm's, else its SFT model)."""
    return work / f"{arm}-s{seed}" / ("rl" if ARMS[arm].start else "sft")


def _deadline_callback(deadline: float | None) -> list[Any]:
    """A TrainerCallback that stops training at the deadline (unix time); the steps done are recorded."""
    if deadline is None:
        return []
    from transformers import TrainerCallback

    class Deadline(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if time.time() > deadline:
                control.should_training_stop = True

    return [Deadline()]


def run_sft(
    job: Job, release: Path, base: str, work: Path, recipe: dict[str, Any], deadline: float | None
) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer

    from tomforge.rl.release import SplitRef, read_split
    from tomforge.rl.sft import sft_warmup
    from tomforge.rl.trained_on import write_training_record

    gpu = torch.cuda.is_available()
    spec = ARMS[job.arm]
    form = target_form(spec, recipe)
    table = examples_of(read_split(release, SplitRef.parse(spec.train)), spec.sft_examples, job.seed)
    train = Dataset(table)
    tokenizer = AutoTokenizer.from_pretrained(base)
    out = model_dir(work, job.arm, job.seed)
    extra = {"max_length": None, **({} if gpu else {"use_cpu": True})}
    result = sft_warmup(
        base,
        tokenizer,
        train,
        str(out),
        max_steps=sft_steps(spec, recipe),
        learning_rate=recipe["sft_lr"],
        batch_size=recipe["sft_batch"],
        bf16=gpu,
        seed=job.seed,
        gradient_checkpointing=recipe["sft_gradient_checkpointing"],
        compile_layers=recipe["compile"],
        extra=extra,
        rationale_form=form,
        callbacks=_deadline_callback(deadline),
    )
    # what the model trained on, beside it, so that its evaluation can gate it (rl/gate.py)
    write_training_record(out, str(release), None, SplitRef.parse(spec.train), table)
    history = result["log_history"]
    examples = result["steps"] * (result["batch_size_used"] or recipe["sft_batch"])
    return {
        "data": spec.train,
        "items": train.num_rows,
        "rationale_form": form,
        "steps": result["steps"],
        "planned_steps": sft_steps(spec, recipe),
        # the batch the trainer ran: `fit_batch_to_memory` lowers it where the card is short of memory (run 16: 82
        # instead of 128 beside another SFT process), and the examples seen with it
        "batch_size_used": result["batch_size_used"],
        "examples": examples,
        # passes over the distinct rows: above 1 when the arm asks for more examples than the split holds
        "passes": round(examples / train.num_rows, 3),
        "compile_layers": result["compile_layers"],
        "seconds": round(result["seconds"], 2),
        "started_at": round(result["started_at"], 2),
        "tokens": result["tokens"],
        "gradient_checkpointing": result["gradient_checkpointing"],
        "skipped_nonfinite_steps": result["skipped_nonfinite_steps"],
        "peak_gpu_gb": peak_gpu_gb(),
        "loss_curve": [{"step": h["step"], "loss": h["loss"]} for h in history if "loss" in h],
    }


def run_rl(job: Job, release: Path, work: Path, recipe: dict[str, Any], deadline: float | None) -> dict[str, Any]:
    from dataclasses import asdict

    import torch

    from tomforge.rl.release import SplitRef, load_split
    from tomforge.rl.reward import DEFAULT_WEIGHTS
    from tomforge.rl.trl_backend import TrlSettings, train_trl

    spec = ARMS[job.arm]
    start = model_dir(work, spec.start or "rationale", job.seed)
    weights = {**asdict(DEFAULT_WEIGHTS), "process": spec.process}
    settings = TrlSettings(
        model=str(start),
        output_dir=str(model_dir(work, job.arm, job.seed)),
        max_steps=recipe["rl_steps"],
        num_generations=recipe["generations"],
        per_device_train_batch_size=recipe["rl_micro_batch"],
        gradient_accumulation_steps=recipe["rl_batch"] // recipe["rl_micro_batch"],
        learning_rate=recipe["rl_lr"],
        beta=recipe["kl_coef"],
        max_completion_length=recipe["completion"],
        seed=job.seed,
        bf16=torch.cuda.is_available(),
        save_steps=10**6,
        reward_weights=weights,
        compile_rollouts=recipe["compile"],
        compile_layers=recipe["compile"],
        extra={} if torch.cuda.is_available() else {"use_cpu": True},
    )
    train = load_split(release, SplitRef.parse(spec.train))
    result = train_trl(settings, train, callbacks=_deadline_callback(deadline))
    steps = [h for h in result["log_history"] if "reward" in h]
    keys = (
        "reward",
        "rewards/format_reward/mean",
        "rewards/correctness_reward/mean",
        "rewards/process_reward/mean",
        "kl",
        "completions/mean_length",
        "step_time",
    )
    return {
        "start": str(start),
        "process_weight": spec.process,
        "steps": result["steps"],
        "planned_steps": recipe["rl_steps"],
        "seconds": round(result["seconds"], 2),
        "step_times": [round(t, 3) for t in result["step_times"]],
        "peak_gpu_gb": peak_gpu_gb(),
        "skipped_nonfinite_steps": result["skipped_nonfinite_steps"],
        "generation": result["generation"],
        "curve": [{"step": h["step"], **{k: h[k] for k in keys if k in h}} for h in steps],
    }


def run_eval(job: Job, release: Path, work: Path, recipe: dict[str, Any]) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tomforge.rl.evaluate import EVAL_COLUMNS, GenerationStats, evaluate
    from tomforge.rl.release import SplitRef, list_splits

    available = {f"{c}/{s}" for c, splits in list_splits(release).items() for s in splits}
    refs = [SplitRef.parse(s) for s in EVAL_SPLITS if s in available]
    stats = GenerationStats()
    started = time.perf_counter()
    rows = evaluate(
        str(model_dir(work, job.arm, job.seed)),
        release,
        refs,
        dataset=str(release),
        in_distribution=IN_DISTRIBUTION,
        label=f"{job.arm}/s{job.seed}",
        limit=recipe["eval_limit"],
        batch_size=recipe["eval_batch"],
        max_new_tokens=ARMS[job.arm].eval_tokens or recipe["eval_tokens"],
        backend=recipe["generator"],
        stats=stats,
    )
    seconds = time.perf_counter() - started
    pq.write_table(pa.Table.from_pylist(rows, schema=EVAL_COLUMNS), work / f"{job.arm}-s{job.seed}" / "eval.parquet")
    return {
        "splits": [str(r) for r in refs],
        "missing_splits": [s for s in EVAL_SPLITS if s not in available],
        "rows": len(rows),
        "seconds": round(seconds, 2),
        "sequences": stats.n_sequences,
        "new_tokens": stats.new_tokens,
        "generation_seconds": round(stats.seconds, 2),
        "new_tokens_per_s": round(stats.tokens_per_s, 1),
        "max_new_tokens": ARMS[job.arm].eval_tokens or recipe["eval_tokens"],
        "peak_gpu_gb": peak_gpu_gb(),
    }


def run_job(
    job: Job, release: Path, model: str, work: Path, recipe: dict[str, Any], deadline: float | None = None
) -> dict[str, Any]:
    """Run one job; its record (timings, steps, memory) goes to `<arm>-s<seed>/<kind>.json`."""
    from tomforge.rl.models import materialize

    folder = work / f"{job.arm}-s{job.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    peak_gpu_gb()
    if job.kind == "sft":
        record = run_sft(job, release, materialize(model), work, recipe, deadline)
    elif job.kind == "rl":
        record = run_rl(job, release, work, recipe, deadline)
    else:
        record = run_eval(job, release, work, recipe)
    record.update(job=job.name, wall_seconds=round(time.perf_counter() - started, 2), recipe=recipe)
    (folder / f"{job.kind}.json").write_text(json.dumps(record, indent=1, default=str))
    return record


def is_done(job: Job, work: Path) -> bool:
    path = work / f"{job.arm}-s{job.seed}" / f"{job.kind}.json"
    return path.is_file()


def expected_seconds(kind: str, work: Path) -> float:
    """The longest wall time of this kind of job so far, else the first guess."""
    walls = [json.loads(p.read_text())["wall_seconds"] for p in work.glob(f"*/{kind}.json")]
    return max(walls) if walls else FIRST_GUESS[kind]


Running = dict[str, tuple[Job, "subprocess.Popen[bytes]", float]]


def _reap(running: Running, status: dict[str, str], work: Path) -> None:
    """Record the jobs that ended: done when they exited 0 and wrote their record."""
    for name, (job, proc, began) in list(running.items()):
        if proc.poll() is not None:
            status[name] = "done" if proc.returncode == 0 and is_done(job, work) else "failed"
            print(f"{name}: {status[name]} after {time.time() - began:.0f} s", flush=True)
            del running[name]


def _fits(job: Job, work: Path, deadline: float | None) -> bool:
    return deadline is None or time.time() + expected_seconds(job.kind, work) <= deadline


def _spawn(
    job: Job, release: Path, model: str, work: Path, recipe: dict[str, Any], deadline: float | None, log_dir: Path
) -> "subprocess.Popen[bytes]":
    cmd = [
        sys.executable,
        "-m",
        "experiments.rationale_experiment",
        "job",
        "--kind",
        job.kind,
        "--arm",
        job.arm,
        "--seed",
        str(job.seed),
        "--release",
        str(release),
        "--model",
        model,
        "--work",
        str(work),
        "--recipe",
        json.dumps(recipe),
        *(["--deadline", str(deadline)] if deadline else []),
    ]
    with (log_dir / f"{job.name}.log").open("w") as log:
        return subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy(), start_new_session=True
        )


def run_queue(
    jobs: list[Job],
    release: Path,
    model: str,
    work: Path,
    recipe: dict[str, Any],
    *,
    parallel: int,
    deadline: float | None,
    in_process: bool = False,
    log_dir: Path | None = None,
) -> dict[str, str]:
    """Run what is not done yet; returns job name -> done | skipped (already done) | cut | failed | not started."""
    from tomforge.rl.models import materialize

    work.mkdir(parents=True, exist_ok=True)
    log_dir = log_dir or work / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    materialize(model)  # convert a .gguf once, before the jobs race for it
    status = {j.name: "skipped" for j in jobs if is_done(j, work)}
    pending = [j for j in jobs if j.name not in status]
    running: Running = {}
    while True:
        _reap(running, status, work)
        for job in [j for j in pending if any(status.get(n.name) in ("failed", "not started") for n in j.needs())]:
            status[job.name] = "not started"  # what it needs failed
            pending.remove(job)
        startable = [j for j in pending if all(is_done(n, work) for n in j.needs()) and _fits(j, work, deadline)]
        for job in startable[: max(parallel - len(running), 0)]:
            pending.remove(job)
            if in_process:
                run_job(job, release, model, work, recipe, deadline)
                status[job.name] = "done"
            else:
                running[job.name] = (job, _spawn(job, release, model, work, recipe, deadline, log_dir), time.time())
                print(f"{job.name}: started", flush=True)
        if not running and not (startable and pending):
            break  # nothing runs and nothing more can start
        if deadline is not None and time.time() > deadline + 15:
            for name, (_job, proc, _began) in running.items():
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
                status[name] = "cut"
            break
        time.sleep(1 if running else 0)
    for job in pending:
        status.setdefault(job.name, "not started")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.rationale_experiment")
    parser.add_argument("mode", choices=("run", "job"))
    parser.add_argument("--release", required=True)
    parser.add_argument("--model", required=True, help="the untrained model: a .gguf file, folder or Hub id")
    parser.add_argument("--work", default="out/rexp/work")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument(
        "--seeds-of",
        action="append",
        default=[],
        metavar="ARM=S,S",
        help="an arm's own seeds (a subset of --seeds), e.g. rationale-rl=1; repeatable",
    )
    parser.add_argument(
        "--skip",
        default="",
        metavar="JOB,JOB",
        help="jobs not to run, by name (e.g. eval-rationale-s1: a start model evaluated in an earlier run)",
    )
    parser.add_argument("--recipe", default="{}", help="JSON overrides of RECIPE, e.g. '{\"rl_steps\": 5}'")
    parser.add_argument("--parallel", type=int, default=6, help="jobs at once")
    parser.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="start nothing that would end later; stop training at this many seconds from now",
    )
    parser.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)  # unix time (jobs)
    parser.add_argument("--in-process", action="store_true", help="jobs one after another in this process")
    parser.add_argument("--kind", choices=("sft", "rl", "eval"))
    parser.add_argument("--arm", choices=tuple(ARMS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    recipe = {**RECIPE, **json.loads(args.recipe)}
    unknown = set(recipe) - set(RECIPE)
    if unknown:
        parser.error(f"--recipe: unknown keys {sorted(unknown)} (known: {', '.join(RECIPE)})")
    work = Path(args.work)
    if args.mode == "job":
        if not args.kind or not args.arm:
            parser.error("job needs --kind and --arm")
        run_job(Job(args.kind, args.arm, args.seed), Path(args.release), args.model, work, recipe, args.deadline)
        return 0
    arms = [a for a in args.arms.split(",") if a]
    bad = [a for a in arms if a not in ARMS]
    if bad:
        parser.error(f"--arms: unknown {bad} (known: {', '.join(ARMS)})")
    seeds_of = {}
    for item in args.seeds_of:
        arm, sep, listed = item.partition("=")
        if not sep or arm not in arms or not all(s.strip().isdigit() for s in listed.split(",")):
            parser.error(f"--seeds-of {item!r}: expected ARM=S,S with ARM one of --arms")
        seeds_of[arm] = [int(s) for s in listed.split(",")]
    jobs = plan_jobs(arms, [int(s) for s in args.seeds.split(",")], seeds_of)
    skip = {name for name in args.skip.split(",") if name}
    try:
        jobs = drop_jobs(jobs, skip)
    except ValueError as exc:
        parser.error(f"--skip: {exc}")
    deadline = time.time() + args.deadline_s if args.deadline_s else None
    started = time.time()
    status = run_queue(
        jobs,
        Path(args.release),
        args.model,
        work,
        recipe,
        parallel=args.parallel,
        deadline=deadline,
        in_process=args.in_process,
    )
    calls = json.loads((work / "calls.json").read_text()) if (work / "calls.json").is_file() else []
    calls.append(
        {
            "started": round(started, 1),
            "seconds": round(time.time() - started, 1),
            "status": status,
            "recipe": recipe,
            "parallel": args.parallel,
            "not_run_by_request": sorted(skip),
        }
    )
    (work / "calls.json").write_text(json.dumps(calls, indent=1))
    print(json.dumps(status, indent=1), flush=True)
    return 0 if all(s in ("done", "skipped") for s in status.values()) else 3


if __name__ == "__main__":
    raise SystemExit(main())
