"""`AuditCheck`: one check of the audit as one object: the tables it computes, the rows it adds to
`audit_findings`, its line of the verdict, and how a mixed-source audit names the source that fails it.

Why one object: a check used to be a table in `audits.run`, a finding function beside it and a
verdict function registered in `audits.verdict`, three places that had to agree. A check registers
where it is defined (`@register`, as dolma's `@TaggerRegistry.add`), with the report sections of its
tables, so adding one is one edit; the registry (`REGISTRY.checks()`, in verdict order) is the one list
`audits.run` iterates for tables, findings, verdicts and report sections.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

import polars as pl

from tomforge.audits.artifacts import heuristic_scores
from tomforge.audits.config import AuditParams
from tomforge.audits.features import context_stories, item_features
from tomforge.audits.report import ReportSection
from tomforge.audits.verdict import AuditFacts, Verdict

if TYPE_CHECKING:
    from tomforge.audits.overlap import OverlapResult

Phase = Literal["artifacts", "baselines"]
# how a mixed-source audit names the source(s) behind a FAIL (`audits.by_source`):
#   "items": count the items the check implicates (`implicated`) per source;
#   "recompute": compute the check's tables and verdict again on each source's items alone.
SourceSplit = Literal["items", "recompute"]


@dataclass
class TableInputs:
    """What a check's tables are computed from: both selections and the audit's parameters. The
    items with their text features and the heuristics' per-item hits are computed on first use (the
    baselines' thread never needs them) and live as long as this object (one phase)."""

    items: pl.DataFrame  # both sides, with `side` and `selection` columns
    train: pl.DataFrame
    heldout: pl.DataFrame | None  # None: no held-out side
    params: AuditParams

    @cached_property
    def stories(self) -> pl.DataFrame:
        """Each context's normalized story (`audits.features.context_stories`): normalized once for
        the item features and the feature-label cues."""
        return context_stories(self.items)

    @cached_property
    def frame(self) -> pl.DataFrame:
        """The items with their features (`audits.features.item_features`), belief order as Int64."""
        feats = item_features(self.items.unique("item_id", keep="first", maintain_order=True), self.stories)
        return self.items.join(feats, on="item_id", how="left", maintain_order="left").with_columns(
            pl.col("belief_order").cast(pl.Int64)
        )

    @cached_property
    def scores(self) -> pl.DataFrame:
        """Per item and heuristic: does the rule pick the gold (`audits.artifacts.heuristic_scores`)."""
        return heuristic_scores(self.frame)

    def computed_scores(self) -> pl.DataFrame | None:
        """`scores` when a check's tables computed them, None otherwise (never computes them)."""
        return self.__dict__.get("scores")


class Findings:
    """The findings table being built: one row per `add` (check, severity, selection, message,
    evidence as JSON, the baseline it was compared with)."""

    SCHEMA = {
        "check": pl.Utf8,
        "severity": pl.Utf8,
        "selection": pl.Utf8,
        "message": pl.Utf8,
        "evidence": pl.Utf8,
        "baseline": pl.Utf8,
    }

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, check: str, severity: str, selection: str, message: str, evidence: dict, baseline: str) -> None:
        self.rows.append(
            {
                "check": check,
                "severity": severity,
                "selection": selection,
                "message": message,
                "evidence": json.dumps(evidence, sort_keys=True, default=str),
                "baseline": baseline,
            }
        )

    def extend(self, frame: pl.DataFrame) -> None:
        """Rows already in the table's shape (e.g. `audits.variants.variant_findings`)."""
        self.rows.extend(frame.select(list(self.SCHEMA)).to_dicts())

    def frame(self, order: tuple[str, ...] = ()) -> pl.DataFrame:
        """The table, its rows grouped by finding kind in `order` (kinds not listed last), each
        kind's rows in the order they were added."""
        rank = {kind: i for i, kind in enumerate(order)}
        rows = sorted(self.rows, key=lambda r: rank.get(r["check"], len(order)))
        return pl.DataFrame(rows, schema=self.SCHEMA)


