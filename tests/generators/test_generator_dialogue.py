"""The dialogue rendering and the list / answerability question forms (issue 28, part 2).

References: the oracle (`schemas.world.checker`, which shares no code with the simulator) for every
gold of every rendering and form; a world written and worked out by hand; the third person's
records item for item; counts of container mentions taken from the text here, apart from the
rendering's rules; the audit itself."""

from __future__ import annotations

import json
import re
from collections import Counter

import duckdb
import polars as pl
import pytest
from scipy import stats

from tests.audit_data import FAST
from tomforge.audits.config import AuditParams
from tomforge.audits.features import records_frame
from tomforge.audits.ranks import gold_ranks
from tomforge.audits.run import run_audit
from tomforge.generators import generate_records, generator_info
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.dialogue import NARRATOR, prefix_engines, settled_from, tell
from tomforge.generators.generate import FORMATS
from tomforge.generators.question_forms import DEFAULT_FORMS, formats_of_forms, has_access, knowledge_answer
from tomforge.generators.world import ENTER, EXIT, INIT, MOVE, SCENE, TELL, Event, Story, trace_of
from tomforge.rl.reward import compute_score
from tomforge.schemas.rl.columns import rl_table
from tomforge.schemas.world.checker import check_record, expected_answer, expected_knowledge
from tomforge.warehouse.load import ingest_records

ALL_FORMS = formats_of_forms(["mc", "free", "yes_no", "list", "answerability"])
ARGS = {"n": 1400, "max_order": 3, "seed": 5, "formats": ALL_FORMS}
RENDERINGS = ("third_person", "second_person", "dialogue")
RULE = (  # who hears what: at the head of every dialogue question, not in the conversation
    "In this conversation, whoever is in a room hears everything said there and nothing said elsewhere; "
    "a private remark reaches only the one it is addressed to."
)


def run(rendering: str, **changes) -> list[dict]:
    args = {**ARGS, **changes}
    n = args.pop("n")
    return list(generate_records(n, rendering=rendering, **args))


@pytest.fixture(scope="module")
def told() -> dict[str, list[dict]]:
    return {rendering: run(rendering) for rendering in RENDERINGS}


def form_of(record: dict) -> str:
    if record["question_type"] == "answerability":
        return "list" if record["answer_format"] == "list" else "answerability"
    return record["answer_format"]


# -- the oracle, per rendering and form ---------------------------------------------------------
@pytest.mark.parametrize("rendering", RENDERINGS)
def test_the_oracle_agrees_with_every_gold_of_every_form(told, rendering: str) -> None:
    records = told[rendering]
    by_form = Counter(form_of(r) for r in records)
    assert set(by_form) == {"multiple_choice", "free_text", "yes_no", "list", "answerability"}
    assert min(by_form.values()) >= 190, by_form  # a few hundred items per rendering x form
    assert [(r["source_ref"], p) for r in records for p in check_record(r)] == []


def test_answerability_is_balanced_and_lists_vary(told) -> None:
    for rendering in RENDERINGS:
        answers = Counter(r["answer"] for r in told[rendering] if form_of(r) == "answerability")
        assert abs(answers["yes"] - answers["no"]) <= 2, answers
        sizes = Counter(len(r["answer_list"]) for r in told[rendering] if form_of(r) == "list")
        assert len(sizes) >= 3, sizes  # one knower, several, everyone: not a constant the reward could learn
    mid = Counter(
        r["answer"] for r in told["dialogue"] if form_of(r) == "answerability" and "asked_after_event" in r["meta"]
    )
    low, high = stats.binom.interval(0.999, mid.total(), 0.5)  # a fair coin leaves it with probability <= 0.1%
    assert mid.total() > 40 and low <= mid["yes"] <= high, mid


def test_default_forms_are_todays_formats() -> None:
    assert formats_of_forms(list(DEFAULT_FORMS)) == FORMATS
    with pytest.raises(ValueError, match="bogus"):
        formats_of_forms(["mc", "bogus"])


