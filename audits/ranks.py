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
    observed: np.ndarray | None = None
    by_pattern: Counter[tuple[tuple[int, ...], int]] = Counter()
    n = golds = 0
    for pattern, group in patterns:
        groups = (group,) if isinstance(group, int) else group
        v = sum((spread(pattern, g) for g in groups), np.zeros(sum(pattern)))
        observed = v if observed is None else observed + v
        by_pattern[pattern, len(groups)] += 1
        n += 1
        golds += len(groups)
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


LIST_STRATUM = "list"  # list answers: their own groups, never pooled with single-gold items


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
    patterns = item_patterns(df)
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
    counted = patterns.group_by([*keys, "pattern", "group"]).len().sort([*keys, "pattern", "group"])
    for key, part in counted.group_by(keys, maintain_order=True):
        items = [
            (_ints(pat), _ints(g) if key[1] == LIST_STRATUM else _ints(g)[0])
            for pat, g, c in part.select("pattern", "group", "len").iter_rows()
            for _ in range(c)
        ]
        if len(items) < p.min_group_items:
            continue
        n, share, chi2, df_, p_value = uniformity_test(items)
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
