"""The padding search of `generators.padding` over all candidate plans at once (numpy), with the same
floats as scoring them one by one: `Padder._best_plan` scores every tail and then every sprinkling
with `plan_cost` (`RankBalancer.cost` per ranking pattern, the last- and most-mentioned controllers,
`PADDING_PENALTY` per statement); here each of those sums is one array operation per term, in the
same order, so every candidate's cost is the same float and the first cheapest is the same plan
(`tests/test_generator_plan_search.py` compares both on whole runs).

Why: scoring ~170 candidate plans per story in Python took ~80% of generation with the controls
(issue 42: 1,822 questions/s against 14,851 without).
"""

from __future__ import annotations

import random
from functools import lru_cache
from itertools import permutations, product
from typing import Any, Hashable, Sequence

import numpy as np

try:
    from numba import njit

    COMPILED = True
except ImportError:  # the numpy path (`gold_diffs`, `rank_costs`) gives the same floats
    COMPILED = False

    def njit(*_args, **_kwargs):  # type: ignore[no-redef]
        return lambda fn: fn


from tomforge.generators.rank_control import OPINION, POLARITIES, STORES, Base, Plan, RankBalancer

KINDS = tuple(POLARITIES)  # (OPINION, STORES): the statement kinds, in `Base.tails`' order


@lru_cache(maxsize=None)
def tail_table(n: int, max_tail: int) -> tuple[list[tuple[tuple[int, ...], tuple[str, ...]]], np.ndarray, np.ndarray]:
    """Every tail `Base.tails` may list for n containers, in its order, as (containers, kinds); with,
    per tail and container, the slot of its statement (-1: none) and whether it says "stores"."""
    tails: list[tuple[tuple[int, ...], tuple[str, ...]]] = []
    for length in range(max_tail + 1):
        for order in permutations(range(n), length):
            kind_sets = product(KINDS, repeat=length) if length <= 2 else ((k,) * length for k in KINDS)
            for kinds in kind_sets:
                tails.append((order, tuple(kinds)))
    slot = np.full((len(tails), n), -1, dtype=np.int64)
    stores = np.zeros((len(tails), n), dtype=bool)
    for t, (order, kinds) in enumerate(tails):
        for j, (c, kind) in enumerate(zip(order, kinds)):
            slot[t, c] = j
            stores[t, c] = kind == STORES
    return tails, slot, stores


