"""Each source's own sentences and question forms, for what variants add to a real story.

Only templates the source itself uses, except ToMi's tells (it has none): written in its own terse
declaratives, 'A told B that the X is in the C.' (private) and 'A said that the X is in the C.' (public);
questions of orders the source does not ask extend its own pattern ("Where does A think B thinks C
thinks D thinks E thinks the X is?"; "Where does A think that B thinks that C searches for the X?").
"""

from __future__ import annotations

SENTENCES: dict[str, dict[str, str]] = {
    "hitom": {
        "move": "{a} moved the {obj} to the {c}.",
        "private_tell": "{a} privately told {b} that the {obj} is in the {c}.",
        "public_tell": "{a} publicly claimed that {obj} is in the {c}.",
        "likes": "{a} likes the {c}.",
        "dislikes": "{a} dislikes the {c}.",
    },
    "tomi": {
        "move": "{a} moved the {obj} to the {c}.",
        "private_tell": "{a} told {b} that the {obj} is in the {c}.",  # ToMi tells nothing: its terse
        "public_tell": "{a} said that the {obj} is in the {c}.",  # declaratives, heard by A's room
        "likes": "{a} likes the {c}",  # ToMi's noise sentences have no full stop
        "dislikes": "{a} dislikes the {c}",
        "loves": "{a} loves the {c}",
        "hates": "{a} hates the {c}",
    },
    "exploretom": {
        "move": "{a} moved the {obj} to the {c}, which is also located in the {room}.",
    },
}


def sentence(source: str, kind: str, **fields: str) -> str:
    return SENTENCES[source][kind].format(**fields)


def question(source: str, kind: str, chain: tuple[str, ...], obj: str) -> str:
    """The question in the source's wording (kind 'memory' or 'belief'; order = len(chain))."""
    if source == "exploretom":
        return _exploretom_question(kind, chain, obj)
    if kind == "memory":
        return f"Where was the {obj} at the beginning?"
    if not chain:
        return f"Where is the {obj} really?"
    if source == "hitom":
        if len(chain) == 1:
            return f"Where does {chain[0]} really think the {obj} is?"
        return f"Where does {chain[0]} think " + "".join(f"{a} thinks " for a in chain[1:]) + f"the {obj} is?"
    if len(chain) == 1:
        return f"Where will {chain[0]} look for the {obj}?"
    return (
        f"Where does {chain[0]} think that "
        + "".join(f"{a} thinks that " for a in chain[1:-1])
        + f"{chain[-1]} searches for the {obj}?"
    )


def _exploretom_question(kind: str, chain: tuple[str, ...], obj: str) -> str:
    if kind == "memory":
        return f"In which container was the {obj} at the beginning?"
    if not chain:
        return f"In which container is the {obj} now?"
    if len(chain) == 1:
        return f"In which container will {chain[0]} search for the {obj}?"
    return (
        f"In which container does {chain[0]} think that "
        + "".join(f"{a} thinks that " for a in chain[1:-1])
        + f"{chain[-1]} will search for the {obj}?"
    )
