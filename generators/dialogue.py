"""The dialogue rendering: the same world told as a multi-party conversation, in chat turns.

FANToM's shape: people join and leave a conversation, and what someone missed while away is what
the questions probe. Being in a room is being in its conversation: whoever is in the room hears
every turn said there, and nobody else does, which is exactly who perceives an event in the world
model (`generators.beliefs`, rule 1). So each event becomes the turn of the agent who does it:

- entering and leaving are spoken by the agent ("Hi everyone, I just came into the kitchen.",
  "I'm heading out of the kitchen now."): turns, not stage lines, so the conversation itself says
  who is there;
- the object's placement and the room's containers are said by someone present (drawn at random);
- a move is narrated by the mover while doing it ("I'm moving the apple to the basket.");
- a secret witness cannot speak (nobody may know it watched): a stage line, speaker `Narrator`;
- opinions are said by their holder when in a room, else reported by the narrator;
- tells and lies are what the speaker says in the gathering room, to everyone or, for a private
  tell, to one listener ("(privately, to Bob) The apple is in the box.").

The rule of who hears what (`HEARING_RULE`) is not a line of the conversation: said the same way at
the head of every conversation it was a fixed 25-word run that every two contexts shared (and, with
the same first greetings, 44-word runs the audit's partial-copy check reads as copying). The record
writer puts it at the head of every question instead, where the instructions are. Each turn names at most
one container, the one the event's sentence names in the story (the room's listing names all of
them once, in order), and only moves and "stored something in it" statements use a move verb, so
the audit's rankings (mention counts, first and last mention, sentences, last move) are the third
person's.

Questions are asked at the end or mid-conversation. A question asked mid-conversation quotes the
turn it follows ('(Asked right after Bob says "I'm heading out of the kitchen now.")') and records
it (`meta.asked_after_turn`: the number of turns said before it; `meta.asked_after_event`: the
trace index of that turn's event, which the checker cuts the trace at). Only turns after which the
question's answer never changes are chosen, so the gold is the third person's, item for item; the
quoted turn names no container, so the quote gives nothing away. Which questions are asked there is
balanced on their answers (`generators.dialogue_answers`), so that being asked mid-conversation, or
after a given turn, gives nothing away either.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.templates import join_names
from tomforge.generators.world import ENTER, EXIT, INIT, MOVE, SCENE, STATEMENT, STAY, TELL, TRANSPARENT, Event, Story

NARRATOR = "Narrator"
HEARING_RULE = (
    "In this conversation, whoever is in a room hears everything said there and nothing said elsewhere; "
    "a private remark reaches only the one it is addressed to."
)
MID_SHARE = 0.5  # the share of questions asked mid-conversation where the story has a place for them

# Five phrasings per turn kind, or ten for waiting: phrasing i belongs to variant i % 5, so 0-2 main,
# 3-4 held out (as `generators.templates`). Comings and goings, which every conversation is made of, are
# an opener ("Hi everyone,", "Bye for now,") and a body, each drawn from ten the same way: 36 main
# phrasings each. With three whole phrasings each, conversations in one room often opened with the same
# run of greetings: the audit's partial-copy check found 27- to 33-word runs shared with train. Placeholders:
# {room}, {obj}, {c} container, {b} listener, {t} thing, {a} agent (narrator lines), {list} containers.
OPENERS: dict[str, tuple[str, ...]] = {
    ENTER: (
        "Hi everyone,",
        "Hello,",
        "Hey all,",
        "Good to see you,",
        "Hi there,",
        "Hello everybody,",
        "Hey,",
        "Hi all,",
        "Greetings,",
        "Good day,",
    ),
    EXIT: (
        "Bye for now,",
        "See you later,",
        "Okay,",
        "Goodbye,",
        "That's it for me,",
        "Catch you later,",
        "Right,",
        "Well,",
        "So long,",
        "Take care,",
    ),
}
TURNS: dict[str, tuple[str, ...]] = {
    ENTER: (
        "I just came into the {room}.",
        "I'm here in the {room} now.",
        "I've just walked into the {room}.",
        "I just arrived in the {room}.",
        "I've come into the {room}.",
        "I just got to the {room}.",
        "I've made it to the {room}.",
        "I've just stepped into the {room}.",
        "I have entered the {room}.",
        "I just got into the {room}.",
    ),
    EXIT: (
        "I'm heading out of the {room} now.",
        "I have to leave the {room}.",
        "I'm leaving the {room}.",
        "I'm stepping out of the {room}.",
        "I'm going out of the {room}.",
        "I'm walking out of the {room}.",
        "I need to get out of the {room}.",
        "I'm off, out of the {room}.",
        "I'm exiting the {room}.",
        "I'll leave the {room} now.",
    ),
    INIT: (
        "The {obj} is in the {c}.",
        "Look, the {obj} is inside the {c}.",
        "I can see the {obj} sitting in the {c}.",
        "Note that the {obj} is in the {c}.",
        "The {obj} is right there in the {c}.",
    ),
    MOVE: (
        "I'm moving the {obj} to the {c}.",
        "I'm putting the {obj} in the {c}.",
        "I just placed the {obj} into the {c}.",
        "I'm transferring the {obj} to the {c}.",
        "I relocated the {obj} to the {c}.",
    ),
    STAY: (
        "I'll just wait here for a minute.",
        "I'm staying here and not touching anything.",
        "Nothing to do for me, I'll look around for a while.",
        "I'll stay here a minute.",
        "I'm just lingering here for now.",
        "I'll hang around here for a bit.",
        "Not doing anything, just standing here.",
        "I'm just going to sit here quietly.",
        "I'll remain here for the moment.",
        "Just passing the time here.",
    ),
    "likes": (
        "I really like the {t}.",
        "The {t} looks nice to me.",
        "I've always liked the {t}.",
        "I'm quite fond of the {t}.",
        "The {t} is lovely, I think.",
    ),
    "dislikes": (
        "I don't like the {t} at all.",
        "The {t} looks ugly to me.",
        "I've never liked the {t}.",
        "I can't stand the {t}.",
        "The {t} annoys me.",
    ),
    "stores": (
        "I once put a phone charger in the {t}.",
        "I used to store old photos in the {t}.",
        "I placed a stack of napkins in the {t} last week.",
        "I once stored some receipts in the {t}.",
        "I put spare keys in the {t} last winter.",
    ),
    "tell_public": (
        "Listen, everyone: the {obj} is in the {c}.",
        "Everyone, the {obj} is in the {c}.",
        "Just so you all know, the {obj} is in the {c}.",
        "For everyone's information, the {obj} is in the {c}.",
        "Let me tell you all: the {obj} is in the {c}.",
    ),
    "tell_private": (
        "(privately, to {b}) The {obj} is in the {c}.",
        "(whispering to {b}) The {obj} is in the {c}.",
        "(in a private message to {b}) The {obj} is in the {c}.",
        "(aside, to {b} only) The {obj} is in the {c}.",
        "(quietly, to {b}) Just so you know, the {obj} is in the {c}.",
    ),
    "witness": (
        "({a} secretly watches this from outside the {room}.)",
        "({a} sees this through the window without being noticed.)",
        "(Unseen by anyone, {a} observes this from outside.)",
        "({a} peeks through the door and sees this in secret.)",
        "(Hidden outside the {room}, {a} sees this happen.)",
    ),
    SCENE: (
        "In the {room} we have {list}.",
        "Around the {room} there are {list}.",
        "This {room} has {list}.",
        "I can see {list} in the {room}.",
        "The {room} holds {list}.",
    ),
    TRANSPARENT: (
        "The {c} is see-through, so anyone in the {room} can see what is inside it.",
        "The {c} is made of glass: everyone in here can see its content.",
        "Anyone in the {room} can see inside the {c}.",
        "The walls of the {c} are clear, we can all see inside.",
        "The {c} is transparent, you can see into it from anywhere here.",
    ),
    "absent": ('(Away from the others, {a} says: "{said}")',) * 5,  # a statement by someone in no room
}


Phrasing = tuple[int, ...]  # (body) or (opener, body): indexes into `TURNS[kind]` and `OPENERS[kind]`


def phrasings_of(kind: str, variants: Sequence[int]) -> list[Phrasing]:
    """The phrasings of a turn kind that belong to the run's variants (phrasing i to variant i % 5)."""
    bodies = [i for i in range(len(TURNS[kind])) if i % 5 in variants]
    if kind not in OPENERS:
        return [(i,) for i in bodies]
    return [(o, i) for o in range(len(OPENERS[kind])) if o % 5 in variants for i in bodies]


