"""The process reward and trace fidelity: a reasoning text's claims (`rl.claims`) checked against the
true belief states of the story (`schemas.world.checker.TraceWorld`, under the source's rule set).

Claims are read in order. An event claim is right when such an event (kind, actor, container; on the
named line, if any) happened, and then becomes "the event last named": perception claims are about
it, and belief claims are about the moment after it. A belief claim with "in the end", or made before
any event is named, is about the end of the story; "at the start" is about the moment after the first
placement. A claim the world cannot settle (a perception claim with no event named, a chain whose
belief the rules leave undefined) is `unverifiable` and counts neither way.

Fidelity: whether the text states the deciding belief: its last belief claim about the question's own
chain (for a memory question: its last statement of where the object started) names the answer's
container and is true when it is made. A text is faithful when it also names the deciding event (the
last event that sets the chain's belief; for memory, the first placement) and no claim of it is
contradicted: a text that only asserts the conclusion, or invents a move, is not, whatever it concludes.

The `steps` form's claims refer to events by the text's labels ("Event N:", the first event after the
one last named that the labelled claim fits) or by the story's lines. `kept` is right when the events
referred to are exactly those reaching its chain (`TraceWorld.reaching_events`; reality: every event
about the object; the start: the first placement); `deciding` when the event referred to is the chain's
last counting event (the start: the first placement) and puts the object in the named place;
`none_counts` when no event counts for the chain. A label the text never gave is `unverifiable`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from tomforge.rl.claims import Claim, parse_claims, vocabulary
from tomforge.schemas.world.checker import Perceived, TraceWorld
from tomforge.schemas.world.world_question import WorldQuestion

CORRECT, CONTRADICTED, UNVERIFIABLE = "correct", "contradicted", "unverifiable"
_THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)


@dataclass(frozen=True)
class Checked:
    claim: Claim
    verdict: str
    events: tuple[int, ...] = ()  # event claims: the steps of the events it may name


@dataclass(frozen=True)
class ProcessScore:
    checked: tuple[Checked, ...]
    states_deciding_belief: bool
    names_deciding_event: bool = False

    @property
    def faithful(self) -> bool:
        """Right reasons: the deciding event named, the deciding belief stated, no claim contradicted."""
        return self.states_deciding_belief and self.names_deciding_event and self.n_contradicted == 0

    @property
    def n_correct(self) -> int:
        return sum(c.verdict == CORRECT for c in self.checked)

    @property
    def n_contradicted(self) -> int:
        return sum(c.verdict == CONTRADICTED for c in self.checked)

    def score(self, contradiction_penalty: float = 1.0) -> float:
        """(right - penalty x contradicted) / (right + contradicted); 0 without a checkable claim."""
        settled = self.n_correct + self.n_contradicted
        return (self.n_correct - contradiction_penalty * self.n_contradicted) / settled if settled else 0.0


def think_text(completion: str) -> str:
    """The reasoning: the first <think> block, or the text before <answer> when the tags are off."""
    found = _THINK_RE.search(completion)
    if found:
        return found.group(1)
    return completion.split("<answer>")[0]


class _Checker:
    def __init__(self, question: WorldQuestion) -> None:
        self.question = question
        self.world: TraceWorld = question.world()
        self.trace = question.trace
        self.final = math.inf
        places = [e for e in self.world.events if e.what == "place"]
        self.start = places[0].step if places else -1
        self._counting: dict[tuple[str, ...], list[Perceived]] = {}

    def belief_at(self, chain: tuple[str, ...], time: float) -> str | None:
        if chain not in self._counting:
            self._counting[chain] = self.world.counting_events(chain)
        before = [e for e in self._counting[chain] if e.step <= time]
        return before[-1].container if before else None

    def find_events(self, claim: Claim, cursor: list[Perceived]) -> list[Perceived]:
        """The events a claim may name: every match after the event last named (else every match); a
        text that cannot tell two alike events apart is read in whichever way makes it true."""

        def fits(event: Perceived) -> bool:
            item = self.trace[event.step + 1]
            kind = {"enter": "reveal"}.get(item["kind"], item["kind"])
            return (
                kind == claim.event
                and event.container == claim.container
                and (claim.agent is None or item.get("agent") == claim.agent)
                and (claim.line is None or item.get("line") == claim.line)
            )

        matching = [e for e in self.world.events if fits(e)]
        after = min((e.step for e in cursor), default=-1)
        return [e for e in matching if e.step > after] or matching

    def times_of(self, claim: Claim, cursor: list[Perceived]) -> list[float]:
        if claim.time == "end" or (not cursor and claim.time is None and claim.line is None):
            return [self.final]
        if claim.time == "start":
            return [self.start]
        if claim.line is not None:
            on_line = [i for i, item in enumerate(self.trace[1:]) if item.get("line") == claim.line]
            return [on_line[-1] if on_line else self.final]
        return [e.step for e in cursor] or [self.final]

    def about_event(self, claim: Claim, events: list[Perceived]) -> str:
        if not events or claim.agent is None:
            return UNVERIFIABLE
        agent = claim.agent
        for event in events:
            truth = {
                "perceived": agent in event.perceivers,
                "not_perceived": agent not in event.perceivers,
                "not_present": agent not in event.public,
                "secret": agent in event.perceivers and agent not in event.public,
            }[claim.kind]
            if truth:
                return CORRECT
        return CONTRADICTED

    def about_belief(self, claim: Claim, cursor: list[Perceived]) -> str:
        believed = {self.belief_at(claim.chain, time) for time in self.times_of(claim, cursor)} - {None}
        return UNVERIFIABLE if not believed else CORRECT if claim.container in believed else CONTRADICTED

    def about_trust(self, claim: Claim, cursor: list[Perceived]) -> str:
        """Trust as of the tell last named by that speaker (trust follows the exit order so far), else
        as of the end of the story."""
        tells = [e for e in cursor if e.what == "tell" and e.speaker == claim.other and claim.agent in e.listeners]
        trusts = {claim.agent in e.trusting for e in tells} or {self.world.trusts(str(claim.agent), str(claim.other))}
        return CORRECT if (claim.kind == "trust") in trusts else CONTRADICTED

    def resolve(self, claim: Claim, labels: dict[int, int]) -> set[int] | None:
        """The steps of the events a kept / deciding claim refers to (None: a label never given)."""
        if claim.ref_kind == "line":
            return {e.step for e in self.world.events if self.trace[e.step + 1].get("line") in claim.refs}
        if any(ref not in labels for ref in claim.refs):
            return None
        return {labels[ref] for ref in claim.refs}

    def names_a_line_without_event(self, claim: Claim) -> bool:
        """A line reference to a line that holds no event about the object (the claim is then wrong)."""
        lines = {self.trace[e.step + 1].get("line") for e in self.world.events}
        return claim.ref_kind == "line" and not lines.issuperset(claim.refs)

    def step_counting(self, claim: Claim) -> list[Perceived]:
        """The events that count for a step claim's chain (the start: the first placement)."""
        if claim.time == "start":
            return [e for e in self.world.events if e.step == self.start]
        return self.world.counting_events(claim.chain)

    def about_steps(self, claim: Claim, labels: dict[int, int]) -> tuple[str, tuple[int, ...]]:
        """The verdict of a kept / deciding / none_counts claim, and the deciding event it names if right."""
        if claim.kind == "none_counts":
            return (CONTRADICTED if self.step_counting(claim) else CORRECT), ()
        steps = self.resolve(claim, labels)
        if steps is None:
            return UNVERIFIABLE, ()
        if self.names_a_line_without_event(claim):
            return CONTRADICTED, ()
        if claim.kind == "kept":
            reaching = self.step_counting(claim) if claim.time == "start" else self.world.reaching_events(claim.chain)
            return (CORRECT if steps == {e.step for e in reaching} else CONTRADICTED), ()
        counting = self.step_counting(claim)
        last = counting[-1] if counting else None
        if last is not None and steps == {last.step} and last.container == claim.container:
            return CORRECT, (last.step,)
        return CONTRADICTED, ()

    def check(self, claims: list[Claim]) -> list[Checked]:
        cursor: list[Perceived] = []
        labels: dict[int, int] = {}  # the text's event labels -> steps
        out = []
        for claim in claims:
            if claim.kind == "event":
                found = self.find_events(claim, cursor)
                cursor = found or cursor
                if found and claim.label is not None:
                    labels[claim.label] = found[0].step
                out.append(Checked(claim, CORRECT if found else CONTRADICTED, tuple(e.step for e in found)))
                continue
            if claim.kind in ("kept", "deciding", "none_counts"):
                verdict, named = self.about_steps(claim, labels)
                out.append(Checked(claim, verdict, named))
                continue
            elif claim.kind == "belief":
                verdict = self.about_belief(claim, cursor)
            elif claim.kind in ("trust", "distrust"):
                verdict = self.about_trust(claim, cursor)
            else:
                verdict = self.about_event(claim, cursor)
            out.append(Checked(claim, verdict))
        return out

    def answer(self) -> str | None:
        if self.question.kind == "memory":
            return self.world.initial
        return self.belief_at(self.question.chain, self.final)

    def deciding_step(self) -> int | None:
        """The event the answer rests on: the chain's last counting event (memory: the first placement)."""
        if self.question.kind == "memory":
            return self.start if self.start >= 0 else None
        counting = self.world.counting_events(self.question.chain)
        return counting[-1].step if counting else None

    def names_deciding(self, checked: list[Checked]) -> bool:
        step = self.deciding_step()
        return step is not None and any(c.verdict == CORRECT and step in c.events for c in checked)

    def states_deciding(self, checked: list[Checked]) -> bool:
        if self.question.kind == "memory":
            said = [
                c
                for c in checked
                if (c.claim.kind == "event" and c.claim.event == "init")
                or (c.claim.kind == "belief" and not c.claim.chain and c.claim.time == "start")
            ]
        else:
            said = [c for c in checked if c.claim.kind == "belief" and c.claim.chain == self.question.chain]
        return bool(said) and said[-1].verdict == CORRECT and said[-1].claim.container == self.answer()


def score_reasoning(text: str, question: WorldQuestion) -> ProcessScore:
    """The claims of a reasoning text, each checked, and whether it states the deciding belief."""
    checker = _Checker(question)
    setup = question.trace[0]
    containers = [*setup.get("containers", ()), *(e.container for e in checker.world.events)]
    claims = parse_claims(text, vocabulary(setup["agents"], question.obj, containers))
    checked = checker.check(claims)
    return ProcessScore(tuple(checked), checker.states_deciding(checked), checker.names_deciding(checked))


def world_of_truth(truth: dict[str, Any]) -> WorldQuestion | None:
    """The world a ground truth carries (`schemas.rl.columns.ground_truth`, key `world`), if any."""
    world = truth.get("world")
    return WorldQuestion.from_json(world) if isinstance(world, dict) else None


def score_completion_process(completion: str, truth: dict[str, Any]) -> ProcessScore | None:
    """The process score of a completion's <think> block, or None when the item has no world."""
    question = world_of_truth(truth)
    return score_reasoning(think_text(completion), question) if question is not None else None
