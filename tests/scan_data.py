"""Own fixtures for the scan tests: a tiny warehouse of templated held-out stories and a corpus of
fresh stories from the same templates (the null: they share long n-grams with the benchmark by
nature) plus filler prose, with benchmark stories planted in known ways at known places."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from tests.audit_data import load
from tomforge.audits.synthetic import NAMES, clean_records

FILLER_WORDS = (
    "the river ran past old mills while traders argued about grain prices and weather in the "
    "valley towns where children learned letters from travelling teachers every winter"
).split()


def filler(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(FILLER_WORDS) for _ in range(n_words)]
    return " ".join(words).capitalize() + "."


def swap_names(text: str) -> str:
    """Every agent name mapped to another one (a derangement of the names in the text)."""
    found = sorted(set(re.findall(r"\b(" + "|".join(NAMES) + r")\b", text)))
    mapping = dict(zip(found, found[1:] + found[:1])) if len(found) > 1 else {n: "Zorblax" for n in found}
    return re.sub(r"\b(" + "|".join(NAMES) + r")\b", lambda m: mapping.get(m.group(1), m.group(1)), text)


def rewrap(text: str) -> str:
    """Upper case, lines re-wrapped every 7 words, punctuation changed: the same words."""
    words = text.replace(".", " ;").split()
    return "\n".join(" ".join(words[i : i + 7]) for i in range(0, len(words), 7)).upper()


@dataclass
class Plant:
    row: int
    kind: str  # plant kind
    story: str  # the planted story's text
    start: int = 0  # character span of the story in the document (embedded)
    end: int = 0


def benchmark_warehouse(path: Path, n_test: int = 120) -> tuple[Path, list[str]]:
    """A warehouse with `n_test` held-out stories (4 questions each) and a small train split;
    returns it and the held-out story texts."""
    test = clean_records(n_test, seed=2, split="test")
    train = clean_records(30, seed=1, split="train")
    load(path, test + train)
    stories = sorted({r["context"] for r in test})
    return path, stories


def planted_corpus(stories: list[str], n_clean: int = 200, seed: int = 11) -> tuple[list[dict], list[Plant]]:
    """Clean documents (fresh templated stories, filler prose) with five plant kinds at known rows."""
    rng = random.Random(seed)
    clean = [r["context"] for r in clean_records(n_clean, seed=seed, orders=(0,))]
    docs: list[dict] = [{"id": f"c{i}", "text": t if i % 2 else filler(rng, 150)} for i, t in enumerate(clean)]
    plants: list[Plant] = []
    pick = iter(stories[::7])
    for kind in ("verbatim", "rewrapped", "embedded", "first_half", "names_swapped"):
        story = next(pick)
        if kind == "verbatim":
            text = story
        elif kind == "rewrapped":
            text = rewrap(story)
        elif kind == "embedded":
            before, after = filler(rng, 200), filler(rng, 120)
            text = f"{before} {story} {after}"
        elif kind == "first_half":
            words = story.split(" ")
            text = " ".join(words[: len(words) // 2])
        else:
            text = swap_names(story)
        row = rng.randrange(len(docs) + 1)
        for p in plants:
            p.row += p.row >= row
        start = text.find(story) if kind == "embedded" else 0
        plants.append(Plant(row, kind, story, start, start + len(story) if kind == "embedded" else len(text)))
        docs.insert(row, {"id": f"plant-{kind}", "text": text})
    return docs, plants


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path
