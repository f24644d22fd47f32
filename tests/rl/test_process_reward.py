"""The process reward, table-driven: hand-written think blocks about hand-worked stories, each claim's
verdict worked out by hand from the story (not by the code under test).

Story (tests.generators.test_rationale.TRACE): Ann and Bob see the apple placed in the basket; Bob leaves; Ann
moves it to the box while Cid watches in secret from outside; Ann leaves; in the hall Ann privately
tells Bob it is in the crate (a lie). Bob left first, so he trusts Ann. True beliefs at the end:
reality box; Ann box; Bob crate; Cid box; Ann thinks Bob: crate; Bob thinks Ann: crate; Cid thinks Ann: box.
"""

from __future__ import annotations

import pytest

from tests.generators.test_rationale import TRACE
from tests.generators.test_real_oracle import HITOM_STORY  # the oracle's hand-worked HiToM story
from tomforge.generators.real import hitom
from tomforge.rl.claims import parse_claims, vocabulary
from tomforge.rl.process_reward import CONTRADICTED, CORRECT, UNVERIFIABLE, score_reasoning
from tomforge.rl.reward import RewardWeights, compute_score, make_trl_rewards, score_completion
from tomforge.schemas.world.world_question import WorldQuestion


def question(chain: tuple[str, ...], kind: str = "belief") -> WorldQuestion:
    return WorldQuestion(TRACE, chain, kind, "tomforge")


RIGHT_REASONS = (
    "The apple starts in the basket. Bob saw it. Ann moved the apple to the box. Bob had left. "
    "Ann told Bob that the apple is in the crate. Bob trusts Ann. So Bob thinks the apple is in the crate."
)
WRONG_REASONS = "Bob saw Ann move the apple to the crate. So Bob thinks the apple is in the crate."
MOSTLY_RIGHT = (
    "The apple starts in the basket. Bob saw it. Ann moved the apple to the box. Bob had left. "
    "Ann told Bob that the apple is in the crate. Bob does not trust Ann. "
    "So Bob thinks the apple is in the basket."
)

# (name, chain, think text, verdicts in order, states the deciding belief)
CASES = [
    ("right for the right reasons", ("Bob",), RIGHT_REASONS, [CORRECT] * 7, True),
    # the conclusion is right, but the move it rests on never happened (and "Bob saw" has no event to be about)
    ("right answer, invented move", ("Bob",), WRONG_REASONS, [CONTRADICTED, UNVERIFIABLE, CORRECT], True),
    (
        "right answer, wrong belief",
        ("Bob",),
        "Bob saw the apple go into the basket. The apple starts in the basket. Bob saw it. Bob thinks the apple is in "
        "the basket. In the end, the apple is in the box.",
        [CORRECT, CORRECT, CORRECT, CORRECT],
        False,
    ),
    ("wrong answer, mostly right reasons", ("Bob",), MOSTLY_RIGHT, [CORRECT] * 5 + [CONTRADICTED] * 2, False),
    (
        "paraphrases",
        ("Ann", "Bob"),
        "According to Ann, Bob believes that the apple is in the crate. Bob will look for the apple in the crate. "
        "The apple is really in the box. Ann put it in the box; Cid secretly watched it. Cid didn't see it. "
        "In the end, according to Bob, Ann thinks the apple is in the crate.",  # Bob trusts Ann's claim; Ann herself: the box
        [CORRECT, CORRECT, CORRECT, CORRECT, CORRECT, CONTRADICTED, CORRECT],
        True,
    ),  # Cid did see the move, in secret
    (
        "knows that, doesn't know that",
        ("Bob",),
        "Bob doesn't know that Ann moved the apple to the box. Cid saw that Ann put the apple in the box. "
        "Bob knows that Ann moved the apple to the box. Bob heard that the apple is in the crate.",
        [CORRECT, CORRECT, CORRECT, CORRECT, CORRECT, CONTRADICTED],
        False,
    ),  # the last clause is no claim
    ("a place the story does not have", ("Cid",), "Cid thinks the apple is in the fridge.", [CONTRADICTED], False),
    (
        "a chain the rules leave open",
        ("Ann", "Cid"),
        "Ann thinks Cid thinks the apple is in the box.",
        [UNVERIFIABLE],
        False,
    ),
    (
        "secret witness seen as present",
        ("Cid", "Ann"),
        "Ann moved the apple to the box. Cid was not there. Cid saw it. Ann did not see it. "
        "In the end, Cid thinks Ann thinks the apple is in the box.",
        [CORRECT, CORRECT, CORRECT, CONTRADICTED, CORRECT],
        True,
    ),
    ("nothing checkable", ("Bob",), "Let me think step by step about this story.", [], False),
    (
        "memory",
        (),
        "At the start, the apple is in the basket. Initially the apple is in the box.",
        [CORRECT, CONTRADICTED],
        False,
    ),
]


