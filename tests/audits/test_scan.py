"""`tomforge scan`: planted benchmark stories found with the right kind and span, a clean templated
corpus gives no hits (where the naive shared-13-gram rule flags it), the purify ledger reconciles,
verl-style parquet prompts are read, bad input is one line, and the CLI end to end."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.scan_data import benchmark_warehouse, filler, planted_corpus, write_jsonl
from tomforge.audits.scan import run_scan
from tomforge.audits.scan_corpus import ScanInputError
from tomforge.audits.synthetic import clean_records
from tomforge.audits.text import tokens
from tomforge.flows.cli import app


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    return benchmark_warehouse(tmp_path_factory.mktemp("scan") / "w.duckdb")


@pytest.fixture(scope="module")
def planted(bench, tmp_path_factory: pytest.TempPathFactory):
    wh, stories = bench
    docs, plants = planted_corpus(stories)
    root = tmp_path_factory.mktemp("corpus")
    write_jsonl(root / "corpus" / "a.jsonl", docs[:100])
    gz = root / "corpus" / "sub" / "b.jsonl.gz"
    gz.parent.mkdir(parents=True)
    gz.write_bytes(gzip.compress("".join(json.dumps(d) + "\n" for d in docs[100:]).encode(), mtime=0))
    summary = run_scan(wh, [str(root / "corpus")], root / "out", purify=root / "pure", id_field="id")
    return docs, plants, summary, root


EXPECTED_KIND = {
    "verbatim": "verbatim",
    "rewrapped": "verbatim",
    "embedded": "contained",
    "first_half": "ngram",
    "names_swapped": "names_swapped",
}


def test_every_plant_is_found_with_its_kind_and_span(planted) -> None:
    docs, plants, summary, _ = planted
    hits = summary.hits
    by_id = {r["doc_id"]: r for r in hits.iter_rows(named=True)}
    for plant in plants:
        hit = by_id[f"plant-{plant.kind}"]
        assert hit["kind"] == EXPECTED_KIND[plant.kind], plant.kind
        text = docs[plant.row]["text"]
        assert docs[plant.row]["id"] == f"plant-{plant.kind}"
        if plant.kind == "embedded":  # the span is the story's place in the document, worked out when planting
            assert hit["char_start"] == plant.start
            assert tokens(text[hit["char_start"] : hit["char_end"]]) == tokens(plant.story)
        assert hit["context_id"] is not None and hit["story_key"]
    # precision: nothing else in the corpus is a hit (the clean documents share 13-grams with the benchmark)
    assert set(by_id) <= {f"plant-{p.kind}" for p in plants}
    assert hits.height == len(by_id)


def test_report_counts_per_source(planted) -> None:
    _, plants, summary, root = planted
    row = summary.per_source.row(0, named=True)
    found = summary.hits["story_key"].n_unique()
    assert (row["source"], row["stories"], row["questions"]) == ("synth", 120, 480)
    assert row["stories_found"] == found and row["questions_exposed"] == 4 * found  # 4 questions per story
    text = (root / "out" / "scan_report.md").read_text()
    verdict = text.split("## Verdict")[1].split("##")[0]
    assert f"| FAIL | synth | {found} of 120 held-out stories" in verdict
    assert (root / "out" / "scan_report.html").read_text().count('class="status-fail"') == 1
    assert pl.read_parquet(root / "out" / "scan_hits.parquet").equals(summary.hits)


def test_purified_copy_and_ledger_reconcile(planted) -> None:
    docs, _, summary, root = planted
    removed = set(summary.hits["doc_id"].to_list())
    kept_a = [json.loads(line)["id"] for line in (root / "pure" / "a.jsonl").read_text().splitlines()]
    kept_b = [
        json.loads(line)["id"]
        for line in gzip.decompress((root / "pure" / "sub" / "b.jsonl.gz").read_bytes()).splitlines()
    ]
    assert kept_a + kept_b == [d["id"] for d in docs if d["id"] not in removed]  # order kept, only hits dropped
    ledger = json.loads((root / "out" / "purify_ledger.json").read_text())
    assert ledger["total"] == {
        "read": len(docs),
        "kept": len(docs) - len(removed),
        "removed": len(removed),
        "rejected": 0,
    }
    assert ledger["reconciled"] and [s["shard"] for s in ledger["shards"]] == ["a.jsonl", "sub/b.jsonl.gz"]
    assert set(pl.read_parquet(root / "out" / "purify_removed.parquet")["doc_id"]) == removed


def test_same_inputs_same_bytes(planted, bench, tmp_path: Path) -> None:
    _, _, _, root = planted
    run_scan(bench[0], [str(root / "corpus")], tmp_path / "out", purify=tmp_path / "pure", id_field="id")
    assert (tmp_path / "out" / "scan_hits.parquet").read_bytes() == (root / "out" / "scan_hits.parquet").read_bytes()
    for name in ("scan_report.md", "purify_ledger.json"):  # equal but for where the purified copy went
        ours = (tmp_path / "out" / name).read_text().replace(str(tmp_path / "pure"), "PURE")
        assert ours == (root / "out" / name).read_text().replace(str(root / "pure"), "PURE"), name
    assert (tmp_path / "pure" / "sub" / "b.jsonl.gz").read_bytes() == (
        root / "pure" / "sub" / "b.jsonl.gz"
    ).read_bytes()


def _naive_13gram_flags(stories: list[str], texts: list[str]) -> int:
    """Reference: documents sharing any 13-gram of tokens with a benchmark story (plain Python sets)."""
    grams = {tuple(t[i : i + 13]) for s in stories for t in [tokens(s)] for i in range(len(t) - 12)}
    return sum(any(tuple(t[i : i + 13]) in grams for i in range(len(t) - 12)) for t in map(tokens, texts))


def test_clean_templated_corpus_gives_no_hits(bench, tmp_path: Path) -> None:
    wh, stories = bench
    texts = [r["context"] for r in clean_records(400, seed=21, orders=(0,))]
    naive = _naive_13gram_flags(stories, texts)
    assert naive >= 40  # the plain rule would call a tenth of this clean corpus contaminated
    write_jsonl(tmp_path / "clean.jsonl", [{"text": t} for t in texts])
    summary = run_scan(wh, [str(tmp_path / "clean.jsonl")], tmp_path / "out")
    assert summary.read == 400 and summary.hits.height == 0
    assert "| pass | synth | 0 of 120" in (tmp_path / "out" / "scan_report.md").read_text()


def test_verl_parquet_prompts_and_parquet_purify(bench, tmp_path: Path) -> None:
    wh, stories = bench
    rows = [
        {
            "prompt": [
                {"role": "system", "content": "Answer."},
                {"role": "user", "content": f"Story: {s}\nQuestion: where?"},
            ],
            "data_source": "x",
            "reward_model": {"ground_truth": "box", "style": "rule"},
        }
        for s in (stories[3], stories[4])
    ]
    rows += [
        {
            "prompt": [{"role": "user", "content": filler(__import__("random").Random(i), 120)}],
            "data_source": "x",
            "reward_model": {"ground_truth": "a", "style": "rule"},
        }
        for i in range(3)
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rl.parquet")
    summary = run_scan(wh, [str(tmp_path / "rl.parquet")], tmp_path / "out", purify=tmp_path / "pure")
    assert sorted(summary.hits["row"].to_list()) == [0, 1]
    assert set(summary.hits["kind"]) == {"contained"}  # the story inside the chat prompt
    kept = pq.read_table(tmp_path / "pure" / "rl.parquet")
    assert kept.schema == pq.read_schema(tmp_path / "rl.parquet") and kept.num_rows == 3


def test_bad_input_is_one_line_naming_file_row_and_field(bench, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "c.jsonl", [{"text": "fine"}, {"body": "no text"}])
    with pytest.raises(ScanInputError, match=r"c\.jsonl line 2, field text: no field 'text'"):
        run_scan(bench[0], [str(tmp_path / "c.jsonl")], tmp_path / "out", strict=True)  # else rejected, counted
    with pytest.raises(ScanInputError, match="no such file"):
        run_scan(bench[0], [str(tmp_path / "missing*.jsonl")], tmp_path / "out")


def test_cli_end_to_end_strict(planted, bench, tmp_path: Path) -> None:
    _, _, summary, root = planted
    result = CliRunner().invoke(
        app,
        [
            "scan",
            str(root / "corpus"),
            "-w",
            str(bench[0]),
            "--out",
            str(tmp_path / "o"),
            "--id-field",
            "id",
            "--strict",
        ],
    )
    assert result.exit_code == 7, result.output
    found = summary.hits["story_key"].n_unique()
    assert f"synth: {found} of 120 held-out stories and {4 * found} of 480 questions occur" in result.stdout
    bad = CliRunner().invoke(
        app,
        [
            "scan",
            str(root / "corpus"),
            "-w",
            str(bench[0]),
            "--benchmark",
            "split = 'nope'",
            "--out",
            str(tmp_path / "o2"),
        ],
    )
    assert bad.exit_code == 2 and "matches no items" in bad.output
