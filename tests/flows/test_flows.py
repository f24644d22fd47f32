"""Prefect flows under Prefect's own test harness: states, the summary artifact, and caching."""

from __future__ import annotations

import asyncio
import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from prefect.client.orchestration import get_client
from prefect.testing.utilities import prefect_test_harness

from tomforge.flows import pipeline
from tomforge.flows.pipeline import rebuild_flow, where_things_are


@pytest.fixture(scope="module", autouse=True)
def harness():
    with prefect_test_harness(server_startup_timeout=180):
        yield


def write_config(tmp_path: Path, samples: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(samples, data)
    lines = [f'[warehouse]\npath = "{tmp_path / "w.duckdb"}"\nstaging = "{tmp_path / "staging"}"\n']
    for name in ("hitom", "tomi", "bigtom"):
        lines.append(f'[[sources]]\nname = "{name}"\nlocation = "{data / name}"\n')
    lines.append("[generate]\nn = 100\nmax_order = 3\nseed = 5\n")
    lines.append(f'[audit]\nout = "{tmp_path / "audit"}"\n[publish]\ntarget = "{tmp_path / "release"}"\n')
    config = tmp_path / "tomforge.toml"
    config.write_text("\n".join(lines), encoding="utf-8")
    return config


# tasks without a run-name template get run names '<task name>-<random key>': name their runs by the task
TASK_NAMES = {
    task.task_key: task.name
    for task in (pipeline.assemble_task, pipeline.audit_task, pipeline.clean_task, pipeline.publish_task)
}


async def task_states(since: datetime | None = None) -> dict[str, list[str]]:
    """Task run name (the task's name for the tasks of TASK_NAMES) -> states in start order, of the
    runs started at or after `since` (the harness is shared by this module's tests)."""
    async with get_client() as client:
        runs = await client.read_task_runs(limit=200)  # the server's maximum
    assert len(runs) < 200, "more task runs than one page: some would be missed"
    states: dict[str, list[str]] = {}
    for run in sorted(runs, key=lambda r: r.expected_start_time or r.start_time):
        if since is None or (run.expected_start_time or run.start_time) >= since:
            states.setdefault(TASK_NAMES.get(run.task_key, run.name), []).append(run.state.name)
    return states


async def artifact_markdown(key: str) -> str:
    async with get_client() as client:
        artifact = await client.read_latest_artifacts()
    return next(a.data for a in artifact if a.key == key)


def count_items(path: Path) -> dict[str, int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return dict(con.execute("SELECT source, count(*) FROM items GROUP BY 1").fetchall())


def test_rebuild_flow_states_artifact_and_cache(tmp_path: Path, samples: Path) -> None:
    config = write_config(tmp_path, samples)
    state = rebuild_flow(str(config), return_state=True)
    assert state.is_completed()
    first = state.result()
    assert {r["source"] for r in first["sources"]} == {
        "hitom",
        "tomi",
        "bigtom",
        "tomforge_gen",
        "hitom_variants",
        "tomi_variants",
    }  # [variants]: on by default
    counts = count_items(tmp_path / "w.duckdb")
    assert counts["tomforge_gen"] == 100
    loaded: dict[str, int] = {}
    for r in first["sources"]:
        loaded[r["source"]] = loaded.get(r["source"], 0) + r["loaded"]
    assert counts == loaded
    markdown = asyncio.run(artifact_markdown("rebuild-summary"))
    assert "| tomi |" in markdown and "**items**" in markdown
    assert "**audit**" in markdown and "**cleaning**" in markdown and f"**release**: {first['release']}" in markdown
    assert (tmp_path / "release" / "manifest.json").is_file() and (tmp_path / "audit" / "audit_report.md").is_file()
    lines = where_things_are(first)  # the end of `tomforge rebuild`: where things are, and the ledger
    assert (
        lines[0] == f"warehouse: {tmp_path / 'w.duckdb'} ({sum(counts.values())} items, "
        f"{sum(r['rejected'] for r in first['sources'])} rejects)"
    )
    assert f"audit report: {tmp_path / 'audit' / 'audit_report.md'}" in lines
    assert f"release: {first['release']}" in lines and str(tmp_path / "release") in first["release"]
    released = pq.read_table(tmp_path / "release" / "data" / "all", columns=["item_id"]).num_rows
    removed = pq.read_table(tmp_path / "release" / "ledger" / "removed.parquet").num_rows
    assert f"ledger: warehouse {sum(counts.values())} = released {released} + removed {removed}" in lines[3]

    # unchanged inputs: staging comes from the cache; then, in one third run (one rebuild fewer: issue 38, CI
    # time), a changed tomi file is staged again and so is bigtom, whose staging folder was deleted (a side effect
    # the cache owes), while hitom, changed in neither way, still comes from the cache
    tomi_file = next((tmp_path / "data" / "tomi").glob("*.txt"))
    manifest = (tmp_path / "release" / "manifest.json").read_bytes()
    again = rebuild_flow(str(config))
    assert again["release"] == first["release"], "same inputs and seed: the same content-addressed release"
    assert (tmp_path / "release" / "manifest.json").read_bytes() == manifest
    tomi_file.write_text(tomi_file.read_text(encoding="utf-8").replace(" ", "  ", 1), encoding="utf-8")
    deleted = list((tmp_path / "staging").glob("bigtom-*"))
    assert len(deleted) == 1
    shutil.rmtree(deleted[0])
    rebuild_flow(str(config))
    states = asyncio.run(task_states())
    assert states["stage-hitom"] == ["Completed", "Cached", "Cached"]
    assert states["stage-tomi"] == ["Completed", "Cached", "Completed"]
    assert states["stage-bigtom"] == ["Completed", "Cached", "Completed"]
    assert states["generate-train"] == ["Completed", "Cached", "Cached"]
    assert states["assemble-warehouse"] == ["Completed"] * 3
    assert count_items(tmp_path / "w.duckdb") == counts  # the warehouse is assembled every time
    assert states["variants-tomi"] == ["Completed"] * 3  # and its variants made again from it
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        checked = dict(con.execute("SELECT source, count(*) FROM oracle_checks GROUP BY 1").fetchall())
    assert checked == {name: counts[name] for name in ("hitom", "tomi", "hitom_variants", "tomi_variants")}


def test_failed_rebuild_keeps_previous_warehouse(tmp_path: Path, samples: Path) -> None:
    config = write_config(tmp_path, samples)
    rebuild_flow(str(config))
    before = count_items(tmp_path / "w.duckdb")
    broken = next((tmp_path / "data" / "hitom").glob("*.json"))
    broken.write_text(broken.read_text(encoding="utf-8")[:200], encoding="utf-8")
    state = rebuild_flow(str(config), return_state=True)
    assert state.is_failed()
    assert count_items(tmp_path / "w.duckdb") == before


def test_rebuild_launches_the_rl_stage_on_its_release(tmp_path: Path, samples: Path) -> None:
    config = write_config(tmp_path, samples)
    with config.open("a", encoding="utf-8") as handle:
        handle.write(
            '[rl]\nlaunch = "inline"\nbackend = "trl"\nmodel = "tiny-model"\ndry_run = true\n'
            "settings = { max_steps = 3, num_generations = 2, per_device_train_batch_size = 4 }\n"
        )
    started = datetime.now(timezone.utc)
    result = rebuild_flow(str(config))
    assert result["rl"] == "ran inline"
    states = asyncio.run(task_states(started))
    assert states["publish"] == ["Completed"]  # this rebuild published once, then launched the RL stage

    async def rl_runs():
        async with get_client() as client:
            runs = await client.read_flow_runs()
            flows = {f.id: f.name for f in await client.read_flows()}
        return [(flows[r.flow_id], r.parameters, r.state.name) for r in runs]

    ((name, parameters, state),) = [r for r in asyncio.run(rl_runs()) if r[0] == "rl-stage"]
    assert state == "Completed"
    assert parameters["dataset"] == str((tmp_path / "release").resolve())
    assert parameters["revision"] == result["release"].split()[0]
