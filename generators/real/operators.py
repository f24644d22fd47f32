"""The generator's adversarial operators, applied to a parsed real story in the source's own sentences.

Each operator's transform takes (story, target, rng) and returns a new ParsedStory (inserted lines carry
`added_by`) or None when the story offers no place for it; its declaration in `OPERATORS`
(`generators.operator_registry.Operator`) says what it breaks and the sentence shape it needs. Like `generators.operators`, each one breaks
a shortcut (said in its docstring); the oracle then gives the variant's gold, and `variants.py` labels
whether it changed. Tells are said in the gathering room where the source has one (HiToM), else late in
the story by someone in a room (ToMi, in its own terse sentences).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Callable

from tomforge.generators.operator_registry import Operator, OperatorRegistry
from tomforge.generators.real import style
from tomforge.generators.real.story import Line, ParsedStory, check_consistency
from tomforge.schemas.world.checker import RULE_SETS, TraceWorld


@dataclass(frozen=True)
class Target:
    """What the operators work on: the question's object, the containers that may be named, the rules."""

    obj: str
    containers: tuple[str, ...]
    rule_set: str
    avoid: tuple[str, ...] = ()  # the golds of the story's questions, one per question (remention avoids them)


@dataclass
class Snapshot:
    present: frozenset[str]  # agents in the object's room just before this point
    location: str | None  # where the object is just before this point
    next_move: str | None  # the container of the next move of the object after this point


def snapshots(story: ParsedStory, obj: str) -> list[Snapshot]:
    """One snapshot per insertion point 0..len(lines) (before line i; the last: after the story)."""
    room = story.room_of(obj)
    rooms: dict[str, str] = {}
    location = None
    states: list[tuple[frozenset[str], str | None]] = []
    for line in story.lines:
        states.append((frozenset(a for a, r in rooms.items() if r == room), location))
        for event in line.events:
            if event["kind"] == "enter":
                rooms[event["agent"]] = event["room"]
            elif event["kind"] == "exit":
                rooms.pop(event["agent"], None)
            elif event["kind"] in ("init", "move") and event["obj"] == obj:
                location = event["container"]
    states.append((frozenset(a for a, r in rooms.items() if r == room), location))
    moves = [
        (index, e["container"])
        for index, line in enumerate(story.lines)
        for e in line.events
        if e["kind"] == "move" and e["obj"] == obj
    ]
    return [
        Snapshot(present, where, next((c for i, c in moves if i >= index), None))
        for index, (present, where) in enumerate(states)
    ]


def insertable_at(story: ParsedStory, position: int) -> bool:
    """A line may go in at `position` unless the line there modifies the one before it."""
    return position >= len(story.lines) or not story.lines[position].modifies_previous


def insert_line(story: ParsedStory, position: int, text: str, events: list[dict], name: str) -> ParsedStory:
    """`story` with one new line (its events, `added_by=name`) before line `position`, checked as a world."""
    if not insertable_at(story, position):
        raise ValueError(f"position {position} splits a sentence from the one it modifies")
    lines = list(story.lines)
    lines.insert(position, Line(text, events, added_by=name))
    new = replace(story, lines=lines)
    check_consistency(new)
    return new


def _move(story: ParsedStory, position: int, actor: str, target: Target, to: str, name: str) -> ParsedStory:
    text = style.sentence(story.source, "move", a=actor, obj=target.obj, c=to, room=story.room_of(target.obj))
    return insert_line(
        story, position, text, [{"kind": "move", "agent": actor, "obj": target.obj, "container": to}], name
    )


def unobserved_move(story: ParsedStory, target: Target, rng: random.Random) -> ParsedStory | None:
    """Someone still in the room moves the object after another agent has left.

    Breaks "beliefs equal reality" and "everyone saw the same moves"."""
    states = snapshots(story, target.obj)
    seen: set[str] = set()
    slots = []
    for index, snap in enumerate(states):
        if snap.location is not None and snap.present and seen - snap.present and insertable_at(story, index):
            slots.append(index)
        seen |= snap.present
    if not slots:
        return None
    index = rng.choice(slots)
    snap = states[index]
    choices = [c for c in target.containers if c not in (snap.location, snap.next_move)]
    if not choices:
        return None
    return _move(story, index, rng.choice(sorted(snap.present)), target, rng.choice(choices), "unobserved_move")


def return_to_initial(story: ParsedStory, target: Target, rng: random.Random) -> ParsedStory | None:
    """After the object's last move, someone still in the room puts it back where it started.

    Breaks "the first container is an outdated belief, never reality"."""
    states = snapshots(story, target.obj)
    initial = next((s.location for s in states if s.location is not None), None)
    slots = [
        i
        for i, s in enumerate(states)
        if s.present and s.location not in (None, initial) and s.next_move is None and insertable_at(story, i)
    ]
    if initial is None or not slots:
        return None
    index = rng.choice(slots)
    return _move(story, index, rng.choice(sorted(states[index].present)), target, initial, "return")


def remention(story: ParsedStory, target: Target, rng: random.Random) -> ParsedStory | None:
    """Statements naming a wrong container (the gold of the fewest questions: of none where the story
    has containers enough) make it the first and the most mentioned one.

    Breaks "the first / most mentioned container is the answer" (no belief changes)."""
    if len(target.containers) < 2:
        return None
    fewest = min(target.avoid.count(c) for c in target.containers)  # with two containers each may be a gold
    container = rng.choice([c for c in target.containers if target.avoid.count(c) == fewest])
    text = story.text()
    counts = {c: text.count(c) for c in target.containers}
    needed = max(counts.values()) - counts[container] + 1
    agents = story.agents()
    new = story
    for k in range(needed):
        position = 0 if k == 0 else rng.choice([p for p in range(1, len(new.lines) + 1) if insertable_at(new, p)])
        agent = rng.choice(agents)
        sentence = style.sentence(story.source, "likes", a=agent, c=container)
        new = insert_line(
            new,
            position,
            sentence,
            [{"kind": "statement", "agent": agent, "polarity": "likes", "thing": container}],
            "remention",
        )
    return new


