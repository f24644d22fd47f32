"""Re-formatted copies of benchmark stories, as training pipelines make them (issue 36).

A story is either numbered lines (HiToM, ToMi: `1 Ann entered the kitchen.`) or prose (ExploreToM,
OpenToM). Each form is a named function `form(story, rng) -> str | None` returning the document text
(None where the form does not apply, e.g. dropping line numbers from prose). Two forms are containers,
not text: `verl_row` (a verl parquet row, `prompt` chat messages) and `trl_row` (a TRL conversational
jsonl row); `flatten_messages` gives the text a tool without a chat reader sees (contents joined by
newlines, as `tomforge scan` reads a `prompt` column).

`plant(story, form, seed)` is deterministic: its random choices (which lines are swapped, which line is
dropped, which replacement names) come from a generator seeded with (seed, form, story key).

Used by `bench/reformat.py` (recall per form of `tomforge scan`, `tomforge audit`, decon and lm-eval) and
tested on hand-written fixtures in `tests/test_reformat_plants.py`.
"""

from __future__ import annotations

import html
import json
import random
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

NUMBER = re.compile(r"^\s*\d+[.):]?\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
# capitalized words that open sentences or questions and are not agents
NOT_NAMES = frozenset(
    """A An The In On At Of To From By With Without Into Onto Inside Outside While After Before Then Now
    He She They It His Her Their Its Him Them One Two Three This That These Those There Here When Where
    What Who Whom Whose Which Why How As But And Or So Yet Meanwhile Later Finally Both Each Every
    Everyone Everybody Nobody Someone Somebody All Some Is Are Was Were Does Do Did Has Have Had Will
    Would Can Could Should May Might Yes No Not Story Question Answer Note Choices Read Options I We You
    My Our Your Me Us If Since Because Although Though Once During Upon Also Just Still Even Only
    Suddenly Unbeknownst Later Soon First Second Third Last Next Afterwards Eventually However""".split()
)
TWO_WORD_NAMES = (
    "Mary Ann", "Jo Beth", "Anna Lee", "Billy Ray", "Sara Jane", "John Paul", "Ella Mae", "Jean Luc",
    "Lou Ellen", "Bobby Joe", "Rose Marie", "Carl Henry", "Nora Kate", "Luis Miguel", "Ana Sofia",
    "Tom Lee", "Amy Lynn", "Ruth Ann", "Van Nguyen", "Kim Soo",
)  # fmt: skip
HYPHENATED_NAMES = (
    "Anne-Marie", "Jean-Pierre", "Mary-Kate", "Lee-Ann", "Marie-Claire", "Jean-Paul", "Ana-Lucia",
    "Hans-Peter", "Eun-Ji", "Ji-Woo", "Karl-Heinz", "Sarah-Jane", "Li-Na", "Jo-Anne", "Mei-Ling",
    "Pierre-Louis", "Rose-Anne", "Min-Jun", "Lou-Ellen", "Kai-Uwe",
)  # fmt: skip
SYSTEM = "You are a helpful assistant. Think step by step inside <think></think>, then answer inside <answer></answer>."


@dataclass(frozen=True)
class Story:
    """One benchmark story: `key` names it (source and index), `numbered` says its lines carry numbers."""

    key: str
    text: str
    question: str = "Where is the object?"
    answer: str = ""
    numbered: bool = False
    names: tuple[str, ...] = field(default=())


def units(story: Story) -> list[str]:
    """The story's lines without their numbers (numbered formats) or its sentences (prose)."""
    if story.numbered:
        return [NUMBER.sub("", line).strip() for line in story.text.splitlines() if line.strip()]
    return [s.strip() for s in SENTENCE_END.split(" ".join(story.text.split())) if s.strip()]


def numbered(lines: list[str], style: str = "{i} {line}") -> str:
    return "\n".join(style.format(i=i, line=line) for i, line in enumerate(lines, 1))


def render(story: Story, lines: list[str]) -> str:
    """Lines laid out as the story's own format lays them out (numbered lines, or prose)."""
    return numbered(lines) if story.numbered else " ".join(lines)


def agent_names(story: Story) -> list[str]:
    """The agents' names in order of first mention: `story.names` when given, else the capitalized
    words that are not sentence openers (NOT_NAMES) and never occur in lower case in the story."""
    if story.names:
        return list(story.names)
    lower = set(re.findall(r"\b[a-z]+\b", story.text))
    seen: dict[str, None] = {}
    for word in re.findall(r"\b[A-Z][a-z]+\b", story.text):
        if word not in NOT_NAMES and word.lower() not in lower:
            seen.setdefault(word)
    return list(seen)


def replace_names(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, mapping), key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


# ---- the forms: each (story, rng) -> document text, or None where it does not apply ----


def verbatim(story: Story, rng: random.Random) -> str | None:
    return story.text


def numbers_dropped(story: Story, rng: random.Random) -> str | None:
    """Numbered lines without their numbers (one line each)."""
    return "\n".join(units(story)) if story.numbered else None


def html_paragraphs(story: Story, rng: random.Random) -> str | None:
    """Each line (numbers kept) or sentence in `<p>..</p>`, HTML entities escaped (`'` -> `&#x27;`)."""
    lines = story.text.splitlines() if story.numbered else units(story)
    return "\n".join(f"<p>{html.escape(line.strip())}</p>" for line in lines if line.strip())


def html_list(story: Story, rng: random.Random) -> str | None:
    """An HTML ordered list of the lines without numbers, on one line (as a scraped page gives it)."""
    return "<ol>" + "".join(f"<li>{html.escape(u)}</li>" for u in units(story)) + "</ol>"


def chatml(story: Story, rng: random.Random) -> str | None:
    """The chat template applied: ChatML with a system turn, `Story: ...` then `Question: ...`."""
    return (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nStory: {story.text}\n"
        f"Question: {story.question}<|im_end|>\n<|im_start|>assistant\n"
    )


def llama3_chat(story: Story, rng: random.Random) -> str | None:
    """Llama 3's chat template, numbers dropped (one line each)."""
    body = "\n".join(units(story))
    return (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
        f"{body}\n\n{story.question}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def alpaca_preamble(story: Story, rng: random.Random) -> str | None:
    """An instruction preamble (Alpaca's) before the story as input, numbers dropped."""
    return (
        "Below is an instruction that describes a task, paired with an input that provides further context. "
        "Write a response that appropriately completes the request.\n\n### Instruction:\n"
        f"{story.question}\n\n### Input:\n" + "\n".join(units(story)) + "\n\n### Response:\n"
    )


def json_escaped(story: Story, rng: random.Random) -> str | None:
    """The story as a JSON string inside a field, serialized into the text (`\\n`, `\\"` escapes)."""
    return json.dumps({"id": story.key, "story": story.text, "question": story.question})


def swapped(story: Story, rng: random.Random) -> str | None:
    """Two adjacent lines or sentences (not the first) swapped; numbered formats renumbered."""
    lines = units(story)
    if len(lines) < 3:
        return None
    i = rng.randrange(1, len(lines) - 1)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return render(story, lines)


def line_dropped(story: Story, rng: random.Random) -> str | None:
    """One line or sentence (not the first) dropped, numbering dropped (one line each; prose stays prose)."""
    lines = units(story)
    if len(lines) < 3:
        return None
    del lines[rng.randrange(1, len(lines))]
    return "\n".join(lines) if story.numbered else " ".join(lines)


def _renamed(story: Story, rng: random.Random, pool: tuple[str, ...]) -> str | None:
    names = agent_names(story)
    if not names:
        return None
    choices = [n for n in pool if not any(part in story.text for part in re.split(r"[ -]", n))]
    picks = rng.sample(choices, min(len(names), len(choices)))
    return replace_names(story.text, dict(zip(names, picks)))


def names_two_word(story: Story, rng: random.Random) -> str | None:
    """Every agent name replaced, consistently, by a two-word name ("Mary Ann")."""
    return _renamed(story, rng, TWO_WORD_NAMES)


def names_hyphenated(story: Story, rng: random.Random) -> str | None:
    """Every agent name replaced, consistently, by a hyphenated name ("Anne-Marie")."""
    return _renamed(story, rng, HYPHENATED_NAMES)


def numbered_list(story: Story, rng: random.Random) -> str | None:
    """Lines or sentences as a numbered list `1. ...` (prose turned into a list; numbered lines re-styled)."""
    return numbered(units(story), "{i}. {line}")


def rewrapped(story: Story, rng: random.Random) -> str | None:
    """Numbers dropped, the text run together and hard-wrapped at 60 characters."""
    return textwrap.fill(" ".join(units(story)), width=60)


def markdown_bullets(story: Story, rng: random.Random) -> str | None:
    """A markdown bullet list under a heading, numbers dropped."""
    return "## Story\n\n" + "\n".join(f"- {u}" for u in units(story))


def lowercased(story: Story, rng: random.Random) -> str | None:
    return story.text.lower()


def whitespace_quotes(story: Story, rng: random.Random) -> str | None:
    """Extra whitespace (double spaces, tabs, blank lines, no-break spaces) and curly quotes."""
    text = story.text.replace("'", "\u2019")
    text = re.sub(r'"([^"]*)"', "\u201c\\1\u201d", text)
    words = text.split(" ")
    out = []
    for w in words:
        out.append(w)
        out.append(rng.choice(("  ", " ", "\t", "\u00a0", " ")))
    return "\n".join(line.rstrip(" ") + "  " for line in "".join(out).strip().split("\n")).replace("\n", "\n\n")


def semicolon_joined(story: Story, rng: random.Random) -> str | None:
    """Numbers dropped, sentences joined with "; " into one line (final stops removed)."""
    return "; ".join(u.rstrip(".") for u in units(story)) + "."


def underscores_spaced(story: Story, rng: random.Random) -> str | None:
    """Identifiers made readable: `living_room` -> `living room`, `Anne-Marie`-style hyphens kept."""
    return story.text.replace("_", " ") if "_" in story.text else None


def ellipsis_truncated(story: Story, rng: random.Random) -> str | None:
    """A prompt budget cut: the last fifth of the lines replaced by `...` (numbers kept)."""
    lines = story.text.splitlines() if story.numbered else units(story)
    keep = max(2, len(lines) - max(1, len(lines) // 5))
    if keep >= len(lines):
        return None
    return ("\n" if story.numbered else " ").join(lines[:keep]) + " ..."


def step_numbers(story: Story, rng: random.Random) -> str | None:
    """Lines or sentences as `Step 1: ...` (a recipe-style renumbering)."""
    return numbered(units(story), "Step {i}: {line}")


def bracket_numbers(story: Story, rng: random.Random) -> str | None:
    """Lines or sentences as `[1] ...`, all on one line (a flattened citation-style list)."""
    return " ".join(f"[{i}] {u}" for i, u in enumerate(units(story), 1))


def xml_tags(story: Story, rng: random.Random) -> str | None:
    """The story in `<story>` tags (entities escaped, numbers dropped), the question in `<question>`."""
    body = html.escape("\n".join(units(story)), quote=False)
    return f"<story>\n{body}\n</story>\n<question>{html.escape(story.question, quote=False)}</question>"


def code_fence(story: Story, rng: random.Random) -> str | None:
    """A markdown code fence around the unnumbered lines, after a sentence of instructions."""
    return "Read the following story carefully.\n\n```text\n" + "\n".join(units(story)) + "\n```\n"


def question_first(story: Story, rng: random.Random) -> str | None:
    """The question first, then `Context:` and the story as one paragraph (numbers dropped)."""
    return f"Question: {story.question}\nContext: " + " ".join(units(story))


def uppercased(story: Story, rng: random.Random) -> str | None:
    return story.text.upper()


def csv_field(story: Story, rng: random.Random) -> str | None:
    """A CSV record as a dump of a table gives it: id, the story quoted (`"` doubled), the question."""
    quote = '"'
    return f"{story.key},{quote}{story.text.replace(quote, quote * 2)}{quote},{quote}{story.question}{quote}"


FORMS: dict[str, Callable[[Story, random.Random], str | None]] = {
    f.__name__: f
    for f in (
        verbatim,
        numbers_dropped,
        html_paragraphs,
        html_list,
        chatml,
        llama3_chat,
        alpaca_preamble,
        json_escaped,
        swapped,
        line_dropped,
        names_two_word,
        names_hyphenated,
        numbered_list,
        rewrapped,
        markdown_bullets,
        lowercased,
        whitespace_quotes,
        semicolon_joined,
        underscores_spaced,
        ellipsis_truncated,
        step_numbers,
        bracket_numbers,
        xml_tags,
        code_fence,
        question_first,
        uppercased,
        csv_field,
    )
}


# ---- container forms: RL file rows ----


def user_message(story: Story) -> str:
    return f"Story: {story.text}\nQuestion: {story.question}"


def verl_row(story: Story, rng: random.Random) -> dict:
    """A verl parquet row: `prompt` chat messages (system + user `Story: ...\\nQuestion: ...`)."""
    return {
        "data_source": "someone/tom-rl",
        "ability": "tom",
        "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user_message(story)}],
        "reward_model": {"style": "rule", "ground_truth": story.answer},
    }


def trl_row(story: Story, rng: random.Random) -> dict:
    """A TRL conversational jsonl row: `prompt` messages (user only, numbers dropped) and `completion`."""
    body = "\n".join(units(story))
    return {
        "prompt": [{"role": "user", "content": f"Story:\n{body}\n\nQuestion: {story.question}"}],
        "completion": [{"role": "assistant", "content": f"<answer>{story.answer}</answer>"}],
        "ground_truth": story.answer,
    }


CONTAINER_FORMS: dict[str, Callable[[Story, random.Random], dict]] = {"verl_parquet": verl_row, "trl_jsonl": trl_row}
ALL_FORMS = (*FORMS, *CONTAINER_FORMS)


def flatten_messages(row: dict) -> str:
    """The text of a row's `prompt` messages, joined by newlines (what `tomforge scan` reads)."""
    return "\n".join(m["content"] for m in row["prompt"])


def rng_for(story: Story, form: str, seed: int) -> random.Random:
    return random.Random(f"{seed}:{form}:{story.key}")


def plant(story: Story, form: str, seed: int = 0) -> str | dict | None:
    """`story` in `form` (a text, a container row, or None where the form does not apply)."""
    rng = rng_for(story, form, seed)
    if form in CONTAINER_FORMS:
        return CONTAINER_FORMS[form](story, rng)
    return FORMS[form](story, rng)


def plant_text(story: Story, form: str, seed: int = 0) -> str | None:
    """The planted document's text as a tool without a chat reader sees it."""
    out = plant(story, form, seed)
    return flatten_messages(out) if isinstance(out, dict) else out
