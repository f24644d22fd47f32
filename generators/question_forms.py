"""Question forms beyond "where is it": who knows (a list) and whether someone can know (answerability).

The container questions (multiple choice, free text, yes/no) ask where someone thinks the object
is. FANToM's finding is that a model that answers those well can still fail to list who knows a
fact, so the generator also asks, about the same worlds:

- **list**: "Who knows where the apple is?" The gold (`answer_list`) is every agent whose belief
  about the object matches reality, from the belief engine (`generators.beliefs`).
- **answerability**: "Can Bob know where the apple is?" Yes iff Bob had access to the object's
  current location: his belief comes from perceiving the last placement (or a reveal after it), or
  from a tell of the true location by a speaker who had that access when speaking.

The two definitions agree except for a lucky guess (Bob saw the apple in the box, left, it went to
the basket and back to the box: he believes the truth without any way of knowing it). Such worlds
would make the two forms contradict each other, so no agent with a lucky belief is asked about,
and no list question is asked of a world that has one (`knowledge_answer` returns None there).

Both golds are re-derived from the trace by `schemas.world.checker.expected_knowledge`, which shares no
code with this module. `answer_in` is the gold of any generated question in a (possibly truncated)
story's engine: the dialogue rendering uses it to find when a question's answer is settled.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Hashable, Protocol, Sequence

from tomforge.generators.balance import Quota
from tomforge.generators.beliefs import BeliefEngine, Effect
from tomforge.generators.renderings import GeneratorChoiceError
from tomforge.generators.world import INIT, MOVE, TELL

LIST, ANSWERABILITY = "list", "answerability"
KNOWLEDGE_FORMS = (LIST, ANSWERABILITY)
"""Question keys (beside the belief orders and "memory") and cell formats of the two new forms."""
FORM_NAMES = {
    "mc": "multiple_choice",
    "free": "free_text",
    "yes_no": "yes_no",
    LIST: LIST,
    ANSWERABILITY: ANSWERABILITY,
}
"""`--forms` names -> the generator's `formats` entries."""
DEFAULT_FORMS = ("mc", "free", "yes_no")
CAN_KNOW, CANNOT_KNOW, ANY = "can_know", "cannot_know", "any"  # answerability quota roles (balanced yes/no)

LIST_QUESTIONS = (
    "Who knows where the {o} is?",
    "Which of them know where the {o} really is?",
    "List everyone who knows where the {o} is now.",
    "Name every person who knows the true location of the {o}.",
    "Who is aware of where the {o} actually is?",
)
ANSWERABILITY_QUESTIONS = (
    "Can {a} know where the {o} is?",
    "Is {a} in a position to know where the {o} is?",
    "Does {a} have any way of knowing where the {o} is now?",
    "Could {a} tell where the {o} really is?",
    "Has there been a way for {a} to learn where the {o} is now?",
)


class Asked(Protocol):
    """What `answer_in` reads of a generated question (`generators.generate.Question`)."""

    key: Any
    chain: tuple[str, ...]
    fmt: str
    asked: str | None


def formats_of_forms(forms: Sequence[str]) -> tuple[str, ...]:
    """`--forms mc,free,list` -> the generator's formats, in the order the generator deals them
    (multiple choice, yes/no, free text, list, answerability), so that the default forms give
    today's records byte for byte."""
    unknown = [name for name in forms if name not in FORM_NAMES]
    if unknown or not forms:
        raise GeneratorChoiceError(f"unknown question forms {unknown}; choose from {', '.join(FORM_NAMES)}")
    chosen = {FORM_NAMES[name] for name in forms}
    order = ("multiple_choice", "yes_no", "free_text", LIST, ANSWERABILITY)
    return tuple(fmt for fmt in order if fmt in chosen)


def generation_choices(rendering: str | None, forms: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, str]]:
    """A run's rendering and question forms, from the CLI's flags or the config file alike: (what the generator is
    told, only what was set, so the rest takes its defaults; how the run's `input_ref` names them)."""
    told: dict[str, Any] = {} if rendering is None else {"rendering": rendering}
    named = dict(told)
    if forms is not None:
        told["formats"] = formats_of_forms(forms)
        named["forms"] = ",".join(forms)
    return told, named


