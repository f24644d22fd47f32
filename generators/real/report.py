"""Measure the oracle on a real release: parse coverage, agreement per order under each rule set,
HiToM's conflicting prompt-style pairs, and the table of every disagreement with its explanation.

    python -m tomforge.generators.real.report --source hitom --path ../shared/real-data/hitom/Hi-ToM_data.json \\
        --out docs/oracle/hitom.md

Reads the release through the source's adapter (the same records `tomforge ingest` loads).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tomforge.generators.real.oracle import DEFECTS, SOURCE_RULES, OracleCheck, check_all
from tomforge.warehouse.sources import get_adapter


def read_records(source: str, path: Path) -> list[dict[str, Any]]:
    return [item for item in get_adapter(source).read(path) if isinstance(item, dict)]


def agreement_rows(checks: list[OracleCheck]) -> list[tuple[Any, int, int, int]]:
    """(order, items, parsed, agreeing) per belief order (memory questions count as order 0 'memory')."""
    table: dict[Any, list[int]] = defaultdict(lambda: [0, 0, 0])
    for check in checks:
        row = table[check.belief_order]
        row[0] += 1
        row[1] += check.parsed
        row[2] += bool(check.agrees)
    return [(order, *table[order]) for order in sorted(table, key=lambda o: (o is None, o))]


def conflicting_pairs(records: list[dict[str, Any]], checks: list[OracleCheck]) -> tuple[int, Counter]:
    """Questions asked twice on the same story with different golds, and how many sides the oracle agrees with."""
    groups: dict[tuple[str, str], list[OracleCheck]] = defaultdict(list)
    for record, check in zip(records, checks):
        groups[(record["context"], record["question"])].append(check)
    conflicts = [group for group in groups.values() if len({check.gold for check in group}) > 1]
    return len(conflicts), Counter(sum(bool(check.agrees) for check in group) for group in conflicts)


def render(source: str, path: Path, records: list[dict[str, Any]]) -> str:
    rule_sets = list(
        dict.fromkeys(["tomforge", SOURCE_RULES[source]] + ([DEFECTS[source][0]] if source in DEFECTS else []))
    )
    out = [f"# Oracle on {path.name} ({source}): {len(records)} items", ""]
    results = {name: check_all(records, name) for name in rule_sets}
    out += ["| rule set | order | items | parsed | agree | agreement |", "|---|---|---|---|---|---|"]
    for name in rule_sets:
        for order, items, parsed, agree in agreement_rows(results[name]):
            out.append(f"| {name} | {order} | {items} | {parsed} | {agree} | {agree / max(parsed, 1):.3f} |")
    out.append("")
    for name in rule_sets:
        count, sides = conflicting_pairs(records, results[name])
        if count:
            out.append(
                f"- {name}: {count} conflicting pairs (same story and question, different gold); the oracle "
                f"agrees with exactly one side in {sides[1]}, both in {sides[2]}, neither in {sides[0]}"
            )
    own = SOURCE_RULES[source]
    failed = Counter(check.explanation for check in results[own] if not check.parsed)
    out += ["", f"Not parsed: {sum(failed.values())}" + "".join(f"\n- {n} x {why}" for why, n in failed.most_common())]
    rows = [(record, check) for record, check in zip(records, results[own]) if check.agrees is False]
    out += [
        "",
        f"## Every disagreement under the `{own}` rules ({len(rows)})",
        "",
        "| item | chain (outermost first) | gold | oracle | explanation |",
        "|---|---|---|---|---|",
    ]
    for record, check in rows:
        chain = " > ".join(record["perspective_chain"]) or "(reality)"
        out.append(
            f"| {record['source_ref']} | {chain} | {check.gold} | {check.oracle_answer} | "
            f"{check.explanation.replace('|', '/')} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, choices=sorted(SOURCE_RULES))
    parser.add_argument("--path", required=True, type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    text = render(args.source, args.path, read_records(args.source, args.path))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text if not args.out else "\n".join(text.splitlines()[:40]))


if __name__ == "__main__":
    main()