@lru_cache(maxsize=None)
def middle_table(n: int, max_middle: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`Base.middles`' count vectors for n containers, in its order (rows), and its statements in the
    order it draws their slots: each one's plan, container and index within its plan."""
    counts = [c for c in product(range(max_middle + 1), repeat=n) if sum(c) <= max_middle]
    plan, container, index = [], [], []
    for m, vector in enumerate(counts):
        j = 0
        for c, k in enumerate(vector):
            for _ in range(k):
                plan.append(m)
                container.append(c)
                index.append(j)
                j += 1
    as_array = np.array(counts, dtype=np.int64).reshape(len(counts), n)
    return (
        as_array,
        np.array(plan, dtype=np.int64),
        np.array(container, dtype=np.int64),
        np.array(index, dtype=np.int64),
    )


class Candidates:
    """Candidate plans as arrays (one row per plan): mention counts, last-mention and last-move
    positions per container (as `Base.keys_with` gives them) and the number of statements."""

    def __init__(self, count: np.ndarray, last: np.ndarray, moved: np.ndarray, length: np.ndarray) -> None:
        self.count, self.last, self.moved, self.length = count, last, moved, length


def tail_plan(base: Base, tail: tuple[tuple[int, ...], tuple[str, ...]]) -> Plan:
    """One tail of `tails` as `Base.tails` writes it."""
    return tuple((float(base.n_events + j), base.containers[c], k) for j, (c, k) in enumerate(zip(*tail)))


def tails(base: Base, max_tail: int) -> tuple[list[tuple[tuple[int, ...], tuple[str, ...]]], Candidates]:
    """The tails `base.tails(max_tail)` lists (in its order; `tail_plan` writes one) and their arrays."""
    n = len(base.containers)
    table, slot, stores = tail_table(n, max_tail)
    fresh = np.array([[base.fresh[c, kind] for kind in KINDS] for c in base.containers], dtype=np.int64)
    has = slot >= 0
    need_opinion = has & ~stores
    need_stores = has & stores
    ok = ((need_opinion <= fresh[:, 0]) & (need_stores <= fresh[:, 1])).all(axis=1)
    keep = np.flatnonzero(ok)
    position = np.where(has, float(base.n_events) + slot, -np.inf)[keep]
    plans = [table[t] for t in keep.tolist()]
    count = np.asarray(base.count, dtype=np.int64) + has[keep]
    last = np.maximum(np.asarray(base.last, dtype=np.float64), position)
    moved = np.maximum(np.asarray(base.moved, dtype=np.float64), np.where(stores[keep], position, -np.inf))
    return plans, Candidates(count, last, moved, has[keep].sum(axis=1))


def middles_with(
    base: Base, tail: Plan, tail_row: Candidates, rng: random.Random, max_middle: int
) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray, Candidates]:
    """The sprinklings `base.middles(rng, max_middle)` draws (the same draws of `rng`) that are
    feasible with `tail`, each followed by the tail, as arrays; with what builds a chosen plan:
    the kept rows, and each statement's row, container and position."""
    n = len(base.containers)
    vectors, plan, container, index = middle_table(n, max_middle)
    drawn = np.asarray(base.slots, dtype=np.float64)[choices(rng, len(base.slots), len(plan))]
    position = drawn - 0.5 + 0.01 * index.astype(np.float64)
    opinions_left = np.array([base.fresh[c, OPINION] for c in base.containers], dtype=np.int64)
    for _, c, kind in tail:
        if kind == OPINION:
            opinions_left[base.containers.index(c)] -= 1
    ok = (vectors <= opinions_left).all(axis=1)
    keep = np.flatnonzero(ok)
    highest = np.full((len(vectors), n), -np.inf)
    np.maximum.at(highest, (plan, container), position)
    count = tail_row.count + vectors[keep]
    last = np.maximum(highest[keep], tail_row.last)
    length = vectors[keep].sum(axis=1) + tail_row.length
    moved = np.broadcast_to(tail_row.moved, (len(keep), n))
    return keep.tolist(), plan, container, position, Candidates(count, last, moved, length)


def middle_plan(row: int, plan: np.ndarray, container: np.ndarray, position: np.ndarray, base: Base) -> Plan:
    """The sprinkling of one row, as `Base.middles` writes it."""
    at = np.flatnonzero(plan == row)
    return tuple((float(position[i]), base.containers[int(container[i])], OPINION) for i in at.tolist())


def choices(rng: random.Random, n: int, count: int) -> np.ndarray:
    """The indices of `[rng.choice(seq) for _ in range(count)]` for a sequence of n items, leaving
    `rng` in the same state: `choice` takes `getrandbits(k)` (k = n.bit_length(): one 32-bit word
    shifted right by 32 - k) until it is below n; here the words come in bulk (`getrandbits(32 m)`,
    its first word the lowest), then the state is rewound and moved on by exactly the words used."""
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    if type(rng) is not random.Random or n <= 0:
        return np.array([rng.choice(range(n)) for _ in range(count)], dtype=np.int64)
    shift = 32 - n.bit_length()
    state = rng.getstate()
    picked: list[np.ndarray] = []
    used, need = 0, count
    while need:
        m = need + need // 2 + 16
        words = np.frombuffer(rng.getrandbits(32 * m).to_bytes(4 * m, "little"), dtype="<u4") >> np.uint32(shift)
        ok = np.flatnonzero(words < n)
        if len(ok) >= need:
            picked.append(words[ok[:need]])
            used += int(ok[need - 1]) + 1
            need = 0
        else:
            picked.append(words[ok])
            used += m
            need -= len(ok)
    rng.setstate(state)
    rng.getrandbits(32 * used)
    return np.concatenate(picked).astype(np.int64)