def _speakers(story: ParsedStory, public: bool) -> tuple[int, list[str]]:
    """Where a tell goes and who may say it. With a gathering room (HiToM): at the end, anyone (all meet
    there). Otherwise (ToMi): the last point where someone is in a room, with another agent for a public
    tell (the room hears it); a private tell needs no room, but its speaker must be somewhere."""
    if story.gathering is not None:
        return len(story.lines), story.agents()
    rooms: dict[str, str] = {}
    best: tuple[int, list[str]] = (-1, [])
    for position in range(len(story.lines) + 1):
        if position and insertable_at(story, position) or position == len(story.lines):
            speakers = sorted(
                a for a, room in rooms.items() if not public or any(b != a and r == room for b, r in rooms.items())
            )
            if speakers:
                best = (position, speakers)
        if position < len(story.lines):
            for event in story.lines[position].events:
                if event["kind"] == "enter":
                    rooms[event["agent"]] = event["room"]
                elif event["kind"] == "exit":
                    rooms.pop(event["agent"], None)
    return best


def _tell(
    story: ParsedStory, target: Target, rng: random.Random, public: bool, lie: bool, name: str
) -> ParsedStory | None:
    if "private_tell" not in style.SENTENCES[story.source]:
        return None
    position, speakers = _speakers(story, public)
    before = replace(story, lines=story.lines[:position])
    if not speakers or target.obj not in before.objects():
        return None
    speaker = rng.choice(speakers)
    believed = TraceWorld(before.trace_for(target.obj), RULE_SETS[target.rule_set]).belief([speaker])
    if believed is None:
        return None
    container = believed
    if lie:
        choices = [c for c in target.containers if c != believed]
        if not choices:
            return None
        container = rng.choice(choices)
    fields = {"a": speaker, "obj": target.obj, "c": container}
    room = story.gathering or _room_at(story, position, speaker)
    event: dict[str, Any] = {
        "kind": "tell",
        "agent": speaker,
        "room": room,
        "public": public,
        "obj": target.obj,
        "container": container,
    }
    if public:
        text = style.sentence(story.source, "public_tell", **fields)
    else:
        listener = rng.choice(
            [a for a in before.agents() if a != speaker] or [a for a in story.agents() if a != speaker]
        )
        event["listeners"] = [listener]
        text = style.sentence(story.source, "private_tell", b=listener, **fields)
    return insert_line(story, position, text, [event], name)


def _room_at(story: ParsedStory, position: int, agent: str) -> str | None:
    """The room `agent` is in just before line `position`."""
    room = None
    for line in story.lines[:position]:
        for event in line.events:
            if event.get("agent") == agent and event["kind"] in ("enter", "exit"):
                room = event["room"] if event["kind"] == "enter" else None
    return room


def private_tell(story, target, rng):
    """One agent privately tells another where it believes the object is (breaks "only what one saw counts")."""
    return _tell(story, target, rng, public=False, lie=False, name="private_tell")


def public_tell(story, target, rng):
    """One agent tells everyone where it believes the object is (breaks "communication is private")."""
    return _tell(story, target, rng, public=True, lie=False, name="public_tell")


def lie(story, target, rng):
    """A tell naming a container the speaker does not believe (breaks "what is said is true")."""
    return _tell(story, target, rng, public=rng.random() < 0.5, lie=True, name="lie")


def reorder_options(story, target, rng):
    """The same story; only the answer options are dealt in a new order (breaks "the gold sits at position k").
    The story is unchanged; `variants.py` re-deals the options."""
    return story


Transform = Callable[[ParsedStory, Target, random.Random], "ParsedStory | None"]
OPERATORS: OperatorRegistry[Transform] = OperatorRegistry(
    "real stories",
    [
        Operator(
            "unobserved_move",
            unobserved_move,
            "beliefs equal reality; everyone saw the same moves",
            needs_sentence="move",
        ),
        Operator(
            "return",
            return_to_initial,
            "the first container is an outdated belief, never reality",
            needs_sentence="move",
        ),
        Operator("remention", remention, "the first or most mentioned container is the answer", needs_sentence="likes"),
        Operator("private_tell", private_tell, "only what one saw counts", needs_sentence="private_tell"),
        Operator("public_tell", public_tell, "communication is private", needs_sentence="public_tell"),
        Operator("lie", lie, "what is said is true", needs_sentence="private_tell"),
        Operator(
            "reorder_options", reorder_options, "the gold sits at a fixed option position", formats=("multiple_choice",)
        ),
    ],
)
"""Every operator on parsed real stories, with the sentence shape each needs of a source (`style.SENTENCES`)."""
HIGHER_ORDER_BREAKS = "orders the source never asks"  # what a higher-order variant (no operator) breaks


def shortcut_of(name: str) -> str:
    """What a variant made by `name` breaks (a variant's `meta.shortcut`)."""
    return OPERATORS[name].breaks if name in OPERATORS else HIGHER_ORDER_BREAKS


def supported(source: str, answer_format: str) -> list[str]:
    """The operators a source can express in its own sentences and answer format."""
    sentences = style.SENTENCES.get(source, {})
    return [op.name for op in OPERATORS.operators() if op.applies_to(sentences, answer_format)]
