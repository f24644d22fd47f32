"""The world: agents, two rooms, containers, objects, and the events of a story.

A story is a setup (who, where, which containers, which object the questions are about) plus a
list of events. `check_story` replays the events and refuses impossible ones (an absent agent
moving an object, an object "moved" to where it already is), so operators cannot produce a story
whose text contradicts itself. The epistemic rules (who learns what from an event) live in
`generators.beliefs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tomforge.schemas.errors import ExitCode, TomforgeError

# Event kinds. `scene` lists the room's containers; `transparent` says a container is see-through.
ENTER, EXIT, INIT, MOVE, STAY, STATEMENT, TELL, SCENE, TRANSPARENT = (
    "enter",
    "exit",
    "init",
    "move",
    "stay",
    "statement",
    "tell",
    "scene",
    "transparent",
)
KINDS = (ENTER, EXIT, INIT, MOVE, STAY, STATEMENT, TELL, SCENE, TRANSPARENT)


class StoryError(TomforgeError, ValueError):
    """An event that cannot happen in the world as it stands (a bug in a builder or operator)."""

    exit_code = ExitCode.INTERNAL


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happens. Fields unused by a kind stay at their defaults.

    - enter/exit/stay: `agent`, `room`
    - init: `obj`, `container` (the object's location at the start, seen by everyone present)
    - move: `agent` moves `obj` into `container`; `witnesses` watched it in secret from outside
    - statement: `agent` `polarity` ("likes"/"dislikes") `thing` (a distractor, no effect)
    - tell: `agent` tells `listeners` (private) or everyone in `room` (public) that `obj` is in
      `container`; true or false (a lie) depending on the speaker's own belief
    - scene: `room` holds the `things` (containers), listed once; transparent: `container`
    """

    kind: str
    agent: str | None = None
    room: str | None = None
    obj: str | None = None
    container: str | None = None
    witnesses: tuple[str, ...] = ()
    listeners: tuple[str, ...] = ()
    public: bool = False
    polarity: str | None = None
    thing: str | None = None
    things: tuple[str, ...] = ()

    def the_agent(self) -> str:
        """`agent`, for a kind that has one (StoryError if it is missing: a builder or operator bug)."""
        return self._required("agent", self.agent)

    def the_container(self) -> str:
        """`container`, for a kind that has one (StoryError if it is missing)."""
        return self._required("container", self.container)

    def the_polarity(self) -> str:
        """`polarity` of a statement (StoryError if it is missing)."""
        return self._required("polarity", self.polarity)

    def _required(self, name: str, value: str | None) -> str:
        if value is None:
            raise StoryError(f"a {self.kind} event without its {name}")
        return value

    def mentioned_container(self, containers: frozenset[str]) -> str | None:
        """The one container this event's sentence names, if any (each template names at most one)."""
        if self.kind in (INIT, MOVE, TELL, TRANSPARENT):
            return self.container
        if self.kind == STATEMENT and self.thing in containers:
            return self.thing
        return None


@dataclass(frozen=True)
class Story:
    """Setup plus events. `room` is where objects live; `gathering` is where agents meet at the end."""

    agents: tuple[str, ...]
    room: str
    gathering: str
    containers: tuple[str, ...]
    obj: str
    objects: tuple[str, ...]
    events: tuple[Event, ...]
    transparent: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)

    def with_events(self, events: list[Event] | tuple[Event, ...], **changes: Any) -> "Story":
        return replace(self, events=tuple(events), **changes)


@dataclass
class Replay:
    """What `check_story` learns: where everyone and everything is after each event."""

    present_before: list[frozenset[str]]  # agents in the main room just before event i
    location_before: list[str | None]  # the question object's container just before event i
    final_location: str
    initial_location: str
    visited: tuple[str, ...]  # containers the object has been in, in order of first visit
    last_exit: dict[str, int]  # index of each agent's last exit from the main room


def check_story(story: Story) -> Replay:
    """Replay the events; raise StoryError on the first impossible one."""
    world = _World(story)
    obj = story.obj
    present_before: list[frozenset[str]] = []
    location_before: list[str | None] = []
    add_present, add_location, location = present_before.append, location_before.append, world.location
    for index, event in enumerate(story.events):
        add_present(world.present)
        add_location(location.get(obj))
        check = _CHECKS.get(event.kind)
        if check is not None:
            check(world, index, event)
        elif event.kind not in (STATEMENT, SCENE, TRANSPARENT):
            raise StoryError(f"event {index}: unknown kind {event.kind}")
    if obj not in location:
        raise StoryError("the question object is never placed")
    return Replay(
        present_before, location_before, location[obj], world.visited[0], tuple(world.visited), world.last_exit
    )


