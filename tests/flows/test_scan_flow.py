"""The scan as a Prefect flow (Prefect's own test harness) and its deployment in prefect.yaml."""

from __future__ import annotations

from pathlib import Path

import yaml
from prefect.flows import load_flow_from_entrypoint
from prefect.testing.utilities import prefect_test_harness

from tests.scan_data import benchmark_warehouse, planted_corpus, write_jsonl
from tomforge.audits.scan import run_scan
from tomforge.flows.scan_flow import scan_flow

REPO = Path(__file__).resolve().parents[2]


def test_scan_flow_gives_the_step_result(tmp_path: Path) -> None:
    wh, stories = benchmark_warehouse(tmp_path / "w.duckdb")
    docs, plants = planted_corpus(stories, n_clean=40)
    write_jsonl(tmp_path / "c" / "a.jsonl", docs)
    with prefect_test_harness(server_startup_timeout=180):
        result = scan_flow(
            [str(tmp_path / "c")],
            warehouse=str(wh),
            out=str(tmp_path / "flow"),
            purify=str(tmp_path / "p"),
            id_field="id",
        )
    step = run_scan(wh, [str(tmp_path / "c")], tmp_path / "step", id_field="id")
    assert result["read"] == len(docs) and result["hits"] == step.hits.height >= 4 and result["contaminated"]
    assert result["ledger"]["total"]["read"] == len(docs) and result["ledger"]["reconciled"]
    assert (tmp_path / "flow" / "scan_hits.parquet").read_bytes() == (
        tmp_path / "step" / "scan_hits.parquet"
    ).read_bytes()


def test_scan_deployment_points_at_the_flow() -> None:
    deployments = {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}
    scan = deployments["scan"]
    assert scan["work_pool"]["name"] == "cpu-pool"
    loaded = load_flow_from_entrypoint(
        str(REPO / scan["entrypoint"].split(":")[0]) + ":" + scan["entrypoint"].split(":")[1]
    )
    assert loaded.name == "scan"