@pytest.mark.parametrize("name,chain,text,verdicts,states", CASES, ids=[c[0] for c in CASES])
def test_claim_verdicts(name: str, chain: tuple[str, ...], text: str, verdicts: list[str], states: bool) -> None:
    kind = "memory" if name == "memory" else "belief"
    scored = score_reasoning(text, question(chain, kind))
    assert [c.verdict for c in scored.checked] == verdicts, [(c.claim.text, c.verdict) for c in scored.checked]
    assert scored.states_deciding_belief is states


def test_memory_states_first_placement() -> None:
    scored = score_reasoning("The apple starts in the basket.", question((), "memory"))
    assert scored.states_deciding_belief and scored.faithful


def test_line_anchors_on_a_real_story() -> None:
    """HiToM rules: Kim left first and trusts Max's claim (red_tin); her own tell leaves her belief alone."""
    trace = hitom.parse_story(HITOM_STORY).trace_for("fig")
    kim = WorldQuestion(trace, ("Kim",), "belief", "hitom")
    text = (
        "Line 3: Kim moved the fig to the blue_jar. Line 6: Lou moved the fig to the green_pot. Kim was not there. "
        "Line 11: Max publicly claimed that the fig is in the red_tin. Kim trusts Max. "
        "So Kim thinks the fig is in the red_tin. After line 6, Kim thinks the fig is in the blue_jar. "
        "Line 5: Lou moved the fig to the green_pot."
    )
    scored = score_reasoning(text, kim)
    assert [c.verdict for c in scored.checked] == [CORRECT] * 7 + [CONTRADICTED]
    assert not scored.states_deciding_belief  # the last claim about Kim's belief is about line 6, not the end


def test_grammar_reads_names_and_places_with_underscores() -> None:
    vocab = vocabulary(["Kim", "Max"], "fig", ["red_tin", "blue_jar"])
    claims = parse_claims("Kim thinks that Max thinks the fig is in the red tin now", vocab)
    assert [(c.kind, c.chain, c.container) for c in claims] == [("belief", ("Kim", "Max"), "red_tin")]


def truth(chain: tuple[str, ...], answer: str) -> dict:
    return {
        "answer_format": "free_text",
        "answer": answer,
        "options": [],
        "option_labels": [],
        "answer_index": None,
        "answer_list": None,
        "world": question(chain).to_json(),
    }


def wrap(think: str, answer: str) -> str:
    return f"<think>{think}</think><answer>{answer}</answer>"


