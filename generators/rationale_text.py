"""Rationales as short reasoning texts, in named forms (`FORMS`), each sentence a claim that
`rl.claims` parses and `rl.process_reward` checks against the world.

- `events`: every event about the object, with who of the chain perceived it and whether it counts
  for the whole chain (and why not), then the conclusion.
- `beliefs`: every event, then each nested belief along the chain that it changes.
- `curriculum`: order by order (a1; a1 thinks a2; ...), the last event that counts at that order and
  the last later event that does not (with why), then that order's belief.
- `steps`: the events about the object, numbered (real stories: by their lines), then one step per agent
  of the chain, each of the same shape, so that order k is k applications of one local step (see
  `steps_form`).

Every form ends with "In the end, <chain> the <object> is in the <container>." (memory questions:
"At the start, the <object> is in the <container>."), the sentence a fidelity check looks for.
"""

from __future__ import annotations

from typing import Any, Callable

from tomforge.generators.rationale import EventRow, Rationale, rationale_of_record
from tomforge.schemas.rl.columns import RATIONALE_FORMS, RationaleColumns


def chain_words(chain: tuple[str, ...]) -> str:
    """'Owen thinks Avery thinks ' ('' for reality)."""
    return "".join(f"{agent} thinks " for agent in chain)


def belief_sentence(chain: tuple[str, ...], obj: str, container: str | None) -> str:
    where = f"in the {container}" if container is not None else "nowhere it knows of"
    return f"{chain_words(chain)}the {obj} is {where}"


def event_sentence(row: EventRow, obj: str) -> str:
    """The event in the grammar's words, prefixed by 'Line N:' when the story numbers its lines."""
    said = _said(row, obj)
    return f"Line {row.line}: {said}" if row.line is not None else said


def _said(row: EventRow, obj: str) -> str:
    if row.what == "init":
        said = f"The {obj} starts in the {row.container}"
    elif row.what == "move":
        said = f"{row.actor} moves the {obj} to the {row.container}"
    elif row.what == "reveal":
        said = f"{row.actor} enters and sees the {obj} in the {row.container}"
    else:
        audience = " and ".join(row.listeners) if row.listeners is not None else "everyone"
        said = f"{row.actor} tells {audience} the {obj} is in the {row.container}"
    return said


def conclusion(r: Rationale) -> str:
    if r.question.kind == "memory":
        return f"At the start, the {r.obj} is in the {r.answer}."
    return f"In the end, {belief_sentence(r.question.chain, r.obj, r.answer)}."


def _names(agents: list[str]) -> str:
    return agents[0] if len(agents) == 1 else ", ".join(agents[:-1]) + " and " + agents[-1]


def _state(r: Rationale, row: EventRow) -> str:
    """Who of the chain perceived the event and, for a tell, whom they trust; or why it does not count."""
    chain = r.question.chain
    if not chain or r.question.kind == "memory":
        return ""
    if not row.counts[-1]:
        reason = row.why_not[-1] or ""
        return f"{reason[:1].upper()}{reason[1:]}. "
    agents = [a for a in dict.fromkeys(chain) if a in row.perceivers]
    if len(agents) < len(set(chain)):  # ToMi: an entry into the room counts for every chain naming the entrant
        return (
            f"{_names(agents)} saw it, and by these rules that counts. " if agents else "By these rules that counts. "
        )
    if row.what != "tell":
        return f"{_names(agents)} saw it. "
    trust = next((f" {a} trusts {row.actor}" for a in (chain[-1], *chain[-2:-1]) if a in row.trusting), "")
    return f"{_names(agents)} heard it.{trust}{'.' if trust else ''} "


def events_form(r: Rationale) -> str:
    rows = r.events[:1] if r.question.kind == "memory" else r.events
    lines = []
    for row in rows:
        verdict = "It counts." if row.counts[-1] else "It does not count."
        lines.append(f"{event_sentence(row, r.obj)}. {_state(r, row)}{verdict}")
    return "\n".join([*lines, conclusion(r)])


def beliefs_form(r: Rationale) -> str:
    rows = r.events[:1] if r.question.kind == "memory" else r.events
    lines = []
    previous: tuple[str | None, ...] = (None,) * len(r.levels)
    for row in rows:
        changed = [
            belief_sentence(level, r.obj, after)
            for level, before, after in zip(r.levels, previous, row.beliefs)
            if after != before
        ]
        said = "; ".join(f"now {c}" for c in changed) if changed else "nothing changes along the chain"
        lines.append(f"{event_sentence(row, r.obj)}. {said[:1].upper()}{said[1:]}.")
        previous = row.beliefs
    return "\n".join([*lines, conclusion(r)])


