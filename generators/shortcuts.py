"""How far template heuristics get on generated records, per belief order and answer format,
computed by the project's artifact audit (`audits.artifacts.heuristic_baselines`).

Heuristics (each picks a container without reading the question's perspective):
- `first_container`: the object's first container (from the trace's initial placement);
- `last_mentioned`: the container named last in the story text;
- `most_mentioned`: the container named most often in the text (ties: the one named first);
- `modal_position`: the option at the most frequent gold position of that order and format
  (for yes/no: the most frequent answer).
On multiple choice and free text a container heuristic scores when it names the gold container; on
yes/no it answers "yes" iff the asked container is its pick. `chance` is what uniformly random
options score (1/#options; 1/#containers for free text; 1/2 for yes/no). Memory questions ask for
the first container, so `first_container` is not scored on them (None).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Any, Iterable

HEURISTICS = ("first_container", "last_mentioned", "most_mentioned", "modal_position")
AUDIT_NAMES = {"first_container": "first_container", "last_mentioned": "last", "most_mentioned": "most",
               "modal_position": "modal_position"}


@lru_cache(maxsize=4096)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w])({alternatives})(?![\w])")


def mentions(text: str, containers: Iterable[str]) -> list[str]:
    """Container names in the order they occur in `text` (whole-word matches)."""
    return _pattern(tuple(containers)).findall(text)


def shortcut_table(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (belief order or "memory", answer format): n, chance and each heuristic's accuracy."""
    import polars as pl

    from tomforge.audits.artifacts import heuristic_baselines
    from tomforge.audits.config import AuditParams
    from tomforge.audits.features import item_features, records_frame

    items = records_frame(records).with_columns(pl.lit("generated").alias("selection"))
    df = items.join(item_features(items), on="item_id", how="left")
    table = heuristic_baselines(df, AuditParams(), by_format=True).filter(pl.col("belief_order") != "all")
    counts = df.with_columns(pl.when(pl.col("question_type") == "memory").then(pl.lit("memory"))
                             .otherwise(pl.col("belief_order").cast(pl.Utf8)).alias("order"))
    counts = counts.group_by("order", "answer_format").agg(pl.len().alias("n"), pl.col("chance").mean())
    cells = {(r["belief_order"], r["answer_format"], r["heuristic"]): r for r in table.iter_rows(named=True)}
    rows = []
    for order, fmt, n, chance in counts.sort(pl.col("order") == "memory", pl.col("order").str.zfill(3), "answer_format").iter_rows():
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


def balance_summary(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Counter]]:
    """Per order: counts of gold role, gold position, yes/no answer, base agents and moves."""
    summary: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for record in records:
        order = "memory" if record["question_type"] == "memory" else str(record["belief_order"])
        row = summary[order]
        row["role"][record["meta"]["gold_role"]] += 1
        row["agents"][record["meta"]["base_agents"]] += 1
        row["moves"][record["meta"]["n_moves"]] += 1
        row["format"][record["answer_format"]] += 1
        if record["answer_format"] == "multiple_choice":
            row["position"][record["answer_index"]] += 1
        elif record["answer_format"] == "yes_no":
            row["yes_no"][record["answer"]] += 1
    return summary


def format_table(rows: list[dict[str, Any]]) -> str:
    """The table as Markdown (accuracies in percent)."""
    head = "| order | format | n | chance | " + " | ".join(HEURISTICS) + " |"
    lines = [head, "|" + "---|" * (4 + len(HEURISTICS))]
    for row in rows:
        cells = [row["order"], row["format"], str(row["n"]), f"{100 * row['chance']:.1f}"]
        cells += ["-" if row[h] is None else f"{100 * row[h]:.1f}" for h in HEURISTICS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m tomforge.generators.shortcuts [N]
    import sys

    from tomforge.generators import generate_records

    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    table = shortcut_table(generate_records(size, seed=0))
    print(format_table(table))
    print(f"worst gap: {100 * worst_gap(table):.2f} points")
