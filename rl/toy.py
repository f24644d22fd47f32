"""A small, self-contained false-belief story generator for RL smoke runs and tests.

`generators/` holds the project's real world simulator; this one exists so the RL stage can be
exercised on a GPU machine (or in CI) with nothing but this package: Sally-Anne style stories
(agents enter and leave, an object moves) with answers computed from who saw which move.
Nested beliefs follow the usual simplification that everyone present sees every event, so an
order-k belief of a chain of agents is the object's place after the last move all of them saw.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from warehouse.record import build_record

SOURCE = "toy_tom"
VERSION = "1"


@dataclass(frozen=True)
class Vocab:
    agents: tuple[str, ...]
    objects: tuple[str, ...]
    places: tuple[str, ...]
    rooms: tuple[str, ...]


TRAIN_VOCAB = Vocab(
    agents=("Sally", "Anne", "Tom", "Mia", "Jack", "Lucy", "Omar", "Nina"),
    objects=("marble", "apple", "ball", "key", "book", "hat"),
    places=("basket", "box", "drawer", "cupboard", "bag", "suitcase", "envelope", "bucket"),
    rooms=("kitchen", "garden", "hall", "attic"),
)
HELDOUT_VOCAB = Vocab(
    agents=("Priya", "Kenji", "Olga", "Diego", "Amara", "Felix"),
    objects=("scarf", "lemon", "watch", "coin"),
    places=("crate", "closet", "tin", "pantry", "backpack", "treasure chest"),
    rooms=("office", "cellar", "porch"),
)


@dataclass
class Story:
    sentences: list[str]
    moves: list[tuple[str, frozenset[str]]]  # (new place, agents present) in order
    agents: list[str]
    obj: str
    room: str
    places: list[str]


def _story(rng: random.Random, vocab: Vocab, n_agents: int, n_moves: int) -> Story:
    agents = rng.sample(vocab.agents, n_agents)
    obj, room = rng.choice(vocab.objects), rng.choice(vocab.rooms)
    places = rng.sample(vocab.places, min(len(vocab.places), n_moves + 2))
    present = set(agents)
    sentences = [f"{', '.join(agents[:-1])} and {agents[-1]} are in the {room}."]
    where = places[0]
    sentences.append(f"The {obj} is in the {where}.")
    moves = [(where, frozenset(present))]
    for step in range(n_moves):
        leaver = rng.choice(sorted(present)) if len(present) > 1 else None
        if leaver is not None and rng.random() < 0.75:
            present.discard(leaver)
            sentences.append(f"{leaver} leaves the {room}.")
        mover = rng.choice(sorted(present))
        where = places[step + 1]
        sentences.append(f"{mover} moves the {obj} to the {where}.")
        moves.append((where, frozenset(present)))
        back = sorted(set(agents) - present)
        if back and rng.random() < 0.3:
            returner = rng.choice(back)
            present.add(returner)
            sentences.append(f"{returner} comes back to the {room}.")
    return Story(sentences, moves, agents, obj, room, places)


def belief(story: Story, chain: tuple[str, ...]) -> str:
    """Where `chain[0]` thinks `chain[1]` thinks ... the object is: the last move all of them saw."""
    seen = [where for where, present in story.moves if set(chain) <= present]
    return seen[-1]


def _question(chain: tuple[str, ...], obj: str) -> str:
    """Order 0: reality; 1: 'Where will A look'; k: 'Where does A think B thinks ... C will look'."""
    if not chain:
        return f"Where is the {obj} now?"
    if len(chain) == 1:
        return f"Where will {chain[0]} look for the {obj}?"
    middle = "".join(f"{agent} thinks " for agent in chain[1:-1])
    return f"Where does {chain[0]} think {middle}{chain[-1]} will look for the {obj}?"


def _records(story: Story, rng: random.Random, split: str, key: str, max_order: int, seed: int) -> Iterator[dict]:
    context = " ".join(story.sentences)
    now = story.moves[-1][0]
    common = dict(source=SOURCE, source_version=VERSION, split=split, context=context,
                  n_agents=len(story.agents), n_events=len(story.sentences), generator="rl.toy",
                  generator_version=VERSION, seed=seed)
    orders = list(range(0, max_order + 1))
    for order in orders:
        chain = tuple(rng.sample(story.agents, order)) if order else ()
        # nested chains repeat no agent twice in a row, which sample() guarantees
        answer = belief(story, chain) if chain else now
        fmt = rng.choice(("multiple_choice", "free_text", "free_text", "yes_no"))
        qtype = "reality" if order == 0 else ("first_order_belief" if order == 1 else "higher_order_belief")
        base = dict(common, belief_order=order, perspective_chain=list(chain), question_type=qtype,
                    is_false_belief=None if not chain else answer != now,
                    template_id=f"toy/{fmt}/o{order}", source_ref=f"{key}#o{order}")
        question = _question(chain, story.obj)
        if fmt == "multiple_choice":
            options = sorted(set(p for p, _ in story.moves) | {rng.choice(story.places)})
            rng.shuffle(options)
            yield build_record(**base, source_key=f"{key}/o{order}", question=question, answer=answer,
                               answer_format=fmt, options=options)
        elif fmt == "yes_no":
            probe = rng.choice(sorted(set(p for p, _ in story.moves)))
            yn_q = question.rstrip("?")
            yn_q = f"{yn_q[0].lower()}{yn_q[1:]}"
            text = f"Is the answer to the question '{yn_q}' the {probe}?"
            yield build_record(**base, source_key=f"{key}/o{order}", question=text,
                               answer="yes" if probe == answer else "no", answer_format=fmt)
        else:
            yield build_record(**base, source_key=f"{key}/o{order}", question=question, answer=answer,
                               answer_format=fmt)
    # one list question per story: who saw the last move
    last_where, saw = story.moves[-1]
    yield build_record(**common, source_key=f"{key}/list", source_ref=f"{key}#list", belief_order=0,
                       perspective_chain=[], question_type="info_accessibility", is_false_belief=None,
                       template_id="toy/list/o0", question=f"Who saw the {story.obj} being put in the {last_where}?",
                       answer=", ".join(a for a in story.agents if a in saw),
                       answer_format="list", answer_list=[a for a in story.agents if a in saw])


def generate(n_stories: int, *, seed: int, split: str, vocab: Vocab = TRAIN_VOCAB, max_order: int = 2,
             n_agents: tuple[int, int] = (2, 3), n_moves: tuple[int, int] = (1, 2), key_prefix: str = "") -> list[dict]:
    """Deterministic under `seed`: the same arguments give the same records (ids included)."""
    rng = random.Random(seed)
    out: list[dict] = []
    for i in range(n_stories):
        agents = rng.randint(*n_agents)
        story = _story(rng, vocab, max(agents, min(max_order, len(vocab.agents))), rng.randint(*n_moves))
        out.extend(_records(story, rng, split, f"{key_prefix}{split}/{seed}/{i}", max_order, seed))
    return out


def write_toy_release(root: Path, *, n_train: int = 600, n_eval: int = 100, seed: int = 0) -> dict[str, int]:
    """A published-layout folder: config `toy` (train/validation/test, orders 0-2, training
    vocabulary) and config `toy_heldout` (test: unseen names, objects and places, longer
    stories, orders 0-3). Returns row counts per config/split."""
    import pyarrow as pa

    from rl.columns import with_rl_columns
    from rl.release import write_split

    plan = {
        ("toy", "train"): generate(n_train, seed=seed, split="train"),
        ("toy", "validation"): generate(n_eval // 2, seed=seed + 1, split="validation"),
        ("toy", "test"): generate(n_eval, seed=seed + 2, split="test"),
        ("toy_heldout", "test"): generate(n_eval, seed=seed + 3, split="test", vocab=HELDOUT_VOCAB, max_order=3,
                                          n_agents=(3, 4), n_moves=(2, 3), key_prefix="heldout/"),
    }
    counts = {}
    for (config, split), records in plan.items():
        table = with_rl_columns(pa.Table.from_pylist([_flat(r) for r in records]))
        write_split(root, config, split, table)
        counts[f"{config}/{split}"] = table.num_rows
    return counts


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """Parquet-friendly record: JSON for the free-form fields (as the publisher stores them)."""
    import json

    out = dict(record)
    out["meta"] = json.dumps(record["meta"], sort_keys=True)
    out["trace"] = None if record["trace"] is None else json.dumps(record["trace"], sort_keys=True)
    return out
