"""The scan's Ray path on a local cluster of two nodes (a head and a second raylet with their own
CPU each, started with `ray start`): the same hits, row for row, as the single-process path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import polars as pl
import pytest

from tests.ray_cluster import RAY, two_node_cluster
from tests.scan_data import benchmark_warehouse, planted_corpus, write_jsonl
from tomforge.audits.scan import run_scan

ray = pytest.importorskip("ray")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    if not RAY.exists():
        pytest.skip("the ray command is not installed")
    # token auth turns itself on when ~/.ray/auth_token exists: this loopback cluster runs without it,
    # the driver (this process) too
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    with two_node_cluster(env, prefix="rs", object_store_memory=100_000_000) as address:
        yield address


def test_two_nodes_give_the_local_hits(cluster: str, tmp_path: Path) -> None:

    wh, stories = benchmark_warehouse(tmp_path / "w.duckdb")
    docs, _ = planted_corpus(stories, n_clean=120)
    for i in range(4):  # four shards: both nodes get work
        write_jsonl(tmp_path / "corpus" / f"part-{i}.jsonl", docs[i::4])
    local = run_scan(wh, [str(tmp_path / "corpus")], tmp_path / "local", purify=tmp_path / "pure-local", id_field="id")
    # the Ray side runs in a driver process of its own, so no Ray state left in this test process by other
    # tests (a local ray.init, a shut-down session) can touch it
    driver = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "import ray\n"
        "from tomforge.audits.scan import run_scan\n"
        "from tomforge.audits.scan_ray import RayShards\n"
        "address, wh, tmp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])\n"
        "ray.init(address=address, log_to_driver=False)\n"
        "alive = len([n for n in ray.nodes() if n['Alive']])\n"
        "r = run_scan(wh, [str(tmp / 'corpus')], tmp / 'ray', purify=tmp / 'pure-ray', id_field='id',\n"
        "             runner=RayShards(address))\n"
        "r.hits.write_parquet(tmp / 'ray-hits.parquet')\n"
        "print(json.dumps({'alive': alive, 'total': r.ledger['total'] if r.ledger else None}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", driver, cluster, str(wh), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    assert reported["alive"] == 2
    assert local.hits.height >= 4
    assert pl.read_parquet(tmp_path / "ray-hits.parquet").equals(local.hits)
    assert local.ledger is not None and reported["total"] == local.ledger["total"]
    for i in range(4):
        name = f"part-{i}.jsonl"
        assert (tmp_path / "pure-ray" / name).read_bytes() == (tmp_path / "pure-local" / name).read_bytes()
