"""The verdict's shared parts: `Verdict` (one line per check: pass / warn / fail, the headline figure
against its baseline, what to do, and an evidence section a reader can follow: source_ref + marked
excerpt), `AuditFacts` (what every check's verdict reads) and the `audit_verdicts` table.

The checks themselves are `audits.check.AuditCheck` objects, each registered where it is defined
(`@register`; `audits.checks.registered()` gives them in the verdict's order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.audits.evidence import context_refs, md_escape
from tomforge.schemas.errors import ExitCode, TomforgeError

STATUSES = ("fail", "warn", "pass")
MAX_EVIDENCE = 8
SIMILAR_KINDS = ("near_duplicate", "contained")  # audit_overlap_pairs kinds: Jaccard, or containment only


class ChecksFailed(TomforgeError):
    """`audit --strict`: a check of the verdict failed (the summary above names it)."""

    exit_code = ExitCode.FINDINGS


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
            frame = (
                self.items.filter(story & (pl.col("side") == side)).select(cols)
                if side
                else pl.concat([self.items.filter(story).select(cols), self.conflict_items.filter(story).select(cols)])
            )
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

        keyed = with_kept_repeat(
            self.items.unique(["side", "item_id"], maintain_order=True), self.tables["audit_contexts"]
        )
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


def verdict_frame(items: list[Verdict]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"check": v.check, "status": v.status, "finding": v.finding, "action": v.action} for v in items],
        schema={"check": pl.Utf8, "status": pl.Utf8, "finding": pl.Utf8, "action": pl.Utf8},
    )


def pct(x: float) -> str:
    """A share as a whole percentage: '61%'."""
    return f"{100 * x:.0f}%"


def more(n: int, where: str) -> str:
    """Where the rows beyond the evidence shown are."""
    return f"{n - MAX_EVIDENCE} more: {where}." if n > MAX_EVIDENCE else ""


def side_name(selection: str) -> str:
    return {"heldout": "held-out"}.get(selection, selection)
