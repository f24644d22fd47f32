"""The overlap checks' findings, implicated items and verdicts on hand-made audit tables (issue 38: survivors of
mutmut over `audits/checks/overlap.py`).

A small world: held-out stories H1-H4, train stories T1-T4 (T4 a train story no pair names), items on each, and
pairs of every kind planted by hand. The figures each line must show (stories, pairs, items `clean` drops) are
counted by hand from these rows; the excerpts are the evidence module's marks of the words a span names.
"""

from __future__ import annotations

import json

import polars as pl

from tests.check_inputs import check_findings
from tomforge.audits.checks.overlap import (
    ExactCopies,
    NearDuplicates,
    PartialCopies,
    ReformattedCopies,
    StructuralTwins,
    WithinSideDuplicates,
)
from tomforge.audits.config import AuditParams
from tomforge.audits.evidence import mark_chars, mark_phrase, mark_words
from tomforge.audits.verdict import AuditFacts

# thresholds all different, so a line showing one in another's place is seen
P = AuditParams(
    jaccard_threshold=0.75,
    containment_threshold=0.85,
    ngram_n=7,
    ngram_alpha=0.05,
    shingle_n=4,
    sentence_min_coverage=0.65,
    sentence_min_sentences=4,
)
TEXT = {
    "H1": "Anne put the ball in the box. Bob left the room.",
    "H2": "Carl hid the key under the mat. Dana came back.",
    "H3": "Eve moved the apple to the basket.",
    "H4": "Fay sat down.",
    "T1": "Anne put the ball in the box. Bob walked out.",
    "T2": "1. Carl hid the key under the mat.\n2. Dana came back.",
    "T3": "Gus read a book.",
    "T4": "Hal ran home.",
}


def cid(name: str) -> str:
    return name.lower() * 8  # 16 characters: "h1h1h1h1h1h1h1h1"


def contexts() -> pl.DataFrame:
    rows = [
        {"context_id": cid(n), "text_key": f"k{n}", "cluster": f"c{n}", "train": n[0] == "T", "heldout": n[0] == "H"}
        for n in TEXT
    ]
    return pl.DataFrame(rows)


def items() -> pl.DataFrame:
    """Train: T1 two items, T2 one, T3 one, T4 one; held-out: one per story (H2 two, one a repeat)."""
    spec = [
        ("train", "T1", "t1a", "Where is the ball?", "box"),
        ("train", "T1", "t1b", "Where will Anne look?", "box"),
        ("train", "T2", "t2a", "Where is the key?", "mat"),
        ("train", "T3", "t3a", "What did Gus read?", "book"),
        ("train", "T4", "t4a", "Where did Hal run?", "home"),
        ("heldout", "H1", "h1a", "Where is the ball?", "box"),
        ("heldout", "H2", "h2a", "Where is the key?", "mat"),
        ("heldout", "H2", "h2b", "where is the KEY", "mat"),  # the same question again: a repeat
        ("heldout", "H3", "h3a", "Where is the apple?", "basket"),
        ("heldout", "H4", "h4a", "Who sat?", "Fay"),
    ]
    return pl.DataFrame(
        [
            {"side": side, "item_id": i, "context_id": cid(n), "source_ref": f"{n}.json#{i}", "context": TEXT[n]}
            | {"question": q, "answer": a}
            for side, n, i, q, a in spec
        ]
    )


PAIR_SCHEMA = {
    "scope": pl.Utf8,
    "kind": pl.Utf8,
    "a_context_id": pl.Utf8,
    "b_context_id": pl.Utf8,
    "a_text_key": pl.Utf8,
    "b_text_key": pl.Utf8,
    "est_jaccard": pl.Float64,
    "jaccard": pl.Float64,
    "containment_a": pl.Float64,
    "containment_b": pl.Float64,
    "shared_ngrams": pl.Int64,
    "p_value": pl.Float64,
    "spans": pl.Utf8,
    "shared_sentences": pl.Int64,
    "sentence_coverage": pl.Float64,
}


def pair(kind: str, a: str, b: str, scope: str = "cross", **figures) -> dict:
    row = {"scope": scope, "kind": kind, "a_context_id": cid(a), "b_context_id": cid(b)}
    row |= {"a_text_key": f"k{a}", "b_text_key": f"k{b}", "est_jaccard": 0.5, "jaccard": 0.5, "containment_a": 0.5}
    row |= {"containment_b": 0.5, "shared_ngrams": 0, "p_value": None, "spans": "[]"}
    return row | {"shared_sentences": None, "sentence_coverage": None} | figures


