"""prefect.yaml against a real local Prefect server on loopback, with a process worker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def server(tmp_path: Path):
    port = free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_UI_ENABLED": "false",
    }
    process = subprocess.Popen(
        [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(1)
    else:
        process.kill()
        pytest.fail("Prefect server did not start")
    yield env
    process.terminate()
    process.wait(timeout=30)


def prefect(env: dict, *args: str, cwd: Path = REPO, timeout: int = 300) -> str:
    result = subprocess.run([PREFECT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"prefect {' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_deploy_all_and_run_on_demand_with_a_process_worker(server: dict, tmp_path: Path, samples: Path) -> None:
    config = tmp_path / "tomforge.toml"
    config.write_text(
        f'[warehouse]\npath = "{tmp_path / "w.duckdb"}"\nstaging = "{tmp_path / "staging"}"\n'
        f'[[sources]]\nname = "tomi"\nlocation = "{samples / "tomi"}"\n'
        f'[generate]\nn = 50\nmax_order = 2\n[audit]\nout = "{tmp_path / "audit"}"\n'
        f'[publish]\ntarget = "{tmp_path / "release"}"\n',
        encoding="utf-8",
    )
    env = {**server, "PWD": str(REPO)}
    prefect(env, "work-pool", "create", "cpu-pool", "--type", "process")
    prefect(
        env,
        "work-pool",
        "create",
        "gpu-pool",
        "--type",
        "process",
        "--base-job-template",
        str(REPO / "flows" / "work_pools" / "gpu-pool.json"),
    )
    out = prefect(env, "--no-prompt", "deploy", "--all")
    for deployment in ("rebuild/on-demand", "rebuild/nightly", "publish/publish", "rl-stage/gpu", "scan/scan"):
        assert deployment in out
    prefect(env, "deployment", "run", "rebuild/on-demand", "--param", f"config_path={config}")
    prefect(env, "worker", "start", "--pool", "cpu-pool", "--run-once", timeout=600)
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM items WHERE source = 'tomi'").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM clean_items").fetchone()[0] > 0
    assert (tmp_path / "release" / "manifest.json").is_file()
    assert (tmp_path / "audit" / "audit_report.md").is_file()
    schedules = prefect(env, "deployment", "inspect", "rebuild/nightly")
    assert "0 3 * * *" in schedules and "UTC" in schedules
