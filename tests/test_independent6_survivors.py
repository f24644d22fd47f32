"""The fifth independent check's survivors (docs/independent-check-2026-12-07d.md), each killed by a test of its own
effect: hand-worked values or the planted problem itself, built by hand (no warehouse but a tiny one, no model, no
network). Each test is an `independent6.*` entry of `bench/mutations.py`."""

from __future__ import annotations

import platform
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest


def test_a_folder_fingerprint_tells_where_a_file_lies(tmp_path: Path) -> None:
    """One file moved from one subfolder to another (HiToM's `Tell/` and `No_Tell/` mean different records): another
    input, another fingerprint; the whole folder moved elsewhere keeps it."""
    from tomforge.warehouse.fingerprint import fingerprint

    def folder(name: str, sub: str) -> Path:
        (tmp_path / name / sub).mkdir(parents=True)
        (tmp_path / name / sub / "x.json").write_text("1")
        return tmp_path / name

    assert fingerprint(folder("one", "Tell")) != fingerprint(folder("two", "No_Tell"))
    assert fingerprint(folder("one-moved", "Tell")) == fingerprint(tmp_path / "one")


def test_a_missing_tool_is_recorded_as_missing_when_asked() -> None:
    from tomforge.schemas.versions import tool_versions

    name = "tomforge-no-such-distribution"
    assert tool_versions([name], missing="absent") == {"python": platform.python_version(), name: "absent"}
    assert tool_versions([name]) == {"python": platform.python_version()}


def test_a_record_missing_one_field_is_reported_under_that_field() -> None:
    """Every required field but `question` given (as None): the error names `question`, not a field it has."""
    from tomforge.schemas import record_schema
    from tomforge.warehouse.validate import first_error

    required = record_schema()["required"]
    assert "question" in required
    path, reason = first_error({name: None for name in required if name != "question"})
    assert path == "question"
    assert "'question'" in reason


def test_a_source_without_held_out_items_is_checked_without_a_held_out_side() -> None:
    from tomforge.audits.by_source import facts_of_source
    from tomforge.audits.config import AuditParams
    from tomforge.audits.verdict import AuditFacts

    items = pl.DataFrame(
        {
            "item_id": ["h1", "h2", "t1", "t2"],
            "source": ["hitom", "hitom", "tomi", "tomi"],
            "side": ["heldout", "train", "train", "train"],
            "selection": ["heldout", "train", "train", "train"],
        }
    )
    facts = AuditFacts({}, items, pl.DataFrame(), AuditParams(), True)
    check = SimpleNamespace(owns=(), reads=())
    tomi = facts_of_source(check, facts, "tomi", lambda table: None)  # type: ignore[arg-type]
    hitom = facts_of_source(check, facts, "hitom", lambda table: None)  # type: ignore[arg-type]
    assert not isinstance(tomi, str) and not isinstance(hitom, str)
    assert (tomi.has_heldout, hitom.has_heldout) == (False, True)


def test_twenty_six_options_are_lettered_and_twenty_seven_numbered() -> None:
    from tomforge.schemas.rl.prompts import option_labels

    assert option_labels(26) == list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert option_labels(27) == [str(i) for i in range(1, 28)]


def test_a_warning_check_shows_its_action() -> None:
    from tomforge.audits.summary import AuditSummary
    from tomforge.audits.verdict import Verdict

    verdicts = [
        Verdict("overlap", "pass", "no pairs", "none"),
        Verdict("labels", "warn", "2 conflicts", "look at `labels.csv`"),
        Verdict("ranks", "fail", "gap 12 points", "rebalance"),
    ]
    summary = AuditSummary("r", "split = 'train'", None, 1, 0, 0, pl.DataFrame(), {}, verdicts=verdicts)
    actions = [line.split("-> ")[1] for line in summary.verdict_lines() if "-> " in line]
    assert actions == ["look at labels.csv", "rebalance"]


def test_a_jaccard_threshold_of_zero_is_refused() -> None:
    from tomforge.audits.scan_config import ScanParams, ScanSettingsError

    with pytest.raises(ScanSettingsError):
        ScanParams(jaccard_threshold=0.0)
    assert ScanParams(jaccard_threshold=1.0).jaccard_threshold == 1.0


def test_release_facts_fill_only_what_the_stored_row_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments import gate_report

    facts = {("c", "s", "1"): {"chance": 0.5, "rendering": "dialogue"}}
    monkeypatch.setattr(gate_report, "_item_facts", lambda release, splits: facts)
    row = {"config": "c", "split": "s", "item_id": 1, "chance": 0.25, "rendering": None}
    (out,) = gate_report.with_release_facts([row], "release", ["c/s"])
    assert (out["chance"], out["rendering"]) == (0.25, "dialogue")