def phrase(kind: str, phrasing: Phrasing, **fields: Any) -> str:
    """A turn's text in one phrasing."""
    body = TURNS[kind][phrasing[-1]].format(**fields)
    return body if len(phrasing) == 1 else f"{OPENERS[kind][phrasing[0]]} {body}"


@dataclass(frozen=True)
class Dialogue:
    """Chat turns and, for each, the index of the story event it tells (None: a line of no event) and
    its kind and phrasing (what a question quoting the turn adds to its words)."""

    turns: tuple[tuple[str, str], ...]
    events: tuple[int | None, ...]
    phrasings: tuple[tuple[str, Phrasing], ...]

    @property
    def context(self) -> str:
        """The joined text (`record.context`): one `speaker: text` line per turn."""
        return "\n".join(f"{speaker}: {text}" for speaker, text in self.turns)

    def as_records(self) -> list[dict[str, str]]:
        """`record.turns`."""
        return [{"speaker": speaker, "text": text} for speaker, text in self.turns]


def tell(story: Story, name: Callable[[Any], str], variants: Sequence[int], rng: random.Random) -> Dialogue:
    """The story as a conversation (see the module docstring); `name` writes entities in the style's surface."""
    teller = _Teller(story, name, variants, rng)
    for index, event in enumerate(story.events):
        teller.turn(index, event)
    return Dialogue(tuple(teller.turns), tuple(teller.events), tuple(teller.phrasings))


