"""The overlap checks: train x held-out leaks (exact copies, near duplicates, partial copies by long
n-grams, structural twins) and duplicates within one side. All read the overlap phase's tables
(`audits.overlap`: `audit_overlap_pairs`, `audit_contexts`, `audit_ngram_overlap`,
`audit_null_calibration`); a mixed-source FAIL names the sources of the paired stories' items."""

from __future__ import annotations

import json

import polars as pl
from scipy import stats

from tomforge.audits.check import AuditCheck, FindingInputs, Findings, register
from tomforge.audits.config import CleaningPolicy
from tomforge.audits.evidence import mark_chars, mark_phrase, mark_words
from tomforge.audits.verdict import MAX_EVIDENCE, SIMILAR_KINDS, AuditFacts, Verdict, more, pct, side_name


def _cross_findings(out: Findings, data: FindingInputs, *kinds: str) -> None:
    """One finding per train x held-out pair of these kinds, in the pairs table's order."""
    p = data.params
    pairs = data.overlap.pairs
    for r in pairs.filter((pl.col("scope") == "cross") & pl.col("kind").is_in(kinds)).iter_rows(named=True):
        kind = r["kind"]
        out.add(
            f"overlap:{kind}",
            "leak",
            "train x heldout",
            f"held-out context {r['b_context_id'][:12]} ~ train {r['a_context_id'][:12]}: Jaccard {r['jaccard']:.2f}, "
            f"containment {r['containment_b']:.2f}"
            + (f", {r['shared_ngrams']} shared {p.ngram_n}-grams" if r["shared_ngrams"] else ""),
            {
                k: r[k]
                for k in (
                    "a_context_id",
                    "b_context_id",
                    "est_jaccard",
                    "jaccard",
                    "containment_a",
                    "containment_b",
                    "shared_ngrams",
                    "p_value",
                )
            }
            | {"spans": json.loads(r["spans"])},
            f"Jaccard >= {p.jaccard_threshold} or containment >= {p.containment_threshold}"
            if kind != "ngram"
            else f"conformal p <= {p.ngram_alpha} vs within-train null",
        )


