"""The rationale experiment (issue 27, item 4) on CPU: the job queue's order and dependencies, trace fidelity in
the report against a hand-worked case, and a smoke run of the whole script (SFT with and without rationales, RL
with the process reward, evaluation, report) with a tiny model on a tiny release made by the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from experiments.rationale_experiment import ARMS, EVAL_SPLITS, Job, plan_jobs

SAMPLES = Path(__file__).resolve().parents[1] / "warehouse" / "samples"


def test_queue_runs_every_job_once_after_what_it_needs() -> None:
    jobs = plan_jobs(list(ARMS), [0, 1, 2])
    # eight arms of the rationale runs and eight sizes of the scaling curve (8k, 16k, 32k, 64k, 128k, 256k, 384k,
    # 512k) in four target forms (answer only, curriculum, events, steps), x three seeds x (train, eval)
    assert len(jobs) == len(set(jobs)) == (8 + 8 * 4) * 3 * 2
    position = {j: i for i, j in enumerate(jobs)}
    for job in jobs:
        assert all(position[need] < position[job] for need in job.needs()), job
    assert Job("rl", "rationale-rl-process", 1).needs() == [Job("sft", "rationale", 1)]  # same seed's rationale model
    assert Job("eval", "rationale-rl", 2).needs() == [Job("rl", "rationale-rl", 2)]
    # the arms that carry the conclusion are trained first, in every seed
    assert [j.name for j in jobs[:6]] == [f"sft-{a}-s{s}" for s in (0, 1, 2) for a in ("answer-only", "rationale")]


def test_a_scaling_arm_trains_on_its_examples_at_the_recipes_batch() -> None:
    from experiments.rationale_experiment import RECIPE, sft_steps

    # issue 37: 8,000 / 32,000 / 128,000 examples at batch 128 are 62 / 250 / 1,000 optimizer steps (worked by hand)
    recipe = {**RECIPE, "sft_batch": 128}
    assert [sft_steps(ARMS[f"answer-only-{k}k"], recipe) for k in (8, 32, 128)] == [62, 250, 1000]
    assert sft_steps(ARMS["answer-only"], recipe) == RECIPE["sft_steps"]  # the other arms keep the recipe's steps
    assert not ARMS["answer-only-32k"].rationale
    # run 16: the rationale arms of the curve train on their own form, with room for its text at evaluation
    assert (ARMS["curriculum-64k"].form, ARMS["events-8k"].form, ARMS["steps-32k"].form) == (
        "curriculum",
        "events",
        "steps",
    )
    assert ARMS["curriculum-64k"].rationale and ARMS["curriculum-64k"].eval_tokens == 640
    assert sft_steps(ARMS["events-128k"], recipe) == 1000


def test_a_scaling_arm_takes_its_distinct_examples_before_training() -> None:
    import pyarrow as pa

    from experiments.rationale_experiment import examples_of

    table = pa.table({"i": list(range(100))})
    picked = examples_of(table, 30, seed=0).column("i").to_pylist()
    assert len(picked) == len(set(picked)) == 30 and picked == sorted(picked)  # distinct rows, split order
    assert picked == examples_of(table, 30, seed=0).column("i").to_pylist()  # the same under the seed
    assert picked != examples_of(table, 30, seed=1).column("i").to_pylist()
    assert examples_of(table, None, 0).num_rows == examples_of(table, 500, 0).num_rows == 100  # all rows


def test_an_arm_of_its_own_seeds_runs_only_those_after_what_it_needs() -> None:
    # run 9: the third seed (1) of the RL arms alone, with the rationale model of that seed they start from
    jobs = plan_jobs(["rationale", "rationale-rl"], [0, 1, 2], {"rationale": [1], "rationale-rl": [1]})
    assert [j.name for j in jobs] == [
        "sft-rationale-s1",
        "eval-rationale-s1",
        "rl-rationale-rl-s1",
        "eval-rationale-rl-s1",
    ]
    from tomforge.generators.rationale_text import FORMS

    assert {a.form for a in ARMS.values() if a.form} == set(FORMS)  # every form has its arm


def test_run_7_arms_keep_the_events_form_while_the_default_is_curriculum() -> None:
    from experiments.rationale_experiment import RECIPE, Arm, target_form

    # run 11's 3-seed result made curriculum the default; run 7's arms must still train on what they trained on
    assert RECIPE["rationale_form"] == "curriculum"
    assert target_form(ARMS["rationale"], RECIPE) == target_form(ARMS["rationale-templated"], RECIPE) == "events"
    assert target_form(ARMS["answer-only"], RECIPE) is None
    assert target_form(Arm("tomforge_gen/train_controlled"), RECIPE) == "curriculum"  # a new arm: the default
    assert target_form(ARMS["rationale-curriculum"], {**RECIPE, "rationale_form": "events"}) == "curriculum"


def test_run_11_plan_puts_the_rl_arms_before_evaluations_and_drops_what_it_is_told() -> None:
    from experiments.rationale_experiment import drop_jobs

    arms = [
        "rationale",
        "rationale-rl",
        "rationale-rl-process",
        "rationale-curriculum",
        "rationale-curriculum-rl-process",
    ]
    own = {"rationale": [1], "rationale-rl": [1], "rationale-rl-process": [1]}
    own |= {"rationale-curriculum": [2], "rationale-curriculum-rl-process": [2]}
    jobs = drop_jobs(plan_jobs(arms, [1, 2], own), {"eval-rationale-s1", "eval-rationale-curriculum-s2"})
    assert [j.name for j in jobs] == [
        "sft-rationale-s1",
        "rl-rationale-rl-s1",
        "rl-rationale-rl-process-s1",
        "eval-rationale-rl-s1",
        "eval-rationale-rl-process-s1",
        "sft-rationale-curriculum-s2",
        "rl-rationale-curriculum-rl-process-s2",
        "eval-rationale-curriculum-rl-process-s2",
    ]
    # the new arm starts from the curriculum model of its own seed, with the process reward on
    assert Job("rl", "rationale-curriculum-rl-process", 2).needs() == [Job("sft", "rationale-curriculum", 2)]
    assert ARMS["rationale-curriculum-rl-process"].process == ARMS["rationale-rl-process"].process == 1.0
    with pytest.raises(ValueError, match="eval-rationale-s0"):
        drop_jobs(jobs, {"eval-rationale-s0"})  # a typo must not silently run everything


def test_an_earlier_run_folder_unpacks_into_work_folders_with_the_evaluated_models_records(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from experiments.rationale_report import job_folders, unpack_run
    from tomforge.rl.evaluate import EVAL_COLUMNS

    run = tmp_path / "run"
    (run / "jobs").mkdir(parents=True)
    rows = [
        {"label": "rationale-curriculum/s2", "config": "tomi", "split": "test", "item_id": "a", "correct": True},
        {"label": "rationale-curriculum/s2", "config": "tomi", "split": "test", "item_id": "b", "correct": False},
        {"label": "rationale-rl/s1", "config": "tomi", "split": "test", "item_id": "a", "correct": False},
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=EVAL_COLUMNS), run / "eval_results.parquet")
    records = {  # run 11's layout: the model evaluated is call 6's; call 2's was lost; rationale-s1 never evaluated
        "call-2-rationale-curriculum-s2-sft.json": {"call": 2},
        "call-6-rationale-curriculum-s2-sft.json": {"call": 6},
        "rationale-curriculum-s2-eval.json": {"call": 6},
        "rationale-rl-s1-rl.json": {"call": 2},
        "rationale-s1-sft.json": {"call": 2},
    }
    for name, record in records.items():
        (run / "jobs" / name).write_text(json.dumps(record))
    work = tmp_path / "work"
    assert unpack_run(run, work) == [("rationale-curriculum", 2), ("rationale-rl", 1)]
    assert set(job_folders(work)) == {("rationale-curriculum", 2), ("rationale-rl", 1)}
    assert json.loads((work / "rationale-curriculum-s2" / "sft.json").read_text()) == {"call": 6}
    assert pl.read_parquet(work / "rationale-curriculum-s2" / "eval.parquet")["item_id"].to_list() == ["a", "b"]
    assert (work / "rationale-rl-s1" / "rl.json").is_file()
    assert not (work / "rationale-s1").exists()  # a record alone does not make an evaluated arm
    with pytest.raises(SystemExit, match="already there"):
        unpack_run(run, work)  # two runs holding one label must not silently mix


def test_side_by_side_sft_throughput_as_worked_by_hand() -> None:
    from experiments.experiment_report import PARAMETERS, PEAK_FLOPS
    from experiments.rationale_report import side_by_side_sft

    records = [
        {"job": "a", "started_at": 100.0, "seconds": 50.0, "tokens": 1000, "peak_gpu_gb": 5.0},
        {"job": "b", "started_at": 120.0, "seconds": 40.0, "tokens": 800, "peak_gpu_gb": 6.0},
        {"job": "c", "started_at": 200.0, "seconds": 10.0, "tokens": 100, "peak_gpu_gb": 4.0},
        {"job": "run 7, no start time", "seconds": 10.0, "tokens": 100},
    ]
    first, second = side_by_side_sft(records)
    # a and b overlap (120 < 150): 1,800 tokens from 100 to 160 s; own rates 20 + 20 tokens/s; c trains alone
    assert (first["jobs"], first["span_seconds"], first["aggregate_tokens_per_s"]) == (["a", "b"], 60.0, 30.0)
    assert first["sum_of_process_tokens_per_s"] == 40.0 and first["peak_gpu_gb_per_process"] == 6.0
    assert first["aggregate_mfu"] == round(6 * PARAMETERS * 30.0 / PEAK_FLOPS, 5)
    assert (second["jobs"], second["processes"], second["aggregate_tokens_per_s"]) == (["c"], 1, 10.0)


def test_split_entry_reports_fidelity_as_worked_by_hand() -> None:
    from experiments.experiment_report import split_entry

    rows = pl.DataFrame(
        {  # order 4: right for the right reasons, right for the wrong ones; order 5: wrong;
            "correct": [True, True, False, True],
            "format_ok": [True, True, True, False],  # last: no world to judge
            "faithful": [True, False, False, None],
            "claims_correct": [5, 2, 4, None],
            "claims_contradicted": [0, 1, 3, None],
            "belief_order": [4, 4, 5, 5],
        }
    )
    entry = split_entry(rows)
    assert (entry["n"], entry["correct"], entry["format_rate"]) == (4, 3, 0.75)
    assert entry["fidelity"] == {
        "with_world": 3,
        "right_reasons": round(1 / 3, 4),
        "wrong_reasons": round(1 / 3, 4),
        "faithful_share": 0.5,
        "mean_claims_correct": round(11 / 3, 4),
        "mean_claims_contradicted": round(4 / 3, 4),
    }
    assert entry["fidelity_by_order"]["4"]["right_reasons"] == 0.5
    assert entry["fidelity_by_order"]["5"] == {
        "with_world": 1,
        "right_reasons": 0.0,
        "wrong_reasons": 0.0,
        "faithful_share": None,
        "mean_claims_correct": 4.0,
        "mean_claims_contradicted": 3.0,
    }


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("trl")
    from experiments.experiment_data import ExperimentData, prepare
    from experiments.rationale_experiment import main
    from tomforge.rl.release import SplitRef, read_split
    from tomforge.rl.tiny_model import build_model, build_tokenizer
    from tomforge.schemas.progress import SILENT

    base = tmp_path_factory.mktemp("rexp")
    plan = ExperimentData(
        hitom=str(SAMPLES / "hitom" / "Hi-ToM_data.json"),
        tomi=str(SAMPLES / "tomi"),
        n_gen_train=16,
        n_gen_test=14,
        n_gen_test_templated=8,
        tomi_per_order=1,
    )
    prepare(base, plan, SILENT)
    release = base / "release"
    texts = [
        m["content"]
        for p in read_split(release, SplitRef.parse("tomforge_gen/train_controlled")).column("prompt").to_pylist()
        for m in p
    ]
    tokenizer = build_tokenizer(texts, vocab_size=1200)
    build_model(tokenizer).save_pretrained(base / "tiny")
    tokenizer.save_pretrained(base / "tiny")
    recipe = {
        "sft_steps": 2,
        "sft_batch": 4,
        "rl_steps": 1,
        "generations": 2,
        "rl_batch": 4,
        "rl_micro_batch": 4,
        "completion": 8,
        "eval_tokens": 8,
        "eval_limit": 2,
        "eval_batch": 4,
    }
    code = main(
        [
            "run",
            "--release",
            str(release),
            "--model",
            str(base / "tiny"),
            "--work",
            str(base / "work"),
            "--seeds",
            "0",
            "--arms",
            "answer-only,rationale,rationale-rl-process",
            "--in-process",
            "--recipe",
            json.dumps(recipe),
        ]
    )
    return {"base": base, "code": code, "recipe": recipe}


def test_smoke_trains_and_evaluates_every_arm(smoke_run: dict) -> None:
    work = smoke_run["base"] / "work"
    assert smoke_run["code"] == 0
    calls = json.loads((work / "calls.json").read_text())
    assert set(calls[-1]["status"].values()) == {"done"} and len(calls[-1]["status"]) == 6
    sft = {arm: json.loads((work / f"{arm}-s0" / "sft.json").read_text()) for arm in ("answer-only", "rationale")}
    assert sft["answer-only"]["steps"] == sft["rationale"]["steps"] == 2  # the same budget
    assert (sft["answer-only"]["rationale_form"], sft["rationale"]["rationale_form"]) == (None, "events")
    assert sft["rationale"]["tokens"] > sft["answer-only"]["tokens"]  # the same items, with rationales in the targets
    rl = json.loads((work / "rationale-rl-process-s0" / "rl.json").read_text())
    assert rl["steps"] == 1 and rl["process_weight"] == 1.0
    assert rl["start"] == str(work / "rationale-s0" / "sft")
    assert "rewards/process_reward/mean" in rl["curve"][0]  # the process term was part of the reward
    rows = pl.read_parquet(work / "rationale-s0" / "eval.parquet")
    available = {f"{c}/{s}" for c, s in rows.select("config", "split").unique().iter_rows()}
    assert available <= set(EVAL_SPLITS) and "tomforge_gen/test_templated" in available
    assert rows.group_by("config", "split").len()["len"].to_list() == [2] * len(available)  # eval_limit per split
    # a sequel call finds every job done and runs none again
    from experiments.rationale_experiment import main

    assert (
        main(
            [
                "run",
                "--release",
                str(smoke_run["base"] / "release"),
                "--model",
                str(smoke_run["base"] / "tiny"),
                "--work",
                str(work),
                "--seeds",
                "0",
                "--arms",
                "answer-only",
                "--in-process",
                "--recipe",
                json.dumps(smoke_run["recipe"]),
            ]
        )
        == 0
    )
    assert set(json.loads((work / "calls.json").read_text())[-1]["status"].values()) == {"skipped"}


def test_smoke_report_counts_every_row_and_pairs_the_seeds(smoke_run: dict) -> None:
    from experiments.rationale_report import report

    base = smoke_run["base"]
    metrics = report(base / "data.duckdb", base / "work", base / "report")
    total = sum(pl.read_parquet(p).height for p in (base / "work").glob("*/eval.parquet"))
    assert metrics["eval_rows_stored"] == total == 3 * 2 * len(metrics["runs"][0]["eval"])
    assert {(e["arm"], e["seed"]) for e in metrics["runs"]} == {
        ("answer-only", 0),
        ("rationale", 0),
        ("rationale-rl-process", 0),
    }
    for entry in metrics["runs"]:
        for split, ev in entry["eval"].items():
            assert ev["n"] == 2 and "fidelity" in ev and "by_order" in ev, (entry["arm"], split)
    by = {(e["arm"]): e for e in metrics["runs"]}
    pair = {r["split"]: r for r in metrics["paired"]}
    for split, row in pair.items():
        assert row["per_seed"][0] == pytest.approx(
            by["rationale"]["eval"][split]["acc"] - by["answer-only"]["eval"][split]["acc"]
        )
    assert "| rationale (0) |" in (base / "report" / "summary.md").read_text()


def test_the_templated_vs_controlled_experiment_runs_the_fast_path_by_default() -> None:
    from experiments.experiment import RECIPE, eval_args, train_args

    train = train_args("m", "rel", "tomforge_gen/train_controlled", Path("o"), RECIPE, bf16=True)
    assert train[train.index("--batch-size") + 1] == "128" and train[train.index("--grad-accum") + 1] == "1"
    assert "--fast-generation" in train
    assert "--no-compile" in train  # pinned as runs 4-11 ran (compiling pays only for longer runs)
    evaluate = eval_args("m", "rel", "base", Path("w.duckdb"), Path("o"), RECIPE)
    assert evaluate[evaluate.index("--generator") + 1] == "fast"
    runs45 = {**RECIPE, "generator": "hf", "rl_micro_batch": 16, "fast_rollouts": False}  # runs 4 and 5
    assert "--hf-generation" in train_args("m", "rel", "s", Path("o"), runs45, bf16=True)
    assert eval_args("m", "rel", "base", Path("w"), Path("o"), runs45)[evaluate.index("--generator") + 1] == "hf"
