"""The parsed form of a real story: numbered lines, each with the world events it states.

A parser turns each story line into zero or more events in the checker's trace vocabulary (enter,
exit, init, move, stay, tell, noise); `ParsedStory.trace_for(obj)` adds the setup the checker needs
for a question about `obj` (its room, the gathering room, agents, containers). Events keep their
line number, so an explanation can name the sentence that decides an answer, and variants can insert
new lines and renumber without touching the original sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tomforge.schemas.errors import TomforgeError


class ParseError(TomforgeError, ValueError):
    """A story or question the world model cannot represent; the message says where and why."""


@dataclass
class Line:
    """One story sentence and the events it states (empty for pure noise such as 'X saw a dog.')."""

    text: str
    events: list[dict[str, Any]] = field(default_factory=list)
    added_by: str | None = None  # the operator that inserted this line (variants only)
    modifies_previous: bool = False  # says something about the line before it (nothing may come between)


@dataclass
class ParsedStory:
    """A whole story as lines; `gathering` is where tells happen (HiToM's waiting_room), if any."""

    source: str
    lines: list[Line]
    gathering: str | None = None
    first_move_places: bool = False  # ExploreToM: an object's first move is where it is first seen

    def events(self) -> list[dict[str, Any]]:
        """Every event in story order, each carrying `line` (1-based) and `text`."""
        out = []
        for number, line in enumerate(self.lines, start=1):
            for event in line.events:
                out.append({**event, "line": number, "text": line.text})
        return out

    def agents(self) -> list[str]:
        seen: dict[str, None] = {}
        for line in self.lines:
            for event in line.events:
                for name in (event.get("agent"), *event.get("listeners", ())):
                    if name:
                        seen.setdefault(name, None)
        return list(seen)

    def containers(self, obj: str | None = None) -> list[str]:
        """Containers named in placements, moves and tells (of `obj` only, when given), first mention first."""
        seen: dict[str, None] = {}
        for line in self.lines:
            for event in line.events:
                if "container" in event and (obj is None or event.get("obj") == obj):
                    seen.setdefault(event["container"], None)
        return list(seen)

    def objects(self) -> list[str]:
        seen: dict[str, None] = {}
        for line in self.lines:
            for event in line.events:
                if event["kind"] in ("init", "move"):
                    seen.setdefault(event["obj"], None)
        return list(seen)

    def room_of(self, obj: str) -> str:
        """The room `obj` lives in: where its first mover stands, else the room last entered before it is placed."""
        rooms: dict[str, str] = {}
        last_entered: str | None = None
        placed = False
        for event in self.events():
            kind = event["kind"]
            if kind == "enter":
                rooms[event["agent"]] = event["room"]
                if event["room"] != self.gathering:
                    last_entered = event["room"]
            elif kind == "exit":
                rooms.pop(event["agent"], None)
            elif kind == "init" and event["obj"] == obj and not placed:
                placed = True
                fallback = last_entered
            elif kind == "move" and event["obj"] == obj and event["agent"] in rooms:
                return rooms[event["agent"]]
        if not placed or fallback is None:  # (fallback is bound whenever placed is true)
            raise ParseError(f"the {obj} is never placed in a room")
        return fallback

    def trace_for(self, obj: str) -> list[dict[str, Any]]:
        """The checker's trace for questions about `obj`: setup, then every event (with line and text)."""
        setup = {
            "kind": "setup",
            "agents": self.agents(),
            "room": self.room_of(obj),
            "gathering": self.gathering,
            "containers": self.containers(),
            "transparent": [],
            "object": obj,
            "objects": self.objects(),
        }
        return [setup, *self.events()]

    def text(self) -> str:
        """The story in its source's layout, the form of the unified record's context: numbered lines
        ('1 ...'), or one paragraph for ExploreToM."""
        if self.source == "exploretom":
            return " ".join(line.text for line in self.lines)
        return "\n".join(f"{number} {line.text}" for number, line in enumerate(self.lines, start=1))


def check_consistency(story: ParsedStory) -> None:
    """Refuse a story whose events cannot happen (someone moving an object in a room they are not in,
    leaving a room they are not in, moving an object nobody placed): its text is not a world."""
    rooms: dict[str, str] = {}
    where: dict[str, str] = {}  # object -> room it was placed in
    for event in story.events():
        kind, line = event["kind"], event["line"]
        agent: str = event.get("agent", "")  # every kind checked below has one; init has none and needs none
        if kind == "enter":
            rooms[agent] = event["room"]
        elif kind == "exit":
            if rooms.get(agent) != event["room"]:
                raise ParseError(f"line {line}: {agent} exits the {event['room']} without being there")
            del rooms[agent]
        elif kind == "init":
            where.setdefault(event["obj"], story.room_of(event["obj"]))
        elif kind == "move":
            _check_move(story, event, rooms, where)
        elif kind == "stay" and rooms.get(agent) != event["room"]:
            raise ParseError(f"line {line}: {agent} stays in the {event['room']} without being there")
        elif kind == "tell":
            if story.gathering is not None and rooms.get(agent) != story.gathering:
                raise ParseError(f"line {line}: {agent} speaks outside the {story.gathering}")


def _check_move(story: ParsedStory, event: dict[str, Any], rooms: dict[str, str], where: dict[str, str]) -> None:
    """A move needs its object placed (or placed by this move, for ExploreToM) in the mover's room."""
    agent, obj, line = event.get("agent", ""), event["obj"], event["line"]
    if obj not in where and story.first_move_places:
        where[obj] = rooms.get(agent, "")
    if obj not in where:
        raise ParseError(f"line {line}: the {obj} is moved before it is placed")
    if rooms.get(agent) != where[obj]:
        raise ParseError(f"line {line}: {agent} moves the {obj} while not in the {where[obj]}")