def gold_diffs(keys: np.ndarray) -> np.ndarray:
    """Per ranking (first axis), row and candidate gold g, g's spread over the positions (1/t on each of
    the t places its tie group spans, `rank_control.spread`) minus the uniform share 1/k: shape
    (rankings, rows, gold, position)."""
    k = keys.shape[-1]
    at = keys[..., :, None]
    above = (keys[..., None, :] > at).sum(axis=-1)[..., None]
    tied = (keys[..., None, :] == at).sum(axis=-1)[..., None]
    pos = np.arange(k)
    spread = np.where((pos >= above) & (pos < above + tied), 1.0 / tied, 0.0)
    return spread - 1.0 / k


def rank_costs(
    ranks: RankBalancer, names: Sequence[str], golds: Sequence[tuple[Any, int]], diffs: np.ndarray
) -> np.ndarray:
    """`RankBalancer.cost` of each row's outcomes under each of `names` (`diffs` from `gold_diffs`,
    one ranking per name), one outcome per question (stratum key, gold): the same additions, in the
    same order, as the scalar version, so each cost is the same float. Shape (names, rows)."""
    _, p, _, k = diffs.shape
    rows: dict[Hashable, np.ndarray] = {}
    for key, gold in golds:
        row = rows.get(key)
        if row is None:
            starts = []
            for name in names:
                start = ranks.deviation.get((name, key))
                if start is not None and len(start) != k:
                    raise ValueError(f"stratum {(name, key)!r} holds {len(start)} positions, not {k}")
                starts.append(start if start is not None else [0.0] * k)
            rows[key] = np.array(starts, dtype=np.float64)[:, None, :] + diffs[:, :, gold, :]
        else:
            row += diffs[:, :, gold, :]
    total = np.zeros((len(names), p))
    for row in rows.values():
        squares = row * row
        for j in range(k):
            total += squares[:, :, j]
    return total


def rank_costs_of_keys(
    ranks: RankBalancer, names: Sequence[str], golds: Sequence[tuple[Any, int]], keys: np.ndarray
) -> np.ndarray:
    """`rank_costs` of per-name keys (names, rows, candidates; larger ranked higher): compiled
    (`rank_costs_jit`) where numba is, else `gold_diffs` + `rank_costs`. Shape (names, rows)."""
    if not COMPILED or not golds:
        return rank_costs(ranks, names, golds, gold_diffs(keys))
    k = keys.shape[-1]
    order: dict[Any, int] = {}
    stratum = np.array([order.setdefault(key, len(order)) for key, _ in golds], dtype=np.int64)
    starts = np.zeros((len(names), len(order), k))
    for i, name in enumerate(names):
        for key, s in order.items():
            start = ranks.deviation.get((name, key))
            if start is not None:
                if len(start) != k:
                    raise ValueError(f"stratum {(name, key)!r} holds {len(start)} positions, not {k}")
                starts[i, s] = start
    gold = np.array([g for _, g in golds], dtype=np.int64)
    return rank_costs_jit(np.ascontiguousarray(keys, dtype=np.float64), stratum, gold, starts)


@njit(cache=True, nogil=True)
def rank_costs_jit(keys, stratum, gold, starts):
    """`rank_costs(ranks, names, golds, gold_diffs(keys))` in one loop: per name and row, each
    question's spread minus 1/k added to its stratum's row (in question order), then the squares
    summed stratum by stratum, position by position, as the scalar `RankBalancer.cost` sums them."""
    n_names, p, k = keys.shape
    n_strata = starts.shape[1]
    out = np.empty((n_names, p))
    share = 1.0 / k
    rows = np.empty((n_strata, k))
    for i in range(n_names):
        for r in range(p):
            rows[:, :] = starts[i]
            for q in range(len(gold)):
                value = keys[i, r, gold[q]]
                above = 0
                tied = 0
                for c in range(k):
                    if keys[i, r, c] > value:
                        above += 1
                    elif keys[i, r, c] == value:
                        tied += 1
                part = 1.0 / tied
                s = stratum[q]
                for pos in range(k):
                    spread = part if above <= pos < above + tied else 0.0
                    rows[s, pos] += spread - share
            total = 0.0
            for s in range(n_strata):
                for pos in range(k):
                    square = rows[s, pos] * rows[s, pos]
                    total += square
            out[i, r] = total
    return out
