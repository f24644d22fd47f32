"""A user's RL training file, ingested as `rlfiles`, audited with `tomforge audit` against a held-out
benchmark (HiToM's own samples): a benchmark story planted inside the RL file's prompts is found by
the overlap audit, verbatim and embedded in a longer prompt, with the planted rows named as the
train side, and the verdict's first lines say so."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.rl_files import SYSTEM
from tomforge.flows.cli import app
from tomforge.generators import generate_records
from tomforge.schemas.rl.columns import rl_table
from tomforge.warehouse.ingest import ingest
from tomforge.warehouse.sources import get_adapter


def _foreign_row(user: str, truth: str, index: int) -> dict:
    """A row as another project's verl export writes it (own system prompt, own wording)."""
    return {
        "data_source": "someone/tom-rl",
        "ability": "tom",
        "extra_info": {"index": index},
        "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "reward_model": {"style": "rule", "ground_truth": truth},
    }


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory, samples: Path):
    folder = tmp_path_factory.mktemp("rlaudit")
    warehouse = folder / "w.duckdb"
    ingest(warehouse, "hitom", samples / "hitom")
    held_out = [r for r in get_adapter("hitom").read(samples / "hitom") if isinstance(r, dict)]
    stories = list(dict.fromkeys(r["context"] for r in held_out))
    verbatim, embedded = stories[0], stories[1]
    rows = rl_table(generate_records(60, max_order=2, seed=11)).to_pylist()
    filler = "Before the questions, a note: the house had three floors and a garden with tall trees. " * 3
    rows.insert(17, _foreign_row(f"Read the story.\nStory: {verbatim}\nQuestion: Where is the ball?", "box", 17))
    rows.insert(40, _foreign_row(f"{filler}\n{embedded}\n\nQuestion: Where does Ann think the ball is?", "box", 40))
    for index, row in enumerate(rows):
        row["extra_info"] = {**row["extra_info"], "index": index}
    pq.write_table(pa.Table.from_pylist(rows), folder / "train.parquet")
    report = ingest(warehouse, "rlfiles", folder / "train.parquet")
    assert (report.read, report.loaded, report.rejected) == (62, 62, 0)
    result = CliRunner().invoke(
        app,
        [
            "audit",
            "--warehouse",
            str(warehouse),
            "--train",
            "source = 'rlfiles'",
            "--heldout",
            "source = 'hitom'",
            "--out",
            str(folder / "audit"),
        ],
    )
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pairs = con.sql("SELECT * FROM audit_overlap_pairs WHERE scope = 'cross'").pl()
        planted = dict(
            con.execute(
                "SELECT source_ref, context_id FROM items WHERE source = 'rlfiles' AND source_ref IN (?, ?)",
                ["train.parquet#row17", "train.parquet#row40"],
            ).fetchall()
        )
        stories_ids = dict(con.execute("SELECT context, context_id FROM contexts").fetchall())
    return result.output, pairs, planted, stories_ids[verbatim], stories_ids[embedded]


def test_a_verbatim_benchmark_story_in_the_rl_file_is_found(audited) -> None:
    output, pairs, planted, verbatim_id, _ = audited
    row17 = pairs.filter(
        (pairs["a_context_id"] == planted["train.parquet#row17"]) & (pairs["b_context_id"] == verbatim_id)
    )
    assert row17.height >= 1 and "exact" in row17["kind"].to_list()
    lines = output.splitlines()
    assert lines[0].startswith("audit ") and "train 62 items (source = 'rlfiles')" in lines[0]
    assert any(
        line.split()[:3] == ["FAIL", "exact", "copies"] and "1 of 2 held-out stories appear verbatim" in line
        for line in lines
    ), output


def test_a_benchmark_story_inside_a_longer_prompt_is_found(audited) -> None:
    _, pairs, planted, _, embedded_id = audited
    row40 = pairs.filter(
        (pairs["a_context_id"] == planted["train.parquet#row40"]) & (pairs["b_context_id"] == embedded_id)
    )
    assert row40.height >= 1, pairs.select("kind", "a_context_id", "b_context_id")


def test_no_other_rl_row_pairs_with_the_planted_stories(audited) -> None:
    _, pairs, planted, verbatim_id, embedded_id = audited
    stray = pairs.filter(
        pairs["b_context_id"].is_in([verbatim_id, embedded_id]) & ~pairs["a_context_id"].is_in(list(planted.values()))
    )
    assert stray.height == 0, stray