def test_weights_combine_outcome_and_process() -> None:
    gold = truth(("Bob",), "crate")
    # wrong answer, mostly right reasons: 5 right claims, 2 contradicted
    mostly = wrap(MOSTLY_RIGHT, "basket")
    assert score_completion(mostly, gold).score == 1.0 - 2.0  # process weight 0 by default: the recipe
    scored = score_completion(mostly, gold, RewardWeights(process=1.0))
    assert scored.process_reward == pytest.approx(3 / 7) and scored.score == pytest.approx(-1.0 + 3 / 7)
    harsh = score_completion(mostly, gold, RewardWeights(process=1.0, process_contradiction_penalty=2.0))
    assert harsh.process_reward == pytest.approx(1 / 7)
    # right answer for wrong reasons: 1 right, 1 contradicted -> process 0, not faithful
    lucky = score_completion(wrap(WRONG_REASONS, "crate"), gold, RewardWeights(process=1.0))
    assert lucky.correct and lucky.process_reward == 0.0 and lucky.faithful is False
    assert lucky.states_deciding_belief is True
    right = score_completion(wrap(RIGHT_REASONS, "crate"), gold, RewardWeights(process=0.5))
    assert right.score == pytest.approx(3.5) and right.faithful is True


def test_verl_and_trl_entry_points_carry_the_process_reward() -> None:
    import json

    gold = json.dumps(truth(("Bob",), "crate"))
    out = compute_score("tomforge/tomforge_gen", wrap(MOSTLY_RIGHT, "basket"), gold, extra_info={}, process=1.0)
    assert out["score"] == pytest.approx(-1.0 + 3 / 7) and out["process"] == pytest.approx(3 / 7)
    assert out["faithful"] == 0.0 and out["acc"] == 0.0
    functions = make_trl_rewards(RewardWeights(process=2.0))
    assert len(functions) == 3 and len(make_trl_rewards()) == 2  # off by default: the published recipe
    columns = {"reward_model": [{"style": "rule", "ground_truth": gold}] * 2}
    completions = [wrap(RIGHT_REASONS, "crate"), wrap(MOSTLY_RIGHT, "basket")]
    assert functions[2](completions, **columns) == pytest.approx([2.0, 2.0 * 3 / 7])
    total = [sum(f(completions, **columns)[i] for f in functions) for i in range(2)]
    assert total == pytest.approx([5.0, -1.0 + 6 / 7])


def test_trl_settings_with_a_process_weight_get_a_third_reward_weight() -> None:
    from tomforge.rl.trl_backend import TrlSettings, trl_config_kwargs

    assert trl_config_kwargs(TrlSettings(model="m"))["reward_weights"] == [1.0, 1.0]
    with_process = TrlSettings(model="m", reward_weights={"process": 0.5})
    assert trl_config_kwargs(with_process)["reward_weights"] == [1.0, 1.0, 1.0]


def test_faithful_needs_the_deciding_event_named() -> None:
    """Bob's belief rests on Ann's tell (the crate). Asserting only the conclusion states the belief but
    names no event; naming the move instead of the tell names the wrong one; naming the tell is faithful."""
    bob = question(("Bob",))
    only = score_reasoning("In the end, Bob thinks the apple is in the crate.", bob)
    assert only.states_deciding_belief and not only.names_deciding_event and not only.faithful
    move = score_reasoning(
        "Ann moved the apple to the box. Bob had left. In the end, Bob thinks the apple is in the crate.", bob
    )
    assert move.n_contradicted == 0 and not move.names_deciding_event and not move.faithful
    tell = score_reasoning(
        "Ann told Bob the apple is in the crate. In the end, Bob thinks the apple is in the crate.", bob
    )
    assert tell.names_deciding_event and tell.faithful
    assert score_reasoning(RIGHT_REASONS, bob).faithful


def test_a_name_pattern_takes_the_longest_name_and_matches_nothing_without_names() -> None:
    """`rl.claims._any_of`, worked by hand: "Ann Lee" over "Ann", dots literal, no names no match."""
    import re

    from tomforge.rl.claims import _any_of

    assert re.match(_any_of(["Ann", "Ann Lee"]), "Ann Lee left").group() == "Ann Lee"  # type: ignore[union-attr]
    assert re.match(_any_of(["A.B"]), "AxB") is None and re.match(_any_of(["A.B"]), "A.B") is not None
    assert re.search(_any_of([]), "Ann") is None
