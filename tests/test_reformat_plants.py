"""bench/reformat_plants.py: each re-formatting does what its name says, on hand-written stories, compared
with hand-written expected outputs (the forms the scan and audit benches plant, issue 36)."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest

from bench.reformat_plants import (
    ALL_FORMS,
    FORMS,
    Story,
    agent_names,
    flatten_messages,
    plant,
    plant_text,
    units,
)

LINES = Story(
    key="lines:0",
    text=(
        "1 Nell and Bruno entered the attic.\n"
        "2 The kite is in the red_trunk.\n"
        "3 Bruno exited the attic.\n"
        "4 Nell moved the kite to the blue_box.\n"
        '5 Nell said "it\'s mine" to Bruno.'
    ),
    question="Where will Bruno look for the kite?",
    answer="red_trunk",
    numbered=True,
)
PROSE = Story(
    key="prose:0",
    text="Tilda walked into the barn. Oscar followed her in. Tilda hid the apple in the crate. Then Oscar left the barn.",
    question="Where is the apple?",
    answer="crate",
)
PLAIN = [
    "Nell and Bruno entered the attic.",
    "The kite is in the red_trunk.",
    "Bruno exited the attic.",
    "Nell moved the kite to the blue_box.",
    'Nell said "it\'s mine" to Bruno.',
]


def rng_picking(index: int) -> random.Random:
    """A generator whose first randrange answers `index` (the line a form swaps or drops)."""

    class Fixed(random.Random):
        def randrange(self, *args, **kwargs) -> int:  # type: ignore[override]
            return index

    return Fixed(0)


def test_units_and_names() -> None:
    assert units(LINES) == PLAIN
    assert units(PROSE) == [
        "Tilda walked into the barn.",
        "Oscar followed her in.",
        "Tilda hid the apple in the crate.",
        "Then Oscar left the barn.",
    ]
    assert agent_names(LINES) == ["Nell", "Bruno"]
    assert agent_names(PROSE) == ["Tilda", "Oscar"]  # "Then" opens a sentence, it is no name


def test_verbatim_and_numbers_dropped() -> None:
    assert plant_text(LINES, "verbatim") == LINES.text
    assert plant_text(LINES, "numbers_dropped") == "\n".join(PLAIN)
    assert plant_text(PROSE, "numbers_dropped") is None  # prose has no numbers to drop


def test_html_forms_escape_entities() -> None:
    assert FORMS["html_paragraphs"](LINES, random.Random(0)) == (
        "<p>1 Nell and Bruno entered the attic.</p>\n"
        "<p>2 The kite is in the red_trunk.</p>\n"
        "<p>3 Bruno exited the attic.</p>\n"
        "<p>4 Nell moved the kite to the blue_box.</p>\n"
        "<p>5 Nell said &quot;it&#x27;s mine&quot; to Bruno.</p>"
    )
    assert plant_text(PROSE, "html_list") == (
        "<ol><li>Tilda walked into the barn.</li><li>Oscar followed her in.</li>"
        "<li>Tilda hid the apple in the crate.</li><li>Then Oscar left the barn.</li></ol>"
    )


def test_swapped_swaps_two_adjacent_lines_and_renumbers() -> None:
    assert FORMS["swapped"](LINES, rng_picking(2)) == (
        "1 Nell and Bruno entered the attic.\n"
        "2 The kite is in the red_trunk.\n"
        "3 Nell moved the kite to the blue_box.\n"
        "4 Bruno exited the attic.\n"
        '5 Nell said "it\'s mine" to Bruno.'
    )
    assert FORMS["swapped"](PROSE, rng_picking(1)) == (
        "Tilda walked into the barn. Tilda hid the apple in the crate. Oscar followed her in. Then Oscar left the barn."
    )
    # whatever the seed: same lines, one adjacent pair out of order, numbers 1..n in order
    for seed in range(5):
        out = plant_text(LINES, "swapped", seed)
        assert out is not None
        lines = out.splitlines()
        assert [line.split(" ", 1)[0] for line in lines] == ["1", "2", "3", "4", "5"]
        body = [line.split(" ", 1)[1] for line in lines]
        assert sorted(body) == sorted(PLAIN) and body != PLAIN
        moved = [i for i, (a, b) in enumerate(zip(body, PLAIN)) if a != b]
        assert len(moved) == 2 and moved[1] == moved[0] + 1


def test_line_dropped_drops_one_line_and_the_numbering() -> None:
    assert FORMS["line_dropped"](LINES, rng_picking(3)) == "\n".join(PLAIN[:3] + PLAIN[4:])
    assert FORMS["line_dropped"](PROSE, rng_picking(1)) == (
        "Tilda walked into the barn. Tilda hid the apple in the crate. Then Oscar left the barn."
    )


def test_names_two_word_and_hyphenated_replace_every_name_consistently() -> None:
    two = plant_text(LINES, "names_two_word", 3)
    assert two is not None and "Nell" not in two and "Bruno" not in two
    first = two.split(" and ")[0].removeprefix("1 ")
    second = two.splitlines()[2].removeprefix("3 ").removesuffix(" exited the attic.")
    assert len(first.split()) == 2 and len(second.split()) == 2 and first != second
    assert two == (
        LINES.text.replace("Nell", "\0").replace("Bruno", second).replace("\0", first)
    )  # every mention, the same way
    hyphen = plant_text(PROSE, "names_hyphenated", 3)
    assert hyphen is not None
    tilda = hyphen.split(" walked")[0]
    oscar = hyphen.split(". ")[1].split(" followed")[0]
    assert "-" in tilda and "-" in oscar and tilda != oscar
    assert hyphen == PROSE.text.replace("Tilda", tilda).replace("Oscar", oscar)


def test_list_wrap_and_join_forms() -> None:
    assert plant_text(PROSE, "numbered_list") == (
        "1. Tilda walked into the barn.\n2. Oscar followed her in.\n"
        "3. Tilda hid the apple in the crate.\n4. Then Oscar left the barn."
    )
    assert plant_text(LINES, "markdown_bullets") == "## Story\n\n" + "\n".join(f"- {line}" for line in PLAIN)
    wrapped = plant_text(LINES, "rewrapped")
    assert wrapped is not None and max(len(line) for line in wrapped.splitlines()) <= 60
    assert wrapped.split() == " ".join(PLAIN).split()  # same words, no numbers, new line breaks
    assert plant_text(PROSE, "semicolon_joined") == (
        "Tilda walked into the barn; Oscar followed her in; Tilda hid the apple in the crate; Then Oscar left the barn."
    )


def test_case_whitespace_quotes_and_underscores() -> None:
    assert plant_text(LINES, "lowercased") == LINES.text.lower()
    messy = plant_text(LINES, "whitespace_quotes")
    assert messy is not None and "\u201cit\u2019s mine\u201d" in messy and "'" not in messy
    assert (
        messy.split()
        == LINES.text.replace('"it', "\u201cit").replace("'", "\u2019").replace('mine"', "mine\u201d").split()
    )  # the same words; only spacing and quotes differ
    assert messy != LINES.text and "\n\n" in messy
    assert plant_text(LINES, "underscores_spaced") == LINES.text.replace("red_trunk", "red trunk").replace(
        "blue_box", "blue box"
    )
    assert plant_text(PROSE, "underscores_spaced") is None


def test_templates_and_containers() -> None:
    assert plant_text(LINES, "chatml") == (
        "<|im_start|>system\nYou are a helpful assistant. Think step by step inside <think></think>, then answer "
        "inside <answer></answer>.<|im_end|>\n<|im_start|>user\nStory: " + LINES.text + "\n"
        "Question: Where will Bruno look for the kite?<|im_end|>\n<|im_start|>assistant\n"
    )
    llama = plant_text(PROSE, "llama3_chat")
    assert llama is not None and llama.startswith("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n")
    assert "\n".join(units(PROSE)) in llama and llama.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    alpaca = plant_text(LINES, "alpaca_preamble")
    assert alpaca is not None and alpaca.startswith("Below is an instruction") and "\n".join(PLAIN) in alpaca
    assert json.loads(plant_text(LINES, "json_escaped") or "")["story"] == LINES.text
    assert "\\n2 The kite" in (plant_text(LINES, "json_escaped") or "")  # escaped line breaks in the text
    verl = plant(LINES, "verl_parquet")
    assert isinstance(verl, dict) and [m["role"] for m in verl["prompt"]] == ["system", "user"]
    assert verl["prompt"][1]["content"] == f"Story: {LINES.text}\nQuestion: {LINES.question}"
    assert verl["reward_model"] == {"style": "rule", "ground_truth": "red_trunk"}
    trl = plant(LINES, "trl_jsonl")
    assert isinstance(trl, dict) and trl["prompt"] == [
        {"role": "user", "content": "Story:\n" + "\n".join(PLAIN) + "\n\nQuestion: " + LINES.question}
    ]
    assert flatten_messages(trl) == trl["prompt"][0]["content"]


def test_renumbering_markup_and_record_forms() -> None:
    assert plant_text(LINES, "step_numbers") == "\n".join(f"Step {i}: {line}" for i, line in enumerate(PLAIN, 1))
    assert plant_text(PROSE, "bracket_numbers") == (
        "[1] Tilda walked into the barn. [2] Oscar followed her in. "
        "[3] Tilda hid the apple in the crate. [4] Then Oscar left the barn."
    )
    assert plant_text(PROSE, "xml_tags") == (
        "<story>\nTilda walked into the barn.\nOscar followed her in.\nTilda hid the apple in the crate.\n"
        "Then Oscar left the barn.\n</story>\n<question>Where is the apple?</question>"
    )
    assert plant_text(LINES, "code_fence") == (
        "Read the following story carefully.\n\n```text\n" + "\n".join(PLAIN) + "\n```\n"
    )
    assert plant_text(LINES, "question_first") == (
        "Question: Where will Bruno look for the kite?\nContext: " + " ".join(PLAIN)
    )
    assert plant_text(LINES, "uppercased") == LINES.text.upper()
    record = plant_text(LINES, "csv_field")
    assert record is not None
    assert next(csv.reader(io.StringIO(record))) == ["lines:0", LINES.text, LINES.question]
    assert '""it\'s mine""' in record  # quotes doubled inside the field


def test_ellipsis_truncated_keeps_the_first_lines() -> None:
    assert plant_text(LINES, "ellipsis_truncated") == "\n".join(LINES.text.splitlines()[:4]) + " ..."


@pytest.mark.parametrize("form", ALL_FORMS)
def test_every_form_is_deterministic_and_changes_the_text(form: str) -> None:
    for story in (LINES, PROSE):
        first, again = plant(story, form, 7), plant(story, form, 7)
        assert first == again
        if first is not None and form != "verbatim":
            assert plant_text(story, form, 7) != story.text
