"""Where one mutation's cold pytest run spends its CPU: the copy, the interpreter, pytest's start-up,
the catcher file's imports (collection), the catcher test itself.

Why: issue 38 (CI time): the mutation check ran pytest 258 times in fresh processes. Each phase is a
separate run in a fresh copy of the tree, unmutated, and its CPU is user+sys of the child (getrusage).

    python -m bench.mutation_phases 'tests/test_layers.py::test_no_import_against_the_layers' tests/rl/test_rl_gate.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import mutations


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """CPU and wall seconds of one child process."""
    cpu, wall = children_cpu(), time.monotonic()
    subprocess.run(args, cwd=cwd, env=env, capture_output=True, check=False)
    return children_cpu() - cpu, time.monotonic() - wall


def main(nodes: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="mutation-phases-") as tmp:
        copy = Path(tmp) / "repo"
        cpu, wall = time.process_time() + children_cpu(), time.monotonic()
        mutations.copy_repository(copy)
        print(
            f"copy of the tree: {time.process_time() + children_cpu() - cpu:.2f} CPU s, {time.monotonic() - wall:.2f} s"
        )
        (copy / "tests" / "test_phase_trivial.py").write_text("def test_nothing():\n    pass\n", encoding="utf-8")
        env = mutations.test_env(copy)
        pytest = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        print("interpreter alone: %.2f CPU s, %.2f s" % timed([sys.executable, "-c", "pass"], copy, env))
        print(
            "pytest start-up (a trivial test): %.2f CPU s, %.2f s"
            % timed([*pytest, "tests/test_phase_trivial.py"], copy, env)
        )
        for node in nodes:
            collect = timed([*pytest, "--collect-only", node.split("::")[0]], copy, env)
            run = timed([*pytest, node], copy, env)
            print(
                f"{node}: start-up + imports (collection) {collect[0]:.2f} CPU s; the whole run {run[0]:.2f} CPU s, {run[1]:.1f} s"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
