"""What `tomforge` costs to start: the command line's imports (`import tomforge.flows.cli`, what every `tomforge ...`
and `--help` runs first) of this tree beside another commit's, run alternately in fresh processes on one core.

    python -m bench.cli_start c71dce5 --runs 7 --core 1

The other commit is written out with `git archive` to a temporary folder and imported from there (`PYTHONPATH` comes
before the editable install). Prints, per tree, the median wall time and CPU time (user + sys) of the runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CODE = "import tomforge, tomforge.flows.cli; assert tomforge.__file__.startswith({root!r}), tomforge.__file__"


def one_run(root: Path, core: int) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process importing the command line from `root`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(root)}
    code = CODE.format(root=str(root))
    subprocess.run(["taskset", "-c", str(core), sys.executable, "-c", code], check=True, cwd=root, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the commit to compare with (its tree is imported from a temporary folder)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--core", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        archive = subprocess.run(["git", "archive", args.base], cwd=REPO, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        trees = {f"{args.base} (base)": base, "this tree": REPO}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, root in trees.items():  # alternately, so that the machine's load falls on both
                times[name].append(one_run(root, args.core))
    for name, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:<20} wall {wall:.3f} s  cpu {cpu:.3f} s  (median of {len(runs)}, core {args.core})")


if __name__ == "__main__":
    main()
