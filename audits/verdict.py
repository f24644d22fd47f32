"""The verdict: one line per check (pass / warn / fail, the headline figure against its baseline,
what to do), each with an evidence section a reader can follow (source_ref + marked excerpt).

A check is a function `AuditFacts -> Verdict | None` (None: not applicable to this audit, e.g. no
held-out side) added to `CHECKS` with `@register`; the report, the terminal summary and the
`audit_verdicts` table all come from that list, in its order. To add a check, write one function
here (or in its own module, imported by `audits.run`) and decorate it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import polars as pl
from scipy import stats

from tomforge.audits.artifacts import DESCRIPTIVE_HEURISTICS, HEURISTIC_LABELS
from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.audits.evidence import context_refs, letter, mark_phrase, mark_words, md_escape

STATUSES = ("fail", "warn", "pass")
MAX_EVIDENCE = 8
SIMILAR_KINDS = ("near_duplicate", "contained")  # audit_overlap_pairs kinds: Jaccard, or containment only


@dataclass(frozen=True)
class Verdict:
    check: str  # short name, the first column of the verdict table
    status: str  # pass | warn | fail
    finding: str  # headline figure against its baseline, plain words
    action: str  # what to do ("none" when it passes)
    explain: str = ""  # what the check does and its threshold (the section's first paragraph)
    evidence: list[dict[str, str]] = field(default_factory=list)  # Markdown cells; hashes in the last column
    note: str = ""  # where the rest is (CSV, table)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status {self.status!r} is not one of {STATUSES}")


@dataclass
class AuditFacts:
    """What the checks read: the audit tables, the selected items (with `side`) and the items of
    label conflicts anywhere in the warehouse."""
    tables: dict[str, pl.DataFrame]
    items: pl.DataFrame
    conflict_items: pl.DataFrame
    params: AuditParams
    has_heldout: bool
    scores: pl.DataFrame | None = None  # per-item heuristic hits (`artifacts.heuristic_scores`)
    _refs: dict[tuple[str, str], str] = field(default_factory=dict)

    def ref(self, context_id: str, side: str | None = None) -> str:
        """Where a reader finds a story: a source_ref of one of its items on `side` (any side, or a
        label conflict's item, when None). Looked up per story shown (a few per verdict), not for
        every story of a million items."""
        key = (side or "any", context_id)
        if key not in self._refs:
            cols = ("context_id", "source_ref", "item_id")
            story = pl.col("context_id") == context_id
            frame = self.items.filter(story & (pl.col("side") == side)).select(cols) if side else pl.concat(
                [self.items.filter(story).select(cols), self.conflict_items.filter(story).select(cols)])
            self._refs[key] = context_refs(frame).get(context_id, "?")
        return md_escape(self._refs[key])

    def context_text(self, context_id: str) -> str:
        rows = self.items.filter(pl.col("context_id") == context_id).select("context").head(1)
        return rows.item() if rows.height else ""

    def n_side(self, side: str) -> int:
        return self.items.filter(pl.col("side") == side)["item_id"].n_unique()

    def stories(self, side: str) -> int:
        keys = self.tables["audit_contexts"].filter(pl.col(side))["text_key"]
        return keys.n_unique()

    def repeated_questions(self) -> dict[str, int]:
        """Per side, the items `tomforge clean` removes as repeats of a kept one (reason `duplicate`)."""
        from tomforge.audits.clean import with_kept_repeat

        keyed = with_kept_repeat(self.items.unique(["side", "item_id"], maintain_order=True),
                                 self.tables["audit_contexts"])
        gone = keyed.filter(pl.col("item_id") != pl.col("_keep"))
        return {str(side): int(n) for side, n in gone.group_by("side").len().iter_rows()}

    def cross_pairs(self, *kinds: str) -> pl.DataFrame:
        pairs = self.tables["audit_overlap_pairs"]
        return pairs.filter((pl.col("scope") == "cross") & pl.col("kind").is_in(kinds))

    def train_items_dropped(self, reason: str, policy: CleaningPolicy | None = None) -> int:
        """Train items `tomforge clean` drops for this overlap reason under the (default) policy."""
        from tomforge.audits.clean import _overlap_drops

        pairs = self.tables["audit_overlap_pairs"].filter(pl.col("scope") == "cross")
        drops = _overlap_drops(pairs, self.tables["audit_contexts"], policy or CleaningPolicy())
        ids = drops.filter(pl.col("reason") == reason)["context_id"]
        train = self.items.filter(pl.col("side") == "train")
        return train.filter(pl.col("context_id").is_in(ids.implode()))["item_id"].n_unique()


Check = Callable[[AuditFacts], "Verdict | None"]
CHECKS: list[Check] = []


def register(check: Check) -> Check:
    """Add a check to the verdict table (in definition order)."""
    CHECKS.append(check)
    return check


def verdicts(facts: AuditFacts) -> list[Verdict]:
    found = [v for v in (check(facts) for check in CHECKS) if v is not None]
    if "source" in facts.items.columns and facts.items["source"].n_unique() > 1:  # a mixed-source audit: say which source a failing check is about
        found = [_with_sources(v, facts) for v in found]
    return found


def _implicated(facts: AuditFacts, check: str) -> dict[str, set[str]] | None:
    """Per side, the context ids a failing check is about (None for checks not traced to items)."""
    kinds = {"exact copies": ("exact",), "near duplicates": SIMILAR_KINDS, "structural twins": ("structural",)}
    if check in kinds or check.startswith("partial copies"):
        pairs = facts.cross_pairs(*kinds.get(check, ("ngram",)))
        if check == "structural twins":
            pairs = pairs.filter(pl.col("p_value") <= facts.params.ngram_alpha)
        return {"heldout": set(pairs["b_context_id"].to_list()), "train": set(pairs["a_context_id"].to_list())}
    return None


def _with_sources(verdict: Verdict, facts: AuditFacts) -> Verdict:
    """A failing overlap or label check, with the sources of the items it is about, per side."""
    if verdict.status != "fail":
        return verdict
    items = facts.items.select("item_id", "context_id", "side", "source").unique(["item_id", "side"])
    if verdict.check == "label conflicts":
        conflicts = facts.tables["audit_label_conflicts"]
        ids = {i for group in conflicts["item_ids"].to_list() for i in group} if conflicts.height else set()
        items = items.filter(pl.col("item_id").is_in(list(ids)))
    else:
        contexts = _implicated(facts, verdict.check)
        if contexts is None:
            return verdict
        items = pl.concat([items.filter((pl.col("side") == side) & pl.col("context_id").is_in(list(ids)))
                           for side, ids in contexts.items()])
    parts = []
    for side in ("heldout", "train"):
        counts = items.filter(pl.col("side") == side).group_by("source").len().sort(["len", "source"],
                                                                                    descending=[True, False])
        if counts.height:
            parts.append(f"{_side_name(side)} " + ", ".join(f"{s} {n}" for s, n in counts.iter_rows()))
    if not parts:
        return verdict
    return replace(verdict, finding=f"{verdict.finding} [items by source: {'; '.join(parts)}]")


def verdict_frame(items: list[Verdict]) -> pl.DataFrame:
    return pl.DataFrame([{"check": v.check, "status": v.status, "finding": v.finding, "action": v.action} for v in items],
                        schema={"check": pl.Utf8, "status": pl.Utf8, "finding": pl.Utf8, "action": pl.Utf8})


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _spans(pair: dict) -> list[dict]:
    return json.loads(pair["spans"]) if pair.get("spans") else []


def _pair_evidence(facts: AuditFacts, pair: dict) -> dict[str, str]:
    """One overlap pair as a row: both stories by source_ref, the held-out excerpt with the longest
    matched span marked, the figures, the hashes last."""
    spans = _spans(pair)
    text = facts.context_text(pair["b_context_id"])
    excerpt = mark_words(text, spans[0]["b_start"], spans[0]["b_end"]) if spans else mark_phrase(text, "")
    return {"held-out story": facts.ref(pair["b_context_id"], "heldout"), "train story": facts.ref(pair["a_context_id"], "train"),
            "held-out excerpt (matched words in bold)": excerpt,
            "match": f"Jaccard {pair['jaccard']:.2f}, containment {pair['containment_b']:.2f}"
                     + (f", longest run {spans[0]['words']} words" if spans else ""),
            "context ids (held-out / train)": f"`{pair['b_context_id'][:12]}` / `{pair['a_context_id'][:12]}`"}


def _more(n: int, where: str) -> str:
    """Where the rows beyond the evidence shown are."""
    return f"{n - MAX_EVIDENCE} more: {where}." if n > MAX_EVIDENCE else ""


def _drop_action(n: int, facts: AuditFacts) -> str:
    n_train = facts.n_side("train")
    if n and n == n_train:
        return f"`tomforge clean` drops all {n} train items: split by story, not by question"
    return f"`tomforge clean` drops {n} train items" if n else "review the pairs"


@register
def exact_copies(facts: AuditFacts) -> Verdict | None:
    if not facts.has_heldout:
        return None
    pairs = facts.cross_pairs("exact").sort("b_context_id")
    n, total = pairs.select("b_text_key").n_unique(), facts.stories("heldout")
    return Verdict(
        "exact copies", "fail" if n else "pass",
        f"{n} of {total} held-out stories appear verbatim in train",
        _drop_action(facts.train_items_dropped("overlap_exact"), facts) if n else "none",
        "A held-out story whose normalized text (lower case, punctuation removed) is also a train story: "
        "every question on it is answered from memory.",
        [_pair_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
        _more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `exact`, scope `cross`)"))


@register
def near_duplicates(facts: AuditFacts) -> Verdict | None:
    if not facts.has_heldout:
        return None
    p = facts.params
    pairs = facts.cross_pairs(*SIMILAR_KINDS).sort("jaccard", "b_context_id", descending=[True, False])
    n = pairs.select("b_text_key").n_unique()
    return Verdict(
        "near duplicates", "fail" if n else "pass",
        f"{n} of {facts.stories('heldout')} held-out stories have a train story with Jaccard >= {p.jaccard_threshold:g} "
        f"or containment >= {p.containment_threshold:g} (0 expected)",
        _drop_action(facts.train_items_dropped("overlap_near_duplicate")
                     + facts.train_items_dropped("overlap_contained"), facts) if n else "none",
        f"MinHash LSH candidates ({p.shingle_n}-word shingles) verified with exact Jaccard and containment; "
        f"a pair counts at Jaccard >= {p.jaccard_threshold:g} or when one story holds >= {p.containment_threshold:g} of "
        "the other's shingles.",
        [_pair_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
        _more(pairs.height, "`tables/audit_overlap_pairs.csv` (kinds `near_duplicate` and `contained`, scope `cross`)"))


@register
def partial_copies(facts: AuditFacts) -> Verdict | None:
    if not facts.has_heldout:
        return None
    p = facts.params
    cov = facts.tables["audit_ngram_overlap"].filter(pl.col("side") == "heldout")
    n_tested, n_flagged = cov.height, int(cov["flagged"].sum()) if cov.height else 0
    if n_tested == 0:
        return Verdict(f"partial copies ({p.ngram_n}-grams)", "pass", "nothing left to test: every held-out story is also a "
                       "train story (see exact copies)", "none", "Exact long n-gram coverage of held-out stories not in train.")
    pairs = facts.cross_pairs("ngram").sort("shared_ngrams", "b_context_id", descending=[True, False])
    longest = max((s["words"] for r in pairs.iter_rows(named=True) for s in _spans(r)), default=0)
    bound = int(stats.binom.ppf(0.999, n_tested, p.ngram_alpha)) if n_tested else 0
    passage = 2 * p.ngram_n
    fail = n_flagged > bound or longest >= passage
    return Verdict(
        f"partial copies ({p.ngram_n}-grams)", "fail" if fail else "pass",
        f"{n_flagged} of {n_tested} held-out stories share unusually many {p.ngram_n}-grams with train "
        f"({p.ngram_alpha * n_tested:.1f} expected by chance, at most {bound}); longest copied run {longest} words "
        f"(fails at {passage})",
        _drop_action(facts.train_items_dropped("overlap_ngram"), facts) if fail else "none",
        f"Exact {p.ngram_n}-gram coverage of each held-out story by train, tested against how much independent train "
        f"stories share with each other (conformal p <= {p.ngram_alpha:g}: about {p.ngram_alpha:.0%} of clean stories are "
        f"flagged by chance). The check fails when more are flagged than chance allows (99.9% bound) or when a flagged "
        f"story shares a run of {passage}+ words with one train story.",
        [_pair_evidence(facts, r) for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
        _more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `ngram`)"))


@register
def structural_twins(facts: AuditFacts) -> Verdict | None:
    if not facts.has_heldout:
        return None
    calib = facts.tables["audit_null_calibration"].filter(pl.col("check") == "structural duplicates")
    if calib.height == 0:
        return None
    c = calib.row(0, named=True)
    if not c["n_observed"]:
        return Verdict("structural twins", "pass", "nothing left to test: every held-out story is also a train story "
                       "(see exact copies)", "none", "Same-skeleton stories across sides.")
    pairs = facts.cross_pairs("structural").filter(pl.col("p_value") <= facts.params.ngram_alpha).sort("b_context_id")
    n = pairs.select("b_text_key").n_unique()
    fail = bool(c["flagged"])
    return Verdict(
        "structural twins", "fail" if fail else ("warn" if n else "pass"),
        f"{n} of {c['n_observed']} held-out stories have a train story of the same skeleton (names and things renamed); "
        f"baseline: {_pct(c['null'])} of train stories have one among other train stories",
        ("`tomforge clean --drop-structural` drops "
         f"{facts.train_items_dropped('overlap_structural', CleaningPolicy(drop_structural=True))} train items") if n else "none",
        "Stories reduced to their skeleton (agents, places and objects replaced by role tokens); a held-out story whose "
        "skeleton is a train story's is the same plot retold.",
        [{"held-out story": facts.ref(r["b_context_id"], "heldout"), "train story": facts.ref(r["a_context_id"], "train"),
          "held-out excerpt": mark_phrase(facts.context_text(r["b_context_id"]), ""),
          "match": f"same skeleton, word Jaccard {r['jaccard']:.2f}, p = {r['p_value']:.2g}",
          "context ids (held-out / train)": f"`{r['b_context_id'][:12]}` / `{r['a_context_id'][:12]}`"}
         for r in pairs.head(MAX_EVIDENCE).iter_rows(named=True)],
        _more(pairs.height, "`tables/audit_overlap_pairs.csv` (kind `structural`)"))


@register
def within_side_duplicates(facts: AuditFacts) -> Verdict | None:
    p = facts.params
    pairs = facts.tables["audit_overlap_pairs"].filter(pl.col("scope").is_in(["train", "heldout"])
                                                      & pl.col("kind").is_in(SIMILAR_KINDS))
    pairs = pairs.with_columns((pl.col("kind") == "near_duplicate").alias("near"))
    parts = []
    for side in ("train", "heldout") if facts.has_heldout else ("train",):
        part = pairs.filter(pl.col("scope") == side)
        near, contained = int(part["near"].sum()), int((~part["near"]).sum())
        parts.append(f"{_side_name(side)} {near} near-duplicate + {contained} contained pairs")
    repeats = facts.repeated_questions()
    sides = ("train", "heldout") if facts.has_heldout else ("train",)
    parts.insert(0, " + ".join(f"{_side_name(side)} {repeats.get(side, 0)}" for side in sides)
                 + " repeated questions (same question and answer on one story or its near duplicates)")
    n_repeats = sum(repeats.values())
    rows = []
    for r in pairs.sort("scope", "jaccard", descending=[True, True]).head(MAX_EVIDENCE).iter_rows(named=True):
        spans = _spans(r)
        text = facts.context_text(r["b_context_id"])
        rows.append({"side": _side_name(r["scope"]), "story": facts.ref(r["b_context_id"], r["scope"]),
                     "duplicate of": facts.ref(r["a_context_id"], r["scope"]),
                     "excerpt (matched words in bold)": mark_words(text, spans[0]["b_start"], spans[0]["b_end"]) if spans
                     else mark_phrase(text, ""),
                     "match": ("near duplicate" if r["near"] else "contained") + f": Jaccard {r['jaccard']:.2f}, "
                              f"containment {max(r['containment_a'], r['containment_b']):.2f}",
                     "context ids": f"`{r['b_context_id'][:12]}` / `{r['a_context_id'][:12]}`"})
    return Verdict(
        "within-side duplicates", "warn" if pairs.height or n_repeats else "pass",
        "; ".join([parts[0], ", ".join(parts[1:]) + f" (Jaccard or containment >= {p.jaccard_threshold:g}; not leaks)"]),
        f"`tomforge clean` removes {n_repeats} items, keeping one of each repeated question (reason `duplicate`)"
        if n_repeats else "none",
        "Near-identical stories inside one side: no train x held-out leak, but they weigh a story twice in training "
        f"or scoring. Same thresholds as the near-duplicate check (Jaccard >= {p.jaccard_threshold:g}, containment >= "
        f"{p.containment_threshold:g}).",
        rows, _more(pairs.height, "`tables/audit_overlap_pairs.csv` (scope `train` or `heldout`)"))


@register
def label_conflicts(facts: AuditFacts) -> Verdict | None:
    conflicts = facts.tables["audit_label_conflicts"]
    selected = set(facts.items["item_id"].to_list())
    ids = [i for ids in conflicts["item_ids"].to_list() for i in ids] if conflicts.height else []
    in_selection = len({i for i in ids if i in selected})
    by_id = {r["item_id"]: r for r in facts.conflict_items.iter_rows(named=True)}
    rows = []
    for r in conflicts.head(MAX_EVIDENCE).iter_rows(named=True):
        members = [by_id[i] for i in r["item_ids"] if i in by_id]
        rows.append({"items": ", ".join(md_escape(m["source_ref"] or "?") for m in members),
                     "question": md_escape(members[0]["question"] if members else r["question_norm"]),
                     "gold answers": " / ".join(f"**{md_escape(m['answer'] or '')}**" for m in members),
                     "story": facts.ref(r["context_id"]), "context id": f"`{r['context_id'][:12]}`"})
    n = conflicts.height
    return Verdict(
        "label conflicts", "fail" if in_selection else ("warn" if n else "pass"),
        f"{n} question{'s' if n != 1 else ''} on the same story with different gold answers ({len(set(ids))} items, {in_selection} selected); "
        "expected 0",
        f"`tomforge clean` quarantines {in_selection} items; check which answer is right" if in_selection
        else ("outside the audited selections: check the source" if n else "none"),
        "The same question (normalized) on the same story with different gold answers, anywhere in the warehouse: at "
        "most one of them can be rewarded correctly.", rows,
        _more(n, "`tables/audit_label_conflicts.csv`"))


def _label(kind: str, label: str) -> str:
    """A feature-association label in words: gold letter for positions, the answer otherwise."""
    return f"gold {letter(int(label))}" if kind.startswith("gold_position") and label.isdigit() else f"answer '{label}'"


def _side_name(selection: str) -> str:
    return {"heldout": "held-out"}.get(selection, selection)


@register
def gold_position(facts: AuditFacts) -> Verdict | None:
    pos = facts.tables["audit_positions"]
    if pos.height == 0:
        return None
    flagged = pos.filter(pl.col("flagged") & (pl.col("belief_order") == "all") & (pl.col("z") > 0))
    top = flagged.sort("z", descending=True).unique(["selection"], keep="first", maintain_order=True).sort("selection", descending=True)
    parts = [f"{_side_name(r['selection'])}: gold at {letter(r['position'])} on {_pct(r['count'] / r['n'])} of {r['n']} items "
             f"({r['n_options']} options), uniform {_pct(1 / r['n_options'])}" for r in top.iter_rows(named=True)]
    any_flag = pos["flagged"].any()
    rows = []
    for r in top.iter_rows(named=True):
        side = facts.items.filter((pl.col("side") == r["selection"]) & (pl.col("answer_index") == r["position"])
                                  & (pl.col("options").list.len() == r["n_options"])).sort("item_id").head(3)
        for it in side.iter_rows(named=True):
            options = ", ".join(f"**{letter(i)}. {md_escape(o)}**" if i == r["position"] else f"{letter(i)}. {md_escape(o)}"
                                for i, o in enumerate(it["options"]))
            rows.append({"side": _side_name(r["selection"]), "item": md_escape(it["source_ref"] or "?"),
                         "question": md_escape(it["question"]), "options (gold in bold)": options, "item id": f"`{it['item_id'][:12]}`"})
    return Verdict(
        "gold position", "fail" if any_flag else "pass",
        "; ".join(parts) if parts else ("a position departs from uniform within one belief order" if any_flag
                                        else "gold positions consistent with uniform"),
        "`tomforge clean` re-orders options to balanced positions" if any_flag else "none",
        "Position (letter) of the gold option against uniform, chi-square per side, order and number of options "
        f"(Bonferroni, alpha {facts.params.alpha:g}). A model can learn the letter instead of the answer.", rows)


@register
def answer_prior(facts: AuditFacts) -> Verdict | None:
    prior = facts.tables["audit_answer_prior"].filter(pl.col("flagged") & (pl.col("belief_order") == "all"))
    prior = prior.sort("share", descending=True).unique(["selection", "answer_format"], keep="first", maintain_order=True)
    any_flag = facts.tables["audit_answer_prior"]["flagged"].any()
    parts = [f"{_side_name(r['selection'])} {r['answer_format']}: '{r['answer']}' is {_pct(r['share'])} of {r['n']} answers, "
             f"uniform {_pct(1 / r['n_classes'])}" for r in prior.sort("selection", descending=True).iter_rows(named=True)]
    return Verdict(
        "gold-answer prior", "fail" if any_flag else "pass",
        "; ".join(parts) if parts else ("an answer is over-represented within one belief order" if any_flag
                                        else "answers consistent with uniform (yes/no and small answer sets)"),
        "re-generate or re-weight so answers are balanced" if any_flag else "none",
        "Share of the most frequent gold answer per format against uniform over the answers seen (small answer spaces).")


@register
def feature_label(facts: AuditFacts) -> Verdict | None:
    assoc = facts.tables["audit_feature_assoc"].filter(pl.col("flagged"))
    n = assoc.height
    top = assoc.filter(pl.col("z") > 0).sort("z", descending=True).head(MAX_EVIDENCE)
    rows = [{"side": _side_name(r["selection"]), "order": r["belief_order"], "feature": md_escape(r["feature"]),
             "predicts": md_escape(_label(r["label_kind"], r["label"])),
             "rate with feature vs prior": f"{r['n_label_and_feature']}/{r['n_feature']} = {_pct(r['p_hat'])} vs {_pct(r['p0'])}",
             "z": f"{r['z']:.1f}"} for r in top.iter_rows(named=True)]
    best = top.row(0, named=True) if top.height else None
    return Verdict(
        "feature-label cues", "fail" if n else "pass",
        (f"{n} features shift the gold away from its prior; strongest: '{best['feature']}' -> "
         f"{_label(best['label_kind'], best['label'])} on {_pct(best['p_hat'])} of its items vs {_pct(best['p0'])} overall") if best
        else (f"{n} associations (all negative)" if n else "no word or structural feature predicts the gold beyond its prior"),
        "re-generate with controls (vary templates so no word or structure gives the answer)" if n else "none",
        "Gardner et al. (2021): for each word of the question (`q:`), word of the story (`s:`) and structural feature, "
        f"is the gold label more (or less) frequent with it than without? Exact binomial test, Bonferroni alpha {facts.params.alpha:g}.",
        rows, _more(n, "`tables/audit_feature_assoc.csv` (flagged rows)"))


@register
def partial_input(facts: AuditFacts) -> Verdict | None:
    table = facts.tables["audit_partial_input"]
    if table.height == 0:
        return None
    flagged = table.filter(pl.col("flagged")).with_columns((pl.col("accuracy") - pl.col("majority")).alias("gain"))
    best = flagged.sort("gain", descending=True).row(0, named=True) if flagged.height else None
    names = {"question_only": "question alone", "options_only": "options alone", "story_without_question": "story alone"}
    rows = [{"input": names.get(r["input"], r["input"]), "format": r["answer_format"], "evaluated on": r["evaluation"],
             "accuracy [99% CI]": f"{_pct(r['accuracy'])} [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]",
             "majority": _pct(r["majority"]), "chance": _pct(r["chance"]), "flagged": "yes" if r["flagged"] else "no"}
            for r in table.iter_rows(named=True)]
    return Verdict(
        "partial-input baselines", "fail" if best else "pass",
        (f"{names.get(best['input'], best['input'])}: gold predicted on {_pct(best['accuracy'])} of {best['n_eval']} items "
         f"({best['evaluation']}), majority class {_pct(best['majority'])}, chance {_pct(best['chance'])}") if best
        else "no partial input beats the majority class and chance",
        "re-generate with controls: the answer is readable without the full question" if best else "none",
        "A classifier (hashed 1-2-grams) trained on part of the input only; flagged when its cluster-bootstrap CI is above "
        "both the majority class and chance.", rows)


def _heuristics(facts: AuditFacts) -> pl.DataFrame:
    """Pooled heuristic curves plus per-format curves where a side mixes formats."""
    pooled = facts.tables["audit_heuristics"].with_columns(pl.lit(None, pl.Utf8).alias("answer_format"))
    by_format = facts.tables.get("audit_heuristics_by_format")
    if by_format is None or by_format.height == 0:
        return pooled
    k = by_format.group_by("selection").agg(pl.col("answer_format").n_unique().alias("k"))
    by_format = by_format.join(k.filter(pl.col("k") > 1), on="selection", how="semi")
    return pl.concat([pooled.select(by_format.columns), by_format])


def _rule_examples(facts: AuditFacts, selection: str, rule: str) -> list[dict[str, str]]:
    """Items of one side the rule gets right, with the gold marked where the rule finds it."""
    if facts.scores is None:
        return []
    hits = facts.scores.filter((pl.col("selection") == selection) & (pl.col("heuristic") == rule) & pl.col("hit"))
    ids = hits.sort("item_id")["item_id"].unique(maintain_order=True).head(3)
    items = facts.items.filter((pl.col("side") == selection) & pl.col("item_id").is_in(ids.implode())).sort("item_id")
    return [{"side": _side_name(selection), "item": md_escape(r["source_ref"] or "?"), "question": md_escape(r["question"]),
             "story (gold where the rule finds it, in bold)": mark_phrase(r["context"], r["answer"] or "", last=rule == "last"),
             "gold": md_escape(r["answer"] or ""), "item id": f"`{r['item_id'][:12]}`"} for r in items.iter_rows(named=True)]


@register
def heuristic_rules(facts: AuditFacts) -> Verdict | None:
    heur = _heuristics(facts)
    if heur.height == 0:
        return None
    tested = heur.filter(~pl.col("heuristic").is_in(DESCRIPTIVE_HEURISTICS) & (pl.col("belief_order") == "all"))
    above = tested.filter(pl.col("above_chance")).with_columns((pl.col("accuracy") - pl.col("chance")).alias("gain"))
    rank = pl.col("heuristic").replace_strict({"first_container": 0}, default=1, return_dtype=pl.Int64)
    top = (above.sort([pl.col("gain"), rank], descending=[True, False]).unique(["selection"], keep="first", maintain_order=True)
           .sort("selection", descending=True))
    parts = [f"{_side_name(r['selection'])}: {HEURISTIC_LABELS[r['heuristic']]} rule right on {_pct(r['accuracy'])} of "
             f"{r['n']} items" + (f" ({r['answer_format']})" if r["answer_format"] else "") + f", chance {_pct(r['chance'])}"
             for r in top.iter_rows(named=True)]
    rows = [row for r in top.iter_rows(named=True) for row in _rule_examples(facts, r["selection"], r["heuristic"])]
    return Verdict(
        "heuristic rules", "fail" if parts else "pass",
        "; ".join(parts) if parts else "no first / last / most-mentioned or first-container rule beats chance",
        "re-generate with controls (balance which mention is the answer)" if parts else "none",
        "Answer without reasoning: the first-, last- or most-mentioned candidate, or the asked object's first container, "
        f"against what random options score (one-sided binomial test, Bonferroni alpha {facts.params.alpha:g}).", rows)


@register
def inverted_difficulty(facts: AuditFacts) -> Verdict | None:
    heur = _heuristics(facts)
    if heur.height == 0:
        return None
    flagged = heur.filter(pl.col("inverted_difficulty") & (pl.col("belief_order") == "all")).sort("trend_z", descending=True)
    flagged = flagged.unique(["selection", "heuristic"], keep="first", maintain_order=True)
    rows: list[dict[str, str]] = []
    described: dict[tuple, list[str]] = {}  # rules with the same curve on one side share a line
    for r in flagged.iter_rows(named=True):
        curve = heur.filter((pl.col("selection") == r["selection"]) & (pl.col("heuristic") == r["heuristic"])
                            & pl.col("answer_format").eq_missing(r["answer_format"]) & pl.col("belief_order").str.contains(r"^\d+$"))
        curve = curve.with_columns(pl.col("belief_order").cast(pl.Int64)).sort("belief_order")
        first, last = curve.row(0, named=True), curve.row(-1, named=True)
        key = (r["selection"], r["answer_format"], first["belief_order"], first["accuracy"], last["belief_order"], last["accuracy"],
               r["high_orders_accuracy"], r["high_orders_chance"])
        name = HEURISTIC_LABELS[r["heuristic"]] + (f" ({r['answer_format']})" if r["answer_format"] else "")
        if key in described:
            described[key].append(name)
            continue
        described[key] = [name]
        rows += [{"side": _side_name(r["selection"]), "rule": name, "order": str(c["belief_order"]), "items": str(c["n"]),
                  "accuracy": _pct(c["accuracy"]), "chance": _pct(c["chance"])} for c in curve.iter_rows(named=True)]
    parts = [f"{_side_name(side)}: {' = '.join(names)} rule right on {_pct(a0)} at order {o0}, {_pct(a1)} at order {o1} "
             f"(higher orders {_pct(high)}, chance {_pct(chance)})"
             for (side, _, o0, a0, o1, a1, high, chance), names in described.items()]
    return Verdict(
        "inverted difficulty", "fail" if parts else "pass",
        "; ".join(parts[:2]) + (f"; {len(parts) - 2} more" if len(parts) > 2 else "") if parts
        else "no rule gets easier with belief order while beating chance",
        "deeper questions are easier to game: re-generate with controls before reading accuracy by order" if parts else "none",
        "A rule whose accuracy rises with belief order (Cochran-Armitage trend test) and beats chance on the higher half "
        "of the orders (one-sided binomial test), both Bonferroni-corrected: a rule below chance that only gets less "
        "wrong is not reported.", rows)


