"""Mutation testing of the modules you changed: mutmut 3 over each module, only the tests that import it.

`bench/mutations.py` measures the suite against the bugs its authors listed; this measures it against every
small bug mutmut can make in a module (operators, constants, conditions, arguments, return values), so a
change is checked against bugs nobody listed (issue 38).

    .venv/bin/python bench/mutate_changed.py --base main             # every module changed since main
    .venv/bin/python bench/mutate_changed.py hub/release.py schemas/rl/licenses.py audits/checks/
    .venv/bin/python bench/mutate_changed.py schemas/rl/licenses.py --tests tests/schemas/rl/test_license_guard.py --jobs 2

For each module it prints killed / survived / equivalent / other (no test reached it, timeouts) and the score,
killed / (mutants - equivalent), with the diff of every survivor that is not recorded as equivalent. A survivor is
either killed by a new test or recorded in `bench/equivalent_mutants.toml` (its mutmut name, the mutated line and
the reason no test can tell it apart), which this script reads. Exit status 1 when a module scores under
`--min-score` (default 0.9) or a recorded equivalent no longer matches its mutant (the code moved: look again).

Why mutmut 3, and how it meets the `tomforge/` links: mutmut copies the source into `mutants/`, rewrites every
function into a trampoline that runs the original or one mutant chosen by an environment variable, records which
tests reach which function once, then forks one process per mutant running only the tests that reached it: no
pytest start-up per mutant, which is what makes a module of 300 mutants take minutes on 2 cores (cosmic-ray starts
a test run per mutant and mutates the files in place). mutmut walks its source folder without following links and
names a mutant by its path, so the links in `tomforge/` (`tomforge/hub -> ../hub`) would give it nothing to mutate
or names (`hub.release`) that never match what the tests import (`tomforge.hub.release`). So the script works on a
copy of the tree where `tomforge/` holds the real folders (and the top-level names link into it, for tests that
read `warehouse/samples` or a module's source by path): mutmut mutates `tomforge/hub/release.py`, its copy in
`mutants/` comes first on `sys.path` (before the editable install's finder), and the tests import the mutated
code under its real name. The working tree is never touched.

Which tests: those whose source imports the module (`tomforge.hub.release`, `from tomforge.hub import release`),
plus `[tests]` entries of `bench/equivalent_mutants.toml` (module -> extra test files), or `--tests`. Tests marked
slow (Prefect flows) are left out unless named.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("audits", "flows", "generators", "hub", "rl", "schemas", "warehouse")
EQUIVALENTS = REPO / "bench" / "equivalent_mutants.toml"
# by file name, wherever under tests/ the file sits (issue 39: tests move into tests/<package>/)
SLOW_TESTS = {"test_flows.py", "test_deployments.py", "test_flows_ray.py", "test_scan_flow.py"}
# mutmut's verdicts (mutmut.stats.status_by_exit_code) counted as killed: the tests failed, crashed or ran past
# mutmut's time limit (a mutant that loops forever is caught by pytest-timeout in CI too)
KILLED = {"killed", "segfault", "timeout", "caught by type check"}


@dataclass
class Score:
    module: str
    tests: list[str]
    killed: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    other: dict[str, str] = field(default_factory=dict)  # name -> why (no tests, timeout, not run)
    stale: list[str] = field(default_factory=list)  # recorded equivalents whose mutant changed
    diffs: dict[str, str] = field(default_factory=dict)

    @property
    def counted(self) -> int:
        return len(self.killed) + len(self.survived) + len(self.other)

    @property
    def score(self) -> float:
        return len(self.killed) / self.counted if self.counted else 1.0


def in_package(path: str) -> str:
    """Where a module sits under `tomforge/` in the flattened copy (`hub/release.py` -> `tomforge/hub/release.py`;
    `schemas/atomic_files.py` stays)."""
    return path if path.startswith("tomforge/") else f"tomforge/{path}"


def module_name(path: str) -> str:
    return in_package(path).removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def changed_modules(base: str) -> list[str]:
    out = subprocess.run(
        [
            "git",
            "diff",
            "--name-only",
            "--diff-filter=AMR",
            base,
            "--",
            *(f"{p}/*.py" for p in (*PACKAGES, "tomforge")),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "--", *(f"{p}/*.py" for p in (*PACKAGES, "tomforge"))],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted({p for p in (out + untracked).split() if p.endswith(".py")})


def expand(paths: list[str]) -> list[str]:
    """Files as given; a folder as its Python files (not `__init__.py` without code)."""
    found: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not (REPO / path).exists() or (REPO / path).is_symlink():
            path = Path(raw.removeprefix("tomforge/"))
        if (REPO / path).is_dir():
            found += sorted(
                p.relative_to(REPO).as_posix()
                for p in (REPO / path).rglob("*.py")
                if p.name != "__init__.py" or p.read_text().strip()
            )
        elif (REPO / path).is_file():
            found.append(path.as_posix())
        else:
            raise SystemExit(f"mutate_changed: no such module {raw}")
    return list(dict.fromkeys(found))


def test_files() -> list[Path]:
    """Every test file under tests/, subfolders included (`tests/hub/test_*.py`): a test moved into its package's
    folder must still run against that package's mutants."""
    return sorted((REPO / "tests").rglob("test_*.py"))


