"""`AuditSummary`: what one audit run found, shared by the runner and the report renderer.

It lives apart from `audits.run` so that the report can take it without importing the runner
(which imports the report).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tomforge.audits.verdict import Verdict


@dataclass
class AuditSummary:
    run_id: str
    train_where: str
    heldout_where: str | None
    n_train: int
    n_heldout: int
    n_in_both: int
    findings: pl.DataFrame
    stats: dict
    out_dir: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def n_flagged(self) -> int:
        return self.findings.height

    def header(self) -> str:
        return f"audit {self.run_id}: train {self.n_train} items ({self.train_where})" + (
            f", held-out {self.n_heldout} items ({self.heldout_where})" if self.heldout_where else ", no held-out side"
        )

    def verdict_lines(self) -> list[str]:
        """The verdict table as text: one line per check, the action under each that fails or warns."""
        width = max((len(v.check) for v in self.verdicts), default=0)
        out = []
        for v in self.verdicts:
            out.append(f"  {v.status.upper() if v.status == 'fail' else v.status:<4}  {v.check:<{width}}  {v.finding}")
            if v.status != "pass":
                out.append(f"  {'':<4}  {'':<{width}}  -> {v.action.replace('`', '')}")
        return out

    def lines(self) -> list[str]:
        """A one-screen summary: the verdict first, then the run's figures."""
        out = [self.header(), *self.verdict_lines()]
        if self.n_in_both:
            out.append(
                f"  overlap of the selections: {self.n_in_both} items match both (train and held-out); "
                "`tomforge clean` keeps them held-out and drops them from train (reason in_both_selections)"
            )
        s = self.stats
        out.append(
            f"  contexts {s.get('contexts', 0)} (distinct texts {s.get('docs', 0)}), LSH bands x rows "
            f"{s.get('bands')}x{s.get('rows')}, candidates {s.get('lsh_candidates', 0)}, verified {s.get('verified_pairs', 0)}, "
            f"signatures cached {s.get('signatures_cached', 0)} / computed {s.get('signatures_computed', 0)}; "
            f"{self.findings.height} findings in audit_findings"
        )
        if self.out_dir:
            out.append(f"  report: {self.out_dir / 'audit_report.md'} (and audit_report.html)")
        return out
