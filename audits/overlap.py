"""Overlap between a train and a held-out selection (and within each): MinHash LSH + exact checks,
structural duplicates, exact long n-gram overlap calibrated against a within-train null, and
re-formatted copies found sentence by sentence (`audits.sentence_match`, the scan's core too).

The unit is the distinct normalized context (story or dialogue text): a held-out question on a
story that train also has is leaked whatever the question. Every reported pair carries its evidence
(estimated and exact Jaccard, both containments, matched spans); every rate is set beside the same
rate among independent train contexts, so templated data is not flagged wholesale.
"""

from __future__ import annotations

import contextlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

import numpy as np
import polars as pl
import pyarrow as pa
from scipy import stats

from tomforge.audits.config import AuditParams
from tomforge.audits.lsh import Banding, candidate_pairs_from_keys, choose_banding
from tomforge.audits.minhash import SCHEME, estimate_jaccard
from tomforge.audits.ngram import ngram_test
from tomforge.audits.passes import Hashed, Passes, PassSettings, run_local
from tomforge.audits.sentence_match import SentenceParams, build_sentence_index, match_sentences, sentence_evidence
from tomforge.audits.skeleton import skeleton_keys
from tomforge.audits.store import signature_table
from tomforge.audits.text import NORMALIZER, text_keys, tokens
from tomforge.schemas.progress import SILENT, Progress

Lookup = Callable[[list[str], str, int], dict[str, np.ndarray]]


@dataclass
class OverlapResult:
    contexts: pl.DataFrame  # context_id -> text_key, doc, cluster, skeleton, sides
    pairs: pl.DataFrame  # audit_overlap_pairs
    ngram: pl.DataFrame  # per held-out and train context: 13-gram coverage, conformal p-value
    calibration: pl.DataFrame  # null rates beside observed rates
    banding: Banding
    new_signatures: pa.Table | None
    stats: dict = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)  # per phase: wall_s, cpu_s (not stored)


def signature_params_key(p: AuditParams) -> str:
    return f"{SCHEME}|n={p.shingle_n}|perm={p.num_perm}|seed={p.minhash_seed}|{NORMALIZER}"


