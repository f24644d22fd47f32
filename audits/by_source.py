"""Which source a failing check is about, in an audit whose selections mix sources.

A check declares how (`AuditCheck.by_source`):
- "items": the items it implicates (overlap pairs, label conflicts, repeated sentences, variant
  leaks), counted per side and source: "[items by source: held-out hitom 12; train tomi 3]";
- "recompute": a statistical check (gold position, answer prior, feature cues, partial-input
  baselines, heuristic rules, inverted difficulty, gold rank) is computed again on each source's
  items alone, tables and verdict, and the sources where it fails alone are named with their own
  figure: "[by source: fails in hitom alone (...); passes in tomi]". A pooled FAIL that no source
  shows alone says so (the mixture itself is skewed).
Only failing lines are split, so a clean mixed audit costs nothing more; a recomputed check costs
about one more run of it over the selections.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import polars as pl

from tomforge.audits.check import AuditCheck, TableInputs
from tomforge.audits.verdict import AuditFacts, Verdict, side_name

Owners = Callable[[str], "AuditCheck | None"]  # the check that computes an audit table (`audits.checks.owner_of`)


def with_sources(check: AuditCheck, verdict: Verdict, facts: AuditFacts, owners: Owners) -> Verdict:
    """A failing verdict with the sources behind it appended to its finding; others unchanged."""
    if verdict.status != "fail" or check.by_source is None:
        return verdict
    if check.by_source == "recompute":
        return _recomputed_by_source(check, verdict, facts, owners)
    return _items_by_source(check, verdict, facts)


def _items_by_source(check: AuditCheck, verdict: Verdict, facts: AuditFacts) -> Verdict:
    """'[items by source: held-out hitom 12; train tomi 3]': the implicated items per side and source."""
    items = facts.items.select("item_id", "context_id", "side", "source").unique(["item_id", "side"])
    implicated = check.implicated(facts, items)
    if implicated is None:
        return verdict
    parts = []
    for side in ("heldout", "train"):
        counts = (
            implicated.filter(pl.col("side") == side)
            .group_by("source")
            .len()
            .sort(["len", "source"], descending=[True, False])
        )
        if counts.height:
            parts.append(f"{side_name(side)} " + ", ".join(f"{s} {n}" for s, n in counts.iter_rows()))
    if not parts:
        return verdict
    return replace(verdict, finding=f"{verdict.finding} [items by source: {'; '.join(parts)}]")


def source_verdicts(check: AuditCheck, facts: AuditFacts, owners: Owners) -> dict[str, Verdict | str]:
    """The check's verdict on each source's items alone (sources in name order); a string where it
    could not be computed there (why)."""
    out: dict[str, Verdict | str] = {}
    for source in sorted(facts.items["source"].unique().to_list()):
        sub = facts_of_source(check, facts, source, owners)
        if isinstance(sub, str):
            out[source] = sub
            continue
        verdict = check.verdict(sub)
        out[source] = verdict if verdict is not None else "not applicable to its items alone"
    return out


def facts_of_source(check: AuditCheck, facts: AuditFacts, source: str, owners: Owners) -> AuditFacts | str:
    """`facts` narrowed to one source's items, with the tables `check` reads computed again on them
    by the checks that own them (`owners`); a string saying why it cannot be done."""
    items = facts.items.filter(pl.col("source") == source)
    train = items.filter(pl.col("side") == "train").drop("side", "selection")
    heldout = items.filter(pl.col("side") == "heldout").drop("side", "selection")
    needed = {id(o): o for t in check.owns + check.reads if (o := owners(t)) is not None}
    if train.height == 0 and any(owner.phase == "baselines" for owner in needed.values()):
        return "no train items (the baselines learn from them)"
    has_heldout = facts.has_heldout and heldout.height > 0
    data = TableInputs(items, train, heldout if has_heldout else None, facts.params)
    tables = dict(facts.tables)
    try:
        for owner in needed.values():
            tables |= owner.tables(data)
    except ValueError as error:  # too few items or groups for the statistic on this source alone
        return f"not computed: {error}"
    return AuditFacts(tables, items, facts.conflict_items, facts.params, has_heldout, data.computed_scores())


def _recomputed_by_source(check: AuditCheck, verdict: Verdict, facts: AuditFacts, owners: Owners) -> Verdict:
    """'[by source: fails in hitom alone (...); passes in tomi]'."""
    fails, passes, other = [], [], []
    for source, alone in source_verdicts(check, facts, owners).items():
        if isinstance(alone, str):
            other.append(f"{source}: {alone}")
        elif alone.status == "fail":
            fails.append(f"fails in {source} alone ({alone.finding})")
        else:
            passes.append(source)
    parts = fails or [f"no source fails alone ({', '.join(passes) or 'none tested'}): the mixture does"]
    if fails and passes:
        parts.append(f"passes in {', '.join(passes)}")
    parts += other
    return replace(verdict, finding=f"{verdict.finding} [by source: {'; '.join(parts)}]")
