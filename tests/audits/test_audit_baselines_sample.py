"""Partial-input baselines scored on a seeded sample of held-out stories: the sample is whole
stories, reproducible and just large enough; on planted cue words the sampled evaluation flags
the same shortcut as scoring every held-out item, with an accuracy inside the full run's CI, and
the evaluation column says that it sampled."""

from __future__ import annotations

import random
from dataclasses import replace

import polars as pl

from tests.audit_data import FAST, variant
from tomforge.audits.baselines import _sample_stories, partial_input_baselines
from tomforge.audits.features import records_frame
from tomforge.audits.synthetic import clean_records


def _cued(records: list[dict], split: str, seed: int) -> list[dict]:
    """A third of the questions end in "really" (gold moved first), a third in "truly" (gold
    moved last): the question alone predicts the gold position on those."""
    rng = random.Random(seed)
    out = []
    for r in records:
        cue = rng.choice(["really", "truly", None])
        options = [o for o in r["options"] if o != r["answer"]]
        rng.shuffle(options)
        if cue == "really":
            options.insert(0, r["answer"])
        elif cue == "truly":
            options.append(r["answer"])
        else:
            options.insert(rng.randrange(len(options) + 1), r["answer"])
        question = r["question"] + (f" {cue}" if cue else "")
        out.append(variant(r, r["item_id"], split, options=options, question=question))
    return out


def _frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    train = _cued(clean_records(200, seed=11, split="train"), "train", 1)
    test = _cued(clean_records(150, seed=12, split="test"), "test", 2)
    return records_frame(train), records_frame(test)


def test_sample_is_whole_stories_reproducible_and_just_large_enough() -> None:
    _, heldout = _frames()
    sample, note = _sample_stories(heldout, 200, seed=3)
    again, _ = _sample_stories(heldout, 200, seed=3)
    other, _ = _sample_stories(heldout, 200, seed=4)
    assert sample.equals(again) and not sample.equals(other)
    per_story = heldout.group_by("context_id").len()
    chosen = per_story.filter(pl.col("context_id").is_in(sample["context_id"].unique().implode()))
    assert sample.height == chosen["len"].sum()  # every item of each chosen story, nothing else
    assert sample.height >= 200 and sample.height - chosen["len"].max() < 200
    assert f"{sample.height} of {heldout.height} items" in note
    full, no_note = _sample_stories(heldout, heldout.height, seed=3)
    assert full.equals(heldout) and no_note == ""


def test_sampled_evaluation_flags_what_the_full_one_flags() -> None:
    train, heldout = _frames()
    mc = heldout.filter(pl.col("answer_format") == "multiple_choice").height
    full = partial_input_baselines(train, heldout, replace(FAST, baseline_max_eval=10**9))
    sampled = partial_input_baselines(train, heldout, replace(FAST, baseline_max_eval=mc // 3))
    key = (pl.col("input") == "question_only") & (pl.col("answer_format") == "multiple_choice")
    f, s = full.filter(key).row(0, named=True), sampled.filter(key).row(0, named=True)
    assert f["flagged"] and s["flagged"] and f["accuracy"] > 0.6
    assert f["ci_low"] <= s["accuracy"] <= f["ci_high"]
    assert s["n_eval"] < mc == f["n_eval"] and "seeded sample" in s["evaluation"] and "sample" not in f["evaluation"]
    assert full["flagged"].to_list() == sampled["flagged"].to_list()
