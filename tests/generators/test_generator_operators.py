"""Each adversarial operator changes what it should and leaves everything else as it was."""

from __future__ import annotations

import itertools
import random

import pytest

from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.entities import pools
from tomforge.generators.operators import OPERATORS, apply_operators, lie, private_tell
from tomforge.generators.story import build_base
from tomforge.generators.world import ENTER, EXIT, INIT, MOVE, TELL, TRANSPARENT, Story, check_story

POOL = pools(False)
SEEDS = range(40)


def base_story(seed: int) -> Story:
    rng = random.Random(seed)
    return build_base(rng, POOL, rng.randint(2, 5), rng.randint(1, 4))


def chains(agents: tuple[str, ...], max_order: int = 3):
    yield ()
    for order in range(1, max_order + 1):
        for chain in itertools.product(agents, repeat=order):
            if all(a != b for a, b in zip(chain, chain[1:])):
                yield chain


def beliefs(story: Story, agents: tuple[str, ...]) -> dict[tuple[str, ...], str]:
    engine = BeliefEngine(story)
    return {chain: engine.belief(chain) for chain in chains(agents)}


def apply(name: str, story: Story, seed: int) -> Story | None:
    result = OPERATORS[name](story, random.Random(seed), POOL)
    if result is not None:
        check_story(result)
        assert result.operators == story.operators + (name,)
    return result


def removed(events, drop) -> list:
    return [e for e in events if not drop(e)]


def counts_along(story: Story, index: int, chain: tuple[str, ...]) -> bool:
    """Whether the move at `index` (no witnesses) counts along `chain`: everyone in it was present."""
    present = check_story(story).present_before[index]
    return bool(chain) and all(a in present for a in chain)


def cases(name: str):
    found = 0
    for seed in SEEDS:
        base = base_story(seed)
        new = apply(name, base, seed)
        if new is not None:
            found += 1
            yield base, new
    assert found >= len(SEEDS) // 2, f"{name} applied to only {found} stories"


def test_distractor_adds_a_bystander_and_an_object_and_changes_no_belief() -> None:
    for base, new in cases("distractor"):
        (bystander,) = set(new.agents) - set(base.agents)
        (other,) = set(new.objects) - set(base.objects)
        assert removed(new.events, lambda e: e.agent == bystander or e.obj == other) == list(base.events)  # noqa: B023
        assert beliefs(new, base.agents) == beliefs(base, base.agents)


def test_extra_moves_only_move_another_object() -> None:
    for base, new in cases("extra_moves"):
        (other,) = set(new.objects) - set(base.objects)
        extra = [e for e in new.events if e.obj == other]
        assert extra[0].kind == INIT and 1 <= sum(e.kind == MOVE for e in extra) <= 3
        assert removed(new.events, lambda e: e.obj == other) == list(base.events)  # noqa: B023
        assert beliefs(new, base.agents) == beliefs(base, base.agents)


def _one_inserted_move(base: Story, new: Story) -> int:
    inserted = [i for i, e in enumerate(new.events) if e.kind == MOVE and e.obj == new.obj]
    for i in inserted:
        if list(new.events[:i] + new.events[i + 1 :]) == list(base.events):
            return i
    raise AssertionError("not exactly one inserted move of the object")


def test_unobserved_move_is_missed_by_someone_and_only_moves_observers_beliefs() -> None:
    for base, new in cases("unobserved_move"):
        i = _one_inserted_move(base, new)
        present = check_story(new).present_before[i]
        assert present and set(new.agents) - present
        old, now = beliefs(base, base.agents), beliefs(new, base.agents)
        for chain in old:
            if not counts_along(new, i, chain) and chain:
                assert now[chain] == old[chain], chain
            else:
                assert now[chain] in (old[chain], new.events[i].container), chain


def test_return_puts_the_object_back_where_it_started() -> None:
    for base, new in cases("return"):
        i = _one_inserted_move(base, new)
        before, after = check_story(base), check_story(new)
        assert before.final_location != before.initial_location
        assert after.final_location == after.initial_location == before.initial_location
        old, now = beliefs(base, base.agents), beliefs(new, base.agents)
        for chain in old:
            if chain and not counts_along(new, i, chain):
                assert now[chain] == old[chain], chain
            else:
                assert now[chain] in (old[chain], before.initial_location)


