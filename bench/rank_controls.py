"""The gold's rank among the options under the audit's five rankings, per belief order, with the
generator's controls on and off; and the stories that repeat a sentence the world does not repeat.

Run: `python bench/rank_controls.py [N] [SEED]` (default 20,000 items of orders 0-6, seed 11). Prints,
per order and ranking, the gold's share at each place (1st = most mentioned, first / last mentioned,
most sentences, latest move into it; ties split evenly), the largest gap to uniform in points, the
audit's chi-square p-value, and the questions per second of each run. Markdown, so the tables go
into docs/generator-controls.md as printed. The target (issue 28): every share within 3 points of
uniform with controls on.
"""

from __future__ import annotations

import sys
import time

import polars as pl  # noqa: E402

from tomforge.audits.config import AuditParams  # noqa: E402
from tomforge.audits.features import records_frame  # noqa: E402
from tomforge.audits.ranks import RANKING_LABELS, gold_ranks  # noqa: E402
from tomforge.audits.repeats import repeated_sentences  # noqa: E402
from tomforge.generators import generate_records  # noqa: E402


def table(ranks: pl.DataFrame) -> tuple[list[str], float]:
    """Markdown rows (order, ranking, items, share per place, largest gap, p) and the largest gap in points."""
    lines = [
        "| order | ranking | items | 1st | 2nd | 3rd | 4th | max gap (points) | p |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    keys = ["belief_order", "ranking", "k"]
    for (order, ranking, k), part in ranks.group_by(keys, maintain_order=True):
        shares = part.sort("position")["share"].to_list()
        gap = 100 * max(abs(x - 1 / k) for x in shares)
        worst = max(worst, gap)
        cells = " | ".join(f"{100 * x:.1f}" for x in shares[:4])
        lines.append(
            f"| {order} | {RANKING_LABELS[ranking]} | {part['n'][0]} | {cells} | {gap:.1f} | {part['p_value'][0]:.2g} |"
        )
    return lines, worst


def run(n: int, seed: int, controls: bool) -> None:
    start = time.perf_counter()
    records = list(generate_records(n, max_order=6, seed=seed, controls=controls))
    rate = len(records) / (time.perf_counter() - start)
    frame = records_frame(records).with_columns(pl.lit("generated").alias("selection"))
    ranks = gold_ranks(frame, AuditParams())
    lines, worst = table(ranks)
    repeats = repeated_sentences(frame)
    flagged = repeats.filter(pl.col("flagged"))["context_id"].n_unique()
    stories = frame["context_id"].n_unique()
    by_story = {r["context_id"]: r for r in records}.values()
    statements = sum(sum(e["kind"] == "statement" for e in r["trace"]) for r in by_story) / len(by_story)
    sentences = sum(len(r["trace"]) - 1 for r in by_story) / len(by_story)
    print(
        f"\n### controls={'on' if controls else 'off'}: {len(records)} items, seed {seed}, {rate:.0f} questions/s; "
        f"largest gap {worst:.1f} points; {int(ranks['flagged'].any())} flagged by the audit "
        f"({ranks.filter(pl.col('flagged')).select('belief_order', 'ranking').unique().height} order x ranking groups); "
        f"{flagged} of {stories} stories repeat a sentence the world does not; {statements:.1f} statements "
        f"(likes, dislikes, stores) in {sentences:.1f} events per story\n"
    )
    print("\n".join(lines))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    for controls in (False, True):
        run(n, seed, controls)


if __name__ == "__main__":
    main()
