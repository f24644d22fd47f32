"""Generated questions per second on one core (goal: >= 5,000/s), with and without record building.

Run: `python bench/generate.py [N]`. Prints figures; asserts nothing (timings vary by machine).
"""

from __future__ import annotations

import sys
import time

from tomforge.generators import generate_records  # noqa: E402


def rate(n: int, **kwargs) -> tuple[float, float]:
    """(questions per wall-clock second, questions per CPU second of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    count = sum(1 for _ in generate_records(n, **kwargs))
    return count / (time.perf_counter() - wall), count / (time.process_time() - cpu)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rate(500)  # warm caches (chain feasibility tables, compiled templates)
    for label, kwargs in (
        ("all operators, orders 0-6", {}),
        ("no operators, orders 0-6", {"operators": ()}),
        ("all operators, orders 0-10", {"max_order": 10}),
    ):
        wall, cpu = rate(n, seed=1, **kwargs)
        print(f"{label:28s} {wall:7.0f} questions/s wall-clock, {cpu:7.0f} per CPU-second  (n={n}, one process)")


if __name__ == "__main__":
    main()