def span(b_start: int, b_end: int, words: int, **more) -> str:
    return json.dumps([{"b_start": b_start, "b_end": b_end, "words": words} | more])


def pairs(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=PAIR_SCHEMA)


def facts(
    pair_rows: pl.DataFrame, has_heldout: bool = True, extra: dict | None = None, the_items: pl.DataFrame | None = None
) -> AuditFacts:
    tables = {"audit_overlap_pairs": pair_rows, "audit_contexts": contexts()} | (extra or {})
    the_items = items() if the_items is None else the_items
    return AuditFacts(tables, the_items, the_items.head(0), P, has_heldout)


def findings(check, pair_rows: pl.DataFrame) -> list[dict]:
    return check_findings(check, params=P, pairs=pair_rows)


def ids(frame: pl.DataFrame) -> list[str]:
    return sorted(frame["item_id"].to_list())


# --- exact copies -----------------------------------------------------------------------------------------------

EXACT = pairs(
    pair("exact", "T2", "H2", jaccard=1.0, containment_b=1.0),
    pair("exact", "T1", "H1", jaccard=1.0, containment_b=1.0, spans=span(0, 3, 3)),
    pair("exact", "T3", "H3", scope="train"),  # not across the split: no leak
    pair("near_duplicate", "T3", "H3"),
)


def test_exact_copy_findings() -> None:
    rows = findings(ExactCopies(), EXACT)
    assert [r["message"] for r in rows] == [
        "held-out context h2h2h2h2h2h2 ~ train t2t2t2t2t2t2: Jaccard 1.00, containment 1.00",
        "held-out context h1h1h1h1h1h1 ~ train t1t1t1t1t1t1: Jaccard 1.00, containment 1.00",
    ]
    assert {(r["check"], r["severity"], r["selection"]) for r in rows} == {("overlap:exact", "leak", "train x heldout")}
    assert {r["baseline"] for r in rows} == {"Jaccard >= 0.75 or containment >= 0.85"}
    assert json.loads(rows[1]["evidence"]) == {
        "a_context_id": cid("T1"),
        "b_context_id": cid("H1"),
        "est_jaccard": 0.5,
        "jaccard": 1.0,
        "containment_a": 0.5,
        "containment_b": 1.0,
        "shared_ngrams": 0,
        "p_value": None,
        "spans": [{"b_start": 0, "b_end": 3, "words": 3}],
    }


def test_exact_copies_implicate_both_stories_on_their_sides() -> None:
    assert ids(ExactCopies().implicated(facts(EXACT), items())) == ["h1a", "h2a", "h2b", "t1a", "t1b", "t2a"]


def test_exact_copies_verdict() -> None:
    verdict = ExactCopies().verdict(facts(EXACT))
    assert verdict is not None and verdict.check == "exact copies" and verdict.status == "fail"
    assert verdict.finding == "2 of 4 held-out stories appear verbatim in train"
    assert verdict.action == "`tomforge clean` drops 3 train items"  # t1a, t1b, t2a
    assert verdict.explain.startswith("A held-out story whose normalized text (lower case, punctuation removed)")
    assert verdict.evidence == [
        {
            "held-out story": "H1.json#h1a",
            "train story": "T1.json#t1a (+1 question)",
            "held-out excerpt (matched words in bold)": mark_words(TEXT["H1"], 0, 3),
            "match": "Jaccard 1.00, containment 1.00, longest run 3 words",
            "context ids (held-out / train)": "`h1h1h1h1h1h1` / `t1t1t1t1t1t1`",
        },
        {
            "held-out story": "H2.json#h2a (+1 question)",
            "train story": "T2.json#t2a",
            "held-out excerpt (matched words in bold)": mark_phrase(TEXT["H2"], ""),
            "match": "Jaccard 1.00, containment 1.00",
            "context ids (held-out / train)": "`h2h2h2h2h2h2` / `t2t2t2t2t2t2`",
        },
    ]
    assert mark_words(TEXT["H1"], 0, 3).startswith("**Anne put the**")
    assert verdict.note == ""
    assert ExactCopies().verdict(facts(EXACT, has_heldout=False)) is None


