"""A warm pytest: heavy third-party packages imported once, one forked child per pytest run.

Why: the mutation check (`bench/mutations.py`) runs pytest 258+ times; a fresh interpreter pays
pytest's start-up and the imports of numpy, polars, duckdb, torch, transformers... every time. This
server imports those once (never the project: `tomforge`, the tests and `bench` are imported fresh in
each child, from the copy of the tree the child runs in, so a mutated module is always read anew) and
forks a child per request that runs `python -m pytest ARGS` as a fresh process would: same working
folder, `sys.path`, environment and arguments; its exit status and output come back.

Not preloaded: Prefect (`tests/conftest.py` sets `PREFECT_HOME` before Prefect reads its settings at
import), typer and rich (they read the terminal's size from the environment at import).

Protocol (one JSON object a line): the client writes `{"args": [...], "timeout": SECONDS, "output":
PATH}`; the server answers `{"code": INT, "seconds": FLOAT}` once the child exited (code -1: killed
after the timeout, with every process it started), its stdout and stderr in PATH.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

# third-party packages the tests import, costly to import (CPU s each, cold, measured 2026-12-07):
# torch 1.8, sklearn 1.4, datasets 1.0, scipy.stats 0.9, transformers 0.9, datasketch 0.8, numba 0.4 ...
WARM_MODULES = (
    "numpy",
    "pyarrow",
    "pyarrow.parquet",
    "polars",
    "duckdb",
    "scipy.stats",
    "scipy.optimize",
    "scipy.spatial",
    "sklearn",
    "numba",
    "torch",
    "transformers",
    "datasets",
    "datasketch",
    "jsonschema",
    "filelock",
    "huggingface_hub",
    "pytest",
    "hypothesis",
    "pytest_timeout",
)
NEVER_WARM = ("prefect", "typer", "rich", "tomforge", "tests")
# the plugins' packages were imported before pytest could mark them for assertion rewriting: say nothing
# of it (it changes no test: only the messages of asserts inside those packages)
QUIET = ("-W", "ignore::pytest.PytestAssertRewriteWarning")


def warm_up(modules: tuple[str, ...] | list[str] = WARM_MODULES) -> None:
    """Import `modules`; refuse to serve if any of them pulled in a package that must stay cold."""
    for name in modules:
        importlib.import_module(name)
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(NEVER_WARM))
    loaded += sorted(m for m in sys.modules if m.startswith("bench."))  # bench itself: run as `-m bench.warm_pytest`
    if loaded:
        raise SystemExit(f"warm_pytest: {', '.join(loaded)} imported while warming up: it must be imported fresh")


def _child(args: list[str], output: str) -> None:
    """In the forked child: become `python -m pytest ARGS` writing to `output`; never returns."""
    code = 3
    try:
        os.setpgid(0, 0)  # its own process group: a timeout kills whatever the tests started too
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        import pytest

        sys.argv = [str(Path(pytest.__file__).with_name("__main__.py")), *args]
        code = int(pytest.main(args))  # what `python -m pytest` exits with
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 - whatever happens, the child reports it and exits here
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    """The child's exit status (negative: killed by that signal), or -1 after killing it at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return -1
        time.sleep(0.02)


def serve(requests: IO[str], replies: IO[str]) -> None:
    """Answer each request line with one reply line, a forked child per request."""
    for line in requests:
        request = json.loads(line)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child([*QUIET, *request["args"]], request["output"])
        code = _wait(pid, float(request["timeout"]))
        replies.write(json.dumps({"code": code, "seconds": time.monotonic() - start}) + "\n")
        replies.flush()


class WarmPytest:
    """A client of one server process, started in `folder` with `env` (the environment each run gets)."""

    def __init__(self, folder: Path, python: str, env: dict[str, str], modules: tuple[str, ...] = WARM_MODULES) -> None:
        self.folder = folder
        self._output = folder.parent / f".{folder.name}.pytest-output"
        self._server = subprocess.Popen(
            [python, "-m", "bench.warm_pytest", *modules],  # sys.path[0]: the folder, as under `python -m pytest`
            cwd=folder,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, args: list[str], timeout: float) -> tuple[int, float, str]:
        """`python -m pytest ARGS` in the folder: exit status (-1: timed out), seconds, its output."""
        assert self._server.stdin is not None and self._server.stdout is not None
        request: dict[str, Any] = {"args": args, "timeout": timeout, "output": str(self._output)}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        reply = self._server.stdout.readline()
        if not reply:
            raise SystemExit(f"warm_pytest: the server in {self.folder} stopped (exit {self._server.wait()})")
        answer = json.loads(reply)
        return int(answer["code"]), float(answer["seconds"]), self._output.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        """Stop the server (end of its input) and wait for it."""
        if self._server.stdin is not None:
            self._server.stdin.close()
        self._server.wait()


if __name__ == "__main__":
    replies = os.fdopen(os.dup(1), "w")  # the replies' pipe; anything else printed goes to stderr
    os.dup2(2, 1)
    warm_up(sys.argv[1:])
    gc.collect()
    gc.freeze()  # the preloaded objects out of the collector's sight: a child's collections never copy their pages
    serve(sys.stdin, replies)
