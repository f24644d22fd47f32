"""What rationales cost a release: the RL columns of generated and real items with and without the
belief-state rationale (`rationale`, `rationale_text`, the world in the ground truth), side by side:
build time, in-memory size and zstd parquet size. The reference is the same columns without them.

Run: `python bench/rationale.py [N]` (N generated items, default 5000; the full HiToM and ToMi test files
are added when `../shared/real-data/` has them). Prints figures; asserts nothing.

`python bench/rationale.py lengths [N] [--tokenizer PATH]`: the mean length of each rationale form by belief
order on N generated items (default 2000, orders 0-6, seed 0) and on the HiToM release when present, in words
(`str.split`) and, given a `tokenizer.json` (e.g. SmolLM2's), in tokens: the table of docs/rationales.md.
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq  # noqa: E402

import tomforge.schemas.rl.columns as columns  # noqa: E402
from tomforge.generators.generate import generate_records  # noqa: E402
from tomforge.generators.rationale import rationale_of_record  # noqa: E402
from tomforge.generators.rationale_text import FORMS, rationale_columns, rationale_text  # noqa: E402
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


def lengths(records: list[dict], count: Callable[[str], int]) -> dict[str, dict[int, float]]:
    """{form: {belief order: mean length}} over the records that have a rationale."""
    totals: dict[str, dict[int, list[int]]] = {form: {} for form in FORMS}
    for rec in records:
        r = rationale_of_record(rec)
        if r is None or rec.get("belief_order") is None:
            continue
        for form in FORMS:
            totals[form].setdefault(int(rec["belief_order"]), []).append(count(rationale_text(r, form)))
    return {form: {o: sum(v) / len(v) for o, v in sorted(by.items())} for form, by in totals.items()}


def main_lengths(args: list[str]) -> None:
    tokenizer = args[args.index("--tokenizer") + 1] if "--tokenizer" in args else None
    rest = [a for i, a in enumerate(args) if a != "--tokenizer" and (i == 0 or args[i - 1] != "--tokenizer")]
    n = int(rest[0]) if rest else 2000
    counters: dict[str, Callable[[str], int]] = {"words": lambda text: len(text.split())}
    if tokenizer:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tokenizer)
        counters["tokens"] = lambda text: len(tok.encode(text).ids)
    sets = {f"generated {n}": list(generate_records(n, max_order=6, seed=0))}
    hitom = REAL / "hitom" / "Hi-ToM_data.json"
    if hitom.is_file():
        sets["HiToM release"] = read_records("hitom", hitom)
    for unit, count in counters.items():
        for name, records in sets.items():
            table = lengths(records, count)
            orders = sorted({o for by in table.values() for o in by})
            print(f"\nmean {unit}, {name}\n| form | " + " | ".join(f"order {o}" for o in orders) + " |")
            print("|---|" + "---|" * len(orders))
            for form, by in table.items():
                print(f"| {form} | " + " | ".join(f"{by[o]:.0f}" if o in by else "" for o in orders) + " |")


def main() -> None:
    if sys.argv[1:2] == ["lengths"]:
        main_lengths(sys.argv[2:])
        return
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