def test_exact_copies_pass_and_drop_every_train_item() -> None:
    passed = ExactCopies().verdict(facts(pairs()))
    assert passed is not None and passed.status == "pass" and passed.action == "none"
    assert passed.finding == "0 of 4 held-out stories appear verbatim in train"
    only_t1 = items().filter((pl.col("side") == "heldout") | (pl.col("context_id") == cid("T1")))
    everything = ExactCopies().verdict(facts(EXACT, the_items=only_t1))
    assert everything is not None
    assert everything.action == "`tomforge clean` drops all 2 train items: split by story, not by question"
    unknown = pairs(pair("exact", "T9", "H1"))  # a train story the contexts table does not know: nothing to drop
    review = ExactCopies().verdict(facts(unknown))
    assert review is not None and review.status == "fail" and review.action == "review the pairs"


def test_exact_copies_show_eight_pairs_and_point_to_the_rest() -> None:
    many = pairs(*[pair("exact", "T1", "H1", b_context_id=f"b{i:015d}", b_text_key=f"b{i}") for i in range(10)])
    verdict = ExactCopies().verdict(facts(many))
    assert verdict is not None and len(verdict.evidence) == 8
    assert verdict.evidence[0]["context ids (held-out / train)"].startswith("`b00000000000`")
    assert verdict.note == "2 more: `tables/audit_overlap_pairs.csv` (kind `exact`, scope `cross`)."


# --- near duplicates --------------------------------------------------------------------------------------------

NEAR = pairs(
    pair("near_duplicate", "T1", "H1", jaccard=0.80, containment_b=0.9, spans=span(4, 7, 3), shared_ngrams=2),
    pair("contained", "T2", "H2", jaccard=0.40, containment_a=0.95, containment_b=0.6),
    pair("contained", "T2", "H3", jaccard=0.90, containment_a=0.5, containment_b=0.5),  # under the drop bounds
    pair("exact", "T3", "H4"),
)


def test_near_duplicate_findings_name_shared_ngrams() -> None:
    rows = findings(NearDuplicates(), NEAR)
    assert [r["message"] for r in rows] == [
        "held-out context h1h1h1h1h1h1 ~ train t1t1t1t1t1t1: Jaccard 0.80, containment 0.90, 2 shared 7-grams",
        "held-out context h2h2h2h2h2h2 ~ train t2t2t2t2t2t2: Jaccard 0.40, containment 0.60",
        "held-out context h3h3h3h3h3h3 ~ train t2t2t2t2t2t2: Jaccard 0.90, containment 0.50",
    ]
    assert [r["check"] for r in rows] == ["overlap:near_duplicate", "overlap:contained", "overlap:contained"]


def test_near_duplicates_implicated_and_verdict() -> None:
    assert ids(NearDuplicates().implicated(facts(NEAR), items())) == ["h1a", "h2a", "h2b", "h3a", "t1a", "t1b", "t2a"]
    verdict = NearDuplicates().verdict(facts(NEAR))
    assert verdict is not None and verdict.check == "near duplicates" and verdict.status == "fail"
    assert verdict.finding == (
        "3 of 4 held-out stories have a train story with Jaccard >= 0.75 or containment >= 0.85 (0 expected)"
    )
    # T1 by Jaccard 0.80 >= 0.8 (near duplicate); T2 by containment_a 0.95 (contained): t1a, t1b, t2a
    assert verdict.action == "`tomforge clean` drops 3 train items"
    assert verdict.explain == (
        "MinHash LSH candidates (4-word shingles) verified with exact Jaccard and containment; a pair counts at "
        "Jaccard >= 0.75 or when one story holds >= 0.85 of the other's shingles."
    )
    assert [r["context ids (held-out / train)"] for r in verdict.evidence] == [
        "`h3h3h3h3h3h3` / `t2t2t2t2t2t2`",  # by Jaccard, highest first
        "`h1h1h1h1h1h1` / `t1t1t1t1t1t1`",
        "`h2h2h2h2h2h2` / `t2t2t2t2t2t2`",
    ]
    assert verdict.evidence[1]["held-out excerpt (matched words in bold)"] == mark_words(TEXT["H1"], 4, 7)
    assert verdict.note == ""
    assert NearDuplicates().verdict(facts(NEAR, has_heldout=False)) is None
    passed = NearDuplicates().verdict(facts(pairs(pair("exact", "T1", "H1"))))
    assert passed is not None and passed.status == "pass" and passed.action == "none"


