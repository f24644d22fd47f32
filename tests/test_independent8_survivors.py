"""The seventh independent check's survivors (docs/independent-check-2026-12-07f.md), each killed by a test of its own
effect on the one input its docstring names: values worked by hand, inputs built by hand (the project's own samples,
a few hand-made oracle checks; no warehouse, no model, no network). Each test is an `independent8.*` entry of
`bench/mutations.py`."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.source_helpers import read_all
from tomforge.warehouse.sources.base import Reject


def test_an_identical_action_answer_pair_is_rejected_naming_the_action_field(samples: Path, tmp_path: Path) -> None:
    """BigToM row 0 with its not-aware action answer made the aware one: only its forward_action items are rejected,
    each naming `action_answer_aware` (the field that holds the pair), not the belief field."""
    from tomforge.warehouse.sources.bigtom import ADAPTER, FIELDS

    lines = (samples / "bigtom" / "bigtom-sample.csv").read_text(encoding="utf-8").splitlines()
    values = lines[0].split(";")
    values[FIELDS.index("action_answer_not_aware")] = values[FIELDS.index("action_answer_aware")]
    lines[0] = ";".join(values)
    (tmp_path / "bigtom.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rejects = [r for r in ADAPTER.read(tmp_path / "bigtom.csv") if isinstance(r, Reject)]
    assert rejects, "an identical action answer pair gives rejects"
    assert {r.field for r in rejects} == {"action_answer_aware"}
    assert all(r.record.startswith("row0/") and "identical" in r.reason for r in rejects)


def test_a_trace_ending_in_several_blank_lines_still_gives_every_example_its_trace(
    samples: Path, tmp_path: Path
) -> None:
    """ToMi's own sample (12 examples, 12 trace lines) with two blank lines after the trace: still aligned."""
    from tomforge.warehouse.sources.tomi import ADAPTER

    for suffix in (".txt", ".trace"):
        shutil.copy(samples / "tomi" / f"tomi_sample_train{suffix}", tmp_path / f"tomi_sample_train{suffix}")
    trace = tmp_path / "tomi_sample_train.trace"
    trace.write_text(trace.read_text(encoding="utf-8").rstrip("\n") + "\n\n\n", encoding="utf-8")
    records, rejects = read_all(ADAPTER, tmp_path / "tomi_sample_train.txt")
    assert (len(records), rejects) == (12, [])
    assert {r["meta"]["type_source"] for r in records} == {"trace"}


def test_belief_answers_differing_only_by_spaces_are_an_ambiguous_choice(samples: Path, tmp_path: Path) -> None:
    from tomforge.warehouse.sources.fantom import ADAPTER

    rows = json.loads((samples / "fantom" / "fantom_v1.json").read_text(encoding="utf-8"))
    qa = rows[0]["beliefQAs"][0]
    qa["correct_answer"], qa["wrong_answer"] = "the box", "the box "
    (tmp_path / "fantom_v1.json").write_text(json.dumps(rows), encoding="utf-8")
    rejects = {r.source_ref: r for r in ADAPTER.read(tmp_path / "fantom_v1.json") if isinstance(r, Reject)}
    assert list(rejects) == ["fantom_v1.json#0/beliefQAs/0"]
    assert rejects["fantom_v1.json#0/beliefQAs/0"].field == "wrong_answer"
    assert "same text as correct_answer" in rejects["fantom_v1.json#0/beliefQAs/0"].reason


def test_the_higher_half_of_an_odd_number_of_orders_includes_the_middle_one() -> None:
    """Orders 1, 2, 3 at 30, 60, 90 right of 100, chance 0.5: the higher half is orders 2 and 3, 150 of 200."""
    from tomforge.audits.artifacts import higher_orders_test

    accuracy, chance, _ = higher_orders_test([(3, 100, 90, 0.5), (1, 100, 30, 0.5), (2, 100, 60, 0.5)])
    assert (accuracy, chance) == (pytest.approx(0.75), pytest.approx(0.5))


def test_the_baseline_intervals_are_bonferroni_corrected_over_the_planned_tests(monkeypatch) -> None:
    """Every interval is taken at alpha over the number of planned tests (the table's rows), not at alpha."""
    from tests.audit_data import FAST
    from tests.audits.test_audit_baselines_sample import _frames
    from tomforge.audits import baselines

    asked: list[float] = []
    real = baselines._cluster_bootstrap

    def recording(correct, base, groups, reps: int, seed: int, alpha: float):
        asked.append(alpha)
        return real(correct, base, groups, reps, seed, alpha)

    monkeypatch.setattr(baselines, "_cluster_bootstrap", recording)
    train, heldout = _frames()
    table = baselines.partial_input_baselines(train, heldout, FAST)
    assert table.height >= 2
    assert asked == [pytest.approx(FAST.alpha / table.height)] * table.height


def _check(order: int | None, parsed: bool, agrees: bool | None, n: int):
    from tomforge.generators.real.oracle import OracleCheck

    answer = "box" if parsed else None
    return OracleCheck(f"i{n}", "tomi", order, parsed, answer, "box", agrees, "tomi", "why")


# order 1: three items, two parsed (one agreeing, one not), one the oracle could not parse
CHECKS = [_check(1, True, True, 0), _check(1, True, False, 1), _check(1, False, None, 2)]


def test_the_oracle_reports_agreement_is_over_the_parsed_items(monkeypatch, tmp_path: Path) -> None:
    from tomforge.generators.real import report

    monkeypatch.setattr(report, "check_all", lambda records, name: CHECKS)
    records = [
        {"context": f"story {n}", "question": "q", "perspective_chain": ["Ann"], "source_ref": f"t#{n}"}
        for n in range(3)
    ]
    text = report.render("tomi", tmp_path / "tomi.txt", records)
    assert "| tomi | 1 | 3 | 2 | 1 | 0.500 |" in text.splitlines()


def test_variants_oracle_table_does_not_count_unparsed_items_as_disagreeing(monkeypatch) -> None:
    from rich.console import Console

    from tomforge.flows.commands import ingest

    out = io.StringIO()
    monkeypatch.setattr(ingest, "stdout_console", Console(file=out, width=120, color_system=None))
    outcome = SimpleNamespace(records=[], roles=Counter(), positions=Counter(), padded=0, candidates=0, skipped={})
    ingest.print_variants("tomi", SimpleNamespace(checks=CHECKS, outcome=outcome))
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.getvalue().splitlines() if "│" in line]
    assert ["1", "3", "2", "1", "1"] in rows  # order, items, parsed, agree, disagree
    assert ["1", "3", "2", "1", "2"] not in rows


def test_a_gguf_suffix_in_any_case_is_a_gguf_model(tmp_path: Path) -> None:
    from tomforge.rl.models import ModelSourceError, check_model_spec, is_gguf

    model = tmp_path / "MODEL.GGUF"
    model.write_bytes(b"GGUF")
    assert is_gguf(model)
    check_model_spec(str(model))  # accepted: an existing gguf file
    with pytest.raises(ModelSourceError, match="gguf file not found"):
        check_model_spec(str(tmp_path / "X.Gguf"))


def test_a_stage_interrupted_by_ctrl_c_is_ended_as_failed_and_the_interrupt_raised_on() -> None:
    from tomforge.schemas.progress import PlainLineProgress

    lines: list[str] = []
    progress = PlainLineProgress(write=lines.append)
    with pytest.raises(KeyboardInterrupt):
        with progress.stage("stage x", 3):
            raise KeyboardInterrupt
    assert len(lines) == 1
    assert lines[0].startswith("stage x: failed after ") and lines[0].endswith(" s (0/3)")
