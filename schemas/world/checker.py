"""The independent checker: recompute every gold answer from a record's trace alone.

It shares no code with the simulator (`generators.world`, `generators.beliefs`): it reads the JSON
trace, works out presence itself, lists what each agent perceived (with who else perceived it
publicly), narrows that list agent by agent along the chain, and replays the result forward. The
rules it follows are the numbered rules in the docstring of `generators.beliefs`.

Real datasets follow slightly different conventions; `Rules` names each one, so that a real gold
answer can be checked under its source's own rules (`RULE_SETS`) and a disagreement then means a
label error, not a convention (see `generators/real/` and docs/variants.md):

- `entry_reveals`: whoever enters the object's room sees where it is, as if every container were
  transparent (ToMi: "assume all containers are not enclosed"; HiToM: "agent knows location of
  everything" on entering).
- `tell_max_order`: tells change the beliefs of chains of at most this order; longer chains only
  follow what their agents saw (HiToM updates first- and second-order beliefs on a tell only).
- `speaker_assumes_belief`: after a tell the speaker thinks every listener believes the claim,
  trusting or not (HiToM: "the speaker believes that all the listeners believe him").
- `others_infer_adoption`: a third agent who heard a claim infers that a trusting listener adopted it
  (the exit order is public, so it can); off in HiToM's release, where "A thinks B thinks" after a
  claim B trusted stays what A saw B see.
- `move_observer_order`: not a convention but a defect of HiToM's generator, emulated to name it: a
  placement or move updates a chain of order 2 or more only when the chain lists its agents in the
  order the generator listed the observers (by exit order, the mover last). Rule set
  `hitom_generator` = `hitom` plus this; a gold that only it explains is a label error.
- `reentry_common_knowledge`: whoever enters the object's room is taken, by everyone, to have seen
  where the object is: the entry sets every chain of order 2+ that names the entrant (ToMi's
  second-order labels: "Where does A think that B searches?" after B came back while A was away).
- `bystander_entry_final`: a defect of ToMi's generator, emulated to name it: when an agent outside
  the chain ever enters the object's room, the chain (order 2+) believes the final location (ToMi
  applies that third agent's entry after the whole story). Rule set `tomi_generator` = `tomi` plus this.
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
    others_infer_adoption: bool = True
    move_observer_order: bool = False
    reentry_common_knowledge: bool = False
    bystander_entry_final: bool = False


DEFAULT_RULES = Rules()
RULE_SETS: dict[str, Rules] = {
    "tomforge": DEFAULT_RULES,
    "hitom": Rules(
        "hitom", entry_reveals=True, tell_max_order=2, speaker_assumes_belief=True, others_infer_adoption=False
    ),
    "tomi": Rules("tomi", entry_reveals=True, reentry_common_knowledge=True),
}
RULE_SETS["hitom_generator"] = Rules(
    "hitom_generator",
    entry_reveals=True,
    tell_max_order=2,
    speaker_assumes_belief=True,
    others_infer_adoption=False,
    move_observer_order=True,
)
RULE_SETS["tomi_generator"] = Rules(
    "tomi_generator", entry_reveals=True, reentry_common_knowledge=True, bystander_entry_final=True
)


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
    entrant: str | None = None  # reveals: who entered
    listed: tuple[
        str, ...
    ] = ()  # placements: observers in the order HiToM's generator lists them (move_observer_order)


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
        self.entered: set[str] = set()  # everyone who ever entered the object's room
        for step, event in enumerate(trace[1:]):
            kind = event["kind"]
            if kind == "enter":
                rooms[event["agent"]] = event["room"]
                if event["room"] == self.room:
                    self.entered.add(event["agent"])
                if (
                    event["room"] == self.room
                    and location is not None
                    and (everything_visible or location in transparent)
                ):
                    seen = frozenset(a for a, r in rooms.items() if r == self.room)
                    self.events.append(Perceived(step, "place", location, seen, seen, entrant=event["agent"]))
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
                distracted = frozenset(event.get("distracted", ()))  # present, missed it, nobody noticed
                listed = (
                    _listing(trace, step, here, event["agent"], self.room)
                    if rules.move_observer_order and kind == "move"
                    else ()
                )
                self.events.append(
                    Perceived(step, "place", location, (here - distracted) | secret, here, listed=listed)
                )
            elif kind == "tell" and event["obj"] == self.obj:
                speaker = event["agent"]
                if event["public"]:
                    hearers = frozenset(a for a, r in rooms.items() if r == event["room"])
                else:
                    hearers = frozenset(event["listeners"]) | {speaker}
                listeners = hearers - {speaker}
                trusting = frozenset(a for a in listeners if self.trusts(a, speaker))
                self.events.append(
                    Perceived(step, "tell", event["container"], hearers, hearers, speaker, listeners, trusting)
                )
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
        counting = self.counting_events(chain)
        return counting[-1] if counting else None

    def counting_events(self, chain: Iterable[str]) -> list[Perceived]:
        """Every event that sets the chain's belief, in story order (order 0: every placement); the
        chain's belief after any point of the story is the container of the last one before it."""
        chain = list(chain)
        if not chain:
            return [e for e in self.events if e.what == "place"]
        return [event for event in self.reaching_events(chain) if self.counts(chain, event)]

    def reaching_events(self, chain: Iterable[str]) -> list[Perceived]:
        """The events that reach the chain, in story order, before the rule of what each one sets
        (`counts`): every event its first agent perceived (secretly or not) that each later agent
        perceived openly; under `reentry_common_knowledge` (order 2+) also every entry into the room by
        an agent of the chain; under `bystander_entry_final`, when it applies, the last placement only.
        Order 0: every event about the object. The chain's counting events are a subset; a chain's
        reaching events are a subset of its prefix's, but for the entries `reentry_common_knowledge` adds."""
        chain = list(chain)
        if not chain:
            return list(self.events)
        if self.rules.bystander_entry_final and len(chain) > 1 and self.entered - set(chain):
            return [e for e in self.events if e.what == "place"][-1:]
        events = self.perceived_by[chain[0]]
        for agent in chain[1:]:
            events = [e for e in events if agent in e.public]
        if self.rules.reentry_common_knowledge and len(chain) > 1:
            extra = [e for e in self.events if e.entrant in chain and e not in events]
            events = sorted(events + extra, key=lambda e: e.step)
        return events

    def counts(self, chain: list[str], event: Perceived) -> bool:
        """Whether `event`, already known to reach every agent of the chain, sets the chain's belief."""
        innermost = chain[-1]
        outside = chain[-2] if len(chain) > 1 else None
        if event.what == "place":
            return not (event.listed and len(chain) > 1 and not _in_order(chain, event.listed))
        if self.rules.tell_max_order is not None and len(chain) > self.rules.tell_max_order:
            return False
        if innermost in event.trusting and (outside in (None, innermost) or self.rules.others_infer_adoption):
            return True  # a trusting listener adopts the claim
        if innermost == event.speaker and outside in event.trusting:
            return True  # ... and takes it as what the speaker believes
        # the speaker takes every listener to believe it
        return self.rules.speaker_assumes_belief and outside == event.speaker and innermost in event.listeners