def test_near_duplicates_ties_by_story_and_the_rest_pointed_to() -> None:
    many = pairs(
        *[pair("near_duplicate", "T1", "H1", b_context_id=f"b{i:015d}", b_text_key=f"b{i}") for i in reversed(range(9))]
    )
    verdict = NearDuplicates().verdict(facts(many))
    assert verdict is not None and verdict.evidence[0]["context ids (held-out / train)"].startswith("`b00000000000`")
    assert verdict.note == (
        "1 more: `tables/audit_overlap_pairs.csv` (kinds `near_duplicate` and `contained`, scope `cross`)."
    )


# --- re-formatted copies ----------------------------------------------------------------------------------------

SENTENCE_SPAN = json.dumps([{"b_start": 0, "b_end": 7, "a_char_start": 3, "a_char_end": 34, "words": 7}])
REFORMATTED = pairs(
    pair("sentences", "T2", "H2", jaccard=0.3, shared_sentences=2, sentence_coverage=0.7, spans=SENTENCE_SPAN),
    pair("sentences", "T1", "H1", jaccard=0.2, shared_sentences=5, sentence_coverage=0.9),
    pair("sentences", "T3", "H3", scope="heldout", shared_sentences=1, sentence_coverage=1.0),
)


def test_reformatted_copy_findings() -> None:
    rows = findings(ReformattedCopies(), REFORMATTED)
    assert [r["message"] for r in rows] == [
        "held-out context h2h2h2h2h2h2 ~ train t2t2t2t2t2t2: 2 of its sentences re-formatted in the train story "
        "(weighted coverage 0.70)",
        "held-out context h1h1h1h1h1h1 ~ train t1t1t1t1t1t1: 5 of its sentences re-formatted in the train story "
        "(weighted coverage 0.90)",
    ]
    assert {(r["check"], r["severity"], r["selection"]) for r in rows} == {
        ("overlap:sentences", "leak", "train x heldout")
    }
    assert rows[0]["baseline"] == (
        "weighted sentence coverage >= 0.65 and above the story's null (its best other held-out story)"
    )
    assert json.loads(rows[0]["evidence"]) == {
        "a_context_id": cid("T2"),
        "b_context_id": cid("H2"),
        "shared_sentences": 2,
        "sentence_coverage": 0.7,
        "jaccard": 0.3,
        "spans": json.loads(SENTENCE_SPAN),
    }


def test_reformatted_copies_implicated_and_verdict() -> None:
    assert ids(ReformattedCopies().implicated(facts(REFORMATTED), items())) == ["h1a", "h2a", "h2b", "t1a", "t1b"] + [
        "t2a"
    ]
    verdict = ReformattedCopies().verdict(facts(REFORMATTED))
    assert verdict is not None and verdict.check == "re-formatted copies" and verdict.status == "fail"
    assert verdict.finding == (
        "2 of 4 held-out stories have their sentences in a train story in another form (numbering, markup, order or "
        "names changed; not counted above) (0 expected)"
    )
    assert verdict.action == "`tomforge clean` drops 3 train items"
    assert "holds >= 0.65 of its sentences weighted by rarity" in verdict.explain
    assert "at least 4 of them" in verdict.explain and verdict.explain.startswith("Each story cut into canonical")
    first, second = verdict.evidence
    assert first == {
        "held-out story": "H1.json#h1a",
        "train story": "T1.json#t1a (+1 question)",
        "held-out excerpt (a matched sentence in bold)": mark_phrase(TEXT["H1"], ""),
        "train excerpt (the same sentence re-formatted)": mark_phrase(TEXT["T1"], ""),
        "match": "5 sentences, weighted coverage 0.90, Jaccard 0.20",
        "context ids (held-out / train)": "`h1h1h1h1h1h1` / `t1t1t1t1t1t1`",
    }
    assert second["held-out excerpt (a matched sentence in bold)"] == mark_words(TEXT["H2"], 0, 7)
    assert second["train excerpt (the same sentence re-formatted)"] == mark_chars(TEXT["T2"], 3, 34)
    assert "**Carl hid the key under the mat.**" in second["train excerpt (the same sentence re-formatted)"]
    assert ReformattedCopies().verdict(facts(REFORMATTED, has_heldout=False)) is None
    passed = ReformattedCopies().verdict(facts(EXACT))
    assert passed is not None and passed.status == "pass" and passed.action == "none"
    many = pairs(
        *[
            pair("sentences", "T1", "H1", b_context_id=f"b{i:015d}", b_text_key=f"b{i}", sentence_coverage=0.8)
            for i in reversed(range(9))
        ]
    )
    listed = ReformattedCopies().verdict(facts(many))
    assert listed is not None and listed.evidence[0]["context ids (held-out / train)"].startswith("`b00000000000`")
    assert listed.note == "1 more: `tables/audit_overlap_pairs.csv` (kind `sentences`, scope `cross`)."


