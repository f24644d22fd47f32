"""Adversarial operators: composable transforms of a base story (in the spirit of ExploreToM).

Each operator's transform takes a valid story and returns a valid story with one targeted change (or
None when the story offers no place for it, and the generator then draws another base story); its
declaration in `OPERATORS` (`generators.operator_registry.Operator`) holds its traits. A set of names
always gives the same composition for the same random state (see `apply_operators`).
Each docstring says which shortcut the operator breaks; tests check that each one changes what
it should and leaves every other belief as it was.
"""

from __future__ import annotations

import random
from typing import Callable

from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.entities import Pools
from tomforge.generators.operator_registry import Operator, OperatorRegistry
from tomforge.generators.world import (
    ENTER,
    EXIT,
    INIT,
    MOVE,
    SCENE,
    STATEMENT,
    TELL,
    TRANSPARENT,
    Event,
    Story,
    check_story,
)

Transform = Callable[[Story, random.Random, Pools], "Story | None"]


def _gathering_start(events: list[Event] | tuple[Event, ...], gathering: str) -> int:
    return next(i for i, e in enumerate(events) if e.kind == ENTER and e.room == gathering)


def _index(events, kind: str, obj: str) -> int:
    return next(i for i, e in enumerate(events) if e.kind == kind and e.obj == obj)


def _location_at(events, obj: str, position: int) -> str | None:
    """Where `obj` is just before event `position`."""
    where = None
    for event in events[:position]:
        if event.kind in (INIT, MOVE) and event.obj == obj:
            where = event.container
    return where


def _next_destination(events, obj: str, position: int) -> str | None:
    return next((e.container for e in events[position:] if e.kind == MOVE and e.obj == obj), None)


def _insert_move(
    story: Story, events: list[Event], obj: str, position: int, actor: str, rng: random.Random, to: str | None = None
) -> None:
    """Insert a move at `position` to a container that is neither the current one nor the next move's."""
    here, after = _location_at(events, obj, position), _next_destination(events, obj, position)
    if to is None:
        to = rng.choice([c for c in story.containers if c != here and c != after])
    events.insert(position, Event(MOVE, agent=actor, obj=obj, container=to))


def _done(story: Story, events: list[Event], name: str, **changes) -> Story:
    """The transformed story (validated by the next `check_story`: the next operator's or the engine's)."""
    return story.with_events(events, operators=story.operators + (name,), **changes)


def _new_object(story: Story, events: list[Event], rng: random.Random, pools: Pools) -> tuple[str, tuple[str, ...]]:
    """Place a second object right before or after the question object's initial placement."""
    other = rng.choice([o for o in pools.objects if o not in story.objects])
    init = _index(events, INIT, story.obj)
    events.insert(init + rng.randint(0, 1), Event(INIT, obj=other, container=rng.choice(story.containers)))
    return other, story.objects + (other,)