# -- the same worlds, item for item ---------------------------------------------------------------
def test_dialogue_tells_the_same_worlds_golds_options_and_chains(told) -> None:
    third, spoken = told["third_person"], told["dialogue"]
    assert len(third) == len(spoken) == ARGS["n"]
    for a, b in zip(third, spoken):
        for field in (
            "trace",
            "answer",
            "answer_list",
            "options",
            "answer_index",
            "perspective_chain",
            "belief_order",
            "answer_format",
            "question_type",
            "is_false_belief",
        ):
            assert a[field] == b[field], (field, b["source_ref"])
        assert a["item_id"] != b["item_id"] and b["meta"]["rendering"] == "dialogue"
        assert b["context_kind"] == "dialogue" and b["turns"]
        assert b["context"] == "\n".join(f"{t['speaker']}: {t['text']}" for t in b["turns"])
        assert b["template_id"].startswith(a["template_id"] + ".dialogue"), (a["template_id"], b["template_id"])
        assert b["question"].endswith(a["question"])


def mentions(text: str, containers: list[str]) -> Counter:
    """Whole-word container mentions, counted here with a pattern of its own."""
    found: Counter = Counter()
    for c in containers:
        found[c] = len(re.findall(r"(?<![\w])" + re.escape(c) + r"(?![\w])", text))
    return found


def test_every_turn_tells_its_event_and_the_container_mentions_are_the_stories(told) -> None:
    seen = set()
    for third, rec in zip(told["third_person"], told["dialogue"]):
        if rec["context_id"] in seen:
            continue
        seen.add(rec["context_id"])
        trace, meta = rec["trace"], rec["meta"]
        cands = meta["candidates"]
        assert len(meta["turn_events"]) == len(rec["turns"])
        for turn, index in zip(rec["turns"], meta["turn_events"]):
            if index is None:
                assert turn["speaker"] == NARRATOR
                continue
            event = trace[index]
            named = [c for c in cands if mentions(turn["text"], [c])[c]]
            if event["kind"] in ("enter", "exit", "stay"):
                assert turn["speaker"] == event["agent"] and not named, (turn, event)
            if event["kind"] in ("move", "tell") and turn["speaker"] != NARRATOR:  # the narrator: a secret witness
                assert turn["speaker"] == event["agent"] and named == [event["container"]], (turn, event)
            if event["kind"] == "tell" and not event["public"]:
                assert all(name in turn["text"] for name in event["listeners"]), (turn, event)
        assert mentions(rec["context"], cands) == mentions(third["context"], cands), rec["source_ref"]
        said = Counter((t["speaker"], t["text"]) for t in rec["turns"])
        assert max(said.values()) == 1, [t for t, k in said.items() if k > 1]
    assert len(seen) > 200


def test_mid_conversation_questions_quote_a_turn_naming_no_container(told) -> None:
    mid = [r for r in told["dialogue"] if "asked_after_event" in r["meta"]]
    assert 0.15 * len(told["dialogue"]) < len(mid) < 0.5 * len(told["dialogue"])
    assert {form_of(r) for r in mid} == {"multiple_choice", "free_text", "yes_no", "list", "answerability"}
    for r in mid:
        k = r["meta"]["asked_after_turn"]
        assert 0 < k < len(r["turns"])
        turn = r["turns"][k - 1]
        assert r["question"].startswith(f'{RULE} (Asked right after {turn["speaker"]} says "{turn["text"]}") ')
        assert r["meta"]["turn_events"][k - 1] == r["meta"]["asked_after_event"]
        assert not any(mentions(turn["text"], r["meta"]["candidates"]).values())
        assert r["template_id"].endswith(".mid")
    for r in told["dialogue"]:
        if "asked_after_event" not in r["meta"]:
            assert r["meta"]["asked_after_turn"] == len(r["turns"])
            assert r["question"].startswith(RULE + " ") and "Asked right after" not in r["question"]


def test_a_mid_conversation_gold_is_checked_at_its_cut(told) -> None:
    """The oracle cuts the trace where the question is asked: moved earlier than the answer settles,
    it disagrees with some golds (so the cut is read, and the places chosen are late enough)."""
    moved = 0
    for r in told["dialogue"]:
        if "asked_after_event" in r["meta"] and r["question_type"] == "reality":
            init = next(
                i for i, e in enumerate(r["trace"]) if e["kind"] == "init" and e["obj"] == r["trace"][0]["object"]
            )
            early = {**r, "meta": {**r["meta"], "asked_after_event": init}}
            moved += expected_answer(early) != r["answer"]
    assert moved > 5


