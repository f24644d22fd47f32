"""The audit's checks, as registered where each is defined (`@register`, `audits.check`), in the
order of the verdict (report, terminal summary, `audit_verdicts`). `audits.run` iterates them for the
checks' tables, their findings, their verdict lines and their report sections; `audits.by_source` for
the sources behind a mixed-source FAIL.

To add a check: an `AuditCheck` subclass decorated with `@register` in the module of its family
(ARCHITECTURE.md has an example); a new family module is imported here and named in `check.FAMILIES`.
"""

from __future__ import annotations

import polars as pl

from tomforge.audits.by_source import with_sources
from tomforge.audits.check import REGISTRY, AuditCheck, FindingInputs, Findings, Phase, TableInputs
from tomforge.audits.checks import artifacts, labels, overlap, ranks, variants  # noqa: F401 (each registers its checks)
from tomforge.audits.report import ReportSection
from tomforge.audits.verdict import AuditFacts, Verdict


def registered() -> tuple[AuditCheck, ...]:
    """Every registered check, in verdict order (read at each call: a check registered later counts)."""
    return REGISTRY.checks()


# The row order of `audit_findings`: grouped by kind in this order (the overlap pairs' kinds as that
# table sorts them); a kind not listed follows, in registry order.
FINDINGS_ORDER = (
    "overlap:contained",
    "overlap:exact",
    "overlap:near_duplicate",
    "overlap:ngram",
    "overlap:sentences",
    "duplicate:within_side",
    "overlap:structural",
    "artifact:gold_position",
    "artifact:answer_prior",
    "artifact:feature_label",
    "artifact:partial_input",
    "artifact:heuristic",
    "artifact:inverted_difficulty",
    "artifact:gold_rank",
    "artifact:repeated_sentence",
    "consistency:label_conflict",
    "overlap:variant_leak",
    "consistency:oracle_disagreement",
)


def check_named(name: str) -> AuditCheck:
    """The registered check of this name (KeyError naming the known ones otherwise)."""
    for check in registered():
        if check.name == name:
            return check
    raise KeyError(f"no audit check named {name!r}; known: {', '.join(c.name for c in registered())}")


def owner_of(table: str) -> AuditCheck | None:
    """The check whose `tables` computes this audit table (None: another phase computes it)."""
    return next((check for check in registered() if table in check.owns), None)


def tables_of(data: TableInputs, phase: Phase) -> dict[str, pl.DataFrame]:
    """The tables the checks of one phase compute, in registry order."""
    tables: dict[str, pl.DataFrame] = {}
    for check in registered():
        if check.phase == phase and check.owns:
            tables |= check.tables(data)
    return tables


def findings_of(data: FindingInputs) -> pl.DataFrame:
    """`audit_findings`: every check's rows, in `FINDINGS_ORDER`."""
    out = Findings()
    for check in registered():
        check.findings(out, data)
    return out.frame(FINDINGS_ORDER)


def verdicts_of(facts: AuditFacts) -> list[Verdict]:
    """One line per check that applies, in registry order; in a mixed-source audit a failing line
    names its sources (`audits.by_source`)."""
    found = [(check, v) for check in registered() if (v := check.verdict(facts)) is not None]
    if "source" in facts.items.columns and facts.items["source"].n_unique() > 1:
        return [with_sources(check, v, facts, owner_of) for check, v in found]
    return [v for _, v in found]


def sections_of() -> tuple[ReportSection, ...]:
    """The report sections the checks declare for their tables, in registry order."""
    return tuple(section for check in registered() for section in check.sections)
