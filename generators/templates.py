"""The template bank: five phrasings per event kind and question kind, in two surface styles.

`hitom` imitates HiToM (numbered lines, snake_case entity names, "exited the room", grouped
enterings); `exploretom` imitates ExploreToM's story structures (one prose paragraph, plain names,
"left the room", "witnessed this action in secret"). Phrasings 0-2 form the main group, 3-4 the
held-out group, so a test split can use template ids that train never saw. Every sentence names at
most one container, and exactly the one `Event.mentioned_container` says (scene lines name all of
them once), so mention counts taken from the events equal counts taken from the text.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

from tomforge.generators.entities import surface
from tomforge.generators.world import ENTER, EXIT, INIT, MOVE, SCENE, STATEMENT, STAY, TELL, TRANSPARENT, Event, Story

STYLES = ("hitom", "exploretom")
MAIN_VARIANTS = (0, 1, 2)
HELD_OUT_VARIANTS = (3, 4)

# Event phrasings. Placeholders: {a} agent(s), {room}, {obj}, {c} container, {b} listener, {t} thing.
EVENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "hitom": {
        ENTER: (
            "{a} entered the {room}.",
            "{a} walked into the {room}.",
            "{a} came into the {room}.",
            "{a} went into the {room}.",
            "{a} arrived in the {room}.",
        ),
        EXIT: (
            "{a} exited the {room}.",
            "{a} went out of the {room}.",
            "{a} walked out of the {room}.",
            "{a} stepped out of the {room}.",
            "{a} departed from the {room}.",
        ),
        INIT: (
            "The {obj} is in the {c}.",
            "The {obj} is inside the {c}.",
            "The {obj} sits in the {c}.",
            "The {obj} is located in the {c}.",
            "The {obj} lies in the {c}.",
        ),
        MOVE: (
            "{a} moved the {obj} to the {c}.",
            "{a} put the {obj} in the {c}.",
            "{a} relocated the {obj} to the {c}.",
            "{a} placed the {obj} into the {c}.",
            "{a} transferred the {obj} to the {c}.",
        ),
        STAY: (
            "{a} made no movements and stayed in the {room} for 1 minute.",
            "{a} stayed in the {room} without moving anything.",
            "{a} waited in the {room} for a minute.",
            "{a} remained in the {room} and touched nothing.",
            "{a} lingered in the {room} for 1 minute.",
        ),
        "likes": (
            "{a} likes the {t}.",
            "{a} is fond of the {t}.",
            "{a} really likes the {t}.",
            "{a} loves the {t}.",
            "{a} admires the {t}.",
        ),
        "dislikes": (
            "{a} dislikes the {t}.",
            "{a} hates the {t}.",
            "{a} does not like the {t}.",
            "{a} cannot stand the {t}.",
            "{a} is annoyed by the {t}.",
        ),
        "stores": (
            "{a} once put some spare batteries in the {t}.",
            "{a} used to store old letters in the {t}.",
            "{a} placed a roll of tape in the {t} last week.",
            "{a} once stored some receipts in the {t}.",
            "{a} had put a notebook in the {t} the day before.",
        ),
        "tell_private": (
            "{a} privately told {b} that the {obj} is in the {c}.",
            "{a} whispered to {b} that the {obj} is in the {c}.",
            "{a} told {b} in private that the {obj} is in the {c}.",
            "{a} sent {b} a private message saying that the {obj} is in the {c}.",
            "In a private conversation, {a} told {b} that the {obj} is in the {c}.",
        ),
        "tell_public": (
            "{a} publicly claimed that the {obj} is in the {c}.",
            "{a} announced to everyone that the {obj} is in the {c}.",
            "{a} told the whole group that the {obj} is in the {c}.",
            "{a} said out loud to everyone that the {obj} is in the {c}.",
            "In front of everyone, {a} declared that the {obj} is in the {c}.",
        ),
        "witness": (
            "{a} secretly watched this happen from outside the {room}.",
            "{a} saw this through the window without being noticed.",
            "Unseen by anyone, {a} observed this move from outside.",
            "{a} peeked through the door and saw this move in secret.",
            "Hidden outside the {room}, {a} saw this move happen.",
        ),
        SCENE: (
            "The {room} contains {list}.",
            "In the {room} there are {list}.",
            "The {room} holds {list}.",
            "Inside the {room} one can find {list}.",
            "The {room} is furnished with {list}.",
        ),
        TRANSPARENT: (
            "The {c} is transparent: anyone in the {room} can see what is inside it.",
            "The {c} is made of clear glass, so its content is visible to everyone in the {room}.",
            "Anyone in the {room} can see inside the {c}, which is see-through.",
            "The {c} has glass walls: whoever is in the {room} sees what it holds.",
            "The {c} is see-through, so its content can be seen from anywhere in the {room}.",
        ),
    },
    "exploretom": {
        ENTER: (
            "{a} entered the {room}.",
            "{a} made their way into the {room}.",
            "{a} stepped into the {room}.",
            "{a} walked into the {room}.",
            "{a} went into the {room}.",
        ),
        EXIT: (
            "{a} left the {room}.",
            "{a} exited the {room}.",
            "{a} stepped out of the {room}.",
            "{a} walked away from the {room}.",
            "{a} headed out of the {room}.",
        ),
        INIT: (
            "The {obj} is in the {c}, which is located in the {room}.",
            "The {obj} rests inside the {c} in the {room}.",
            "In the {room}, the {obj} has been left in the {c}.",
            "The {obj} can be found in the {c} in the {room}.",
            "Someone had left the {obj} in the {c} in the {room}.",
        ),
        MOVE: (
            "{a} moved the {obj} to the {c}, which is also located in the {room}.",
            "{a} took the {obj} and put it in the {c}.",
            "{a} carefully placed the {obj} inside the {c}.",
            "{a} picked up the {obj} and stored it in the {c}.",
            "{a} shifted the {obj} into the {c}.",
        ),
        STAY: (
            "{a} stayed in the {room} and did nothing in particular.",
            "{a} looked around the {room} for a while.",
            "{a} spent a minute in the {room} without touching anything.",
            "{a} paused in the {room}.",
            "{a} checked their phone in the {room}.",
        ),
        "likes": (
            "{a} mentioned liking the {t}.",
            "{a} once said that the {t} looks nice.",
            "{a} has always liked the {t}.",
            "{a} likes the {t} a lot.",
            "{a} praised the {t} earlier that day.",
        ),
        "dislikes": (
            "{a} mentioned disliking the {t}.",
            "{a} once said that the {t} looks ugly.",
            "{a} has never liked the {t}.",
            "{a} does not care for the {t}.",
            "{a} complained about the {t} earlier that day.",
        ),
        "stores": (
            "{a} once put a phone charger in the {t}.",
            "{a} used to store old photos in the {t}.",
            "{a} had placed a stack of napkins in the {t} the week before.",
            "{a} mentioned having stored receipts in the {t}.",
            "{a} remembered putting spare keys in the {t} last winter.",
        ),
        "tell_private": (
            "{a} privately told {b} that the {obj} is in the {c}.",
            "{a} sent a private message to {b} saying the {obj} is in the {c}.",
            "{a} pulled {b} aside and said the {obj} is in the {c}.",
            "Out of earshot of the others, {a} told {b} that the {obj} is in the {c}.",
            "{a} quietly informed {b} that the {obj} is in the {c}.",
        ),
        "tell_public": (
            "{a} told everyone in the {room} that the {obj} is in the {c}.",
            "{a} announced to the group that the {obj} is in the {c}.",
            "{a} publicly stated that the {obj} is in the {c}.",
            "Loud enough for all to hear, {a} said the {obj} is in the {c}.",
            "{a} informed the whole group that the {obj} is in the {c}.",
        ),
        "witness": (
            "While this action was happening, {a} witnessed this action in secret (and only this action).",
            "{a} secretly watched this action from outside the {room}.",
            "Without anyone noticing, {a} saw this action through a window.",
            "{a} observed this action in secret from the doorway.",
            "Hidden from view, {a} witnessed this action.",
        ),
        SCENE: (
            "The {room} has {list}.",
            "Around the {room} are {list}.",
            "The {room} contains {list}.",
            "In the {room} stand {list}.",
            "Scattered around the {room} are {list}.",
        ),
        TRANSPARENT: (
            "The {c} is transparent, so anyone in the {room} can see what it contains.",
            "The {c} is made of glass, and its content is visible to anyone in the {room}.",
            "Everyone in the {room} can see through the {c}.",
            "The walls of the {c} are see-through to anyone in the {room}.",
            "The {c} is clear, letting anyone in the {room} see inside.",
        ),
    },
}


def join_names(names: Sequence[str]) -> str:
    """'A', 'A and B', 'A, B and C' (HiToM's list style)."""
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def render_story(story: Story, style: str, variants: Sequence[int], rng: random.Random) -> tuple[str, list[int]]:
    """The story text and the phrasing variant of each event (in event order)."""
    bank = EVENTS[style]
    name = (lambda x: x.replace(" ", "_")) if style == "hitom" else (lambda x: x)
    sentences: list[str] = []
    said: set[str] = set()
    chosen: list[int] = []
    events = story.events
    i = 0
    pick = rng.choice
    while i < len(events):
        event = events[i]
        v = pick(variants)
        if event.kind == ENTER:
            group = [event.the_agent()]
            if style == "hitom":  # HiToM writes simultaneous enterings as one line
                while i + 1 < len(events) and events[i + 1].kind == ENTER and events[i + 1].room == event.room:
                    i += 1
                    group.append(events[i].the_agent())
                    chosen.append(v)
            text = bank[ENTER][v].format(a=join_names(group), room=name(event.room))
            if text in said:  # someone re-entering: another phrasing when one is left
                fresh = [(alt, bank[ENTER][alt].format(a=join_names(group), room=name(event.room))) for alt in variants]
                v, text = next(((alt, t) for alt, t in fresh if t not in said), (v, text))
                chosen[len(chosen) - (len(group) - 1) :] = [v] * (len(group) - 1)
        else:
            text = _sentence(bank, event, v, name, story.room)
            # an event the world repeats (two stays in a row) is told in another phrasing when one is left
            if text in said:
                fresh = [(alt, _sentence(bank, event, alt, name, story.room)) for alt in variants]
                v, text = next(((alt, t) for alt, t in fresh if t not in said), (v, text))
        said.add(text)
        sentences.append(text)
        chosen.append(v)
        i += 1
    if style == "hitom":
        return "\n".join(f"{n} {s}" for n, s in enumerate(sentences, start=1)), chosen
    return " ".join(sentences), chosen


def _sentence(bank: dict[str, tuple[str, ...]], event: Event, v: int, name: Callable[[Any], str], room: str) -> str:
    """One event other than an entering as phrasing `v` of the bank (`room`: the story's room). `name`
    takes Any: an event's fields are optional in the dataclass but set for each kind that uses them."""
    kind = event.kind
    if kind == EXIT or kind == STAY:
        return bank[kind][v].format(a=event.agent, room=name(event.room))
    if kind == INIT:
        return bank[INIT][v].format(obj=name(event.obj), c=name(event.container), room=name(room))
    if kind == MOVE:
        text = bank[MOVE][v].format(a=event.agent, obj=name(event.obj), c=name(event.container), room=name(room))
        for witness in event.witnesses:
            text += " " + bank["witness"][v].format(a=witness, room=name(room))
        return text
    if kind == STATEMENT:
        return bank[event.the_polarity()][v].format(a=event.agent, t=name(event.thing))
    if kind == TELL:
        template = bank["tell_public" if event.public else "tell_private"][v]
        return template.format(
            a=event.agent,
            b=join_names(list(event.listeners)),
            obj=name(event.obj),
            c=name(event.container),
            room=name(event.room),
        )
    if kind == SCENE:
        listed = join_names([f"the {name(c)}" for c in event.things])
        return bank[SCENE][v].format(room=name(event.room), list=listed)
    if kind == TRANSPARENT:
        return bank[TRANSPARENT][v].format(c=name(event.container), room=name(room))
    raise ValueError(f"no template for {kind}")


# Question phrasings. A belief question names a chain (a1, ..., ak) outermost first.
def _nest(chain: Sequence[str], verb: str, link: str) -> str:
    """'A think B thinks C thinks' style chains: the first verb bare, the rest with -s."""
    return f"{chain[0]} {verb}" + "".join(f"{link}{agent} {verb}s" for agent in chain[1:])


BeliefQ = Callable[[Sequence[str], str], str]
BeliefYN = Callable[[Sequence[str], str, str], str]

BELIEF_WH: tuple[BeliefQ, ...] = (
    lambda ch, o: f"Where does {_nest(ch, 'think', ' ')} the {o} is?",
    lambda ch, o: f"Where does {_nest(ch, 'believe', ' that ')} the {o} is?",
    lambda ch, o: (
        f"According to {ch[0]}, where is the {o}?"
        if len(ch) == 1
        else f"According to {ch[0]}, where does {_nest(ch[1:], 'think', ' ')} the {o} is?"
    ),
    lambda ch, o: f"In which container does {_nest(ch, 'think', ' that ')} the {o} is?",
    lambda ch, o: (
        f"What is {ch[0]}'s belief about where the {o} is?"
        if len(ch) == 1
        else f"What is {ch[0]}'s belief about where {_nest(ch[1:], 'think', ' ')} the {o} is?"
    ),
)
BELIEF_YN: tuple[BeliefYN, ...] = (
    lambda ch, o, c: f"Does {_nest(ch, 'think', ' ')} the {o} is in the {c}?",
    lambda ch, o, c: f"Does {_nest(ch, 'believe', ' that ')} the {o} is in the {c}?",
    lambda ch, o, c: (
        f"According to {ch[0]}, is the {o} in the {c}?"
        if len(ch) == 1
        else f"According to {ch[0]}, does {_nest(ch[1:], 'think', ' ')} the {o} is in the {c}?"
    ),
    lambda ch, o, c: (
        f"Is it true that {ch[0]} thinks" + "".join(f" {a} thinks" for a in ch[1:]) + f" the {o} is in the {c}?"
    ),
    lambda ch, o, c: (
        f"Is {ch[0]} of the opinion that" + "".join(f" {a} thinks" for a in ch[1:]) + f" the {o} is in the {c}?"
    ),
)
REALITY_WH = (
    "Where is the {o} really?",
    "Where is the {o} at the end of the story?",
    "In which container is the {o} actually?",
    "Where is the {o} now?",
    "What is the true location of the {o}?",
)
REALITY_YN = (
    "Is the {o} really in the {c}?",
    "Is the {o} in the {c} at the end of the story?",
    "Is the {o} actually in the {c}?",
    "Is the {o} now in the {c}?",
    "Is the {c} where the {o} truly is?",
)
MEMORY_WH = (
    "Where was the {o} at the beginning?",
    "In which container was the {o} at the start?",
    "Where was the {o} before anything happened?",
    "Where was the {o} first placed?",
    "What was the original location of the {o}?",
)
MEMORY_YN = (
    "Was the {o} in the {c} at the beginning?",
    "Was the {o} in the {c} at the start?",
    "Was the {o} in the {c} before anything happened?",
    "Was the {o} first placed in the {c}?",
    "Was the {c} the original location of the {o}?",
)


def render_question(
    kind: str, yes_no: bool, variant: int, chain: Sequence[str], obj: str, container: str | None
) -> str:
    """One question; `kind` is reality, memory or belief; names already in the story's surface."""
    if kind == "belief":
        if not yes_no:
            return BELIEF_WH[variant](chain, obj)
        if container is None:
            raise ValueError("a yes/no belief question needs the container it asks about")
        return BELIEF_YN[variant](chain, obj, container)
    bank = {
        ("reality", False): REALITY_WH,
        ("reality", True): REALITY_YN,
        ("memory", False): MEMORY_WH,
        ("memory", True): MEMORY_YN,
    }[(kind, yes_no)]
    return bank[variant].format(o=obj, c=container)


def template_id(style: str, kind: str, yes_no: bool, variant: int) -> str:
    return f"{style}.{kind}.{'yn' if yes_no else 'wh'}.v{variant}"


__all__ = [
    "STYLES",
    "MAIN_VARIANTS",
    "HELD_OUT_VARIANTS",
    "EVENTS",
    "render_story",
    "render_question",
    "template_id",
    "join_names",
    "surface",
]