class _Teller:
    """The conversation so far: its turns, who is in which room, and what each speaker has said."""

    def __init__(self, story: Story, name: Callable[[Any], str], variants: Sequence[int], rng: random.Random) -> None:
        self.story, self.name, self.variants, self.rng = story, name, variants, rng
        self.turns: list[tuple[str, str]] = []
        self.events: list[int | None] = []
        self.phrasings: list[tuple[str, Phrasing]] = []
        self.where: dict[str, str | None] = {agent: None for agent in story.agents}
        self.said: set[tuple[str, str]] = set()
        self.room = name(story.room)

    def say(self, index: int, speaker: str, kind: str, **fields: Any) -> None:
        """One turn in a phrasing drawn at random, another one if the speaker said that already."""
        phrasings = phrasings_of(kind, self.variants)
        options = [phrase(kind, phrasing, **fields) for phrasing in phrasings]
        pick = self.rng.randrange(len(options))
        if (speaker, options[pick]) in self.said:
            pick = next((i for i, t in enumerate(options) if (speaker, t) not in self.said), pick)
        self.said.add((speaker, options[pick]))
        self.turns.append((speaker, options[pick]))
        self.events.append(index)
        self.phrasings.append((kind, phrasings[pick]))

    def someone_here(self) -> str:
        """Someone in the story's room (at random), the narrator when nobody is."""
        present = sorted(a for a, r in self.where.items() if r == self.story.room)
        return self.rng.choice(present) if present else NARRATOR

    def turn(self, index: int, event: Event) -> None:
        kind, name = event.kind, self.name
        if kind == ENTER:
            self.where[event.the_agent()] = event.room
            self.say(index, event.the_agent(), ENTER, room=name(event.room))
        elif kind == EXIT:
            self.say(index, event.the_agent(), EXIT, room=name(event.room))
            self.where[event.the_agent()] = None
        elif kind == MOVE:
            self.say(index, event.the_agent(), MOVE, obj=name(event.obj), c=name(event.container))
            for witness in event.witnesses:
                self.say(index, NARRATOR, "witness", a=witness, room=self.room)
        elif kind == STAY:
            self.say(index, event.the_agent(), STAY)
        elif kind == STATEMENT:
            self.statement(index, event)
        elif kind == TELL:
            private = {} if event.public else {"b": join_names(list(event.listeners))}
            self.say(
                index,
                event.the_agent(),
                "tell_public" if event.public else "tell_private",
                obj=name(event.obj),
                c=name(event.container),
                **private,
            )
        else:
            self.scenery(index, event)

    def scenery(self, index: int, event: Event) -> None:
        """What someone in the room points out: the object's place, the containers, a see-through one."""
        name = self.name
        if event.kind == INIT:
            self.say(index, self.someone_here(), INIT, obj=name(event.obj), c=name(event.container))
        elif event.kind == SCENE:
            self.say(
                index,
                self.someone_here(),
                SCENE,
                room=self.room,
                list=join_names([f"the {name(c)}" for c in event.things]),
            )
        elif event.kind == TRANSPARENT:
            self.say(index, self.someone_here(), TRANSPARENT, c=name(event.container), room=self.room)
        else:
            raise ValueError(f"no dialogue turn for {event.kind}")

    def statement(self, index: int, event: Event) -> None:
        """An opinion (or "I once stored something in it"): its holder's turn, reported by the narrator
        when the holder is in no room."""
        agent = event.the_agent()
        if self.where.get(agent) is not None:
            self.say(index, agent, event.the_polarity(), t=self.name(event.thing))
        else:
            polarity = event.the_polarity()
            said = phrase(polarity, self.rng.choice(phrasings_of(polarity, self.variants)), t=self.name(event.thing))
            self.say(index, NARRATOR, "absent", a=agent, said=said)