# --- partial copies ---------------------------------------------------------------------------------------------


def coverage(flags: list[bool], side: str = "heldout") -> pl.DataFrame:
    return pl.DataFrame(
        {"side": [side] * len(flags), "flagged": flags}, schema={"side": pl.Utf8, "flagged": pl.Boolean}
    )


NGRAM = pairs(
    pair("ngram", "T1", "H1", jaccard=0.3, containment_b=0.4, shared_ngrams=5, p_value=0.001, spans=span(0, 6, 6)),
    pair("ngram", "T2", "H2", jaccard=0.2, containment_b=0.3, shared_ngrams=9, p_value=0.002, spans=span(1, 3, 13)),
)


def test_partial_copy_findings_name_the_conformal_baseline() -> None:
    rows = findings(PartialCopies(), NGRAM)
    assert rows[0]["message"] == (
        "held-out context h1h1h1h1h1h1 ~ train t1t1t1t1t1t1: Jaccard 0.30, containment 0.40, 5 shared 7-grams"
    )
    assert {r["baseline"] for r in rows} == {"conformal p <= 0.05 vs within-train null"}
    assert {r["check"] for r in rows} == {"overlap:ngram"}


# the binomial 99.9% bound for 40 stories at p = 0.05, by hand: P(X <= 6) = 0.9972, P(X <= 7) = 0.99929, so 7
BOUND = 7


def ngram_facts(pair_rows: pl.DataFrame, n_flagged: int, has_heldout: bool = True) -> AuditFacts:
    cov = coverage([True] * n_flagged + [False] * (40 - n_flagged))
    cov = pl.concat([cov, coverage([True] * 5, side="train")])  # train rows are not tested
    return facts(pair_rows, has_heldout, extra={"audit_ngram_overlap": cov})


def test_partial_copies_within_chance_and_short_runs_pass() -> None:
    verdict = PartialCopies().verdict(ngram_facts(NGRAM, BOUND))
    assert verdict is not None and verdict.check == "partial copies (7-grams)" and verdict.status == "pass"
    assert verdict.action == "none"
    assert verdict.finding == (
        f"{BOUND} of 40 held-out stories share unusually many 7-grams with train (2.0 expected by chance, at most "
        f"{BOUND}); longest copied run 13 words (fails at 14)"
    )
    assert verdict.explain == (
        "Exact 7-gram coverage of each held-out story by train, tested against how much independent train stories "
        "share with each other (conformal p <= 0.05: about 5% of clean stories are flagged by chance). The check "
        "fails when more are flagged than chance allows (99.9% bound) or when a flagged story shares a run of 14+ "
        "words with one train story."
    )
    assert [r["context ids (held-out / train)"] for r in verdict.evidence] == [
        "`h2h2h2h2h2h2` / `t2t2t2t2t2t2`",  # 9 shared n-grams before 5
        "`h1h1h1h1h1h1` / `t1t1t1t1t1t1`",
    ]
    assert verdict.note == ""


def test_partial_copies_fail_above_chance_or_on_a_passage() -> None:
    above = PartialCopies().verdict(ngram_facts(NGRAM, BOUND + 1))
    assert above is not None and above.status == "fail"
    assert above.action == "`tomforge clean` drops 3 train items"  # the train stories T1 and T2: t1a, t1b, t2a
    long_run = pairs(NGRAM.row(0, named=True) | {"spans": span(0, 14, 14)})
    passage = PartialCopies().verdict(ngram_facts(long_run, 0))
    assert passage is not None and passage.status == "fail"
    assert passage.finding.endswith("longest copied run 14 words (fails at 14)")
    nothing = PartialCopies().verdict(ngram_facts(pairs(), 0))
    assert nothing is not None and nothing.status == "pass"
    assert nothing.finding == (
        f"0 of 40 held-out stories share unusually many 7-grams with train (2.0 expected by chance, at most {BOUND}); "
        "longest copied run 0 words (fails at 14)"
    )
    many = pairs(*[pair("ngram", "T1", "H1", b_context_id=f"b{i:015d}", shared_ngrams=3) for i in reversed(range(9))])
    listed = PartialCopies().verdict(ngram_facts(many, 0))
    assert listed is not None and listed.evidence[0]["context ids (held-out / train)"].startswith("`b00000000000`")
    assert listed.note == "1 more: `tables/audit_overlap_pairs.csv` (kind `ngram`)."
    assert PartialCopies().verdict(ngram_facts(NGRAM, 1, has_heldout=False)) is None


