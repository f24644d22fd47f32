"""The checks of variants of real stories (`tomforge variants`): variant leaks across the split and
oracle disagreements. Their findings come from the warehouse (`audits.variants`, read once for both);
their verdict lines read those findings and appear only when there is something to show."""

from __future__ import annotations

import json

import polars as pl

from tomforge.audits.check import AuditCheck, FindingInputs, Findings, register
from tomforge.audits.evidence import md_escape
from tomforge.audits.verdict import MAX_EVIDENCE, AuditFacts, Verdict


def _findings_of(facts: AuditFacts, check: str) -> list[dict]:
    findings = facts.tables.get("audit_findings")
    if findings is None or findings.height == 0:
        return []
    return findings.filter(pl.col("check") == check).to_dicts()


def _refs(facts: AuditFacts, item_ids: list[str]) -> str:
    """Where a reader finds items: their source_refs (the first few), hashes never."""
    refs = facts.items.filter(pl.col("item_id").is_in(item_ids)).sort("item_id")["source_ref"].to_list()
    shown = ", ".join(md_escape(r or "?") for r in refs[:3])
    return shown + (f" (+{len(refs) - 3})" if len(refs) > 3 else "")


@register
class VariantLeaks(AuditCheck):
    name = "variant leaks"
    emits = ("overlap:variant_leak",)
    by_source = "items"

    def findings(self, out: Findings, data: FindingInputs) -> None:
        rows = data.variant_findings()
        out.extend(rows.filter(pl.col("check") == "overlap:variant_leak"))

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame:
        """The train and held-out items of the leaking stories."""
        ids: dict[str, set[str]] = {"train": set(), "heldout": set()}
        for leak in _findings_of(facts, "overlap:variant_leak"):
            evidence = json.loads(leak["evidence"])
            ids["train"] |= set(evidence["train_item_ids"])
            ids["heldout"] |= set(evidence["heldout_item_ids"])
        return pl.concat(
            [
                items.filter((pl.col("side") == side) & pl.col("item_id").is_in(list(members)))
                for side, members in ids.items()
            ]
        )

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        """Variants of real stories on the other side of the split from their original (None without any)."""
        leaks = _findings_of(facts, "overlap:variant_leak")
        if not leaks:
            return None
        rows, n_train = [], 0
        for leak in leaks:
            ev = json.loads(leak["evidence"])
            n_train += len(ev["train_item_ids"])
            rows.append(
                {
                    "train items": _refs(facts, ev["train_item_ids"]),
                    "held-out items": _refs(facts, ev["heldout_item_ids"]),
                    "variants among them": str(len(ev["variant_item_ids"])),
                    "story context id": f"`{ev['story_context_id'][:12]}`",
                }
            )
        return Verdict(
            self.name,
            "fail",
            f"{len(leaks)} stor{'ies' if len(leaks) != 1 else 'y'} with items on both sides, variants included "
            f"({n_train} train items); expected 0",
            "keep every variant on its original's side: select by story (`meta.variant_of`), not by item",
            "A variant (`tomforge variants`) and its original are one story: a variant of a held-out story in train "
            "teaches the test.",
            rows[:MAX_EVIDENCE],
        )


@register
class OracleDisagreements(AuditCheck):
    name = "oracle disagreements"
    emits = ("consistency:oracle_disagreement",)

    def findings(self, out: Findings, data: FindingInputs) -> None:
        rows = data.variant_findings()
        out.extend(rows.filter(pl.col("check") == "consistency:oracle_disagreement"))

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        """Golds the independent checker rejects under the source's own rules (None without `oracle_checks`)."""
        found = _findings_of(facts, "consistency:oracle_disagreement")
        if not found:
            return None
        rows, n, n_warehouse = [], 0, 0
        for finding in found:
            ev = json.loads(finding["evidence"])
            n += len(ev["item_ids"])
            n_warehouse += ev.get("n_rejected_in_warehouse", len(ev["item_ids"]))
            rows.append(
                {
                    "source": md_escape(ev["source"]),
                    "rule set": md_escape(ev["rule_set"]),
                    "rejected golds": f"{len(ev['item_ids'])} of {ev['n_checked'] - ev['n_unparsed']} parsed",
                    "items": _refs(facts, ev["item_ids"]),
                }
            )
        return Verdict(
            self.name,
            "warn",
            f"the checker rejects {n} published golds in the audited selections ({n_warehouse} in the warehouse's "
            "`oracle_checks`, for the sources selected; under each source's own rules); expected 0",
            f"`tomforge clean --quarantine-oracle` quarantines the {n} items (see `oracle_checks` for the deciding event)",
            "Every gold of a parsed real story re-derived by `schemas/world/checker.py` (no code shared with the generator) "
            "under the source's documented rules.",
            rows[:MAX_EVIDENCE],
        )