def quota_cells(key: str, controls: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(formats, role block) of a knowledge key's quota: answerability balances yes and no with controls."""
    if key == ANSWERABILITY:
        return (ANSWERABILITY,), (CAN_KNOW, CANNOT_KNOW) if controls else (ANY,)
    return (LIST,), (ANY,)


def _own_effect(engine: BeliefEngine, agent: str, before: int) -> Effect:
    """The latest effect (event index < `before`) that sets `agent`'s own belief."""
    bit = engine.bit[agent]
    i = engine.agents.index(agent)
    pair = 1 << (i * engine.n + i)
    for effect in reversed(engine.effects):
        if effect.index < before and effect.first & bit and effect.pairs & pair:
            return effect
    raise AssertionError(f"{agent} perceived no placement of the object")


def has_access(engine: BeliefEngine, agent: str, before: int | None = None) -> bool:
    """Whether `agent` (as of event `before`, default: the end) had a way to know the object's location."""
    events = engine.story.events
    end = len(events) if before is None else before
    obj = engine.story.obj
    last_placement = max(i for i, e in enumerate(events[:end]) if e.kind in (INIT, MOVE) and e.obj == obj)
    effect = _own_effect(engine, agent, end)
    event = events[effect.index]
    if event.kind != TELL:
        return effect.index >= last_placement  # perceived the last placement, or a reveal after it
    where = next(e.container for e in reversed(events[:end]) if e.kind in (INIT, MOVE) and e.obj == obj)
    return effect.value == where and has_access(engine, event.the_agent(), effect.index)


def knows(engine: BeliefEngine, agent: str) -> bool:
    return engine.belief((agent,)) == engine.reality()


def lucky(engine: BeliefEngine, agent: str) -> bool:
    """A true belief without access, or access without the true belief (never with these rules)."""
    return knows(engine, agent) != has_access(engine, agent)


def knowledge_answer(engine: BeliefEngine, key: str, chain: tuple[str, ...]) -> tuple[str, ...] | str | None:
    """The gold of a knowledge question: the sorted knowers (list) or "yes"/"no" (answerability);
    None when the world has a lucky belief that makes it ambiguous."""
    if key == LIST:
        if any(lucky(engine, agent) for agent in engine.agents):
            return None
        return tuple(sorted(agent for agent in engine.agents if knows(engine, agent)))
    if lucky(engine, chain[0]):
        return None
    return "yes" if has_access(engine, chain[0]) else "no"


def answer_in(engine: BeliefEngine, q: Asked) -> Hashable:
    """The gold of any generated question in `engine`'s story (a truncated story included)."""
    if q.key in KNOWLEDGE_FORMS:
        return knowledge_answer(engine, q.key, q.chain)
    gold = engine.memory() if q.key == "memory" else engine.belief(q.chain)
    if q.fmt == "yes_no":
        return "yes" if gold == q.asked else "no"
    return gold


def take(
    key: str, quota: Quota[tuple[str, str, Any], str], engine: BeliefEngine, pick: random.Random, rng: random.Random
) -> tuple[tuple[str, str, Any], tuple[str, ...], str] | None:
    """The cell a knowledge key's quota serves with this story, the chain (answerability: the agent
    asked about) and the gold; None when the story can serve none (`pick`: the run's random state,
    which `Quota.take` draws ties from; `rng`: the story's, which draws the agent)."""
    if key == LIST:
        answer = knowledge_answer(engine, LIST, ())
        if not isinstance(answer, tuple):
            return None
        cell = quota.take(lambda role: True, pick)
        return None if cell is None else (cell, (), ", ".join(answer))
    clear = [a for a in engine.agents if not lucky(engine, a)]
    by_role = {
        CAN_KNOW: [a for a in clear if has_access(engine, a)],
        CANNOT_KNOW: [a for a in clear if not has_access(engine, a)],
        ANY: clear,
    }
    cell = quota.take(lambda role: bool(by_role[role]), pick)
    if cell is None:
        return None
    agent = rng.choice(by_role[cell[1]])
    return cell, (agent,), "yes" if has_access(engine, agent) else "no"


def shown(agent: str, reader: str | None) -> str:
    """An agent's name as a second-person record shows it ("you" for the reader)."""
    return "you" if agent == reader else agent


def knowledge_fields(
    key: str,
    chain: tuple[str, ...],
    variant: int,
    engine: BeliefEngine,
    obj: str,
    render: Callable[[str], str],
    reader: str | None,
) -> dict[str, Any]:
    """The record fields of a knowledge question (text through the rendering's `render`)."""
    if key == LIST:
        answer = knowledge_answer(engine, LIST, ())
        if not isinstance(answer, tuple):
            raise ValueError("a list question about a world with a lucky belief")
        listed = sorted(shown(a, reader) for a in answer)
        return {
            "question": render(LIST_QUESTIONS[variant].format(o=obj)),
            "question_type": "answerability",
            "belief_order": 1,
            "perspective_chain": (),
            "is_false_belief": None,
            "answer_format": "list",
            "answer": ", ".join(listed),
            "answer_list": listed,
            "options": sorted(shown(a, reader) for a in engine.agents),
            "answer_index": None,
        }
    agent = chain[0]
    yes = knowledge_answer(engine, ANSWERABILITY, chain) == "yes"
    return {
        "question": render(ANSWERABILITY_QUESTIONS[variant].format(a=agent, o=obj)),
        "question_type": "answerability",
        "belief_order": 1,
        "perspective_chain": chain,
        "is_false_belief": engine.belief(chain) != engine.reality(),
        "answer_format": "yes_no",
        "answer": "yes" if yes else "no",
        "answer_list": None,
        "options": ["yes", "no"],
        "answer_index": 0 if yes else 1,
    }


def knowledge_template(style: str, key: str, variant: int) -> str:
    return f"{style}.{key}.v{variant}"
