"""The independent checker: recompute every gold answer from a record's trace alone.

It shares no code with the simulator (`generators.world`, `generators.beliefs`): it reads the JSON
trace, works out presence itself, lists what each agent perceived (with who else perceived it
publicly), narrows that list agent by agent along the chain, and replays the result forward. The
rules it follows are the numbered rules in the docstring of `generators.beliefs`.

Real datasets follow slightly different conventions; `Rules` names each one, so that a real gold
answer can be checked under its source's own rules (`RULE_SETS`) and a disagreement then means a
label error, not a convention (see `generators/real/` and the README, "Variants of real stories"):

- `entry_reveals`: whoever enters the object's room sees where it is, as if every container were
  transparent (ToMi: "assume all containers are not enclosed"; HiToM: "agent knows location of
  everything" on entering).
- `tell_max_order`: tells change the beliefs of chains of at most this order; longer chains only
  follow what their agents saw (HiToM updates first- and second-order beliefs on a tell only).
- `speaker_assumes_belief`: after a tell the speaker thinks every listener believes the claim,
  trusting or not (HiToM: "the speaker believes that all the listeners believe him").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class Rules:
    """A named set of conventions on top of the project's rules (the defaults are those rules)."""

    name: str = "tomforge"
    entry_reveals: bool = False
    tell_max_order: int | None = None
    speaker_assumes_belief: bool = False


DEFAULT_RULES = Rules()
RULE_SETS: dict[str, Rules] = {
    "tomforge": DEFAULT_RULES,
    "hitom": Rules("hitom", entry_reveals=True, tell_max_order=2, speaker_assumes_belief=True),
    "tomi": Rules("tomi", entry_reveals=True),
}


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
    trusting: frozenset[str] = frozenset()  # listeners who trust the speaker (left the room before it did)


class TraceWorld:
    """Everything the checker needs, derived once from a trace."""

    def __init__(self, trace: list[dict[str, Any]], rules: Rules = DEFAULT_RULES) -> None:
        self.rules = rules
        setup = trace[0]
        if setup.get("kind") != "setup":
            raise ValueError("a trace starts with its setup")
        self.obj = setup["object"]
        self.room = setup["room"]
        transparent = set(setup["transparent"])
        everything_visible = rules.entry_reveals
        rooms: dict[str, str] = {}  # agent -> room it is in
        location: str | None = None
        self.initial: str | None = None
        self.events: list[Perceived] = []
        self.exit_step: dict[str, int] = {}
        for step, event in enumerate(trace[1:]):
            kind = event["kind"]
            if kind == "enter":
                rooms[event["agent"]] = event["room"]
                if event["room"] == self.room and location is not None and (
                        everything_visible or location in transparent):
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
                listeners = hearers - {speaker}
                trusting = frozenset(a for a in listeners if self.trusts(a, speaker))
                self.events.append(Perceived(step, "tell", event["container"], hearers, hearers, speaker,
                                             listeners, trusting))
        self.reality = location
        self.perceived_by = {agent: [e for e in self.events if agent in e.perceivers] for agent in setup["agents"]}

    def trusts(self, listener: str, speaker: str) -> bool:
        """The listener trusts a speaker who left the room after it did (as of now: a later visit may
        change the order; one who never was in the room trusts anyone who was)."""
        return self.exit_step.get(speaker, -1) > self.exit_step.get(listener, -1)

    def belief(self, chain: Iterable[str]) -> str | None:
        """Narrow a1's perceptions to those a2..ak perceived openly, then replay them forward."""
        deciding = self.deciding_event(chain)
        return deciding.container if deciding is not None else None

    def deciding_event(self, chain: Iterable[str]) -> Perceived | None:
        """The last event that sets the chain's belief (for order 0: the last placement), or None."""
        chain = list(chain)
        if not chain:
            return next((e for e in reversed(self.events) if e.what == "place"), None)
        events = self.perceived_by[chain[0]]
        for agent in chain[1:]:
            events = [e for e in events if agent in e.public]
        innermost = chain[-1]
        outside = chain[-2] if len(chain) > 1 else None
        tells_count = self.rules.tell_max_order is None or len(chain) <= self.rules.tell_max_order
        deciding = None
        for event in events:
            if event.what == "place":
                deciding = event
            elif not tells_count:
                continue
            elif innermost in event.trusting:
                deciding = event  # a trusting listener adopts the claim
            elif innermost == event.speaker and outside in event.trusting:
                deciding = event  # ... and takes it as what the speaker believes
            elif self.rules.speaker_assumes_belief and outside == event.speaker and innermost in event.listeners:
                deciding = event  # the speaker takes every listener to believe it
        return deciding


def expected_answer(record: dict[str, Any], rules: Rules = DEFAULT_RULES) -> str:
    """The gold answer the record should carry, recomputed from its trace and question fields."""
    world = TraceWorld(record["trace"], rules)
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
