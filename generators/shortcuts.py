"""How far template heuristics get on generated records, per belief order and answer format.

Heuristics (each picks a container without reading the question's perspective):
- `first_container`: the object's first container (from the trace's initial placement);
- `last_mentioned`: the container named last in the story text;
- `most_mentioned`: the container named most often in the text (ties: the one named first);
- `modal_position`: the option at the most frequent gold position of that order and format
  (for yes/no: the most frequent answer).
On multiple choice and free text a container heuristic scores when it names the gold container; on
yes/no it answers "yes" iff the asked container is its pick. `chance` is what uniformly random
options score (1/#options; 1/#containers for free text; 1/2 for yes/no).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Any, Iterable

HEURISTICS = ("first_container", "last_mentioned", "most_mentioned", "modal_position")


@lru_cache(maxsize=4096)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w])({alternatives})(?![\w])")


def mentions(text: str, containers: Iterable[str]) -> list[str]:
    """Container names in the order they occur in `text` (whole-word matches)."""
    return _pattern(tuple(containers)).findall(text)


def container_picks(record: dict[str, Any]) -> dict[str, str | None]:
    """The container each text heuristic picks for one record."""
    candidates = record["meta"]["candidates"]
    found = mentions(record["context"], candidates)
    counts = Counter(found)
    first_seen = {name: i for i, name in reversed(list(enumerate(found)))}
    most = max(counts, key=lambda c: (counts[c], -first_seen[c])) if counts else None
    initial = next(e["container"] for e in record["trace"][1:]
                   if e["kind"] == "init" and e["obj"] == record["meta"]["object"])
    return {"first_container": initial, "last_mentioned": found[-1] if found else None, "most_mentioned": most}


def _score(record: dict[str, Any], pick: str | None) -> bool:
    if record["answer_format"] == "yes_no":
        return ("yes" if pick == record["meta"]["asked_container"] else "no") == record["answer"]
    return pick == record["answer"]


def _chance(record: dict[str, Any]) -> float:
    if record["answer_format"] == "yes_no":
        return 0.5
    if record["answer_format"] == "multiple_choice":
        return 1.0 / len(record["options"])
    return 1.0 / len(record["meta"]["candidates"])


def shortcut_table(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (belief order or "memory", answer format): n, chance and each heuristic's accuracy."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        order = "memory" if record["question_type"] == "memory" else str(record["belief_order"])
        groups[(order, record["answer_format"])].append(record)
    rows = []
    for (order, fmt), group in sorted(groups.items(), key=lambda kv: (kv[0][0] == "memory", kv[0][0].zfill(3), kv[0][1])):
        hits = Counter()
        for record in group:
            for name, pick in container_picks(record).items():
                hits[name] += _score(record, pick)
        positions = Counter(r["answer"] if fmt == "yes_no" else r["answer_index"] for r in group)
        hits["modal_position"] = max(positions.values()) if fmt != "free_text" else 0
        row = {"order": order, "format": fmt, "n": len(group),
               "chance": round(sum(_chance(r) for r in group) / len(group), 4)}
        for name in HEURISTICS:
            row[name] = None if (name == "modal_position" and fmt == "free_text") else round(hits[name] / len(group), 4)
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


if __name__ == "__main__":  # python -m generators.shortcuts [N]
    import sys

    from generators import generate_records

    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    table = shortcut_table(generate_records(size, seed=0))
    print(format_table(table))
    print(f"worst gap: {100 * worst_gap(table):.2f} points")
