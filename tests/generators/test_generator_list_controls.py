"""Mention controls of the list and answerability forms (issue 28): the agents' surface ranks predict
neither who is in a list answer nor an answerability answer, and the padding changes no world.

References: the audit's own text rankings (`audits.ranks`, which reads the story text, not the events
the controls balance) against the exact null of a random gold subset; the same run with the agent
controls off (same worlds, its golds, and its skew, which the test must see); and the heuristic-rule
features (`audits.features`) for the most-mentioned agent.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest

from tomforge.audits.config import AuditParams
from tomforge.audits.features import item_features, records_frame
from tomforge.audits.ranks import RANKINGS, gold_ranks, norm, ranking_values, tie_pattern, uniformity_test
from tomforge.generators.generate import GenerationSettings, Generator
from tomforge.generators.question_forms import KNOWLEDGE_FORMS

N = 1500  # list and answerability questions only: 750 of each, about 850 stories
TOLERANCE = 3.0  # points: every place's share of the golds within this of 1/k, per group of MIN_ITEMS or more
MIN_ITEMS = 100
MIN_P = 0.05  # and no group of 30 items or more departs from the null at this level (the balanced run: p ~ 0.7-1)


def run(agent_controls: bool) -> list[dict]:
    generator = Generator(GenerationSettings(max_order=6, seed=11, formats=KNOWLEDGE_FORMS))
    generator.agent_padder.controls = agent_controls
    return list(generator.records(N))


@pytest.fixture(scope="module")
def controlled() -> list[dict]:
    return run(True)


@pytest.fixture(scope="module")
def uncontrolled() -> list[dict]:
    return run(False)


def list_ranks(records: list[dict]) -> pl.DataFrame:
    frame = records_frame([r for r in records if r["answer_format"] == "list"])
    return gold_ranks(frame.with_columns(pl.lit("train").alias("selection")), AuditParams())


def agents_of(record: dict) -> list[str]:
    return sorted({e["agent"] for e in record["trace"] if e["kind"] == "enter"})


def answerability_ranks(records: list[dict]) -> dict[tuple[str, str, int], tuple[int, list[float], float]]:
    """Per (answer, ranking, k): items, the asked agent's share of each place among the story's agents
    (ties split), and the chi-square p-value against uniform."""
    items: dict[tuple[str, str, int], list] = defaultdict(list)
    for r in records:
        if r["answer_format"] != "yes_no":
            continue
        agents = [norm(a) for a in agents_of(r)]
        values = ranking_values(r["context"], agents)
        asked = agents.index(norm(r["perspective_chain"][0]))
        for name in RANKINGS:
            items[r["answer"], name, len(agents)].append(tie_pattern(values[name], asked))
    out = {}
    for key, patterns in items.items():
        n, share, _, _, p_value = uniformity_test(patterns)
        out[key] = (n, share.tolist(), p_value)
    return out


def test_list_golds_rank_as_a_random_subset_under_every_ranking(controlled) -> None:
    table = list_ranks(controlled)
    assert set(table["ranking"]) == set(RANKINGS) and set(table["belief_order"]) == {"list"}
    big = table.filter(pl.col("n") >= MIN_ITEMS)
    assert set(big["k"]) >= {3, 4}
    gaps = big.with_columns(((pl.col("share") - pl.col("expected")).abs() * 100).alias("gap"))
    worst = gaps.sort("gap", descending=True).row(0, named=True)
    assert worst["gap"] <= TOLERANCE, worst
    assert table.filter(pl.col("n") >= 30)["p_value"].min() > MIN_P  # type: ignore[operator]


def test_without_agent_controls_the_test_sees_the_skew(uncontrolled) -> None:
    """The same run with the agent controls off: knowers are named more (the audit flags it)."""
    table = list_ranks(uncontrolled)
    flagged = set(table.filter(pl.col("flagged"))["ranking"])
    assert {"mentions", "events"} <= flagged, flagged
    top = table.filter((pl.col("ranking") == "mentions") & (pl.col("k") == 3) & (pl.col("position") == 0))
    assert top["share"].item() > 0.45  # chance 1/3


def test_the_asked_agents_rank_does_not_tell_the_answer(controlled, uncontrolled) -> None:
    """Answerability: for "yes" and for "no" alike, the asked agent's place among the agents is uniform."""
    ranks = answerability_ranks(controlled)
    assert {answer for answer, _, _ in ranks} == {"yes", "no"}
    for (answer, name, k), (n, share, p_value) in ranks.items():
        if n >= MIN_ITEMS:
            assert max(abs(x - 1 / k) for x in share) * 100 <= TOLERANCE, (answer, name, k, n, share)
        if n >= 30:
            assert p_value > MIN_P, (answer, name, k, n, share, p_value)
    skewed = answerability_ranks(uncontrolled)
    # without the controls an agent who cannot know is rarely the last one named with a move verb (chance 1/3)
    assert skewed["no", "last_move", 3][1][0] < 0.1 and skewed["no", "last_move", 3][2] < 1e-4
    assert skewed["no", "mentions", 4][2] < 1e-4  # nor among the most named


def test_the_most_mentioned_agent_rule_is_at_chance(controlled) -> None:
    """The heuristic rule the audit scores (one-knower lists): its hits within 4 points of its chance."""
    features = item_features(records_frame([r for r in controlled if r["answer_format"] == "list"]))
    scored = features.filter(pl.col("scorable"))
    assert scored.height >= 150
    assert abs(scored["hit_most"].mean() - scored["chance"].mean()) * 100 <= 4.0  # type: ignore[operator]


def test_padding_changes_no_world_and_repeats_no_sentence(controlled, uncontrolled) -> None:
    """Story by story against the run without agent controls: the same events apart from the order of
    the opening enterings, the speakers of statements and added opinions about things that are neither
    containers nor the object; the same golds; no sentence said twice by the padding."""
    by_story = {r["meta"]["story_no"]: r for r in uncontrolled}
    padded = 0
    for r in {r["meta"]["story_no"]: r for r in controlled}.values():
        before = by_story[r["meta"]["story_no"]]
        world = [e for e in r["trace"] if e["kind"] != "statement"]
        old = [e for e in before["trace"] if e["kind"] != "statement"]
        lead = next(i for i, e in enumerate(old) if i and e["kind"] != "enter")  # old[0] is the setup
        assert world[lead:] == old[lead:] and sorted(map(str, world[:lead])) == sorted(map(str, old[:lead]))
        new = [e for e in r["trace"] if e["kind"] == "statement"]
        things = {e.get("thing") for e in new} - {e.get("thing") for e in before["trace"] if e["kind"] == "statement"}
        assert not things & {*r["meta"]["candidates"], r["meta"]["object"]}
        padded += len(new) > sum(e["kind"] == "statement" for e in before["trace"])
    assert padded > 100
    golds = {(r["meta"]["story_no"], r["question"]): r["answer"] for r in uncontrolled}
    assert all(golds[r["meta"]["story_no"], r["question"]] == r["answer"] for r in controlled)


def test_no_story_repeats_a_sentence_its_world_does_not(controlled) -> None:
    from tomforge.audits.repeats import repeated_sentences

    frame = records_frame(controlled).with_columns(pl.lit("train").alias("selection"))
    assert repeated_sentences(frame).filter(pl.col("flagged")).height == 0