def _listing(
    trace: list[dict[str, Any]], step: int, here: frozenset[str], mover: str | None, room: str
) -> tuple[str, ...]:
    """Those present, by their next exit from the room (never leaving: last), the mover at the very end."""
    exits: dict[str, int] = {}
    for later, event in enumerate(trace[step + 2 :], start=step + 1):
        if event["kind"] == "exit" and event["room"] == room and event["agent"] in here:
            exits.setdefault(event["agent"], later)
    stayers = sorted((a for a in here if a != mover), key=lambda a: (exits.get(a, len(trace)), a))
    return tuple(stayers) + ((mover,) if mover in here else ())


def _in_order(chain: list[str], listed: tuple[str, ...]) -> bool:
    positions = [listed.index(agent) for agent in chain]
    return all(a < b for a, b in zip(positions, positions[1:]))


def asked_trace(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace up to where the question is asked: a dialogue's question asked mid-conversation
    (`meta.asked_after_event`, an index into the trace) sees only the events up to that point."""
    trace = record["trace"]
    cut = (record.get("meta") or {}).get("asked_after_event")
    return trace if cut is None else trace[: int(cut) + 1]


def has_access(world: TraceWorld, agent: str, before: int | None = None) -> bool:
    """Whether `agent` had a way to know where the object is (as of step `before`, default the end):
    the event that set its belief is the last placement (or a reveal after it), or a tell of the true
    location by a speaker who had such access when speaking."""
    counting = [e for e in world.counting_events([agent]) if before is None or e.step < before]
    placements = [
        e for e in world.events if e.what == "place" and e.entrant is None and (before is None or e.step < before)
    ]
    decisive = counting[-1]
    if decisive.what == "place":
        return decisive.step >= placements[-1].step
    truth = [e for e in placements if e.step < decisive.step][-1].container
    speaker = decisive.speaker
    return decisive.container == truth and speaker is not None and has_access(world, speaker, decisive.step)


def expected_knowledge(record: dict[str, Any], rules: Rules = DEFAULT_RULES) -> str | list[str] | None:
    """The gold of an answerability question re-derived from the trace: the sorted list of agents
    whose belief is the true location (list), or whether the asked agent had access to it (yes/no);
    None when an agent it concerns believes the truth without access or the reverse (a question the
    generator must never ask). Second-person records show the reader as "you"."""
    world = TraceWorld(asked_trace(record), rules)
    agents = record["trace"][0]["agents"]
    reader = record["meta"].get("reader")

    def clear(agent: str) -> bool:
        return (world.belief([agent]) == world.reality) == has_access(world, agent)

    if record["answer_format"] == "list":
        if not all(clear(agent) for agent in agents):
            return None
        return sorted("you" if a == reader else a for a in agents if world.belief([a]) == world.reality)
    agent = record["perspective_chain"][0]
    if not clear(agent):
        return None
    return "yes" if has_access(world, agent) else "no"


def expected_answer(record: dict[str, Any], rules: Rules = DEFAULT_RULES) -> str | None:
    """The gold answer the record should carry, recomputed from its trace and question fields
    (None when the trace never says where the object is: `check_record` reports the mismatch).
    A list question's answer is its items joined by ", "."""
    if record["question_type"] == "answerability":
        knowledge = expected_knowledge(record, rules)
        return ", ".join(knowledge) if isinstance(knowledge, list) else knowledge
    world = TraceWorld(asked_trace(record), rules)
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
    if record["answer_format"] == "list":
        if record.get("answer_list") != expected_knowledge(record):
            problems.append(
                f"answer_list {record.get('answer_list')!r} but the trace implies {expected_knowledge(record)!r}"
            )
        if not set(record.get("answer_list") or []) <= set(record["options"]):
            problems.append("a listed agent is not among the options")
    if record["answer_format"] == "yes_no" and record.get("answer_index") is not None:
        if record["options"][record["answer_index"]] != record["answer"]:
            problems.append("answer_index does not point at the answer")
    if record["answer_format"] == "multiple_choice":
        index = record["answer_index"]
        if index is None or record["options"][index] != record["answer"]:
            problems.append("answer_index does not point at the answer")
        if len(set(record["options"])) != len(record["options"]):
            problems.append("repeated options")
    if record["question_type"] not in ("memory", "reality") and record["answer_format"] != "list":
        world = TraceWorld(record["trace"])
        belief = world.belief(record["perspective_chain"])
        if record["is_false_belief"] != (belief != world.reality):
            problems.append("is_false_belief disagrees with the trace")
    return problems