def test_partial_copies_with_nothing_to_test() -> None:
    verdict = PartialCopies().verdict(facts(NGRAM, extra={"audit_ngram_overlap": coverage([True], side="train")}))
    assert verdict is not None
    assert (verdict.check, verdict.status, verdict.action) == ("partial copies (7-grams)", "pass", "none")
    assert verdict.finding == "nothing left to test: every held-out story is also a train story (see exact copies)"
    assert verdict.explain == "Exact long n-gram coverage of held-out stories not in train."


# --- structural twins -------------------------------------------------------------------------------------------

TWINS = pairs(
    pair("structural", "T2", "H3", jaccard=0.25, p_value=0.01),
    pair("structural", "T1", "H1", jaccard=0.35, p_value=0.05),  # at alpha: counted
    pair("structural", "T3", "H2", jaccard=0.45, p_value=0.2),  # above alpha: not a twin
    pair("structural", "T3", "H4", scope="train", p_value=0.0),
)


def calibration(flagged: bool, observed: int = 30, check: str = "structural duplicates") -> pl.DataFrame:
    return pl.DataFrame([{"check": check, "n_observed": observed, "null": 0.123, "flagged": flagged}])


def test_structural_twin_findings_keep_those_at_alpha() -> None:
    rows = findings(StructuralTwins(), TWINS)
    assert [r["message"] for r in rows] == [
        "held-out context h3h3h3h3h3h3 has the skeleton of train t2t2t2t2t2t2 (Jaccard 0.25; conformal p=0.01)",
        "held-out context h1h1h1h1h1h1 has the skeleton of train t1t1t1t1t1t1 (Jaccard 0.35; conformal p=0.05)",
    ]
    assert {(r["check"], r["severity"], r["selection"]) for r in rows} == {
        ("overlap:structural", "leak", "train x heldout")
    }
    assert {r["baseline"] for r in rows} == {"rate of same-skeleton twins among train contexts"}
    assert json.loads(rows[0]["evidence"]) == {
        "a_context_id": cid("T2"),
        "b_context_id": cid("H3"),
        "jaccard": 0.25,
        "p_value": 0.01,
    }


def test_structural_twins_implicated_and_verdicts() -> None:
    assert ids(StructuralTwins().implicated(facts(TWINS), items())) == ["h1a", "h3a", "t1a", "t1b", "t2a"]
    flagged = StructuralTwins().verdict(facts(TWINS, extra={"audit_null_calibration": calibration(True)}))
    assert flagged is not None and flagged.check == "structural twins" and flagged.status == "fail"
    assert flagged.finding == (
        "2 of 30 held-out stories have a train story of the same skeleton (names and things renamed); baseline: 12% "
        "of train stories have one among other train stories"
    )
    # clean drops by the pairs table, whatever their p: T1, T2 and T3 (t1a, t1b, t2a, t3a)
    assert flagged.action == "`tomforge clean --drop-structural` drops 4 train items"
    assert flagged.explain.startswith("Stories reduced to their skeleton (agents, places and objects replaced")
    assert flagged.evidence == [
        {
            "held-out story": "H1.json#h1a",
            "train story": "T1.json#t1a (+1 question)",
            "held-out excerpt": mark_phrase(TEXT["H1"], ""),
            "match": "same skeleton, word Jaccard 0.35, p = 0.05",
            "context ids (held-out / train)": "`h1h1h1h1h1h1` / `t1t1t1t1t1t1`",
        },
        {
            "held-out story": "H3.json#h3a",
            "train story": "T2.json#t2a",
            "held-out excerpt": mark_phrase(TEXT["H3"], ""),
            "match": "same skeleton, word Jaccard 0.25, p = 0.01",
            "context ids (held-out / train)": "`h3h3h3h3h3h3` / `t2t2t2t2t2t2`",
        },
    ]
    assert flagged.note == ""
    warned = StructuralTwins().verdict(facts(TWINS, extra={"audit_null_calibration": calibration(False)}))
    assert warned is not None and warned.status == "warn"
    calm = StructuralTwins().verdict(facts(pairs(), extra={"audit_null_calibration": calibration(False)}))
    assert calm is not None and calm.status == "pass" and calm.action == "none"
    empty = StructuralTwins().verdict(facts(TWINS, extra={"audit_null_calibration": calibration(True, observed=0)}))
    assert empty is not None and (empty.check, empty.status, empty.action) == ("structural twins", "pass", "none")
    assert empty.finding == "nothing left to test: every held-out story is also a train story (see exact copies)"
    assert empty.explain == "Same-skeleton stories across sides."
    other = {"audit_null_calibration": calibration(True, check="ngram coverage")}
    assert StructuralTwins().verdict(facts(TWINS, extra=other)) is None
    assert StructuralTwins().verdict(facts(TWINS, has_heldout=False, extra=other)) is None
    many = pairs(*[pair("structural", "T1", "H1", b_context_id=f"b{i:015d}", p_value=0.0) for i in reversed(range(9))])
    listed = StructuralTwins().verdict(facts(many, extra={"audit_null_calibration": calibration(True)}))
    assert listed is not None and listed.evidence[0]["context ids (held-out / train)"].startswith("`b00000000000`")
    assert listed.note == "1 more: `tables/audit_overlap_pairs.csv` (kind `structural`)."


