"""Are two `scan_hits.parquet` files the same hits? (the check of a structural change to the scan:
the same documents, stories, kinds, spans and figures before and after).

Run: `python bench/same_hits.py OLD/scan_hits.parquet NEW/scan_hits.parquet`; exits 1 and prints the
first differing rows when they differ. Rows are compared as sets (the order of shards and batches
does not matter), every column as written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

KEY = ["shard", "row", "story_key"]


def differences(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Rows found in one file and not the other (column `side`: old or new), each row compared whole
    (its text form, so that list columns compare too)."""
    if old.schema != new.schema:
        raise ValueError(f"the schemas differ: {old.schema} != {new.schema}")
    old_rows = [str(r) for r in old.sort(KEY).iter_rows()]
    new_rows = [str(r) for r in new.sort(KEY).iter_rows()]
    in_old, in_new = set(old_rows), set(new_rows)
    return pl.DataFrame(
        {
            "side": ["old"] * sum(r not in in_new for r in old_rows) + ["new"] * sum(r not in in_old for r in new_rows),
            "row": [r for r in old_rows if r not in in_new] + [r for r in new_rows if r not in in_old],
        },
        schema={"side": pl.Utf8, "row": pl.Utf8},
    )


def main() -> None:
    old, new = (pl.read_parquet(Path(p)) for p in sys.argv[1:3])
    diff = differences(old, new)
    if diff.height or old.height != new.height:
        print(f"DIFFERENT: {old.height} old hits, {new.height} new; {diff.height} rows in one side only")
        with pl.Config(tbl_cols=-1, fmt_str_lengths=60):
            print(diff.head(10))
        sys.exit(1)
    print(f"same hits: {old.height} rows (kinds {dict(old['kind'].value_counts().iter_rows())})")


if __name__ == "__main__":
    main()