def test_the_surface_pick_so_far_stays_at_chance_where_questions_are_asked_mid_conversation(told) -> None:
    """Right after the deciding move, "the last container mentioned so far" would be the answer (45%
    against 25% before the control); the places chosen keep it, and the first and most mentioned so
    far, within 3 points of chance."""
    records = [r for r in told["dialogue"] if r["question_type"] != "answerability"]
    excess: Counter = Counter()
    n = 0
    for r in records:
        if "asked_after_event" not in r["meta"]:
            continue
        cands = r["meta"]["candidates"]
        said = " ".join(t["text"] for t in r["turns"][: r["meta"]["asked_after_turn"]])
        seq = [m.group(0) for m in re.finditer("|".join(re.escape(c) for c in cands), said)]
        count = Counter(seq)
        picks = {"first": seq[0], "last": seq[-1], "most": max(count, key=lambda c: (count[c], -seq.index(c)))}
        n += 1
        for rule, pick in picks.items():
            if r["answer_format"] == "yes_no":
                excess[rule] += ((pick == r["meta"]["asked_container"]) == (r["answer"] == "yes")) - 0.5
            else:
                excess[rule] += (pick == r["answer"]) - 1 / len(cands)
    assert n > 200
    assert all(abs(v) / n <= 0.03 for v in excess.values()), {k: v / n for k, v in excess.items()}


# -- the audit, unchanged -------------------------------------------------------------------------
def test_the_audit_sees_the_same_ranks_in_the_dialogue(told) -> None:
    """On "where" questions; a one-name list answer is ranked among the agents, whose names the
    dialogue says more often (each turn opens with its speaker's)."""
    tables = [
        gold_ranks(
            records_frame([r for r in told[name] if r["question_type"] != "answerability"]).with_columns(
                pl.lit("t").alias("selection")
            ),
            AuditParams(),
        )
        for name in ("third_person", "dialogue")
    ]
    assert tables[0].height and tables[0].equals(tables[1])


def test_the_audit_runs_unchanged_on_dialogue_records(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    records = run("dialogue", n=240, max_order=2)
    report = ingest_records(path, generator_info(), iter(records), "dialogue")
    assert report.loaded == 240 and report.rejected == 0
    summary = run_audit(path, "true", None, tmp_path / "audit", FAST)
    assert summary is not None
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM audit_gold_ranks").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM audit_repeated_sentences WHERE flagged").fetchone()[0] == 0
        assert con.execute("SELECT count(DISTINCT context_kind) FROM items_full").fetchone()[0] == 1
        stored = con.execute("SELECT turns FROM contexts LIMIT 1").fetchone()[0]
    assert stored and stored[0]["speaker"] != NARRATOR  # no opening stage line: the rule is in the question
    assert "gold" in (tmp_path / "audit" / "audit_report.md").read_text().lower()


# -- determinism ----------------------------------------------------------------------------------
def test_same_seed_same_bytes_other_seed_other_worlds(told) -> None:
    first = [json.dumps(r, sort_keys=True) for r in run("dialogue", n=200)]
    assert [json.dumps(r, sort_keys=True) for r in run("dialogue", n=200)] == first
    other = run("dialogue", n=200, seed=6)
    assert [json.dumps(r, sort_keys=True) for r in other] != first


# -- a world worked out by hand -------------------------------------------------------------------
def hand_world() -> Story:
    """Anne, Bob and Carl see the apple in the box; Bob leaves; Anne moves it to the basket; Carl
    leaves; Anne moves it to the crate and leaves. In the hall Anne tells Carl, in private, that it
    is in the crate (Carl left before Anne: he trusts her)."""
    events = (
        Event(ENTER, agent="Anne", room="kitchen"),
        Event(ENTER, agent="Bob", room="kitchen"),
        Event(ENTER, agent="Carl", room="kitchen"),
        Event(SCENE, room="kitchen", things=("box", "basket", "crate", "bag")),
        Event(INIT, obj="apple", container="box"),
        Event(EXIT, agent="Bob", room="kitchen"),
        Event(MOVE, agent="Anne", obj="apple", container="basket"),
        Event(EXIT, agent="Carl", room="kitchen"),
        Event(MOVE, agent="Anne", obj="apple", container="crate"),
        Event(EXIT, agent="Anne", room="kitchen"),
        Event(ENTER, agent="Anne", room="hall"),
        Event(ENTER, agent="Bob", room="hall"),
        Event(ENTER, agent="Carl", room="hall"),
        Event(TELL, agent="Anne", room="hall", obj="apple", container="crate", listeners=("Carl",)),
    )
    return Story(
        ("Anne", "Bob", "Carl"), "kitchen", "hall", ("box", "basket", "crate", "bag"), "apple", ("apple",), events
    )


