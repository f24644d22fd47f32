"""The balance controls on variants of real stories (`generators.real.balance`).

The selection is checked on planted candidate pools against counts worked out by hand; the whole
`build_variants` on a planted, skewed ToMi pool against the audit's own test (one-sided binomial at the
audit's corrected alpha) and two-sided binomial bounds computed with scipy, and the same pool without
balance must fail that test (so the check can fail).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from scipy import stats

from tests.generators.test_real_oracle import REAL
from tests.source_helpers import read_all
from tomforge.audits.artifacts import heuristic_baselines
from tomforge.audits.config import AuditParams
from tomforge.audits.features import item_features, records_frame
from tomforge.generators.real.balance import role_block, select
from tomforge.generators.real.report import read_records
from tomforge.generators.real.variants import Settings, build_variants
from tomforge.warehouse.sources import get_adapter


@dataclass(eq=False)
class Fake:
    role: str
    slot: object
    stratum: tuple


def pool(stratum: tuple, **slots_by_roles: int) -> list[Fake]:
    """`initial=40` -> 40 one-candidate slots of that role; `initial_final=10` -> 10 slots offering both."""
    out = []
    for roles, n in slots_by_roles.items():
        for i in range(n):
            out += [Fake(role, (roles, i), stratum) for role in roles.split("_")]
    return out


def roles(kept: list[Fake]) -> Counter:
    return Counter(c.role for c in kept)


def test_belief_order_keeps_the_first_container_at_one_in_k() -> None:
    # k = 4: slots initial, final, other, other. Pool: 40 initial, 6 final, 7 intermediate + 3 never.
    # By hand: size = min(40 * 4 / 1, 6 * 4 / 1, 10 * 4 / 2) = 20 -> initial 5, final 5, other 10.
    kept = select(pool((2, "multiple_choice", 4), initial=40, final=6, intermediate=7, never=3), 1, 0)
    counts = roles(kept)
    assert len(kept) == 20 and counts["initial"] == 5 and counts["final"] == 5
    assert counts["intermediate"] + counts["never"] == 10


def test_a_slot_serves_one_candidate() -> None:
    # k = 2, 10 slots each offering an initial and a final chain (one may be kept per slot): the size the
    # roles allow (20) is more than the slots hold, so 10: initial 5, final 5, never both from one slot.
    kept = select(pool((3, "free_text", 2), initial_final=10), 1, 0)
    assert roles(kept) == Counter(initial=5, final=5)
    assert len({c.slot for c in kept}) == 10
    two_each = select(pool((3, "free_text", 2), initial_final=10), 2, 0)  # n_per_story 2: both kept
    assert roles(two_each) == Counter(initial=10, final=10)


def test_reality_questions_and_strata_that_cannot_be_balanced() -> None:
    # Order 0 with 15 options: 1 initial : 14 final. Pool 100 + 28 -> size min(1500, 28 * 15 / 14) = 30.
    assert roles(select(pool((0, "multiple_choice", 15), initial=100, final=28), 1, 0)) == Counter(initial=2, final=28)
    # nothing but first containers: no choice keeps the rule at chance, so nothing is kept
    assert select(pool((1, "free_text", 2), initial=50), 1, 0) == []
    # no final gold in the pool: `other` stands in for it, the first container stays at 1 in k
    assert roles(select(pool((1, "free_text", 2), initial=50, intermediate=7), 1, 0)) == Counter(
        initial=7, intermediate=7
    )
    # memory questions ask for the first container by definition: kept as they are
    assert len(select(pool(("memory", "free_text", 2), initial=9), 1, 0)) == 9
    assert role_block(1, 5, {"initial", "final"}) == ("initial", "final", "final", "final", "final")


TEMPLATES = [  # (story lines, questions with golds under ToMi's rules): Ann away during the move, or there
    (
        [
            "{a} entered the {r}.",
            "{b} entered the {r}.",
            "The {o} is in the {c1}.",
            "{a} exited the {r}.",
            "{b} moved the {o} to the {c2}.",
            "{b} exited the {r}.",
        ],
        [
            ("Where was the {o} at the beginning?", "{c1}"),
            ("Where is the {o} really?", "{c2}"),
            ("Where will {a} look for the {o}?", "{c1}"),
            ("Where does {b} think that {a} searches for the {o}?", "{c1}"),
        ],
    ),
    (
        [
            "{a} entered the {r}.",
            "{b} entered the {r}.",
            "The {o} is in the {c1}.",
            "{b} moved the {o} to the {c2}.",
            "{a} exited the {r}.",
        ],
        [
            ("Where was the {o} at the beginning?", "{c1}"),
            ("Where is the {o} really?", "{c2}"),
            ("Where will {a} look for the {o}?", "{c2}"),
            ("Where does {b} think that {a} searches for the {o}?", "{c2}"),
        ],
    ),
]
NAMES = ["Ann", "Bob", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal"]
THINGS = ["kiwi", "plum", "pear", "lime", "fig", "date"]
BOXES = ["red_box", "blue_bag", "green_tub", "white_jar", "black_bin", "pink_can", "gray_pot"]


def planted_tomi(tmp_path: Path, n: int = 60) -> list[dict]:
    """`n` ToMi stories in ToMi's sentences: the object's first container is named first and its last one
    last, so the unbalanced variants answer by mention order (the skew to remove)."""
    blocks = []
    for i in range(n):
        lines, questions = TEMPLATES[i % 2]
        fields = {
            "a": NAMES[i % 8],
            "b": NAMES[(i + 3) % 8],
            "r": "porch",
            "o": THINGS[i % 6],
            "c1": BOXES[i % 7],
            "c2": BOXES[(i + 2) % 7],
        }
        story = "\n".join(f"{k} {line.format(**fields)}" for k, line in enumerate(lines, start=1))
        for question, gold in questions:
            blocks.append(f"{story}\n{len(lines) + 1} {question.format(**fields)}\t{gold.format(**fields)}\t1")
    (tmp_path / "planted.txt").write_text("\n".join(blocks) + "\n")  # no .trace: the adapter reads the text alone
    records, rejects = read_all(get_adapter("tomi"), tmp_path / "planted.txt")
    assert not rejects
    return records


def audit_table(records: list[dict]) -> pl.DataFrame:
    items = records_frame(records).with_columns(pl.lit("variants").alias("selection"))
    df = items.join(item_features(items), on="item_id", how="left")
    return heuristic_baselines(df, AuditParams()).filter(pl.col("heuristic") != "modal_position")


def test_planted_skewed_pool_is_balanced_by_default(tmp_path: Path) -> None:
    records = planted_tomi(tmp_path)
    skewed = audit_table(build_variants("tomi", records, Settings(balance=False)).records)
    assert skewed["above_chance"].any()  # the planted skew: the audit flags the unbalanced variants
    outcome = build_variants("tomi", records, Settings())
    table = audit_table(outcome.records)
    assert not table["above_chance"].any(), table.filter(pl.col("above_chance"))
    per_order = table.filter(pl.col("belief_order") != "all")
    assert per_order.height >= 20
    for row in per_order.iter_rows(named=True):
        low = stats.binom.ppf(0.0005, row["n"], row["chance"])
        high = stats.binom.isf(0.0005, row["n"], row["chance"])
        if row["heuristic"] == "first_container" or row["belief_order"] not in ("1", "2"):
            assert low <= row["correct"] <= high, row  # two-sided: neither above nor below chance
        else:  # orders 1-2 hold remention variants, whose wrong first container is kept (one-sided only)
            assert row["correct"] <= high, row
    for record in outcome.records:  # the statements the balance adds are ToMi's own noise sentences
        added = record["meta"]["balance_statements"]
        noise = [
            line
            for line in record["context"].splitlines()
            if re.search(r" (?:dis)?likes the | loves the | hates the ", line)
        ]
        assert len(noise) >= added and all(not line.endswith(".") for line in noise)


@pytest.mark.parametrize("seed", [0, 1])
def test_balanced_variants_are_deterministic_and_pass_the_checker(tmp_path: Path, seed: int) -> None:
    from tomforge.generators.real.oracle import check_item

    records = planted_tomi(tmp_path, 12)
    first = build_variants("tomi", records, Settings(seed=seed)).records
    again = build_variants("tomi", records, Settings(seed=seed)).records
    assert [(r["item_id"], r["content_hash"]) for r in first] == [(r["item_id"], r["content_hash"]) for r in again]
    assert first and all(check_item(r).agrees for r in first)


@pytest.mark.skipif(not (REAL / "hitom" / "Hi-ToM_data.json").exists(), reason="no real HiToM release here")
def test_real_hitom_variants_at_chance() -> None:
    """The full HiToM release (README figures): every mention and first-container rule at its chance of
    1 in 15 per order by the audit's test and within two-sided binomial bounds; without balance, flagged."""
    records = read_records("hitom", REAL / "hitom" / "Hi-ToM_data.json")
    skewed = audit_table(build_variants("hitom", records, Settings(balance=False)).records)
    assert skewed.filter(pl.col("belief_order") == "all")["above_chance"].all()  # each rule, pooled
    table = audit_table(build_variants("hitom", records, Settings()).records)
    for row in table.iter_rows(named=True):
        assert row["chance"] == pytest.approx(1 / 15) and not row["above_chance"], row
        low, high = stats.binom.ppf(0.0005, row["n"], row["chance"]), stats.binom.isf(0.0005, row["n"], row["chance"])
        assert low <= row["correct"] <= high, row
