"""The template-artifact checks: gold position, answer prior, feature-label cues, partial-input
baselines, heuristic rules and inverted difficulty. Each computes its table from the selections
(`audits.artifacts`, `audits.baselines`) on the audit's side thread; the partial-input baselines in
a phase of their own (they need no text features)."""

from __future__ import annotations

from typing import Any

import polars as pl

from tomforge.audits import artifacts, baselines
from tomforge.audits.artifacts import DESCRIPTIVE_HEURISTICS, HEURISTIC_LABELS
from tomforge.audits.check import AuditCheck, FindingInputs, Findings, TableInputs, register
from tomforge.audits.evidence import letter, mark_phrase, md_escape
from tomforge.audits.report import ReportSection
from tomforge.audits.verdict import MAX_EVIDENCE, AuditFacts, Verdict, more, pct, side_name


def _label(kind: str, label: str) -> str:
    """A feature-association label in words: gold letter for positions, the answer otherwise."""
    return f"gold {letter(int(label))}" if kind.startswith("gold_position") and label.isdigit() else f"answer '{label}'"


@register
class GoldPosition(AuditCheck):
    name = "gold position"
    owns = ("audit_positions",)
    sections = (
        ReportSection("audit_positions", "Gold position bias", "Chi-square against uniform per group; per-position z."),
    )
    emits = ("artifact:gold_position",)
    by_source = "recompute"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {"audit_positions": artifacts.position_bias(data.frame, data.params)}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """The strongest flagged position of each (side, order, number of options)."""
        table = data.tables["audit_positions"]
        strongest = pl.col("z").abs() == pl.col("z").abs().max().over("selection", "belief_order", "n_options")
        for r in table.filter(pl.col("flagged") & strongest).iter_rows(named=True):
            out.add(
                "artifact:gold_position",
                "artifact",
                r["selection"],
                f"order {r['belief_order']}, {r['n_options']} options: gold at position {r['position']} "
                f"{r['count']}/{r['n']} (expected {r['expected']:.0f}, z={r['z']:.1f}, chi2 p={r['p_value']:.1e})",
                {k: r[k] for k in ("belief_order", "n_options", "n", "position", "count", "z", "chi2", "p_value")},
                "uniform positions",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        pos = facts.tables["audit_positions"]
        if pos.height == 0:
            return None
        flagged = pos.filter(pl.col("flagged") & (pl.col("belief_order") == "all") & (pl.col("z") > 0))
        top = (
            flagged.sort("z", descending=True)
            .unique(["selection"], keep="first", maintain_order=True)
            .sort("selection", descending=True)
        )
        parts = [
            f"{side_name(r['selection'])}: gold at {letter(r['position'])} on {pct(r['count'] / r['n'])} of {r['n']} items "
            f"({r['n_options']} options), uniform {pct(1 / r['n_options'])}"
            for r in top.iter_rows(named=True)
        ]
        any_flag = pos["flagged"].any()
        rows = []
        for r in top.iter_rows(named=True):
            side = (
                facts.items.filter(
                    (pl.col("side") == r["selection"])
                    & (pl.col("answer_index") == r["position"])
                    & (pl.col("options").list.len() == r["n_options"])
                )
                .sort("item_id")
                .head(3)
            )
            for it in side.iter_rows(named=True):
                options = ", ".join(
                    f"**{letter(i)}. {md_escape(o)}**" if i == r["position"] else f"{letter(i)}. {md_escape(o)}"
                    for i, o in enumerate(it["options"])
                )
                rows.append(
                    {
                        "side": side_name(r["selection"]),
                        "item": md_escape(it["source_ref"] or "?"),
                        "question": md_escape(it["question"]),
                        "options (gold in bold)": options,
                        "item id": f"`{it['item_id'][:12]}`",
                    }
                )
        return Verdict(
            self.name,
            "fail" if any_flag else "pass",
            "; ".join(parts)
            if parts
            else (
                "a position departs from uniform within one belief order"
                if any_flag
                else "gold positions consistent with uniform"
            ),
            "`tomforge clean` re-orders options to balanced positions" if any_flag else "none",
            "Position (letter) of the gold option against uniform, chi-square per side, order and number of options "
            f"(Bonferroni, alpha {facts.params.alpha:g}). A model can learn the letter instead of the answer.",
            rows,
        )


@register
class AnswerPrior(AuditCheck):
    name = "gold-answer prior"
    owns = ("audit_answer_prior",)
    sections = (
        ReportSection(
            "audit_answer_prior",
            "Gold-answer prior",
            "Most frequent answers per format; chi-square for small answer spaces.",
        ),
    )
    emits = ("artifact:answer_prior",)
    by_source = "recompute"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {"audit_answer_prior": artifacts.answer_prior(data.frame, data.params)}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """The most frequent flagged answer of each (side, order, format)."""
        prior = (
            data.tables["audit_answer_prior"]
            .filter(pl.col("flagged"))
            .unique(["selection", "belief_order", "answer_format"], keep="first", maintain_order=True)
        )
        for r in prior.iter_rows(named=True):
            out.add(
                "artifact:answer_prior",
                "artifact",
                r["selection"],
                f"order {r['belief_order']}, {r['answer_format']}: '{r['answer']}' is {r['share']:.0%} of {r['n']} "
                f"answers ({r['n_classes']} classes, p={r['p_value']:.1e})",
                {k: r[k] for k in ("belief_order", "answer_format", "answer", "share", "n", "n_classes", "p_value")},
                "uniform over answers",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        prior = facts.tables["audit_answer_prior"].filter(pl.col("flagged") & (pl.col("belief_order") == "all"))
        prior = prior.sort("share", descending=True).unique(
            ["selection", "answer_format"], keep="first", maintain_order=True
        )
        any_flag = facts.tables["audit_answer_prior"]["flagged"].any()
        parts = [
            f"{side_name(r['selection'])} {r['answer_format']}: '{r['answer']}' is {pct(r['share'])} of {r['n']} answers, "
            f"uniform {pct(1 / r['n_classes'])}"
            for r in prior.sort("selection", descending=True).iter_rows(named=True)
        ]
        return Verdict(
            self.name,
            "fail" if any_flag else "pass",
            "; ".join(parts)
            if parts
            else (
                "an answer is over-represented within one belief order"
                if any_flag
                else "answers consistent with uniform (yes/no and small answer sets)"
            ),
            "re-generate or re-weight so answers are balanced" if any_flag else "none",
            "Share of the most frequent gold answer per format against uniform over the answers seen (small answer spaces).",
        )


@register
class FeatureLabel(AuditCheck):
    name = "feature-label cues"
    owns = ("audit_feature_assoc",)
    sections = (
        ReportSection(
            "audit_feature_assoc",
            "Feature-label association",
            "Gardner et al. (2021) z; flagged by exact binomial test, Bonferroni over all tests.",
        ),
    )
    emits = ("artifact:feature_label",)
    by_source = "recompute"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {"audit_feature_assoc": artifacts.feature_association(data.frame, data.params, data.stories)}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """The first 50 flagged associations."""
        for r in data.tables["audit_feature_assoc"].filter(pl.col("flagged")).head(50).iter_rows(named=True):
            out.add(
                "artifact:feature_label",
                "artifact",
                r["selection"],
                f"order {r['belief_order']}: '{r['feature']}' -> {r['label_kind']}={r['label']} "
                f"({r['n_label_and_feature']}/{r['n_feature']} = {r['p_hat']:.2f} vs prior {r['p0']:.2f}, z={r['z']:.1f})",
                {
                    k: r[k]
                    for k in (
                        "belief_order",
                        "feature",
                        "label_kind",
                        "label",
                        "n_feature",
                        "p_hat",
                        "p0",
                        "z",
                        "p_value",
                    )
                },
                f"label prior; Bonferroni alpha {r['alpha_corrected']:.1e}",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        assoc = facts.tables["audit_feature_assoc"].filter(pl.col("flagged"))
        n = assoc.height
        top = assoc.filter(pl.col("z") > 0).sort("z", descending=True).head(MAX_EVIDENCE)
        rows = [
            {
                "side": side_name(r["selection"]),
                "order": r["belief_order"],
                "feature": md_escape(r["feature"]),
                "predicts": md_escape(_label(r["label_kind"], r["label"])),
                "rate with feature vs prior": f"{r['n_label_and_feature']}/{r['n_feature']} = {pct(r['p_hat'])} vs {pct(r['p0'])}",
                "z": f"{r['z']:.1f}",
            }
            for r in top.iter_rows(named=True)
        ]
        best = top.row(0, named=True) if top.height else None
        return Verdict(
            self.name,
            "fail" if n else "pass",
            (
                f"{n} features shift the gold away from its prior; strongest: '{best['feature']}' -> "
                f"{_label(best['label_kind'], best['label'])} on {pct(best['p_hat'])} of its items vs {pct(best['p0'])} overall"
            )
            if best
            else (
                f"{n} associations (all negative)"
                if n
                else "no word or structural feature predicts the gold beyond its prior"
            ),
            "re-generate with controls (vary templates so no word or structure gives the answer)" if n else "none",
            "Gardner et al. (2021): for each word of the question (`q:`), word of the story (`s:`) and structural feature, "
            f"is the gold label more (or less) frequent with it than without? Exact binomial test, Bonferroni alpha {facts.params.alpha:g}.",
            rows,
            more(n, "`tables/audit_feature_assoc.csv` (flagged rows)"),
        )


@register
class PartialInput(AuditCheck):
    name = "partial-input baselines"
    owns = ("audit_partial_input",)
    sections = (
        ReportSection(
            "audit_partial_input",
            "Partial-input baselines",
            "Logistic regression (SGD) on hashed 1-2-grams; 99% cluster-bootstrap "
            "CIs (Bonferroni-adjusted); flagged when better than the majority class and chance.",
        ),
    )
    phase = "baselines"
    emits = ("artifact:partial_input",)
    by_source = "recompute"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {"audit_partial_input": baselines.partial_input_baselines(data.train, data.heldout, data.params)}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        for r in data.tables["audit_partial_input"].filter(pl.col("flagged")).iter_rows(named=True):
            out.add(
                "artifact:partial_input",
                "artifact",
                "train -> heldout" if "heldout" in r["evaluation"] else "train",
                f"{r['input']} ({r['answer_format']}) accuracy {r['accuracy']:.2f} [{r['ci_low']:.2f}, "
                f"{r['ci_high']:.2f}] vs majority {r['majority']:.2f}, chance {r['chance']:.2f}",
                {
                    k: r[k]
                    for k in (
                        "input",
                        "answer_format",
                        "evaluation",
                        "accuracy",
                        "ci_low",
                        "ci_high",
                        "majority",
                        "chance",
                        "diff_ci_low",
                    )
                },
                "majority class and chance, cluster bootstrap",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        table = facts.tables["audit_partial_input"]
        if table.height == 0:
            return None
        flagged = table.filter(pl.col("flagged")).with_columns((pl.col("accuracy") - pl.col("majority")).alias("gain"))
        best = flagged.sort("gain", descending=True).row(0, named=True) if flagged.height else None
        names = {
            "question_only": "question alone",
            "options_only": "options alone",
            "story_without_question": "story alone",
        }
        rows = [
            {
                "input": names.get(r["input"], r["input"]),
                "format": r["answer_format"],
                "evaluated on": r["evaluation"],
                "accuracy [99% CI]": f"{pct(r['accuracy'])} [{pct(r['ci_low'])}, {pct(r['ci_high'])}]",
                "majority": pct(r["majority"]),
                "chance": pct(r["chance"]),
                "flagged": "yes" if r["flagged"] else "no",
            }
            for r in table.iter_rows(named=True)
        ]
        return Verdict(
            self.name,
            "fail" if best else "pass",
            (
                f"{names.get(best['input'], best['input'])}: gold predicted on {pct(best['accuracy'])} of {best['n_eval']} items "
                f"({best['evaluation']}), majority class {pct(best['majority'])}, chance {pct(best['chance'])}"
            )
            if best
            else "no partial input beats the majority class and chance",
            "re-generate with controls: the answer is readable without the full question" if best else "none",
            "A classifier (hashed 1-2-grams) trained on part of the input only; flagged when its cluster-bootstrap CI is above "
            "both the majority class and chance.",
            rows,
        )


def _curves(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Pooled heuristic curves plus per-format curves where a side mixes formats (a format's own
    shortcut, unless the pooled curve already shows it)."""
    pooled = tables["audit_heuristics"].with_columns(pl.lit(None, pl.Utf8).alias("answer_format"))
    by_format = tables.get("audit_heuristics_by_format")
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
    return [
        {
            "side": side_name(selection),
            "item": md_escape(r["source_ref"] or "?"),
            "question": md_escape(r["question"]),
            "story (gold where the rule finds it, in bold)": mark_phrase(
                r["context"], r["answer"] or "", last=rule == "last"
            ),
            "gold": md_escape(r["answer"] or ""),
            "item id": f"`{r['item_id'][:12]}`",
        }
        for r in items.iter_rows(named=True)
    ]


@register
class HeuristicRules(AuditCheck):
    name = "heuristic rules"
    owns = ("audit_heuristics", "audit_heuristics_by_format")
    sections = (
        ReportSection(
            "audit_heuristics",
            "Heuristic rules by belief order",
            "First / last / most mentioned candidate, the asked "
            "object's first container (world trace when recorded), the most frequent gold position (fitted in-sample: "
            "descriptive, tested by the position and prior checks), each against what uniformly random options score; "
            "memory questions are their own stratum and skip the first-container rules; inverted difficulty = accuracy rising with order (Cochran-Armitage).",
        ),
        ReportSection(
            "audit_heuristics_by_format",
            "Heuristic rules by belief order and answer format",
            "The same, per answer format (yes/no: the rule answers yes exactly when the question asks about its pick).",
        ),
    )
    emits = ("artifact:heuristic",)
    by_source = "recompute"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {
            "audit_heuristics": artifacts.baselines_from_scores(data.scores, data.params),
            "audit_heuristics_by_format": artifacts.baselines_from_scores(data.scores, data.params, by_format=True),
        }

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """Each rule above chance once per side (pooled, or on one format of a side that mixes them)."""
        heur = _curves(data.tables)
        reported: set[tuple[str, str]] = set()
        for r in heur.filter(pl.col("above_chance") & (pl.col("belief_order") == "all")).iter_rows(named=True):
            if (r["selection"], r["heuristic"]) in reported:
                continue
            reported.add((r["selection"], r["heuristic"]))
            fmt = f" on {r['answer_format']}" if r["answer_format"] else ""
            out.add(
                "artifact:heuristic",
                "artifact",
                r["selection"],
                f"'{HEURISTIC_LABELS[r['heuristic']]}' rule is right {r['accuracy']:.0%} of {r['n']} items{fmt} "
                f"vs chance {r['chance']:.0%}",
                {k: r[k] for k in ("heuristic", "answer_format", "n", "accuracy", "chance", "p_value")},
                "what uniformly random options score",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        heur = _curves(facts.tables)
        if heur.height == 0:
            return None
        tested = heur.filter(~pl.col("heuristic").is_in(DESCRIPTIVE_HEURISTICS) & (pl.col("belief_order") == "all"))
        above = tested.filter(pl.col("above_chance")).with_columns(
            (pl.col("accuracy") - pl.col("chance")).alias("gain")
        )
        rank = pl.col("heuristic").replace_strict({"first_container": 0}, default=1, return_dtype=pl.Int64)
        top = (
            above.sort([pl.col("gain"), rank], descending=[True, False])
            .unique(["selection"], keep="first", maintain_order=True)
            .sort("selection", descending=True)
        )
        parts = [
            f"{side_name(r['selection'])}: {HEURISTIC_LABELS[r['heuristic']]} rule right on {pct(r['accuracy'])} of "
            f"{r['n']} items"
            + (f" ({r['answer_format']})" if r["answer_format"] else "")
            + f", chance {pct(r['chance'])}"
            for r in top.iter_rows(named=True)
        ]
        rows = [row for r in top.iter_rows(named=True) for row in _rule_examples(facts, r["selection"], r["heuristic"])]
        return Verdict(
            self.name,
            "fail" if parts else "pass",
            "; ".join(parts) if parts else "no first / last / most-mentioned or first-container rule beats chance",
            "re-generate with controls (balance which mention is the answer)" if parts else "none",
            "Answer without reasoning: the first-, last- or most-mentioned candidate, or the asked object's first container, "
            f"against what random options score (one-sided binomial test, Bonferroni alpha {facts.params.alpha:g}).",
            rows,
        )


@register
class InvertedDifficulty(AuditCheck):
    name = "inverted difficulty"
    reads = ("audit_heuristics", "audit_heuristics_by_format")
    emits = ("artifact:inverted_difficulty",)
    by_source = "recompute"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """Each rule whose accuracy rises with belief order, once per side, with its curve."""
        heur = _curves(data.tables)
        reported: set[tuple[str, str]] = set()
        for r in heur.filter(pl.col("inverted_difficulty") & (pl.col("belief_order") == "all")).iter_rows(named=True):
            if (r["selection"], r["heuristic"]) in reported:
                continue
            reported.add((r["selection"], r["heuristic"]))
            fmt = f" on {r['answer_format']}" if r["answer_format"] else ""
            curve = heur.filter(
                (pl.col("selection") == r["selection"])
                & (pl.col("heuristic") == r["heuristic"])
                & (pl.col("answer_format").eq_missing(r["answer_format"]))
                & pl.col("belief_order").str.contains(r"^\d+$")
            )
            out.add(
                "artifact:inverted_difficulty",
                "artifact",
                r["selection"],
                f"'{HEURISTIC_LABELS[r['heuristic']]}' accuracy{fmt} rises with belief order: "
                + ", ".join(f"{o}: {a:.0%}" for o, a in curve.select("belief_order", "accuracy").iter_rows())
                + f" (trend z={r['trend_z']:.1f})",
                {
                    "curve": curve.select("belief_order", "n", "accuracy").to_dicts(),
                    "trend_z": r["trend_z"],
                    "trend_p": r["trend_p"],
                    "answer_format": r["answer_format"],
                },
                "flat curve (Cochran-Armitage trend test)",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        heur = _curves(facts.tables)
        if heur.height == 0:
            return None
        rows: list[dict[str, str]] = []
        described: dict[tuple, list[str]] = {}  # rules with the same curve on one side share a line
        for r in _inverted_rules(heur).iter_rows(named=True):
            curve = _order_curve(heur, r)
            key = _curve_key(r, curve)
            name = HEURISTIC_LABELS[r["heuristic"]] + (f" ({r['answer_format']})" if r["answer_format"] else "")
            if key in described:
                described[key].append(name)
                continue
            described[key] = [name]
            rows += _curve_rows(r["selection"], name, curve)
        parts = _inverted_parts(described)
        return Verdict(
            self.name,
            "fail" if parts else "pass",
            "; ".join(parts[:2]) + (f"; {len(parts) - 2} more" if len(parts) > 2 else "")
            if parts
            else "no rule gets easier with belief order while beating chance",
            "deeper questions are easier to game: re-generate with controls before reading accuracy by order"
            if parts
            else "none",
            "A rule whose accuracy rises with belief order (Cochran-Armitage trend test) and beats chance on the higher half "
            "of the orders (one-sided binomial test), both Bonferroni-corrected: a rule below chance that only gets less "
            "wrong is not reported.",
            rows,
        )


def _inverted_rules(heur: pl.DataFrame) -> pl.DataFrame:
    """The rules flagged over all orders, steepest trend first, once per (side, rule)."""
    flagged = heur.filter(pl.col("inverted_difficulty") & (pl.col("belief_order") == "all")).sort(
        "trend_z", descending=True
    )
    return flagged.unique(["selection", "heuristic"], keep="first", maintain_order=True)


def _order_curve(heur: pl.DataFrame, r: dict[str, Any]) -> pl.DataFrame:
    """A flagged rule's accuracy per numbered belief order on its side and format, in order."""
    curve = heur.filter(
        (pl.col("selection") == r["selection"])
        & (pl.col("heuristic") == r["heuristic"])
        & pl.col("answer_format").eq_missing(r["answer_format"])
        & pl.col("belief_order").str.contains(r"^\d+$")
    )
    return curve.with_columns(pl.col("belief_order").cast(pl.Int64)).sort("belief_order")


def _curve_key(r: dict[str, Any], curve: pl.DataFrame) -> tuple:
    """What the verdict's line says of a rule: rules with equal keys on one side share that line."""
    first, last = curve.row(0, named=True), curve.row(-1, named=True)
    return (
        r["selection"],
        r["answer_format"],
        first["belief_order"],
        first["accuracy"],
        last["belief_order"],
        last["accuracy"],
        r["high_orders_accuracy"],
        r["high_orders_chance"],
    )


def _curve_rows(selection: str, name: str, curve: pl.DataFrame) -> list[dict[str, str]]:
    """The verdict table's rows of one rule: one per belief order."""
    return [
        {
            "side": side_name(selection),
            "rule": name,
            "order": str(c["belief_order"]),
            "items": str(c["n"]),
            "accuracy": pct(c["accuracy"]),
            "chance": pct(c["chance"]),
        }
        for c in curve.iter_rows(named=True)
    ]


def _inverted_parts(described: dict[tuple, list[str]]) -> list[str]:
    """One line per distinct curve: its rules, first and last order's accuracy, the higher orders' and chance."""
    return [
        f"{side_name(side)}: {' = '.join(names)} rule right on {pct(a0)} at order {o0}, {pct(a1)} at order {o1} "
        f"(higher orders {pct(high)}, chance {pct(chance)})"
        for (side, _, o0, a0, o1, a1, high, chance), names in described.items()
    ]
