"""The independent checker: recompute every gold answer from a record's trace alone.

It shares no code with the simulator (`generators.world`, `generators.beliefs`): it reads the JSON
trace, works out presence itself, lists what each agent perceived (with who else perceived it
publicly), narrows that list agent by agent along the chain, and replays the result forward. The
rules it follows are the numbered rules in the docstring of `generators.beliefs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class Perceived:
    """One event that bears on the object, as somebody perceived it."""

    step: int
    what: str  # "place" (init, move, reveal) or "tell"
    container: str
    perceivers: frozenset[str]  # everyone who perceived it, secret witnesses included
    public: frozenset[str]  # who perceived it openly (known to each other)
    speaker: str | None = None
    listeners: frozenset[str] = frozenset()


class TraceWorld:
    """Everything the checker needs, derived once from a trace."""

    def __init__(self, trace: list[dict[str, Any]]) -> None:
        setup = trace[0]
        if setup.get("kind") != "setup":
            raise ValueError("a trace starts with its setup")
        self.obj = setup["object"]
        self.room = setup["room"]
        transparent = set(setup["transparent"])
        rooms: dict[str, str] = {}  # agent -> room it is in
        location: str | None = None
        self.initial: str | None = None
        self.events: list[Perceived] = []
        self.exit_step: dict[str, int] = {}
        for step, event in enumerate(trace[1:]):
            kind = event["kind"]
            if kind == "enter":
                rooms[event["agent"]] = event["room"]
                if event["room"] == self.room and location in transparent:
                    seen = frozenset(a for a, r in rooms.items() if r == self.room)
                    self.events.append(Perceived(step, "place", location, seen, seen))
            elif kind == "exit":
                del rooms[event["agent"]]
                if event["room"] == self.room:
                    self.exit_step[event["agent"]] = step
            elif kind in ("init", "move") and event["obj"] == self.obj:
                here = frozenset(a for a, r in rooms.items() if r == self.room)
                location = event["container"]
                if self.initial is None:
                    self.initial = location
                secret = frozenset(event.get("witnesses", ()))
                self.events.append(Perceived(step, "place", location, here | secret, here))
            elif kind == "tell" and event["obj"] == self.obj:
                speaker = event["agent"]
                if event["public"]:
                    hearers = frozenset(a for a, r in rooms.items() if r == event["room"])
                else:
                    hearers = frozenset(event["listeners"]) | {speaker}
                self.events.append(Perceived(step, "tell", event["container"], hearers, hearers, speaker,
                                             hearers - {speaker}))
        self.reality = location
        self.perceived_by = {agent: [e for e in self.events if agent in e.perceivers] for agent in setup["agents"]}

    def trusts(self, listener: str, speaker: str) -> bool:
        return self.exit_step[speaker] > self.exit_step[listener]

    def belief(self, chain: Iterable[str]) -> str | None:
        """Narrow a1's perceptions to those a2..ak perceived openly, then replay them forward."""
        chain = list(chain)
        if not chain:
            return self.reality
        events = self.perceived_by[chain[0]]
        for agent in chain[1:]:
            events = [e for e in events if agent in e.public]
        innermost = chain[-1]
        outside = chain[-2] if len(chain) > 1 else None
        belief = None
        for event in events:
            if event.what == "place":
                belief = event.container
            elif innermost in event.listeners and self.trusts(innermost, event.speaker):
                belief = event.container  # a trusting listener adopts the claim
            elif innermost == event.speaker and outside in event.listeners and self.trusts(outside, event.speaker):
                belief = event.container  # ... and takes it as what the speaker believes
        return belief


def expected_answer(record: dict[str, Any]) -> str:
    """The gold answer the record should carry, recomputed from its trace and question fields."""
    world = TraceWorld(record["trace"])
    meta = record["meta"]
    if record["question_type"] == "memory":
        container = world.initial
    else:
        container = world.belief(record["perspective_chain"])
    if record["answer_format"] == "yes_no":
        return "yes" if container == meta["asked_container"] else "no"
    return container


def check_record(record: dict[str, Any]) -> list[str]:
    """Problems with one generated record (empty when its gold answer and options are right)."""
    problems = []
    expected = expected_answer(record)
    if record["answer"] != expected:
        problems.append(f"answer {record['answer']!r} but the trace implies {expected!r}")
    if record["answer_format"] == "multiple_choice":
        index = record["answer_index"]
        if index is None or record["options"][index] != record["answer"]:
            problems.append("answer_index does not point at the answer")
        if len(set(record["options"])) != len(record["options"]):
            problems.append("repeated options")
    if record["question_type"] not in ("memory", "reality"):
        world = TraceWorld(record["trace"])
        belief = world.belief(record["perspective_chain"])
        if record["is_false_belief"] != (belief != world.reality):
            problems.append("is_false_belief disagrees with the trace")
    return problems
