"""Base stories: the plain HiToM-like skeleton that adversarial operators then transform.

Everyone enters the main room, the containers are listed, the object is placed, then `n_moves`
moves and one exit per agent come in random order (the last event is always an exit, so every
move has someone to make it), with a few stays and object-only statements in between; finally
everyone meets in the gathering room. Who leaves before which move is what makes beliefs differ.
"""

from __future__ import annotations

import random

from tomforge.generators.entities import Pools
from tomforge.generators.world import ENTER, EXIT, INIT, MOVE, SCENE, STATEMENT, STAY, Event, Story

N_CONTAINERS = 4


def build_base(rng: random.Random, pools: Pools, n_agents: int, n_moves: int) -> Story:
    """A base story (no operators) with the given number of agents and object moves (valid by construction;
    the tests replay many with `check_story`)."""
    agents = tuple(rng.sample(pools.names, n_agents))
    room, gathering = rng.sample(pools.rooms, 2)
    containers = tuple(rng.sample(pools.containers, N_CONTAINERS))
    obj = rng.choice(pools.objects)
    events: list[Event] = [Event(ENTER, agent=a, room=room) for a in agents]
    events.append(Event(SCENE, room=room, things=tuple(rng.sample(containers, N_CONTAINERS))))
    location = rng.choice(containers)
    events.append(Event(INIT, obj=obj, container=location))
    tokens = ["M"] * n_moves + ["X"] * (n_agents - 1) + ["S"] * rng.randint(0, 2) + ["D"] * rng.randint(0, 1)
    rng.shuffle(tokens)
    tokens.append("X")
    present = list(agents)
    others = [o for o in pools.objects if o != obj]
    for token in tokens:
        if token == "M":
            location = rng.choice([c for c in containers if c != location])
            events.append(Event(MOVE, agent=rng.choice(present), obj=obj, container=location))
        elif token == "X":
            agent = rng.choice(present)
            present.remove(agent)
            events.append(Event(EXIT, agent=agent, room=room))
        elif token == "S" and present:
            events.append(Event(STAY, agent=rng.choice(present), room=room))
        elif token == "D":
            events.append(
                Event(
                    STATEMENT,
                    agent=rng.choice(agents),
                    polarity=rng.choice(("likes", "dislikes")),
                    thing=rng.choice(others),
                )
            )
    events.extend(Event(ENTER, agent=a, room=gathering) for a in agents)
    return Story(
        agents,
        room,
        gathering,
        containers,
        obj,
        (obj,),
        tuple(events),
        params={"n_agents": n_agents, "n_moves": n_moves},
    )