@dataclass
class FindingInputs:
    """What a check's findings read: the overlap result, every audit table computed so far, the
    parameters, and (for the variant checks) the warehouse and the ids of both selections."""

    overlap: OverlapResult
    tables: dict[str, pl.DataFrame]
    params: AuditParams
    warehouse: Path
    train_ids: pl.Series
    heldout_ids: pl.Series
    _variant_rows: pl.DataFrame | None = field(default=None, repr=False)

    def variant_findings(self) -> pl.DataFrame:
        """Variant leaks and oracle disagreements (`audits.variants`), read from the warehouse once."""
        if self._variant_rows is None:
            from tomforge.audits.variants import variant_findings

            self._variant_rows = variant_findings(self.warehouse, self.train_ids, self.heldout_ids)
        return self._variant_rows


class AuditCheck:
    """One check: subclass it, set `name` (and what it owns and emits), override `verdict` (and
    `tables` / `findings` when it has them), and decorate the class with `@register`."""

    name: ClassVar[str]  # the check's name; its verdict line's first column (which may add a figure)
    owns: ClassVar[tuple[str, ...]] = ()  # audit tables `tables` computes
    phase: ClassVar[Phase] = "artifacts"  # the side thread's phase that computes them
    reads: ClassVar[tuple[str, ...]] = ()  # other audit tables the verdict reads (computed by another check or phase)
    emits: ClassVar[tuple[str, ...]] = ()  # finding kinds (`audit_findings.check`) `findings` adds
    by_source: ClassVar[SourceSplit | None] = None  # how a mixed-source FAIL names its source(s)
    sections: ClassVar[tuple[ReportSection, ...]] = ()  # the report's sections of tables in `owns`

    def tables(self, data: TableInputs) -> dict[str, pl.DataFrame]:
        """The tables in `owns`, computed from the selections (none by default)."""
        return {}

    def findings(self, out: Findings, data: FindingInputs) -> None:
        """Add this check's rows to `audit_findings` (none by default)."""

    def verdict(self, facts: AuditFacts) -> Verdict | None:
        """The verdict line; None when the check does not apply to this audit (e.g. no held-out side)."""
        raise NotImplementedError

    def implicated(self, facts: AuditFacts, items: pl.DataFrame) -> pl.DataFrame | None:
        """For `by_source = "items"`: the rows of `items` (item_id, context_id, side, source; one per
        item and side) a failing verdict is about."""
        return None


C = TypeVar("C", bound=type[AuditCheck])
# The verdict's order, family by family: the modules of `audits.checks` (a check defined elsewhere follows).
FAMILIES = ("overlap", "labels", "artifacts", "ranks", "variants")
FAMILY_PACKAGE = "tomforge.audits.checks."


class CheckRegistry:
    """Every audit check, one instance each, added by `@register` where its class is defined. The
    order (verdict lines, findings, report sections) is by family in `FAMILIES`, then by definition;
    a class registered again under the same module and name (a reload) replaces its first entry."""

    def __init__(self, families: tuple[str, ...]) -> None:
        self.families = families
        self.entries: list[AuditCheck] = []

    def add(self, cls: C) -> C:
        """Register `cls` (used as the decorator `@register`); returns it unchanged."""
        key = (cls.__module__, cls.__qualname__)
        for i, entry in enumerate(self.entries):
            if (type(entry).__module__, type(entry).__qualname__) == key:
                self.entries[i] = cls()
                return cls
        self.entries.append(cls())
        return cls

    def _rank(self, check: AuditCheck) -> int:
        """Its family's place (a module of `audits.checks` named in `families`); after them all otherwise."""
        module = type(check).__module__
        if module.startswith(FAMILY_PACKAGE) and module[len(FAMILY_PACKAGE) :] in self.families:
            return self.families.index(module[len(FAMILY_PACKAGE) :])
        return len(self.families)

    def checks(self) -> tuple[AuditCheck, ...]:
        """The registered checks in verdict order."""
        return tuple(sorted(self.entries, key=self._rank))


REGISTRY = CheckRegistry(FAMILIES)
register = REGISTRY.add