class _World:
    """The state `check_story` replays, one method per event kind that changes or constrains it."""

    __slots__ = ("story", "containers", "where", "location", "visited", "last_exit", "present")

    def __init__(self, story: Story) -> None:
        self.story = story
        self.containers = set(story.containers)
        self.where: dict[str, str | None] = {agent: None for agent in story.agents}
        self.location: dict[str, str] = {}
        self.visited: list[str] = []  # containers of the question object, in order of first visit
        self.last_exit: dict[str, int] = {}
        self.present: frozenset[str] = frozenset()  # rebuilt only when someone enters or leaves the main room

    def move(self, index: int, event: Event) -> None:
        where, location, room = self.where, self.location, self.story.room
        agent, obj, container = event.agent, event.obj, event.container
        if agent is None or where.get(agent) != room:
            raise StoryError(f"event {index}: {agent} moves {obj} from outside the room")
        if (
            obj is None
            or container is None
            or obj not in location
            or location[obj] == container
            or container not in self.containers
        ):
            raise StoryError(f"event {index}: {obj} cannot move to {container}")
        if event.witnesses and any(where.get(w) == room or w == agent for w in event.witnesses):
            raise StoryError(f"event {index}: a secret witness must be outside the room")
        location[obj] = container
        if obj == self.story.obj and container not in self.visited:
            self.visited.append(container)

    def enter(self, index: int, event: Event) -> None:
        story, agent = self.story, event.agent
        if agent is None or self.where.get(agent, "?") is not None:
            raise StoryError(
                f"event {index}: {agent} enters {event.room} while in "
                f"{self.where.get(agent) if agent is not None else None}"
            )
        if event.room == story.room:
            transparent, obj, location = story.transparent, story.obj, self.location
            if transparent and obj in location and location[obj] not in transparent:
                raise StoryError(f"event {index}: re-entering while the object is not in the transparent container")
            self.present = self.present | {agent}
        self.where[agent] = event.room

    def exit(self, index: int, event: Event) -> None:
        agent = event.agent
        if agent is None or self.where.get(agent) != event.room:
            raise StoryError(f"event {index}: {agent} exits {event.room} without being there")
        self.where[agent] = None
        if event.room == self.story.room:
            self.last_exit[agent] = index
            self.present = self.present - {agent}

    def init(self, index: int, event: Event) -> None:
        obj, container = event.obj, event.container
        if obj is None or obj in self.location or container is None or container not in self.containers:
            raise StoryError(f"event {index}: bad init of {obj}")
        self.location[obj] = container
        if obj == self.story.obj:
            self.visited.append(container)

    def stay(self, index: int, event: Event) -> None:
        if event.agent is None or self.where.get(event.agent) != event.room:
            raise StoryError(f"event {index}: {event.agent} stays in {event.room} without being there")

    def tell(self, index: int, event: Event) -> None:
        where, gathering, agent = self.where, self.story.gathering, event.agent
        if agent is None or where.get(agent) != gathering or event.room != gathering:
            raise StoryError(f"event {index}: tells happen in the {gathering}")
        if any(where.get(listener) != gathering or listener == agent for listener in event.listeners):
            raise StoryError(f"event {index}: a listener is not there")
        if event.public == bool(event.listeners):
            raise StoryError(f"event {index}: a tell is either public or has listeners")
        if self.present:
            raise StoryError(f"event {index}: tells come after everyone has left the {self.story.room}")


_CHECKS = {
    MOVE: _World.move,
    ENTER: _World.enter,
    EXIT: _World.exit,
    INIT: _World.init,
    STAY: _World.stay,
    TELL: _World.tell,
}


def trace_of(story: Story, name: Any = str) -> list[dict[str, Any]]:
    """The story as plain JSON values (setup first), names written by `name` (a style's surface)."""
    setup = {
        "kind": "setup",
        "agents": list(story.agents),
        "room": name(story.room),
        "gathering": name(story.gathering),
        "containers": [name(c) for c in story.containers],
        "transparent": [name(c) for c in story.transparent],
        "object": name(story.obj),
        "objects": [name(o) for o in story.objects],
    }
    out: list[dict[str, Any]] = [setup]
    for event in story.events:
        item: dict[str, Any] = {"kind": event.kind}
        if event.agent is not None:
            item["agent"] = event.agent
        if event.room is not None:
            item["room"] = name(event.room)
        if event.obj is not None:
            item["obj"] = name(event.obj)
        if event.container is not None:
            item["container"] = name(event.container)
        if event.witnesses:
            item["witnesses"] = list(event.witnesses)
        if event.listeners:
            item["listeners"] = list(event.listeners)
        if event.kind == TELL:
            item["public"] = event.public
        if event.polarity is not None:
            item["polarity"] = event.polarity
            item["thing"] = name(event.thing)
        if event.things:
            item["things"] = [name(t) for t in event.things]
        out.append(item)
    return out
