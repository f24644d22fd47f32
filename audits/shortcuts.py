"""How far template heuristics get on generated records, per belief order and answer format,
computed by the project's artifact audit (`audits.artifacts.heuristic_baselines`); the heuristics
are the ones the generator balances against (`generators/shortcuts.py`).

    python -m tomforge.audits.shortcuts [N]     # the table on N generated records (default 20000)
"""

from __future__ import annotations

from typing import Any, Iterable

from tomforge.generators.shortcuts import HEURISTICS

AUDIT_NAMES = {
    "first_container": "first_container",
    "last_mentioned": "last",
    "most_mentioned": "most",
    "modal_position": "modal_position",
}


def shortcut_table(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (belief order or "memory", answer format): n, chance and each heuristic's accuracy."""
    import polars as pl

    from tomforge.audits.artifacts import heuristic_baselines
    from tomforge.audits.config import AuditParams
    from tomforge.audits.features import item_features, records_frame

    items = records_frame(records).with_columns(pl.lit("generated").alias("selection"))
    df = items.join(item_features(items), on="item_id", how="left")
    table = heuristic_baselines(df, AuditParams(), by_format=True).filter(pl.col("belief_order") != "all")
    counts = df.with_columns(
        pl.when(pl.col("question_type") == "memory")
        .then(pl.lit("memory"))
        .otherwise(pl.col("belief_order").cast(pl.Utf8))
        .alias("order")
    )
    counts = counts.group_by("order", "answer_format").agg(pl.len().alias("n"), pl.col("chance").mean())
    cells = {(r["belief_order"], r["answer_format"], r["heuristic"]): r for r in table.iter_rows(named=True)}
    rows = []
    for order, fmt, n, chance in counts.sort(
        pl.col("order") == "memory", pl.col("order").str.zfill(3), "answer_format"
    ).iter_rows():
        row = {"order": order, "format": fmt, "n": n, "chance": round(chance, 4)}
        for name in HEURISTICS:
            cell = cells.get((order, fmt, AUDIT_NAMES[name]))
            row[name] = round(cell["accuracy"], 4) if cell else None
        rows.append(row)
    return rows


def worst_gap(rows: list[dict[str, Any]], skip_memory_first: bool = True) -> float:
    """The largest |heuristic - chance| over the rows (memory's first container is the answer by definition)."""
    gap = 0.0
    for row in rows:
        for name in HEURISTICS:
            if row[name] is None or (skip_memory_first and row["order"] == "memory" and name == "first_container"):
                continue
            gap = max(gap, abs(row[name] - row["chance"]))
    return gap


def format_table(rows: list[dict[str, Any]]) -> str:
    """The table as Markdown (accuracies in percent)."""
    head = "| order | format | n | chance | " + " | ".join(HEURISTICS) + " |"
    lines = [head, "|" + "---|" * (4 + len(HEURISTICS))]
    for row in rows:
        cells = [row["order"], row["format"], str(row["n"]), f"{100 * row['chance']:.1f}"]
        cells += ["-" if row[h] is None else f"{100 * row[h]:.1f}" for h in HEURISTICS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m tomforge.audits.shortcuts [N]
    import sys

    from tomforge.generators import generate_records

    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    table = shortcut_table(generate_records(size, seed=0))
    print(format_table(table))
    print(f"worst gap: {100 * worst_gap(table):.2f} points")