# --- within-side duplicates -------------------------------------------------------------------------------------

WITHIN = pairs(
    pair("near_duplicate", "T1", "T2", scope="train", jaccard=0.8, containment_a=0.7, containment_b=0.9),
    pair("contained", "T3", "T1", scope="train", jaccard=0.3, containment_a=0.95, containment_b=0.2),
    pair("contained", "H1", "H2", scope="heldout", jaccard=0.5, containment_b=0.88, spans=span(0, 2, 2)),
    pair("exact", "T4", "T3", scope="train"),
    pair("near_duplicate", "T1", "H1"),  # across the split: a leak, not a duplicate
)


def test_within_side_findings() -> None:
    rows = findings(WithinSideDuplicates(), WITHIN)
    assert [r["message"] for r in rows] == [
        "near duplicate within train: context t2t2t2t2t2t2 ~ t1t1t1t1t1t1: Jaccard 0.80, containment 0.90 "
        "(not a train x held-out leak)",
        "contained within train: context t1t1t1t1t1t1 ~ t3t3t3t3t3t3: Jaccard 0.30, containment 0.95 "
        "(not a train x held-out leak)",
        "contained within heldout: context h2h2h2h2h2h2 ~ h1h1h1h1h1h1: Jaccard 0.50, containment 0.88 "
        "(not a train x held-out leak)",
    ]
    assert [(r["check"], r["severity"], r["selection"]) for r in rows] == [
        ("duplicate:within_side", "duplicate", "train"),
        ("duplicate:within_side", "duplicate", "train"),
        ("duplicate:within_side", "duplicate", "heldout"),
    ]
    assert {r["baseline"] for r in rows} == {"Jaccard >= 0.75 or containment >= 0.85"}
    assert json.loads(rows[0]["evidence"]) == {
        "a_context_id": cid("T1"),
        "b_context_id": cid("T2"),
        "jaccard": 0.8,
        "containment_a": 0.7,
        "containment_b": 0.9,
    }