def distractor(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """Add a bystander agent (enters, may stay and talk, leaves) and a second object placed in a container.

    Breaks "every named agent matters" and "the only object named is the one asked about", and
    shifts container mention counts (the second object's container), so counting mentions misleads.
    """
    events = list(story.events)
    bystander = rng.choice([n for n in pools.names if n not in story.agents])
    first_non_enter = next(i for i, e in enumerate(events) if e.kind != ENTER)
    events.insert(first_non_enter, Event(ENTER, agent=bystander, room=story.room))
    other, objects = _new_object(story, events, rng, pools)
    start = _gathering_start(events, story.gathering)
    low = _index(events, INIT, story.obj) + 1
    events.insert(rng.randint(low, start), Event(EXIT, agent=bystander, room=story.room))
    start = _gathering_start(events, story.gathering)
    events.insert(
        rng.randint(low, start),
        Event(STATEMENT, agent=bystander, polarity=rng.choice(("likes", "dislikes")), thing=other),
    )
    last_gathering = max(i for i, e in enumerate(events) if e.kind == ENTER and e.room == story.gathering)
    events.insert(last_gathering + 1, Event(ENTER, agent=bystander, room=story.gathering))
    return _done(story, events, "distractor", agents=story.agents + (bystander,), objects=objects)


def extra_moves(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """Move another object around (1-3 moves) while people are in the room.

    Breaks "the last container mentioned / the last move is the answer": the latest moves and
    mentions concern an object nobody asks about.
    """
    events = list(story.events)
    objects = story.objects
    if len(objects) == 1:
        _, objects = _new_object(story, events, rng, pools)
    other = objects[-1]
    present = check_story(story.with_events(events)).present_before  # moves change nobody's presence
    for _ in range(rng.randint(1, 3)):
        low = _index(events, INIT, other) + 1
        slots = [p for p in range(low, _gathering_start(events, story.gathering)) if present[p]]
        if not slots:
            return None
        position = rng.choice(slots)
        actor = rng.choice(sorted(present[position]))
        _insert_move(story, events, other, position, actor, rng)
        present.insert(position, present[position])
    return _done(story, events, "extra_moves", objects=objects)


def unobserved_move(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """Insert a move of the object while at least one agent is out of the room.

    Breaks "beliefs equal reality" (true-belief default) and "everyone saw the same moves".
    """
    events = list(story.events)
    replay = check_story(story)
    low = _index(events, INIT, story.obj) + 1
    everyone = set(story.agents)
    slots = [
        p
        for p in range(low, _gathering_start(events, story.gathering))
        if replay.present_before[p] and everyone - replay.present_before[p]
    ]
    if not slots:
        return None
    position = rng.choice(slots)
    _insert_move(story, events, story.obj, position, rng.choice(sorted(replay.present_before[position])), rng)
    return _done(story, events, "unobserved_move")


def return_to_initial(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """After the last move, someone still in the room puts the object back where it started.

    Breaks "the first container is an outdated belief, never reality": the initial container is
    again the true location, while agents who left meanwhile believe an intermediate one.
    """
    events = list(story.events)
    replay = check_story(story)
    if replay.final_location == replay.initial_location:
        return None
    last = max(i for i, e in enumerate(events) if e.kind in (INIT, MOVE) and e.obj == story.obj)
    slots = [p for p in range(last + 1, _gathering_start(events, story.gathering) + 1) if replay.present_before[p]]
    if not slots:
        return None
    position = rng.choice(slots)
    actor = rng.choice(sorted(replay.present_before[position]))
    _insert_move(story, events, story.obj, position, actor, rng, to=replay.initial_location)
    return _done(story, events, "return")


def secret_witness(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """An agent outside the room secretly watches one move.

    Breaks "an agent who left has an outdated belief": the witness knows, while everyone else
    (including agents asked about the witness) still thinks it does not.
    """
    replay = check_story(story)
    events = list(story.events)
    options = [
        (i, a)
        for i, e in enumerate(events)
        if e.kind == MOVE and e.obj == story.obj
        for a in story.agents
        if a not in replay.present_before[i] and a not in e.witnesses
    ]
    if not options:
        return None
    i, agent = rng.choice(options)
    old = events[i]
    events[i] = Event(MOVE, agent=old.agent, obj=old.obj, container=old.container, witnesses=old.witnesses + (agent,))
    return _done(story, events, "secret_witness")


def transparent(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """Make the object's final container see-through and bring back an agent who missed the move into it.

    Breaks "missed the last move => false belief": the returning agent sees the object on entering.
    """
    if story.transparent:
        return None
    replay = check_story(story)
    events = list(story.events)
    moves = [i for i, e in enumerate(events) if e.kind == MOVE and e.obj == story.obj]
    if not moves:
        return None
    last = moves[-1]
    box = events[last].container
    absent = [a for a in story.agents if a not in replay.present_before[last]]
    if not absent:
        return None
    engine = BeliefEngine(story, replay)
    mistaken = [a for a in absent if engine.belief((a,)) != box]  # prefer one whose belief the reveal corrects
    agent = rng.choice(mistaken or absent)
    events.insert(last + 1, Event(ENTER, agent=agent, room=story.room))
    events.insert(
        rng.randint(last + 2, _gathering_start(events, story.gathering)), Event(EXIT, agent=agent, room=story.room)
    )
    scene = next(i for i, e in enumerate(events) if e.kind == SCENE)
    events.insert(scene + 1, Event(TRANSPARENT, container=box))
    return _done(story, events, "transparent", transparent=(box,))


def _tell(story: Story, rng: random.Random, public: bool, engine: BeliefEngine | None = None) -> Event:
    engine = engine or BeliefEngine(story)
    if public:
        speaker = rng.choice(story.agents)
        return Event(
            TELL, agent=speaker, room=story.gathering, obj=story.obj, container=engine.belief((speaker,)), public=True
        )
    speaker, listener = rng.sample(story.agents, 2)
    return Event(
        TELL,
        agent=speaker,
        room=story.gathering,
        obj=story.obj,
        container=engine.belief((speaker,)),
        listeners=(listener,),
    )


def private_tell(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """In the gathering room, one agent privately tells another where it believes the object is.

    Breaks "only what one saw counts" and "everyone learns what is said": only the listener hears
    it, and only adopts it when the speaker left the room later (may know more).
    """
    return _done(story, list(story.events) + [_tell(story, rng, public=False)], "private_tell")


def public_tell(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """In the gathering room, one agent tells everyone where it believes the object is.

    Breaks "communication is private" and "a claim changes the speaker's belief": everyone hears
    it and knows everyone heard it; listeners who left earlier than the speaker adopt it.
    """
    return _done(story, list(story.events) + [_tell(story, rng, public=True)], "public_tell")


def lie(story: Story, rng: random.Random, pools: Pools) -> Story | None:
    """Add a false tell (private or public): the speaker names a container other than the one it believes.

    Breaks "what is said is true" and "the answer is a container the object was in": a trusting
    listener now believes a container the speaker knows is wrong, often one never used. Truthful
    tells (the two operators above) stay as they are, so a tell alone does not give away a lie.
    """
    engine = BeliefEngine(story)
    told = _tell(story, rng, public=rng.random() < 0.5, engine=engine)
    believed = engine.belief((told.the_agent(),))
    wrong = [c for c in story.containers if c != believed]
    never = [c for c in wrong if c not in engine.replay.visited]
    content = rng.choice(never if never and rng.random() < 0.9 else wrong)
    false = Event(
        TELL,
        agent=told.agent,
        room=told.room,
        obj=told.obj,
        container=content,
        listeners=told.listeners,
        public=told.public,
    )
    return _done(story, list(story.events) + [false], "lie")


OPERATORS: OperatorRegistry[Transform] = OperatorRegistry(
    "generated stories",
    [
        Operator("distractor", distractor, "every named agent matters; the only object named is the one asked about"),
        Operator("extra_moves", extra_moves, "the last container mentioned or the last move is the answer"),
        Operator("unobserved_move", unobserved_move, "beliefs equal reality; everyone saw the same moves"),
        Operator(
            "return",
            return_to_initial,
            "the first container is an outdated belief, never reality",
            rate_scale=0.4,
            ends_at_start=True,
        ),  # returns happen in base stories anyway
        Operator("secret_witness", secret_witness, "an agent who left has an outdated belief"),
        Operator("transparent", transparent, "missed the last move means a false belief"),
        # truthful tells offset the many lies that "never visited" golds need
        Operator("private_tell", private_tell, "only what one saw counts", rate_scale=1.5, is_tell=True),
        Operator("public_tell", public_tell, "communication is private", rate_scale=1.5, is_tell=True),
        Operator("lie", lie, "what is said is true", is_tell=True, makes_never_visited=True),
    ],
)
"""Every operator on generated stories, in the order a story applies them (tells last, see `apply_operators`)."""


def apply_operators(story: Story, names: list[str] | tuple[str, ...], rng: random.Random, pools: Pools) -> Story | None:
    """Apply the named operators; None if one finds no place to act.

    Story operators run in the order of `OPERATORS`; the tells they add then come in an order drawn
    from `rng` (so a lie is not always the last thing said). Deterministic given `rng`'s state.
    """
    chosen = OPERATORS.in_order(names)
    ordered = [name for name in chosen if not OPERATORS[name].is_tell]
    tells = [name for name in chosen if OPERATORS[name].is_tell]
    rng.shuffle(tells)
    for name in ordered + tells:
        changed = OPERATORS[name].transform(story, rng, pools)
        if changed is None:
            return None
        story = changed
    return story