def as_record(story: Story, form: str, chain: tuple[str, ...] = (), cut: int | None = None) -> dict:
    meta = {} if cut is None else {"asked_after_event": cut}
    return {
        "trace": trace_of(story),
        "meta": meta,
        "question_type": "answerability",
        "answer_format": "list" if form == "list" else "yes_no",
        "perspective_chain": list(chain),
    }


def test_hand_world_dialogue_and_its_golds() -> None:
    import random

    story = hand_world()
    spoken = tell(story, str, (0,), random.Random(0))  # variant 0: one phrasing per kind, two for comings and goings
    scene, placed = spoken.turns[3], spoken.turns[4]  # said by someone in the room, drawn at random
    assert scene[0] in ("Anne", "Bob", "Carl") and placed[0] in ("Anne", "Bob", "Carl")
    came = {"Hi everyone, I just came into the", "Hi everyone, I just got to the"}  # variant 0's openers x bodies
    came |= {"Hello everybody, I just came into the", "Hello everybody, I just got to the"}
    left = {"Bye for now, I'm heading out of the kitchen now.", "Bye for now, I'm walking out of the kitchen."}
    left |= {"Catch you later, I'm heading out of the kitchen now.", "Catch you later, I'm walking out of the kitchen."}
    comes, goes = {f"{text} {room}." for text in came for room in ("kitchen", "hall")}, left
    expected = (
        ("Anne", comes),
        ("Bob", comes),
        ("Carl", comes),
        "In the kitchen we have the box, the basket, the crate and the bag.",
        "The apple is in the box.",
        ("Bob", goes),
        ("Anne", "I'm moving the apple to the basket."),
        ("Carl", goes),
        ("Anne", "I'm moving the apple to the crate."),
        ("Anne", goes),
        ("Anne", comes),
        ("Bob", comes),
        ("Carl", comes),
        ("Anne", "(privately, to Carl) The apple is in the crate."),
    )
    told = spoken.turns[:3] + (scene[1], placed[1]) + spoken.turns[5:]
    assert len(told) == len(expected)
    for said, want in zip(told, expected):
        if isinstance(want, str):
            assert said == want
        elif isinstance(want[1], set):
            assert said[0] == want[0] and said[1] in want[1], (said, want)
        else:
            assert said == want
    assert all("hall" in told[i][1] for i in (10, 11, 12)) and all("kitchen" in told[i][1] for i in (0, 1, 2))
    assert spoken.events == tuple(range(14))
    engine = BeliefEngine(story)
    # who knows: Anne moved it last, Carl was told the truth by someone who knew; Bob saw it in the box
    assert knowledge_answer(engine, "list", ()) == ("Anne", "Carl")
    assert expected_knowledge(as_record(story, "list")) == ["Anne", "Carl"]
    for agent, gold in (("Anne", "yes"), ("Bob", "no"), ("Carl", "yes")):
        assert knowledge_answer(engine, "answerability", (agent,)) == gold
        assert expected_knowledge(as_record(story, "answerability", (agent,))) == gold
    # before the tell (after Carl enters the hall, trace index 13): Carl still thinks "basket"
    assert expected_knowledge(as_record(story, "list", cut=13)) == ["Anne"]
    assert expected_knowledge(as_record(story, "answerability", ("Carl",), cut=13)) == "no"
    # Bob's belief (box) is settled from the placement on; Carl's only with the tell; reality after the last move
    engines = prefix_engines(story)
    assert settled_from(lambda e: e.belief(("Bob",)), engines) == 4
    assert settled_from(lambda e: e.belief(("Carl",)), engines) == 13
    assert settled_from(lambda e: e.reality(), engines) == 8
    assert settled_from(lambda e: knowledge_answer(e, "list", ()), engines) == 13