def test_secret_witness_changes_only_chains_that_start_with_the_witness() -> None:
    for base, new in cases("secret_witness"):
        changed = [(a, b) for a, b in zip(base.events, new.events) if a != b]
        assert len(base.events) == len(new.events) and len(changed) == 1
        old_move, new_move = changed[0]
        (witness,) = set(new_move.witnesses) - set(old_move.witnesses)
        index = new.events.index(new_move)
        assert witness not in check_story(new).present_before[index]
        old, now = beliefs(base, base.agents), beliefs(new, base.agents)
        for chain in old:
            if not chain or chain[0] != witness:
                assert now[chain] == old[chain], chain


def extras(new_events, base_events) -> list:
    """The events of `new_events` left over once `base_events` is matched as a subsequence (greedy)."""
    left, j = [], 0
    for event in new_events:
        if j < len(base_events) and event == base_events[j]:
            j += 1
        else:
            left.append(event)
    assert j == len(base_events), "the base story is not kept as a subsequence"
    return left


def test_transparent_lets_the_returning_agent_see_the_object() -> None:
    corrected = 0
    for base, new in cases("transparent"):
        (box,) = new.transparent
        assert box == check_story(new).final_location == check_story(base).final_location
        added = extras(new.events, base.events)
        assert sorted(e.kind for e in added) == sorted([TRANSPARENT, ENTER, EXIT])
        agent = next(e.agent for e in added if e.kind == ENTER)
        assert all(e.agent == agent and e.room == new.room for e in added if e.kind != TRANSPARENT)
        old, now = beliefs(base, base.agents), beliefs(new, base.agents)
        assert (
            agent
            not in check_story(base).present_before[
                max(i for i, e in enumerate(base.events) if e.kind == MOVE and e.obj == base.obj)
            ]
        )
        assert now[(agent,)] == box  # it had missed the move, now it sees
        corrected += old[(agent,)] != box
        for chain in old:
            if agent not in chain:
                assert now[chain] == old[chain], chain
    assert corrected >= 10  # mostly the reveal corrects a false belief


@pytest.mark.parametrize("name", ["private_tell", "public_tell"])
def test_tells_change_only_listeners_who_trust_the_speaker(name: str) -> None:
    for base, new in cases(name):
        assert list(new.events[:-1]) == list(base.events)
        told = new.events[-1]
        assert told.kind == TELL and told.public == (name == "public_tell")
        old, now = beliefs(base, base.agents), beliefs(new, base.agents)
        assert told.container == old[(told.agent,)]  # a truthful tell: the speaker's own belief
        exits = check_story(new).last_exit
        hearers = set(base.agents) if told.public else {told.agent, *told.listeners}
        for chain in old:
            if not chain or not set(chain) <= hearers:
                assert now[chain] == old[chain], chain
        assert now[()] == old[()] and now[(told.agent,)] == old[(told.agent,)]
        for agent in hearers - {told.agent}:
            trusts = exits[told.agent] > exits[agent]
            assert now[(agent,)] == (told.container if trusts else old[(agent,)])


def test_lie_adds_a_false_tell_and_changes_only_what_it_reaches() -> None:
    for seed in SEEDS:
        truthful = private_tell(base_story(seed), random.Random(seed), POOL)
        lying = lie(truthful, random.Random(seed), POOL)
        check_story(lying)
        assert list(lying.events[:-1]) == list(truthful.events)
        false = lying.events[-1]
        assert false.kind == TELL and false.container != BeliefEngine(truthful).belief((false.agent,))
        old, now = beliefs(truthful, truthful.agents), beliefs(lying, truthful.agents)
        hearers = set(truthful.agents) if false.public else {false.agent, *false.listeners}
        exits = check_story(lying).last_exit
        for chain in old:
            if not chain or not set(chain) <= hearers or chain == (false.agent,):
                assert now[chain] == old[chain], chain
            else:
                assert now[chain] in (old[chain], false.container), chain
        for agent in hearers - {false.agent}:
            trusts = exits[false.agent] > exits[agent]
            assert now[(agent,)] == (false.container if trusts else old[(agent,)])


def test_operators_compose_in_a_fixed_way() -> None:
    base = base_story(7)
    names = list(OPERATORS)
    one = apply_operators(base, names, random.Random(1), POOL)
    two = apply_operators(base, list(reversed(names)), random.Random(1), POOL)
    assert one is not None and one == two and set(one.operators) == set(names)
    tells = [name for name in one.operators if name in ("private_tell", "public_tell", "lie")]
    assert one.operators[: len(names) - len(tells)] == tuple(n for n in OPERATORS if n not in tells)
    with pytest.raises(ValueError, match="unknown operators"):
        apply_operators(base, ["teleport"], random.Random(1), POOL)
