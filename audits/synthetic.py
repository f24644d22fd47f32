"""A small ToMi-style story generator: the fixed base of the audit tests' planted problems and of
the MinHash benchmark's ~200-word stories (not the product generator, `generators/`).

Stories come from shared sentence templates (so independent stories share long n-grams, as real
templated data does: the planted-overlap tests calibrate against exactly that); answers follow a
tiny world model (object moves, agents leave, a belief of order k is the object's place when the
last agent of the chain left); option order is shuffled uniformly. Tests plant known problems into
these records (a "really" cue, position bias, a first-mentioned-container shortcut, copies); the
audit's behaviour on clean data is tested on `generators` output instead.
"""

from __future__ import annotations

import random
from typing import Any

from tomforge.schemas.record import build_record
from tomforge.schemas.vocabulary import question_type_of_order

NAMES = [
    "Abigail",
    "Alexander",
    "Amelia",
    "Aria",
    "Avery",
    "Benjamin",
    "Carter",
    "Charlotte",
    "Chloe",
    "Daniel",
    "Elijah",
    "Ella",
    "Emily",
    "Emma",
    "Ethan",
    "Evelyn",
    "Grace",
    "Hannah",
    "Harper",
    "Isabella",
    "Jack",
    "Jackson",
    "Jacob",
    "James",
    "Liam",
    "Lily",
    "Logan",
    "Lucas",
    "Mason",
    "Mia",
    "Noah",
    "Oliver",
    "Owen",
    "Sophia",
    "Owen",
    "William",
    "Zoe",
    "Nora",
    "Hazel",
    "Leo",
    "Ruby",
    "Theo",
    "Ivy",
    "Miles",
    "Stella",
]
OBJECTS = [
    "apple",
    "ball",
    "banana",
    "belt",
    "boots",
    "cap",
    "carrot",
    "cherry",
    "coat",
    "corn",
    "cucumber",
    "gloves",
    "grapefruit",
    "hat",
    "jacket",
    "lemon",
    "lettuce",
    "lime",
    "melon",
    "onion",
    "orange",
    "peach",
    "pear",
    "pineapple",
    "potato",
    "scarf",
    "shirt",
    "shoes",
    "slippers",
    "socks",
    "spinach",
    "stockings",
    "strawberry",
    "suit",
    "sweater",
    "tie",
    "tomato",
    "trousers",
    "tangerine",
    "watermelon",
]
COLORS = ["blue", "green", "red", "yellow", "white", "black", "purple", "orange", "pink", "brown"]
KINDS = [
    "box",
    "basket",
    "bucket",
    "crate",
    "drawer",
    "envelope",
    "pantry",
    "suitcase",
    "treasure_chest",
    "bottle",
    "cupboard",
    "container",
    "bathtub",
    "tub",
]
ROOMS = [
    "kitchen",
    "garden",
    "hallway",
    "lounge",
    "cellar",
    "office",
    "patio",
    "study",
    "workshop",
    "bedroom",
    "attic",
    "garage",
    "porch",
    "sunroom",
    "laundry",
    "basement",
]
FILLER = [
    "{a} likes the {o2}.",
    "{a} saw a {k} in the {r}.",
    "{a} hates the {o2}.",
    "The {r} was quiet that afternoon.",
    "{a} thought about lunch for a while.",
    "{a} looked out of the window of the {r}.",
    "Someone had left a {c} {k} near the door.",
    "{a} dislikes the {c} {k}.",
    "{a} and {b} talked about the weather.",
    "{a} hummed a song while waiting.",
    "{a} checked the time twice.",
    "A clock ticked somewhere in the {r}.",
]


def _container(rng: random.Random, used: set[str]) -> str:
    while True:
        name = f"{rng.choice(COLORS)}_{rng.choice(KINDS)}"
        if name not in used:
            used.add(name)
            return name


