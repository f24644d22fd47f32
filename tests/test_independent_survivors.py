"""Issue 38: the eight survivors of the independent check of 2026-12-06 (and note 09), each killed by a test
written for it (docs/independent-check-2026-12-06.md says what each must assert). Planted inputs, expected
values worked by hand; no test here computes its expectation with the code under test. Each runs in well
under a second and needs neither torch nor a scan fixture."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl

from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_null import ngram_power
from tomforge.audits.scan_report import _sentence_null_line
from tomforge.audits.scan_summary import ScanSummary
from tomforge.audits.sentence_match import SentenceParams
from tomforge.rl.evaluate import did_not_learn, format_matrix
from tomforge.rl.gate import describe, learning_gate, matches_training
from tomforge.warehouse.sources.rl_prompt import content_parts, ignored_parts
from tomforge.warehouse.sources.rl_rows import split_choice
from tomforge.warehouse.sources.sniff import _MAGIC, sniff

# --- 03 audits/scan_summary: `removed` counts distinct documents, not (document, story) pairs ---------------


def test_removed_counts_documents_not_hit_pairs(tmp_path: Path) -> None:
    # 10 documents scanned; document (s0, 4) holds two benchmark stories (two hit rows), (s1, 2) holds one
    hits = pl.DataFrame(
        {
            "shard": ["s0", "s0", "s1"],
            "row": [4, 4, 2],
            "doc_id": ["d4", "d4", "d12"],
            "kind": ["verbatim", "sentences", "ngram"],
        }
    )
    summary = ScanSummary(
        benchmark_where="planted",
        n_items=6,
        n_stories=3,
        read=10,
        hits=hits,
        per_source=pl.DataFrame(),
        ledger=None,
        out_dir=tmp_path,
        params=ScanParams(),
        scanned=10,
    )
    assert summary.removed == 2
    assert summary.kept == 8
    assert summary.kept + summary.removed == summary.scanned
    lines = summary.lines()
    assert "hits: 3 (document, story) pairs in 2 documents: ngram 1, sentences 1, verbatim 1" in lines
    assert "documents: scanned 10 = kept 8 + removed 2" in lines


# --- 04 warehouse/sources/sniff: the longer UTF-32 LE mark wins over the UTF-16 LE mark it starts with -------


def test_utf32_little_endian_is_not_sniffed_as_utf16(tmp_path: Path) -> None:
    utf32 = tmp_path / "stories.json"
    utf32.write_bytes(b"\xff\xfe\x00\x00" + '{"a": 1}'.encode("utf-32-le"))
    found = sniff(utf32)
    assert found is not None
    assert found.name == "UTF-32 text (little-endian byte-order mark)"
    assert found.convert == f"iconv -f UTF-32 -t UTF-8 {utf32} > stories.utf8"
    utf16 = tmp_path / "other.json"
    utf16.write_bytes(b"\xff\xfe" + '{"a": 1}'.encode("utf-16-le"))  # `{` is 7B 00: not a UTF-32 mark
    found16 = sniff(utf16)
    assert found16 is not None and found16.name == "UTF-16 text (little-endian byte-order mark)"


def test_every_magic_entry_is_sniffed_as_itself(tmp_path: Path) -> None:
    """Each entry's own bytes (plus padding that starts no other mark) give that entry's name: a shorter mark
    listed before a longer one that starts with it would take the longer one's files."""
    wrong = []
    for number, (magic, name, _) in enumerate(_MAGIC):
        path = tmp_path / f"file{number}.bin"
        path.write_bytes(magic + b"\x01" * 600)
        found = sniff(path)
        if found is None or found.name != name:
            wrong.append((magic, name, found and found.name))
    assert wrong == []


# --- 09 audits/scan_null: the n-gram floor is the (m+1)-th largest null value --------------------------------


def test_ngram_floor_is_the_m_plus_first_largest_null_value() -> None:
    # alpha 0.05, n = 39: m = floor(0.05 * 40 - 1) = 1, so the floor is the 2nd largest value, 0.37 (not 0.38):
    # coverage just above 0.37 has #{null >= c} = 1 and p = 2/40 = 0.05 <= alpha; at 0.37 itself p = 3/40.
    null = np.array([i / 100 for i in range(39)])
    power = ngram_power(null, ScanParams(ngram_alpha=0.05, ngram_min_coverage=0.1), near_copy_pairs=0)
    assert power.can_fire
    assert power.floor == 0.37
    assert power.why.startswith("fires at coverage > 0.370 and >= 0.1 ")
    # the floor is never below ngram_min_coverage
    low = ngram_power(null, ScanParams(ngram_alpha=0.05, ngram_min_coverage=0.5), near_copy_pairs=0)
    assert low.floor == 0.5


# --- 10 rl/gate._in_training: a `cfg/split:rendering` training split is cut to `cfg/split` ------------------


CELL = ["tomi", 1, "free_text", "third_person"]


def _row(config: str, split: str, item: str, correct: bool) -> dict:
    return {
        "config": config,
        "split": split,
        "item_id": item,
        "source": "tomi",
        "belief_order": 1,
        "answer_format": "free_text",
        "rendering": "third_person",
        "correct": correct,
    }


