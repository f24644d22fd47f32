"""Replay independent-check patches against the test suite: each bug alone, caught or SURVIVED.

    python -m bench.independent_check.measure                 # patches 101-120 on this tree, two at a time
    python -m bench.independent_check.measure 104 117 --jobs 1
    python -m bench.independent_check.measure $(seq 121 140)   # the seventh check (docs/independent-check-2026-12-07f.md)

Why a script: the lead re-measures a check's patches after other branches merge, on another tree, with one
command. The method is the one the earlier checks ran by hand (docs/independent-check-2026-12-07d.md): a copy
of the tree (`git ls-files`, tracked and untracked, symlinks kept) per worker in a temporary folder, the patch
applied there with `git apply` (and taken back with `git apply -R` before the next one), then
`nice python -m pytest -q -x -p no:cacheprovider FILES` under `/usr/bin/time`, with
`TOMFORGE_REAL_SAMPLES=/work/shared/real-samples` and `TOMFORGE_REAL_DATA=/work/shared/real-data` where those
folders exist (without the second the full-release tests skip in the copy) and `PYTHONPATH` set to the copy (the
tests' child processes run the patched code too, not the editable install's tree). FILES: the test files whose
text matches the patch's pattern in `SELECT` (its module's import path, its public names, the command that uses
it); a patch without an entry gets its module's import path. The file lists are drawn from the tree measured,
so a test moved or added after the check is found where it is now.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, Queue

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REAL_SAMPLES = Path("/work/shared/real-samples")
# the full releases: the tests look for them beside the checkout (`../shared/real-data`), which a copy in /tmp lacks
REAL_DATA = Path("/work/shared/real-data")

# patch number -> the test files to run: those whose text matches (re.M), chosen before any test was read
SELECT: dict[int, str] = {
    101: r"warehouse\.faults|warehouse import[^\n]*\bfaults\b|TOMFORGE_KILL_AT|KILL_AT_ENV|kill_trials",
    102: r"hub\.publish_and_verify|publish_warehouse|\"--dry-run\"",
    103: r"TrainingFailed|EvaluationFailed|keeps_traceback",
    104: r"rl\.paired|paired_difference|mcnemar_exact",
    105: r"rl\.launch|rl import[^\n]*\blaunch\b",
    106: r"rl_ingest_options|rl_adapter|RLFilesOptionError|\"--answer-field\"",
    107: r"checks\.labels|checks import[^\n]*\blabels\b|LabelConflicts",
    108: r"audits\.html|audits import[^\n]*\bhtml\b|render_html|write_html",
    109: r"audits\.shortcuts|audits import[^\n]*\bshortcuts\b|shortcut_table|worst_gap",
    110: r"audits\.evidence|audits import[^\n]*\bevidence\b|context_refs",
    111: r"audits\.store|audits import[^\n]*\bstore\b|write_tables|read_signatures|SIGNATURE_TABLE|audit_minhash",
    112: r"generators\.story|generators import[^\n]*\bstory\b|build_base",
    113: r"real\.style|real import[^\n]*\bstyle\b|\"variants\"",
    114: r"real\.sentences|real import[^\n]*\bsentences\b|numbered_lines|parse_lines"
    r"|real\.(hitom|tomi)\b|real import[^\n]*\b(hitom|tomi)\b",  # its callers' importers: none names it
    115: r"rl\.release|rl import[^\n]*\brelease\b|SplitRef",
    116: r"rl\.trl_settings|rl import[^\n]*\btrl_settings\b|TrlSettingsError|\"--num-generations\"",
    117: r"sources\.registry|sources import[^\n]*\bregistry\b|SourceRegistry|help_list|story_note",
    118: r"hitom_tree|text_record|tree_records|deception",
    119: r"commands\.audit|commands import[^\n]*\baudit\b|\"--heldout\"",
    120: r"commands\.flags|commands import[^\n]*\bflags\b|SettingDefault|setting_option|resolve_shown_defaults|SettingsHelp",
    # the seventh check (2026-12-07f), fixed before any test was read: module paths, public names, commands
    121: r"sources\.bigtom\b|sources import[^\n]*\bbigtom\b|BigToMAdapter|derive_items|get_adapter\(\"bigtom\"\)",
    122: r"sources\.tomi\b|sources import[^\n]*\btomi\b|read_trace|parse_examples|get_adapter\(\"tomi\"\)",
    123: r"sources\.fantom\b|sources import[^\n]*\bfantom\b|get_adapter\(\"fantom\"\)",
    124: r"sources\.opentom\b|sources import[^\n]*\bopentom\b|get_adapter\(\"opentom\"\)",
    125: r"checks\.variants\b|checks import[^\n]*\bvariants\b|OracleDisagreements|oracle_disagreement",
    126: r"audits\.report\b|audits import[^\n]*\breport\b|markdown_table|render_report",
    127: r"audits\.artifacts\b|audits import[^\n]*\bartifacts\b|higher_orders_test|heuristic_baselines",
    128: r"audits\.baselines\b|audits import[^\n]*\bbaselines\b|partial_input_baselines",
    129: r"generators\.balance\b|generators import[^\n]*\bbalance\b|\bCycle\(|\bdeal\(",
    130: r"generators\.record_writer\b|generators import[^\n]*\brecord_writer\b|RecordWriter|asked_after_turn",
    131: r"real\.report\b|real import[^\n]*\breport\b|agreement_rows|conflicting_pairs",
    132: r"generators\.rationale\b|generators import[^\n]*\brationale\b|question_of_record|rationale_of_record",
    133: r"rl\.reward\b|rl import[^\n]*\breward\b|compute_score|reward_kwargs",
    134: r"rl\.transfer\b|rl import[^\n]*\btransfer\b|format_transfer|transfer_view",
    135: r"rl\.models\b|rl import[^\n]*\bmodels\b|is_gguf|check_model_spec|materialize\(",
    136: r"flows\.query\b|flows import[^\n]*\bquery\b|print_preview|count_rest",
    137: r"commands\.ingest\b|commands import[^\n]*\bingest\b|print_variants|\"variants\"",
    138: r"user_errors|as_user_error|Unreconciled|counts_shown",
    139: r"NOT_CONTENT_FIELDS|CONTENT_FIELDS|content_hash\(|\bgenerator_version\b",
    140: r"schemas\.progress\b|schemas import[^\n]*\bprogress\b|PlainLineProgress|tests\.recording|tests import[^\n]*\brecording\b",
}
_FILE = re.compile(r"^\+\+\+ b/(\S+)$", re.M)
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


@dataclass
class Result:
    patch: Path
    files: list[str]
    status: str  # "caught", "SURVIVED", "timed out", "does not apply"
    catcher: str
    wall: float
    cpu: float


def patches(numbers: list[int]) -> list[Path]:
    """The patch files of these numbers (default 101-120), in number order."""
    wanted = set(numbers or range(101, 121))
    found = {int(p.name.split("-", 1)[0]): p for p in HERE.glob("*.patch") if p.name.split("-", 1)[0].isdigit()}
    missing = wanted - set(found)
    if missing:
        sys.exit(f"no patch numbered {sorted(missing)} in {HERE}")
    return [found[n] for n in sorted(wanted)]


def module_pattern(path: str) -> str:
    """The import path of a changed module (`audits/html.py` -> `audits\\.html|audits import ... html`)."""
    parts = Path(path).with_suffix("").parts
    parent, leaf = ".".join(parts[:-1]), parts[-1]
    return rf"{re.escape('.'.join(parts))}\b|{re.escape(parent)} import[^\n]*\b{leaf}\b"


def test_files(tree: Path, patch: Path) -> list[str]:
    """The test files the patch runs against: SELECT's pattern, else its modules' import paths."""
    number = int(patch.name.split("-", 1)[0])
    changed = _FILE.findall(patch.read_text(encoding="utf-8"))
    pattern = re.compile(SELECT.get(number) or "|".join(module_pattern(p) for p in changed), re.M)
    return [
        test.relative_to(tree).as_posix()
        for test in sorted((tree / "tests").rglob("test_*.py"))
        if pattern.search(test.read_text(encoding="utf-8"))
    ]


def copy_tree(tree: Path, dest: Path) -> None:
    """The working tree's files (tracked and untracked, not ignored; symlinks as symlinks) under `dest`."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=tree,
        check=True,
        capture_output=True,
    ).stdout
    pack = subprocess.Popen(
        ["tar", "--null", "-T", "-", "-cf", "-"], cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    unpack = subprocess.Popen(["tar", "-xf", "-", "-C", str(dest)], stdin=pack.stdout)
    assert pack.stdin is not None and pack.stdout is not None
    pack.stdin.write(listing)
    pack.stdin.close()
    pack.stdout.close()
    if pack.wait() or unpack.wait():
        sys.exit(f"copying {tree} to {dest} failed")


def run_one(copy: Path, patch: Path, files: list[str], python: str, timeout: int, logs: Path | None) -> Result:
    """Apply, run the files (stopping at the first failure), take the patch back; pytest's output kept in
    `logs/NN-name.log` when `logs` is given (what the catching test asserted)."""
    applied = subprocess.run(["git", "apply", str(patch)], cwd=copy, capture_output=True, text=True)
    if applied.returncode:
        return Result(patch, files, "does not apply", applied.stderr.strip()[:200], 0.0, 0.0)
    # a test's child process (`tomforge ...`, `python -m ...`) imports the copy too, not the editable install's tree
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(copy), os.environ.get("PYTHONPATH")]))}
    if REAL_SAMPLES.is_dir():
        env.setdefault("TOMFORGE_REAL_SAMPLES", str(REAL_SAMPLES))
    if REAL_DATA.is_dir():
        env.setdefault("TOMFORGE_REAL_DATA", str(REAL_DATA))
    times = copy / ".measure-time"
    command = ["/usr/bin/time", "-o", str(times), "-f", "%e %U %S", "timeout", str(timeout), "nice"]
    command += [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *files]
    start = time.monotonic()
    run = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    subprocess.run(["git", "apply", "-R", str(patch)], cwd=copy, check=True)
    try:
        cpu = sum(float(x) for x in times.read_text().split()[-2:])
    except (OSError, ValueError):
        cpu = float("nan")
    output = run.stdout + run.stderr
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{patch.stem}.log").write_text(output, encoding="utf-8")
    failed = _FAILED.findall(output)
    if run.returncode == 124:
        return Result(patch, files, "timed out", "", wall, cpu)
    if run.returncode == 0:
        return Result(patch, files, "SURVIVED", "", wall, cpu)
    if failed:
        return Result(patch, files, "caught", failed[0], wall, cpu)
    tail = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["(no output)"]
    return Result(patch, files, "caught", f"exit {run.returncode}: {tail[0][:160]}", wall, cpu)


