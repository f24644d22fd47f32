"""Where the golds of list questions ("Who knows where the apple is?") and the asked agent of
answerability questions ("Can Bob know ...?") fall among the story's agents under the audit's five
rankings, with the agent controls (`generators/agent_control.py`) off ("before": the generator's
container controls only) and on; and the most-mentioned-agent rule the audit's heuristic check scores.

Run: `python bench/list_controls.py [N] [SEED]` (default 20,000 list and answerability questions of
worlds with orders up to 6, seed 11, third person). Prints Markdown tables for
docs/generator-controls.md: per ranking and number of agents k, the golds' share of each place (ties
split; 1st = most mentioned, first / last mentioned, most sentences, latest move verb), the largest
gap to 1/k in points and the audit's p-value (list: against a random gold subset of the same size;
answerability: the asked agent against uniform, "yes" and "no" apart), and the questions per second
of each run (the controls cost time). Sibling of bench/rank_controls.py (the container questions).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict

import polars as pl  # noqa: E402

from tomforge.audits.config import AuditParams  # noqa: E402
from tomforge.audits.features import item_features, records_frame  # noqa: E402
from tomforge.audits.ranks import (  # noqa: E402
    RANKING_LABELS,
    RANKINGS,
    gold_ranks,
    norm,
    ranking_values,
    tie_pattern,
    uniformity_test,
)
from tomforge.generators.generate import GenerationSettings, Generator  # noqa: E402
from tomforge.generators.question_forms import KNOWLEDGE_FORMS  # noqa: E402

AGENT_LABELS = {**RANKING_LABELS, "last_move": "last move verb naming them"}  # the rankings read over agent names


def generate(n: int, seed: int, agent_controls: bool) -> tuple[list[dict], float]:
    generator = Generator(GenerationSettings(max_order=6, seed=seed, formats=KNOWLEDGE_FORMS))
    generator.agent_padder.controls = agent_controls
    start = time.perf_counter()
    records = list(generator.records(n))
    return records, len(records) / (time.perf_counter() - start)


def list_table(records: list[dict]) -> dict[tuple[str, int], tuple[int, list[float], float]]:
    frame = records_frame([r for r in records if r["answer_format"] == "list"])
    table = gold_ranks(frame.with_columns(pl.lit("generated").alias("selection")), AuditParams())
    out = {}
    for (ranking, k), part in table.group_by(["ranking", "k"], maintain_order=True):
        out[ranking, k] = (part["n"][0], part.sort("position")["share"].to_list(), part["p_value"][0])
    return out


def answerability_table(records: list[dict]) -> dict[tuple[str, str, int], tuple[int, list[float], float]]:
    items: dict[tuple[str, str, int], list] = defaultdict(list)
    for r in records:
        if r["answer_format"] != "yes_no":
            continue
        agents = sorted({norm(e["agent"]) for e in r["trace"] if e["kind"] == "enter"})
        values = ranking_values(r["context"], agents)
        asked = agents.index(norm(r["perspective_chain"][0]))
        for name in RANKINGS:
            items[name, r["answer"], len(agents)].append(tie_pattern(values[name], asked))
    out = {}
    for key, patterns in items.items():
        n, share, _, _, p_value = uniformity_test(patterns)
        out[key] = (n, share.tolist(), p_value)
    return out


def cell(entry: tuple[int, list[float], float] | None, k: int) -> str:
    if entry is None:
        return "-"
    n, shares, p_value = entry
    gap = 100 * max(abs(x - 1 / k) for x in shares)
    return f"{' / '.join(f'{100 * x:.1f}' for x in shares)} ({gap:.1f}; p={p_value:.2g}; {n})"


def most_rule(records: list[dict]) -> str:
    features = item_features(records_frame([r for r in records if r["answer_format"] == "list"]))
    scored = features.filter(pl.col("scorable"))
    return f"{100 * scored['hit_most'].mean():.1f}% of {scored.height} (chance {100 * scored['chance'].mean():.1f}%)"


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    runs = {on: generate(n, seed, on) for on in (False, True)}
    print(f"\n{n} list and answerability questions, seed {seed}; shares in % (largest gap in points; p; items)\n")
    for on, (records, rate) in runs.items():
        stories = {r["context_id"]: r for r in records}.values()
        statements = sum(sum(e["kind"] == "statement" for e in r["trace"]) for r in stories) / len(stories)
        print(
            f"- agent controls {'on' if on else 'off'}: {rate:.0f} questions/s; {statements:.1f} statements per story; "
            f"most-mentioned agent rule on one-knower lists: {most_rule(records)}"
        )
    before, after = (list_table(runs[on][0]) for on in (False, True))
    print("\n| list: ranking | k | before | after |\n|---|---|---|---|")
    for ranking, k in sorted(after, key=lambda key: (RANKINGS.index(key[0]), key[1])):
        print(f"| {AGENT_LABELS[ranking]} | {k} | {cell(before.get((ranking, k)), k)} | {cell(after[ranking, k], k)} |")
    before_a, after_a = (answerability_table(runs[on][0]) for on in (False, True))
    print("\n| answerability: ranking | answer | k | before | after |\n|---|---|---|---|---|")
    for ranking, answer, k in sorted(after_a, key=lambda key: (RANKINGS.index(key[0]), key[1], key[2])):
        entry = before_a.get((ranking, answer, k))
        print(
            f"| {AGENT_LABELS[ranking]} | {answer} | {k} | {cell(entry, k)} | {cell(after_a[ranking, answer, k], k)} |"
        )


if __name__ == "__main__":
    main()
