"""The scan's Ray path on a local cluster of two nodes (a head and a second raylet with their own
CPU each, started with `ray start`): the same hits, row for row, as the single-process path."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from tests.scan_data import benchmark_warehouse, planted_corpus, write_jsonl
from tomforge.audits.scan import run_scan

ray = pytest.importorskip("ray")
RAY = Path(sys.executable).with_name("ray")
REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(temp_dir: str) -> None:
    """End only this cluster's processes (found by their own temp dir), not every Ray on the machine
    as `ray stop` would."""
    mine = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(temp_dir in part for part in proc.info["cmdline"] or []):
            mine.append(proc)
    for proc in mine:
        proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(mine, timeout=15)
    for proc in alive:
        proc.kill()
    psutil.wait_procs(alive, timeout=5)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    if not RAY.exists():
        pytest.skip("the ray command is not installed")
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="rs", dir="/tmp")  # short: Ray's socket paths have a length limit
    # token auth turns itself on when ~/.ray/auth_token exists: this loopback cluster runs without it,
    # the driver (this process) too
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--num-cpus=1", "--object-store-memory=100000000", f"--temp-dir={temp_dir}"]
    try:
        subprocess.run([str(RAY), "start", "--head", f"--port={port}", "--include-dashboard=false", *common],
                       env=env, check=True, capture_output=True, timeout=120)
        subprocess.run([str(RAY), "start", f"--address=127.0.0.1:{port}", *common], env=env, check=True,
                       capture_output=True, timeout=120)
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_two_nodes_give_the_local_hits(cluster: str, tmp_path: Path) -> None:
    from tomforge.audits.scan_ray import RayShards

    wh, stories = benchmark_warehouse(tmp_path / "w.duckdb")
    docs, _ = planted_corpus(stories, n_clean=120)
    for i in range(4):  # four shards: both nodes get work
        write_jsonl(tmp_path / "corpus" / f"part-{i}.jsonl", docs[i::4])
    local = run_scan(wh, [str(tmp_path / "corpus")], tmp_path / "local", purify=tmp_path / "pure-local", id_field="id")
    ray.init(address=cluster, log_to_driver=False)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    on_ray = run_scan(wh, [str(tmp_path / "corpus")], tmp_path / "ray", purify=tmp_path / "pure-ray", id_field="id",
                      runner=RayShards(cluster))
    assert local.hits.height >= 4
    assert on_ray.hits.equals(local.hits)
    assert on_ray.ledger is not None and local.ledger is not None
    assert on_ray.ledger["total"] == local.ledger["total"]
    for i in range(4):
        name = f"part-{i}.jsonl"
        assert (tmp_path / "pure-ray" / name).read_bytes() == (tmp_path / "pure-local" / name).read_bytes()
