"""Sentences a story says twice. A verbatim repeat that the world does not repeat (mention padding
writing "Nora has always liked the yellow envelope." twice) is a tell a model can learn to skip.

A story's sentences are compared after normalization (`audits.ranks.sentences`, `audits.ranks.norm`).
Its repeats are the sentences beyond the first of each text. A record with a world trace says how many
events the world itself repeats (identical enter/exit/move/stay/tell events,
`trace_repeated_events`): a story is flagged when it repeats more sentences than that. A record
without a trace cannot say what happened twice (HiToM's chapters re-enter rooms), so only a
sentence repeated back to back is flagged there.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from tomforge.audits.ranks import norm, repeat_candidates, sentences

SCHEMA = {
    "selection": pl.Utf8,
    "context_id": pl.Utf8,
    "sentence": pl.Utf8,
    "times": pl.Int64,
    "back_to_back": pl.Boolean,
    "repeats": pl.Int64,
    "world_repeats": pl.Int64,
    "flagged": pl.Boolean,
}


def story_repeats(context: str) -> tuple[Counter[str], set[str]]:
    """Each normalized sentence said more than once (with its count) and those said twice in a row."""
    said = [norm(s) for s in sentences(context)]
    counts = Counter(s for s in said if s)
    adjacent = {a for a, b in zip(said, said[1:]) if a and a == b}
    return Counter({s: c for s, c in counts.items() if c > 1}), adjacent


def repeated_sentences(df: pl.DataFrame) -> pl.DataFrame:
    """`audit_repeated_sentences`: one row per (selection, story, repeated sentence)."""
    world = pl.col("trace_repeated_events") if "trace_repeated_events" in df.columns else pl.lit(None, pl.Int64)
    stories = (
        df.select("selection", "context_id", "context", world.alias("world"))
        .unique(["selection", "context_id"], keep="first")
        .sort("selection", "context_id")
    )
    # only stories where two sentences may be the same are read in Python (`ranks.repeat_candidates`)
    stories = stories.filter(pl.Series(repeat_candidates(stories["context"])))
    rows = []
    for selection, context_id, context, world_repeats in stories.iter_rows():
        counts, adjacent = story_repeats(context or "")
        if not counts:
            continue
        repeats = sum(c - 1 for c in counts.values())
        traced = world_repeats is not None
        for sentence, times in sorted(counts.items()):
            back = sentence in adjacent
            rows.append(
                {
                    "selection": selection,
                    "context_id": context_id,
                    "sentence": sentence,
                    "times": times,
                    "back_to_back": back,
                    "repeats": repeats,
                    "world_repeats": world_repeats,
                    "flagged": repeats > world_repeats if traced else back,
                }
            )
    return pl.DataFrame(rows, schema=SCHEMA)
