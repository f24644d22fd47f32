"""The mutation check cold (a fresh pytest per run) and warm (children of bench/warm_pytest.py), side by side.

Why: issue 38 (CI time). Both ways run at once on the same cores (`taskset`), on the same entries, each with
the planted no-op (`--plant-noop`, which both must report SURVIVED); prints wall and CPU seconds (user+sys of
each whole process tree, from `wait4`) and whether every verdict and catcher agree.

    python -m bench.mutations_warm --sample 40 --jobs 2 --cores 0,1
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from bench import mutations

VERDICT = re.compile(r"^(caught|SURVIVED|ERROR\(-?\d+\)|STALE)\s+([\w.]+)(?= \(|:)(?: \(\d+ s\))?( \[by [^\]]*\])?")


@dataclass(frozen=True)
class Way:
    name: str
    wall: float
    user: float
    system: float
    verdicts: dict[str, str]  # mutation -> "caught [by NODE]" / "SURVIVED" ...
    last: str


def verdicts(output: str) -> dict[str, str]:
    """Each verdict line's mutation and its verdict with the catcher (times and pytest's last line left out)."""
    found = {}
    for line in output.splitlines():
        m = VERDICT.match(line)
        if m:
            found[m.group(2)] = m.group(1) + (m.group(3) or "")
    return found


def start(extra: list[str], argv: list[str], cores: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "bench.mutations", "--skip-baseline", "--plant-noop", *argv, *extra]
    return subprocess.Popen(
        ["taskset", "-c", cores, *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(name: str, process: subprocess.Popen[str], started: float) -> Way:
    """Wait for `process` and read its whole tree's CPU time (wait4 counts every reaped descendant)."""
    assert process.stdout is not None
    output = process.stdout.read()
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped here, not by Popen
    kept = os.path.join(tempfile.gettempdir(), f"mutations-{name}-{os.getpid()}.log")
    with open(kept, "w", encoding="utf-8") as f:
        f.write(output)
    print(f"{name}: output in {kept}", flush=True)
    lines = [line for line in output.splitlines() if line.strip()]
    return Way(
        name, time.monotonic() - started, usage.ru_utime, usage.ru_stime, verdicts(output), lines[-1] if lines else ""
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=40, help="entries spread evenly over the registry")
    parser.add_argument("--jobs", type=int, default=2, help="mutations tested at once by each way")
    parser.add_argument("--cores", default="0,1", help="taskset core list both ways run on")
    parser.add_argument("--only", action="append", default=[], help="these entries instead of a sample")
    args = parser.parse_args(argv)
    picked = [a for name in args.only for a in ("--only", name)] or ["--sample", str(args.sample)]
    common = [*picked, "--jobs", str(args.jobs)]
    with open("/proc/loadavg", encoding="utf-8") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}", flush=True)
    started = time.monotonic()
    cold, warm = start(["--cold"], common, args.cores), start([], common, args.cores)
    ways = [finish("cold", cold, started), finish("warm", warm, started)]
    with open("/proc/loadavg", encoding="utf-8") as f:
        print(f"load average after: {' '.join(f.read().split()[:3])}")
    n = len(ways[0].verdicts)
    print(
        f"{'way':5} {'entries':>7} {'wall s':>8} {'user s':>8} {'sys s':>7} {'CPU s':>8} {'CPU s/entry':>11}  summary"
    )
    for w in ways:
        cpu = w.user + w.system
        print(
            f"{w.name:5} {len(w.verdicts):7} {w.wall:8.0f} {w.user:8.1f} {w.system:7.1f} {cpu:8.1f} {cpu / max(1, n):11.2f}  {w.last}"
        )
    differ = sorted(
        k
        for k in ways[0].verdicts.keys() | ways[1].verdicts.keys()
        if ways[0].verdicts.get(k) != ways[1].verdicts.get(k)
    )
    for k in differ:
        print(f"DIFFERS {k}: cold {ways[0].verdicts.get(k)} | warm {ways[1].verdicts.get(k)}")
    planted = [w.verdicts.get("planted.no_op") for w in ways]
    print(f"verdicts identical: {not differ} ({n} entries, the planted no-op: cold {planted[0]}, warm {planted[1]})")
    total = len(mutations.MUTATIONS)
    saved = (ways[0].user + ways[0].system - ways[1].user - ways[1].system) / max(1, n)
    print(f"estimate for all {total}: {saved * total / 60:.1f} CPU min saved ({saved:.2f} CPU s per entry)")
    return 0 if not differ and planted == ["SURVIVED", "SURVIVED"] else 1


if __name__ == "__main__":
    sys.exit(main())
