"""The padding search of `generators.padding` over all candidate plans at once (numpy), with the same
floats as scoring them one by one: `Padder._best_plan` scores every tail and then every sprinkling
with `plan_cost` (`RankBalancer.cost` per ranking pattern, the last- and most-mentioned controllers,
`PADDING_PENALTY` per statement); here each of those sums is one array operation per term, in the
same order, so every candidate's cost is the same float and the first cheapest is the same plan
(`tests/generators/test_generator_plan_search.py` compares both on whole runs).

Why: scoring ~170 candidate plans per story in Python took ~80% of generation with the controls
(issue 42: 1,822 questions/s against 14,851 without).
"""

from __future__ import annotations

import random
from functools import lru_cache
from itertools import permutations, product
from typing import Any, Sequence

import numpy as np

try:
    from numba import njit
except ImportError:  # without numba the loops run as plain Python: slower, the same floats

    def njit(*_args, **_kwargs):  # type: ignore[no-redef]
        return lambda fn: fn


from tomforge.generators.rank_control import OPINION, POLARITIES, STORES, Base, Plan, RankBalancer

BULK_WORDS = 16  # below this many missing draws, one call each costs less than one more bulk round
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


def tail_plan(base: Base, tail: tuple[tuple[int, ...], tuple[str, ...]]) -> Plan:
    """One tail of `tails` as `Base.tails` writes it."""
    return tuple((float(base.n_events + j), base.containers[c], k) for j, (c, k) in enumerate(zip(*tail)))


