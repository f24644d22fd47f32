"""Belief tracking from the simulator's state: the epistemic rules and the primary implementation.

The rules (HiToM-style; both this module and `schemas.world.checker` follow exactly these):

1. Presence. Agents start outside every room and are in at most one room at a time. Everyone in a
   room perceives every event there while present: enterings (the entrant included), the object's
   initial placement, moves, stays, statements and exits (the leaver perceives its own exit). Those
   present see each other, so who perceived a room event is known to all who perceived it.
2. Secret witnesses. A move may be watched in secret by agents outside the room. A witness perceives
   the move and sees who is present; nobody else knows it watched (not even another witness).
3. Transparent containers. Anyone in the room sees what a see-through container holds. When an
   agent enters the room while the object lies in a transparent container, the entrant and everyone
   present perceive the object's location there (a "reveal", public like any room event). Stories
   re-enter the room only while the object is in that container, so nobody ever looks into an
   empty transparent container it believed held the object (a case these rules leave undefined).
4. Persistence. A belief changes only through a perceived event about the object; an agent who
   misses a move keeps its old belief.
5. Nesting. For a chain (a1, ..., ak) ("a1 thinks a2 thinks ... ak thinks"), an event counts along
   the chain iff a1 perceives it and every one of a2..ak is among its public perceivers (present in
   the room, or hearing the tell). The chain's belief is obtained by applying, in story order, the
   events that count along it. Order 0 is reality; order k has k agents.
6. Effects. The initial placement, a move and a reveal set the belief to their container.
7. Communication. Tells happen in the gathering room after everyone has left the main room. A
   private tell is heard by speaker and listener only (both know nobody else heard it); a public
   claim is heard by everyone in the gathering room. A tell never changes the speaker's belief. A
   listener adopts the told container iff it trusts the speaker, and it trusts the speaker iff the
   speaker left the main room (for the last time) after the listener did: the speaker may have seen
   more. A trusting listener also takes the claim as the speaker's sincere belief. Exit order is
   known to all, so along a chain a tell heard by all of a1..ak sets the chain's belief iff ak is
   a listener who trusts the speaker, or ak is the speaker and a(k-1) is a listener who trusts it
   ("L thinks S thinks": what S claimed, when L trusts S). A lie (told container differs from the
   speaker's own belief) looks like any other tell to its listeners.
8. Memory questions ask for the object's container at the initial placement.

Implementation: each event that bears on the question object becomes an `Effect` with agent
bitmasks: who perceives it (`first`), who perceives it publicly (`public`), and the pairs
(a(k-1), ak) of innermost agents for which it takes effect (`pairs`: all pairs, or for a tell the
pairs allowed by rule 7). A chain's belief is the value of the latest effect with a1 in `first`,
a2..ak in `public` and its innermost pair in `pairs`. `answers()` evaluates all chain signatures
at once with bitsets (see `generators.chains`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tomforge.generators.world import ENTER, INIT, MOVE, TELL, Replay, Story, check_story


@dataclass(frozen=True, slots=True)
class Effect:
    first: int
    public: int
    pairs: int  # bit (penultimate * n + last) set when the effect applies to chains ending that way
    value: str
    index: int  # position of the causing event in the story


@lru_cache(maxsize=None)
def _subsets(n: int) -> tuple[int, ...]:
    """For each mask O: the bitset over rest-masks R (positions 0..2^n-1) with R a subset of O."""
    size = 1 << n
    return tuple(sum(1 << r for r in range(size) if r & ~o == 0) for o in range(size))


@lru_cache(maxsize=1 << 14)
def _row(n: int, public: int, pairs: int) -> int:
    """Bitset over (penultimate, last, rest) of one first-agent row: rest within `public`, pair in `pairs`."""
    sub = _subsets(n)[public]
    bits = 0
    pair = 0
    while pairs >> pair:
        if (pairs >> pair) & 1:
            bits |= sub << (pair << n)
        pair += 1
    return bits


class BeliefEngine:
    """Answers belief questions about `story.obj` from the simulator's replay of the story."""

    def __init__(self, story: Story, replay: Replay | None = None) -> None:
        self.story = story
        self.replay = replay or check_story(story)
        self.agents = story.agents
        self.n = len(story.agents)
        self.bit = {agent: 1 << i for i, agent in enumerate(story.agents)}
        self.effects = self._effects()
        self._answers: dict[str, int] | None = None

    def _mask(self, agents: frozenset[str] | tuple[str, ...]) -> int:
        mask = 0
        for agent in agents:
            mask |= self.bit[agent]
        return mask

    def _effects(self) -> list[Effect]:
        story, replay = self.story, self.replay
        n = self.n
        all_pairs = (1 << (n * n)) - 1
        effects: list[Effect] = []
        gathering: set[str] = set()
        transparent = set(story.transparent)
        for i, event in enumerate(story.events):
            present = replay.present_before[i]
            if event.kind == INIT and event.obj == story.obj:
                obs = self._mask(present)
                effects.append(Effect(obs, obs, all_pairs, event.the_container(), i))
            elif event.kind == MOVE and event.obj == story.obj:
                obs = self._mask(present)
                effects.append(Effect(obs | self._mask(event.witnesses), obs, all_pairs, event.the_container(), i))
            elif event.kind == ENTER and event.room == story.room:
                where = replay.location_before[i]
                if where in transparent:  # a reveal: the entrant and those present see the object
                    obs = self._mask(present) | self.bit[event.the_agent()]
                    effects.append(Effect(obs, obs, all_pairs, where, i))
            elif event.kind == ENTER and event.room == story.gathering:
                gathering.add(event.the_agent())
            elif event.kind == TELL and event.obj == story.obj:
                teller = event.the_agent()
                hearers = set(event.listeners) | {teller} if not event.public else set(gathering)
                speaker_exit = replay.last_exit[teller]
                speaker = self.agents.index(teller)
                pairs = 0
                for a in hearers:
                    if a != teller and replay.last_exit[a] < speaker_exit:
                        listener = self.agents.index(a)
                        for p in range(n):  # ... L thinks: the claim, whoever is outside L
                            pairs |= 1 << (p * n + listener)
                        pairs |= 1 << (listener * n + speaker)  # ... L thinks S thinks: the claim
                mask = self._mask(frozenset(hearers))
                effects.append(Effect(mask, mask, pairs, event.the_container(), i))
            elif event.kind == "exit" and event.room == story.gathering:
                gathering.discard(event.agent)
        return effects

    def reality(self) -> str:
        return self.replay.final_location

    def memory(self) -> str:
        return self.replay.initial_location

    def belief(self, chain: tuple[str, ...]) -> str:
        """Where a1 thinks a2 thinks ... ak thinks the object is (order 0: reality)."""
        if not chain:
            return self.reality()
        index = {agent: i for i, agent in enumerate(self.agents)}
        first = self.bit[chain[0]]
        rest = 0
        for agent in chain[1:]:
            rest |= self.bit[agent]
        penultimate = chain[-2] if len(chain) > 1 else chain[0]
        pair = 1 << (index[penultimate] * self.n + index[chain[-1]])
        for effect in reversed(self.effects):
            if effect.first & first and not rest & ~effect.public and effect.pairs & pair:
                return effect.value
        raise AssertionError("every agent perceives the initial placement")

    def answers(self) -> dict[str, int]:
        """For each container: the bitset of chain signatures that believe the object is there."""
        if self._answers is None:
            n = self.n
            stride = (n * n) << n  # bits per first agent
            remaining = (1 << (n * stride)) - 1
            found: dict[str, int] = {}
            for effect in reversed(self.effects):
                row = _row(n, effect.public, effect.pairs)
                bits = 0
                first = effect.first
                a1 = 0
                while first:
                    if first & 1:
                        bits |= row << (a1 * stride)
                    first >>= 1
                    a1 += 1
                hit = remaining & bits
                if hit:
                    found[effect.value] = found.get(effect.value, 0) | hit
                    remaining ^= hit
            self._answers = found
        return self._answers
