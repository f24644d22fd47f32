"""What a scan found, as the CLI prints it and the report renders it (a module of its own so the
report and the step both use it without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_null import NgramPower

HITS_FILE = "scan_hits.parquet"
REJECTS_FILE = "scan_rejects.parquet"


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
    scanned: int = 0  # documents read = scanned + rejected
    rejected: int = 0
    rejects: pl.DataFrame = field(default_factory=pl.DataFrame)  # the first rejects of each shard, with reasons
    ngram: NgramPower | None = None  # whether the n-gram kind can fire against this benchmark's null

    @property
    def contaminated(self) -> bool:
        return self.hits.height > 0

    @property
    def removed(self) -> int:
        """Scanned documents with a hit."""
        return self.hits.select("shard", "row").unique().height if self.hits.height else 0

    @property
    def kept(self) -> int:
        """Scanned documents without a hit (with purify: as the writer counted them)."""
        return int(self.ledger["total"]["kept"]) if self.ledger else self.scanned - self.removed

    def lines(self) -> list[str]:
        out = [
            f"scan: {self.read} documents read in {len(self.shards)} shard(s): {self.scanned} scanned, "
            f"{self.rejected} rejected, against {self.n_stories} held-out "
            f"stories ({self.n_items} questions) selected by {self.benchmark_where!r}"
        ]
        if self.rejected:
            first = "; ".join(
                f"{r['shard']} {r['place']} ({r['field']}): {r['reason']}"
                for r in self.rejects.head(3).iter_rows(named=True)
            )
            out.append(
                f"rejected: {self.rejected} record{'' if self.rejected == 1 else 's'} not scanned (first: {first}); "
                f"all with their reasons in {self.out_dir / REJECTS_FILE}"
            )
        if self.ngram is not None:
            out.append(f"n-gram test: {self.ngram.why}")
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
        out.append(f"documents: scanned {self.scanned} = kept {self.kept} + removed {self.removed}")
        if self.ledger:
            t = self.ledger["total"]
            out.append(
                f"purify: read {t['read']} = kept {t['kept']} + removed {t['removed']} + rejected {t['rejected']} "
                f"-> {self.ledger['purified']}"
            )
        out.append(f"report: {self.out_dir / 'scan_report.md'}; hits: {self.out_dir / HITS_FILE}")
        return out