def _docs(items: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Distinct contexts -> distinct normalized texts (docs), with which sides use them."""
    ctx = (
        items.group_by("context_id")
        .agg(
            pl.col("context").first(),
            (pl.col("side") == "train").sum().alias("n_train_items"),
            (pl.col("side") == "heldout").sum().alias("n_heldout_items"),
        )
        .sort("context_id")
    )
    ctx = ctx.with_columns(pl.Series("text_key", text_keys(ctx["context"]), dtype=pl.Utf8))
    # a text used by both sides may come from different contexts (raw texts that differ in case or punctuation):
    # each side's own context names it in that side's place of a pair
    docs = (
        ctx.group_by("text_key")
        .agg(
            pl.col("context").first(),
            pl.col("context_id").sort(),
            pl.col("n_train_items").sum(),
            pl.col("n_heldout_items").sum(),
            pl.col("context_id").filter(pl.col("n_train_items") > 0).min().alias("train_context_id"),
            pl.col("context_id").filter(pl.col("n_heldout_items") > 0).min().alias("heldout_context_id"),
            # the held-out side's own text: a key shared with a train copy in capitals would otherwise stand
            # for the held-out story, and its names could not be found (`_sentence_pairs`)
            pl.col("context").filter(pl.col("n_heldout_items") > 0).first().alias("heldout_context"),
        )
        .sort("text_key")
        .with_row_index("doc")
    )
    docs = docs.with_columns(
        (pl.col("n_train_items") > 0).alias("train"), (pl.col("n_heldout_items") > 0).alias("heldout")
    )
    return ctx, docs


def _unique_sets(flat: np.ndarray, offsets: np.ndarray) -> Callable[[int], np.ndarray]:
    cache: dict[int, np.ndarray] = {}

    def get(d: int) -> np.ndarray:
        if d not in cache:
            cache[d] = np.unique(flat[offsets[d] : offsets[d + 1]])
        return cache[d]

    return get


def _exact(get: Callable[[int], np.ndarray], a: int, b: int) -> tuple[float, float, float, int]:
    sa, sb = get(a), get(b)
    inter = len(np.intersect1d(sa, sb, assume_unique=True))
    union = len(sa) + len(sb) - inter
    return (
        inter / union if union else 1.0,
        inter / len(sa) if len(sa) else 0.0,
        inter / len(sb) if len(sb) else 0.0,
        inter,
    )


def matched_spans(words_a: list[str], words_b: list[str], n: int, limit: int) -> list[dict]:
    """Maximal runs of `b` covered by n-grams that also occur in `a` (longest first)."""
    width = min(n, len(words_a), len(words_b))
    if width == 0:
        return []
    grams = {tuple(words_a[i : i + width]) for i in range(len(words_a) - width + 1)}
    hits = [tuple(words_b[i : i + width]) in grams for i in range(len(words_b) - width + 1)]
    spans, start = [], None
    for i, hit in enumerate(hits + [False]):
        if hit and start is None:
            start = i
        elif not hit and start is not None:
            spans.append((start, i - 1 + width))
            start = None
    spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
    return [{"b_start": s, "b_end": e, "words": e - s, "text": " ".join(words_b[s:e])[:400]} for s, e in spans[:limit]]


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = np.arange(n)

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _cached_signatures(keys: list[str], p: AuditParams, lookup: Lookup | None) -> tuple[np.ndarray, np.ndarray]:
    """Signatures already in the cache (rows of zeros elsewhere) and which documents have one."""
    cached = lookup(keys, signature_params_key(p), p.num_perm) if lookup else {}
    sigs = np.zeros((len(keys), p.num_perm), dtype=np.uint32)
    have = np.zeros(len(keys), dtype=bool)
    for i, k in enumerate(keys):
        if k in cached:
            sigs[i], have[i] = cached[k], True
    return sigs, have


def _scope(train: np.ndarray, heldout: np.ndarray, a: int, b: int) -> tuple[str, int, int]:
    """Scope of a pair and its orientation (train side first for cross pairs)."""
    if train[a] and heldout[b]:
        return "cross", a, b
    if heldout[a] and train[b]:
        return "cross", b, a
    return ("train" if train[a] else "heldout"), a, b


class PhaseTimer:
    """Wall and CPU seconds of each named phase (the result's `timings`), each run as a stage of
    `progress` (the CLI draws it, a flow logs it, the bench turns it into a phase with its peak RSS)."""

    def __init__(self, prefix: str, progress: Progress = SILENT) -> None:
        self.prefix, self.progress = prefix, progress
        self.seconds: dict[str, dict[str, float]] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            with self.progress.stage(f"{self.prefix}: {name}"):
                yield
        finally:
            self.seconds[name] = {
                "wall_s": round(time.perf_counter() - wall, 3),
                "cpu_s": round(time.process_time() - cpu, 3),
            }


@dataclass
class _Signed:
    """The shingle and signature passes' output with what the caller needs from the cache."""

    hashed: Hashed
    banding: Banding
    new_signatures: pa.Table | None
    n_cached: int


def _sign(docs: pl.DataFrame, p: AuditParams, lookup: Lookup | None, passes: Passes) -> _Signed:
    """Word and shingle hashes of every doc; signatures from the cache or computed; band keys."""
    keys = docs["text_key"].to_list()
    banding = choose_banding(p.num_perm, p.jaccard_threshold, p.target_recall)
    cached, have = _cached_signatures(keys, p, lookup)
    hashed = passes(
        docs["context"].to_list(), cached, have, PassSettings(p.shingle_n, p.num_perm, p.minhash_seed, banding)
    )
    computed = np.flatnonzero(hashed.computed)
    offsets = hashed.offsets
    new_sigs = (
        signature_table(
            [keys[i] for i in computed],
            signature_params_key(p),
            hashed.signatures[computed],
            offsets[computed + 1] - offsets[computed],
        )
        if len(computed)
        else None
    )
    return _Signed(hashed, banding, new_sigs, docs.height - len(computed))


def _words_released(hashed: Hashed) -> Hashed:
    """`hashed` without its word hashes and band keys, which only the phases up to the 13-gram test read:
    not held through the sentences phase (about 0.27 GB at a million items). The pairs' evidence keeps
    reading the shingles and signatures."""
    return replace(
        hashed,
        words=np.empty(0, dtype=hashed.words.dtype),
        word_offsets=np.zeros(1, dtype=hashed.word_offsets.dtype),
        band_keys=np.empty((0,) + hashed.band_keys.shape[1:], dtype=hashed.band_keys.dtype),
    )


class _Evidence:
    """The rows of `audit_overlap_pairs`: each pair oriented (train side first), with its exact
    and estimated Jaccard, containments and matched spans."""

    def __init__(self, docs: pl.DataFrame, hashed: Hashed, p: AuditParams) -> None:
        self.p, self.sigs = p, hashed.signatures
        self.texts = docs["context"].to_list()
        self.heldout_texts = [
            own if own is not None else text for own, text in zip(docs["heldout_context"].to_list(), self.texts)
        ]
        self.keys = docs["text_key"].to_list()
        self.side_context = {
            "train": docs["train_context_id"].to_list(),
            "heldout": docs["heldout_context_id"].to_list(),
        }
        self.train, self.heldout = docs["train"].to_numpy(), docs["heldout"].to_numpy()
        self.get = _unique_sets(hashed.flat, hashed.offsets)
        self.rows: list[dict] = []
        self._words: dict[int, list[str]] = {}

    def words_of(self, d: int) -> list[str]:
        if d not in self._words:
            self._words[d] = tokens(self.texts[d])
        return self._words[d]

    def add(self, kind: str, a: int, b: int, extra: dict | None = None) -> None:
        scope, a, b = _scope(self.train, self.heldout, a, b)
        jac, c_a, c_b, inter = _exact(self.get, a, b)
        extra = extra or {}
        side_a, side_b = ("train", "heldout") if scope == "cross" else (scope, scope)
        self.rows.append(
            {
                "kind": kind,
                "scope": scope,
                "a_text_key": self.keys[a],
                "b_text_key": self.keys[b],
                "a_context_id": self.side_context[side_a][a],
                "b_context_id": self.side_context[side_b][b],
                "est_jaccard": float(estimate_jaccard(self.sigs[a], self.sigs[b])),
                "jaccard": jac,
                "containment_a": c_a,
                "containment_b": c_b,
                "shared_shingles": inter,
                "shared_ngrams": extra.get("shared_ngrams"),
                "p_value": extra.get("p_value"),
                "spans": json.dumps(
                    extra["spans"]
                    if "spans" in extra
                    else matched_spans(
                        self.words_of(a), self.words_of(b), extra.get("span_n", self.p.shingle_n), self.p.max_spans
                    )
                ),
                "shared_sentences": extra.get("shared_sentences"),
                "sentence_coverage": extra.get("sentence_coverage"),
            }
        )

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=_PAIR_SCHEMA).sort("kind", "scope", "a_text_key", "b_text_key")


_PAIR_SCHEMA = {
    "kind": pl.Utf8,
    "scope": pl.Utf8,
    "a_text_key": pl.Utf8,
    "b_text_key": pl.Utf8,
    "a_context_id": pl.Utf8,
    "b_context_id": pl.Utf8,
    "est_jaccard": pl.Float64,
    "jaccard": pl.Float64,
    "containment_a": pl.Float64,
    "containment_b": pl.Float64,
    "shared_shingles": pl.Int64,
    "shared_ngrams": pl.Int64,
    "p_value": pl.Float64,
    "spans": pl.Utf8,
    "shared_sentences": pl.Int64,  # kind `sentences`: held-out sentences found in the train story
    "sentence_coverage": pl.Float64,  # ... their weighted share (audits.sentence_match)
}


SENTENCE_BATCH = 20_000  # train stories matched at once: memory bounded by this, not by the train side
_STRONGER = ("exact", "near_duplicate", "contained")  # a pair already of these kinds needs no sentence pair


def _sentence_pairs(ev: _Evidence, sp: SentenceParams) -> int:
    """Train stories that hold a held-out story by its sentences (re-formatted, reordered, renamed:
    `audits.sentence_match`, the scan's core), as pairs of kind `sentences` with the matched
    sentences as spans; pairs already found as exact, near-duplicate or contained are not repeated.
    Returns the number of pairs added."""
    heldout = np.flatnonzero(ev.heldout)
    train = np.flatnonzero(ev.train & ~ev.heldout)
    if not len(heldout) or not len(train):
        return 0
    index = build_sentence_index([ev.heldout_texts[d] for d in heldout], sp)
    known = {(r["a_text_key"], r["b_text_key"]) for r in ev.rows if r["kind"] in _STRONGER}
    added = 0
    for lo in range(0, len(train), SENTENCE_BATCH):
        batch = train[lo : lo + SENTENCE_BATCH]
        hits = match_sentences(index, [ev.texts[d] for d in batch])
        for doc, story, matched, coverage in hits.select("doc", "story", "matched_sentences", "coverage").iter_rows():
            a, b = int(batch[doc]), int(heldout[story])
            if (ev.keys[a], ev.keys[b]) in known:
                continue
            spans = _sentence_spans(ev.heldout_texts[b], ev.texts[a], sp, ev.p.max_spans)
            ev.add(
                "sentences",
                a,
                b,
                {"spans": spans, "shared_sentences": matched, "sentence_coverage": coverage},
            )
            added += 1
    return added


def _sentence_spans(story: str, train_text: str, sp: SentenceParams, limit: int) -> list[dict]:
    """The matched held-out sentences as the pairs table's spans (normalized word ranges of the
    held-out story, longest first), with their place in the train story in characters."""
    out = []
    for e in sentence_evidence(story, train_text, sp):
        start = len(tokens(story[: e["story_start"]]))
        end = start + len(tokens(story[e["story_start"] : e["story_end"]]))
        out.append(
            {
                "b_start": start,
                "b_end": end,
                "words": end - start,
                "text": e["words"][:400],
                "a_char_start": e["doc_start"],
                "a_char_end": e["doc_end"],
            }
        )
    out.sort(key=lambda s: (-s["words"], s["b_start"]))
    return out[:limit]


def _near_duplicates(ev: _Evidence, band_keys: np.ndarray, p: AuditParams) -> tuple[np.ndarray, dict]:
    """Exact copies across sides and verified LSH candidates as pairs; the clusters of docs
    joined by Jaccard >= threshold (union-find) and the counts for the run's stats."""
    for d in np.nonzero(ev.train & ev.heldout)[0]:  # a doc used by both sides is an exact overlap
        ev.add("exact", int(d), int(d))
    cands, skipped = candidate_pairs_from_keys(band_keys, p.max_bucket)
    uf = _UnionFind(len(ev.keys))
    verified = 0
    for a, b in cands:
        jac, c_a, c_b, _ = _exact(ev.get, int(a), int(b))
        if jac >= p.jaccard_threshold or max(c_a, c_b) >= p.containment_threshold:
            verified += 1
            if jac >= p.jaccard_threshold:
                uf.union(int(a), int(b))
            # one name per meaning (table, report, README): similar as a whole, or one held inside the other
            ev.add("near_duplicate" if jac >= p.jaccard_threshold else "contained", int(a), int(b))
    clusters = np.array([uf.find(i) for i in range(len(ev.keys))], dtype=np.int64)
    return clusters, {"lsh_candidates": len(cands), "verified_pairs": verified, "oversized_buckets": skipped}


def audit_overlap(
    items: pl.DataFrame,
    p: AuditParams,
    lookup: Lookup | None = None,
    passes: Passes = run_local,
    progress: Progress = SILENT,
    largest_done: Callable[[], None] = lambda: None,
) -> OverlapResult:
    """`items` has the item columns of `audits.store.read_selection` plus `side` (train|heldout);
    `passes` runs the shingle and signature passes (here, or on Ray: `audits.ray_passes`);
    each phase is a stage of `progress` (their times are in the result's `timings`).
    `largest_done` is called once the phases that hold the most memory (up to the 13-gram test)
    are over, so that a caller can start memory-heavy work beside the rest."""
    timer = PhaseTimer("audit: overlap", progress)
    with timer.phase("distinct texts"):
        ctx, docs = _docs(items)
    with timer.phase("shingles and signatures"):
        signed = _sign(docs, p, lookup, passes)
    with timer.phase("near duplicates"):
        ev = _Evidence(docs, signed.hashed, p)
        clusters, counts = _near_duplicates(ev, signed.hashed.band_keys, p)
    docs = docs.with_columns(pl.Series("cluster", clusters))
    calibration: list[dict] = []
    ngram = pl.DataFrame()
    both_sides = bool(ev.heldout.any() and ev.train.any())
    if both_sides:
        with timer.phase("13-gram test"):
            ngram, calib = _ngram_evidence(ev, docs, signed.hashed, p)
            calibration += calib
    signed.hashed = _words_released(signed.hashed)
    largest_done()
    docs = _sentences_beside_skeletons(ev, docs, p, timer, counts if both_sides else None)
    if both_sides:
        with timer.phase("structural twins"):
            calibration += _structural_evidence(ev, docs, p)
    contexts = (
        ctx.select("context_id", "text_key", "n_train_items", "n_heldout_items")
        .join(docs.select("text_key", "doc", "cluster", "skeleton_key", "train", "heldout"), on="text_key")
        .sort("context_id")
    )
    st = {
        "contexts": ctx.height,
        "docs": docs.height,
        "signatures_cached": signed.n_cached,
        "signatures_computed": docs.height - signed.n_cached,
        **counts,
        "bands": signed.banding.bands,
        "rows": signed.banding.rows,
    }
    return OverlapResult(
        contexts,
        ev.frame(),
        ngram,
        pl.DataFrame(calibration, schema=_CALIB_SCHEMA),
        signed.banding,
        signed.new_signatures,
        st,
        timer.seconds,
    )


def _ngram_evidence(
    ev: _Evidence, docs: pl.DataFrame, hashed: Hashed, p: AuditParams
) -> tuple[pl.DataFrame, list[dict]]:
    """The 13-gram test's table and calibration rows; the pairs it flags go into `ev`."""
    ngram, ngram_pairs, calib = ngram_test(docs, hashed.words, hashed.word_offsets, p)
    for b, a, shared, pval in ngram_pairs:
        ev.add("ngram", a, b, {"shared_ngrams": shared, "p_value": pval, "span_n": p.ngram_n})
    return ngram, calib


def _structural_evidence(ev: _Evidence, docs: pl.DataFrame, p: AuditParams) -> list[dict]:
    """The structural twins go into `ev`; then the calibration rows of their test and of the near-duplicate
    rates, which count every pair in `ev`, the structural ones included (so it comes last)."""
    struct_pairs, calib = _structural(docs, p)
    for a, b, pval in struct_pairs:
        ev.add("structural", a, b, {"p_value": pval})
    return calib + _near_dup_rates(ev.rows, ev.train, ev.heldout, p)


def _sentences_beside_skeletons(
    ev: _Evidence, docs: pl.DataFrame, p: AuditParams, timer: PhaseTimer, counts: dict[str, int] | None
) -> pl.DataFrame:
    """`docs` with their skeleton keys, computed on a thread of their own beside the sentences phase (mostly one
    core; the skeletons need only the texts, in batches of a few MB), so they take the second core's idle time,
    not the main path's. The sentences phase runs (its pair count into `counts`) only when `counts` is given:
    both sides present; it is light on memory, so it comes after the largest phases."""
    with ThreadPoolExecutor(1, thread_name_prefix="audit-skeletons") as beside:
        skeletons = beside.submit(skeleton_keys, ev.texts)
        if counts is not None:
            with timer.phase("sentences"):
                counts["sentence_pairs"] = _sentence_pairs(
                    ev, SentenceParams(min_sentences=p.sentence_min_sentences, min_coverage=p.sentence_min_coverage)
                )
        with timer.phase("skeletons"):  # waiting for their thread
            return docs.with_columns(pl.Series("skeleton_key", skeletons.result()))


_CALIB_SCHEMA = {
    "check": pl.Utf8,
    "statistic": pl.Utf8,
    "observed": pl.Float64,
    "null": pl.Float64,
    "n_observed": pl.Int64,
    "n_null": pl.Int64,
    "p_value": pl.Float64,
    "flagged": pl.Boolean,
    "note": pl.Utf8,
}


def _structural(docs: pl.DataFrame, p: AuditParams):
    """Held-out docs whose skeleton occurs in a train doc of another cluster, against the rate at
    which train docs have such a twin among the other train clusters (one-sided binomial test).

    Calibrated as the sentence kind is, against the other held-out stories: a skeleton that several
    held-out stories (clusters) share is no evidence of any one of them (ToMi is told from few
    skeletons: 65 of 479 ToMi test stories share theirs), so it names none. Pairs are recorded only
    when the test flags (the per-pair conformal p or the rate test): an unflagged twin is what
    independent stories of the same templates share, and the pairs table, the check and `tomforge
    clean --drop-structural` must agree on what a structural twin is."""
    d = docs.select("doc", "cluster", "skeleton_key", "train", "heldout")
    tr = d.filter(pl.col("train"))
    per_skel = tr.group_by("skeleton_key").agg(
        pl.col("cluster").n_unique().alias("n_clusters"),
        pl.col("doc").sort().alias("train_docs"),
        pl.col("cluster").alias("train_clusters"),
    )
    null = tr.join(per_skel, on="skeleton_key").with_columns((pl.col("n_clusters") >= 2).alias("twin"))
    held = d.filter(pl.col("heldout") & ~pl.col("train"))
    shared = held.group_by("skeleton_key").agg(pl.col("cluster").n_unique().alias("n_heldout_clusters"))
    ho = held.join(per_skel, on="skeleton_key", how="left").join(shared, on="skeleton_key")
    n_null, null_twins = null.height, int(null["twin"].sum()) if null.height else 0
    null_rate = null_twins / n_null if n_null else 0.0
    # conformal p-value of "has a twin in train" for one exchangeable held-out context
    doc_p = (1 + null_twins) / (1 + n_null)
    pairs, n_twins = _structural_twins(ho, doc_p)
    n_obs = ho.height
    pval = (
        float(
            stats.binomtest(n_twins, n_obs, min(max(null_rate, 1.0 / (n_null + 1)), 1.0), alternative="greater").pvalue
        )
        if n_obs
        else 1.0
    )
    flagged = bool(n_twins and (pval <= p.alpha or doc_p <= p.ngram_alpha))
    calib = [
        {
            "check": "structural duplicates",
            "statistic": "share of contexts with a same-skeleton twin in train",
            "observed": n_twins / n_obs if n_obs else 0.0,
            "null": null_rate,
            "n_observed": n_obs,
            "n_null": n_null,
            "p_value": pval,
            "flagged": flagged,
            "note": f"held-out vs train contexts (twins among other train clusters); per-context conformal p = {doc_p:.3g}, "
            f"flagged per pair when <= {p.ngram_alpha:g}; skeletons shared by several held-out stories name none",
        }
    ]
    return (pairs if flagged else []), calib


def _structural_twins(ho: pl.DataFrame, doc_p: float) -> tuple[list[tuple], int]:
    """The held-out docs with a same-skeleton train doc of another cluster (their count), and up to five such
    (train doc, held-out doc, `doc_p`) pairs for each one whose skeleton no other held-out cluster shares."""
    pairs: list[tuple] = []
    n_twins = 0
    for doc, cluster, train_docs, train_clusters, n_heldout in ho.select(
        "doc", "cluster", "train_docs", "train_clusters", "n_heldout_clusters"
    ).iter_rows():
        if not train_docs:
            continue
        others = [t for t, c in zip(train_docs, train_clusters) if c != cluster]
        if others:
            n_twins += 1
            if n_heldout == 1:
                pairs.extend((t, doc, doc_p) for t in others[:5])
    return pairs, n_twins


def _near_dup_rates(rows: list[dict], train: np.ndarray, heldout: np.ndarray, p: AuditParams) -> list[dict]:
    """Near-duplicate pairs per possible pair: across sides vs within train (the generator's own rate)."""
    n_t, n_h = int((train & ~heldout).sum()), int((heldout & ~train).sum())
    cross = sum(
        1
        for r in rows
        if r["kind"] == "near_duplicate" and r["scope"] == "cross" and r["jaccard"] >= p.jaccard_threshold
    )
    within = sum(
        1
        for r in rows
        if r["kind"] == "near_duplicate" and r["scope"] == "train" and r["jaccard"] >= p.jaccard_threshold
    )
    pairs_cross = n_t * n_h
    pairs_within = n_t * (n_t - 1) // 2
    rate_c = cross / pairs_cross if pairs_cross else 0.0
    rate_w = within / pairs_within if pairs_within else 0.0
    null_rate = max(rate_w, 1.0 / (pairs_within + 1)) if pairs_within else 1.0
    pval = (
        float(stats.binomtest(cross, pairs_cross, min(null_rate, 1.0), alternative="greater").pvalue)
        if pairs_cross
        else 1.0
    )
    return [
        {
            "check": "near duplicates",
            "statistic": f"pairs with Jaccard >= {p.jaccard_threshold:g} per possible pair",
            "observed": rate_c,
            "null": rate_w,
            "n_observed": cross,
            "n_null": within,
            "p_value": pval,
            "flagged": bool(cross > 0 and pval <= p.alpha),
            "note": "every cross pair is listed with its evidence; the flag says whether they exceed the within-train rate",
        }
    ]