def test_within_side_verdict_counts_pairs_and_repeated_questions() -> None:
    verdict = WithinSideDuplicates().verdict(facts(WITHIN))
    assert verdict is not None and verdict.check == "within-side duplicates" and verdict.status == "warn"
    assert verdict.finding == (
        "train 0 + held-out 1 repeated questions (same question and answer on one story or its near duplicates); "
        "train 1 near-duplicate + 1 contained pairs, held-out 0 near-duplicate + 1 contained pairs "
        "(Jaccard or containment >= 0.75; not leaks)"
    )
    assert verdict.action == (
        "`tomforge clean` removes 1 items, keeping one of each repeated question (reason `duplicate`)"
    )
    assert verdict.explain == (
        "Near-identical stories inside one side: no train x held-out leak, but they weigh a story twice in training "
        "or scoring. Same thresholds as the near-duplicate check (Jaccard >= 0.75, containment >= 0.85)."
    )
    assert verdict.evidence == [
        {
            "side": "train",
            "story": "T2.json#t2a",
            "duplicate of": "T1.json#t1a (+1 question)",
            "excerpt (matched words in bold)": mark_phrase(TEXT["T2"], ""),
            "match": "near duplicate: Jaccard 0.80, containment 0.90",
            "context ids": "`t2t2t2t2t2t2` / `t1t1t1t1t1t1`",
        },
        {
            "side": "train",
            "story": "T1.json#t1a (+1 question)",
            "duplicate of": "T3.json#t3a",
            "excerpt (matched words in bold)": mark_phrase(TEXT["T1"], ""),
            "match": "contained: Jaccard 0.30, containment 0.95",
            "context ids": "`t1t1t1t1t1t1` / `t3t3t3t3t3t3`",
        },
        {
            "side": "held-out",
            "story": "H2.json#h2a (+1 question)",
            "duplicate of": "H1.json#h1a",
            "excerpt (matched words in bold)": mark_words(TEXT["H2"], 0, 2),
            "match": "contained: Jaccard 0.50, containment 0.88",
            "context ids": "`h2h2h2h2h2h2` / `h1h1h1h1h1h1`",
        },
    ]
    assert verdict.note == ""


def test_within_side_verdict_of_one_side_and_of_nothing() -> None:
    train_only = items().filter(pl.col("side") == "train")
    verdict = WithinSideDuplicates().verdict(facts(WITHIN, has_heldout=False, the_items=train_only))
    assert verdict is not None and verdict.status == "warn" and verdict.action == "none"
    assert verdict.finding == (
        "train 0 repeated questions (same question and answer on one story or its near duplicates); "
        "train 1 near-duplicate + 1 contained pairs (Jaccard or containment >= 0.75; not leaks)"
    )
    calm = WithinSideDuplicates().verdict(facts(EXACT, the_items=train_only))
    assert calm is not None and calm.status == "pass" and calm.evidence == []
    repeats_only = WithinSideDuplicates().verdict(facts(EXACT))
    assert repeats_only is not None and repeats_only.status == "warn"
    many = pairs(*[pair("contained", "T1", "T2", scope="train", jaccard=0.1 * i) for i in range(9)])
    listed = WithinSideDuplicates().verdict(facts(many, the_items=train_only))
    assert (
        listed is not None
        and len(listed.evidence) == 8
        and listed.evidence[0]["match"].startswith("contained: Jaccard 0.80")
    )
    assert listed.note == "1 more: `tables/audit_overlap_pairs.csv` (scope `train` or `heldout`)."


def test_the_checks_names_and_tables() -> None:
    read = ("audit_overlap_pairs", "audit_contexts")
    assert (ExactCopies.name, ExactCopies.emits, ExactCopies.reads, ExactCopies.by_source) == (
        "exact copies",
        ("overlap:exact",),
        read,
        "items",
    )
    assert (NearDuplicates.emits, NearDuplicates.reads, NearDuplicates.by_source) == (
        ("overlap:near_duplicate", "overlap:contained"),
        read,
        "items",
    )
    assert (ReformattedCopies.emits, ReformattedCopies.reads, ReformattedCopies.by_source) == (
        ("overlap:sentences",),
        read,
        "items",
    )
    assert (PartialCopies.name, PartialCopies.emits, PartialCopies.by_source) == (
        "partial copies",
        ("overlap:ngram",),
        "items",
    )
    assert PartialCopies.reads == ("audit_overlap_pairs", "audit_ngram_overlap", "audit_contexts")
    assert (StructuralTwins.emits, StructuralTwins.by_source) == (("overlap:structural",), "items")
    assert StructuralTwins.reads == ("audit_overlap_pairs", "audit_null_calibration", "audit_contexts")
    assert (WithinSideDuplicates.emits, WithinSideDuplicates.reads) == (("duplicate:within_side",), read)


def test_partial_copies_implicate_the_stories_of_ngram_pairs_only() -> None:
    mixed = pairs(*NGRAM.rows(named=True), pair("exact", "T3", "H3"), pair("ngram", "T4", "H4", scope="train"))
    assert ids(PartialCopies().implicated(facts(mixed), items())) == ["h1a", "h2a", "h2b", "t1a", "t1b", "t2a"]
