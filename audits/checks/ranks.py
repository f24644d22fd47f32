"""The rank checks: the gold's rank among the options under five surface rankings (`audits.ranks`,
the line naming the worst ranking) and sentences a story says twice (`audits.repeats`)."""

from __future__ import annotations

import json

import polars as pl

from tomforge.audits import ranks, repeats
from tomforge.audits.check import AuditCheck, FindingInputs, Findings, TableInputs, register
from tomforge.audits.evidence import md_escape
from tomforge.audits.ranks import RANKING_LABELS, worst_group
from tomforge.audits.verdict import MAX_EVIDENCE, AuditFacts, Verdict


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ordinal(position: int) -> str:
    n = position + 1
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _stratum(order: str) -> str:
    return {"memory": "memory questions", "all": "all orders", ranks.LIST_STRATUM: "list questions"}.get(
        order, f"order {order}"
    )


def describe(row: dict) -> str:
    """'train, order 0, mention count: gold ranked 3rd of 4 on 43.0% of 1200 items (uniform 25.0%, p=1e-09)';
    a list group counts golds: 'train, list questions, mention count: 41.0% of the golds of 463 items ranked 1st of 4'."""
    if row["belief_order"] == ranks.LIST_STRATUM:
        return (
            f"{row['selection']}, list questions, {RANKING_LABELS[row['ranking']]}: {_pct(row['share'])} of the golds "
            f"of {row['n']} items ranked {_ordinal(row['position'])} of {row['k']} "
            f"(uniform {_pct(row['expected'])}, p={row['p_value']:.2g})"
        )
    return (
        f"{row['selection']}, {_stratum(row['belief_order'])}, {RANKING_LABELS[row['ranking']]}: gold ranked "
        f"{_ordinal(row['position'])} of {row['k']} on {_pct(row['share'])} of {row['n']} items "
        f"(uniform {_pct(row['expected'])}, p={row['p_value']:.2g})"
    )


@register
class GoldRank(AuditCheck):
    name = "gold rank"
    owns = ("audit_gold_ranks",)
    emits = ("artifact:gold_rank",)
    by_source = "recompute"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {"audit_gold_ranks": ranks.gold_ranks(data.items, data.params)}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """One finding per flagged (side, order, ranking, k) group: its worst position."""
        table = data.tables.get("audit_gold_ranks")
        if table is None or table.height == 0:
            return
        flagged = table.filter(pl.col("flagged")).with_columns(
            (pl.col("share") - pl.col("expected")).abs().alias("gap")
        )
        worst = flagged.sort("gap", descending=True).unique(["selection", "belief_order", "ranking", "k"], keep="first")
        for r in worst.sort("selection", "belief_order", "ranking", "k").iter_rows(named=True):
            out.add(
                "artifact:gold_rank",
                "artifact",
                r["selection"],
                describe(r),
                {k: r[k] for k in ("belief_order", "ranking", "k", "n", "position", "share", "chi2", "df", "p_value")},
                "uniform rank, ties split evenly",
            )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        table = facts.tables.get("audit_gold_ranks")
        if table is None or table.height == 0:
            return None
        worst = worst_group(table)
        assert worst is not None
        flagged = table.filter(pl.col("flagged"))
        groups = flagged.select("selection", "belief_order", "ranking", "k").unique().height
        rows = [
            {
                "side": r["selection"],
                "order": r["belief_order"],
                "ranking": RANKING_LABELS[r["ranking"]],
                "options": str(r["k"]),
                "items": str(r["n"]),
                "position": _ordinal(r["position"]),
                "gold there": _pct(r["share"]),
                "uniform": _pct(r["expected"]),
                "p": f"{r['p_value']:.2g}",
            }
            for r in flagged.with_columns((pl.col("share") - pl.col("expected")).abs().alias("gap"))
            .sort("gap", descending=True)
            .head(MAX_EVIDENCE)
            .iter_rows(named=True)
        ]
        if groups:
            finding = f"{groups} (side, order, options, ranking) groups depart from uniform; worst: {describe(worst)}"
        else:
            finding = (
                "gold rank consistent with uniform under every ranking and order; largest gap: "
                f"{RANKING_LABELS[worst['ranking']]}, {_stratum(worst['belief_order'])}, {_ordinal(worst['position'])} "
                f"place {_pct(worst['share'])} vs {_pct(worst['expected'])}"
            )
        return Verdict(
            self.name,
            "fail" if groups else "pass",
            finding,
            "re-generate with rank controls: the gold's place in that ranking is a shortcut" if groups else "none",
            "Where the gold falls among the options when they are ranked by mention count, first mention, last mention, "
            "sentences naming them and the last move into them; ties split evenly over the places they span. Chi-square "
            "against uniform with the null covariance of each item's ties, per side, order and number of options; "
            "list questions apart, their golds against a random subset of the candidates of the same size "
            f"(Bonferroni, alpha {facts.params.alpha:g}).",
            rows,
        )


@register
class RepeatedSentences(AuditCheck):
    name = "repeated sentences"
    owns = ("audit_repeated_sentences",)
    emits = ("artifact:repeated_sentence",)
    by_source = "items"

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        return {"audit_repeated_sentences": repeats.repeated_sentences(data.items)}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        table = data.tables.get("audit_repeated_sentences")
        if table is None or table.height == 0:
            return
        for r in table.filter(pl.col("flagged")).iter_rows(named=True):
            out.add(
                "artifact:repeated_sentence",
                "artifact",
                r["selection"],
                f"context {r['context_id'][:12]} says '{r['sentence'][:60]}' {r['times']} times",
                json.loads(
                    json.dumps({k: r[k] for k in ("context_id", "sentence", "times", "back_to_back", "world_repeats")})
                ),
                "sentences the world repeats",
            )

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        """The items of the flagged stories, on the side where the story repeats itself."""
        flagged = facts.tables["audit_repeated_sentences"].filter(pl.col("flagged"))
        stories = flagged.select(pl.col("selection").alias("side"), "context_id").unique()
        return items.join(stories, on=["side", "context_id"], how="semi")

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        table = facts.tables.get("audit_repeated_sentences")
        if table is None:
            return None
        flagged = table.filter(pl.col("flagged"))
        stories = flagged.select("selection", "context_id").unique()
        total = facts.items.select("side", "context_id").unique().height
        rows = [
            {
                "side": r["selection"],
                "story": facts.ref(r["context_id"], r["selection"]),
                "sentence": md_escape(r["sentence"]),
                "times": str(r["times"]),
                "back to back": "yes" if r["back_to_back"] else "no",
                "world repeats": "?" if r["world_repeats"] is None else str(r["world_repeats"]),
            }
            for r in flagged.sort("selection", "context_id", "sentence").head(MAX_EVIDENCE).iter_rows(named=True)
        ]
        n = stories.height
        return Verdict(
            self.name,
            "fail" if n else "pass",
            f"{n} of {total} stories repeat a sentence the world does not repeat"
            if n
            else "no story repeats a sentence beyond what its world repeats",
            "vary the padding: a repeated sentence is a tell a model can learn to skip" if n else "none",
            "A sentence said twice in one story (normalized). With a world trace, flagged when the story repeats more "
            "sentences than the world repeats events; without one, only repeats back to back.",
            rows,
        )
