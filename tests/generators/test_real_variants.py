"""Variants of real stories: each operator on a real-format story, higher orders in the source's
wording, split inheritance, determinism, balance, the `tomforge variants` command, the audit's
variant-leak and oracle findings, and the clean quarantine. Expectations are worked out by hand
from the fixture stories (see tests/generators/test_real_oracle.py) or read back from the rendered text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from tests.flows.test_cli import assert_one_line_error, run
from tests.generators.test_real_oracle import TOMI_TRACE, TOMI_TXT, exploretom_records, hitom_records, hitom_row
from tomforge.audits.clean import apply_cleaning
from tomforge.audits.config import CleaningPolicy
from tomforge.audits.run import run_audit
from tomforge.generators.real import hitom, tomi
from tomforge.generators.real.operators import supported
from tomforge.generators.real.oracle import check_item
from tomforge.generators.real.variants import Settings, build_variants

# Hand-worked beliefs at the end of HITOM_STORY under HiToM's rules: Kim and Lou left before Max and
# adopt his public claim (red_tin); Max saw the last move (green_pot) and does not trust Kim.
BELIEFS = {"Kim": "red_tin", "Lou": "red_tin", "Max": "green_pot"}
QUESTIONS = [
    ("Where is the fig really?", 0, "green_pot"),
    ("Where does Max really think the fig is?", 1, "green_pot"),
    ("Where does Lou think Kim thinks the fig is?", 2, "blue_jar"),
]
MOVE = re.compile(r"(\w+) moved the fig to the (\w+)\.?")


@pytest.fixture
def hitom_items(tmp_path: Path) -> list[dict]:
    return hitom_records(
        tmp_path, [hitom_row(q, order, gold, sample=i) for i, (q, order, gold) in enumerate(QUESTIONS)]
    )


def variants_of(records: list[dict], source: str, operator: str, **settings) -> list[dict]:
    settings.setdefault("balance", False)  # the operator alone (balance may add statements and drop variants)
    outcome = build_variants(source, records, Settings(operators=[operator], max_order=0, **settings))
    assert not [reason for reason in outcome.skipped if "re-check" in reason], outcome.skipped
    made = [r for r in outcome.records if r["operators"] == [operator]]
    assert made, outcome.skipped
    return made


def story_lines(record: dict) -> list[str]:
    return [line.split(" ", 1)[1] for line in record["context"].splitlines()]


def added_lines(variant: dict, original: str) -> list[tuple[int, str]]:
    old = [line.split(" ", 1)[1] for line in original.splitlines()]
    new = story_lines(variant)
    out, j = [], 0
    for i, line in enumerate(new):
        if j < len(old) and line == old[j]:
            j += 1
        else:
            out.append((i, line))
    assert j == len(old), "the original sentences stay, in order"
    return out


def test_every_gold_of_the_fixture_agrees(hitom_items) -> None:
    assert [check_item(r).oracle_answer for r in sorted(hitom_items, key=lambda r: r["belief_order"])] == [
        gold for _, _, gold in QUESTIONS
    ]


def test_unobserved_move(hitom_items) -> None:
    for variant in variants_of(hitom_items, "hitom", "unobserved_move"):
        [(index, line)] = added_lines(variant, hitom_items[0]["context"])
        mover = MOVE.fullmatch(line).group(1)
        before = story_lines(variant)[:index]
        entered = any("entered the attic" in l and mover in l for l in before)
        left = [l.split()[0] for l in before if l.endswith("exited the attic.")]
        assert entered and mover not in left and left, (line, before)  # mover there, someone already gone
        hitom.parse_story(variant["context"])


def test_return_puts_the_object_back(hitom_items) -> None:
    for variant in variants_of(hitom_items, "hitom", "return"):
        last_move = [MOVE.fullmatch(l).group(2) for l in story_lines(variant) if MOVE.fullmatch(l)][-1]
        assert last_move == "red_tin"  # the fig's first container (line 2)
        if variant["belief_order"] == 0:
            assert variant["answer"] == "red_tin" and variant["meta"]["gold_changed"] is True


def test_remention_makes_a_wrong_container_first_and_most_mentioned(hitom_items) -> None:
    for variant in variants_of(hitom_items, "hitom", "remention"):
        text = variant["context"]
        liked = re.search(r"likes the (\w+)\.", text).group(1)
        golds = {gold for _, _, gold in QUESTIONS}
        assert liked not in golds
        mentions = Counter(re.findall(r"\b(?:red|blue|green|white)_\w+", text))
        assert mentions.most_common(1)[0][0] == liked and list(mentions)[0] == liked
        assert mentions[liked] > max(n for c, n in mentions.items() if c != liked)
        assert variant["meta"]["gold_changed"] is False and variant["answer"] == variant["meta"]["original_answer"]


@pytest.mark.parametrize("operator", ["private_tell", "public_tell", "lie"])
def test_tells_in_hitom_wording(hitom_items, operator: str) -> None:
    tell = re.compile(r"(\w+) (?:privately told \w+ that the fig|publicly claimed that fig) is in the (\w+)\.")
    for variant in variants_of(hitom_items, "hitom", operator):
        [(index, line)] = added_lines(variant, hitom_items[0]["context"])
        assert index == len(story_lines(variant)) - 1
        speaker, container = tell.fullmatch(line).groups()
        if operator == "lie":
            assert container != BELIEFS[speaker]
        else:
            assert container == BELIEFS[speaker]
            assert ("privately" in line) == (operator == "private_tell")


def test_reorder_options_keeps_story_and_gold(hitom_items) -> None:
    originals = {r["item_id"]: r for r in hitom_items}
    for variant in variants_of(hitom_items, "hitom", "reorder_options"):
        original = originals[variant["meta"]["variant_of"]]
        assert variant["context"] == original["context"] and variant["answer"] == original["answer"]
        assert sorted(variant["options"]) == sorted(original["options"])
        assert variant["options"][variant["answer_index"]] == variant["answer"]


def test_variants_inherit_split_and_point_at_their_original(tmp_path: Path) -> None:
    items = tomi_items(tmp_path)
    by_id = {r["item_id"]: r for r in items}
    outcome = build_variants("tomi", items, Settings(max_order=4, n_per_story=2))
    assert outcome.records
    for variant in outcome.records:
        original = by_id[variant["meta"]["variant_of"]]
        assert variant["split"] == original["split"] == "test"
        assert variant["source"] == "tomi_variants"
        assert check_item(variant).agrees


def tomi_items(tmp_path: Path, name: str = "tomi_test") -> list[dict]:
    from tests.source_helpers import read_all
    from tomforge.warehouse.sources import get_adapter

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / f"{name}.txt").write_text(TOMI_TXT)
    (tmp_path / f"{name}.trace").write_text(TOMI_TRACE)
    records, rejects = read_all(get_adapter("tomi"), tmp_path / f"{name}.txt")
    assert not rejects
    return records


def test_tomi_operators_and_higher_orders_in_tomi_wording(tmp_path: Path) -> None:
    items = tomi_items(tmp_path)
    every = ["unobserved_move", "return", "remention", "private_tell", "public_tell", "lie"]
    assert supported("tomi", "free_text") == every
    outcome = build_variants("tomi", items, Settings(max_order=4, n_per_story=6, balance=False))
    made = Counter(r["operators"][0] for r in outcome.records)
    assert set(made) == {"higher_order", *every}, outcome.skipped
    for variant in outcome.records:
        tomi.parse_story(variant["context"])  # every sentence is one of ToMi's
        assert "privately" not in variant["context"] and "publicly" not in variant["context"]
    higher = [r for r in outcome.records if r["operators"] == ["higher_order"]]
    assert {r["belief_order"] for r in higher} == {0, 3, 4}  # the fixture asks orders 1 and 2 only
    assert [r["question"] for r in higher if r["belief_order"] == 0] == ["Where is the kiwi really?"]
    for record in (r for r in higher if r["belief_order"] > 0):
        chain = record["perspective_chain"]
        expected = (
            f"Where does {chain[0]} think that "
            + "".join(f"{a} thinks that " for a in chain[1:-1])
            + f"{chain[-1]} searches for the kiwi?"
        )
        assert record["question"] == expected
        assert tomi.parse_question(record["question"]) == ("belief", tuple(chain), "kiwi")
        assert record["answer"] == "blue_bag"  # ToMi's rules: Ann's return is known to all (see test_real_oracle)
    remention = [r for r in outcome.records if r["operators"] == ["remention"]]
    assert all(re.search(r"^\d+ \w+ likes the \w+$", r["context"], re.M) for r in remention)  # no full stop


# The sentence shapes of each source, written by hand from its published stories (ToMi's tells: the two
# shapes tomforge adds in ToMi's terse style). A variant line must have one of its own source's shapes.
SHAPES = {
    "tomi": [
        r"\w+ entered the \w+\.",
        r"\w+ exited the \w+\.",
        r"The \w+ is in the \w+\.",
        r"\w+ moved the \w+ to the \w+\.",
        r"\w+ (?:likes|dislikes|loves|hates) the \w+",
        r"\w+ told \w+ that the \w+ is in the \w+\.",
        r"\w+ said that the \w+ is in the \w+\.",
    ],
    "hitom": [
        r"\w+(?:(?:, | and )\w+)* entered the \w+\.",
        r"\w+ exited the \w+\.",
        r"The \w+ is in the \w+\.",
        r"\w+ moved the \w+ to the \w+\.",
        r"\w+ made no movements and stayed in the \w+ for 1 minute\.",
        r"\w+ privately told \w+ that the \w+ is in the \w+\.",
        r"\w+ publicly claimed that \w+ is in the \w+\.",
        r"\w+ (?:likes|dislikes) the \w+\.",
        r"\w+ (?:saw an? \w+|lost his \w+)\.",
    ],
}


def shape_of(line: str, source: str) -> str | None:
    return next((shape for shape in SHAPES[source] if re.fullmatch(shape, line)), None)


def test_style_variant_sentences_have_their_sources_shapes(tmp_path: Path, hitom_items) -> None:
    hitom_tell = "Kim privately told Max that the fig is in the blue_jar."
    assert (
        shape_of(hitom_tell, "tomi") is None
        and shape_of("Max publicly claimed that fig is in the red_tin.", "tomi") is None
    )
    assert shape_of("Ann told Bob that the kiwi is in the red_box.", "hitom") is None  # and the other way round
    for source, items in (("tomi", tomi_items(tmp_path / "t")), ("hitom", hitom_items)):
        outcome = build_variants(source, items, Settings(max_order=4, n_per_story=7))
        tells = [r for r in outcome.records if r["operators"][0] in ("private_tell", "public_tell", "lie")]
        assert tells, (source, outcome.skipped)
        for variant in outcome.records:
            for line in story_lines(variant):
                assert shape_of(line, source), (source, line)


def test_same_seed_same_variants(hitom_items) -> None:
    def key(seed: int) -> list[tuple[str, str]]:
        return [
            (r["item_id"], r["content_hash"])
            for r in build_variants("hitom", hitom_items, Settings(seed=seed, n_per_story=3)).records
        ]

    assert key(0) == key(0)
    assert key(0) != key(1)


def test_gold_positions_follow_a_deck(hitom_items) -> None:
    outcome = build_variants("hitom", hitom_items, Settings(max_order=6, n_per_story=8, operators=[], balance=False))
    assert {tuple(r["operators"]) for r in outcome.records} == {("higher_order",)}  # operators=[]: none
    for order in range(3, 7):
        counts = Counter(r["answer_index"] for r in outcome.records if r["belief_order"] == order)
        assert sum(counts.values()) == 8 and max(counts.values()) - min(counts.get(p, 0) for p in range(4)) <= 1


def test_cli_variants_writes_oracle_checks_and_variants(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    folder = tmp_path / "tomi"
    tomi_items(folder)
    assert run("ingest", "--source", "tomi", "--path", str(folder), "-w", str(warehouse)).exit_code == 0
    result = run("variants", "--source", "tomi", "--max-order", "3", "-w", str(warehouse))
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(warehouse), read_only=True)
    n_variants = con.execute("SELECT count(*) FROM items WHERE source = 'tomi_variants'").fetchone()[0]
    checks = con.execute(
        "SELECT source, count(*), count(*) FILTER (WHERE agrees) FROM oracle_checks GROUP BY 1 ORDER BY 1"
    ).fetchall()
    con.close()
    assert checks == [("tomi", 2, 2), ("tomi_variants", n_variants, n_variants)] and n_variants > 0
    assert f"tomi_variants: {n_variants} items" in result.output
    assert_one_line_error(
        run("variants", "--source", "tomi", "--operators", "teleport", "-w", str(warehouse)),
        "unknown operators",
        "teleport",
    )
    assert_one_line_error(run("variants", "--source", "hitom", "-w", str(warehouse)), "no items of source 'hitom'")
    assert_one_line_error(run("variants", "--source", "tomi", "-w", str(tmp_path / "none.duckdb")), "not found")


def test_audit_reports_variant_leak_and_oracle_disagreement_and_clean_quarantines(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    test_dir, train_dir = tmp_path / "test", tmp_path / "train"
    tomi_items(test_dir, "tomi_test")
    (train_dir).mkdir()
    planted = TOMI_TXT.replace("Ann look for the kiwi?\tblue_bag", "Ann look for the kiwi?\tred_box")  # wrong gold
    other = planted.replace("kiwi", "plum").replace("porch", "attic")
    (train_dir / "tomi_train.txt").write_text(other)
    (train_dir / "tomi_train.trace").write_text(TOMI_TRACE)
    for folder in (test_dir, train_dir):
        assert run("ingest", "--source", "tomi", "--path", str(folder), "-w", str(warehouse)).exit_code == 0
    assert run("variants", "--source", "tomi", "--max-order", "3", "-w", str(warehouse)).exit_code == 0

    verdict: dict[str, object] = {}

    def findings(train: str, heldout: str) -> dict[str, list[dict]]:
        summary = run_audit(warehouse, train, heldout)
        verdict.clear()
        verdict.update({v.check: v for v in summary.verdicts})
        out: dict[str, list[dict]] = {}
        for row in summary.findings.iter_rows(named=True):
            out.setdefault(row["check"], []).append(row | {"evidence": json.loads(row["evidence"])})
        return out

    clean = findings("split = 'train'", "split = 'test'")  # variants inherit 'test': nothing crosses
    assert "overlap:variant_leak" not in clean and "variant leaks" not in verdict
    [wrong] = clean["consistency:oracle_disagreement"]
    assert wrong["evidence"]["source"] == "tomi" and len(wrong["evidence"]["item_ids"]) == 1
    oracle = verdict["oracle disagreements"]  # the planted wrong gold, in the verdict table
    assert oracle.status == "warn" and "rejects 1 published golds" in oracle.finding
    assert "tomi_train.txt" in oracle.evidence[0]["items"]
    leaked = findings("split = 'train' OR source = 'tomi_variants'", "split = 'test' AND source = 'tomi'")
    [leak] = leaked["overlap:variant_leak"]
    assert leak["evidence"]["heldout_item_ids"] and set(leak["evidence"]["variant_item_ids"]) <= set(
        leak["evidence"]["train_item_ids"]
    )
    leaks = verdict["variant leaks"]
    assert leaks.status == "fail" and leaks.finding.startswith("1 story with items on both sides")
    assert f"({len(leak['evidence']['train_item_ids'])} train items)" in leaks.finding
    run_audit(warehouse, "split = 'train'", "split = 'test'")
    kept = apply_cleaning(warehouse, CleaningPolicy())
    assert "oracle_rejects_gold" not in set(kept.removed["reason"])
    quarantined = apply_cleaning(warehouse, CleaningPolicy(quarantine_oracle=True))
    gone = quarantined.removed.filter(quarantined.removed["reason"] == "oracle_rejects_gold")
    assert gone["item_id"].to_list() == wrong["evidence"]["item_ids"]
    assert quarantined.reconciled


def role_from_text(record: dict) -> str:
    """The gold's role read off the story text: first placement, last move, another move, or never."""
    places = [re.fullmatch(r"The fig is in the (\w+)\.", l) or MOVE.fullmatch(l) for l in story_lines(record)]
    places = [m.group(m.lastindex) for m in places if m]
    gold = record["answer"]
    if gold == places[0]:
        return "initial"
    return "final" if gold == places[-1] else "intermediate" if gold in places else "never"


