"""The gold's rank among the options under every ranking a story's surface offers, against uniform.

The heuristic rules (`audits.artifacts`) test three picks: the first-, last- and most-mentioned
option. A generator can balance those three and still leave the rest of the ranking to game ("answer
the second most mentioned option"). This check ranks every option of an item by five orderings a
model can read off the text, and tests where the gold falls:

- `mentions`: whole-word mentions in the story (more first);
- `first_mention`: word position of the first mention (earlier first);
- `last_mention`: word position of the last mention (later first);
- `events`: sentences that name the option (more first): what a sentence-level reader counts;
- `last_move`: the last sentence that moves something into it ("moved", "put", "placed", ...; later
  first): "the last place something was put". Any object counts, as a surface reader sees it.

Options that share a value are tied; never-mentioned options tie at the bottom. Ties are handled
exactly: an item whose gold is tied with t options over positions r..r+t-1 adds 1/t to each of them
(the average of breaking the tie at random), so under the null (the gold is a uniformly random one
of the k options, whatever the ranking) each position's expected share is exactly 1/k. The test is
a chi-square on the k positions with the null covariance worked out from each item's tie pattern
(`null_covariance`: block-diagonal per tie group), a Moore-Penrose quadratic form with as many
degrees of freedom as the covariance has rank; Bonferroni over every (side, order, k, ranking).

Items enter when their gold is one of at least two candidates: the options of a multiple-choice
item, else the record's container list (`meta.candidates`). Yes/no items are left to the heuristic
rules (their gold is not an option). Strata are the belief orders (memory questions apart) and the
number of candidates, plus all orders pooled ("all") where a side has several.

List questions ("Who knows where the apple is?") have several golds among their candidates (the
options), so they are grouped apart (stratum "list", never pooled into "all"). The null is that the
gold list is a uniformly random g-subset of the k candidates: each position then expects g/k golds,
and the sum of the golds' spreads has covariance g(k-g)/(k-1) times one random candidate's
(`null_covariance`: sampling g of k without replacement), ties included. The share reported is the
golds' share of each position (1/k under the null); items where nobody or everybody knows carry no
information and are left out. A list answer is read as the names it joins with ", ".
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import polars as pl
from scipy import stats

from tomforge.audits.config import AuditParams
from tomforge.audits.jit import fmix64_jit, njit
from tomforge.audits.text import _utf8_buffers, use_jit

RANKINGS = ("mentions", "first_mention", "last_mention", "events", "last_move")
RANKING_LABELS = {
    "mentions": "mention count",
    "first_mention": "first mention",
    "last_mention": "last mention",
    "events": "sentences naming it",
    "last_move": "last move into it",
}
_MOVE = re.compile(
    r"\b(?:mov(?:e|es|ed|ing)|put|puts|putting|plac(?:e|es|ed|ing)|relocat(?:e|es|ed|ing)|"
    r"transferr?(?:s|ed|ing)?|stor(?:e|es|ed|ing)|shift(?:s|ed|ing)?|drop(?:s|ped|ping)?|"
    r"tuck(?:s|ed|ing)?|stash(?:es|ed|ing)?|slipp?(?:s|ed|ing)?)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_NUMBER = re.compile(r"^\s*\d+\s+")
_NON_WORD = re.compile(r"[^\w]+")
SCHEMA = {
    "selection": pl.Utf8,
    "belief_order": pl.Utf8,
    "ranking": pl.Utf8,
    "k": pl.Int64,
    "n": pl.Int64,
    "position": pl.Int64,
    "share": pl.Float64,
    "expected": pl.Float64,
    "chi2": pl.Float64,
    "df": pl.Int64,
    "p_value": pl.Float64,
}


def norm(text: str) -> str:
    """Lower case, runs of non-word characters as one space (underscores kept: HiToM's `blue_box`)."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def sentences(context: str) -> list[str]:
    """The story's sentences as written: lines (numbered stories lose their number; a chat turn's
    `Name:` stays), each line split after ., ! or ?."""
    out: list[str] = []
    for line in context.splitlines():
        line = _LINE_NUMBER.sub("", line).strip()
        out.extend(s for s in _SENTENCE_END.split(line) if s.strip())
    return out


def ranking_values(context: str, candidates: Sequence[str]) -> dict[str, list[float]]:
    """Per ranking, each (normalized) candidate's value, larger = ranked higher."""
    words: list[str] = []
    sentence_of: list[int] = []
    moves: list[bool] = []
    for s, sentence in enumerate(sentences(context)):
        tokens = norm(sentence).split()
        words.extend(tokens)
        sentence_of.extend([s] * len(tokens))
        moves.append(bool(_MOVE.search(sentence.lower())))
    out: dict[str, list[float]] = {name: [] for name in RANKINGS}
    for cand in candidates:
        phrase = cand.split()
        m = len(phrase)
        hits = [i for i in range(len(words) - m + 1) if m and words[i : i + m] == phrase] if m else []
        in_sentences = sorted({sentence_of[i] for i in hits})
        moved = [s for s in in_sentences if moves[s]]
        out["mentions"].append(float(len(hits)))
        out["first_mention"].append(-float(hits[0]) if hits else -float("inf"))
        out["last_mention"].append(float(hits[-1]) if hits else -1.0)
        out["events"].append(float(len(in_sentences)))
        out["last_move"].append(float(moved[-1]) if moved else -1.0)
    return out


def tie_pattern(values: Sequence[float], gold: int) -> tuple[tuple[int, ...], int]:
    """The sizes of the tie groups from the top (the ranking's pattern) and the index of the gold's group."""
    distinct = sorted(set(values), reverse=True)
    sizes = Counter(values)
    return tuple(sizes[v] for v in distinct), distinct.index(values[gold])


def spread(pattern: tuple[int, ...], group: int) -> np.ndarray:
    """The positions a member of tie group `group` holds, 1/t each (the tie broken at random, averaged)."""
    k = sum(pattern)
    start = sum(pattern[:group])
    out = np.zeros(k)
    out[start : start + pattern[group]] = 1.0 / pattern[group]
    return out


def null_covariance(pattern: tuple[int, ...]) -> np.ndarray:
    """Covariance of one item's `spread` when the gold is a uniformly random candidate:
    (1/k) sum over groups of (1/t) J_t on the group's block, minus (1/k^2) J."""
    k = sum(pattern)
    cov = np.full((k, k), -1.0 / k**2)
    start = 0
    for t in pattern:
        cov[start : start + t, start : start + t] += 1.0 / (k * t)
        start += t
    return cov


def uniformity_test(
    patterns: Iterable[tuple[tuple[int, ...], int | tuple[int, ...]]],
) -> tuple[int, np.ndarray, float, int, float]:
    """(items, observed share per position, chi-square, degrees of freedom, p-value) of the golds'
    positions against uniform, items given as (tie pattern, gold's group) or, for a list answer,
    (tie pattern, the groups of its g golds): a random g-subset of k expects g/k golds per position,
    with covariance g(k-g)/(k-1) times `null_covariance`. The share is of all the golds counted."""
    return counted_uniformity_test((pattern, group, 1) for pattern, group in patterns)


def counted_uniformity_test(
    patterns: Iterable[tuple[tuple[int, ...], int | tuple[int, ...], int]],
) -> tuple[int, np.ndarray, float, int, float]:
    """`uniformity_test` of items given once per distinct (tie pattern, gold group(s)) with their
    count, in the order they would come one by one: each item's spread is added to the observed
    shares one item at a time (`_add_repeated`), so the floats are those of the item-by-item sum."""
    observed: np.ndarray | None = None
    by_pattern: Counter[tuple[tuple[int, ...], int]] = Counter()
    n = golds = 0
    for pattern, group, count in patterns:
        if count <= 0:
            continue
        groups = (group,) if isinstance(group, int) else group
        v = sum((spread(pattern, g) for g in groups), np.zeros(sum(pattern)))
        if observed is None:
            observed = v.copy()
            _add_repeated(observed, v, count - 1)
        else:
            _add_repeated(observed, v, count)
        by_pattern[pattern, len(groups)] += count
        n += count
        golds += len(groups) * count
    if observed is None or not golds:
        return n, np.zeros(0 if observed is None else len(observed)), 0.0, 0, 1.0
    k = len(observed)
    cov = sum(
        (
            count * g * (k - g) / (k - 1) * null_covariance(pattern)
            for (pattern, g), count in sorted(by_pattern.items())
        ),
        np.zeros((k, k)),
    )
    diff = observed - golds / k
    df = int(np.linalg.matrix_rank(cov, tol=1e-9))
    chi2 = float(diff @ np.linalg.pinv(cov, rcond=1e-9, hermitian=True) @ diff) if df else 0.0
    p_value = float(stats.chi2.sf(chi2, df)) if df else 1.0
    return n, observed / golds, chi2, df, p_value


def _add_repeated(observed: np.ndarray, v: np.ndarray, count: int) -> None:
    """observed += v, `count` times one after the other (not count * v: the floats of adding one
    item at a time). Positions where v is 0 are left as they are (adding 0.0 changes nothing)."""
    if count <= 0:
        return
    if use_jit():
        _add_repeated_jit(observed, np.ascontiguousarray(v, dtype=np.float64), count)
        return
    for j in np.flatnonzero(v):
        x, step = float(observed[j]), float(v[j])
        for _ in range(count):
            x += step
        observed[j] = x


@njit(cache=True, nogil=True)
def _add_repeated_jit(observed, v, count):
    for j in range(len(v)):
        step = v[j]
        if step != 0.0:
            x = observed[j]
            for _ in range(count):
                x += step
            observed[j] = x


LIST_STRATUM = "list"  # list answers: their own groups, never pooled with single-gold items
PATTERN_KEYS = ("selection", "belief_order", "ranking", "k", "pattern", "group")


def _stratum(question_type: str | None, belief_order: int | None, answer_format: str | None = None) -> str:
    if answer_format == "list":
        return LIST_STRATUM
    return "memory" if question_type == "memory" else "none" if belief_order is None else str(belief_order)


def _golds(row: dict, cands: list[str]) -> tuple[int, ...] | None:
    """Indices of the gold candidates: the one answer, or a list answer's names (joined with ", ");
    None when a gold is not a candidate, or a list names nobody or everybody (no information)."""
    if row.get("answer_format") != "list":
        gold = norm(row.get("answer") or "")
        return (cands.index(gold),) if gold in cands else None
    names = {norm(name) for name in (row.get("answer") or "").split(", ") if name.strip()}
    if not names or not names <= set(cands) or len(names) == len(cands):
        return None
    return tuple(sorted(cands.index(name) for name in names))


def _candidates(row: dict) -> list[str] | None:
    options = row.get("options") or []
    if row.get("answer_format") == "yes_no":
        return None
    listed = options if len(options) >= 2 else (row.get("meta_candidates") or [])
    cands = [norm(c) for c in listed]
    return cands if len(cands) >= 2 and len(set(cands)) == len(cands) else None


def item_patterns(df: pl.DataFrame) -> pl.DataFrame:
    """One row per rankable item and ranking: selection, stratum, ranking, k, tie pattern (as text) and the
    gold's group (a list answer: its golds' groups, as text)."""
    rows = []
    cache: dict[tuple[str, tuple[str, ...]], dict[str, list[float]]] = {}
    cols = [
        c
        for c in (
            "selection",
            "context_id",
            "context",
            "options",
            "meta_candidates",
            "answer",
            "answer_format",
            "question_type",
            "belief_order",
        )
        if c in df.columns
    ]
    for row in df.select(cols).iter_rows(named=True):
        cands = _candidates(row)
        golds = None if cands is None else _golds(row, cands)
        if cands is None or golds is None:
            continue
        key = (row["context_id"], tuple(cands))
        if key not in cache:
            cache[key] = ranking_values(row["context"] or "", cands)
        values = cache[key]
        stratum = _stratum(row.get("question_type"), row.get("belief_order"), row.get("answer_format"))
        for name in RANKINGS:
            groups = [tie_pattern(values[name], gold) for gold in golds]
            pattern = ",".join(map(str, groups[0][0]))
            golds_at = ",".join(str(g) for _, g in groups)
            rows.append((row.get("selection", "all"), stratum, name, len(cands), pattern, golds_at))
    return pl.DataFrame(
        rows,
        schema={
            "selection": pl.Utf8,
            "belief_order": pl.Utf8,
            "ranking": pl.Utf8,
            "k": pl.Int64,
            "pattern": pl.Utf8,
            "group": pl.Utf8,
        },
        orient="row",
    )


def gold_ranks(df: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """`audit_gold_ranks`: per (selection, stratum, ranking, k) with at least `min_group_items`
    items, the gold's share at each position against 1/k, the chi-square, its p-value and whether
    it is flagged (Bonferroni over the groups tested)."""
    patterns = pattern_counts(df)
    single = patterns.filter(pl.col("belief_order") != LIST_STRATUM)  # list answers are never pooled into "all"
    several = (
        single.group_by("selection").agg(pl.col("belief_order").n_unique().alias("orders")).filter(pl.col("orders") > 1)
    )
    pooled = single.join(several.select("selection"), on="selection", how="semi").with_columns(
        pl.lit("all").alias("belief_order")
    )
    patterns = pl.concat([pooled, patterns])
    rows = []
    keys = ["selection", "belief_order", "ranking", "k"]
    counted = (
        patterns.group_by([*keys, "pattern", "group"])
        .agg(pl.col("len").sum().cast(pl.Int64))
        .sort([*keys, "pattern", "group"])
    )
    for key, part in counted.group_by(keys, maintain_order=True):
        items = [
            (_ints(pat), _ints(g) if key[1] == LIST_STRATUM else _ints(g)[0], c)
            for pat, g, c in part.select("pattern", "group", "len").iter_rows()
        ]
        if sum(c for _, _, c in items) < p.min_group_items:
            continue
        n, share, chi2, df_, p_value = counted_uniformity_test(items)
        selection, stratum, ranking, k = key
        rows += [
            {
                "selection": selection,
                "belief_order": stratum,
                "ranking": ranking,
                "k": k,
                "n": n,
                "position": pos,
                "share": float(share[pos]),
                "expected": 1.0 / k,
                "chi2": chi2,
                "df": df_,
                "p_value": p_value,
            }
            for pos in range(k)
        ]
    out = pl.DataFrame(rows, schema=SCHEMA)
    m = max(out.select(keys).unique().height, 1)
    out = out.with_columns(
        (pl.col("p_value") <= p.alpha / m).alias("flagged"), pl.lit(p.alpha / m).alias("alpha_corrected")
    )
    order = {name: i for i, name in enumerate(RANKINGS)}
    return out.sort(
        ["selection", "belief_order", pl.col("ranking").replace_strict(order, return_dtype=pl.Int64), "k", "position"]
    )


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.split(","))


def worst_group(table: pl.DataFrame) -> dict | None:
    """The row (position) furthest from its expected share, preferring flagged groups."""
    if table.height == 0:
        return None
    ranked = table.with_columns((pl.col("share") - pl.col("expected")).abs().alias("gap"))
    return ranked.sort(
        ["flagged", "gap", "selection", "belief_order", "ranking", "position"],
        descending=[True, True, False, False, False, False],
    ).row(0, named=True)


# The compiled path of `item_patterns` (what `gold_ranks` counts), for stories of plain ASCII text
# (printable bytes and "\n"), where `sentences`, `norm` and `_MOVE` reduce to byte rules: lines split
# at "\n" lose a leading "<digits><spaces>" and their outer spaces; a sentence ends at a run of spaces
# after ".", "!" or "?"; words are the runs of [A-Za-z0-9_], lower-cased; a sentence moves something
# when one of its words is a form of `MOVE_WORDS` (the regex's \b on both sides makes a match a whole
# word). Other stories go through `ranking_values`. The tests compare the two on planted stories.
MOVE_WORDS = (
    "move moves moved moving put puts putting place places placed placing relocate relocates relocated "
    "relocating transfer transfers transfered transfering transferr transferrs transferred transferring store "
    "stores stored storing shift shifts shifted shifting drop drops dropped dropping tuck tucks tucked tucking "
    "stash stashes stashed stashing slip slips sliped sliping slipp slipps slipped slipping"
).split()  # every word `_MOVE` matches whole (tests/audits/test_audit_ranks.py checks it against the regex)
STORY_CHUNK = 8192  # stories read at once: their words' arrays stay small (~0.1 GB), whatever the audit's size
_HASH_BASE = np.uint64(0x100000001B3)
_HASH_LEN = np.uint64(0x9E3779B97F4A7C15)
_NEG_INF = -np.inf


def _word_table() -> np.ndarray:
    """A byte's lower-cased value when it is an ASCII word byte ([A-Za-z0-9_]), else 0."""
    table = np.zeros(256, dtype=np.uint8)
    for c in b"abcdefghijklmnopqrstuvwxyz0123456789_":
        table[c] = c
    for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        table[c] = c + 32
    return table


_WORD_TABLE = _word_table()


@njit(cache=True, nogil=True)
def _hash_bytes(data, start, end, table):
    total = np.uint64(0)
    power = np.uint64(1)
    for i in range(start, end):
        total += np.uint64(table[data[i]]) * power
        power *= _HASH_BASE
    return fmix64_jit(total + np.uint64(end - start) * _HASH_LEN)


@njit(cache=True, nogil=True)
def _is_move(data, start, end, h, move_hashes, move_bytes, move_lens, table):
    if end - start < 3 or end - start > move_bytes.shape[1]:
        return False
    for w in range(len(move_hashes)):
        if move_hashes[w] == h and move_lens[w] == end - start:
            same = True
            for j in range(end - start):
                if table[data[start + j]] != move_bytes[w, j]:
                    same = False
                    break
            if same:
                return True
    return False


@njit(cache=True, nogil=True)
def _plain(data, lo, hi):
    """Whether a story's bytes are all printable ASCII or "\\n"."""
    for i in range(lo, hi):
        c = data[i]
        if c != 10 and (c < 32 or c > 126):
            return False
    return True


@njit(cache=True, nogil=True)
def _after_stop(data, p):
    """Whether the byte before p ends a sentence (".", "!" or "?")."""
    return data[p - 1] == 46 or data[p - 1] == 33 or data[p - 1] == 63


@njit(cache=True, nogil=True)
def _line_text(data, a, b):
    """A line's byte range without a leading "<spaces><digits><spaces>" (its number) and outer spaces."""
    j = a
    while j < b and data[j] == 32:
        j += 1
    k = j
    while k < b and 48 <= data[k] <= 57:
        k += 1
    if k > j and k < b and data[k] == 32:
        while k < b and data[k] == 32:
            k += 1
        a = k
    while a < b and data[a] == 32:
        a += 1
    while b > a and data[b - 1] == 32:
        b -= 1
    return a, b


@njit(cache=True, nogil=True)
def story_words_jit(data, offsets, table, move_hashes, move_bytes, move_lens):
    """The words of each plain-ASCII story (others: `plain` False, no words): per word its byte
    range in `data`, its hash (lower-cased bytes) and its sentence (from 0 per story); per sentence
    whether it moves something; with per-story offsets of both."""
    n = len(offsets) - 1
    cap = (offsets[n] - offsets[0]) // 2 + n + 1
    words = (
        np.empty(cap, dtype=np.int64),
        np.empty(cap, dtype=np.int64),
        np.empty(cap, dtype=np.uint64),
        np.empty(cap, dtype=np.int64),
    )
    s_move = np.zeros(cap, dtype=np.bool_)
    w_off = np.zeros(n + 1, dtype=np.int64)
    s_off = np.zeros(n + 1, dtype=np.int64)
    plain = np.ones(n, dtype=np.bool_)
    nw = 0
    ns = 0
    for d in range(n):
        lo, hi = offsets[d], offsets[d + 1]
        plain[d] = _plain(data, lo, hi)
        if plain[d]:
            first_sentence = ns
            i = lo
            while True:
                e = i
                while e < hi and data[e] != 10:
                    e += 1
                a, b = _line_text(data, i, e)
                if b > a:
                    nw, ns = _line_words(
                        data, a, b, table, words, s_move, nw, ns, first_sentence, move_hashes, move_bytes, move_lens
                    )
                if e >= hi:
                    break
                i = e + 1
        w_off[d + 1] = nw
        s_off[d + 1] = ns
    w_start, w_end, w_hash, w_sent = words
    return plain, w_off, w_start[:nw], w_end[:nw], w_hash[:nw], w_sent[:nw], s_off, s_move[:ns]


@njit(cache=True, nogil=True)
def _line_words(data, a, b, table, words, s_move, nw, ns, first_sentence, move_hashes, move_bytes, move_lens):
    """One line's sentences (split after ".", "!" or "?" and spaces) and words, appended."""
    w_start, w_end, w_hash, w_sent = words
    sentence = ns - first_sentence
    ns += 1
    p = a
    while p < b:
        c = data[p]
        if table[c] != 0:
            q = p
            while q < b and table[data[q]] != 0:
                q += 1
            h = _hash_bytes(data, p, q, table)
            w_start[nw], w_end[nw], w_hash[nw], w_sent[nw] = p, q, h, sentence
            nw += 1
            if _is_move(data, p, q, h, move_hashes, move_bytes, move_lens, table):
                s_move[ns - 1] = True
            p = q
        elif c == 32 and _after_stop(data, p):
            while p < b and data[p] == 32:
                p += 1
            sentence = ns - first_sentence
            ns += 1
        else:
            p += 1
    return nw, ns


@njit(cache=True, nogil=True)
def _groups_of(values, k, groups, sizes):
    """Each candidate's tie group (distinct values above it) and the groups' sizes from the top."""
    for c in range(k):
        g = 0
        for c2 in range(k):
            if values[c2] > values[c]:
                first = True
                for c3 in range(c2):
                    if values[c3] == values[c2]:
                        first = False
                        break
                if first:
                    g += 1
        groups[c] = g
        sizes[g] += 1


@njit(cache=True, nogil=True)
def _phrase_at(i, p0, m, data, table, w_start, w_end, w_hash, ct_hash, ct_start, ct_end, cand_bytes):
    """Whether the story's words from i on are the candidate's m words from p0 on: hashes, then bytes."""
    for j in range(m):
        if w_hash[i + j] != ct_hash[p0 + j]:
            return False
    for j in range(m):
        a, b = w_start[i + j], ct_start[p0 + j]
        if w_end[i + j] - a != ct_end[p0 + j] - b:
            return False
        for x in range(w_end[i + j] - a):
            if table[data[a + x]] != cand_bytes[b + x]:
                return False
    return True


@njit(cache=True, nogil=True)
def rank_groups_jit(
    key_story, key_set, data, table, w_off, w_start, w_end, w_hash, w_sent, s_off, s_move,
    set_off, set_cands, cand_off, ct_hash, ct_start, ct_end, cand_bytes, kmax,
):  # fmt: skip
    """Per (story, candidate set) key and ranking (`RANKINGS` order): each candidate's tie group and
    the sizes of the groups (`tie_pattern`), from the values `ranking_values` gives. A phrase is looked
    for only where its story has its first word (the story's words sorted by hash once), not at every word."""
    n_keys = len(key_story)
    groups = np.zeros((n_keys, 5, kmax), dtype=np.int16)
    sizes = np.zeros((n_keys, 5, kmax), dtype=np.int16)
    values = np.empty((5, kmax), dtype=np.float64)
    story = -1
    order, sorted_hashes = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
    for key in range(n_keys):
        d, cs = key_story[key], key_set[key]
        t0, t1 = w_off[d], w_off[d + 1]
        if d != story:  # keys come grouped by story: its words sorted by hash once, not scanned per candidate
            story = d
            order = np.argsort(w_hash[t0:t1], kind="mergesort")  # stable: equal hashes stay in story order
            sorted_hashes = w_hash[t0:t1][order]
        moves0 = s_off[d]
        c0, c1 = set_off[cs], set_off[cs + 1]
        k = c1 - c0
        for c in range(k):
            cand = set_cands[c0 + c]
            p0, p1 = cand_off[cand], cand_off[cand + 1]
            m = p1 - p0
            hits = 0
            first = -1
            last = -1
            n_sent = 0
            last_sent = -1
            last_move = -1
            if m > 0:
                lo = np.searchsorted(sorted_hashes, ct_hash[p0], side="left")
                hi = np.searchsorted(sorted_hashes, ct_hash[p0], side="right")
                for x in range(lo, hi):  # the words whose hash is the candidate's first word's, in story order
                    i = t0 + order[x]
                    if i > t1 - m:
                        break
                    if _phrase_at(i, p0, m, data, table, w_start, w_end, w_hash, ct_hash, ct_start, ct_end, cand_bytes):
                        pos = i - t0
                        if hits == 0:
                            first = pos
                        last = pos
                        hits += 1
                        s = w_sent[i]
                        if s != last_sent:
                            n_sent += 1
                            last_sent = s
                            if s_move[moves0 + s]:
                                last_move = s
            values[0, c] = hits
            values[1, c] = -first if hits else _NEG_INF
            values[2, c] = last if hits else -1.0
            values[3, c] = n_sent
            values[4, c] = last_move
        for r in range(5):
            _groups_of(values[r], k, groups[key, r], sizes[key, r])
    return groups, sizes


def _python_groups(values: dict[str, list[float]], kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """`rank_groups_jit`'s two arrays for one key from `ranking_values` (stories not plain ASCII)."""
    groups = np.zeros((5, kmax), dtype=np.int16)
    sizes = np.zeros((5, kmax), dtype=np.int16)
    for r, name in enumerate(RANKINGS):
        vals = values[name]
        for c in range(len(vals)):
            pattern, group = tie_pattern(vals, c)
            groups[r, c] = group
        sizes[r, : len(pattern)] = pattern
    return groups, sizes


def _move_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = max(len(w) for w in MOVE_WORDS)
    move_bytes = np.zeros((len(MOVE_WORDS), width), dtype=np.uint8)
    for i, word in enumerate(MOVE_WORDS):
        move_bytes[i, : len(word)] = np.frombuffer(word.encode(), dtype=np.uint8)
    move_lens = np.array([len(w) for w in MOVE_WORDS], dtype=np.int64)
    flat = np.frombuffer("".join(MOVE_WORDS).encode(), dtype=np.uint8)
    ends = np.cumsum(move_lens)
    return _hashes_jit(flat, ends - move_lens, ends, _WORD_TABLE), move_bytes, move_lens


def pattern_counts(df: pl.DataFrame) -> pl.DataFrame:
    """`item_patterns` counted: one row per distinct (selection, belief_order, ranking, k, pattern,
    group) with its number of items (`len`). Compiled over plain-ASCII stories (`story_words_jit`,
    `rank_groups_jit`), each story read once and each distinct candidate list and answer judged once;
    the reference (`item_patterns`) without numba."""
    if not use_jit():
        return item_patterns(df).group_by(list(PATTERN_KEYS)).len()
    schema = {**{c: pl.Utf8 for c in PATTERN_KEYS}, "k": pl.Int64, "len": pl.UInt32}
    df = _with_pattern_columns(df)
    if _an_id_has_several_texts(df):  # one id, several texts (an id is of the whitespace-normalized
        return item_patterns(df).group_by(list(PATTERN_KEYS)).len()  # text): the reference reads a key's first row
    row_set, row_gold, list_golds, sets = _judged(df)
    kept = np.flatnonzero(row_set >= 0)
    if not len(kept):
        return pl.DataFrame(schema=schema)
    kmax = int(sets.sizes().max())
    row_key, key_story, key_set, first_row = _story_keys(df, row_set, kept)
    groups, sizes = _rank_groups(df, key_story, key_set, first_row, sets, kmax)
    pattern_id, pattern_text = _pattern_ids(sizes.reshape(-1, kmax))
    pattern_id = pattern_id.reshape(len(key_story), 5)
    set_k = sets.sizes().astype(np.int64)
    base = (
        df.select("selection", _stratum_expr().alias("belief_order"))
        .filter(pl.Series(row_set >= 0))
        .with_columns(pl.Series("k", set_k[row_set[kept]]))
    )
    gold = row_gold[kept]
    lists = np.flatnonzero(gold < 0)
    frames = []
    for r, name in enumerate(RANKINGS):
        group = pl.Series("group", groups[row_key, r, np.maximum(gold, 0)].astype(np.int64)).cast(pl.Utf8)
        if len(lists):
            texts_r = [
                ",".join(str(int(groups[row_key[i], r, g])) for g in list_golds[int(kept[i])]) for i in lists.tolist()
            ]
            group = group.scatter(lists, pl.Series(texts_r, dtype=pl.Utf8))
        frames.append(
            base.with_columns(pl.lit(name).alias("ranking"), pl.Series("_p", pattern_id[row_key, r]), group)
            .group_by("selection", "belief_order", "ranking", "k", "_p", "group")
            .len()
        )
    names = pl.DataFrame({"_p": np.arange(len(pattern_text), dtype=np.int64), "pattern": pattern_text})
    out = pl.concat(frames).with_columns(pl.col("_p").cast(pl.Int64)).join(names, on="_p", how="left")
    return out.select(*PATTERN_KEYS, "len").cast(schema)  # type: ignore[arg-type]


def _with_pattern_columns(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with every column the patterns read: a missing one null (`selection`: "all")."""
    for name, dtype in (
        ("options", pl.List(pl.Utf8)),
        ("meta_candidates", pl.List(pl.Utf8)),
        ("answer", pl.Utf8),
        ("answer_format", pl.Utf8),
        ("question_type", pl.Utf8),
        ("belief_order", pl.Int64),
        ("selection", pl.Utf8),
    ):
        if name not in df.columns:
            df = df.with_columns(pl.lit("all" if name == "selection" else None, dtype).alias(name))
    return df


def _an_id_has_several_texts(df: pl.DataFrame) -> bool:
    """Whether one `context_id` stands for several story texts (then only the reference reads them right)."""
    texts_per_id = (
        df.select(
            "context_id",
            pl.struct(pl.col("context").hash().alias("h"), pl.col("context").str.len_bytes().alias("n")).alias("_t"),
        )
        .group_by("context_id")
        .agg(pl.col("_t").n_unique())
    )
    most = texts_per_id["_t"].max()
    return isinstance(most, int) and most > 1


def _story_keys(
    df: pl.DataFrame, row_set: np.ndarray, kept: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (story, candidate set) keys of the judged rows: each kept row's key, each key's story and set,
    and each story's first row (each story's text is read once)."""
    picked = df.select("context_id").with_row_index("_row").filter(pl.Series(row_set >= 0))
    story_of = picked.select("context_id").unique(keep="first", maintain_order=True).with_row_index("_story")
    picked = picked.join(story_of, on="context_id", how="left", maintain_order="left").with_columns(
        pl.Series("_set", row_set[kept])
    )
    keys = picked.select("_story", "_set").unique(maintain_order=True).with_row_index("_key")
    row_key = picked.join(keys, on=["_story", "_set"], how="left", maintain_order="left")["_key"].to_numpy()
    key_story = keys["_story"].to_numpy().astype(np.int64)
    key_set = keys["_set"].to_numpy().astype(np.int64)
    firsts = df.select("context_id").with_row_index("_row").unique("context_id", keep="first", maintain_order=True)
    first_row = story_of.join(firsts, on="context_id", how="left", maintain_order="left")["_row"].to_numpy()
    return row_key, key_story, key_set, first_row


def _candidate_words(sets: "Sets") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each distinct candidate's words (already normalized) as bytes for the kernel: (per candidate its first word,
    the bytes, each word's start, end and hash)."""
    words = [[w.encode("utf-8") for w in cand.split()] for cand in sets.names]
    cand_off = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum([len(w) for w in words], out=cand_off[1:])
    flat_words = [w for ws in words for w in ws]
    cand_bytes = np.frombuffer(b"".join(flat_words), dtype=np.uint8) if flat_words else np.zeros(0, np.uint8)
    ct_end = np.cumsum([len(w) for w in flat_words], dtype=np.int64)
    ct_start = ct_end - np.array([len(w) for w in flat_words], dtype=np.int64)
    # candidate words are lower case already; one with a byte that is no ASCII word byte never
    # equals a story word (the kernel compares the bytes after the hashes)
    ct_hash = _hashes_jit(cand_bytes, ct_start, ct_end, np.arange(256, dtype=np.uint8))
    return cand_off, cand_bytes, ct_start, ct_end, ct_hash


def _rank_groups(
    df: pl.DataFrame, key_story: np.ndarray, key_set: np.ndarray, first_row: np.ndarray, sets: "Sets", kmax: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per key, ranking and candidate: its rank group and the group's size, by the compiled kernels a few thousand
    stories at a time (stories with bytes the kernels do not read: by the reference)."""
    set_off, set_cands = sets.offsets, sets.ids
    cand_off, cand_bytes, ct_start, ct_end, ct_hash = _candidate_words(sets)
    groups = np.zeros((len(key_story), 5, kmax), dtype=np.int16)
    sizes = np.zeros((len(key_story), 5, kmax), dtype=np.int16)
    by_story = np.argsort(key_story, kind="stable")
    bounds = np.searchsorted(key_story[by_story], np.arange(0, len(first_row) + STORY_CHUNK, STORY_CHUNK))
    moves = _move_tables()
    for chunk, s0 in enumerate(range(0, len(first_row), STORY_CHUNK)):  # a few thousand stories at a time
        texts = df["context"].gather(first_row[s0 : s0 + STORY_CHUNK]).fill_null("")
        at = by_story[bounds[chunk] : bounds[chunk + 1]]
        data, offsets = _utf8_buffers(texts)
        plain, w_off, w_start, w_end, w_hash, w_sent, s_off, s_move = story_words_jit(
            data, offsets, _WORD_TABLE, *moves
        )
        groups[at], sizes[at] = rank_groups_jit(
            key_story[at] - s0, key_set[at], data, _WORD_TABLE, w_off, w_start, w_end, w_hash, w_sent, s_off,
            s_move, set_off, set_cands, cand_off, ct_hash, ct_start, ct_end, cand_bytes, kmax,
        )  # fmt: skip
        for key in at[~plain[key_story[at] - s0]].tolist():  # stories with other bytes: the reference
            values = ranking_values(texts[int(key_story[key] - s0)], sets.cands(int(key_set[key])))
            groups[key], sizes[key] = _python_groups(values, kmax)
    return groups, sizes


def _stratum_expr() -> pl.Expr:
    """A row's belief-order stratum: list answers and memory questions apart, "none" without an order."""
    return (
        pl.when(pl.col("answer_format") == "list")
        .then(pl.lit(LIST_STRATUM))
        .when(pl.col("question_type") == "memory")
        .then(pl.lit("memory"))
        .when(pl.col("belief_order").is_null())
        .then(pl.lit("none"))
        .otherwise(pl.col("belief_order").cast(pl.Utf8))
    )


def _norm_expr(text: pl.Expr) -> pl.Expr:
    """`norm` of an ASCII text as a polars expression (lower case, other runs than [a-z0-9_] one space)."""
    return text.str.to_lowercase().str.replace_all(r"[^a-z0-9_]+", " ").str.strip_chars(" ")


def _judged(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[int, ...]], Sets]:
    """Per row: its candidate set (an index into the distinct sets, -1 when the item is not ranked:
    `_candidates`, `_golds`), its gold's index (-1 for a list answer) and, for list answers, the
    golds; with the distinct sets. Single-gold items with ASCII options and answer are judged by polars
    expressions; list answers and other texts by `_candidates` and `_golds`, once per distinct value."""
    ascii_row = pl.all_horizontal(
        pl.col("options").list.join("").fill_null("").str.contains(r"^[\x00-\x7f]*$"),
        pl.col("meta_candidates").list.join("").fill_null("").str.contains(r"^[\x00-\x7f]*$"),
        pl.col("answer").fill_null("").str.contains(r"^[\x00-\x7f]*$"),
    )
    frame = df.select("options", "meta_candidates", "answer", "answer_format").with_row_index("_row")
    frame = frame.filter(pl.col("answer_format").fill_null("") != "yes_no")
    eligible = ascii_row & (pl.col("answer_format").fill_null("") != "list")
    fast = _judged_by_expressions(frame.filter(eligible))
    slow, list_golds = _judged_one_by_one(frame.filter(~eligible), fast.schema["_row"])
    rows = pl.concat([fast, slow])
    sets = rows.select("_set_key").unique(maintain_order=True).with_row_index("_set")
    rows = rows.join(sets, on="_set_key", how="left")
    row_set = np.full(df.height, -1, dtype=np.int64)
    row_gold = np.full(df.height, -1, dtype=np.int64)
    at = rows["_row"].to_numpy().astype(np.int64)
    row_set[at] = rows["_set"].to_numpy()
    row_gold[at] = rows["_gold"].to_numpy()
    return row_set, row_gold, list_golds, _distinct_sets(sets)


def _judged_by_expressions(fast: pl.DataFrame) -> pl.DataFrame:
    """`_row`, `_set_key` (the normalized candidates joined by NUL) and `_gold` of the single-gold rows with ASCII
    texts, by polars expressions: rows with fewer than two or repeated candidates, or a gold not among them, drop."""
    listed = (
        pl.when(pl.col("options").list.len() >= 2)
        .then(pl.col("options"))
        .otherwise(pl.col("meta_candidates").fill_null(pl.lit([], pl.List(pl.Utf8))))
    )
    fast = fast.select(
        "_row",
        listed.list.eval(_norm_expr(pl.element())).alias("cands"),
        _norm_expr(pl.col("answer").fill_null("")).alias("gold"),
    )
    fast = fast.filter(
        (pl.col("cands").list.len() >= 2) & (pl.col("cands").list.n_unique() == pl.col("cands").list.len())
    )
    hit = pl.concat_list(pl.col("gold"), pl.col("cands")).list.eval(pl.element().slice(1) == pl.element().first())
    fast = fast.with_columns(hit.alias("_hit")).filter(pl.col("_hit").list.any())
    return fast.select(
        "_row",
        pl.col("cands").list.join("\x00").alias("_set_key"),
        pl.col("_hit").list.eval(pl.element().arg_max()).list.first().cast(pl.Int64).alias("_gold"),
    )


def _judged_one_by_one(slow: pl.DataFrame, row_type: pl.DataType) -> tuple[pl.DataFrame, dict[int, tuple[int, ...]]]:
    """The same columns for list answers and other texts, by `_candidates` and `_golds` once per distinct value
    (gold -1 for a list answer), with each list answer's golds by row."""
    judged = slow.group_by("options", "meta_candidates", "answer", "answer_format").agg(pl.col("_row"))
    cands_of: dict[tuple, list[str] | None] = {}
    slow_rows: list[int] = []
    slow_keys: list[str] = []
    slow_golds: list[int] = []
    list_golds: dict[int, tuple[int, ...]] = {}
    for options, meta, answer, fmt, members in judged.iter_rows():
        source = (tuple(options) if options is not None else None, tuple(meta) if meta is not None else None, fmt)
        if source not in cands_of:
            cands_of[source] = _candidates({"options": options, "meta_candidates": meta, "answer_format": fmt})
        cands = cands_of[source]
        golds = None if cands is None else _golds({"answer": answer, "answer_format": fmt}, cands)
        if cands is None or golds is None:
            continue
        key = "\x00".join(cands)  # normalized candidates hold no NUL: one text per list
        for r in members:
            slow_rows.append(r)
            slow_keys.append(key)
            slow_golds.append(golds[0] if fmt != "list" else -1)
            if fmt == "list":
                list_golds[r] = golds
    frame = pl.DataFrame(
        {"_row": slow_rows, "_set_key": slow_keys, "_gold": slow_golds},
        schema={"_row": row_type, "_set_key": pl.Utf8, "_gold": pl.Int64},
    )
    return frame, list_golds


def _distinct_sets(sets: pl.DataFrame) -> "Sets":
    """The distinct candidate sets (`_set`, `_set_key`) as offsets into one array of candidate indices."""
    members = sets.select("_set", pl.col("_set_key").str.split("\x00").alias("cand")).explode("cand")
    names = members.select("cand").unique(maintain_order=True).with_row_index("_cand")
    members = members.join(names, on="cand", how="left", maintain_order="left")
    counts = members.group_by("_set", maintain_order=True).len()["len"].to_numpy()
    offsets = np.zeros(sets.height + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Sets(offsets, members["_cand"].to_numpy().astype(np.int64), names["cand"].to_list())


class Sets:
    """The distinct candidate lists: list s holds candidates `ids[offsets[s]:offsets[s + 1]]`, each
    an index into `names` (normalized candidates)."""

    def __init__(self, offsets: np.ndarray, ids: np.ndarray, names: list[str]) -> None:
        self.offsets, self.ids, self.names = offsets, ids, names

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def cands(self, s: int) -> list[str]:
        return [self.names[i] for i in self.ids[self.offsets[s] : self.offsets[s + 1]].tolist()]


def _pattern_ids(sizes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each row's tie pattern (group sizes from the top, zero-padded) as an id, and each id's text."""
    if sizes.shape[1] <= 15:  # sizes < 16: one int64 code per row
        codes = (sizes.astype(np.int64) << (4 * np.arange(sizes.shape[1], dtype=np.int64))).sum(axis=1)
        uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        distinct = sizes[first]
    else:
        distinct, inverse = np.unique(sizes, axis=0, return_inverse=True)
    return np.asarray(inverse).reshape(-1), [",".join(str(int(x)) for x in row if x) for row in distinct]


@njit(cache=True, nogil=True)
def _hashes_jit(data, starts, ends, table):
    out = np.empty(len(starts), dtype=np.uint64)
    for i in range(len(starts)):
        out[i] = _hash_bytes(data, starts[i], ends[i], table)
    return out


@njit(cache=True, nogil=True)
def repeat_candidates_jit(plain, w_off, w_hash, w_sent, s_off):
    """Per story: whether two of its sentences with words have the same words (by a hash of their
    word hashes: equal sentences always agree, so a story without a match repeats nothing); stories
    not plain ASCII are candidates (`story_words_jit` did not read them)."""
    n = len(w_off) - 1
    out = np.zeros(n, dtype=np.bool_)
    for d in range(n):
        if not plain[d]:
            out[d] = True
            continue
        n_sent = s_off[d + 1] - s_off[d]
        hashes = np.zeros(n_sent, dtype=np.uint64)
        has_words = np.zeros(n_sent, dtype=np.bool_)
        for i in range(w_off[d], w_off[d + 1]):
            s = w_sent[i]
            hashes[s] = hashes[s] * _HASH_BASE + w_hash[i]
            has_words[s] = True
        kept = np.sort(hashes[has_words])
        for j in range(1, len(kept)):
            if kept[j] == kept[j - 1]:
                out[d] = True
                break
    return out


def repeat_candidates(texts: pl.Series) -> np.ndarray:
    """Which stories may say a sentence twice (`repeat_candidates_jit`); all of them without numba."""
    if not use_jit():
        return np.ones(len(texts), dtype=np.bool_)
    out = np.zeros(len(texts), dtype=np.bool_)
    moves = _move_tables()
    for s0 in range(0, len(texts), STORY_CHUNK):
        data, offsets = _utf8_buffers(texts.slice(s0, STORY_CHUNK).fill_null(""))
        plain, w_off, _, _, w_hash, w_sent, s_off, _ = story_words_jit(data, offsets, _WORD_TABLE, *moves)
        out[s0 : s0 + STORY_CHUNK] = repeat_candidates_jit(plain, w_off, w_hash, w_sent, s_off)
    return out
