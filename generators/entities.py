"""Entity pools (names, rooms, containers, objects), each split into a main and a held-out part.

Train and validation draw from the main pools; a test split can draw from the held-out pools, so
a model cannot pass the test by memorising which names, rooms or containers go with which answers.
Container names are "colour noun" pairs; main and held-out containers share no noun and no colour.
No name in the pools is a substring of another (checked in the tests), so counting mentions of a
container in the text is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

_NAMES_MAIN = (
    "Avery",
    "Charlotte",
    "Isabella",
    "Elizabeth",
    "Owen",
    "Carter",
    "Hannah",
    "Jacob",
    "Liam",
    "Jack",
    "Noah",
    "William",
    "Mia",
    "Lucas",
    "Amelia",
    "Ethan",
    "Harper",
    "Logan",
    "Evelyn",
    "Mason",
    "Abigail",
    "Oliver",
    "Emily",
    "Henry",
    "Sofia",
    "Caleb",
    "Chloe",
    "Wyatt",
    "Grace",
    "Julian",
    "Nora",
    "Levi",
    "Hazel",
    "Isaac",
    "Violet",
    "Gabriel",
    "Aurora",
    "Dylan",
    "Stella",
    "Aaron",
)
_NAMES_HELD_OUT = (
    "Priya",
    "Tomasz",
    "Ingrid",
    "Kofi",
    "Mariko",
    "Rafael",
    "Yusuf",
    "Astrid",
    "Dmitri",
    "Leilani",
    "Bongani",
    "Ximena",
    "Soren",
    "Farida",
    "Kenji",
    "Ottilie",
)
_ROOMS_MAIN = (
    "kitchen",
    "hallway",
    "garden",
    "bedroom",
    "office",
    "attic",
    "cellar",
    "pantry",
    "study",
    "garage",
    "laundry room",
    "dining room",
    "living room",
    "playroom",
)
_ROOMS_HELD_OUT = ("greenhouse", "workshop", "library", "conservatory", "lounge", "porch")
_COLOURS_MAIN = ("red", "blue", "green", "yellow", "white", "black")
_COLOURS_HELD_OUT = ("purple", "orange", "silver")
_NOUNS_MAIN = (
    "box",
    "basket",
    "drawer",
    "crate",
    "suitcase",
    "bucket",
    "cupboard",
    "envelope",
    "bottle",
    "pantry shelf",
    "treasure chest",
    "bathtub",
)
_NOUNS_HELD_OUT = ("tin", "satchel", "hamper", "cabinet", "trunk", "jar")
_OBJECTS_MAIN = (
    "apple",
    "banana",
    "lettuce",
    "tomato",
    "carrot",
    "eggplant",
    "potato",
    "cucumber",
    "peach",
    "grapefruit",
    "onion",
    "turnip",
    "lemon",
    "melon",
    "pear",
    "cherry",
    "scarf",
    "hat",
    "sock",
    "slipper",
    "glove",
    "belt",
    "tie",
    "umbrella",
    "watch",
    "pencil",
)
_OBJECTS_HELD_OUT = ("pineapple", "mango", "radish", "bracelet", "kite", "compass", "thermos", "ribbon")


@dataclass(frozen=True)
class Pools:
    """One side (main or held-out) of every entity pool."""

    names: tuple[str, ...]
    rooms: tuple[str, ...]
    containers: tuple[str, ...]
    objects: tuple[str, ...]
    label: str


@lru_cache(maxsize=2)
def pools(held_out: bool) -> Pools:
    """The main pools (held_out=False) or the disjoint held-out pools (held_out=True)."""
    if held_out:
        colours, nouns = _COLOURS_HELD_OUT, _NOUNS_HELD_OUT
        return Pools(_NAMES_HELD_OUT, _ROOMS_HELD_OUT, _containers(colours, nouns), _OBJECTS_HELD_OUT, "held_out")
    return Pools(_NAMES_MAIN, _ROOMS_MAIN, _containers(_COLOURS_MAIN, _NOUNS_MAIN), _OBJECTS_MAIN, "main")


def _containers(colours: tuple[str, ...], nouns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{colour} {noun}" for noun in nouns for colour in colours)


def surface(name: str, style: str) -> str:
    """How an entity is written in a style: HiToM writes multi-word names with underscores."""
    return name.replace(" ", "_") if style == "hitom" else name