def curriculum_form(r: Rationale) -> str:
    if r.question.kind == "memory" or not r.question.chain:
        return events_form(r)
    lines = []
    for index, level in enumerate(r.levels):
        counting = [row for row in r.events if row.counts[index]]
        last = counting[-1] if counting else None
        head = f"Order {len(level)}. "
        if last is None:
            lines.append(f"{head}no event counts for {' thinks '.join(level)}.")
            continue
        text = f"{head}{event_sentence(last, r.obj)}. That is the last event that counts."
        later = [row for row in r.events if row.step > last.step and not row.counts[index]]
        if later:
            text += f" Later, {event_sentence(later[-1], r.obj)}, but {later[-1].why_not[index]}."
        text += f" So {belief_sentence(level, r.obj, last.container)}."
        lines.append(text)
    return "\n".join([*lines, conclusion(r)])


def _what_it_says(row: EventRow, obj: str) -> str:
    """What an event says of the object: 'puts', 'shows' (a reveal), 'says' (a tell)."""
    if row.what == "tell":
        return f"says the {obj} is in the {row.container}"
    return f"{'shows' if row.what == 'reveal' else 'puts'} the {obj} in the {row.container}"


def _labelled(label: int | None, row: EventRow, obj: str) -> str:
    return f"Event {label}{'' if row.line is None else f', line {row.line}'}: {_said(row, obj)}"


def steps_form(r: Rationale) -> str:
    """Order k as k applications of one local step.

    First every event about the object, one line each, numbered "Event N:" (a story that gives each
    event a line of its own keeps its "Line N:"; where one line holds several, "Event N, line L:"). Then
    step j (j = 1..k, for the chain a1 ... ak) is one line, "Step j, aj: events E, F; the last that
    counts, event F, puts the <object> in the <container>.", about the chain a1 thinks ... aj: it names
    only the agent it adds, so a step of order 6 is as long as one of order 2. Its list is the events
    that reach a1..aj (`EventRow.reaches`): of the previous step's list, those aj perceived openly
    (step 1: those a1 perceived at all), so each list is a subset of the one before and order 4-6 are
    more of the same step. The step keeps the events that reach, not the events that count: a tell
    counts by who of the last two agents trusts whom (the speaker's own claim does not count for the
    speaker, but does for "the speaker thinks the trusting listener thinks"), so the counting sets
    alone are not nested (29-43% of generated items of each order 2-6), while the reaching sets are; which of the list counts is a rule of the step's last two agents
    only, and "the last that counts" names it. Under ToMi's rules an entry into the room by an agent
    of the chain reaches every later step too (entering is common knowledge), the one way a list can
    grow. Order 0 is one step, "reality" (every event; the placements count); a memory question is
    one step, "the start" (the first placement). Then the usual conclusion. Every clause is a claim of
    `rl.claims` (event, kept, deciding, belief).
    """
    rows = r.events
    story_lines = [row.line for row in rows]
    lined = None not in story_lines and len(set(story_lines)) == len(rows)  # each event its own line
    noun = "line" if lined else "event"
    label = {row.step: (row.line if lined else i) for i, row in enumerate(rows, start=1)}
    lines = [f"{event_sentence(row, r.obj) if lined else _labelled(label[row.step], row, r.obj)}." for row in rows]
    memory = r.question.kind == "memory"
    for index, level in enumerate(r.levels):
        head = "the start" if memory else level[-1] if level else "reality"
        kept = [str(label[row.step]) for row in rows if row.reaches[index]]
        listed = f"{noun}s {', '.join(kept)}" if len(kept) > 1 else f"{noun} {kept[0]}" if kept else "no events"
        counting = [row for row in rows if row.counts[index]]
        if counting:
            last = counting[-1]
            said = f"the last that counts, {noun} {label[last.step]}, {_what_it_says(last, r.obj)}"
        else:
            said = "none counts"
        lines.append(f"Step {index + 1}, {head}: {listed}; {said}.")
    return "\n".join([*lines, conclusion(r)])


FORMS: dict[str, Callable[[Rationale], str]] = {
    "events": events_form,
    "beliefs": beliefs_form,
    "curriculum": curriculum_form,
    "steps": steps_form,
}
DEFAULT_FORM = "events"
assert tuple(FORMS) == RATIONALE_FORMS, "the release's rationale_text struct names every form"


def rationale_text(r: Rationale, form: str = DEFAULT_FORM) -> str:
    """The rationale rendered in the named form (KeyError names the forms)."""
    if form not in FORMS:
        raise KeyError(f"unknown rationale form {form!r} (forms: {', '.join(FORMS)})")
    return FORMS[form](r)


def rationale_columns(record: dict[str, Any]) -> RationaleColumns | None:
    """What a release carries of the record's rationale (`schemas.rl.columns.rl_columns(..., rationales=)`)."""
    rationale = rationale_of_record(record)
    if rationale is None:
        return None
    return RationaleColumns(
        rationale.question.to_json(),
        rationale.to_json(),
        {form: rationale_text(rationale, form) for form in RATIONALE_FORMS},
    )
