"""The generator's balance controls (`generators.balance`), applied to variants of real stories.

A real story cannot be re-drawn until it serves a quota (as `generators.generate` draws new stories),
so variants are balanced by choosing among candidates, and by padding the chosen stories:
- **Gold role** per stratum (belief order or memory, answer format, number of options k): `deal` splits
  the stratum's size over role slots weighted so that the object's first container (role `initial`) is
  the gold 1 time in k and its true location (`final`) 1 time in k, the audit's chance for "answer the
  first container" and "answer where it is"; the other k - 2 slots go to the containers it passed
  through or was only said to be in (`other`: intermediate or never visited), or to `final` where the
  pool has none. Reality questions (order 0) are `final` unless the object ends where it started:
  `initial` 1 in k. Memory questions ask for the first container by definition and are kept as they
  are. `Quota` serves those counts from the candidates, at most `per_slot` from one slot (the chains of
  one new order on one story), single-role slots first; the stratum's size is the largest the pool fills
  exactly. With HiToM's 15 options every story names only 2-5 containers, so the rarer roles
  (initial, final) limit how many variants are kept.
- **First, last and most mentioned container**: per story, three `Controller`s choose which candidate
  container is mentioned first, last and most often, keeping each rule's hits per order at its chance,
  and statements in the source's own sentence ("A likes the C.") make it so, as the generator's `pad`.
  Sources without such a sentence (ExploreToM) keep their mentions.
- **Gold position**: `variants.Dealer` (a shuffled deck per order).
- **Yes/no**: no parsed source asks a yes/no container question, so there is nothing to balance.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any, Hashable, Protocol, Sequence, TypeVar

from tomforge.generators.balance import Controller, Quota, deal
from tomforge.generators.padding import MAX_PADDING
from tomforge.generators.real import style
from tomforge.generators.real.operators import insert_line, insertable_at
from tomforge.generators.real.story import ParsedStory
from tomforge.generators.shortcuts import mentions

GROUPS = {"initial": "initial", "final": "final", "intermediate": "other", "never": "other"}
Stratum = tuple[Any, str, int]  # (order or "memory", answer format, options the audit's chance counts)


class Candidate(Protocol):
    """What the selection needs of a candidate variant."""

    @property
    def role(self) -> str: ...  # initial, final, intermediate or never

    @property
    def slot(self) -> Hashable: ...  # candidates sharing a slot are alternatives: at most `per_slot` are kept

    @property
    def stratum(self) -> Stratum: ...


C = TypeVar("C", bound=Candidate)


def role_block(key: Any, k: int, available: set[str]) -> tuple[str, ...] | None:
    """The role groups of one stratum as slots (a group repeated = weighted; see the module docstring).
    `final` and `other` stand in for each other where the pool lacks one; `initial` never takes another's
    share (the first-container rule would rise above chance). None when the stratum cannot be balanced
    (nothing but first containers); empty for memory questions (not balanced)."""
    if key == "memory":
        return ()
    block = ["initial"] + ["final"] * max(k - 1, 1) if key == 0 else ["initial", "final"] + ["other"] * max(k - 2, 0)
    stand_in = {"final": "other", "other": "final"}
    block = [group if group in available or group == "initial" else stand_in[group] for group in block]
    if any(group not in available for group in block if group != "initial"):
        return None
    return tuple(group for group in block if group in available)


def _slots(candidates: Sequence[C], rng: random.Random) -> list[dict[str, list[C]]]:
    """The candidates of one stratum by slot and role group; slots offering fewer groups first (they have
    no alternative), ties in a shuffled order."""
    by_slot: dict[Hashable, dict[str, list[C]]] = {}
    for candidate in candidates:
        by_slot.setdefault(candidate.slot, defaultdict(list))[GROUPS[candidate.role]].append(candidate)
    slots = list(by_slot.values())
    rng.shuffle(slots)
    return sorted(slots, key=len)


def _fill(slots: list[dict[str, list[C]]], cells: dict, per_slot: int, rng: random.Random) -> tuple[list[C], int]:
    """Serve the dealt counts from the slots (generators.balance.Quota: the group most behind first);
    returns the chosen candidates and how many counts were left unserved."""
    quota: Quota = Quota(cells, lambda cell: cell[1])
    kept: list[C] = []
    for slot in slots:
        offered = {group: list(members) for group, members in slot.items()}
        for _ in range(per_slot):
            cell = quota.take(lambda group: bool(offered.get(group)), rng)  # noqa: B023 (called here)
            if cell is None:
                break
            kept.append(offered[cell[1]].pop(0))
        if not quota.left:
            break
    return kept, quota.left


def select_stratum(stratum: Stratum, candidates: Sequence[C], per_slot: int, seed: Any) -> list[C]:
    """The largest balanced choice from one stratum's candidates (all of them for memory questions)."""
    key, fmt, k = stratum
    slots = _slots(candidates, random.Random(f"{seed}:{stratum}:slots"))
    available: Counter[str] = Counter()
    for slot in slots:
        for group, members in slot.items():
            available[group] += min(per_slot, len(members))
    block = role_block(key, k, set(available))
    if block is None:
        return []
    if not block:
        return [c for slot in slots for members in slot.values() for c in members[:per_slot]]
    weights = Counter(block)
    size = min(available[group] * len(block) // weight for group, weight in weights.items())
    while size > 0:
        rng = random.Random(f"{seed}:{stratum}:{size}")
        kept, left = _fill(slots, deal(size, [fmt], block, lambda _: (None,), rng), per_slot, rng)
        if not left:
            return kept
        size -= left
    return []


def select(candidates: Sequence[C], per_slot: int, seed: Any) -> list[C]:
    """Every stratum's balanced choice (see the module docstring), in the candidates' order."""
    strata: dict[Stratum, list[C]] = defaultdict(list)
    for candidate in candidates:
        strata[candidate.stratum].append(candidate)
    chosen = {
        id(c) for stratum in sorted(strata, key=str) for c in select_stratum(stratum, strata[stratum], per_slot, seed)
    }
    return [c for c in candidates if id(c) in chosen]


class MentionControls:
    """Which container a story mentions first, last and most often, chosen so that each rule's hits per
    order stay at chance over the whole run (one `Controller` per rule, as the generator's `pad`)."""

    def __init__(self) -> None:
        self.first, self.last, self.most = Controller(), Controller(), Controller()

    def pad(
        self,
        story: ParsedStory,
        questions: Sequence[tuple[Any, str, float]],
        containers: Sequence[str],
        rng: random.Random,
        fixed: bool = False,
    ) -> ParsedStory:
        """`story` with statements that make the chosen containers first, last and most mentioned among
        `containers` (the options, or the story's containers). `questions`: (order, gold, chance) of the
        variants asked on it. `fixed`: keep the story's own first mentioned container (the remention
        operator put a wrong one there); its hits still count, the others compensate where they can."""
        if "likes" not in style.SENTENCES.get(story.source, {}) or not questions or len(containers) < 2:
            return story
        hits = {c: [c == gold for _, gold, _ in questions] for c in containers}
        items = [(key, i, chance, 1.0) for i, (key, _, chance) in enumerate(questions)]
        named = [mentions(line.text, containers) for line in story.lines]
        order = [c for line in named for c in line]
        counts = Counter(order)
        natural = order[0] if order else None
        first = self.first.choose({natural: hits[natural]} if fixed and natural else hits, items, rng)
        if first != natural:
            story = self._say(story, 0, first, rng)
            named.insert(0, [first])
            counts[first] += 1
        natural = next((line[-1] for line in reversed(named) if line), None)
        last = self.last.choose(hits, items, rng)
        if last != natural:
            story = self._say(story, len(story.lines), last, rng)
            named.append([last])
            counts[last] += 1
        first_line = next(i for i, line in enumerate(named) if line)
        last_line = max(i for i, line in enumerate(named) if line)
        room = [p for p in range(first_line + 1, last_line + 1) if insertable_at(story, p)]

        def need(c: str) -> int:
            return max(0, max(counts[o] for o in containers if o != c) - counts[c] + 1)

        choices = {c: row for c, row in hits.items() if need(c) == 0 or (room and need(c) <= MAX_PADDING)}
        most = self.most.choose(choices, items, rng)
        for _ in range(need(most)):
            story = self._say(story, rng.choice(room), most, rng)
            last_line += 1
            room = [p for p in range(first_line + 1, last_line + 1) if insertable_at(story, p)]
        return story

    @staticmethod
    def _say(story: ParsedStory, position: int, container: str, rng: random.Random) -> ParsedStory:
        """A statement naming `container` at `position`, in one of the source's noise sentences (ToMi's
        name things and rooms, never a container: the only way to change mention counts without changing
        the world, as the remention operator does)."""
        polarity = rng.choice(
            [p for p in ("likes", "dislikes", "loves", "hates") if p in style.SENTENCES[story.source]]
        )
        agent = rng.choice(story.agents())
        text = style.sentence(story.source, polarity, a=agent, c=container)
        return insert_line(
            story,
            position,
            text,
            [{"kind": "statement", "agent": agent, "polarity": polarity, "thing": container}],
            "balance",
        )
