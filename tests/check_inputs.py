"""One audit check's findings on hand-made tables: the `FindingInputs` a check reads, with no warehouse and empty
selections, so a test of `audits/checks/` builds only the tables (or overlap pairs) the check looks at."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import polars as pl

from tomforge.audits.check import FindingInputs, Findings
from tomforge.audits.config import AuditParams


def check_findings(
    check: Any,
    tables: dict[str, pl.DataFrame] | None = None,
    params: AuditParams | None = None,
    pairs: pl.DataFrame | None = None,
    variant_rows: pl.DataFrame | None = None,
) -> list[dict]:
    """The finding rows `check` writes; `pairs`: the overlap result's pairs; `variant_rows`: what the variant
    checks would read from the warehouse."""
    overlap = None if pairs is None else SimpleNamespace(pairs=pairs)
    inputs = FindingInputs(
        overlap,  # type: ignore[arg-type]
        tables or {},
        params or AuditParams(),
        None,  # type: ignore[arg-type]
        pl.Series([]),
        pl.Series([]),
        variant_rows,
    )
    out = Findings()
    check.findings(out, inputs)
    return out.rows
