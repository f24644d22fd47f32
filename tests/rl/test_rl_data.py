"""The RL runs' data comes from the project's pipeline: generated questions and the ToMi/HiToM
samples go through the warehouse and the real publish code into a release folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.data import HIGHER_ORDER_SPLIT, DataPlan, eval_refs
from tests.rl_data import SMALL_PLAN, small_release
from tomforge.rl.evaluate import evaluate
from tomforge.rl.release import SplitRef, list_splits, read_split
from tomforge.rl.reward import reward
from tomforge.rl.sft import target_completion


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return small_release(tmp_path_factory.mktemp("rl-data"))


def test_release_layout_and_manifest(release: Path) -> None:
    splits = list_splits(release)
    assert splits["tomforge_gen"] == sorted(["train", "validation", "test", HIGHER_ORDER_SPLIT])
    assert splits["tomi"] == ["test", "train"] and splits["hitom"] == ["unsplit"]
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["counts"]["n_items"] == sum(read_split(release, SplitRef("all", s)).num_rows for s in splits["all"])
    assert eval_refs(release) == [
        "tomforge_gen/test",
        "hitom/unsplit",
        f"tomforge_gen/{HIGHER_ORDER_SPLIT}",
        "tomi/test",
        "tomi/train",
    ]


def test_orders_in_distribution_and_held_out(release: Path) -> None:
    def orders(split: str) -> set:
        return set(read_split(release, SplitRef("tomforge_gen", split)).column("belief_order").to_pylist())

    top = SMALL_PLAN.max_order
    assert orders("train") - {None} <= set(range(top + 1)) and top in orders("train")
    higher = orders(HIGHER_ORDER_SPLIT)
    assert higher and min(higher) == top + 1 and max(higher) <= top + SMALL_PLAN.extra_orders
    # the held-out split's stories are not the training stories
    train_ctx = set(read_split(release, SplitRef("tomforge_gen", "train")).column("context_id").to_pylist())
    assert not train_ctx & set(
        read_split(release, SplitRef("tomforge_gen", HIGHER_ORDER_SPLIT)).column("context_id").to_pylist()
    )


def test_sft_targets_score_full_marks_on_every_config(release: Path) -> None:
    for ref in ["tomforge_gen/train", *eval_refs(release)]:
        for row in read_split(release, SplitRef.parse(ref)).to_pylist():
            assert reward(target_completion(row), row["reward_model"]["ground_truth"]) == 3.0, (ref, row["item_id"])


def test_same_plan_same_bytes(release: Path, tmp_path: Path) -> None:
    again = small_release(tmp_path)
    files = sorted(p.relative_to(release) for p in release.rglob("*.parquet"))
    assert files == sorted(p.relative_to(again) for p in again.rglob("*.parquet"))
    assert all((release / f).read_bytes() == (again / f).read_bytes() for f in files)
    other = small_release(tmp_path / "other", DataPlan(n=30, n_higher=6, seed=4))
    assert (other / files[0]).read_bytes() != (release / files[0]).read_bytes()


def test_in_distribution_names_a_config_or_one_split(release: Path, monkeypatch) -> None:
    import tomforge.rl.evaluate as ev

    # stands in for generation: every split is scored, no model needed
    monkeypatch.setattr(ev, "generate", lambda model_path, prompts, **kw: ["<answer>no</answer>"] * len(prompts))
    refs = [SplitRef("tomforge_gen", "test"), SplitRef("tomforge_gen", HIGHER_ORDER_SPLIT), SplitRef("tomi", "test")]
    by_split = evaluate("m", release, refs, dataset="d", in_distribution=["tomforge_gen/test"], limit=2)
    by_config = evaluate("m", release, refs, dataset="d", in_distribution=["tomforge_gen"], limit=2)
    assert {(r["config"], r["split"], r["distribution"]) for r in by_split} == {
        ("tomforge_gen", "test", "in_distribution"),
        ("tomforge_gen", HIGHER_ORDER_SPLIT, "held_out"),
        ("tomi", "test", "held_out"),
    }
    assert {(r["config"], r["split"], r["distribution"]) for r in by_config} == {
        ("tomforge_gen", "test", "in_distribution"),
        ("tomforge_gen", HIGHER_ORDER_SPLIT, "in_distribution"),
        ("tomi", "test", "held_out"),
    }