def test_a_lucky_belief_is_never_asked_about() -> None:
    """Bob sees the apple in the box and leaves; it goes to the basket and back: he believes the truth
    without any way of knowing it. Both the engine and the oracle refuse to ask who knows."""
    events = (
        Event(ENTER, agent="Anne", room="kitchen"),
        Event(ENTER, agent="Bob", room="kitchen"),
        Event(SCENE, room="kitchen", things=("box", "basket", "crate", "bag")),
        Event(INIT, obj="apple", container="box"),
        Event(EXIT, agent="Bob", room="kitchen"),
        Event(MOVE, agent="Anne", obj="apple", container="basket"),
        Event(MOVE, agent="Anne", obj="apple", container="box"),
        Event(EXIT, agent="Anne", room="kitchen"),
    )
    story = Story(("Anne", "Bob"), "kitchen", "hall", ("box", "basket", "crate", "bag"), "apple", ("apple",), events)
    engine = BeliefEngine(story)
    assert engine.belief(("Bob",)) == engine.reality() and not has_access(engine, "Bob")
    assert knowledge_answer(engine, "list", ()) is None and knowledge_answer(engine, "answerability", ("Bob",)) is None
    assert knowledge_answer(engine, "answerability", ("Anne",)) == "yes"
    assert expected_knowledge(as_record(story, "list")) is None
    assert expected_knowledge(as_record(story, "answerability", ("Bob",))) is None


# -- the reward scores the new forms --------------------------------------------------------------
def test_the_reward_scores_list_and_answerability_answers(told) -> None:
    records = [r for r in told["dialogue"] if r["question_type"] == "answerability"][:200]
    rows = rl_table(records).to_pylist()
    for record, row in zip(records, rows):
        truth = row["reward_model"]["ground_truth"]
        if record["answer_format"] == "list":
            right = ", ".join(reversed(record["answer_list"]))  # any order
            wrong = ", ".join(record["options"]) if len(record["answer_list"]) < len(record["options"]) else "nobody"
        else:
            right, wrong = record["answer"], "no" if record["answer"] == "yes" else "yes"
        good = compute_score("tomforge_gen", f"<think>x</think><answer>{right}</answer>", truth)
        bad = compute_score("tomforge_gen", f"<think>x</think><answer>{wrong}</answer>", truth)
        assert _score(good) > _score(bad), (record["question"], right, wrong)


def _score(value) -> float:
    return float(value["score"] if isinstance(value, dict) else value)


# -- the command line -----------------------------------------------------------------------------
def test_generate_forms_flag(tmp_path) -> None:
    from typer.testing import CliRunner

    from tomforge.flows.cli import app

    path = tmp_path / "w.duckdb"
    args = ["generate", "--n", "80", "--max-order", "1", "-w", str(path), "--rendering", "dialogue"]
    result = CliRunner().invoke(app, [*args, "--forms", "list,answerability"])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(
            "SELECT question_type, answer_format, context_kind, count(*) FROM items_full GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert rows == [("answerability", "list", "dialogue", 40), ("answerability", "yes_no", "dialogue", 40)]
    bad = CliRunner().invoke(app, [*args, "--forms", "mc,lists"])
    assert bad.exit_code == 2 and "unknown question forms ['lists']" in bad.output


def presence_replayed(story: Story) -> list[set[str]]:
    """Who is in a room just before each event, replayed from the trace's comings and goings."""
    inside: set[str] = set()
    before = []
    for event in story.events:
        before.append(set(inside))
        if event.kind == ENTER:
            inside.add(event.the_agent())
        elif event.kind == EXIT:
            inside.discard(event.the_agent())
    return before


def test_a_statement_is_its_holders_turn_only_when_present() -> None:
    """Issue 38: a statement by an agent who is away was spoken as an ordinary turn. Presence replayed from each
    story's events: a present holder says the opinion; an absent holder's is the narrator's line ("Away from the
    others, X says: ..."). Stories with the distractor operator, whose bystander speaks before or after leaving."""
    import random

    from tomforge.generators.entities import pools
    from tomforge.generators.operators import distractor
    from tomforge.generators.story import build_base
    from tomforge.generators.world import STATEMENT

    seen = Counter()
    for seed in range(60):
        rng = random.Random(seed)
        story = distractor(build_base(rng, pools(False), 3, 2), rng, pools(False))
        if story is None:
            continue
        spoken = tell(story, str, (0, 1, 2), random.Random(seed))
        present = presence_replayed(story)
        for index, event in enumerate(story.events):
            if event.kind != STATEMENT:
                continue
            (turn,) = [t for t, e in zip(spoken.turns, spoken.events) if e == index]
            holder = event.the_agent()
            if holder in present[index]:
                assert turn[0] == holder and "Away from the others" not in turn[1], turn
                seen["present"] += 1
            else:
                assert turn[0] == NARRATOR and turn[1].startswith(f"(Away from the others, {holder} says: "), turn
                seen["absent"] += 1
    assert seen["present"] >= 5 and seen["absent"] >= 5, seen
