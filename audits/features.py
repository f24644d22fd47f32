"""Per-item structural features for the artifact audits, computed from the text alone.

Candidates are the options of a multiple-choice item, or otherwise the places a story names
("in/into/to/on/inside the X"). For each candidate we find its first and last mention and its
mention count in the normalized story; the heuristic rules (first / last / most mentioned) and
the "answer role" features come from these.
"""
from __future__ import annotations

import re
from typing import Any

import polars as pl

from audits.text import normalize

_PLACE = re.compile(r"\b(?:in|into|to|on|onto|inside|at) the (\w+(?: \w+)?)")
_COMMUNICATION = re.compile(r"\b(?:told|tells|tell|said|says|say|whisper\w*|inform\w*|privately|publicly|"
                            r"mention\w*|shar(?:ed|es)|lied|lies|announc\w*|asked|asks)\b")
LENGTH_BINS = (50, 100, 200, 400)


def _norm(text: str) -> str:
    return " ".join(normalize(text).split())


def _mentions(story: str, candidate: str) -> tuple[int, int, int]:
    """(first, last, count) of a candidate's word-bounded occurrences in a normalized story."""
    if not candidate:
        return -1, -1, 0
    hay = f" {story} "
    needle = f" {candidate} "
    first = last = -1
    count = 0
    at = hay.find(needle)
    while at >= 0:
        if first < 0:
            first = at
        last = at
        count += 1
        at = hay.find(needle, at + 1)
    return first, last, count


def candidates_of(options: list[str] | None, story_norm: str) -> list[str]:
    if options and len(options) >= 2:
        return [_norm(o) for o in options]
    seen: dict[str, None] = {}
    for match in _PLACE.finditer(story_norm):
        seen.setdefault(match.group(1), None)
    return list(seen)


def heuristic_choices(cands: list[str], story_norm: str) -> dict[str, str | None]:
    stats = [(c, *_mentions(story_norm, c)) for c in cands]
    mentioned = [s for s in stats if s[3] > 0]
    if not mentioned:
        return {"first": None, "last": None, "most": None}
    first = min(mentioned, key=lambda s: s[1])[0]
    last = max(mentioned, key=lambda s: s[2])[0]
    most = max(mentioned, key=lambda s: (s[3], -s[1]))[0]
    return {"first": first, "last": last, "most": most}


def length_bin(n_words: int) -> str:
    for bound in LENGTH_BINS:
        if n_words < bound:
            return f"<{bound}"
    return f">={LENGTH_BINS[-1]}"


def item_features(items: pl.DataFrame) -> pl.DataFrame:
    """One row per item: candidates, heuristic picks, answer role and structural features."""
    story_cache: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for item in items.select("item_id", "context_id", "context", "options", "answer", "n_agents", "template_id").iter_rows(named=True):
        story = story_cache.get(item["context_id"])
        if story is None:
            story = story_cache[item["context_id"]] = _norm(item["context"])
        cands = candidates_of(item["options"], story)
        picks = heuristic_choices(cands, story)
        gold = _norm(item["answer"] or "")
        n_words = story.count(" ") + 1 if story else 0
        rows.append({
            "item_id": item["item_id"],
            "n_candidates": len(cands),
            "gold_in_candidates": gold in cands,
            "pick_first": picks["first"], "pick_last": picks["last"], "pick_most": picks["most"],
            "gold_norm": gold,
            "answer_is_first": picks["first"] is not None and picks["first"] == gold,
            "answer_is_last": picks["last"] is not None and picks["last"] == gold,
            "answer_is_most": picks["most"] is not None and picks["most"] == gold,
            "ends_where_started": picks["first"] is not None and picks["first"] == picks["last"],
            "communication": bool(_COMMUNICATION.search(story)),
            "story_length": length_bin(n_words),
            "n_agents_f": str(item["n_agents"]) if item["n_agents"] is not None else "unknown",
            "template": item["template_id"] or "none",
        })
    return pl.DataFrame(rows, schema={
        "item_id": pl.Utf8, "n_candidates": pl.Int64, "gold_in_candidates": pl.Boolean, "pick_first": pl.Utf8,
        "pick_last": pl.Utf8, "pick_most": pl.Utf8, "gold_norm": pl.Utf8, "answer_is_first": pl.Boolean,
        "answer_is_last": pl.Boolean, "answer_is_most": pl.Boolean, "ends_where_started": pl.Boolean,
        "communication": pl.Boolean, "story_length": pl.Utf8, "n_agents_f": pl.Utf8, "template": pl.Utf8,
    })


STRUCTURAL = ("answer_is_first", "answer_is_last", "answer_is_most", "ends_where_started", "communication",
              "story_length", "n_agents_f", "template", "n_candidates", "question_type")