def show(result: Result) -> None:
    where = f" {result.catcher}" if result.catcher else ""
    print(
        f"{result.patch.name}: {result.status}{where} ({len(result.files)} files, {result.wall:.0f} s, "
        f"{result.cpu:.1f} CPU s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("numbers", nargs="*", type=int, help="patch numbers (default 101-120)")
    parser.add_argument("--tree", type=Path, default=REPO, help="the tree to measure (default: this one)")
    parser.add_argument("--python", default=None, help="the interpreter (default: TREE/.venv/bin/python)")
    parser.add_argument("--jobs", type=int, default=2, help="bugs at once, one tree copy each (default 2)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per bug (default 900)")
    parser.add_argument("--logs", type=Path, default=None, help="keep each run's pytest output in this folder")
    parser.add_argument("--list", action="store_true", help="print each patch's test files and stop")
    args = parser.parse_args(argv)
    tree = args.tree.resolve()
    python = args.python or str(tree / ".venv/bin/python")
    chosen = patches(args.numbers)
    selected = {patch: test_files(tree, patch) for patch in chosen}
    if args.list:
        for patch, files in selected.items():
            print(f"{patch.name}: {len(files)} files: {' '.join(files)}")
        return 0
    queue: Queue[Path] = Queue()
    for patch in chosen:
        queue.put(patch)
    results: list[Result] = []
    lock = threading.Lock()

    def worker(copy: Path) -> None:
        while True:
            try:
                patch = queue.get_nowait()
            except Empty:
                return
            result = run_one(copy, patch, selected[patch], python, args.timeout, args.logs)
            with lock:
                results.append(result)
                show(result)

    with tempfile.TemporaryDirectory(prefix="independent-check-") as tmp:
        copies = [Path(tmp) / f"tree{i}" for i in range(max(1, args.jobs))]
        for copy in copies:
            copy.mkdir()
            copy_tree(tree, copy)
            where = subprocess.run(
                [python, "-c", "import tomforge; print(tomforge.__file__)"], cwd=copy, capture_output=True, text=True
            ).stdout.strip()
            if not where.startswith(str(copy)):
                sys.exit(f"the copy imports tomforge from {where!r}, not from {copy}")
        threads = [threading.Thread(target=worker, args=(copy,)) for copy in copies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    caught = sum(r.status == "caught" for r in results)
    print(f"caught {caught} of {len(results)}; {sum(r.cpu for r in results):.0f} CPU s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
