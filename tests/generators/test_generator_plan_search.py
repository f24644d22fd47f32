"""The padding search scored all at once (`generators.plan_search`, issue 42) gives the records of
scoring each candidate alone, byte for byte: pinned against hashes of the generator at 06b2f08 (the
commit before it, run there: not computed by this code), compared with `Padder(fast=False)` (the
one-by-one search kept as the reference), and its parts against their scalar twins."""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pytest

from tomforge.generators import generate_records, padding, plan_search
from tomforge.generators.balance import Controller
from tomforge.generators.rank_control import RankBalancer, spread

# sha256 over json.dumps(record, sort_keys=True, default=str) of every record in order, computed by
# running generate_records at commit 06b2f08 (before issue 42's changes)
BASE_HASHES = {
    (200, 0, ()): "30c6ab625c1e825ac645f0fbccc46b32e7f589681fec0dea009ab22138a69266",
    (
        3000,
        3,
        (("max_order", 5), ("formats", ("multiple_choice", "yes_no", "free_text", "list", "answerability"))),
    ): "a444fef8793d199527734b48b04c20640260c8aaf7608d8e481ea8fc8977a43b",
}


def digest(n: int, seed: int, **kwargs) -> str:
    out = hashlib.sha256()
    for record in generate_records(n, seed=seed, **kwargs):
        out.update(json.dumps(record, sort_keys=True, default=str).encode())
    return out.hexdigest()


@pytest.mark.parametrize("case", sorted(BASE_HASHES, key=repr))
def test_records_are_those_of_the_commit_before(case) -> None:
    n, seed, kwargs = case
    assert digest(n, seed, **dict(kwargs)) == BASE_HASHES[case]


def test_all_at_once_equals_one_by_one(monkeypatch) -> None:
    kwargs = {"max_order": 6, "rendering": "second_person"}
    fast = digest(400, 5, **kwargs)
    real_init = padding.Padder.__init__
    monkeypatch.setattr(
        padding.Padder, "__init__", lambda self, controls, fast=True: real_init(self, controls, fast=False)
    )
    assert digest(400, 5, **kwargs) == fast


@pytest.mark.parametrize("n", [1, 2, 3, 5, 17, 33, 64, 1000])
def test_bulk_choices_are_those_of_choice_and_leave_the_same_state(n: int) -> None:
    seq = list(range(n))
    for count in (0, 1, 7, 500):
        a, b = random.Random(n * 1000 + count), random.Random(n * 1000 + count)
        expected = [a.choice(seq) for _ in range(count)]
        drawn = plan_search.choices(b, n, count)
        assert drawn.tolist() == expected and drawn.dtype == np.int64  # indices, even when none is drawn
        assert a.getstate() == b.getstate()


def test_compiled_rank_costs_and_rows_equal_the_scalar_ones_bit_for_bit() -> None:
    """`_rank_cost` and `rank_rows_jit` against `RankBalancer.cost` / `commit` of the outcomes that
    `rank_control.spread` gives (the scalar code the padding ran before), ties and -inf keys included."""
    rng = np.random.default_rng(3)
    names = ("mentions", "last_mention")
    golds = [(0, 1), (1, 3), (0, 0), ("memory", 2), (2, 1), (1, 1)]  # key 2: no deviation yet
    keys = rng.integers(0, 3, size=(2, 50, 4)).astype(np.float64)
    keys[1, :5] = -np.inf
    for r in range(keys.shape[1]):
        ranks = RankBalancer()
        for name in names:
            for key in (0, 1, "memory"):
                ranks.deviation[name, key] = list(rng.normal(size=4))
        strata, stratum, gold, starts = plan_search.rank_strata(ranks, names, golds, 4)
        rows = plan_search.rank_rows_jit(np.ascontiguousarray(keys[:, r]), stratum, gold, starts)
        for i, name in enumerate(names):
            outcomes = [((name, key), spread(list(keys[i, r]), g)) for key, g in golds]
            buffer = np.empty((len(strata), 4))
            assert plan_search._rank_cost(keys[i, r].copy(), stratum, gold, starts[i], buffer) == ranks.cost(outcomes)
            ranks.commit(outcomes)
        expected = RankBalancer()
        expected.deviation = {key: list(value) for key, value in ranks.deviation.items()}
        plan_search.commit_rows(ranks, names, strata, rows)
        assert ranks.deviation == expected.deviation


def test_compiled_controller_costs_equal_the_scalar_ones_bit_for_bit() -> None:
    rng = random.Random(4)
    for _ in range(50):
        controller = Controller()
        strata = [0, 1, 2, "memory"]
        for stratum in strata[:3]:
            controller.deviation[stratum] = rng.uniform(-3, 3)
        weight = {s: rng.choice((1.0, 2.0)) for s in strata}  # one weight per stratum, as `controller_items` gives
        items = [(s, q, rng.choice((0.25, 0.5)), weight[s]) for q, s in enumerate(rng.choices(strata, k=7))]
        hits = np.array([[rng.random() < 0.4 for _ in range(7)] for _ in range(4)], dtype=np.float64)
        order: dict = {}
        stratum = np.array([order.setdefault(item[0], len(order)) for item in items], dtype=np.int64)
        deviation = np.array([controller.deviation[s] for s in order])
        columns = [np.array([item[i] for item in items]) for i in (1, 2, 3)]
        costs = plan_search.controller_costs_jit(deviation, stratum, columns[0].astype(np.int64), *columns[1:], hits)
        assert costs.tolist() == [controller.cost([bool(h) for h in row], items) for row in hits]


def test_draws_of_another_random_kind_go_through_its_own_choice() -> None:
    """A subclass may draw differently (its own `choice`): the bulk words are for `random.Random` only;
    no slot to draw from is the error `choice` gives."""

    class Counting(random.Random):
        calls = 0

        def choice(self, seq):  # type: ignore[override]
            Counting.calls += 1
            return super().choice(seq)

    assert plan_search.choices(Counting(1), 5, 3).tolist() == plan_search.choices(random.Random(1), 5, 3).tolist()
    assert Counting.calls == 3
    with pytest.raises(IndexError):
        plan_search.choices(random.Random(1), 0, 3)