def test_exploretom_variants_keep_its_paragraph_and_modifiers(tmp_path: Path) -> None:
    from tomforge.generators.real import exploretom

    items = exploretom_records(tmp_path)
    outcome = build_variants("exploretom", items, Settings(max_order=3, n_per_story=4))
    assert {r["operators"][0] for r in outcome.records} == {"higher_order", "unobserved_move", "return"}
    assert not [reason for reason in outcome.skipped if "re-check" in reason]
    modifier = re.compile(r"While this action was happening, (\w+) (witnessed|got distracted)")
    original_pairs = re.findall(
        r"moved the brass key to the ([a-z ]+?), [^.]*\. While this action was happening, (\w+)", items[0]["context"]
    )
    for variant in outcome.records:
        assert "\n" not in variant["context"]  # one paragraph, as published
        story = exploretom.parse_story(variant["context"])
        assert len(modifier.findall(variant["context"])) == 2
        # each modifier still follows the move it was written about
        assert (
            re.findall(
                r"moved the brass key to the ([a-z ]+?), [^.]*\. While this action was happening, (\w+)",
                variant["context"],
            )
            == original_pairs
        )
        assert story.lines  # parsed
    third = [r for r in outcome.records if r["belief_order"] == 3]
    assert third and all(
        re.fullmatch(
            r"In which container does \w+ think that \w+ thinks that \w+ will search for "
            r"the brass key\?",
            r["question"],
        )
        for r in third
    )