def tests_for(module: str, extra: dict[str, list[str]]) -> list[str]:
    """The test files that import `module` (any import form), plus the recorded extra ones."""
    name = module_name(module)
    parent, _, leaf = name.rpartition(".")
    patterns = [
        re.compile(rf"^\s*(from|import)\s+{re.escape(name)}\b", re.M),
        re.compile(rf"^\s*from\s+{re.escape(parent)}\s+import\s+[^\n]*\b{re.escape(leaf)}\b", re.M),
    ]
    found = []
    for test in test_files():
        rel = test.relative_to(REPO).as_posix()
        if test.name in SLOW_TESTS:
            continue
        text = test.read_text(encoding="utf-8")
        if any(p.search(text) for p in patterns):
            found.append(rel)
    return list(dict.fromkeys(found + extra.get(module, [])))


def flattened_copy(dest: Path) -> None:
    """The working tree (tracked and untracked, not ignored) with `tomforge/` holding the real package folders and
    each top-level package name a link into it."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    for name in filter(None, listing.split("\0")):
        source = REPO / name
        if source.is_symlink() or not source.is_file():
            continue
        top = name.split("/", 1)[0]
        target = dest / ("tomforge/" + name if top in PACKAGES else name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    for package in PACKAGES:
        os.symlink(f"tomforge/{package}", dest / package)


def mutmut_config(modules: list[str], tests: list[str]) -> str:
    quoted = ", ".join(json.dumps(in_package(m)) for m in modules)
    selection = ", ".join(json.dumps(t) for t in tests)
    also = ", ".join(json.dumps(p) for p in ("README.md", "ARCHITECTURE.md", "docs", "bench", "experiments", ".ci"))
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["tomforge"]\n'
        f"only_mutate = [{quoted}]\n"
        f"also_copy = [{also}]\n"
        f"pytest_add_cli_args_test_selection = [{selection}]\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-q"]\n'
        "use_git_change_detection = false\n"
        # workers forked from a clean server, not from the process that ran the tests: polars' and DuckDB's
        # thread pools do not survive a fork (a mutant's run then hangs until its timeout)
        'process_isolation = "forkserver"\n'
        "timeout_multiplier = 5.0\n"
        "timeout_constant = 30.0\n"
    )


def load_equivalents() -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    if not EQUIVALENTS.exists():
        return {}, {}
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    return {e["name"]: e for e in data.get("equivalent", [])}, data.get("tests", {})


def mutated_line(diff: str) -> str:
    """The first added line of a mutant's diff, stripped: what an equivalent entry records."""
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return added[0] if added else ""


