"""Perspective chains ("A thinks B thinks C thinks ...") and their signatures.

Under the rules in `generators.beliefs`, the belief of a chain (a1, ..., ak) depends only on its
signature: the first agent, the second-to-last agent, the last agent and the *set* of agents
a2..ak. A story with 5 agents has 5,120 chains of order 6 but far fewer signatures, so the
generator reasons about signatures (bit positions in one integer) and builds a concrete chain
only for the question it asks. Chains never name the same agent twice in a row ("A thinks A
thinks" says nothing new). Agents are numbered 0..n-1; a signature's bit position is
`(((a1 * n + penultimate) * n + last) << n) | rest_mask`, where the penultimate agent of a chain
of one agent is that agent itself.
"""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np


def sig_index(n: int, first: int, penultimate: int, last: int, rest: int) -> int:
    return (((first * n + penultimate) * n + last) << n) | rest


def sig_parts(n: int, index: int) -> tuple[int, int, int, int]:
    """(first, penultimate, last, rest_mask) of a signature bit position."""
    rest = index & ((1 << n) - 1)
    triple = index >> n
    return triple // (n * n), (triple // n) % n, triple % n, rest


def chain_signature(n: int, chain: tuple[int, ...]) -> int:
    rest = 0
    for agent in chain[1:]:
        rest |= 1 << agent
    penultimate = chain[-2] if len(chain) > 1 else chain[0]
    return sig_index(n, chain[0], penultimate, chain[-1], rest)


@lru_cache(maxsize=None)
def _states(n: int, first: int, order: int) -> frozenset[tuple[int, int, int]]:
    """(penultimate, last, mask of a2..ak) over the chains of `order` >= 2 agents starting with `first`."""
    if order == 2:
        return frozenset((first, x, 1 << x) for x in range(n) if x != first)
    return frozenset(
        (last, y, mask | (1 << y)) for _, last, mask in _states(n, first, order - 1) for y in range(n) if y != last
    )


@lru_cache(maxsize=None)
def feasible(n: int, order: int) -> int:
    """Bitset of the signatures that some chain of `order` agents (order >= 1) has."""
    if order < 1:
        raise ValueError("chains have order >= 1")
    bits = 0
    if order == 1:
        for a in range(n):
            bits |= 1 << sig_index(n, a, a, a, 0)
        return bits
    for first in range(n):
        for penultimate, last, mask in _states(n, first, order):
            bits |= 1 << sig_index(n, first, penultimate, last, mask)
    return bits


@lru_cache(maxsize=1 << 16)
def _can_fill(rest: int, last: int, remaining: int, prev: int, need: int) -> bool:
    """Can `remaining` more positions, drawn from `rest`, follow `prev`, cover `need` and end on `last`?"""
    if remaining == 0:
        return need == 0 and prev == last
    if need.bit_count() > remaining:
        return False
    y_mask = rest & ~(1 << prev)
    y = 0
    while y_mask >> y:
        if (y_mask >> y) & 1 and _can_fill(rest, last, remaining - 1, y, need & ~(1 << y)):
            return True
        y += 1
    return False


def random_chain(n: int, index: int, order: int, rng: random.Random) -> tuple[int, ...]:
    """A random chain of `order` agents with the given (feasible) signature."""
    first, penultimate, last, rest = sig_parts(n, index)
    if order == 1:
        return (first,)
    if order == 2:
        return (first, last)
    # positions 2..k-1 end on the penultimate agent and, with the last agent, cover `rest`
    chain = [first]
    prev, need = first, rest & ~(1 << last)
    for remaining in range(order - 2, 0, -1):
        options = [
            y
            for y in range(n)
            if (rest >> y) & 1 and y != prev and _can_fill(rest, penultimate, remaining - 1, y, need & ~(1 << y))
        ]
        if not options:
            raise ValueError(f"signature {index} has no chain of order {order}")
        prev = rng.choice(options)
        need &= ~(1 << prev)
        chain.append(prev)
    chain.append(last)
    return tuple(chain)


def set_bits(bits: int) -> np.ndarray:
    """Positions of the set bits of a (big) integer, in increasing order."""
    if not bits:
        return np.empty(0, dtype=np.int64)
    raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little"))


def random_set_bit(bits: int, rng: random.Random) -> int:
    """A uniformly chosen set bit of a signature bitset: the k-th set bit (k drawn from `rng`),
    found by bisecting on popcounts of low parts (no array of all positions)."""
    count = bits.bit_count()
    if not count:
        raise ValueError("empty bitset")
    k = rng.randrange(count)
    lo, hi = 1, bits.bit_length()  # the smallest width whose low bits hold k + 1 set bits
    while lo < hi:
        mid = (lo + hi) // 2
        if (bits & ((1 << mid) - 1)).bit_count() > k:
            hi = mid
        else:
            lo = mid + 1
    return lo - 1
