"""A Hub dataset as the corpus: its files streamed at a pinned revision through `huggingface_hub`
from the loopback Hub (`tests/hubserver.py`), with the same hits as the same files read locally."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.hubserver import FakeHub, HubServer, forbid_internet, point_clients_at
from tests.scan_data import benchmark_warehouse, planted_corpus, write_jsonl
from tomforge.audits.scan import run_scan
from tomforge.audits.scan_corpus import ScanInputError

TOKEN = "hf_tomforgeFAKEscan0123456789abcdefXYZ"


@pytest.fixture(scope="module", autouse=True)
def server(tmp_path_factory: pytest.TempPathFactory):
    with HubServer(FakeHub(token=TOKEN)) as running, pytest.MonkeyPatch.context() as patch:
        forbid_internet(patch)
        point_clients_at(patch, running.url, tmp_path_factory.mktemp("hf_home"), TOKEN)
        yield running


def test_hub_corpus_streamed_at_a_pinned_revision(tmp_path: Path) -> None:
    from huggingface_hub import HfApi

    wh, stories = benchmark_warehouse(tmp_path / "w.duckdb")
    docs, _ = planted_corpus(stories, n_clean=60)
    local = tmp_path / "local"
    write_jsonl(local / "data" / "part-0.jsonl", docs[::2])
    pq.write_table(pa.Table.from_pylist(docs[1::2]), local / "data" / "part-1.parquet")
    api = HfApi(token=TOKEN)
    api.create_repo("org/corpus", repo_type="dataset")
    api.upload_folder(folder_path=str(local), repo_id="org/corpus", repo_type="dataset")
    api.create_tag("org/corpus", tag="v1", repo_type="dataset")
    # a later commit on main must not change what v1 scans
    write_jsonl(tmp_path / "later.jsonl", [{"id": "late", "text": stories[0]}])
    api.upload_file(
        path_or_fileobj=str(tmp_path / "later.jsonl"),
        path_in_repo="data/part-2.jsonl",
        repo_id="org/corpus",
        repo_type="dataset",
    )
    on_hub = run_scan(wh, ["hub:org/corpus"], tmp_path / "hub", revision="v1", id_field="id")
    from_disk = run_scan(wh, [str(local)], tmp_path / "disk", id_field="id")
    assert on_hub.read == len(docs) and on_hub.hits.height >= 4
    assert on_hub.hits.equals(from_disk.hits)
    assert "late" not in on_hub.hits["doc_id"].to_list()
    with pytest.raises(ScanInputError, match="pin the revision"):
        run_scan(wh, ["hub:org/corpus"], tmp_path / "x")
