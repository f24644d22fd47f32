"""The registry of audit checks: `CHECKS`, each check declared once, in the order of the verdict
(report, terminal summary, `audit_verdicts`). `audits.run` iterates it for the checks' tables, their
findings and their verdict lines; `audits.by_source` for the sources behind a mixed-source FAIL.

To add a check: an `AuditCheck` subclass in the module of its family (or a new one) and an instance
in `CHECKS` (ARCHITECTURE.md has an example).
"""

from __future__ import annotations

import polars as pl

from tomforge.audits.by_source import with_sources
from tomforge.audits.check import AuditCheck, FindingInputs, Findings, Phase, TableInputs
from tomforge.audits.checks.artifacts import (
    AnswerPrior,
    FeatureLabel,
    GoldPosition,
    HeuristicRules,
    InvertedDifficulty,
    PartialInput,
)
from tomforge.audits.checks.labels import LabelConflicts
from tomforge.audits.checks.overlap import (
    ExactCopies,
    NearDuplicates,
    PartialCopies,
    ReformattedCopies,
    StructuralTwins,
    WithinSideDuplicates,
)
from tomforge.audits.checks.ranks import GoldRank, RepeatedSentences
from tomforge.audits.checks.variants import OracleDisagreements, VariantLeaks
from tomforge.audits.verdict import AuditFacts, Verdict

CHECKS: tuple[AuditCheck, ...] = (
    ExactCopies(),
    NearDuplicates(),
    ReformattedCopies(),
    PartialCopies(),
    StructuralTwins(),
    WithinSideDuplicates(),
    LabelConflicts(),
    GoldPosition(),
    AnswerPrior(),
    FeatureLabel(),
    PartialInput(),
    HeuristicRules(),
    InvertedDifficulty(),
    GoldRank(),
    RepeatedSentences(),
    VariantLeaks(),
    OracleDisagreements(),
)
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
    for check in CHECKS:
        if check.name == name:
            return check
    raise KeyError(f"no audit check named {name!r}; known: {', '.join(c.name for c in CHECKS)}")


def owner_of(table: str) -> AuditCheck | None:
    """The check whose `tables` computes this audit table (None: another phase computes it)."""
    return next((check for check in CHECKS if table in check.owns), None)


def tables_of(data: TableInputs, phase: Phase) -> dict[str, pl.DataFrame]:
    """The tables the checks of one phase compute, in registry order."""
    tables: dict[str, pl.DataFrame] = {}
    for check in CHECKS:
        if check.phase == phase and check.owns:
            tables |= check.tables(data)
    return tables


def findings_of(data: FindingInputs) -> pl.DataFrame:
    """`audit_findings`: every check's rows, in `FINDINGS_ORDER`."""
    out = Findings()
    for check in CHECKS:
        check.findings(out, data)
    return out.frame(FINDINGS_ORDER)


def verdicts_of(facts: AuditFacts) -> list[Verdict]:
    """One line per check that applies, in registry order; in a mixed-source audit a failing line
    names its sources (`audits.by_source`)."""
    found = [(check, v) for check in CHECKS if (v := check.verdict(facts)) is not None]
    if "source" in facts.items.columns and facts.items["source"].n_unique() > 1:
        return [with_sources(check, v, facts, owner_of) for check, v in found]
    return [v for _, v in found]