def settled_from(answer: Callable[[BeliefEngine], Hashable], engines: list[BeliefEngine | None]) -> int:
    """The first event index from which the answer, asked after any later event, is the end's
    (`engines[i]`: the engine of the story cut after event i; None before the object is placed)."""
    final = answer(engines[-1]) if engines[-1] is not None else None
    settled = len(engines) - 1
    for i in range(len(engines) - 1, -1, -1):
        engine = engines[i]
        if engine is None or answer(engine) != final:
            break
        settled = i
    return settled


def prefix_engines(story: Story) -> list[BeliefEngine | None]:
    """The belief engine of the story cut after each event (None while the object is not yet placed)."""
    start = next(i for i, e in enumerate(story.events) if e.kind == INIT and e.obj == story.obj)
    return [
        None if i < start else BeliefEngine(story.with_events(story.events[: i + 1])) for i in range(len(story.events))
    ]


def quiet_turns(dialogue: Dialogue, containers: Sequence[str]) -> list[int]:
    """Turns (positions) a mid-conversation question may follow: spoken by an agent, the last turn
    of its event, naming no container, said once, and not the last turn (that is the end)."""
    names = re.compile(r"\b(?:" + "|".join(re.escape(c) for c in containers) + r")\b", re.IGNORECASE)
    turns, events = dialogue.turns, dialogue.events
    counts: dict[tuple[str, str], int] = {}
    for turn in turns:
        counts[turn] = counts.get(turn, 0) + 1
    return [
        j
        for j in range(len(turns) - 1)
        if events[j] is not None
        and events[j + 1] != events[j]
        and turns[j][0] != NARRATOR
        and not names.search(turns[j][1])
        and counts[turns[j]] == 1
    ]


