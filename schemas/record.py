"""Builds unified records: stable ids and content hashes (the vocabularies: `schemas.vocabulary`).

Adapters and generators hand plain field values to `build_record`; it fills the ids and hashes
so that every producer derives them the same way (the basis of idempotent loading).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Iterable, Sequence

import orjson

from tomforge.schemas import record_schema

FIELDS: tuple[str, ...] = tuple(record_schema()["properties"])
CONTEXT_FIELDS: tuple[str, ...] = tuple(
    name for name, spec in record_schema()["properties"].items() if spec["x-table"] == "contexts"
)
ITEM_FIELDS: tuple[str, ...] = tuple(name for name in FIELDS if name not in CONTEXT_FIELDS)
UNSPLIT = "unsplit"
"""The split of a source that publishes none: one name in the warehouse and in releases (`datasets`
refuses a split named "all", which stands for the union of every split there)."""
NOT_CONTENT_FIELDS: tuple[str, ...] = (
    "item_id",
    "context_id",
    "content_hash",  # ids (context_id is a hash of `context`, which is content)
    "source",
    "source_version",
    "source_ref",
    "split",  # where the item was found and filed
    "generator",
    "generator_version",  # which program (version) made it
)
"""Left out of `content_hash`: the same question moved to another split, file or source version, or
made by a newer generator that writes the same thing, keeps its hash."""
CONTENT_FIELDS: tuple[str, ...] = tuple(name for name in FIELDS if name not in NOT_CONTENT_FIELDS)
"""What `content_hash` covers: the context, the question, the answer, how a generated item was built
(template_id, seed, operators, trace) and every other source field (`meta`)."""
_WS = re.compile(r"\s+")


def hex_digest(*parts: str, size: int = 16) -> str:
    """blake2b over each part followed by a 0x1f separator, `size` bytes as hex: the project's one
    stable short hash (ids here; run ids of the audit). One call: this runs once per record."""
    return hashlib.blake2b(("\x1f".join(parts) + "\x1f").encode("utf-8"), digest_size=size).hexdigest()


def normalize_context(text: str) -> str:
    """Whitespace-normalized context; the basis of `context_id` (same story => same id)."""
    return _WS.sub(" ", text).strip()


def make_item_id(source: str, source_key: str) -> str:
    """Stable across runs and machines: depends only on the source name and its own key."""
    return hex_digest(source, source_key)


@lru_cache(maxsize=1 << 16)
def make_context_id(context: str) -> str:
    """Cached: a source repeats each story for all of its questions."""
    return hex_digest(normalize_context(context))


def canonical_bytes(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the one serialization hashes are taken over (orjson: fast)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def canonical_json(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def content_hash(record: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the record's `CONTENT_FIELDS`: equal content, equal hash,
    whatever the ids, split, file, source version or generator version (docs/sources.md, "The unified record").

    The payload is a shallow copy minus the other fields (a C-level copy, ~10x cheaper than a
    filtering comprehension); sorted-key serialization makes the result independent of key order."""
    payload = record.copy()
    for key in NOT_CONTENT_FIELDS:
        payload.pop(key, None)
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


def option_index(options: Sequence[str], answer: str) -> int | None:
    """Position of `answer` among `options`, or None when absent."""
    try:
        return list(options).index(answer)
    except ValueError:
        return None


def build_record(
    *,
    source: str,
    source_version: str,
    source_key: str,
    source_ref: str,
    split: str,
    context: str,
    question: str,
    question_type: str,
    answer: str,
    answer_format: str,
    context_kind: str = "story",
    turns: list[dict[str, str]] | None = None,
    n_agents: int | None = None,
    n_events: int | None = None,
    belief_order: int | None = None,
    perspective_chain: Iterable[str] = (),
    is_false_belief: bool | None = None,
    options: Iterable[str] = (),
    answer_index: int | None = None,
    answer_list: list[str] | None = None,
    generator: str | None = None,
    generator_version: str | None = None,
    template_id: str | None = None,
    seed: int | None = None,
    operators: Iterable[str] = (),
    trace: list[Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One unified record with ids and content hash filled in; validation happens at load time."""
    record: dict[str, Any] = {
        "item_id": make_item_id(source, source_key),
        "context_id": make_context_id(context),
        "source": source,
        "source_version": source_version,
        "source_ref": source_ref,
        "split": split,
        "content_hash": "",
        "context_kind": context_kind,
        "context": context,
        "turns": turns,
        "n_agents": n_agents,
        "n_events": n_events,
        "question": question,
        "question_type": question_type,
        "belief_order": belief_order,
        "perspective_chain": list(perspective_chain),
        "is_false_belief": is_false_belief,
        **_answer_fields(answer_format, options, answer, answer_index, answer_list),
        **_provenance_fields(generator, generator_version, template_id, seed, operators, trace),
        "meta": meta or {},
    }
    record["content_hash"] = content_hash(record)
    return record


def _answer_fields(
    answer_format: str, options: Iterable[str], answer: str, answer_index: int | None, answer_list: list[str] | None
) -> dict[str, Any]:
    """A record's answer fields: a multiple-choice answer given without its index gets its option's index."""
    listed = list(options)
    if answer_index is None and answer_format == "multiple_choice":
        answer_index = option_index(listed, answer)
    return {
        "answer_format": answer_format,
        "options": listed,
        "answer": answer,
        "answer_index": answer_index,
        "answer_list": answer_list,
    }


def _provenance_fields(
    generator: str | None,
    generator_version: str | None,
    template_id: str | None,
    seed: int | None,
    operators: Iterable[str],
    trace: list[Any] | None,
) -> dict[str, Any]:
    """Which program wrote a record and how (None and empty for a source as published)."""
    return {
        "generator": generator,
        "generator_version": generator_version,
        "template_id": template_id,
        "seed": seed,
        "operators": list(operators),
        "trace": trace,
    }
