"""Per-item Python reference of the artifact audit's item features: the test oracle for the
vectorized `audits.features.item_features`, and the helpers the planted-shortcut tests use."""

from __future__ import annotations

from typing import Any

import polars as pl

from tomforge.audits import features, scan_match
from tomforge.audits.text import normalize


def norm(text: str) -> str:
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


def heuristic_choices(cands: list[str], story_norm: str) -> dict[str, str | None]:
    stats = [(c, *_mentions(story_norm, c)) for c in cands]
    mentioned = [s for s in stats if s[3] > 0]
    if not mentioned:
        return {"first": None, "last": None, "most": None}
    first = min(mentioned, key=lambda s: s[1])[0]
    last = max(mentioned, key=lambda s: s[2])[0]
    most = max(mentioned, key=lambda s: (s[3], -s[1]))[0]
    return {"first": first, "last": last, "most": most}


def asked_candidate(cands: list[str], question_norm: str) -> str | None:
    """The one candidate a yes/no question names (None when it names none or several)."""
    hay = f" {question_norm} "
    named = [c for c in dict.fromkeys(cands) if c and f" {c} " in hay]
    return named[0] if len(named) == 1 else None


def length_bin(n_words: int) -> str:
    for bound in features.LENGTH_BINS:
        if n_words < bound:
            return f"<{bound}"
    return f">={features.LENGTH_BINS[-1]}"


def reference_item_features(items: pl.DataFrame) -> pl.DataFrame:
    """`audits.features.item_features`, one Python loop iteration per item (the definition the
    vectorized version must reproduce exactly)."""
    story_cache: dict[str, tuple[str, bool]] = {}
    rows: list[dict[str, Any]] = []
    world = [c for c in ("meta_candidates", "meta_asked", "trace_first_container") if c in items.columns]
    for item in items.select(*features._INPUT, *world).iter_rows(named=True):
        cached = story_cache.get(item["context_id"])
        if cached is None:
            story_norm = norm(item["context"])
            cached = story_cache[item["context_id"]] = (story_norm, bool(features._COMMUNICATION.search(story_norm)))
        story, communication = cached
        yes_no = item["answer_format"] == "yes_no"
        listed = item.get("meta_candidates")
        if yes_no or not (item["options"] and len(item["options"]) >= 2):
            cands = [norm(c) for c in listed] if listed else features.places(item["context"] or "")
        else:
            cands = [norm(o) for o in item["options"]]
        picks = heuristic_choices(cands, story)
        initial = item.get("trace_first_container")
        picks["first_container"] = norm(initial) if initial else picks["first"]
        gold = norm(item["answer"] or "")
        if yes_no:
            asked = (
                norm(item["meta_asked"]) if item.get("meta_asked") else asked_candidate(cands, norm(item["question"]))
            )
            scorable = asked is not None and gold in ("yes", "no") and len(cands) >= 2
            named = {h: picks[h] is not None and picks[h] == asked for h in features.PICKS}
            hits = {h: named[h] == (gold == "yes") for h in features.PICKS}
            chance = 0.5
        else:
            asked = None
            scorable = gold in cands and len(cands) >= 2
            named = hits = {h: picks[h] is not None and picks[h] == gold for h in features.PICKS}
            chance = 1.0 / len(cands) if cands else None
        n_words = story.count(" ") + 1 if story else 0
        rows.append(
            {
                "item_id": item["item_id"],
                "n_candidates": len(cands),
                "gold_in_candidates": gold in cands,
                **{f"pick_{h}": picks[h] for h in features.PICKS},
                "gold_norm": gold,
                "asked_norm": asked,
                "scorable": scorable,
                "chance": chance,
                **{f"hit_{h}": hits[h] for h in features.PICKS},
                "answer_is_first": named["first"],
                "answer_is_last": named["last"],
                "answer_is_most": named["most"],
                "ends_where_started": picks["first"] is not None and picks["first"] == picks["last"],
                "communication": communication,
                "story_length": length_bin(n_words),
                "n_agents_f": str(item["n_agents"]) if item["n_agents"] is not None else "unknown",
                "template": item["template_id"] or "none",
            }
        )
    return pl.DataFrame(rows, schema=features._SCHEMA)


SCAN_FIGURES = (
    "coverage",
    "jaccard",
    "shared_ngrams",
    "p_value",
    "char_start",
    "char_end",
    "matched_sentences",
    "story_sentences",
    "sentence_coverage",
)


def strongest(found: dict[str, dict]) -> dict:
    """One pair's row from every way it matched: the strongest kind (`KINDS` order), with the
    figures of every kind found (a verbatim copy keeps its n-gram and sentence figures). Row by row: the
    reference that `audits/scan_match.py` `_strongest_rows` (the scan's, over whole frames) is tested against."""
    kind = min(found, key=scan_match.KINDS.index)
    row = {c: None for c in SCAN_FIGURES}
    for evidence in found.values():
        row.update({k: v for k, v in evidence.items() if v is not None and k != "kind"})
    if kind != "sentences":  # a character span only where the sentences are the evidence
        row["char_start"] = row["char_end"] = None
    return {**row, "kind": kind}
