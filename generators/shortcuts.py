"""The template heuristics the generator balances against, and the counts that show its balance. How far
the heuristics get on generated records is measured by the audit (`audits/shortcuts.py`).

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


@lru_cache(maxsize=4096)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w])({alternatives})(?![\w])")


def mentions(text: str, containers: Iterable[str]) -> list[str]:
    """Container names in the order they occur in `text` (whole-word matches)."""
    return _pattern(tuple(containers)).findall(text)


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
