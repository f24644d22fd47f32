"""A local Ray cluster of two nodes, as DESIGN.md describes it: `ray start --head` plus a second
`ray start --address=...`, one CPU each, in a temp dir of its own. Torn down by ending the processes
that name that temp dir only, never every Ray of the user as a bare `ray stop` would (other work may
run its own clusters here). Used by `tests/audits/test_scan_ray.py` and `bench/scan_ray.py`."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

RAY = Path(sys.executable).with_name("ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_cluster(temp_dir: str) -> None:
    """End this cluster's processes (their command lines name its temp dir), and no other Ray's."""
    import psutil

    mine = [p for p in psutil.process_iter(["cmdline"]) if any(temp_dir in a for a in p.info["cmdline"] or [])]
    for proc in mine:
        proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(mine, timeout=15)
    for proc in alive:
        proc.kill()
    psutil.wait_procs(alive, timeout=5)


@contextmanager
def two_node_cluster(
    env: Mapping[str, str],
    *,
    prefix: str,
    object_store_memory: int,
    head_args: Sequence[str] = (),
    timeout: float = 120,
) -> Iterator[str]:
    """Start the head (with `head_args`) and a second raylet under `env`; yield the head's address;
    always tear both down."""
    port = free_port()
    temp_dir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")  # short: Ray's socket paths have a length limit
    common = ["--num-cpus=1", f"--object-store-memory={object_store_memory}", f"--temp-dir={temp_dir}"]

    def start(*args: str) -> None:
        subprocess.run(
            [str(RAY), "start", *args, *common], env=dict(env), check=True, capture_output=True, timeout=timeout
        )

    try:
        start("--head", f"--port={port}", "--include-dashboard=false", *head_args)
        start(f"--address=127.0.0.1:{port}")
        yield f"127.0.0.1:{port}"
    finally:
        stop_cluster(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