def middles(base: Base, rng: random.Random, max_middle: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The sprinklings `base.middles(rng, max_middle)` draws (the same draws of `rng`) as
    `best_plan_jit` reads them: `middle_table`'s count vectors, each statement's row, container and
    drawn position. No draw depends on the tail, so they come before the tail is chosen."""
    vectors, plan, container, index = middle_table(len(base.containers), max_middle)
    drawn = np.asarray(base.slots, dtype=np.float64)[choices(rng, len(base.slots), len(plan))]
    position = drawn - 0.5 + 0.01 * index.astype(np.float64)
    return vectors, plan, container, position


def middle_plan(row: int, plan: np.ndarray, container: np.ndarray, position: np.ndarray, base: Base) -> Plan:
    """The sprinkling of one row, as `Base.middles` writes it."""
    lo, hi = np.searchsorted(plan, (row, row + 1)).tolist()  # `middle_table` lists each row's statements together
    return tuple(
        (at, base.containers[c], OPINION) for at, c in zip(position[lo:hi].tolist(), container[lo:hi].tolist())
    )


def choices(rng: random.Random, n: int, count: int) -> np.ndarray:
    """The indices of `[rng.choice(seq) for _ in range(count)]` for a sequence of n items, leaving
    `rng` in the same state: `choice` takes `getrandbits(k)` (k = n.bit_length(): one 32-bit word
    shifted right by 32 - k) until it is below n. Each draw, kept or not, uses one word, so while
    `missing` indices are still to come, at least `missing` more words will be used: they come in
    one call (`getrandbits(32 missing)`, its first word the lowest) without drawing one too many,
    until `BULK_WORDS` or fewer are missing; those are drawn one by one."""
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    if type(rng) is not random.Random or n <= 0:
        return np.array([rng.choice(range(n)) for _ in range(count)], dtype=np.int64)
    k = n.bit_length()
    shift = np.uint32(32 - k)
    parts = []
    missing = count
    while missing > BULK_WORDS:
        words = np.frombuffer(rng.getrandbits(32 * missing).to_bytes(4 * missing, "little"), dtype="<u4") >> shift
        kept = words[words < n]
        parts.append(kept)
        missing -= len(kept)
    draw = rng.getrandbits
    last = []
    for _ in range(missing):  # the last few one by one, as `choice` draws them
        word = draw(k)
        while word >= n:
            word = draw(k)
        last.append(word)
    parts.append(np.array(last, dtype=np.int64))
    return np.concatenate(parts).astype(np.int64)


def rank_strata(
    ranks: RankBalancer, names: Sequence[str], golds: Sequence[tuple[Any, int]], k: int
) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray]:
    """The compiled kernels' view of `golds` under `names`: the strata's keys in order of first
    appearance (as `RankBalancer.cost` meets them), each question's stratum number and gold, and
    each (name, stratum)'s running deviation before this story (zeros for a stratum not seen yet).
    Shapes: strata, (q,), (q,), (names, strata, k)."""
    order: dict[Any, int] = {}
    stratum = np.array([order.setdefault(key, len(order)) for key, _ in golds], dtype=np.int64)
    starts = np.zeros((len(names), len(order), k))
    zeros = [0.0] * k
    deviation = ranks.deviation
    rows = [[deviation.get((name, key), zeros) for key in order] for name in names]
    for values, name in zip(rows, names):
        for row, key in zip(values, order):
            if len(row) != k:
                raise ValueError(f"stratum {(name, key)!r} holds {len(row)} positions, not {k}")
    if order:
        starts[:] = rows
    gold = np.array([g for _, g in golds], dtype=np.int64)
    return list(order), stratum, gold, starts


def commit_rows(ranks: RankBalancer, names: Sequence[str], keys: Sequence[Any], rows: np.ndarray) -> None:
    """Store `rank_rows_jit`'s rows as the strata's deviations: what `RankBalancer.commit` of the
    same outcomes leaves (the same additions, in the same order, from the same starts)."""
    for name, values in zip(names, rows.tolist()):
        for key, row in zip(keys, values):
            ranks.deviation[name, key] = row


@lru_cache(maxsize=None)
def listing_table(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every listing of k things in `permutations`' order, as indices into the things, and each
    thing's place in each listing."""
    perms = np.array(list(permutations(range(k))), dtype=np.int64).reshape(-1, k)
    return perms, np.argsort(perms, axis=1)


@njit(cache=True, nogil=True)
def controller_costs_jit(deviation, item_stratum, item_q, item_rate, item_weight, hits):
    """`balance.Controller.cost` of each row of `hits` (candidates, questions; 1.0 where picking the
    candidate answers question q), the same float operations: per item in order its stratum's
    deviation plus the hit minus the chance rate, then weight * d * d summed over the strata in order
    of first appearance (`deviation`: each stratum's value before, in that order)."""
    n_strata = deviation.shape[0]
    out = np.empty(hits.shape[0])
    moved = np.empty(n_strata)
    weight = np.zeros(n_strata)
    for r in range(hits.shape[0]):
        moved[:] = deviation
        for i in range(len(item_q)):
            s = item_stratum[i]
            moved[s] = moved[s] + hits[r, item_q[i]] - item_rate[i]
            weight[s] = item_weight[i]
        total = 0.0
        for s in range(n_strata):
            total += weight[s] * moved[s] * moved[s]
        out[r] = total
    return out


@njit(cache=True, nogil=True)
def controllers_costs_jit(deviations, item_stratum, item_q, item_rate, item_weight, hits):
    """`controller_costs_jit` for several controllers at once (`deviations`: one row per controller)."""
    out = np.empty((deviations.shape[0], hits.shape[0]))
    for i in range(deviations.shape[0]):
        out[i] = controller_costs_jit(deviations[i], item_stratum, item_q, item_rate, item_weight, hits)
    return out


@njit(cache=True, nogil=True, inline="always")
def _accumulate(keys, stratum, gold, start, rows):
    """What `RankBalancer.commit` adds under one ranking (`keys`: the containers' keys): each
    question's spread (1/t on each of the t places its tie group spans) minus 1/k added to its
    stratum's row, in question order, from `start`. Each container's place (those above it, those
    tied with it) is counted once, not once per question asking about it."""
    k = keys.shape[0]
    share = 1.0 / k
    above = np.empty(k, np.int64)
    tied = np.empty(k, np.int64)
    for g in range(k):
        value = keys[g]
        a = 0
        t = 0
        for c in range(k):
            if keys[c] > value:
                a += 1
            elif keys[c] == value:
                t += 1
        above[g] = a
        tied[g] = t
    for s in range(rows.shape[0]):
        for pos in range(k):
            rows[s, pos] = start[s, pos]
    for q in range(len(gold)):
        g = gold[q]
        lo = above[g]
        hi = lo + tied[g]
        part = 1.0 / tied[g]
        s = stratum[q]
        for pos in range(k):
            spread = part if lo <= pos < hi else 0.0
            rows[s, pos] += spread - share


@njit(cache=True, nogil=True, inline="always")
def _rank_cost(keys, stratum, gold, start, rows):
    """`RankBalancer.cost` of one candidate under one ranking: `_accumulate`, then the squares summed
    stratum by stratum, position by position, as the scalar version sums them."""
    _accumulate(keys, stratum, gold, start, rows)
    total = 0.0
    for s in range(rows.shape[0]):
        for pos in range(keys.shape[0]):
            square = rows[s, pos] * rows[s, pos]
            total += square
    return total


@njit(cache=True, nogil=True)
def rank_rows_jit(keys, stratum, gold, starts):
    """The strata's rows after committing one candidate (`keys`: names, containers): `_accumulate`
    per name. Shape (names, strata, k)."""
    out = np.empty(starts.shape)
    for i in range(keys.shape[0]):
        _accumulate(keys[i], stratum, gold, starts[i], out[i])
    return out


@njit(cache=True, nogil=True)
def best_listing_jit(place, order, first_thing, first_cost, stratum, gold, start):
    """The first cheapest listing, the listings (rows of `place`: each thing's place) taken in
    `order`: the first-mention rank cost of each (the first listed ranks highest: keys -place) plus
    the first-mentioned controller's cost of its first thing (`first_thing[r]`; `first_cost` per
    thing). Its row of `place` and the first-mention rows it leaves (1, strata, k)."""
    k = place.shape[1]
    rows = np.empty((start.shape[0], k))
    keys = np.empty(k)
    best, best_cost = 0, np.inf
    for i in range(order.shape[0]):
        r = order[i]
        for c in range(k):
            keys[c] = -place[r, c]
        cost = _rank_cost(keys, stratum, gold, start, rows) + first_cost[first_thing[r]]
        if cost < best_cost:
            best, best_cost = r, cost
    for c in range(k):
        keys[c] = -place[best, c]
    out = np.empty((1, start.shape[0], k))
    _accumulate(keys, stratum, gold, start, out[0])
    return best, out


@njit(cache=True, nogil=True)
def _square_table(starts, k):
    """Where each stratum holds one question (a story asks one per order): per ranking, stratum, gold
    place (those above it, those tied with it) and position, the square `_rank_cost` sums there, the
    same float (start plus spread minus 1/k, squared)."""
    share = 1.0 / k
    out = np.zeros((starts.shape[0], starts.shape[1], k, k + 1, k))
    for r in range(starts.shape[0]):
        for s in range(starts.shape[1]):
            for above in range(k):
                for tied in range(1, k - above + 1):
                    part = 1.0 / tied
                    for pos in range(k):
                        spread = part if above <= pos < above + tied else 0.0
                        value = starts[r, s, pos]
                        value += spread - share
                        out[r, s, above, tied, pos] = value * value
    return out


@njit(cache=True, nogil=True, inline="always")
def _places(keys, above, tied):
    """Each container's place under `keys`: how many rank above it, how many tie with it (itself too)."""
    k = keys.shape[0]
    for g in range(k):
        value = keys[g]
        a = 0
        t = 0
        for c in range(k):
            if keys[c] > value:
                a += 1
            elif keys[c] == value:
                t += 1
        above[g] = a
        tied[g] = t


@njit(cache=True, nogil=True, inline="always")
def _table_sum(above, tied, gold, squares):
    """The squares of each question's gold place (`_square_table`'s, for one ranking) summed in
    `_rank_cost`'s order, stratum q being question q's."""
    total = 0.0
    for q in range(len(gold)):
        g = gold[q]
        a = above[g]
        t = tied[g]
        for pos in range(squares.shape[3]):
            total += squares[q, a, t, pos]
    return total


@njit(cache=True, nogil=True)
def _table_cost(keys, gold, squares):
    """`_rank_cost` where stratum q holds question q alone: the same squares (`_square_table`'s, for
    one ranking), summed in the same order."""
    k = keys.shape[0]
    above = np.empty(k, np.int64)
    tied = np.empty(k, np.int64)
    _places(keys, above, tied)
    return _table_sum(above, tied, gold, squares)


@njit(cache=True, nogil=True, inline="always")
def _cost(r, keys, stratum, gold, starts, squares, rows):
    """The rank cost under ranking `r` of `starts`: from the square table when there is one (one
    question per stratum), else `_rank_cost`."""
    if squares.shape[0] > 0:
        return _table_cost(keys, gold, squares[r])
    return _rank_cost(keys, stratum, gold, starts[r], rows)


@njit(cache=True, nogil=True, inline="always")
def _plan_cost(
    count, last, moved_cost, length, first_rank, last_cost, most_cost, stratum, gold, starts, squares, penalty, work
):
    """`Padder._best_plan`'s `plan_cost` of one candidate, each term added in its order: the
    statements' penalty, the rank costs under mentions, last mention, events (= mentions) and last
    move (`moved_cost`, computed by the caller: all sprinklings share their tail's), then the last- and most-mentioned controllers' costs
    of its picks (the first container of the latest last mention; most mentions, then the first
    mention). `work`: (n,) keys buffer, (strata, n) rows buffer, two (n,) place buffers;
    `squares`: `_cost`'s table (mentions and events then share the containers' places)."""
    mentions, rows, above, tied = work
    n = count.shape[0]
    for c in range(n):
        mentions[c] = count[c]
    total = penalty * length
    if squares.shape[0] > 0:
        _places(mentions, above, tied)
        by_mentions = _table_sum(above, tied, gold, squares[0])
        by_events = _table_sum(above, tied, gold, squares[2])
        _places(last, above, tied)
        by_last = _table_sum(above, tied, gold, squares[1])
    else:
        by_mentions = _rank_cost(mentions, stratum, gold, starts[0], rows)
        by_last = _rank_cost(last, stratum, gold, starts[1], rows)
        by_events = _rank_cost(mentions, stratum, gold, starts[2], rows)
    total = total + by_mentions
    total = total + by_last
    total = total + by_events
    total = total + moved_cost
    pick_last, pick_most = _picks(count, last, first_rank)
    return total + last_cost[pick_last] + most_cost[pick_most]


@njit(cache=True, nogil=True, inline="always")
def _picks(count, last, first_rank):
    """The last- and most-mentioned rules' picks: the first container of the latest last mention;
    the first of the most mentions, then the first mention."""
    n = count.shape[0]
    pick_last = 0
    pick_most = 0
    best_most = count[0] * (n + 1) + first_rank[0]
    for c in range(1, n):
        if last[c] > last[pick_last]:
            pick_last = c
        most = count[c] * (n + 1) + first_rank[c]
        if most > best_most:
            pick_most, best_most = c, most
    return pick_last, pick_most


@njit(cache=True, nogil=True, inline="always")
def _apply_tail(t, slot, stores, fresh, count0, last0, moved0, n_events, count, last, moved):
    """Tail `t` of `tail_table` after the story's keys (into count, last, moved): its length, or -1
    when `fresh` (containers, kinds: opinions, stores left) does not allow it."""
    length = 0
    for c in range(slot.shape[1]):
        count[c], last[c], moved[c] = count0[c], last0[c], moved0[c]
    for c in range(slot.shape[1]):
        j = slot[t, c]
        if j < 0:
            continue
        if fresh[c, 1 if stores[t, c] else 0] < 1:
            return -1
        at = n_events + j
        count[c] += 1
        length += 1
        last[c] = max(last[c], at)
        if stores[t, c]:
            moved[c] = max(moved[c], at)
    return length


@njit(cache=True, nogil=True)
def _best_tail(slot, stores, fresh, count0, last0, moved0, n_events, scoring, penalty, work):
    """The first cheapest of `tail_table`'s tails (slot, stores) that `fresh` allows, scored by
    `_plan_cost` from the story's own keys: its index, length, mention counts, last-mention and
    last-move positions (the sprinklings start from these)."""
    first_rank, last_cost, most_cost, stratum, gold, starts, squares = scoring
    n_tails, n = slot.shape
    count, last, moved = np.empty(n, np.int64), np.empty(n), np.empty(n)
    best, best_cost, best_length = -1, np.inf, 0
    best_count, best_last, best_moved = count.copy(), last.copy(), moved.copy()
    unmoved_cost = _cost(3, moved0, stratum, gold, starts, squares, work[1])
    for t in range(n_tails):
        length = _apply_tail(t, slot, stores, fresh, count0, last0, moved0, n_events, count, last, moved)
        if length < 0:
            continue
        says_stores = False
        for c in range(n):
            says_stores = says_stores or stores[t, c]
        moved_cost = _cost(3, moved, stratum, gold, starts, squares, work[1]) if says_stores else unmoved_cost
        cost = _plan_cost(
            count,
            last,
            moved_cost,
            length,
            first_rank,
            last_cost,
            most_cost,
            stratum,
            gold,
            starts,
            squares,
            penalty,
            work,
        )
        if cost < best_cost:
            best, best_cost, best_length = t, cost, length
            best_count[:], best_last[:], best_moved[:] = count, last, moved
    return best, best_length, best_count, best_last, best_moved


@njit(cache=True, nogil=True)
def _best_middle(vectors, plan, container, position, opinions_left, tail, scoring, penalty, work):
    """The first cheapest of `middle_table`'s sprinklings (rows of `vectors`, each statement at its
    drawn `position`) that `opinions_left` allows, each after the chosen `tail` (its length, counts,
    last positions, last moves), scored by `_plan_cost`; its row, mention counts and last-mention positions."""
    first_rank, last_cost, most_cost, stratum, gold, starts, squares = scoring
    length0, count0, last0, moved0 = tail
    n_rows, n = vectors.shape
    highest = np.full((n_rows, n), -np.inf)
    for i in range(len(plan)):
        highest[plan[i], container[i]] = max(highest[plan[i], container[i]], position[i])
    moved_cost = _cost(3, moved0, stratum, gold, starts, squares, work[1])
    count, last = np.empty(n, np.int64), np.empty(n)
    best, best_cost = -1, np.inf
    best_count, best_last = count.copy(), last.copy()
    for m in range(n_rows):
        length = length0
        for c in range(n):
            count[c] = count0[c] + vectors[m, c]
            last[c] = max(highest[m, c], last0[c])
            length += vectors[m, c]
            if vectors[m, c] > opinions_left[c]:
                length = -1
                break
        if length < 0:
            continue
        cost = _plan_cost(
            count,
            last,
            moved_cost,
            length,
            first_rank,
            last_cost,
            most_cost,
            stratum,
            gold,
            starts,
            squares,
            penalty,
            work,
        )
        if cost < best_cost:
            best, best_cost = m, cost
            best_count[:], best_last[:] = count, last
    return best, best_count, best_last


@njit(cache=True, nogil=True)
def best_plan_jit(
    slot,
    stores,
    fresh,
    count0,
    last0,
    moved0,
    n_events,
    vectors,
    plan,
    container,
    position,
    first_rank,
    last_cost,
    most_cost,
    stratum,
    gold,
    starts,
    penalty,
):
    """`Padder._best_plan` in one call: the first cheapest tail (`_best_tail`), then after it the
    first cheapest sprinkling (`_best_middle`) that the opinions the tail left allow (`fresh`:
    containers, kinds: opinions, stores left). Returns the tail, the sprinkling, the rows the plan
    leaves under mentions, last mention, events and last move (4, strata, n), and the last- and
    most-mentioned picks. Where each stratum holds one question (numbered by first appearance:
    stratum q is question q's) the rank costs read a table of squares (`_square_table`)."""
    n = slot.shape[1]
    work = (np.empty(n), np.empty((starts.shape[1], n)), np.empty(n, np.int64), np.empty(n, np.int64))
    squares = _square_table(starts, n) if len(gold) == starts.shape[1] else np.zeros((0, 0, n, n + 1, n))
    scoring = (first_rank, last_cost, most_cost, stratum, gold, starts, squares)
    t, length, count, last, moved = _best_tail(
        slot, stores, fresh, count0, last0, moved0, n_events, scoring, penalty, work
    )
    opinions_left = np.empty(n, np.int64)
    for c in range(n):
        opinions_left[c] = fresh[c, 0] - (1 if slot[t, c] >= 0 and not stores[t, c] else 0)
    m, count, last = _best_middle(
        vectors, plan, container, position, opinions_left, (length, count, last, moved), scoring, penalty, work
    )
    keys = np.empty((4, n))
    for c in range(n):
        keys[0, c] = count[c]
        keys[1, c] = last[c]
        keys[2, c] = count[c]
        keys[3, c] = moved[c]
    rows = rank_rows_jit(keys, stratum, gold, starts)
    pick_last, pick_most = _picks(count, last, first_rank)
    return t, m, rows, pick_last, pick_most