def test_rows_of_the_training_split_named_with_its_rendering_are_left_out_of_the_gate() -> None:
    record = {"cells": [CELL], "train": "cfg/split:third_person", "orders": [1], "forms": ["free_text"]}
    trained = _row("cfg", "split", "t1", True)
    held_out = _row("cfg", "other", "h1", False)
    assert matches_training(trained, record) is False
    assert matches_training(held_out, record) is True
    gate = learning_gate([trained, _row("cfg", "split", "t2", True), held_out], record)
    assert gate.n == 1
    assert gate.accuracy == 0.0


# --- 11 rl/gate.describe: contiguous orders printed as a range ----------------------------------------------


def test_describe_writes_contiguous_orders_as_a_range() -> None:
    record = {"orders": [0, 1, 2, 3], "forms": ["free_text", "multiple_choice"], "renderings": ["third_person"]}
    assert describe(record) == "orders 0-3, forms free_text/multiple_choice, renderings third_person"
    assert describe({"orders": [1, 2], "forms": ["free_text"]}) == "orders 1-2, forms free_text, renderings none"
    assert describe({"orders": [1, 3], "forms": ["free_text"]}).startswith("orders 1,3,")
    assert describe({"orders": [2], "forms": []}).startswith("orders 2,")
    record = {"cells": [CELL], "item_ids": ["t1"], "orders": [0, 1, 2, 3], "forms": ["free_text"]}
    gate = learning_gate([_row("cfg", "split", "h1", True)], record)
    assert "held-out items of the trained orders 0-3, forms free_text, renderings none: 1.000" in gate.line("m")


# --- 12 warehouse/sources/rl_rows.split_choice: folders read nearest first -----------------------------------


def test_the_nearest_folder_names_the_split(tmp_path: Path) -> None:
    path = tmp_path / "run_train" / "eval_test" / "data.jsonl"
    choice = split_choice(path, tmp_path)
    # `eval_test` says both eval and test: the nearest folder speaks (and names none), run_train is not read
    assert choice.split is None
    assert choice.reason == "the folder 'eval_test' says both eval and test"
    choice = split_choice(tmp_path / "run_train" / "final_test" / "data.jsonl", tmp_path)
    assert choice.split == "test"
    assert choice.reason == "from the folder 'final_test': 'test'"


# --- 14 audits/scan_report._sentence_null_line: null 1 OR too few sentences --------------------------------


def test_stories_the_sentence_kind_cannot_name_are_null_one_or_too_short() -> None:
    # four stories: nameable, null 1, too few sentences (1 < 3), both: 3 cannot be named (the `and` gives 1)
    sentences = SimpleNamespace(
        params=SentenceParams(min_sentences=3, min_words=4),
        null_coverage=np.array([0.2, 1.0, 0.3, 1.0]),
        story_sentences=np.array([5, 5, 1, 2]),
        n_stories=4,
    )
    line = _sentence_null_line(SimpleNamespace(sentences=sentences))  # type: ignore[arg-type]
    assert "3 stories cannot be named this way (null 1, or fewer than 3 sentences of 4+ words)" in line
    only_short = SimpleNamespace(
        params=SentenceParams(min_sentences=3, min_words=4),
        null_coverage=np.array([0.2, 0.4]),
        story_sentences=np.array([5, 2]),
        n_stories=2,
    )
    assert " 1 stories cannot be named this way" in _sentence_null_line(SimpleNamespace(sentences=only_short))  # type: ignore[arg-type]


# --- 15 warehouse/sources/rl_prompt.content_parts: an untyped {"text": ...} part is text --------------------


def test_an_untyped_text_part_is_text() -> None:
    assert content_parts([{"text": "a"}]) == ("a", [])
    assert content_parts([{"text": "a"}, {"type": "image_url", "image_url": {}}, "b"]) == ("a\nb", ["image_url"])
    assert ignored_parts([{"role": "user", "content": [{"text": "Where is Anne?"}]}]) == []


# --- 19 rl/evaluate.did_not_learn: unknown and unmeasured gates did not fail --------------------------------


def test_unknown_and_unmeasured_gates_are_not_did_not_learn() -> None:
    summary = {
        "matrix": {"failed": {"c/s": 0.25}, "learned": {"c/s": 0.95}, "unmeasured": {"c/s": 0.5}, "norecord": {}},
        "gates": {
            "failed": {"passed": False, "line": "gate failed"},
            "learned": {"passed": True, "line": "gate learned"},
            "unmeasured": {"passed": None, "line": "gate unmeasured"},
        },
    }
    assert did_not_learn(summary, "failed") is True
    assert did_not_learn(summary, "learned") is False
    assert did_not_learn(summary, "unmeasured") is False
    assert did_not_learn(summary, "norecord") is False
    assert did_not_learn({}, "anyone") is False
    rows = format_matrix(summary).splitlines()
    assert rows[1] == "failed [DID NOT LEARN: compare nothing] | 0.250"
    assert rows[2] == "learned | 0.950"
    assert rows[3] == "unmeasured | 0.500"
    assert rows[4] == "norecord | nan"