def run_module(
    module: str, tests: list[str], jobs: int, python: str, work: Path, only: list[str] | None = None
) -> Score:
    """mutmut over one module in a fresh flattened copy; the verdict of each of its mutants (with `only`: of the
    mutants whose names match one of those patterns, e.g. `*x_merge_shards__mutmut_*`)."""
    score = Score(module, tests)
    copy = work / module.replace("/", "_").removesuffix(".py")
    flattened_copy(copy)
    with (copy / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write(mutmut_config([module], tests))
    (copy / "mutants").mkdir()
    for package in PACKAGES:  # the mutated copy's top-level names lead into its own tomforge/ too
        os.symlink(f"tomforge/{package}", copy / "mutants" / package)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    real = os.environ.get("TOMFORGE_REAL_SAMPLES") or str(REPO.parent / "shared" / "real-samples")
    env["TOMFORGE_REAL_SAMPLES"] = str(Path(real).resolve())
    mutmut = [python, "-m", "mutmut"]
    done = subprocess.run(
        [*mutmut, "run", "--max-children", str(jobs), *(only or [])], cwd=copy, env=env, capture_output=True, text=True
    )
    (work / f"{copy.name}.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    meta = copy / "mutants" / f"{in_package(module)}.meta"
    if not meta.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"mutate_changed: mutmut made no results for {module} (exit {done.returncode}):\n{tail}")
    from mutmut.stats import status_by_exit_code

    codes = json.loads(meta.read_text())["exit_code_by_key"]
    equivalents, _ = load_equivalents()
    for name, code in sorted(codes.items()):
        if only and not any(fnmatch.fnmatch(name, pattern) for pattern in only):
            continue
        status = status_by_exit_code[code]
        if status in KILLED:
            score.killed.append(name)
            continue
        diff = subprocess.run([*mutmut, "show", name], cwd=copy, env=env, capture_output=True, text=True).stdout
        recorded = equivalents.get(name)
        if recorded is not None and status in ("survived", "no tests"):
            if recorded.get("line", "").strip() == mutated_line(diff):
                score.equivalent.append(name)
                continue
            score.stale.append(name)
        score.diffs[name] = diff
        if status == "survived":
            score.survived.append(name)
        else:
            score.other[name] = "no test reaches it" if status == "no tests" else status
    return score


def report(score: Score, verbose: bool) -> None:
    print(
        f"{score.module}: {len(score.killed)} killed, {len(score.survived)} survived, "
        f"{len(score.equivalent)} equivalent, {len(score.other)} other; score {100 * score.score:.1f}% "
        f"({len(score.killed)}/{score.counted}) with {len(score.tests)} test files",
        flush=True,
    )
    for name in score.stale:
        print(f"  STALE equivalent {name}: its mutated line changed; look at it again")
    for name in [*score.survived, *score.other]:
        why = score.other.get(name, "survived")
        print(f"  {why}: {name}")
        if verbose:
            body = [line for line in score.diffs.get(name, "").splitlines() if line.startswith(("+", "-", "@@"))]
            print("    " + "\n    ".join(body[:12]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="files or folders (hub/release.py, audits/checks/)")
    parser.add_argument("--base", help="every package module changed since this commit (and untracked ones)")
    parser.add_argument("--tests", action="append", default=[], help="test files to run instead of the mapped ones")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="mutants at once")
    parser.add_argument("--python", default=sys.executable, help="interpreter with mutmut and the test dependencies")
    parser.add_argument("--min-score", type=float, default=0.9, help="exit 1 below this score (default 0.9)")
    parser.add_argument("--quiet", action="store_true", help="survivors by name only, no diffs")
    parser.add_argument("--keep", type=Path, help="keep the work folders (mutmut's logs and mutants) here")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="only the mutants whose names match this pattern (fnmatch, repeatable): the functions a change touched "
        "in a module too big to mutate whole, e.g. '*x_merge_shards__mutmut_*'",
    )
    args = parser.parse_args(argv)
    modules = expand(args.modules) + (changed_modules(args.base) if args.base else [])
    modules = [m for m in dict.fromkeys(modules) if m.split("/", 1)[0] in (*PACKAGES, "tomforge")]
    if not modules:
        parser.error("no modules: name some, or --base REV with changes in the packages")
    _, extra = load_equivalents()
    started = time.monotonic()
    scores = []
    work = args.keep or Path(tempfile.mkdtemp(prefix="tomforge-mutmut-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for module in modules:
            tests = args.tests or tests_for(module, extra)
            if not tests:
                print(f"{module}: no test imports it (add a [tests] entry to {EQUIVALENTS.name})", flush=True)
                scores.append(Score(module, [], other={"module": "no tests"}))
                continue
            t0 = time.monotonic()
            score = run_module(module, tests, args.jobs, args.python, work, args.only)
            report(score, verbose=not args.quiet)
            print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
            scores.append(score)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    killed = sum(len(s.killed) for s in scores)
    counted = sum(s.counted for s in scores)
    print(
        f"total: {killed}/{counted} non-equivalent mutants killed ({100 * killed / max(counted, 1):.1f}%), "
        f"{sum(len(s.equivalent) for s in scores)} equivalent, {len(scores)} modules in "
        f"{time.monotonic() - started:.0f} s"
    )
    failing = [s.module for s in scores if s.score < args.min_score or s.stale]
    if failing:
        print(f"under {100 * args.min_score:.0f}% or with stale equivalents: {', '.join(failing)}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
