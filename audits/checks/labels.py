"""The label check: the same question on the same story with different gold answers, anywhere in
the warehouse (`audit_label_conflicts`, read with the selections: `audits.artifacts.LABEL_CONFLICTS_SQL`)."""

from __future__ import annotations

import polars as pl

from tomforge.audits.check import AuditCheck, FindingInputs, Findings, register
from tomforge.audits.evidence import md_escape
from tomforge.audits.verdict import MAX_EVIDENCE, AuditFacts, Verdict, more


@register
class LabelConflicts(AuditCheck):
    name = "label conflicts"
    emits = ("consistency:label_conflict",)
    reads = ("audit_label_conflicts",)
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        for r in data.tables["audit_label_conflicts"].iter_rows(named=True):
            out.add(
                "consistency:label_conflict",
                "inconsistency",
                "warehouse",
                f"context {r['context_id'][:12]} question '{r['question_norm'][:60]}' has answers {r['answers']}",
                {"item_ids": r["item_ids"], "answers": r["answers"], "sources": r["sources"]},
                "one answer per context and question",
            )

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        conflicts = facts.tables["audit_label_conflicts"]
        ids = {i for group in conflicts["item_ids"].to_list() for i in group} if conflicts.height else set()
        return items.filter(pl.col("item_id").is_in(list(ids)))

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        conflicts = facts.tables["audit_label_conflicts"]
        selected = set(facts.items["item_id"].to_list())
        ids = [i for ids in conflicts["item_ids"].to_list() for i in ids] if conflicts.height else []
        in_selection = len({i for i in ids if i in selected})
        by_id = {r["item_id"]: r for r in facts.conflict_items.iter_rows(named=True)}
        rows = []
        for r in conflicts.head(MAX_EVIDENCE).iter_rows(named=True):
            members = [by_id[i] for i in r["item_ids"] if i in by_id]
            rows.append(
                {
                    "items": ", ".join(md_escape(m["source_ref"] or "?") for m in members),
                    "question": md_escape(members[0]["question"] if members else r["question_norm"]),
                    "gold answers": " / ".join(f"**{md_escape(m['answer'] or '')}**" for m in members),
                    "story": facts.ref(r["context_id"]),
                    "context id": f"`{r['context_id'][:12]}`",
                }
            )
        n = conflicts.height
        return Verdict(
            self.name,
            "fail" if in_selection else ("warn" if n else "pass"),
            f"{n} question{'s' if n != 1 else ''} on the same story with different gold answers ({len(set(ids))} items, {in_selection} selected); "
            "expected 0",
            f"`tomforge clean` quarantines {in_selection} items; check which answer is right"
            if in_selection
            else ("outside the audited selections: check the source" if n else "none"),
            "The same question (normalized) on the same story with different gold answers, anywhere in the warehouse: at "
            "most one of them can be rewarded correctly.",
            rows,
            more(n, "`tables/audit_label_conflicts.csv`"),
        )
