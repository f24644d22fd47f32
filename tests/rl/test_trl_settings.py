"""`TrlSettings` (rl/trl_settings.py): the checks that refuse settings TRL cannot train with, and the reward weights it
starts from, on values worked by hand."""

from __future__ import annotations

import pytest

from tomforge.rl.trl_settings import ALGORITHMS, TrlSettings, TrlSettingsError


def test_the_algorithms_are_rloo_and_grpo() -> None:
    assert ALGORITHMS == ("rloo", "grpo")
    assert TrlSettings("m", algorithm="grpo").algorithm == "grpo"


def test_an_unknown_algorithm_is_refused_by_name() -> None:
    with pytest.raises(TrlSettingsError) as refused:
        TrlSettings("m", algorithm="ppo")
    assert str(refused.value) == "algorithm must be one of ('rloo', 'grpo'), not 'ppo'"


@pytest.mark.parametrize(("batch", "generations", "ok"), [(32, 8, True), (24, 8, True), (8, 8, True), (30, 8, False)])
def test_a_batch_counts_whole_groups_of_generations(batch: int, generations: int, ok: bool) -> None:
    if ok:
        assert TrlSettings("m", per_device_train_batch_size=batch, num_generations=generations)
        return
    with pytest.raises(TrlSettingsError) as refused:
        TrlSettings("m", per_device_train_batch_size=batch, num_generations=generations)
    assert str(refused.value) == "per_device_train_batch_size counts completions: make it a multiple of num_generations"


def test_the_reward_weights_start_as_the_rewards_own_defaults() -> None:
    """The published recipe's weights (+1/-1 format, +2/-2 correctness, no process reward; rl/reward.py), each
    settings object with a dict of its own."""
    one, two = TrlSettings("m"), TrlSettings("m")
    assert one.reward_weights == {
        "format_ok": 1.0,
        "format_bad": -1.0,
        "correct": 2.0,
        "wrong": -2.0,
        "score_malformed_answers": False,
        "process": 0.0,
        "process_contradiction_penalty": 1.0,
    }
    assert one.reward_weights is not two.reward_weights


def test_the_error_is_bad_input() -> None:
    assert TrlSettingsError("x").exit_code == 2 and isinstance(TrlSettingsError("x"), ValueError)