def surface_picks(dialogue: Dialogue, containers: Sequence[str]) -> list[dict[str, str | None]]:
    """After each turn, the container a surface reader would pick from the conversation so far:
    the first mentioned, the last mentioned and the most mentioned (ties: the earlier first mention)."""
    names = re.compile(r"\b(?:" + "|".join(re.escape(c) for c in containers) + r")\b", re.IGNORECASE)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    count: dict[str, int] = {}
    position = 0
    out: list[dict[str, str | None]] = []
    for _, text in dialogue.turns:
        for match in names.finditer(text):
            found = next(c for c in containers if c.lower() == match.group(0).lower())
            first.setdefault(found, position)
            last[found] = position
            count[found] = count.get(found, 0) + 1
            position += 1
        out.append(
            {
                "first": min(first, key=first.__getitem__) if first else None,
                "last": max(last, key=last.__getitem__) if last else None,
                "most": min(count, key=lambda c: (-count[c], first[c])) if count else None,
            }
        )
    return out


class CutBalance:
    """Where a mid-conversation question is asked, chosen so that the container a surface reader
    picks from the conversation so far (first, last, most mentioned) is right at chance.

    Asked right after the deciding move, "the last container mentioned so far" would be the answer
    (measured on 3,000 items before this control: 45% against 25% by chance, 65% on reality
    questions). Per stratum (question key and format) each heuristic keeps its running surplus of
    hits over its chance rate; a place is taken only if no surplus leaves [-BOUND, BOUND], the one
    closest to zero in all three first (ties at random); with no such place the question is asked
    at the end. So each rate stays within BOUND items of chance, per stratum, however long the run."""

    HEURISTICS = ("first", "last", "most")
    BOUND = 1.5

    def __init__(self) -> None:
        self.surplus: dict[tuple[str, Hashable], float] = {}

    def choose(
        self,
        places: Sequence[int],
        hits: Callable[[int], dict[str, bool]],
        stratum: Hashable,
        chance: float,
        rng: random.Random,
    ) -> int | None:
        best: list[tuple[int, dict[str, float]]] = []
        best_cost = float("inf")
        for place in places:
            hit = hits(place)
            after = {h: self.surplus.get((h, stratum), 0.0) + hit[h] - chance for h in self.HEURISTICS}
            if max(abs(v) for v in after.values()) > self.BOUND:
                continue
            cost = round(sum(v * v for v in after.values()), 9)
            if cost < best_cost:
                best, best_cost = [(place, after)], cost
            elif cost == best_cost:
                best.append((place, after))
        if not best:
            return None
        place, after = best[0] if len(best) == 1 else rng.choice(best)
        for h, value in after.items():
            self.surplus[h, stratum] = value
        return place


def choose_cut(
    dialogue: Dialogue,
    settled: int,
    quiet: list[int],
    rng: random.Random,
    balance: Callable[[list[int]], int | None] | None = None,
) -> int | None:
    """The turn (position) a question is asked right after, or None to ask it at the end: with
    probability `MID_SHARE`, a quiet turn at or after the event from which its answer is settled,
    chosen by `balance` (a `CutBalance.choose` bound to the question) or at random."""
    places = [j for j in quiet if (dialogue.events[j] or 0) >= settled]
    if not places or rng.random() >= MID_SHARE:
        return None
    return balance(places) if balance is not None else rng.choice(places)


def asked_after(dialogue: Dialogue, cut: int | None, question: str) -> str:
    """The question as asked in the conversation: the rule of who hears what, then, asked right after
    turn `cut`, the turn quoted (None: at the end)."""
    if cut is None:
        return f"{HEARING_RULE} {question}"
    speaker, text = dialogue.turns[cut]
    return f'{HEARING_RULE} (Asked right after {speaker} says "{text}") {question}'
