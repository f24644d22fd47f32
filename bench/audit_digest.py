"""One sha256 per audit table of a warehouse and per file of an audit's report folder, so that a
change meant to make the audit faster can show that its findings did not move: audit the same
warehouse before and after (e.g. `python -m bench.minhash ... --work-dir DIR` with each tree, copying
DIR/w.duckdb and DIR/report after the first), run this on each and diff the two outputs.

Run: `python -m bench.audit_digest WAREHOUSE [REPORT_DIR]`. Tables are hashed row by row in a fixed
order by `bench.behaviour_digest.table_digests` (columns holding times left out and named); the
report's files byte by byte (a report that prints the phases' seconds differs there: diff those files).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.behaviour_digest import file_digests, table_digests


def audit_digests(warehouse: Path, report: Path | None) -> dict[str, str]:
    """The digest of every `audit_*` table of `warehouse` and of every file under `report`."""
    tables = {name.split(":", 1)[1]: digest for name, digest in table_digests(warehouse).items()}
    lines = {f"table {name}": digest for name, digest in tables.items() if name.startswith("audit_")}
    if report is not None:
        lines |= file_digests(report, "report")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("warehouse", type=Path)
    ap.add_argument("report", type=Path, nargs="?")
    args = ap.parse_args()
    for name, digest in audit_digests(args.warehouse, args.report).items():
        print(f"{name}  {digest}")


if __name__ == "__main__":
    main()
