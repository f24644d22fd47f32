"""The toy false-belief generator used by the RL smoke run: deterministic, beliefs right."""
from __future__ import annotations

from pathlib import Path

from rl import toy
from rl.release import SplitRef, list_splits, read_split
from rl.reward import reward
from rl.sft import target_completion


def test_deterministic_under_seed() -> None:
    a = toy.generate(5, seed=7, split="train")
    assert a == toy.generate(5, seed=7, split="train")
    assert a != toy.generate(5, seed=8, split="train")


def test_nested_beliefs_follow_what_each_agent_saw() -> None:
    both = frozenset({"Sally", "Anne"})
    story = toy.Story(sentences=[], moves=[("basket", both), ("box", frozenset({"Anne"}))],
                      agents=["Sally", "Anne"], obj="marble", room="hall", places=["basket", "box"])
    assert toy.belief(story, ("Sally",)) == "basket"          # false belief: Sally was out
    assert toy.belief(story, ("Anne",)) == "box"
    assert toy.belief(story, ("Anne", "Sally")) == "basket"   # Anne knows Sally missed the move
    assert toy._question(("Anne", "Tom", "Sally"), "marble") == \
        "Where does Anne think Tom thinks Sally will look for the marble?"


def test_release_layout_and_sft_targets_score_full_marks(tmp_path: Path) -> None:
    counts = toy.write_toy_release(tmp_path, n_train=6, n_eval=2, seed=1)
    assert list_splits(tmp_path) == {"toy": ["test", "train", "validation"], "toy_heldout": ["test"]}
    table = read_split(tmp_path, SplitRef("toy_heldout", "test"))
    assert table.num_rows == counts["toy_heldout/test"]
    assert max(table.column("belief_order").to_pylist()) == 3
    for row in read_split(tmp_path, SplitRef("toy", "train")).to_pylist():
        # the warm-up's target answers are exactly what the reward accepts
        assert reward(target_completion(row), row["reward_model"]["ground_truth"]) == 3.0