def test_tomi_tells_where_and_what(tmp_path: Path) -> None:
    """TOMI_TXT by hand: Ann leaves (line 4) before Bob moves the kiwi to the blue_bag; Bob leaves, Ann comes
    back and (ToMi's rules) sees it there. At the end only Ann is in a room: a private tell is hers, said
    last; a public tell needs two in a room: lines 2-3 (after line 3, the kiwi in the red_box, is the last
    such point). Bob left after Ann, so he does not trust her: no tell changes a gold here."""
    items = tomi_items(tmp_path)
    tell = re.compile(r"(\w+) (?:told (\w+)|said) that the kiwi is in the (\w+)\.")
    for operator in ("private_tell", "public_tell", "lie"):
        for variant in variants_of(items, "tomi", operator, n_per_story=4):
            [(index, line)] = added_lines(variant, items[0]["context"])
            speaker, listener, container = tell.fullmatch(line).groups()
            if listener:  # private: Ann to Bob, last
                assert (index, speaker, listener) == (7, "Ann", "Bob")
                assert container == ("red_box" if operator == "lie" else "blue_bag")
            else:  # public: after the kiwi is placed, both still there
                assert index == 3 and speaker in ("Ann", "Bob")
                assert container == ("blue_bag" if operator == "lie" else "red_box")
            assert variant["answer"] == "blue_bag" and variant["meta"]["gold_changed"] is False


