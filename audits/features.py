"""Per-item structural features for the artifact audits, computed from the text (and, for
generated records, from the world facts `audits.store.read_selection` extracts from meta/trace).

Candidates are the options of a multiple-choice item; otherwise (free text, and the containers a
yes/no question could ask about) the record's own container list (`meta.candidates`) when it has
one, else the places the story names ("in/into/to/on/inside the X", read from the text as written: a
name is one or two words on one line, ending at punctuation, so it never takes the next sentence's
first word or a numbered story's next line number, ToMi's "green_bucket 4"). For each candidate we find its
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

import numpy as np
import polars as pl

from tomforge.audits.jit import fmix64_jit, njit
from tomforge.audits.text import (
    POSITION_MULT,
    fmix64,
    hash_normalized_words,
    hash_words,
    norm_words,
    tokens,
    use_jit,
    window_hashes,
)

_GAP = r"[^\S\r\n]+"  # spaces within one line: a place name never spans a line break (numbered stories)
_PLACE = re.compile(rf"\b(?:in|into|to|on|onto|inside|at){_GAP}the{_GAP}(\w+(?:(?:{_GAP}|-)\w+)?)")
_COMMUNICATION = re.compile(
    r"\b(?:told|tells|tell|said|says|say|whisper\w*|inform\w*|privately|publicly|"
    r"mention\w*|shar(?:ed|es)|lied|lies|announc\w*|asked|asks)\b"
)
LENGTH_BINS = (50, 100, 200, 400)


def places(context: str) -> list[str]:
    """The places a story names, normalized, in order of first mention. Matched on the text as
    written (lower case), not the normalized story, whose lost punctuation and line breaks let a name
    run into the next sentence (Python's regex: the reference for non-ASCII stories)."""
    seen: dict[str, None] = {}
    for match in _PLACE.finditer(context.lower()):
        seen.setdefault(" ".join(tokens(match.group(1))), None)
    return list(seen)


PICKS = ("first", "last", "most", "first_container")
_INPUT = (
    "item_id",
    "context_id",
    "context",
    "options",
    "answer",
    "answer_format",
    "question",
    "n_agents",
    "template_id",
)
_SCHEMA = {
    "item_id": pl.Utf8,
    "n_candidates": pl.Int64,
    "gold_in_candidates": pl.Boolean,
    "pick_first": pl.Utf8,
    "pick_last": pl.Utf8,
    "pick_most": pl.Utf8,
    "pick_first_container": pl.Utf8,
    "gold_norm": pl.Utf8,
    "asked_norm": pl.Utf8,
    "scorable": pl.Boolean,
    "chance": pl.Float64,
    "hit_first": pl.Boolean,
    "hit_last": pl.Boolean,
    "hit_most": pl.Boolean,
    "hit_first_container": pl.Boolean,
    "answer_is_first": pl.Boolean,
    "answer_is_last": pl.Boolean,
    "answer_is_most": pl.Boolean,
    "ends_where_started": pl.Boolean,
    "communication": pl.Boolean,
    "story_length": pl.Utf8,
    "n_agents_f": pl.Utf8,
    "template": pl.Utf8,
}


def context_stories(items: pl.DataFrame) -> pl.DataFrame:
    """One row per context (first-seen order): `context_id` and its `norm_words` story. Computed once
    for the artifacts phase, whose item features and feature-label cues both read the stories."""
    ctx = items.select("context_id", "context").unique("context_id", keep="first", maintain_order=True)
    return ctx.select("context_id", norm_words(ctx["context"]).alias("story"))


def stories_of(ctx: pl.DataFrame, stories: pl.DataFrame | None) -> pl.Series:
    """The normalized story of each row of `ctx` (one row per context): taken from `stories`
    (`context_stories`) when it lists the same contexts in the same order, else normalized here."""
    if stories is not None and stories["context_id"].equals(ctx["context_id"]):
        return stories["story"]
    return norm_words(ctx["context"])


def _context_table(items: pl.DataFrame, stories: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per context: normalized story, places it names, communication, word count. Polars
    regexes on ASCII texts; the Python reference (`places`, `_COMMUNICATION`) on the others (ASCII as
    written, not once normalized: NFKC turns "ﬁ" into "fi", which polars' byte rules would not)."""
    ctx = items.select("context_id", "context").unique("context_id", keep="first", maintain_order=True)
    story = stories_of(ctx, stories)
    ctx = (
        ctx.with_columns(story.alias("story"))
        .with_row_index("_ctx")
        .with_columns(
            (pl.col("context").fill_null("").str.len_bytes() == pl.col("context").fill_null("").str.len_chars()).alias(
                "_ascii"
            ),
            pl.when(pl.col("story") == "")
            .then(0)
            .otherwise(pl.col("story").str.count_matches(" ", literal=True) + 1)
            .cast(pl.Int64)
            .alias("n_words"),
        )
    )
    ctx = ctx.with_columns(
        pl.col("context")
        .str.to_lowercase()
        .str.extract_all(_PLACE.pattern)  # whole matches: "in the X"
        .list.eval(pl.element().str.replace(rf"^[a-z]+{_GAP}the{_GAP}", "").str.replace_all(r"[^a-z0-9_]+", " "))
        .list.unique(maintain_order=True)
        .alias("places"),  # an ASCII name normalized as `norm_words` does
        pl.col("story").str.contains(_COMMUNICATION.pattern).alias("communication"),
    )
    other = ctx.filter(~pl.col("_ascii")).select("_ctx", "context", "story")
    if other.height:
        normalized = other["story"].to_list()
        python = pl.DataFrame(
            {
                "_ctx": other["_ctx"],
                "_places": [places(t) for t in other["context"].to_list()],
                "_communication": [bool(_COMMUNICATION.search(t)) for t in normalized],
            },
            schema={"_ctx": pl.UInt32, "_places": pl.List(pl.Utf8), "_communication": pl.Boolean},
        )
        ctx = ctx.join(python, on="_ctx", how="left", maintain_order="left").with_columns(
            pl.when(pl.col("_ascii")).then(pl.col("places")).otherwise(pl.col("_places")).alias("places"),
            pl.when(pl.col("_ascii"))
            .then(pl.col("communication"))
            .otherwise(pl.col("_communication"))
            .alias("communication"),
        )
    return ctx.select("context_id", "_ctx", "story", "n_words", "places", "communication")


def _gram_hashes(
    words: np.ndarray, offsets: np.ndarray, m: int, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every m-word window inside a document whose hash is in `wanted` (sorted, unique): (doc,
    start word within the doc, hash)."""
    span = len(words) - m + 1
    if span <= 0 or not len(wanted):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, dtype=np.uint64)
    if use_jit():  # one loop, no array of every window's hash
        return window_hits_jit(words, offsets, m, POSITION_MULT, wanted)
    hashes = window_hashes(words, m)
    slot = np.minimum(np.searchsorted(wanted, hashes), len(wanted) - 1)  # membership without sorting the big side
    hit = np.nonzero(wanted[slot] == hashes)[0]
    doc = np.searchsorted(offsets, hit, side="right") - 1  # the document holding each window's first word
    start = hit - offsets[doc]
    inside = start + m <= offsets[doc + 1] - offsets[doc]
    return doc[inside], start[inside], hashes[hit[inside]]


def mention_stats(pairs: pl.DataFrame, stories: pl.Series) -> pl.DataFrame:
    """(first, last, count) of each (`_ctx`, `cand`) pair's whole-word occurrences in the normalized
    story `stories[_ctx]`, first/last as word positions (ordered like the character offsets of
    `_mentions`). Phrases are matched by 64-bit hashes of word windows (`audits.text`'s n-gram
    hash), one numpy pass per phrase length, instead of a Python search per item and candidate."""
    words, offsets = hash_normalized_words(stories)
    cands = pairs["cand"].unique().sort()
    c_words, c_offsets = hash_words(cands.to_list())
    c_len = np.diff(c_offsets)
    c_hash = np.zeros(len(cands), dtype=np.uint64)
    for m in np.unique(c_len[c_len > 0]):
        sel = np.nonzero(c_len == m)[0]
        total = np.zeros(len(sel), dtype=np.uint64)
        for j in range(int(m)):
            total += c_words[c_offsets[sel] + j] * POSITION_MULT[j]
        c_hash[sel] = fmix64(total)
    keyed = pairs.join(pl.DataFrame({"cand": cands, "_len": c_len, "_hash": c_hash}), on="cand")
    found = []
    for m in np.unique(c_len[c_len > 0]):
        wanted = keyed.filter(pl.col("_len") == int(m))
        doc, start, hashes = _gram_hashes(words, offsets, int(m), np.unique(wanted["_hash"].to_numpy()))
        hits = pl.DataFrame({"_ctx": doc.astype(np.uint32), "_hash": hashes, "pos": start})
        found.append(
            wanted.join(hits, on=["_ctx", "_hash"])
            .group_by("_ctx", "cand")
            .agg(
                pl.col("pos").min().alias("first"),
                pl.col("pos").max().alias("last"),
                pl.len().cast(pl.Int64).alias("count"),
            )
        )
    schema = pl.Schema({"_ctx": pl.UInt32, "cand": pl.Utf8, "first": pl.Int64, "last": pl.Int64, "count": pl.Int64})
    return pl.concat([f.cast(schema) for f in found]) if found else pl.DataFrame(schema=schema)


def item_features(items: pl.DataFrame, stories: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per item (in input order): candidates, heuristic picks, whether each is right, answer
    role and structural features; whole columns, no Python per item (`stories`: `context_stories`)."""
    world = {"meta_candidates": pl.List(pl.Utf8), "meta_asked": pl.Utf8(), "trace_first_container": pl.Utf8()}
    base = items.select(
        *_INPUT, *[pl.col(c) if c in items.columns else pl.lit(None, t).alias(c) for c, t in world.items()]
    )
    ctx = _context_table(base, stories)
    base = base.with_row_index("_row").join(
        ctx.select("context_id", "_ctx"), on="context_id", how="left", maintain_order="left"
    )
    yes_no = pl.col("answer_format") == "yes_no"
    cands = _candidates(base, ctx, yes_no)
    base = base.with_columns(
        norm_words(base["answer"]).alias("gold_norm"),
        norm_words(base["meta_asked"]).alias("_asked"),
        norm_words(base["trace_first_container"]).alias("_initial"),
    )
    recorded_asked = pl.col("meta_asked").fill_null("") != ""
    out = (
        base.join(_picks(cands), on="_row", how="left")
        .join(_gold_in_candidates(cands, base), on="_row", how="left")
        .join(_asked_guess(base.filter(yes_no & ~recorded_asked), cands), on="_row", how="left")
        .join(ctx.select("_ctx", "communication", "n_words"), on="_ctx", how="left")
        .sort("_row")
    )
    n = pl.col("n_candidates").fill_null(0)
    asked = pl.when(~yes_no).then(None).when(recorded_asked).then(pl.col("_asked")).otherwise(pl.col("_guess"))
    initial = pl.when(pl.col("trace_first_container").fill_null("") != "").then(pl.col("_initial"))
    out = out.with_columns(
        n.alias("n_candidates"),
        pl.col("gold_in_candidates").fill_null(False),
        initial.otherwise(pl.col("pick_first")).alias("pick_first_container"),
        asked.alias("asked_norm"),
    )
    return _with_scores(out, yes_no).select([pl.col(c).cast(t) for c, t in _SCHEMA.items()])


def _candidates(base: pl.DataFrame, ctx: pl.DataFrame, yes_no: pl.Expr) -> pl.DataFrame:
    """Each item's candidates (`_row`, `_ctx`, normalized `cand`, its position `_cpos`) with their mentions in the
    story: the options of a multiple-choice item, else the generator's listed candidates, else the story's places."""
    use_options = ~yes_no & (pl.col("options").list.len() >= 2).fill_null(False)
    use_listed = ~use_options & (pl.col("meta_candidates").list.len() > 0).fill_null(False)
    listed = base.filter(use_options | use_listed).select(
        "_row", "_ctx", pl.when(use_options).then(pl.col("options")).otherwise(pl.col("meta_candidates")).alias("cand")
    )
    listed = listed.with_columns(pl.int_ranges(0, pl.col("cand").list.len()).alias("_cpos")).explode("cand", "_cpos")
    listed = listed.with_columns(norm_words(listed["cand"]).alias("cand"))
    placed = (
        base.filter(~(use_options | use_listed)).select("_row", "_ctx").join(ctx.select("_ctx", "places"), on="_ctx")
    )
    placed = placed.rename({"places": "cand"}).with_columns(pl.int_ranges(0, pl.col("cand").list.len()).alias("_cpos"))
    placed = placed.explode("cand", "_cpos").drop_nulls("cand")
    cands = pl.concat(
        [
            listed.select("_row", "_ctx", "cand", pl.col("_cpos").cast(pl.Int64)),
            placed.select("_row", "_ctx", "cand", pl.col("_cpos").cast(pl.Int64)),
        ]
    )
    stats = mention_stats(cands.select("_ctx", "cand").unique(), ctx["story"])
    return cands.join(stats, on=["_ctx", "cand"], how="left")


def _picks(cands: pl.DataFrame) -> pl.DataFrame:
    """Per item, the candidate each heuristic picks among those the story mentions: first mentioned, last
    mentioned, most mentioned (ties to the earlier mention, then the earlier position)."""
    seen = cands.filter(pl.col("count") > 0)
    return seen.group_by("_row").agg(
        pl.col("cand").sort_by(["first", "_cpos"]).first().alias("pick_first"),
        pl.col("cand").sort_by(["last", "_cpos"], descending=[True, False]).first().alias("pick_last"),
        pl.col("cand").sort_by(["count", "first", "_cpos"], descending=[True, False, False]).first().alias("pick_most"),
    )


def _gold_in_candidates(cands: pl.DataFrame, base: pl.DataFrame) -> pl.DataFrame:
    """Per item with candidates: how many, and whether the normalized gold answer is one of them."""
    return (
        cands.join(base.select("_row", "gold_norm"), on="_row")
        .group_by("_row")
        .agg(
            pl.len().cast(pl.Int64).alias("n_candidates"),
            (pl.col("cand") == pl.col("gold_norm")).any().alias("gold_in_candidates"),
        )
    )


def _asked_guess(unrecorded: pl.DataFrame, cands: pl.DataFrame) -> pl.DataFrame:
    """`_guess` for yes/no questions without a recorded asked container: the one candidate the question's text
    names, when exactly one does."""
    guess = unrecorded.select("_row", "question")
    guess = guess.with_columns((" " + norm_words(guess["question"]) + " ").alias("_q")).join(cands, on="_row")
    guess = guess.filter((pl.col("cand") != "") & pl.col("_q").str.contains(" " + pl.col("cand") + " ", literal=True))
    return (
        guess.group_by("_row")
        .agg(pl.col("cand").unique())
        .filter(pl.col("cand").list.len() == 1)
        .select("_row", pl.col("cand").list.first().alias("_guess"))
    )


def _with_scores(out: pl.DataFrame, yes_no: pl.Expr) -> pl.DataFrame:
    """Whether each item can be scored, its chance, each heuristic's hit and answer role, and the structural
    features (story length bin, agents, template)."""
    n = pl.col("n_candidates")
    target = pl.when(yes_no).then(pl.col("asked_norm")).otherwise(pl.col("gold_norm"))
    named = {h: (pl.col(f"pick_{h}").is_not_null() & (pl.col(f"pick_{h}") == target)).fill_null(False) for h in PICKS}
    says_yes = pl.col("gold_norm") == "yes"
    bins = pl.lit(f">={LENGTH_BINS[-1]}")
    for bound in reversed(LENGTH_BINS):
        bins = pl.when(pl.col("n_words") < bound).then(pl.lit(f"<{bound}")).otherwise(bins)
    return out.with_columns(
        pl.when(yes_no)
        .then(pl.col("asked_norm").is_not_null() & pl.col("gold_norm").is_in(["yes", "no"]) & (n >= 2))
        .otherwise(pl.col("gold_in_candidates") & (n >= 2))
        .alias("scorable"),
        pl.when(yes_no).then(pl.lit(0.5)).when(n > 0).then(1.0 / n).otherwise(None).alias("chance"),
        *[pl.when(yes_no).then(named[h] == says_yes).otherwise(named[h]).alias(f"hit_{h}") for h in PICKS],
        *[named[h].alias(f"answer_is_{h}") for h in ("first", "last", "most")],
        (pl.col("pick_first").is_not_null() & (pl.col("pick_first") == pl.col("pick_last")))
        .fill_null(False)
        .alias("ends_where_started"),
        bins.alias("story_length"),
        pl.col("n_agents").cast(pl.Utf8).fill_null("unknown").alias("n_agents_f"),
        pl.when(pl.col("template_id").fill_null("") == "")
        .then(pl.lit("none"))
        .otherwise(pl.col("template_id"))
        .alias("template"),
    )


def records_frame(records: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """Unified records (dicts) as the columns `audits.store.read_selection` reads from the warehouse,
    world columns included (extracted by the same SQL), so in-memory records can be audited too."""
    import duckdb
    import orjson

    from tomforge.audits.store import ITEM_COLUMNS, frame_of, world_selection_sql

    dtypes = {
        "belief_order": pl.Int64(),
        "answer_index": pl.Int64(),
        "n_agents": pl.Int64(),
        "is_false_belief": pl.Boolean(),
        "options": pl.List(pl.Utf8),
    }
    rows = [
        {
            **{c: r.get(c) for c in ITEM_COLUMNS},
            "meta_json": orjson.dumps(r.get("meta") or {}).decode(),
            "trace_json": orjson.dumps(r["trace"]).decode() if r.get("trace") is not None else None,
        }
        for r in records
    ]
    frame = pl.DataFrame(
        rows, schema={c: dtypes.get(c, pl.Utf8) for c in ITEM_COLUMNS} | {"meta_json": pl.Utf8, "trace_json": pl.Utf8}
    )
    with duckdb.connect() as con:
        con.register("records", frame.to_arrow())
        sql = world_selection_sql(
            "(SELECT *, meta_json::JSON AS meta, trace_json::JSON AS trace FROM records)",
            "true",
            ", ".join(ITEM_COLUMNS),
        )
        return frame_of(con.sql(sql).to_arrow_table())


STRUCTURAL = (
    "answer_is_first",
    "answer_is_last",
    "answer_is_most",
    "ends_where_started",
    "communication",
    "story_length",
    "n_agents_f",
    "template",
    "n_candidates",
    "question_type",
)


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
@njit(cache=True, nogil=True)
def window_hits_jit(words, offsets, m, mults, wanted):
    """Every m-word window inside a document whose n-gram hash (as `ngram_hashes`) is in the
    sorted array `wanted`: (doc, start word within the doc, hash), in document and word order. A
    bitset of the wanted hashes' top 20 bits rejects almost every window before the binary search."""
    seen = np.zeros(1 << 14, dtype=np.uint64)  # 2^20 bits: 128 KiB, cache-resident
    for h in wanted:
        top = h >> np.uint64(44)
        seen[top >> np.uint64(6)] |= np.uint64(1) << (top & np.uint64(63))
    cap = 1024
    docs = np.empty(cap, dtype=np.int64)
    starts = np.empty(cap, dtype=np.int64)
    hashes = np.empty(cap, dtype=np.uint64)
    n = 0
    for d in range(len(offsets) - 1):
        lo, hi = offsets[d], offsets[d + 1]
        for j in range(lo, hi - m + 1):
            total = np.uint64(0)
            for i in range(m):
                total += words[j + i] * mults[i]
            h = fmix64_jit(total)
            top = h >> np.uint64(44)
            if (seen[top >> np.uint64(6)] >> (top & np.uint64(63))) & np.uint64(1) == 0:
                continue
            k = np.searchsorted(wanted, h)
            if k < len(wanted) and wanted[k] == h:
                if n == cap:
                    cap *= 2
                    docs, starts, hashes = _grown(docs, cap), _grown(starts, cap), _grown(hashes, cap)
                docs[n], starts[n], hashes[n] = d, j - lo, h
                n += 1
    return docs[:n], starts[:n], hashes[:n]


@njit(cache=True, nogil=True)
def _grown(a, cap):
    out = np.empty(cap, dtype=a.dtype)
    out[: len(a)] = a
    return out