def _cross_items(items: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """The items of the paired stories: held-out side by `b_context_id`, train side by `a_context_id`."""
    contexts = {"heldout": set(pairs["b_context_id"].to_list()), "train": set(pairs["a_context_id"].to_list())}
    return pl.concat(
        [
            items.filter((pl.col("side") == side) & pl.col("context_id").is_in(list(ids)))
            for side, ids in contexts.items()
        ]
    )


def _spans(pair: dict) -> list[dict]:
    return json.loads(pair["spans"]) if pair.get("spans") else []


def _pair_evidence(facts: AuditFacts, pair: dict) -> dict[str, str]:
    """One overlap pair as a row: both stories by source_ref, the held-out excerpt with the longest
    matched span marked, the figures, the hashes last."""
    spans = _spans(pair)
    text = facts.context_text(pair["b_context_id"])
    excerpt = mark_words(text, spans[0]["b_start"], spans[0]["b_end"]) if spans else mark_phrase(text, "")
    return {
        "held-out story": facts.ref(pair["b_context_id"], "heldout"),
        "train story": facts.ref(pair["a_context_id"], "train"),
        "held-out excerpt (matched words in bold)": excerpt,
        "match": f"Jaccard {pair['jaccard']:.2f}, containment {pair['containment_b']:.2f}"
        + (f", longest run {spans[0]['words']} words" if spans else ""),
        "context ids (held-out / train)": f"`{pair['b_context_id'][:12]}` / `{pair['a_context_id'][:12]}`",
    }


def _drop_action(n: int, facts: AuditFacts) -> str:
    n_train = facts.n_side("train")
    if n and n == n_train:
        return f"`tomforge clean` drops all {n} train items: split by story, not by question"
    return f"`tomforge clean` drops {n} train items" if n else "review the pairs"


@register
class ExactCopies(AuditCheck):
    name = "exact copies"
    emits = ("overlap:exact",)
    reads = ("audit_overlap_pairs", "audit_contexts")
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        _cross_findings(out, data, "exact")

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        return _cross_items(items, facts.cross_pairs("exact"))

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        if not facts.has_heldout:
            return None
        pairs = facts.cross_pairs("exact").sort("b_context_id")
        n, total = pairs.select("b_text_key").n_unique(), facts.stories("heldout")
        return Verdict(
            self.name,
            "fail" if n else "pass",
            f"{n} of {total} held-out stories appear verbatim in train",
            _drop_action(facts.train_items_dropped("overlap_exact"), facts) if n else "none",
            "A held-out story whose normalized text (lower case, punctuation removed) is also a train story: "
            "every question on it is answered from memory.",
            [_pair_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
            more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `exact`, scope `cross`)"),
        )


@register
class NearDuplicates(AuditCheck):
    name = "near duplicates"
    emits = ("overlap:near_duplicate", "overlap:contained")
    reads = ("audit_overlap_pairs", "audit_contexts")
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        _cross_findings(out, data, *SIMILAR_KINDS)

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        return _cross_items(items, facts.cross_pairs(*SIMILAR_KINDS))

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        if not facts.has_heldout:
            return None
        p = facts.params
        pairs = facts.cross_pairs(*SIMILAR_KINDS).sort("jaccard", "b_context_id", descending=[True, False])
        n = pairs.select("b_text_key").n_unique()
        return Verdict(
            self.name,
            "fail" if n else "pass",
            f"{n} of {facts.stories('heldout')} held-out stories have a train story with Jaccard >= {p.jaccard_threshold:g} "
            f"or containment >= {p.containment_threshold:g} (0 expected)",
            _drop_action(
                facts.train_items_dropped("overlap_near_duplicate") + facts.train_items_dropped("overlap_contained"),
                facts,
            )
            if n
            else "none",
            f"MinHash LSH candidates ({p.shingle_n}-word shingles) verified with exact Jaccard and containment; "
            f"a pair counts at Jaccard >= {p.jaccard_threshold:g} or when one story holds >= {p.containment_threshold:g} of "
            "the other's shingles.",
            [_pair_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
            more(
                pairs.height, "`tables/audit_overlap_pairs.csv` (kinds `near_duplicate` and `contained`, scope `cross`)"
            ),
        )


def _sentence_evidence(facts: AuditFacts, pair: dict) -> dict[str, str]:
    """A `sentences` pair as a row: both stories, the held-out excerpt with its longest matched
    sentence marked, the train excerpt at that sentence's place there, the figures."""
    spans = _spans(pair)
    text = facts.context_text(pair["b_context_id"])
    train = facts.context_text(pair["a_context_id"])
    first = spans[0] if spans else None
    return {
        "held-out story": facts.ref(pair["b_context_id"], "heldout"),
        "train story": facts.ref(pair["a_context_id"], "train"),
        "held-out excerpt (a matched sentence in bold)": mark_words(text, first["b_start"], first["b_end"])
        if first
        else mark_phrase(text, ""),
        "train excerpt (the same sentence re-formatted)": mark_chars(train, first["a_char_start"], first["a_char_end"])
        if first
        else mark_phrase(train, ""),
        "match": f"{pair['shared_sentences']} sentences, weighted coverage {pair['sentence_coverage']:.2f}, "
        f"Jaccard {pair['jaccard']:.2f}",
        "context ids (held-out / train)": f"`{pair['b_context_id'][:12]}` / `{pair['a_context_id'][:12]}`",
    }


@register
class ReformattedCopies(AuditCheck):
    """Held-out stories whose sentences a train story holds, in any order and form: numbering
    dropped, HTML or a chat template around it, lines swapped or dropped, names changed
    (`audits.sentence_match`, the scan's core)."""

    name = "re-formatted copies"
    emits = ("overlap:sentences",)
    reads = ("audit_overlap_pairs", "audit_contexts")
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        p = data.params
        pairs = data.overlap.pairs
        for r in pairs.filter((pl.col("scope") == "cross") & (pl.col("kind") == "sentences")).iter_rows(named=True):
            out.add(
                "overlap:sentences",
                "leak",
                "train x heldout",
                f"held-out context {r['b_context_id'][:12]} ~ train {r['a_context_id'][:12]}: {r['shared_sentences']} "
                f"of its sentences re-formatted in the train story (weighted coverage {r['sentence_coverage']:.2f})",
                {k: r[k] for k in ("a_context_id", "b_context_id", "shared_sentences", "sentence_coverage", "jaccard")}
                | {"spans": json.loads(r["spans"])},
                f"weighted sentence coverage >= {p.sentence_min_coverage} and above the story's null "
                "(its best other held-out story)",
            )

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        return _cross_items(items, facts.cross_pairs("sentences"))

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        if not facts.has_heldout:
            return None
        p = facts.params
        pairs = facts.cross_pairs("sentences").sort("sentence_coverage", "b_context_id", descending=[True, False])
        n = pairs.select("b_text_key").n_unique()
        return Verdict(
            self.name,
            "fail" if n else "pass",
            f"{n} of {facts.stories('heldout')} held-out stories have their sentences in a train story in another form "
            "(numbering, markup, order or names changed; not counted above) (0 expected)",
            _drop_action(facts.train_items_dropped("overlap_sentences"), facts) if n else "none",
            "Each story cut into canonical sentences (numbering, list markers, HTML, chat templates, case and "
            "punctuation removed; each name, however many words, one slot); a held-out story counts when a train "
            f"story holds >= {p.sentence_min_coverage:g} of its sentences weighted by rarity (a sentence in k held-out "
            f"stories weighs 1/k), at least {p.sentence_min_sentences} of them, and more than the best other held-out "
            "story holds (the templates' null); with the story's own names kept, all but one of its sentences suffice "
            "(a dropped line of a short story). Pairs already exact, near-duplicate or contained are not repeated.",
            [_sentence_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
            more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `sentences`, scope `cross`)"),
        )


@register
class PartialCopies(AuditCheck):
    name = "partial copies"
    emits = ("overlap:ngram",)
    reads = ("audit_overlap_pairs", "audit_ngram_overlap", "audit_contexts")
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        _cross_findings(out, data, "ngram")

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        return _cross_items(items, facts.cross_pairs("ngram"))

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        if not facts.has_heldout:
            return None
        p = facts.params
        cov = facts.tables["audit_ngram_overlap"].filter(pl.col("side") == "heldout")
        n_tested, n_flagged = cov.height, int(cov["flagged"].sum()) if cov.height else 0
        if n_tested == 0:
            return Verdict(
                f"{self.name} ({p.ngram_n}-grams)",
                "pass",
                "nothing left to test: every held-out story is also a train story (see exact copies)",
                "none",
                "Exact long n-gram coverage of held-out stories not in train.",
            )
        pairs = facts.cross_pairs("ngram").sort("shared_ngrams", "b_context_id", descending=[True, False])
        longest = max((s["words"] for r in pairs.iter_rows(named=True) for s in _spans(r)), default=0)
        bound = int(stats.binom.ppf(0.999, n_tested, p.ngram_alpha)) if n_tested else 0
        passage = 2 * p.ngram_n
        fail = n_flagged > bound or longest >= passage
        return Verdict(
            f"{self.name} ({p.ngram_n}-grams)",
            "fail" if fail else "pass",
            f"{n_flagged} of {n_tested} held-out stories share unusually many {p.ngram_n}-grams with train "
            f"({p.ngram_alpha * n_tested:.1f} expected by chance, at most {bound}); longest copied run {longest} words "
            f"(fails at {passage})",
            _drop_action(facts.train_items_dropped("overlap_ngram"), facts) if fail else "none",
            f"Exact {p.ngram_n}-gram coverage of each held-out story by train, tested against how much independent train "
            f"stories share with each other (conformal p <= {p.ngram_alpha:g}: about {p.ngram_alpha:.0%} of clean stories are "
            f"flagged by chance). The check fails when more are flagged than chance allows (99.9% bound) or when a flagged "
            f"story shares a run of {passage}+ words with one train story.",
            [_pair_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
            more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `ngram`)"),
        )


@register
class StructuralTwins(AuditCheck):
    name = "structural twins"
    emits = ("overlap:structural",)
    reads = ("audit_overlap_pairs", "audit_null_calibration", "audit_contexts")
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        p = data.params
        pairs = data.overlap.pairs
        for r in pairs.filter(
            (pl.col("scope") == "cross") & (pl.col("kind") == "structural") & (pl.col("p_value") <= p.ngram_alpha)
        ).iter_rows(named=True):
            out.add(
                "overlap:structural",
                "leak",
                "train x heldout",
                f"held-out context {r['b_context_id'][:12]} has the skeleton of train {r['a_context_id'][:12]} "
                f"(Jaccard {r['jaccard']:.2f}; conformal p={r['p_value']:.3g})",
                {k: r[k] for k in ("a_context_id", "b_context_id", "jaccard", "p_value")},
                "rate of same-skeleton twins among train contexts",
            )

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        pairs = facts.cross_pairs("structural").filter(pl.col("p_value") <= facts.params.ngram_alpha)
        return _cross_items(items, pairs)

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        if not facts.has_heldout:
            return None
        calib = facts.tables["audit_null_calibration"].filter(pl.col("check") == "structural duplicates")
        if calib.height == 0:
            return None
        c = calib.row(0, named=True)
        if not c["n_observed"]:
            return Verdict(
                self.name,
                "pass",
                "nothing left to test: every held-out story is also a train story (see exact copies)",
                "none",
                "Same-skeleton stories across sides.",
            )
        pairs = (
            facts.cross_pairs("structural").filter(pl.col("p_value") <= facts.params.ngram_alpha).sort("b_context_id")
        )
        n = pairs.select("b_text_key").n_unique()
        fail = bool(c["flagged"])
        return Verdict(
            self.name,
            "fail" if fail else ("warn" if n else "pass"),
            f"{n} of {c['n_observed']} held-out stories have a train story of the same skeleton (names and things renamed); "
            f"baseline: {pct(c['null'])} of train stories have one among other train stories",
            (
                "`tomforge clean --drop-structural` drops "
                f"{facts.train_items_dropped('overlap_structural', CleaningPolicy(drop_structural=True))} train items"
            )
            if n
            else "none",
            "Stories reduced to their skeleton (agents, places and objects replaced by role tokens); a held-out story whose "
            "skeleton is a train story's is the same plot retold.",
            [
                {
                    "held-out story": facts.ref(r["b_context_id"], "heldout"),
                    "train story": facts.ref(r["a_context_id"], "train"),
                    "held-out excerpt": mark_phrase(facts.context_text(r["b_context_id"]), ""),
                    "match": f"same skeleton, word Jaccard {r['jaccard']:.2f}, p = {r['p_value']:.2g}",
                    "context ids (held-out / train)": f"`{r['b_context_id'][:12]}` / `{r['a_context_id'][:12]}`",
                }
                for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)
            ],
            more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `structural`)"),
        )