def story(rng: random.Random, *, n_fillers: int = 12, max_order: int = 4) -> dict[str, Any]:
    """One story with its world trace: agents, containers in order of use, and exit times."""
    n_agents = rng.randint(2, min(4, max_order + 1) if max_order >= 1 else 2)
    agents = rng.sample(NAMES, n_agents)
    obj = rng.choice(OBJECTS)
    room = rng.choice(ROOMS)
    used: set[str] = set()
    containers = [_container(rng, used) for _ in range(rng.randint(2, 3))]
    lines: list[str] = [f"{a} entered the {room}." for a in agents]
    lines.append(f"The {obj} is in the {containers[0]}.")
    location = containers[0]
    left_at: dict[str, str] = {}
    present = list(agents)
    for target in containers[1:]:
        if len(present) > 1 and rng.random() < 0.7:
            leaver = rng.choice(present[1:] if len(present) > 1 else present)
            present.remove(leaver)
            lines.append(f"{leaver} exited the {room}.")
            left_at[leaver] = location
        mover = rng.choice(present)
        lines.append(f"{mover} moved the {obj} to the {target}.")
        location = target
    # containers are also mentioned outside the answer-bearing events (a listing in random order at
    # the start, glances in the fillers), so first/last/most-mentioned carry no answer signal
    listed = rng.sample(containers, len(containers))
    lines.insert(
        n_agents, "In the " + room + " there were the " + ", the ".join(listed[:-1]) + f" and the {listed[-1]}."
    )
    for _ in range(n_fillers):
        a, b = rng.sample(agents, 2)
        text = rng.choice(FILLER).format(
            a=a,
            b=b,
            o2=rng.choice(OBJECTS),
            k=rng.choice(KINDS),
            c=rng.choice(COLORS),
            r=room,
            box=rng.choice(containers),
        )
        lines.insert(rng.randint(n_agents + 1, len(lines)), text)
    lines.append(f"{rng.choice(agents)} glanced at the {rng.choice(containers)}.")
    return {
        "agents": agents,
        "obj": obj,
        "room": room,
        "containers": containers,
        "final": location,
        "left_at": left_at,
        "text": " ".join(lines),
    }


def belief(world: dict[str, Any], chain: list[str]) -> str:
    """Where `chain[0]` thinks `chain[1]` thinks ... the object is: its place when the first of the
    chain left the room (everyone present saw every move until then)."""
    places = [world["left_at"][a] for a in chain if a in world["left_at"]]
    if not places:
        return world["final"]
    order = world["containers"]
    return min(places, key=order.index)


def question_for(world: dict[str, Any], order: int, rng: random.Random) -> tuple[str, str, list[str]]:
    obj = world["obj"]
    if order == 0:
        return f"Where is the {obj} really?", world["final"], []
    agents = world["agents"]
    chain = rng.sample(agents, order) if order <= len(agents) else [rng.choice(agents) for _ in range(order)]
    text = f"Where does {chain[0]} think" + "".join(f" that {a} thinks" for a in chain[1:]) + f" the {obj} is?"
    return text, belief(world, chain), chain


def clean_records(
    n_stories: int, *, seed: int = 0, split: str = "train", orders: tuple[int, ...] = (0, 1, 2, 3), n_fillers: int = 12
) -> list[dict[str, Any]]:
    """`n_stories` stories x one question per belief order, multiple choice over the story's containers."""
    rng = random.Random(seed)
    records = []
    for s in range(n_stories):
        world = story(rng, n_fillers=n_fillers, max_order=max(orders))
        for order in orders:
            question, answer, chain = question_for(world, order, rng)
            options = list(world["containers"])
            rng.shuffle(options)
            key = f"{split}-{seed}-{s}-o{order}"
            records.append(
                build_record(
                    source="synth",
                    source_version="synth-1",
                    source_key=key,
                    source_ref=f"synth#{key}",
                    split=split,
                    context=world["text"],
                    question=question,
                    question_type=question_type_of_order(order),
                    belief_order=order,
                    perspective_chain=chain,
                    is_false_belief=answer != world["final"] if order else None,
                    answer=answer,
                    answer_format="multiple_choice",
                    options=options,
                    n_agents=len(world["agents"]),
                    generator="audits.synthetic",
                    generator_version="1",
                    template_id=f"tpl{len(world['containers'])}",
                    seed=seed,
                    meta={"story": s},
                )
            )
    return records
