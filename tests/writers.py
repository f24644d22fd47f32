"""Many writers at once, and writers killed with SIGKILL: the harness of the concurrency tests and of
`bench/soak.py` (issue 25).

Every writer is a real `tomforge` command (the typer app, as the console script runs it) in a process
of its own, forked from a `forkserver` that has imported the pipeline once, so a command costs its
work rather than 3 s of imports. Nothing here reads the warehouse through the code under test's
write path: states are compared as plain table contents read with DuckDB, release folders as bytes.

- `stress`: W writers x R rounds of seeded mixed commands (ingests of different sources, re-ingests,
  generate, audit, clean, eval storing `eval_results`) on one warehouse, a reader polling it all the while; then the same commands
  one after the other on a fresh warehouse; the two must hold the same items, contexts, rejects and
  sources, `loads` one row per load, and `reconciliation` must agree with counts taken from the
  adapters directly.
- `kill_trials`: a command killed at its k-th checkpoint (`TOMFORGE_KILL_AT`, warehouse/faults.py)
  or after a seeded delay; the warehouse and release folder must then equal their state before or
  after the command, and a re-run must complete and give the state after.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import shutil
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "warehouse" / "samples"
SOURCES = ("tomi", "exploretom", "bigtom", "opentom", "hitom", "fantom")
GENERATE = ("generate", "--n", "40", "--seed", "3")
AUDIT = ("audit", "--train", "split = 'train'", "--heldout", "split <> 'train'")
COMPARED_TABLES = ("items", "contexts", "rejects", "sources", "eval_results")
# torch and transformers too: an `eval` then costs its generation, not 4 s of imports (a module that is not
# installed is skipped by the forkserver)
_PRELOAD = [
    "tomforge.flows.cli",
    "tomforge.warehouse.ingest",
    "tomforge.warehouse.load",
    "tomforge.audits.run",
    "tomforge.audits.clean",
    "tomforge.hub.publish_and_verify",
    "tomforge.generators",
    "tomforge.rl.evaluate",
    "torch",
    "transformers",
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.tokenization_utils_fast",
    "transformers.models.auto.modeling_auto",
    "transformers.generation.utils",
    "matplotlib.pyplot",
]


def eval_command(limit: int) -> tuple[str, ...]:
    """`tomforge eval` of the tiny model on the sample release (`eval_inputs`): CPU, greedy, a few tokens, so
    its rows are the same in every run; `{model}`, `{dataset}` and `{eval_out}` are filled in per run."""
    return (
        "eval",
        "--model",
        "{model}",
        "--dataset",
        "{dataset}",
        "--split",
        "tomi/test",
        "--label",
        "tiny",
        "--limit",
        str(limit),
        "--max-new-tokens",
        "6",
        "--generator",
        "hf",
        "--out",
        "{eval_out}",
    )


EVAL = eval_command(4)


def _build_tiny_model(folder: str) -> None:
    """In a forked child (the harness's own process never imports torch): the RL tests' tiny model."""
    from tomforge.rl.tiny_model import build_model, build_tokenizer

    tokenizer = build_tokenizer(["Sally moves the marble to the box. <think>x</think><answer>box</answer>"] * 4, 300)
    build_model(tokenizer, hidden_size=16, num_layers=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def eval_inputs(ctx: Any, workdir: Path) -> Path:
    """`workdir/eval-inputs`: a tiny model (`model/`) and a release of the ToMi sample (`release/`), built
    once and shared by every eval of a run (the same paths give the same `run_id`, so the same rows)."""
    inputs = workdir / "eval-inputs"
    if (inputs / "release" / "manifest.json").is_file() and (inputs / "model" / "config.json").is_file():
        return inputs
    inputs.mkdir(parents=True, exist_ok=True)
    builder = ctx.Process(target=_build_tiny_model, args=(str(inputs / "model"),))
    builder.start()
    builder.join()
    assert builder.exitcode == 0, f"building the tiny model exited {builder.exitcode}"
    for command in (
        ("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")),
        ("publish", "--repo", "org/tom", "--target", str(inputs / "release"), "--tag", "v1"),
    ):
        done = run_command(ctx, [*command, "-w", str(inputs / "w.duckdb")])
        assert done.code == 0, (command, done)
    return inputs


def _filled(command: tuple[str, ...], folder: Path, workdir: Path) -> list[str]:
    """A command's placeholders: the release folder and audit folder of this run, the shared eval inputs."""
    inputs = workdir / "eval-inputs"
    return [
        part.format(
            release=folder / "release",
            audit=folder / "audit",
            eval_out=folder / "eval",
            model=inputs / "model",
            dataset=inputs / "release",
        )
        for part in command
    ]


def context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `tomforge ARGS` in this process as the console script does; return its exit code and stderr."""
    import contextlib
    import io

    os.environ.update(env or {})
    err = io.StringIO()
    from tomforge.flows.cli import app

    code = 0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            app(args=args, prog_name="tomforge")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, err.getvalue()[-2000:]


def _run_command(args: list[str], env: dict[str, str], out: Any) -> None:
    """In a forked child: the command, its exit code sent back (a kill sends nothing)."""
    out.send(invoke(args, env))
    out.close()


@dataclass
class Outcome:
    args: list[str]
    code: int  # the exit code; -9 when killed
    stderr: str = ""


def run_command(
    ctx: Any, args: list[str], env: dict[str, str] | None = None, kill_after: float | None = None
) -> Outcome:
    """Run one command in a forked child; with `kill_after`, SIGKILL it after that many seconds."""
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_run_command, args=(list(args), dict(env or {}), send))
    child.start()
    send.close()
    if kill_after is not None:
        child.join(kill_after)
        if child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
    child.join()
    try:
        code, err = receive.recv()
    except EOFError:  # killed before it could answer
        code, err = child.exitcode, ""
    if child.exitcode == -signal.SIGKILL:
        code = -9
    return Outcome(list(args), code, err)


# --- states ---------------------------------------------------------------------------------------------------


def table_rows(warehouse: Path, tables: tuple[str, ...] | None = None) -> dict[str, list[tuple]]:
    """Every table's rows, sorted (a missing warehouse: no tables)."""
    if not warehouse.is_file():
        return {}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {
            name: sorted(con.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)
            for name in names
            if tables is None or name in tables
        }


def folder_bytes(folder: Path) -> dict[str, str]:
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def state(warehouse: Path, release: Path | None = None) -> dict[str, Any]:
    """What a command may change: every warehouse table and the release folder with its tag history."""
    out: dict[str, Any] = {"tables": table_rows(warehouse)}
    if release is not None:
        from tomforge.hub.folder import recorded_tags

        out["release"] = folder_bytes(release)
        out["tags"] = recorded_tags(release, release / "manifest.json")  # each tag ever held -> its release
    return out


def leftovers(folder: Path) -> list[str]:
    """Half-built copies beside the warehouse or release (names starting with a dot)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- many writers at once -------------------------------------------------------------------------------------


def plan(writers: int, rounds: int, seed: int) -> list[list[tuple[str, ...]]]:
    """Seeded mixed commands per writer: mostly ingests (each source several times: re-ingests), some
    generate (one fixed seed, so a repeat is a re-load), audits, cleans and evals."""
    rng = random.Random(seed)
    kinds = ["ingest"] * 6 + ["generate", "audit", "clean", "eval"]
    out = []
    for _ in range(writers):
        ops: list[tuple[str, ...]] = []
        for _ in range(rounds):
            kind = rng.choice(kinds)
            ops.append(("ingest", rng.choice(SOURCES)) if kind == "ingest" else (kind,))
        out.append(ops)
    return out


def command_of(op: tuple[str, ...], warehouse: Path, audit_out: Path) -> list[str]:
    if op[0] == "ingest":
        return ["ingest", "--source", op[1], "--path", str(SAMPLES / op[1]), "-w", str(warehouse)]
    if op[0] == "generate":
        return [*GENERATE, "-w", str(warehouse)]
    if op[0] == "audit":
        return [*AUDIT, "-w", str(warehouse), "--out", str(audit_out)]
    if op[0] == "eval":  # the eval inputs sit beside the "together" and "serial" folders
        return [*_filled(EVAL, audit_out.parent, warehouse.parent.parent), "-w", str(warehouse)]
    return ["clean", "-w", str(warehouse)]


# exit codes a command may end with in a mixed run: clean after an ingest that came after the audit
# is refused as stale (8), or before any audit (2); an audit may find nothing to audit yet (2)
ALLOWED = {"ingest": {0}, "generate": {0}, "audit": {0}, "clean": {0, 2, 8}, "eval": {0}}


def _writer(ops: list[tuple[str, ...]], warehouse: str, audit_out: str, results: Any) -> None:
    """One writer: its commands one after the other, in this process (a fresh process per writer)."""
    for op in ops:
        code, err = invoke(command_of(op, Path(warehouse), Path(audit_out)), {"TOMFORGE_LOCK_TIMEOUT": "600"})
        results.put((op, code, err))


@dataclass
class Reader:
    """Polls the warehouse while the writers run: every read must succeed and the item count never fall."""

    warehouse: Path
    reads: int = 0
    failures: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    slowest_s: float = 0.0  # the longest read (a figure for the soak; never asserted)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        from tomforge.warehouse.db import connect_readonly

        while not self.stop.is_set():
            if self.warehouse.is_file():
                began = time.monotonic()
                try:
                    con = connect_readonly(self.warehouse)
                    try:
                        self.counts.append(con.execute("SELECT count(*) FROM items").fetchall()[0][0])
                    finally:
                        con.close()
                    self.reads += 1
                    self.slowest_s = max(self.slowest_s, time.monotonic() - began)
                except Exception as exc:  # noqa: BLE001 - every failure is a finding
                    self.failures.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.05)


def expected_counts() -> dict[str, int]:
    """Items per source counted from the adapters and the generator directly (no warehouse)."""
    from tomforge.generators import generate_splits
    from tomforge.warehouse.sources import get_adapter, resolve_input
    from tomforge.warehouse.sources.base import Reject

    counts = {}
    for source in SOURCES:
        adapter = get_adapter(source)
        ids = {
            r["item_id"] for r in adapter.read(resolve_input(SAMPLES / source, adapter)) if not isinstance(r, Reject)
        }
        counts[source] = len(ids)
    counts["tomforge_gen"] = len({r["item_id"] for r in generate_splits(40, seed=3) if not isinstance(r, Reject)})
    return counts


def seed_warehouse(ctx: Any, warehouse: Path) -> None:
    for source in ("tomi", "hitom"):
        done = run_command(ctx, command_of(("ingest", source), warehouse, warehouse.parent))
        assert done.code == 0, done


def stress(workdir: Path, writers: int, rounds: int, seed: int = 0) -> dict[str, Any]:
    """Run the plan concurrently and serially; return what was compared (`problems` empty when all held)."""
    ctx = context()
    ops = plan(writers, rounds, seed)
    if any(op[0] == "eval" for mine in ops for op in mine):
        eval_inputs(ctx, workdir)
    together, serial = workdir / "together" / "w.duckdb", workdir / "serial" / "w.duckdb"
    for path in (together, serial):
        path.parent.mkdir(parents=True)
        seed_warehouse(ctx, path)
    reader = Reader(together)
    poller = threading.Thread(target=reader.run, daemon=True)
    poller.start()
    queue = ctx.Queue()
    started = time.monotonic()
    procs = [
        ctx.Process(target=_writer, args=(mine, str(together), str(workdir / "together" / "audit"), queue))
        for mine in ops
    ]
    for proc in procs:
        proc.start()
    outcomes = [queue.get(timeout=1800) for _ in range(sum(len(mine) for mine in ops))]
    for proc in procs:
        proc.join()
    concurrent_s = time.monotonic() - started
    reader.stop.set()
    poller.join()
    started = time.monotonic()
    serial_outcomes = [
        run_command(ctx, command_of(op, serial, workdir / "serial" / "audit"))
        for round_ in range(rounds)
        for op in (mine[round_] for mine in ops)
    ]
    serial_s = time.monotonic() - started
    return compare(ops, outcomes, serial_outcomes, together, serial, reader) | {
        "concurrent_s": round(concurrent_s, 1),
        "serial_s": round(serial_s, 1),
    }


def compare(
    ops: list[list[tuple[str, ...]]],
    outcomes: list,
    serial_outcomes: list[Outcome],
    together: Path,
    serial: Path,
    reader: Reader,
) -> dict[str, Any]:
    flat = [op for mine in ops for op in mine]
    problems = _exit_problems(outcomes, serial_outcomes)
    mine, theirs = table_rows(together, COMPARED_TABLES), table_rows(serial, COMPARED_TABLES)
    for table in COMPARED_TABLES:
        if mine.get(table) != theirs.get(table):
            problems.append(f"{table}: {len(mine.get(table, []))} rows together, {len(theirs.get(table, []))} serially")
    # loads: one row per load, the same multiset as serially (load_no aside: the order differs)
    loads = {
        name: Counter(row[1:] for row in table_rows(path, ("loads",))["loads"])
        for name, path in (("together", together), ("serial", serial))
    }
    if loads["together"] != loads["serial"]:
        problems.append(f"loads differ: {loads['together'] - loads['serial']} vs {loads['serial'] - loads['together']}")
    wanted_loads, items, more = _reconciliation_problems(flat, together)
    problems += more
    if reader.failures:
        problems.append(f"reader: {len(reader.failures)} failed reads, first {reader.failures[0]}")
    if any(b < a for a, b in zip(reader.counts, reader.counts[1:])):
        problems.append("reader: the item count went down between two reads (a lost update was visible)")
    problems += [f"leftover {name}" for name in leftovers(together.parent)]
    return {
        "problems": problems,
        "commands": len(flat),
        "writers": len(ops),
        "rounds": len(ops[0]) if ops else 0,
        "exit_codes": dict(Counter(f"{op[0]}={code}" for op, code, _ in outcomes)),
        "reads": reader.reads,
        "slowest_read_s": round(reader.slowest_s, 3),
        "read_failures": len(reader.failures),
        "items": sum(items.values()),
        "waits": sum("waiting for" in err for _, _, err in outcomes),
    }


def _exit_problems(outcomes: list, serial_outcomes: list[Outcome]) -> list[str]:
    problems = [
        f"concurrent {' '.join(op)}: exit {code}: {err.strip().splitlines()[-1:]}"
        for op, code, err in outcomes
        if code not in ALLOWED[op[0]]
    ]
    return problems + [
        f"serial {' '.join(o.args[:3])}: exit {o.code}" for o in serial_outcomes if o.code not in ALLOWED[o.args[0]]
    ]


def _reconciliation_problems(flat: list[tuple[str, ...]], together: Path) -> tuple[Counter, dict, list[str]]:
    """The reconciliation view against loads counted from the plan and items counted from the adapters."""
    problems: list[str] = []
    wanted_loads = (
        Counter({"tomi": 1, "hitom": 1})
        + Counter(op[1] for op in flat if op[0] == "ingest")
        + Counter({"tomforge_gen": sum(op[0] == "generate" for op in flat)})
    )
    expected = expected_counts()
    with duckdb.connect(str(together), read_only=True) as con:
        view = {
            r[0]: r[1:]
            for r in con.execute("SELECT source, n_loads, n_items, reconciled FROM reconciliation").fetchall()
        }
        items = dict(con.execute("SELECT source, count(*) FROM items GROUP BY source").fetchall())
    for source, n_loads in wanted_loads.items():
        got = view.get(source)
        want = (n_loads, expected[source], True)
        if got != want:
            problems.append(f"reconciliation {source}: (n_loads, n_items, reconciled) {got}, expected {want}")
        if items.get(source) != expected[source]:
            problems.append(
                f"items {source}: {items.get(source)} in the warehouse, {expected[source]} from the adapter"
            )
    if set(view) != set(wanted_loads):
        problems.append(f"reconciliation lists {sorted(view)}, loads were {sorted(wanted_loads)}")
    return wanted_loads, items, problems


# --- kill -9 at random points ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class KillCase:
    """A writing command, the state it starts from, and the paths it writes."""

    name: str
    setup: tuple[tuple[str, ...], ...]  # commands run first (each `tomforge ...` without -w)
    command: tuple[str, ...]


PUBLISH = ("publish", "--repo", "org/tom", "--target", "{release}", "--tag", "v2")
KILL_CASES = (
    KillCase(
        "ingest",
        (("ingest", "--source", "hitom", "--path", str(SAMPLES / "hitom")),),
        ("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")),
    ),
    KillCase("generate", (("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")),), GENERATE),
    KillCase("audit", (("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")),), (*AUDIT, "--out", "{audit}")),
    KillCase(
        "clean",
        (("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")), (*AUDIT, "--out", "{audit}")),
        ("clean", "--seed", "1"),
    ),
    KillCase(
        "variants", (("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")),), ("variants", "--source", "tomi")
    ),
    KillCase(
        "publish",
        (
            ("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")),
            ("publish", "--repo", "org/tom", "--target", "{release}", "--tag", "v1"),
            ("ingest", "--source", "hitom", "--path", str(SAMPLES / "hitom")),
        ),
        PUBLISH,
    ),
    # the same run evaluated again on more items: its 2 earlier rows are replaced by 4 (a write in place
    # killed between the delete and the insert would leave none)
    KillCase("eval", (("ingest", "--source", "tomi", "--path", str(SAMPLES / "tomi")), eval_command(2)), EVAL),
)


def _args(command: tuple[str, ...], folder: Path) -> list[str]:
    warehouse = folder / "w.duckdb"
    args = _filled(command, folder, folder.parent)
    return args + ["-w", str(warehouse)] if args[0] != "verify" else args


def _prepared(ctx: Any, case: KillCase, base: Path) -> None:
    base.mkdir(parents=True)
    for command in case.setup:
        done = run_command(ctx, _args(command, base))
        assert done.code == 0, (command, done)


def _copy(base: Path, folder: Path) -> None:
    shutil.copytree(base, folder, symlinks=True)


def kill_trials(
    workdir: Path,
    case: KillCase,
    trials: int,
    seed: int = 0,
    *,
    every_checkpoint: bool = False,
    at: tuple[str, ...] = (),
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """`trials` kills of `case.command` (even trials at a seeded checkpoint, odd ones after a seeded
    delay); `every_checkpoint`: one kill at each checkpoint in turn instead (`trials` is then their number);
    `at`: one kill at each of these named checkpoints instead."""
    ctx = context()
    rng = random.Random(f"{seed}-{case.name}")
    base = workdir / f"{case.name}-base"
    if any("{model}" in part for command in (*case.setup, case.command) for part in command):
        eval_inputs(ctx, workdir)
    _prepared(ctx, case, base)
    before = state(base / "w.duckdb", base / "release")
    reference = workdir / f"{case.name}-reference"
    _copy(base, reference)
    checkpoint_log = workdir / f"{case.name}-checkpoints.log"
    started = time.monotonic()
    done = run_command(ctx, _args(case.command, reference), env={"TOMFORGE_CHECKPOINT_LOG": str(checkpoint_log)})
    duration = time.monotonic() - started
    assert done.code == 0, (case.command, done)
    after = state(reference / "w.duckdb", reference / "release")
    assert after != before, f"{case.name}: the command changed nothing; the trials would prove nothing"
    # a re-run after a run that completed is a second run (an ingest adds a load row of unchanged items)
    again = run_command(ctx, _args(case.command, reference))
    assert again.code == 0, (case.command, again)
    after_twice = state(reference / "w.duckdb", reference / "release")
    points = checkpoint_log.read_text(encoding="utf-8").splitlines()
    missing = [name for name in at if name not in points]
    assert not missing, f"{case.name} never passes {missing}; it passes {points}"
    aimed = [points.index(name) + 1 for name in at] or list(range(1, len(points) + 1))
    problems: list[str] = []
    seen: Counter[str] = Counter()
    trials = len(aimed) if every_checkpoint or at else trials
    for trial in range(trials):
        folder = workdir / f"{case.name}-{trial}"
        _copy(base, folder)
        if every_checkpoint or at or trial % 2 == 0:
            k = aimed[trial] if every_checkpoint or at else rng.randint(1, len(points))
            point, outcome = (
                points[k - 1],
                run_command(ctx, _args(case.command, folder), env={"TOMFORGE_KILL_AT": str(k)}),
            )
        else:
            delay = rng.uniform(0, duration)
            point, outcome = f"after {delay:.2f} s", run_command(ctx, _args(case.command, folder), kill_after=delay)
        got = state(folder / "w.duckdb", folder / "release")
        landed = "before" if got == before else "after" if got == after else "MIX"
        seen[f"{'delay' if point.startswith('after ') else 'checkpoint'} {landed}"] += 1
        if landed == "MIX":
            problems.append(
                f"{case.name} trial {trial} ({point}, exit {outcome.code}): neither before nor after: "
                + ", ".join(
                    k
                    for k in after["tables"]
                    if got["tables"].get(k) not in (before["tables"].get(k), after["tables"].get(k))
                )
            )
        rerun = run_command(ctx, _args(case.command, folder))
        if rerun.code != 0 or state(folder / "w.duckdb", folder / "release") != (
            after_twice if landed == "after" else after
        ):
            problems.append(
                f"{case.name} trial {trial} ({point}): the re-run exited {rerun.code} "
                f"{'with' if rerun.code == 0 else 'without'} the state after: {rerun.stderr[-300:]}"
            )
        if leftovers(folder):
            problems.append(f"{case.name} trial {trial}: leftovers after the re-run: {leftovers(folder)}")
        log(f"{case.name} trial {trial}: {point}: exit {outcome.code}, state {landed}, re-run exit {rerun.code}")
        shutil.rmtree(folder)
    return {
        "command": case.name,
        "trials": trials,
        "checkpoints": points,
        "outcomes": dict(seen),
        "problems": problems,
        "uninterrupted_s": round(duration, 2),
    }