@register
class WithinSideDuplicates(AuditCheck):
    name = "within-side duplicates"
    emits = ("duplicate:within_side",)
    reads = ("audit_overlap_pairs", "audit_contexts")

    def findings(self, out: Findings, data: FindingInputs) -> None:
        p = data.params
        pairs = data.overlap.pairs
        for r in pairs.filter(
            pl.col("scope").is_in(["train", "heldout"]) & pl.col("kind").is_in(["near_duplicate", "contained"])
        ).iter_rows(named=True):
            match = r["kind"].replace("_", " ")
            out.add(
                "duplicate:within_side",
                "duplicate",
                r["scope"],
                f"{match} within {r['scope']}: context {r['b_context_id'][:12]} ~ {r['a_context_id'][:12]}: "
                f"Jaccard {r['jaccard']:.2f}, containment {max(r['containment_a'], r['containment_b']):.2f} "
                "(not a train x held-out leak)",
                {k: r[k] for k in ("a_context_id", "b_context_id", "jaccard", "containment_a", "containment_b")},
                f"Jaccard >= {p.jaccard_threshold} or containment >= {p.containment_threshold}",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        p = facts.params
        pairs = facts.tables["audit_overlap_pairs"].filter(
            pl.col("scope").is_in(["train", "heldout"]) & pl.col("kind").is_in(SIMILAR_KINDS)
        )
        pairs = pairs.with_columns((pl.col("kind") == "near_duplicate").alias("near"))
        parts = []
        for side in ("train", "heldout") if facts.has_heldout else ("train",):
            part = pairs.filter(pl.col("scope") == side)
            near, contained = int(part["near"].sum()), int((~part["near"]).sum())
            parts.append(f"{side_name(side)} {near} near-duplicate + {contained} contained pairs")
        repeats = facts.repeated_questions()
        sides = ("train", "heldout") if facts.has_heldout else ("train",)
        parts.insert(
            0,
            " + ".join(f"{side_name(side)} {repeats.get(side, 0)}" for side in sides)
            + " repeated questions (same question and answer on one story or its near duplicates)",
        )
        n_repeats = sum(repeats.values())
        rows = []
        for r in pairs.sort("scope", "jaccard", descending=[True, True]).head(MAX_EVIDENCE).iter_rows(named=True):
            spans = _spans(r)
            text = facts.context_text(r["b_context_id"])
            rows.append(
                {
                    "side": side_name(r["scope"]),
                    "story": facts.ref(r["b_context_id"], r["scope"]),
                    "duplicate of": facts.ref(r["a_context_id"], r["scope"]),
                    "excerpt (matched words in bold)": mark_words(text, spans[0]["b_start"], spans[0]["b_end"])
                    if spans
                    else mark_phrase(text, ""),
                    "match": ("near duplicate" if r["near"] else "contained") + f": Jaccard {r['jaccard']:.2f}, "
                    f"containment {max(r['containment_a'], r['containment_b']):.2f}",
                    "context ids": f"`{r['b_context_id'][:12]}` / `{r['a_context_id'][:12]}`",
                }
            )
        return Verdict(
            self.name,
            "warn" if pairs.height or n_repeats else "pass",
            "; ".join(
                [parts[0], ", ".join(parts[1:]) + f" (Jaccard or containment >= {p.jaccard_threshold:g}; not leaks)"]
            ),
            f"`tomforge clean` removes {n_repeats} items, keeping one of each repeated question (reason `duplicate`)"
            if n_repeats
            else "none",
            "Near-identical stories inside one side: no train x held-out leak, but they weigh a story twice in training "
            f"or scoring. Same thresholds as the near-duplicate check (Jaccard >= {p.jaccard_threshold:g}, containment >= "
            f"{p.containment_threshold:g}).",
            rows,
            more(pairs.height, "`tables/audit_overlap_pairs.csv` (scope `train` or `heldout`)"),
        )
