"""What a scan found, as the CLI prints it and the report renders it (a module of its own so the
report and the step both use it without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tomforge.audits.scan_config import ScanParams

HITS_FILE = "scan_hits.parquet"


@dataclass
class ScanSummary:
    benchmark_where: str
    n_items: int
    n_stories: int
    read: int
    hits: pl.DataFrame
    per_source: pl.DataFrame
    ledger: dict | None
    out_dir: Path
    params: ScanParams
    shards: list[dict] = field(default_factory=list)

    @property
    def contaminated(self) -> bool:
        return self.hits.height > 0

    def lines(self) -> list[str]:
        out = [
            f"scan: {self.read} documents read in {len(self.shards)} shard(s) against {self.n_stories} held-out "
            f"stories ({self.n_items} questions) selected by {self.benchmark_where!r}"
        ]
        for r in self.per_source.iter_rows(named=True):
            out.append(
                f"{r['source']}: {r['stories_found']} of {r['stories']} held-out stories and "
                f"{r['questions_exposed']} of {r['questions']} questions occur in the corpus "
                f"({r['questions_text_found']} with the question text too)"
            )
        kinds = self.hits.group_by("kind").len().sort("kind") if self.hits.height else None
        docs = self.hits["doc_id"].n_unique() if self.hits.height else 0
        out.append(
            f"hits: {self.hits.height} (document, story) pairs in {docs} documents"
            + (": " + ", ".join(f"{k} {n}" for k, n in kinds.iter_rows()) if kinds is not None else "")
        )
        if self.ledger:
            t = self.ledger["total"]
            out.append(
                f"purify: read {t['read']} = kept {t['kept']} + removed {t['removed']} -> {self.ledger['purified']}"
            )
        out.append(f"report: {self.out_dir / 'scan_report.md'}; hits: {self.out_dir / HITS_FILE}")
        return out
