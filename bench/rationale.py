"""What rationales cost a release: the RL columns of generated and real items with and without the
belief-state rationale (`rationale`, `rationale_text`, the world in the ground truth), side by side:
build time, in-memory size and zstd parquet size. The reference is the same columns without them.

Run: `python bench/rationale.py [N]` (N generated items, default 5000; the full HiToM and ToMi test files
are added when `../shared/real-data/` has them). Prints figures; asserts nothing.
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq  # noqa: E402

import tomforge.rl.columns as columns  # noqa: E402
from tomforge.generators.generate import generate_records  # noqa: E402
from tomforge.generators.rationale_text import rationale_columns  # noqa: E402
from tomforge.generators.real.report import read_records  # noqa: E402

REAL = Path(__file__).resolve().parents[2] / "shared" / "real-data"


def measure(records: list[dict], rationales: columns.Rationales | None) -> tuple[float, int, int, int]:
    """(seconds, arrow bytes, parquet bytes, rows with a rationale) of `rl_table` over the records."""
    started = time.perf_counter()
    table = columns.rl_table(records, rationales)
    seconds = time.perf_counter() - started
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return seconds, table.nbytes, buffer.tell(), sum(v is not None for v in table.column("rationale").to_pylist())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    sets = {f"generated {n} (orders 0-6)": list(generate_records(n, seed=0))}
    for source, path in (("hitom", REAL / "hitom" / "Hi-ToM_data.json"), ("tomi", REAL / "tomi" / "fb_all_test.txt")):
        if path.is_file():
            sets[f"{source} {path.name}"] = read_records(source, path)
    for name, records in sets.items():
        base = measure(records, None)  # the reference: no rationales
        full = measure(records, rationale_columns)
        print(
            f"{name}: {len(records)} rows, rationale on {full[3]}; build {base[0]:.2f} s -> {full[0]:.2f} s "
            f"({full[0] / base[0]:.1f}x); arrow {base[1] / 1e6:.1f} -> {full[1] / 1e6:.1f} MB; "
            f"parquet (zstd) {base[2] / 1e6:.2f} -> {full[2] / 1e6:.2f} MB ({full[2] / base[2]:.1f}x)"
        )


if __name__ == "__main__":
    main()
