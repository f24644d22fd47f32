"""Shared test data for the audit tests: clean synthetic stories plus known, planted problems."""

from __future__ import annotations

import random
import re
from pathlib import Path

from tests.audit_reference import heuristic_choices, norm
from tomforge.audits.config import AuditParams
from tomforge.audits.synthetic import clean_records
from tomforge.schemas.record import build_record
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.sources.base import AdapterInfo

INFO = AdapterInfo("synth", "synth-1", "CC0")
FAST = AuditParams(bootstrap=200, folds=3)


def variant(record: dict, key: str, split: str, **changes) -> dict:
    """A copy of `record` under a new source key with some fields changed."""
    fields = {
        k: record[k]
        for k in (
            "source",
            "source_version",
            "context",
            "question",
            "question_type",
            "belief_order",
            "answer",
            "answer_format",
            "options",
            "n_agents",
            "template_id",
        )
    }
    fields.update(changes)
    if "options" in changes or "answer" in changes:
        fields["answer_index"] = None
    return build_record(source_key=key, source_ref=f"planted#{key}", split=split, **fields)


def rename(text: str, mapping: dict[str, str]) -> str:
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def planted_overlap_records() -> tuple[list[dict], dict[str, str]]:
    """Clean train/test plus: an exact copy, a near duplicate, a structural twin (all entities renamed),
    a partial copy (a long train passage inside a new story), and a label conflict."""
    train = clean_records(150, seed=1, split="train")
    test = clean_records(50, seed=2, split="test")
    by_story: dict[int, list[dict]] = {}
    for r in train:
        by_story.setdefault(r["meta"]["story"], []).append(r)
    s0, s1, s2, s3 = by_story[0][1], by_story[1][1], by_story[2][1], by_story[3][1]
    planted = [variant(s0, "exact", "test")]
    words = s1["context"].split(" ")
    for i in (len(words) // 3, len(words) // 2):  # two edits in ~100 words: Jaccard of 5-gram sets ~0.85
        words[i] = "Zebediah"
    planted.append(variant(s1, "near", "test", context=" ".join(words)))
    names = {
        w: f"Q{w}x"
        for w in set(re.findall(r"\b[A-Z][a-z]+\b", s2["context"]))
        if w not in {"The", "In", "A", "Someone"}
    }
    things = {c: c.replace("_", "_zz") for c in s2["options"]}
    mapping = names | things
    planted.append(
        variant(
            s2,
            "struct",
            "test",
            context=rename(s2["context"], mapping),
            question=rename(s2["question"], mapping),
            answer=mapping[s2["answer"]],
            options=[mapping[o] for o in s2["options"]],
        )
    )
    donor = s3["context"].split(" ")
    host = test[0]
    planted.append(variant(host, "partial", "test", context=host["context"] + " " + " ".join(donor[20:60])))
    conflict_src = by_story[4][1]
    other = next(o for o in conflict_src["options"] if o != conflict_src["answer"])
    planted.append(variant(conflict_src, "conflict", "train", answer=other))
    keys = {
        "exact": s0["context_id"],
        "near": s1["context_id"],
        "struct": s2["context_id"],
        "partial": s3["context_id"],
        "conflict": conflict_src["item_id"],
    }
    return train + test + planted, keys


def shortcut_records(seed: int = 5, n: int = 160) -> list[dict]:
    """Train with gold at position 0 for most items and at the last position whenever the question
    says "really" (a token cue); held-out where the gold is the first-mentioned container with a
    probability rising with belief order (an inverted-difficulty shortcut)."""
    rng = random.Random(seed)
    out = []
    for r in clean_records(n, seed=seed, split="train"):
        options = list(r["options"])
        if r["belief_order"] == 0:
            options.remove(r["answer"])
            options.append(r["answer"])
        elif rng.random() < 0.7:
            options.remove(r["answer"])
            options.insert(0, r["answer"])
        out.append(variant(r, r["item_id"], "train", options=options))
    rates = {0: 0.0, 1: 0.5, 2: 0.8, 3: 1.0}
    for r in clean_records(n, seed=seed + 1, split="test"):
        if rng.random() < rates[r["belief_order"]]:
            first = heuristic_choices([norm(o) for o in r["options"]], norm(r["context"]))["first"]
            answer = next(o for o in r["options"] if norm(o) == first)
            out.append(variant(r, r["item_id"], "test", answer=answer))
        else:
            out.append(r)
    return out


def load(path: Path, records: list[dict]) -> Path:
    ingest_records(path, INFO, records, "synth")
    return path
