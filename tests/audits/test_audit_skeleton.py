"""Story skeletons: the compiled batch path (`skeleton_keys`) gives exactly the keys of the
per-text Python reference (`skeleton_key`), on generated stories and on texts built to hit each
rule (names at and away from sentence starts, thing phrases cut by stop words, names and sentence
ends, digits, non-ASCII words, empty texts); renamed stories share a skeleton, changed plots do not."""

from __future__ import annotations

import random

import pytest

from tomforge.audits import skeleton as sk
from tomforge.audits.synthetic import clean_records
from tomforge.audits.text import use_jit
from tomforge.generators import generate_records

RULES = [
    "",
    "...",
    "Anne put the red ball in the green box. Anne left. Then Bob moved the red ball into his blue basket!",
    "Yes. The apple is here. Apple pies are there. Later Cara saw the apple in the crate of Dan.",
    "Emma entered the the room 3 times? Emma thinks that the big old wooden chest is empty. Does she know 42?",
    "Zoë met Émile in the café. Le café de Zoë est ouvert. the naïve ÉLAN Ünter straße Straße",
    "Story: Mia told Noah that a cat was in her small red box. Noah believes Mia. mia lied.",
    "a the an his her their its my your our some this that",
    "The Kettle is hot. kettle The Kettle. Finally Ola put the kettle into the Bin Bin Bin Bin.",
    "\u0130stanbul is in the \u03a3\u039f\u03a6\u0399\u0391 box; \u0130stanbul \u00df \u01c5x the \u01c5x",
]


def _random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [
        "the",
        "a",
        "his",
        "Anne",
        "anne",
        "Bob",
        "ball",
        "red",
        "box",
        "in",
        "into",
        "moved",
        ".",
        "!",
        "?",
        "3",
        "Émile",
        "café",
        "The",
        "Then",
        "thinks",
        "is",
        "Box",
        "Ball",
        "green",
        "that",
        "and",
        "x_y",
        "ÉLAN",
    ]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def _corpus() -> list[str]:
    generated = [r["context"] for r in generate_records(300, seed=3)]
    synthetic = [r["context"] for r in clean_records(60, seed=4, split="train", orders=(0, 1), n_fillers=5)]
    return RULES + generated + synthetic + _random_texts(400, 5)


@pytest.mark.skipif(not use_jit(), reason="numba not installed")
def test_compiled_keys_equal_the_reference() -> None:
    texts = _corpus()
    expect = [sk.skeleton_key(t) for t in texts]
    assert sk.skeleton_keys(texts) == expect
    # batches cut anywhere give the same keys (the vocabulary is per batch)
    old = sk._BATCH
    try:
        sk._BATCH = 7
        assert sk.skeleton_keys(texts) == expect
    finally:
        sk._BATCH = old


def test_reference_path_when_compiled_kernels_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert sk.skeleton_keys(RULES) == [sk.skeleton_key(t) for t in RULES]


def test_skeleton_by_hand() -> None:
    text = "Anne put the red ball in the box. Then Bob took the red ball. Anne left."
    assert sk.skeleton(text) == ("AGENT1 put the ENT1 in the ENT2 . then AGENT2 took the ENT1 . AGENT1 left .")
    renamed = text.replace("Anne", "Zed").replace("red ball", "blue cup").replace("box", "crate")
    other_plot = text.replace("took", "hid")
    keys = sk.skeleton_keys([text, renamed, other_plot])
    assert keys[0] == keys[1] != keys[2]
