"""The survivors of the fourth independent check (issue 38; docs/independent-check-2026-12-07c.md): each test
asserts, on inputs built by hand, the documented behaviour a planted bug broke, against a value worked by hand
(no warehouse, no model, no network). Each is an `independent5.*` entry of `bench/mutations.py`."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl
import pytest

from tomforge.generators.rationale import EventRow


def test_the_trl_launch_command_passes_the_revision() -> None:
    """`tomforge train --revision v1` trains on that revision: the launched process is told it."""
    from tomforge.rl.trl_backend import trl_launch_command
    from tomforge.rl.trl_settings import TrlSettings

    cmd = trl_launch_command(TrlSettings(model="m"), "org/set", "v1", "tomforge_gen/train")
    at = cmd.index("--revision")
    assert cmd[at + 1] == "v1"
    assert "--revision" not in trl_launch_command(TrlSettings(model="m"), "org/set", None, "tomforge_gen/train")


def test_expected_seconds_is_the_longest_wall_time_so_far(tmp_path: Path) -> None:
    from experiments.rationale_experiment import expected_seconds

    for name, wall in (("a-s0", 10.0), ("b-s0", 30.0), ("c-s0", 20.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "sft.json").write_text(json.dumps({"wall_seconds": wall}))
    assert expected_seconds("sft", tmp_path) == 30.0


def _row(step: int, what: str, container: str, counts: bool, why: str | None) -> EventRow:
    return EventRow(
        step=step,
        line=None,
        what=what,
        actor=None if what == "init" else "Bob",
        container=container,
        listeners=None,
        perceivers=("Bob",),
        trusting=(),
        counts=(counts,),
        reaches=(counts,),
        why_not=(why,),
        beliefs=("box",),
    )


def test_the_curriculum_names_the_last_later_event_that_does_not_count() -> None:
    """`curriculum`: "the last event that counts at that order and the last later event that does not"."""
    from tomforge.generators.rationale import Rationale
    from tomforge.generators.rationale_text import curriculum_form
    from tomforge.schemas.world.world_question import WorldQuestion

    question = WorldQuestion([{"kind": "setup", "object": "ball"}], ("Ann",), "belief", "tomforge")
    events = (
        _row(0, "init", "box", True, None),
        _row(1, "move", "basket", False, "Ann did not see it"),
        _row(2, "move", "bag", False, "Ann was away"),
    )
    text = curriculum_form(Rationale(question, (("Ann",),), events, "box", 0))
    assert "Later, Bob moves the ball to the bag, but Ann was away." in text
    assert "basket" not in text


def test_no_question_forms_is_refused() -> None:
    from tomforge.generators.question_forms import formats_of_forms
    from tomforge.generators.renderings import GeneratorChoiceError

    with pytest.raises(GeneratorChoiceError):
        formats_of_forms([])


def test_a_publish_never_deletes_the_hubs_gitattributes() -> None:
    from tomforge.hub.publish import LocalFile, Publisher

    tree = [SimpleNamespace(path=p, blob_id="x", lfs=None) for p in (".gitattributes", "old.parquet", "keep.parquet")]
    api = SimpleNamespace(
        token=None,
        repo_info=lambda *a, **k: SimpleNamespace(sha="c0ffee"),
        list_repo_refs=lambda *a, **k: SimpleNamespace(tags=[]),
        list_repo_tree=lambda *a, **k: tree,
    )
    local = {"keep.parquet": LocalFile("keep.parquet", 1, "s", "y")}
    plan = Publisher(api, "org/set").plan(local, "v1", "main")
    assert plan.delete == ["old.parquet"]


def test_a_tar_archive_is_recognized(tmp_path: Path) -> None:
    from tomforge.warehouse.sources.sniff import sniff

    path = tmp_path / "stories.json"
    with tarfile.open(path, "w") as archive:
        data = b'{"a": 1}\n'
        info = tarfile.TarInfo("inside.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    found = sniff(path)
    assert found is not None and found.name == "a tar archive"


def test_an_explicit_config_path_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from tomforge.flows.config import config_path

    monkeypatch.setenv("TOMFORGE_CONFIG", "/elsewhere/env.toml")
    assert config_path(Path("given.toml")) == Path("given.toml")
    assert config_path(None) == Path("/elsewhere/env.toml")


def test_the_scan_report_counts_the_documents_with_hits(tmp_path: Path) -> None:
    """Three hits, two of them in one document: "3 hits in 2 documents" (the index's figures are stand-ins)."""
    from tomforge.audits.scan import HITS_SCHEMA
    from tomforge.audits.scan_config import ScanParams
    from tomforge.audits.scan_report import render_scan_report
    from tomforge.audits.scan_summary import ScanSummary
    from tomforge.audits.sentence_match import SentenceParams

    hits = pl.DataFrame(
        {
            "doc_id": ["d1", "d1", "d2"],
            "shard": ["s"] * 3,
            "row": [0, 0, 1],
            "story_key": ["k1", "k2", "k1"],
            "context_id": ["c1", "c2", "c1"],
            "sources": [["hitom"]] * 3,
            "kind": ["verbatim", "contained", "verbatim"],
            "char_start": [0, 10, 0],
            "char_end": [5, 20, 5],
            "word_start": [0, 2, 0],
            "word_end": [1, 4, 1],
            "coverage": [1.0] * 3,
            "jaccard": [1.0] * 3,
            "shared_ngrams": [1] * 3,
            "p_value": [0.0] * 3,
            "question_item_ids": [[]] * 3,
            "excerpt": ["a story"] * 3,
            "matched_sentences": [None] * 3,
            "story_sentences": [None] * 3,
            "sentence_coverage": [None] * 3,
            "sentence_spans": [None] * 3,
        },
        schema=HITS_SCHEMA,
    )
    sentences = SimpleNamespace(
        params=SentenceParams(), null_coverage=np.array([0.1, 0.2]), story_sentences=np.array([5, 5]), n_stories=2
    )
    banding = SimpleNamespace(bands=10, rows=5, probability=lambda _j: 0.99)
    index = SimpleNamespace(sentences=sentences, null_coverage=np.array([0.1, 0.2]), near_copy_pairs=0, banding=banding)
    summary = ScanSummary(
        "split = 'test'", 2, 2, 4, hits, pl.DataFrame(), None, tmp_path, ScanParams(), [{"shard": "s", "read": 4}], 4
    )
    render_scan_report(summary, index)  # type: ignore[arg-type]
    assert "3 hits in 2 documents." in (tmp_path / "scan_report.md").read_text()


def test_eval_on_several_processes_reports_the_slowest_ones_seconds(tmp_path: Path) -> None:
    """`eval --gpus 2`: processes of 10 s and 20 s side by side, 100 new tokens each: 20 s, 200 / 20 = 10 tokens/s."""
    from tomforge.flows.commands.rl import _report_eval
    from tomforge.rl.evaluate import GenerationStats

    parts: list[Any] = [([], [], GenerationStats(2, 100, 10.0)), ([], [], GenerationStats(2, 100, 20.0))]
    with pytest.warns(UserWarning):  # matplotlib: an empty plot has no legend
        _report_eval("no-model", parts, None, tmp_path, None)
    generation = json.loads((tmp_path / "summary.json").read_text())["generation"]
    assert generation == {"sequences": 4, "new_tokens": 200, "seconds": 20.0, "tokens_per_s": 10.0}