def test_the_stale_audit_line_counts_each_kind_in_its_place() -> None:
    from tomforge.audits.freshness import Freshness

    fresh = Freshness("run1", "split = 'train'", None, removed=1, content_changed=2, selection_changed=3)
    message = fresh.message(Path("w.duckdb"), "clean")
    assert "6 items changed" in message
    assert "(2 with new content, 1 removed, 3 new to or moved between its selections)" in message


def test_a_bucket_of_exactly_max_bucket_members_is_searched() -> None:
    from tomforge.audits.lsh import candidate_pairs_from_keys

    keys = np.array([[7], [7], [7], [9]], dtype=np.uint64)  # one band: three documents share a key
    pairs, skipped = candidate_pairs_from_keys(keys, max_bucket=3)
    assert skipped == 0
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    pairs, skipped = candidate_pairs_from_keys(keys, max_bucket=2)
    assert (pairs.shape[0], skipped) == (0, 1)


def test_memory_questions_are_counted_apart_from_order_zero() -> None:
    from tomforge.generators.shortcuts import balance_summary

    def record(question_type: str) -> dict:
        meta = {"gold_role": "first", "base_agents": 2, "n_moves": 1}
        return {"question_type": question_type, "belief_order": 0, "meta": meta, "answer_format": "free_text"}

    summary = balance_summary([record("memory"), record("reality"), record("reality")])
    assert summary["memory"]["format"]["free_text"] == 1
    assert summary["0"]["format"]["free_text"] == 2


def test_a_killed_runs_partial_folder_leaves_nothing_behind(tmp_path: Path) -> None:
    from tomforge.flows.staging import _save

    folder = tmp_path / "hitom-abc"
    (tmp_path / "hitom-abc.partial").mkdir()
    (tmp_path / "hitom-abc.partial" / "stray.parquet").write_text("from a killed run")

    class Staged:
        def save(self, path: Path) -> None:
            path.mkdir(parents=True, exist_ok=True)
            (path / "part-0.parquet").write_text("rows")

    assert _save(folder, Staged()) == folder  # type: ignore[arg-type]
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet"]
    assert not (tmp_path / "hitom-abc.partial").exists()


class _Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.response = SimpleNamespace(status_code=status)


def _documented_cases() -> list[tuple[str, object, object]]:
    """(what the docstring promises, what the code gives, what it should be): one row per special case a rule's
    docstring names. The pattern the five checks' survivors share most (docs/independent-check-2026-12-07d.md): a
    documented special case dropped, the common case still right."""
    from tomforge.generators.question_forms import formats_of_forms
    from tomforge.generators.renderings import GeneratorChoiceError
    from tomforge.generators.shortcuts import balance_summary
    from tomforge.hub.remote import is_transient
    from tomforge.rl.evaluate import did_not_learn
    from tomforge.rl.sft import target_answer
    from tomforge.schemas.rl.licenses import forbids_training
    from tomforge.schemas.versions import tool_versions
    from tomforge.warehouse.sources.rl_prompt import content_parts

    def refused(forms: list[str]) -> bool:
        try:
            formats_of_forms(forms)
        except GeneratorChoiceError:
            return True
        return False

    memory = {"question_type": "memory", "belief_order": 0, "answer_format": "free_text"}
    memory["meta"] = {"gold_role": "first", "base_agents": 2, "n_moves": 1}
    empty_list = '{"answer_format": "list", "answer_list": [], "answer": ""}'
    return [
        ("a text part without a type is text (check 1, #15)", content_parts([{"text": "hi"}]), ("hi", [])),
        ("an unknown gate did not fail (check 1, #19)", did_not_learn({"gates": {"m": {"passed": None}}}, "m"), False),
        ("'evaluation-only', any case, forbids training (check 2, #27)", forbids_training("Evaluation-Only"), True),
        ("an empty list answer's target is 'none' (check 3, #50)", target_answer(empty_list), "none"),
        ("429 is retried (check 3, #55)", is_transient(_Status(429)), True),
        ("no question forms are refused (check 4, #69)", refused([]), True),
        (
            "a missing tool is recorded as `missing` (check 5, #82)",
            tool_versions(["tomforge-none"], "absent")["tomforge-none"],
            "absent",
        ),
        ("memory questions are counted apart (check 5, #96)", sorted(balance_summary([memory])), ["memory"]),
    ]


def test_every_documented_special_case_holds() -> None:
    wrong = [(what, got, want) for what, got, want in _documented_cases() if got != want]
    assert wrong == []
