"""RL training files as a source: verl parquet and TRL jsonl written here with hand-worked answers,
`datasets` folders, a Hub dataset id on the loopback Hub, and the CLI's flags and printed count."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.recording import Recording
from tests.rl_files import TRL_LINES, VERL_CASES, write_trl, write_verl
from tests.source_helpers import read_all, source_error
from tomforge.flows.rl_ingest_options import rl_adapter
from tomforge.warehouse.ingest import ingest
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.rl_prompt import PromptMarkers
from tomforge.warehouse.sources.rl_rows import split_of
from tomforge.warehouse.sources.rlfiles import RLFileOptions

ADAPTER = get_adapter("rlfiles")


def test_verl_rows_become_the_hand_worked_records(tmp_path: Path) -> None:
    path = write_verl(tmp_path / "train.parquet")
    records, rejects = read_all(ADAPTER, path)
    expected = [want for _, want in VERL_CASES if len(want) > 1]
    assert [
        (r["context"], r["question"], r["answer"], r["answer_format"], r["meta"]["tomforge_rl"]["prompt_split"])
        for r in records
    ] == expected
    assert [(j.record, j.field) for j in rejects] == [("row7", "prompt"), ("row8", "reward_model.ground_truth")]
    assert all(j.file == "train.parquet" for j in rejects)
    assert ADAPTER.count_input(path) == len(VERL_CASES) == len(records) + len(rejects)
    assert {r["split"] for r in records} == {"train"}
    assert [r["question_type"] for r in records] == [
        "first_order_belief",
        "reality",
        "unknown",
        "unknown",
        "higher_order_belief",
        "first_order_belief",
        "unknown",
    ]
    assert [r["belief_order"] for r in records] == [1, 0, None, None, 2, 1, None]
    assert records[1]["answer_list"] == ["jar", "table"]
    dialogue = records[4]
    assert dialogue["context_kind"] == "dialogue"
    assert dialogue["turns"] == [
        {"speaker": "Gus", "text": "I left the cake here."},
        {"speaker": "Hal", "text": "I ate it."},
    ]


def test_meta_keeps_the_whole_row_as_read(tmp_path: Path) -> None:
    path = write_verl(tmp_path / "train.parquet")
    records, _ = read_all(ADAPTER, path)
    rows = [row for row, want in VERL_CASES if len(want) > 1]
    for record, row in zip(records, rows):
        meta = dict(record["meta"])
        assert meta.pop("tomforge_rl")["answer_field"] == "reward_model.ground_truth"
        # pyarrow fills a null struct field with None; otherwise the row comes back exactly as written
        assert meta == {
            **row,
            "extra_info": row["extra_info"] and {"index": None, "order": None, "id": None, **row["extra_info"]},
        }
        assert meta["data_source"] == row["data_source"] and meta["prompt"][0]["role"] in ("system", "user")


def test_trl_jsonl_rows_and_bad_lines(tmp_path: Path) -> None:
    path = write_trl(tmp_path / "rl_mix.jsonl")
    records, rejects = read_all(ADAPTER, path)
    assert [(r["context"], r["question"], r["answer"], r["answer_format"]) for r in records] == [
        want for _, want in TRL_LINES if len(want) > 1
    ]
    assert [r["meta"]["tomforge_rl"]["answer_field"] for r in records] == ["completion", "ground_truth", "answer"]
    assert records[1]["meta"]["ground_truth"] == 3 and records[2]["meta"]["answer"] == ["Mo", "Ned"]  # types kept
    assert [(j.record, j.field, j.raw) for j in rejects] == [
        ("row3", "row", TRL_LINES[3][0]),
        ("row4", "row", "[1, 2]"),
    ]
    assert ADAPTER.count_input(path) == 5
    assert {r["split"] for r in records} == {"train"}  # no split in the name: the default


def test_options_split_answer_field_and_markers(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        json.dumps({"prompt": "Tale >> Ann hid. Ask >> Who hid?", "label": "Ann", "answer": "wrong"}) + "\n",
        encoding="utf-8",
    )
    options = RLFileOptions(
        split="rl_v2", answer_field="label", markers=PromptMarkers(story=("Tale >>",), question=("Ask >>",), end=())
    )
    (record,), _ = read_all(ADAPTER.configured(options), path)
    assert (record["context"], record["question"], record["answer"], record["split"]) == (
        "Ann hid.",
        "Who hid?",
        "Ann",
        "rl_v2",
    )
    missing = RLFileOptions(answer_field="extra_info.gold")
    _, (reject,) = read_all(ADAPTER.configured(missing), path)
    assert (reject.field, reject.reason) == ("extra_info.gold", "no answer (null or empty)")
    assert ADAPTER.options == RLFileOptions()  # configuring made a copy


def test_story_and_question_columns_win_over_the_prompt(tmp_path: Path) -> None:
    path = tmp_path / "cols.jsonl"
    rows = [
        {"prompt": "anything", "story": "Pia left.", "question": "Who left?", "answer": "Pia"},
        {
            "prompt": "Story: x\nQuestion: y",
            "extra_info": {"story": "Rex hid.", "question": "Who hid?"},
            "answer": "Rex",
        },
        {"prompt": "Story: Sam sat.\nQuestion: Who sat?", "story": "", "question": "Who?", "answer": "Sam"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    records, _ = read_all(ADAPTER, path)
    assert [(r["context"], r["question"], r["meta"]["tomforge_rl"]["prompt_split"]) for r in records] == [
        ("Pia left.", "Who left?", "columns"),
        ("Rex hid.", "Who hid?", "columns"),
        ("Sam sat.", "Who sat?", "story_and_question"),
    ]  # an empty story column: the prompt


def test_prompt_field_flag(tmp_path: Path) -> None:
    path = tmp_path / "msgs.jsonl"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": "Story: Ty ran.\nQuestion: Who ran?"}], "answer": "Ty"})
        + "\n",
        encoding="utf-8",
    )
    _, (reject,) = read_all(ADAPTER, path)
    assert reject.field == "prompt"
    (record,), _ = read_all(rl_adapter("rlfiles", prompt_field="messages"), path)
    assert (record["context"], record["answer"]) == ("Ty ran.", "Ty")


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("train-00000-of-00003.parquet", "train"),
        ("test.parquet", "test"),
        ("data/validation/x.parquet", "validation"),
        ("tom_rl_mix.parquet", None),
        # issue 36: the name's parts (split on _ - . /) say the split
        ("ToM_test_HiExTi_hint.parquet", "test"),
        ("val.jsonl", "val"),
        ("my-dev-set.parquet", "dev"),
        ("ToM.Test.v2.jsonl", "test"),
        ("held/eval-set/rows.jsonl", "eval"),
        # ... as whole parts only: words that merely contain a split word say nothing
        ("latest.jsonl", None),
        ("contest_data.parquet", None),
        ("device-logs.jsonl", None),
        ("trainer_devops_testament.parquet", None),
        ("protest/attest.jsonl", None),
        # both train and test in one name: no guess
        ("train_test_mix.parquet", None),
    ],
)
def test_split_from_the_file_name(tmp_path: Path, name: str, split: str | None) -> None:
    assert split_of(tmp_path / name, tmp_path) == split


def test_the_folder_above_the_input_says_nothing(tmp_path: Path) -> None:
    """Only the names under the input root count (pytest's own folder is named test_...)."""
    inside = tmp_path / "test_runs" / "latest"
    assert split_of(inside / "rows.jsonl", inside) is None


def test_ingest_prints_the_split_of_each_file_and_why(tmp_path: Path) -> None:
    folder = tmp_path / "rl"
    write_verl(folder / "ToM_test_HiExTi_hint.parquet")
    write_trl(folder / "latest.jsonl")
    write_trl(folder / "sub" / "val.jsonl")
    progress = Recording()
    warehouse = tmp_path / "w.duckdb"
    ingest(warehouse, "rlfiles", folder, progress=progress)
    lines = [line for line in progress.lines if "-> split" in line]
    assert lines == [
        "rlfiles: ToM_test_HiExTi_hint.parquet -> split test (from the name: 'test'; 7 rows loaded)",
        "rlfiles: latest.jsonl -> split train (default: no train/test/validation/dev part in the name; 3 rows loaded)",
        "rlfiles: sub/val.jsonl -> split val (from the name: 'val'; 3 rows loaded)",
    ]
    with duckdb.connect(str(warehouse), read_only=True) as con:
        splits = con.sql("SELECT split, count(*) FROM items GROUP BY 1 ORDER BY 1").fetchall()
    assert splits == [("test", 7), ("train", 3), ("val", 3)]
    progress = Recording()
    ingest(tmp_path / "w2.duckdb", "rlfiles", folder, progress=progress, adapter=rl_adapter("rlfiles", split="mix"))
    assert "rlfiles: ToM_test_HiExTi_hint.parquet -> split mix (from --split; 7 rows loaded)" in progress.lines


def test_openai_content_parts_are_read(tmp_path: Path) -> None:
    """`content` as a list of OpenAI-style parts: the text parts joined, a non-text part left out and
    said so (meta and the load's line), a text part without text a reject naming the field."""
    story = "Story: Al put the pen in the box.\nAl left.\nQuestion: Where will Al look for the pen?"
    parts = [{"type": "text", "text": "Read the story."}, {"type": "text", "text": story}]
    rows = [
        {"prompt": [{"role": "user", "content": parts}], "reward_model": {"ground_truth": "box"}},
        {
            "prompt": [{"role": "user", "content": [*parts, {"type": "image_url", "image_url": {"url": "x.png"}}]}],
            "reward_model": {"ground_truth": "box"},
        },
        {
            "prompt": [{"role": "user", "content": [{"type": "text", "text": None}]}],
            "reward_model": {"ground_truth": "a"},
        },
    ]
    path = tmp_path / "parts.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    records, rejects = read_all(ADAPTER, path)
    assert [(r["context"], r["question"]) for r in records] == [
        ("Al put the pen in the box.\nAl left.", "Where will Al look for the pen?")
    ] * 2
    assert "ignored_parts" not in records[0]["meta"]["tomforge_rl"]
    assert records[1]["meta"]["tomforge_rl"]["ignored_parts"] == ["image_url"]
    assert [(r.field, r.reason) for r in rejects] == [("prompt", "message 0, content part 0: a text part without text")]
    pq.write_table(pa.Table.from_pylist(rows[:2]), tmp_path / "parts.parquet")  # parquet: parts as structs
    records, rejects = read_all(ADAPTER, tmp_path / "parts.parquet")
    assert not rejects and [r["question"] for r in records] == ["Where will Al look for the pen?"] * 2
    progress = Recording()
    ingest(tmp_path / "w.duckdb", "rlfiles", tmp_path / "parts.parquet", progress=progress)
    assert (
        "rlfiles: 1 of 2 loaded rows hold content parts that are not text (image_url 1), left out: only text parts are read"
        in progress.lines
    )


def test_datasets_folders_and_shards(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    rows = [{"prompt": f"Story: Q{i} ran.\nQuestion: Who ran?", "answer": f"Q{i}"} for i in range(5)]
    DatasetDict({"train": Dataset.from_list(rows[:3]), "test": Dataset.from_list(rows[3:])}).save_to_disk(
        str(tmp_path / "dd")
    )
    records, rejects = read_all(ADAPTER, tmp_path / "dd")
    assert not rejects and ADAPTER.count_input(tmp_path / "dd") == 5
    assert sorted((r["split"], r["answer"]) for r in records) == [
        ("test", "Q3"),
        ("test", "Q4"),
        ("train", "Q0"),
        ("train", "Q1"),
        ("train", "Q2"),
    ]
    Dataset.from_list(rows).save_to_disk(str(tmp_path / "one"), num_shards=2)
    records, _ = read_all(ADAPTER, tmp_path / "one")
    assert [r["answer"] for r in records] == [f"Q{i}" for i in range(5)]


def test_whole_file_problems_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    source_error(ADAPTER, tmp_path / "bad.parquet", "bad.parquet", "not a readable parquet file")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    source_error(ADAPTER, tmp_path / "notes.txt", "notes.txt", "not an RL data file")
    (tmp_path / "empty").mkdir()
    source_error(ADAPTER, tmp_path / "empty", "empty", "no .parquet")


def test_ingest_prints_how_many_prompts_were_not_split(tmp_path: Path) -> None:
    path = write_verl(tmp_path / "train.parquet")
    progress = Recording()
    warehouse = tmp_path / "w.duckdb"
    report = ingest(warehouse, "rlfiles", path, progress=progress)
    assert (report.read, report.loaded, report.rejected) == (9, 7, 2)
    (line,) = [line for line in progress.lines if "whole prompt" in line]
    assert line.startswith("rlfiles: 1 of 7 loaded rows keep the whole prompt as their context")
    assert "6 split at story and question markers" in line
    with duckdb.connect(str(warehouse), read_only=True) as con:
        queried = con.execute(
            "SELECT count(*) FROM items WHERE meta->'tomforge_rl'->>'prompt_split' = 'none'"
        ).fetchall()
        rejects = con.sql("SELECT file, record, field FROM rejects ORDER BY record").fetchall()
    assert queried == [(1,)]
    assert rejects == [("train.parquet", "row7", "prompt"), ("train.parquet", "row8", "reward_model.ground_truth")]


def test_cli_flags(tmp_path: Path) -> None:
    from tomforge.flows.cli import app

    path = write_verl(tmp_path / "train.parquet")
    warehouse = tmp_path / "w.duckdb"
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            "-s",
            "rlfiles",
            "-p",
            str(path),
            "--warehouse",
            str(warehouse),
            "--split",
            "rl_mix",
            "--question-marker",
            "Question:",
            "--end-marker",
            "Options:",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1 of 7 loaded rows keep the whole prompt" in result.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.sql("SELECT DISTINCT split FROM items").fetchall() == [("rl_mix",)]
        # --end-marker replaced the defaults: "Answer:" no longer ends a question
        assert con.execute("SELECT question FROM items_full WHERE context LIKE 'Eve hid%'").fetchall() == [
            ("Where is the key? Answer:",)
        ]
    wrong = CliRunner().invoke(
        app, ["ingest", "-s", "hitom", "-p", str(path), "--warehouse", str(warehouse), "--split", "x"]
    )
    assert wrong.exit_code == 2 and "--split: only for --source rlfiles" in wrong.output


def test_flags_for_another_source_or_empty_markers_are_refused() -> None:
    assert rl_adapter("hitom") is None
    with pytest.raises(ValueError, match="empty story marker"):
        rl_adapter("rlfiles", story_markers=[" "])
    assert rl_adapter("rlfiles", split="s").options.split == "s"  # type: ignore[union-attr]


def test_read_in_batches_not_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_verl(tmp_path / "train.parquet")
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: pytest.fail("read the whole file at once"))
    records, _ = read_all(ADAPTER, path)
    assert len(records) == 7


def test_a_hub_dataset_id_on_the_loopback_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ingest --path ORG/NAME` downloads the repo's data files with huggingface_hub (no network but
    loopback) and reads them like a local folder: shards of two splits, a README left out."""
    from huggingface_hub import HfApi

    from tests.hubserver import FakeHub, HubServer, forbid_internet, point_clients_at

    token = "hf_rlfilesFAKEtoken0123456789abcdef"
    with HubServer(FakeHub(token=token)) as running:
        forbid_internet(monkeypatch)
        point_clients_at(monkeypatch, running.url, tmp_path / "hf_home", token)
        local = tmp_path / "repo"
        write_verl(local / "data" / "train-00000-of-00001.parquet")
        write_trl(local / "data" / "test-00000-of-00001.jsonl")
        (local / "README.md").write_text("---\nlicense: mit\n---\n# RL mix\n", encoding="utf-8")
        api = HfApi(endpoint=running.url, token=token)
        api.create_repo("someone/tom-rl", repo_type="dataset")
        api.upload_folder(folder_path=str(local), repo_id="someone/tom-rl", repo_type="dataset")
        report = ingest(tmp_path / "w.duckdb", "rlfiles", "someone/tom-rl")
    assert (report.read, report.loaded, report.rejected) == (len(VERL_CASES) + 5, 7 + 3, 2 + 2)
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        splits = con.execute("SELECT split, count(*) FROM items GROUP BY 1 ORDER BY 1").fetchall()
        refs = con.execute("SELECT DISTINCT file FROM rejects ORDER BY 1").fetchall()
    assert splits == [("test", 3), ("train", 7)]
    assert refs == [("data/test-00000-of-00001.jsonl",), ("data/train-00000-of-00001.parquet",)]


def test_other_message_shapes(tmp_path: Path) -> None:
    """ShareGPT {from, value} turns, a prompt stored as the JSON text of its messages, a tool-call turn
    without content, and the answer inside extra_info."""
    rows = [
        {
            "prompt": [
                {"from": "system", "value": "Be brief."},
                {"from": "human", "value": "Story: Ro ran.\nQuestion: Who ran?"},
            ],
            "answer": "Ro",
        },
        {
            "prompt": json.dumps(
                [
                    {"role": "assistant", "content": None},
                    {"role": "user", "content": "Story: Su sang.\nQuestion: Who sang?"},
                ]
            ),
            "extra_info": {"answer": "Su"},
        },
    ]
    path = tmp_path / "shapes.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    records, rejects = read_all(ADAPTER, path)
    assert not rejects
    assert [(r["context"], r["question"], r["answer"], r["meta"]["tomforge_rl"]["answer_field"]) for r in records] == [
        ("Ro ran.", "Who ran?", "Ro", "answer"),
        ("Su sang.", "Who sang?", "Su", "extra_info.answer"),
    ]


def test_marker_search_agrees_with_a_regex_reference() -> None:
    """first_mark / last_mark (plain string search) against the regex they replace, on random texts
    of marker pieces, whitespace and letters (markers glued to a word must not count)."""
    import random
    import re

    from tomforge.warehouse.sources.rl_prompt import first_mark, last_mark

    markers = ("Story:", "Q:", "Question:", "S")
    pattern = re.compile(
        r"(?:(?<=\s)|^)(" + "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True)) + ")"
    )
    rng = random.Random(7)
    pieces = ["Story:", "Q:", "Question:", "S", " ", "\n", "x", "ory:", "Que"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        start = rng.randint(0, len(text))
        found = list(pattern.finditer(text, start))
        first, last = first_mark(text, markers, start), last_mark(text, markers, start)
        assert (first and (first.start, first.marker)) == (found and (found[0].start(), found[0].group(1))) or (
            first is None and not found
        ), text
        assert (last and (last.start, last.marker)) == (found and (found[-1].start(), found[-1].group(1))) or (
            last is None and not found
        ), text


def test_help_shows_the_defaults_the_code_uses() -> None:
    """The ingest flags' shown defaults are written out in flows/commands/ingest.py (the CLI stays light to import):
    they must name what rlfiles.py and rl_prompt.py really use."""
    import typer.main

    from tomforge.flows.cli import app
    from tomforge.warehouse.sources.rlfiles import ANSWER_FIELDS, DEFAULT_SPLIT

    params = {p.name: p for p in typer.main.get_command(app).commands["ingest"].params}  # type: ignore[attr-defined]
    markers = PromptMarkers()
    assert params["answer_field"].show_default == ", ".join(ANSWER_FIELDS)
    assert params["story_marker"].show_default == " ".join(markers.story)
    assert params["question_marker"].show_default == " ".join(markers.question)
    assert params["end_marker"].show_default == " ".join(markers.end)
    assert params["split"].show_default == f"from the file name, else {DEFAULT_SPLIT}"
    assert params["prompt_field"].show_default == RLFileOptions().prompt_field
