"""Per-item structural features for the artifact audits, computed from the text (and, for
generated records, from the world facts `audits.store.read_selection` extracts from meta/trace).

Candidates are the options of a multiple-choice item; otherwise (free text, and the containers a
yes/no question could ask about) the record's own container list (`meta.candidates`) when it has
one, else the places the story names ("in/into/to/on/inside the X"). For each candidate we find its
first and last mention and its mention count in the normalized story; the heuristic rules and the
"answer role" features come from these:
- `first` / `last` / `most`: the candidate mentioned first / last / most often (ties: listed first);
- `first_container`: the asked object's first container, from the world trace when the record has
  one, else the first-mentioned candidate (in HiToM/ToMi-style text the object's initial placement
  is the first place named).
A heuristic scores on multiple choice and free text when its pick is the gold answer, and on yes/no
when it answers "yes" exactly for its own pick (the asked container: `meta.asked_container`, else
the one candidate the question names). `chance` is what uniformly random options score.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

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
    return places(story_norm)


def places(story_norm: str) -> list[str]:
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


def asked_candidate(cands: list[str], question_norm: str) -> str | None:
    """The one candidate a yes/no question names (None when it names none or several)."""
    hay = f" {question_norm} "
    named = [c for c in dict.fromkeys(cands) if c and f" {c} " in hay]
    return named[0] if len(named) == 1 else None


def length_bin(n_words: int) -> str:
    for bound in LENGTH_BINS:
        if n_words < bound:
            return f"<{bound}"
    return f">={LENGTH_BINS[-1]}"


PICKS = ("first", "last", "most", "first_container")
_INPUT = ("item_id", "context_id", "context", "options", "answer", "answer_format", "question", "n_agents", "template_id")
_SCHEMA = {
    "item_id": pl.Utf8, "n_candidates": pl.Int64, "gold_in_candidates": pl.Boolean, "pick_first": pl.Utf8,
    "pick_last": pl.Utf8, "pick_most": pl.Utf8, "pick_first_container": pl.Utf8, "gold_norm": pl.Utf8,
    "asked_norm": pl.Utf8, "scorable": pl.Boolean, "chance": pl.Float64, "hit_first": pl.Boolean,
    "hit_last": pl.Boolean, "hit_most": pl.Boolean, "hit_first_container": pl.Boolean, "answer_is_first": pl.Boolean,
    "answer_is_last": pl.Boolean, "answer_is_most": pl.Boolean, "ends_where_started": pl.Boolean,
    "communication": pl.Boolean, "story_length": pl.Utf8, "n_agents_f": pl.Utf8, "template": pl.Utf8,
}


def item_features(items: pl.DataFrame) -> pl.DataFrame:
    """One row per item: candidates, heuristic picks and whether each is right, answer role and
    structural features."""
    story_cache: dict[str, tuple[str, bool]] = {}
    rows: list[dict[str, Any]] = []
    world = [c for c in ("meta_candidates", "meta_asked", "trace_first_container") if c in items.columns]
    for item in items.select(*_INPUT, *world).iter_rows(named=True):
        cached = story_cache.get(item["context_id"])
        if cached is None:
            story_norm = _norm(item["context"])
            cached = story_cache[item["context_id"]] = (story_norm, bool(_COMMUNICATION.search(story_norm)))
        story, communication = cached
        yes_no = item["answer_format"] == "yes_no"
        listed = item.get("meta_candidates")
        if yes_no or not (item["options"] and len(item["options"]) >= 2):
            cands = [_norm(c) for c in listed] if listed else places(story)
        else:
            cands = [_norm(o) for o in item["options"]]
        picks = heuristic_choices(cands, story)
        initial = item.get("trace_first_container")
        picks["first_container"] = _norm(initial) if initial else picks["first"]
        gold = _norm(item["answer"] or "")
        if yes_no:
            asked = _norm(item["meta_asked"]) if item.get("meta_asked") else asked_candidate(cands, _norm(item["question"]))
            scorable = asked is not None and gold in ("yes", "no") and len(cands) >= 2
            named = {h: picks[h] is not None and picks[h] == asked for h in PICKS}
            hits = {h: named[h] == (gold == "yes") for h in PICKS}
            chance = 0.5
        else:
            asked = None
            scorable = gold in cands and len(cands) >= 2
            named = hits = {h: picks[h] is not None and picks[h] == gold for h in PICKS}
            chance = 1.0 / len(cands) if cands else None
        n_words = story.count(" ") + 1 if story else 0
        rows.append({
            "item_id": item["item_id"],
            "n_candidates": len(cands),
            "gold_in_candidates": gold in cands,
            **{f"pick_{h}": picks[h] for h in PICKS},
            "gold_norm": gold, "asked_norm": asked, "scorable": scorable, "chance": chance,
            **{f"hit_{h}": hits[h] for h in PICKS},
            "answer_is_first": named["first"], "answer_is_last": named["last"], "answer_is_most": named["most"],
            "ends_where_started": picks["first"] is not None and picks["first"] == picks["last"],
            "communication": communication,
            "story_length": length_bin(n_words),
            "n_agents_f": str(item["n_agents"]) if item["n_agents"] is not None else "unknown",
            "template": item["template_id"] or "none",
        })
    return pl.DataFrame(rows, schema=_SCHEMA)


def records_frame(records: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """Unified records (dicts) as the columns `audits.store.read_selection` reads from the warehouse,
    world columns included (extracted by the same SQL), so in-memory records can be audited too."""
    import duckdb
    import orjson

    from audits.store import ITEM_COLUMNS, WORLD_COLUMNS_SQL

    dtypes = {"belief_order": pl.Int64, "answer_index": pl.Int64, "n_agents": pl.Int64, "is_false_belief": pl.Boolean,
              "options": pl.List(pl.Utf8)}
    rows = [{**{c: r.get(c) for c in ITEM_COLUMNS}, "meta_json": orjson.dumps(r.get("meta") or {}).decode(),
             "trace_json": orjson.dumps(r["trace"]).decode() if r.get("trace") is not None else None} for r in records]
    frame = pl.DataFrame(rows, schema={c: dtypes.get(c, pl.Utf8) for c in ITEM_COLUMNS} | {"meta_json": pl.Utf8, "trace_json": pl.Utf8})
    with duckdb.connect() as con:
        con.register("records", frame.to_arrow())
        sql = (f"SELECT {', '.join(ITEM_COLUMNS)}, {WORLD_COLUMNS_SQL} FROM "
               "(SELECT *, meta_json::JSON AS meta, trace_json::JSON AS trace FROM records) ORDER BY item_id")
        return pl.from_arrow(con.sql(sql).to_arrow_table())


STRUCTURAL = ("answer_is_first", "answer_is_last", "answer_is_most", "ends_where_started", "communication",
              "story_length", "n_agents_f", "template", "n_candidates", "question_type")
