"""The ingest flow on Prefect's Ray task runner (a local Ray started by the test)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from prefect.testing.utilities import prefect_test_harness

pytest.importorskip("prefect_ray")

from tomforge.flows.pipeline import ingest_flow  # noqa: E402


def test_ingest_flow_on_ray(tmp_path: Path, samples: Path) -> None:
    config = tmp_path / "tomforge.toml"
    config.write_text(
        f'[warehouse]\npath = "{tmp_path / "w.duckdb"}"\nstaging = "{tmp_path / "staging"}"\n'
        '[runner]\ntask_runner = "ray"\nmax_workers = 2\n'
        "[generate]\nn = 60\nmax_order = 2\n"
        f'[[sources]]\nname = "tomi"\nlocation = "{samples / "tomi"}"\n'
        f'[[sources]]\nname = "bigtom"\nlocation = "{samples / "bigtom"}"\n',
        encoding="utf-8",
    )
    with prefect_test_harness(server_startup_timeout=180):
        reports = ingest_flow(str(config))
    assert {r["source"] for r in reports} == {"tomi", "bigtom", "tomforge_gen"}
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT source) FROM items").fetchone()[0] == 3
        assert con.execute("SELECT count(*) FROM items WHERE source = 'tomforge_gen'").fetchone()[0] == 60


def test_audit_passes_follow_the_runner_config(tmp_path: Path) -> None:
    """A config naming a Ray cluster sends the audit's shingle and signature passes there; a local
    Ray gets `max_workers` CPUs; the thread runner keeps them in this process."""
    from tomforge.audits.passes import run_local
    from tomforge.audits.ray_passes import RayPasses
    from tomforge.flows.config import load_config
    from tomforge.flows.pipeline import audit_passes_of

    config = tmp_path / "tomforge.toml"
    config.write_text('[runner]\ntask_runner = "ray"\nray_address = "ray://head:10001"\n', encoding="utf-8")
    assert audit_passes_of(load_config(config).runner) == RayPasses(address="ray://head:10001", num_cpus=None)
    config.write_text('[runner]\ntask_runner = "ray"\nmax_workers = 3\n', encoding="utf-8")
    assert audit_passes_of(load_config(config).runner) == RayPasses(address="", num_cpus=3)
    config.write_text('[runner]\ntask_runner = "threads"\n', encoding="utf-8")
    assert audit_passes_of(load_config(config).runner) is run_local
