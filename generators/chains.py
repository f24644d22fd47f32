"""Perspective chains ("A thinks B thinks C thinks ...") and their signatures.

Under the rules in `generators.beliefs`, the belief of a chain (a1, ..., ak) depends only on its
signature: the first agent, the last agent, and the *set* of agents a2..ak. A story with 5 agents
has 5,120 chains of order 6 but at most a few hundred signatures, so the generator reasons about
signatures (as bit positions in one integer) and only builds a concrete chain for the one it asks.
Chains never name the same agent twice in a row ("A thinks A thinks" says nothing new).
Agents are numbered 0..n-1; a signature's bit position is `((a1 * n + ak) << n) | rest_mask`.
"""
from __future__ import annotations

import random
from functools import lru_cache


def sig_index(n: int, first: int, last: int, rest: int) -> int:
    return ((first * n + last) << n) | rest


def sig_parts(n: int, index: int) -> tuple[int, int, int]:
    """(first, last, rest_mask) of a signature bit position."""
    rest = index & ((1 << n) - 1)
    pair = index >> n
    return pair // n, pair % n, rest


def chain_signature(n: int, chain: tuple[int, ...]) -> int:
    rest = 0
    for agent in chain[1:]:
        rest |= 1 << agent
    return sig_index(n, chain[0], chain[-1], rest)


@lru_cache(maxsize=None)
def feasible(n: int, order: int) -> int:
    """Bitset of the signatures that some chain of `order` agents (order >= 1) has."""
    if order < 1:
        raise ValueError("chains have order >= 1")
    bits = 0
    if order == 1:
        for a in range(n):
            bits |= 1 << sig_index(n, a, a, 0)
        return bits
    for first in range(n):
        states = {(x, 1 << x) for x in range(n) if x != first}  # (last agent, mask of a2..)
        for _ in range(order - 2):
            states = {(y, mask | (1 << y)) for last, mask in states for y in range(n) if y != last}
        for last, mask in states:
            bits |= 1 << sig_index(n, first, last, mask)
    return bits


@lru_cache(maxsize=1 << 16)
def _can_fill(rest: int, last: int, remaining: int, prev: int, need: int) -> bool:
    """Can `remaining` more positions, drawn from `rest`, follow `prev`, cover `need` and end on `last`?"""
    if remaining == 0:
        return need == 0 and prev == last
    if bin(need).count("1") > remaining:
        return False
    y_mask = rest & ~(1 << prev) if prev >= 0 else rest
    y = 0
    while y_mask >> y:
        if (y_mask >> y) & 1 and _can_fill(rest, last, remaining - 1, y, need & ~(1 << y)):
            return True
        y += 1
    return False


def random_chain(n: int, index: int, order: int, rng: random.Random) -> tuple[int, ...]:
    """A uniformly-built chain of `order` agents with the given signature (must be feasible)."""
    first, last, rest = sig_parts(n, index)
    if order == 1:
        return (first,)
    chain = [first]
    prev, need = first, rest
    for remaining in range(order - 1, 0, -1):
        options = [y for y in range(n) if (rest >> y) & 1 and y != prev
                   and _can_fill(rest, last, remaining - 1, y, need & ~(1 << y))]
        if not options:
            raise ValueError(f"signature {index} has no chain of order {order}")
        prev = rng.choice(options)
        need &= ~(1 << prev)
        chain.append(prev)
    return tuple(chain)


def random_set_bit(bits: int, n: int, rng: random.Random) -> int:
    """A uniformly chosen set bit of a signature bitset, found block by block (fast on big ints)."""
    block = 1 << n
    full = (1 << block) - 1
    counts = []
    total = 0
    for pair in range(n * n):
        count = ((bits >> (pair * block)) & full).bit_count()
        counts.append(count)
        total += count
    if total == 0:
        raise ValueError("empty bitset")
    pick = rng.randrange(total)
    for pair, count in enumerate(counts):
        if pick < count:
            word = (bits >> (pair * block)) & full
            for _ in range(pick):
                word &= word - 1
            return pair * block + ((word & -word).bit_length() - 1)
        pick -= count
    raise AssertionError("unreachable")