# Issue 25 item 3: a memory question asks no one's belief, so it is order 0 (README), in variants too.
TOMI_MEMORY_STORY = """1 Ann entered the porch.
2 Bob entered the porch.
3 The kiwi is in the red_box.
4 Ann exited the porch.
5 Bob moved the kiwi to the blue_bag.
6 Where was the kiwi at the beginning?\tred_box\t1
"""


def test_memory_variants_are_order_zero(tmp_path: Path) -> None:
    from tests.generators.test_real_oracle import tomi_records

    items = tomi_records(
        tmp_path, TOMI_MEMORY_STORY, "enter_agent_0,enter_agent_1,agent_0_exits,agent_1_moves_obj,memory,false_belief\n"
    )
    assert [(r["question_type"], r["belief_order"]) for r in items] == [("memory", 0)]  # the adapter's own
    outcome = build_variants("tomi", items, Settings(max_order=0, n_per_story=6, balance=False))
    memory = [r for r in outcome.records if r["question_type"] == "memory"]
    assert memory, outcome.skipped
    assert {r["belief_order"] for r in memory} == {0}
    assert all(r["perspective_chain"] == [] and r["is_false_belief"] is None for r in memory)


def test_oracle_verdict_counts_the_selections_and_says_so(tmp_path: Path) -> None:
    """Issue 25 item 5: the oracle line's words and counts agree: rejected golds in the audited selections,
    next to the warehouse's own count in `oracle_checks`; `clean --quarantine-oracle` removes the former."""
    warehouse = tmp_path / "w.duckdb"
    planted = TOMI_TXT.replace("Ann look for the kiwi?\tblue_bag", "Ann look for the kiwi?\tred_box")  # wrong gold
    for split, text in (
        ("test", planted.replace("kiwi", "fig").replace("porch", "den")),
        ("train", planted.replace("kiwi", "plum").replace("porch", "attic")),
    ):
        folder = tmp_path / split
        folder.mkdir()
        (folder / f"tomi_{split}.txt").write_text(text)
        (folder / f"tomi_{split}.trace").write_text(TOMI_TRACE)
        assert run("ingest", "--source", "tomi", "--path", str(folder), "-w", str(warehouse)).exit_code == 0
    assert run("variants", "--source", "tomi", "--max-order", "2", "-w", str(warehouse)).exit_code == 0
    with duckdb.connect(str(warehouse), read_only=True) as con:
        in_warehouse = con.execute("SELECT count(*) FROM oracle_checks WHERE agrees = false").fetchone()[0]
    assert in_warehouse == 2  # one planted in each file
    summary = run_audit(warehouse, "source = 'tomi' AND split = 'train'", "source = 'tomi_variants'")
    oracle = next(v for v in summary.verdicts if v.check == "oracle disagreements")
    assert "rejects 1 published golds in the audited selections" in oracle.finding, oracle.finding
    assert "2 in the warehouse" in oracle.finding, oracle.finding
    gone = apply_cleaning(warehouse, CleaningPolicy(quarantine_oracle=True)).removed
    assert gone.filter(gone["reason"] == "oracle_rejects_gold").height == 1
