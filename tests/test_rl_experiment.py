"""The templated-vs-controlled experiment's pieces on CPU: the generator without heuristic controls,
the story-disjoint HiToM split and the experiment's release table, the shortcut diagnostic and the
intervals, and the non-finite gradient guard."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from experiments.experiment_data import ExperimentData, build_experiment_table, story_sides
from experiments.experiment_report import shortcut, wilson
from tomforge.audits.shortcuts import shortcut_table, worst_gap
from tomforge.generators import generate_records
from tomforge.schemas.world.checker import check_record

SAMPLES = Path(__file__).resolve().parents[1] / "warehouse" / "samples"


def test_generator_without_controls_keeps_gold_answers_and_loses_balance() -> None:
    records = list(generate_records(600, max_order=3, seed=5, include_memory=False, controls=False))
    assert len(records) == 600
    assert all(check_record(r) == [] for r in records)  # the trace-only checker re-derives every gold
    assert {r["belief_order"] for r in records} == {0, 1, 2, 3}
    assert worst_gap(shortcut_table(records)) > 0.2  # natural rates: heuristics far from chance
    controlled = list(generate_records(600, max_order=3, seed=5, include_memory=False))
    assert worst_gap(shortcut_table(controlled)) < worst_gap(shortcut_table(records)) / 3
    for r in records:  # no padding, no reordering: options in the order the scene lists the containers
        if r["answer_format"] == "multiple_choice":
            scene = r["context"].split("\n")
            listing = next(line for line in scene if all(o in line for o in r["options"]))
            assert sorted(r["options"], key=listing.index) == r["options"]


def test_story_sides_split_stories_per_cell() -> None:
    stories = [(f"s{i}", length, deception) for i, (length, deception) in enumerate([(1, False)] * 6 + [(2, True)] * 3)]
    sides = story_sides(stories, 2 / 3, seed=0)
    assert set(sides) == {s for s, *_ in stories}
    by_cell = {}
    for story, length, deception in stories:
        by_cell.setdefault((length, deception), []).append(sides[story])
    assert sorted(by_cell[(1, False)]) == ["test"] * 2 + ["train"] * 4
    assert sorted(by_cell[(2, True)]) == ["test"] + ["train"] * 2
    assert story_sides(stories, 2 / 3, seed=0) == sides and story_sides(stories, 2 / 3, seed=1) != sides


@pytest.fixture(scope="module")
def experiment_warehouse(tmp_path_factory) -> Path:
    """The sample HiToM file holds two stories in two (length, deception) cells: the stories are
    divided alternately here (story_sides itself is tested above), so both sides exist."""
    import experiments.experiment_data as experiment_data
    from tomforge.generators import ADAPTER_INFO
    from tomforge.warehouse import db
    from tomforge.warehouse.ingest import ingest
    from tomforge.warehouse.load import ingest_records

    base = tmp_path_factory.mktemp("exp")
    warehouse = base / "data.duckdb"
    ingest(warehouse, "hitom", SAMPLES / "hitom" / "Hi-ToM_data.json")
    ingest(warehouse, "tomi", SAMPLES / "tomi")
    plan = ExperimentData(n_gen_train=40, n_gen_test=21, tomi_per_order=2)
    from experiments.experiment_data import _generated

    for ref, records in _generated(plan):
        ingest_records(warehouse, ADAPTER_INFO, records, ref)

    def alternate(stories, share, seed):
        return {c: ("train", "test")[i % 2] for i, (c, *_) in enumerate(sorted(stories))}

    with pytest.MonkeyPatch.context() as patch, db.building(warehouse) as con:
        patch.setattr(experiment_data, "story_sides", alternate)
        build_experiment_table(con, plan)
    return warehouse


def test_experiment_table_keeps_stories_apart_and_order4_held_out(experiment_warehouse: Path) -> None:
    con = duckdb.connect(str(experiment_warehouse), read_only=True)

    def contexts(split: str) -> set[str]:
        return {
            r[0]
            for r in con.execute(
                "SELECT context_id FROM experiment_items WHERE source = 'hitom' AND split = ?", [split]
            ).fetchall()
        }

    assert contexts("train_story_split") and contexts("test_stories")
    assert not contexts("train_story_split") & contexts("test_stories")
    orders = dict(
        con.execute(
            "SELECT split, list(DISTINCT belief_order ORDER BY belief_order) FROM experiment_items "
            "WHERE source = 'hitom' GROUP BY 1"
        ).fetchall()
    )
    assert max(orders["train_orders0to3"]) <= 3 and max(orders["train_story_split"]) <= 3
    assert orders.get("test_order4", [4]) == [4]
    styles = con.execute(
        "SELECT DISTINCT json_extract_string(meta, '$.prompting_type') FROM experiment_items "
        "WHERE source = 'hitom' AND split LIKE 'test%'"
    ).fetchall()
    assert styles == [("VP",)]
    gen = dict(
        con.execute(
            "SELECT split, list(DISTINCT belief_order ORDER BY belief_order) FROM experiment_items "
            "WHERE source = 'tomforge_gen' GROUP BY 1"
        ).fetchall()
    )
    assert gen["train_controlled"] == gen["train_templated"] == [0, 1, 2, 3]
    assert gen["test_orders0to3"] == [0, 1, 2, 3] and gen["test_orders4to6"] == [4, 5, 6]
    per_order = con.execute(
        "SELECT belief_order, count(*) FROM experiment_items WHERE source = 'tomi' GROUP BY 1"
    ).fetchall()
    assert per_order and all(n <= 2 for _, n in per_order)


def test_wilson_interval_matches_the_textbook_value() -> None:
    assert wilson(5, 10) == [0.2366, 0.7634]  # (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    assert wilson(0, 0) is None


def _eval_rows(records: list[dict], answer: str) -> pl.DataFrame:
    """Eval rows for a model that always answers `answer` ('first': the first-mentioned candidate, 'gold')."""
    from tomforge.audits.features import item_features, records_frame
    from tomforge.rl.reward import score_completion
    from tomforge.schemas.rl.prompts import option_labels

    items = records_frame(records)
    df = items.join(item_features(items), on="item_id", how="left")
    rows = []
    for r in df.iter_rows(named=True):
        if answer == "gold":
            text = r["answer"]
        elif r["answer_format"] == "yes_no":
            text = "yes" if r["pick_first"] == r["asked_norm"] else "no"
        else:
            text = r["pick_first"] or "nothing"
        if r["answer_format"] == "multiple_choice":
            normalized = [" ".join(o.lower().replace("_", " ").split()) for o in r["options"]]
            wanted = " ".join(text.lower().replace("_", " ").split())
            text = option_labels(len(r["options"]))[normalized.index(wanted)] if wanted in normalized else "Z"
        rows.append({**r, "extracted": text, "format_ok": True})
    frame = pl.DataFrame(rows, infer_schema_length=None)

    correct = [
        score_completion(
            f"<think>x</think><answer>{row['extracted']}</answer>",
            json.dumps(
                {
                    "answer_format": row["answer_format"],
                    "answer": row["answer"],
                    "options": row["options"],
                    "answer_index": row["answer_index"],
                    "option_labels": option_labels(len(row["options"] or [])),
                }
            ),
        ).correct
        for row in rows
    ]
    return frame.with_columns(pl.Series("correct", correct))


def test_shortcut_diagnostic_on_planted_models() -> None:
    records = list(generate_records(120, max_order=2, seed=2, include_memory=False, controls=False))
    follower = shortcut(_eval_rows(records, "first"))["first"]
    assert follower["agree"] == 1.0  # always answers the first-mentioned candidate
    assert follower["acc_when_right"] == 1.0 and follower["acc_when_wrong"] == 0.0
    oracle = shortcut(_eval_rows(records, "gold"))
    for name, cell in oracle.items():
        assert cell["acc_when_right"] == cell["acc_when_wrong"] == 1.0, name
        assert cell["agree"] == cell["heuristic_acc"], name  # agrees exactly where the heuristic is right


def test_nonfinite_guard_drops_the_step() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import TrainerControl, TrainerState

    from tomforge.rl.trl_backend import nonfinite_guard

    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    guard = nonfinite_guard()
    state = TrainerState()
    for bad in (False, True):
        model.zero_grad()
        model(torch.ones(1, 3)).sum().backward()
        if bad:
            model.weight.grad[0, 0] = float("nan")
        before = copy.deepcopy(model.state_dict())
        guard.on_pre_optimizer_step(None, state, TrainerControl(), model=model)
        optimizer.step()
        changed = any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
        assert changed is (not bad)
        state.global_step += 1
    assert guard.skipped == [2]
    assert all(torch.isfinite(p).all() for p in model.parameters())


def _metrics(folder: Path, accs: dict[str, dict[str, float]], agree: float = 0.5) -> Path:
    """A planted rl.experiment_report output: arm -> {set -> accuracy}."""
    folder.mkdir(parents=True)
    arms = [
        {
            "name": arm,
            "eval": {split: {"acc": acc} for split, acc in sets.items()},
            "shortcut": {
                split: {
                    "modal_position": {
                        "agree": agree,
                        "acc_when_right": 0.75,
                        "acc_when_wrong": 0.25,
                        "n_right": 4,
                        "n_wrong": 12,
                    }
                }
                for split in sets
            },
        }
        for arm, sets in accs.items()
    ]
    (folder / "metrics.json").write_text(json.dumps({"arms": arms}))
    return folder


def test_seed_summary_matches_hand_worked_means_and_paired_signs(tmp_path: Path) -> None:
    from experiments.experiment_seeds import main, summarize

    runs = {
        "s0": _metrics(
            tmp_path / "s0",
            {
                "templated-gen": {"gen": 0.40, "tomi": 0.50},
                "controlled-gen": {"gen": 0.30, "tomi": 0.50},
                "base": {"gen": 0.0},
            },
        ),
        "s1": _metrics(
            tmp_path / "s1",
            {"templated-gen": {"gen": 0.20, "tomi": 0.60}, "controlled-gen": {"gen": 0.35, "tomi": 0.70}},
        ),
    }
    summary = summarize(runs)
    rows = {(r["arm"], r["split"]): r for r in summary["accuracy"]}
    assert set(rows) == {
        ("controlled-gen", "gen"),
        ("controlled-gen", "tomi"),
        ("templated-gen", "gen"),
        ("templated-gen", "tomi"),
    }  # base is not in every seed
    assert rows[("templated-gen", "gen")]["mean"] == pytest.approx(0.30)  # (0.40 + 0.20) / 2
    assert (rows[("templated-gen", "gen")]["min"], rows[("templated-gen", "gen")]["max"]) == (0.20, 0.40)
    diffs = {r["split"]: r for r in summary["differences"]}
    assert diffs["gen"]["per_seed"] == {"s0": pytest.approx(-0.10), "s1": pytest.approx(0.15)}
    assert diffs["gen"]["mean"] == pytest.approx(0.025)
    assert (diffs["gen"]["ahead"], diffs["gen"]["behind"], diffs["gen"]["level"]) == (1, 1, 0)
    assert (diffs["tomi"]["ahead"], diffs["tomi"]["behind"], diffs["tomi"]["level"]) == (1, 0, 1)
    assert len(summary["shortcut"]) == 2 * 2 + 1 + 2 * 2  # seed0: 2 arms x 2 sets + base x 1 set; seed1: 2 x 2
    assert main(["--run", f"s0={runs['s0']}", "--run", f"s1={runs['s1']}", "--out", str(tmp_path / "out")]) == 0
    assert "| controlled-gen | gen | 0.300 | 0.350 | 0.325 | 0.050 |" in (tmp_path / "out" / "seeds.md").read_text()
    with pytest.raises(SystemExit):
        main(["--run", f"s0={tmp_path / 'missing'}", "--out", str(tmp_path / "out")])
