"""FANToM (Kim et al., EMNLP 2023): `fantom_v1.json`, one record per question set.

A question set holds one conversation (`full_context`, "Speaker: utterance" lines; a shorter
`short_context` excerpt) and six question parts. The original evaluation (skywalker023/fantom,
`eval_fantom.py`) flattens every set into these questions, in this order, and so do we:

- `factQA` -> `factual`, free text (its `wrong_answer` kept in meta);
- `beliefQAs[i]` -> first/higher-order belief; the original asks each twice (free text, and a
  two-way multiple choice). We keep one item per belief question, as a multiple choice over
  [correct, wrong] in an order fixed by a hash of the item key (so the gold is not always first),
  which keeps both answers and is scorable exactly;
- `answerabilityQA_list` / `infoAccessibilityQA_list` -> `list` (answer_list = who knows;
  options = every name offered, sorted so position does not leak the answer);
- `answerabilityQAs_binary[i]` / `infoAccessibilityQAs_binary[i]` -> `yes_no`; "no:long" (a "no"
  that needs the full conversation) becomes "no", the raw label stays in meta.

Answerability and accessibility questions only make sense next to the fact question they ask
about, so their `question` carries it the way the original prompt does ("Target: ..." and
"Information: <question> <answer>"); the bare question stays in `meta.raw_question`.
The original reads the file with `pandas.read_json` (not JSON Lines): we accept a JSON array of
sets, and pandas' column layout ({field: {row: value}}) that `pandas.read_json` also reads.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from tomforge.schemas.record import UNSPLIT, build_record
from tomforge.schemas.vocabulary import question_type_of_order
from tomforge.warehouse.sources.base import (
    Adapter,
    RecordError,
    RecordOrReject,
    Reject,
    SourceError,
    read_text,
    refuse_lone_surrogates,
    relative_name,
)

NAME = "fantom"
FILE_NAME = "fantom_v1.json"
PART_ORDER = (
    "factQA",
    "beliefQAs",
    "answerabilityQA_list",
    "answerabilityQAs_binary",
    "infoAccessibilityQA_list",
    "infoAccessibilityQAs_binary",
)
_LIST_PARTS = {"beliefQAs", "answerabilityQAs_binary", "infoAccessibilityQAs_binary"}
_SET_KEYS = {"set_id", "full_context", "short_context", *PART_ORDER}
_BELIEF_TYPE = re.compile(r"^tom:belief:(?P<access>accessible|inaccessible)\b")
_ORDER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_TOM_ORDER = re.compile(r"^(?P<word>first|second|third|fourth)-order", re.IGNORECASE)
_BINARY = {"yes": "yes", "no": "no", "no:long": "no"}
# A speaker label: one to four capitalized words before the first colon of a line.
_TURN = re.compile(r"^(?P<speaker>[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}):[ \t]*(?P<text>.*)$")
_MIND_VERB = r"(?:believe|think|know|assume|expect|feel|remember|suspect|guess|understand)"
_MIND_VERB_3S = r"(?:believes|thinks|knows|assumes|expects|feels|remembers|suspects|guesses|understands)"
_MIND_NOUN = r"(?:beliefs?|thoughts?|knowledge|understanding|perspective|view|opinion)"


@dataclass
class _Conversation:
    """What every question of a set shares: ids, the dialogue and the fact it asks about."""

    set_id: str
    context: str
    turns: list[dict[str, str]]
    speakers: tuple[str, ...]
    set_meta: dict[str, Any]
    fact_question: str | None = None
    fact_answer: str | None = None
    binary_full_access: dict[str, str] = field(default_factory=dict)


def parse_turns(text: str) -> list[dict[str, str]]:
    """Turns of a "Speaker: utterance" transcript.

    A line without a speaker label continues the previous turn (joined with a newline); lines
    before the first label form a turn with an empty speaker. Blank lines are dropped.
    """
    turns: list[dict[str, str]] = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line.strip():
            continue
        match = _TURN.match(line)
        if match:
            turns.append({"speaker": match["speaker"], "text": match["text"]})
        elif turns:
            turns[-1]["text"] = f"{turns[-1]['text']}\n{line}" if turns[-1]["text"] else line
        else:
            turns.append({"speaker": "", "text": line})
    return turns


@lru_cache(maxsize=256)
def _parsed(text: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """Turns and distinct speakers of a transcript; many sets share one conversation."""
    turns = parse_turns(text)
    speakers = tuple(dict.fromkeys(t["speaker"] for t in turns if t["speaker"]))
    return tuple((t["speaker"], t["text"]) for t in turns), speakers


@lru_cache(maxsize=256)
def _mind_pattern(speakers: tuple[str, ...]) -> re.Pattern[str] | None:
    """Where a question enters someone's mind: "does X think", "X's belief", "X believes"."""
    if not speakers:
        return None
    names = "|".join(re.escape(name) for name in sorted(speakers, key=len, reverse=True))
    who = rf"(?P<{{g}}>{names})\b"
    return re.compile(
        rf"\b(?:does|do|did|would|will)\s+{who.format(g='a')}\s+{_MIND_VERB}\b"
        rf"|\b{who.format(g='b')}(?:'s|’s|')\s+{_MIND_NOUN}\b"
        rf"|\b{who.format(g='c')}\s+{_MIND_VERB_3S}\b",
        re.IGNORECASE,
    )


def perspective_chain(question: str, speakers: tuple[str, ...], depth: int | None) -> list[str]:
    """Speakers whose minds the question enters, outermost first, at most `depth` of them."""
    pattern = _mind_pattern(speakers)
    if pattern is None:
        return []
    canonical = {name.casefold(): name for name in speakers}
    chain: list[str] = []
    for match in pattern.finditer(question):
        name = canonical[(match["a"] or match["b"] or match["c"]).casefold()]
        if not chain or chain[-1] != name:
            chain.append(name)
    return chain[:depth] if depth else chain


def gold_goes_last(key: str) -> bool:
    """Deterministic, key-dependent position of the gold option in a two-way choice."""
    return hashlib.sha256(key.encode("utf-8")).digest()[0] % 2 == 1


def _text(qa: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = qa.get(name)
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise RecordError(name, "missing" if value is None else f"expected a non-empty string, got {value!r}"[:200])
    return value


def _names(qa: dict[str, Any], name: str) -> list[str]:
    value = qa.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise RecordError(name, f"expected a list of character names, got {value!r}"[:200])
    return list(value)


def _full_context_access(qas: Any) -> str | None:
    """The original eval's `missed_info_accessibility` for binary questions on the full context."""
    if not isinstance(qas, list) or not qas or not all(isinstance(qa, dict) for qa in qas):
        return None
    label = qas[0].get("missed_info_accessibility")
    if any(qa.get("correct_answer") != "yes" for qa in qas):
        label = "inaccessible"
    return label if isinstance(label, str) else None


class FantomAdapter(Adapter):
    """Reads `fantom_v1.json` (a file, or a folder holding it anywhere below)."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        root = Path(root)
        for path in self._files(root):
            yield from self._read_file(path, relative_name(path, root))

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: per question set, one per single
        question part plus the length of each list part; a set with none (or not an object) counts
        one, as it becomes one reject."""
        total = 0
        for path in self._files(Path(root)):
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = _columns_to_rows(path, data) if isinstance(data, dict) else data
            for row in rows:
                parts = [row.get(part) for part in PART_ORDER] if isinstance(row, dict) else []
                sizes = [
                    len(v) if name in _LIST_PARTS and isinstance(v, list) else 1
                    for name, v in zip(PART_ORDER, parts)
                    if v is not None
                ]
                total += sum(sizes) if sizes else 1
        return total

    def _files(self, root: Path) -> list[Path]:
        if not root.exists():
            raise SourceError(root, "path not found")
        if root.is_file():
            return [root]
        files = sorted(root.rglob(FILE_NAME))
        if not files:
            raise SourceError(root, f"no {FILE_NAME} in this folder")
        return files

    def _read_file(self, path: Path, label: str) -> Iterator[RecordOrReject]:
        rows = self._rows(path)
        seen: dict[str, int] = {}
        for index, row in enumerate(rows):
            yield from self._read_set(row, index, label, seen)

    def _rows(self, path: Path) -> list[Any]:
        """The question sets of a file, or a SourceError saying why the file is not FANToM."""
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg == "Extra data" and text.lstrip().startswith("{"):
                raise SourceError(path, "looks like JSON Lines; FANToM is one JSON array of question sets") from None
            raise SourceError(
                path, f"invalid or truncated JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        refuse_lone_surrogates(path, text, data)
        if isinstance(data, dict) and isinstance(data.get("full_context"), dict):
            data = _columns_to_rows(path, data)
        if not isinstance(data, list):
            keys = ", ".join(sorted(map(str, data))[:5]) if isinstance(data, dict) else type(data).__name__
            raise SourceError(path, f"expected a JSON array of FANToM question sets, found {keys or 'an empty object'}")
        if data and not any(isinstance(row, dict) and _SET_KEYS & row.keys() for row in data):
            raise SourceError(path, "no FANToM question sets (no record has full_context, set_id or QA fields)")
        return data

    def _read_set(self, row: Any, index: int, label: str, seen: dict[str, int]) -> Iterator[RecordOrReject]:
        set_ref = f"{label}#{index}"
        if not isinstance(row, dict):
            yield _reject(set_ref, label, "(record)", "expected a JSON object (one question set)", row)
            return
        questions = list(_enumerate_questions(row))
        if not questions:
            yield _reject(set_ref, label, "(record)", "question set has no questions", row)
            return
        try:
            conversation = _conversation(row, index, seen)
        except RecordError as problem:
            for path, _part, qa in questions:
                yield _reject(f"{set_ref}/{path}", label, problem.field, problem.reason, qa)
            return
        for path, part, qa in questions:
            ref = f"{set_ref}/{path}"
            try:
                yield _build(conversation, part, path, qa, ref)
            except RecordError as problem:
                yield _reject(ref, label, problem.field, problem.reason, qa)


def _columns_to_rows(path: Path, data: dict[str, Any]) -> list[Any]:
    """pandas' default `to_json` layout {column: {row: value}} back to a list of rows."""
    index = list(data["full_context"])
    if not all(isinstance(column, dict) for column in data.values()):
        raise SourceError(path, "column layout with a column that is not an object")
    if all(str(key).isdigit() for key in index):
        index.sort(key=int)
    return [{name: column.get(key) for name, column in data.items() if key in column} for key in index]


def _enumerate_questions(row: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(path, part, raw question) for every question of a set, in the original eval's order."""
    for part in PART_ORDER:
        value = row.get(part)
        if value is None:
            continue
        if part in _LIST_PARTS and isinstance(value, list):
            for position, qa in enumerate(value):
                yield f"{part}/{position}", part, qa
        else:  # a single question, or a list part of the wrong type (rejected in _build)
            yield part, part, value


def _conversation(row: dict[str, Any], index: int, seen: dict[str, int]) -> _Conversation:
    set_id = row.get("set_id")
    if isinstance(set_id, bool) or not isinstance(set_id, (str, int)) or not str(set_id).strip():
        raise RecordError("set_id", f"expected a non-empty set id, got {set_id!r}")
    set_id = str(set_id)
    if set_id in seen:
        raise RecordError("set_id", f"duplicate set_id {set_id!r} (first at set {seen[set_id]})")
    seen[set_id] = index
    context = row.get("full_context")
    if not isinstance(context, str) or not context.strip():
        raise RecordError("full_context", "expected the conversation as a non-empty string")
    turns, speakers = _parsed(context)
    if not speakers:
        raise RecordError("full_context", "no 'Speaker: utterance' line found")
    fact = row.get("factQA")
    fact_q = fact.get("question") if isinstance(fact, dict) else None
    fact_a = fact.get("correct_answer") if isinstance(fact, dict) else None
    return _Conversation(
        set_id=set_id,
        context=context,
        turns=[{"speaker": speaker, "text": text} for speaker, text in turns],
        speakers=speakers,
        set_meta={key: value for key, value in row.items() if key not in PART_ORDER and key != "full_context"},
        fact_question=fact_q if isinstance(fact_q, str) and fact_q.strip() else None,
        fact_answer=fact_a if isinstance(fact_a, str) and fact_a.strip() else None,
        binary_full_access={
            part: label
            for part in ("answerabilityQAs_binary", "infoAccessibilityQAs_binary")
            if (label := _full_context_access(row.get(part))) is not None
        },
    )


def _build(conv: _Conversation, part: str, path: str, qa: Any, ref: str) -> dict[str, Any]:
    """One unified record for one question of a set (raises RecordError when it is malformed)."""
    if part in _LIST_PARTS and path == part:
        raise RecordError(part, f"expected a list of questions, got {type(qa).__name__}")
    if not isinstance(qa, dict):
        raise RecordError(part, f"expected a question object, got {type(qa).__name__}")
    raw_question = _text(qa, "question")
    key = f"{conv.set_id}/{path}"
    meta: dict[str, Any] = {**conv.set_meta, "part": part}
    meta.update({name: value for name, value in qa.items() if name != "question"})
    fields: dict[str, Any] = {"question": raw_question, "perspective_chain": [], "is_false_belief": None}

    if part == "factQA":
        fields.update(
            question_type="factual", belief_order=0, answer_format="free_text", answer=_text(qa, "correct_answer")
        )
    elif part == "beliefQAs":
        fields.update(_belief_fields(qa, key))
        fields["perspective_chain"] = perspective_chain(raw_question, conv.speakers, fields["belief_order"])
    else:
        fields.update(_knowledge_fields(conv, part, qa, meta))
        if part.endswith("_binary"):
            fields["perspective_chain"] = perspective_chain(raw_question, conv.speakers, 1)
            meta["missed_info_accessibility_full"] = conv.binary_full_access.get(part)
        if fields["question"] != raw_question:
            meta["raw_question"] = raw_question
    return build_record(
        source=NAME,
        source_version=ADAPTER.version,
        source_key=key,
        source_ref=ref,
        split=UNSPLIT,
        context_kind="dialogue",
        context=conv.context,
        turns=conv.turns,
        n_agents=len(conv.speakers),
        n_events=len(conv.turns),
        meta=meta,
        **fields,
    )


def _belief_fields(qa: dict[str, Any], key: str) -> dict[str, Any]:
    source_type = _text(qa, "question_type")
    access = _BELIEF_TYPE.match(source_type)
    if access is None:
        raise RecordError("question_type", f"expected tom:belief:accessible|inaccessible, got {source_type!r}")
    tom_type = _text(qa, "tom_type")
    order = _TOM_ORDER.match(tom_type)
    if order is None:
        raise RecordError("tom_type", f"expected first-order... or second-order..., got {tom_type!r}")
    correct, wrong = _text(qa, "correct_answer"), _text(qa, "wrong_answer")
    if correct.strip() == wrong.strip():
        raise RecordError("wrong_answer", "same text as correct_answer; the choice would be ambiguous")
    belief_order = _ORDER_WORDS[order["word"].lower()]
    return {
        "question_type": question_type_of_order(belief_order),
        "belief_order": belief_order,
        "is_false_belief": access["access"] == "inaccessible",
        "answer_format": "multiple_choice",
        "options": [wrong, correct] if gold_goes_last(key) else [correct, wrong],
        "answer": correct,
    }


def _knowledge_fields(conv: _Conversation, part: str, qa: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """Answerability / info-accessibility questions, list or yes/no, framed by their fact."""
    raw_question = qa["question"]
    if conv.fact_question is None:
        raise RecordError("factQA", "the set's factQA question is missing, and this question refers to it")
    if part.startswith("answerability"):
        question_type, question = "answerability", f"Target: {conv.fact_question}\n{raw_question}"
    else:
        if conv.fact_answer is None:
            raise RecordError("factQA", "the set's factQA answer is missing, and this question refers to it")
        question_type = "info_accessibility"
        question = f"Information: {conv.fact_question} {conv.fact_answer}\n{raw_question}"
    fields: dict[str, Any] = {"question": question, "question_type": question_type, "belief_order": 1}
    if part.endswith("_list"):
        correct, wrong = _names(qa, "correct_answer"), _names(qa, "wrong_answer")
        # the original eval relabels a list question on the full context when anyone is unaware
        meta["missed_info_accessibility_full"] = "inaccessible" if wrong else qa.get("missed_info_accessibility")
        fields.update(
            answer_format="list",
            answer=", ".join(correct),
            answer_list=correct,
            options=sorted(set(correct) | set(wrong), key=lambda name: (name.casefold(), name)),
        )
    else:
        label = qa.get("correct_answer")
        normalized = _BINARY.get(label.strip().lower()) if isinstance(label, str) else None
        if normalized is None:
            raise RecordError("correct_answer", f"expected yes, no or no:long, got {label!r}"[:200])
        fields.update(answer_format="yes_no", answer=normalized, options=["yes", "no"])
    return fields


def _reject(ref: str, file: str, field_name: str, reason: str, raw: Any) -> Reject:
    return Reject(NAME, ref, file, ref.partition("#")[2], field_name, reason, Reject.raw_of(raw))


ADAPTER = FantomAdapter(
    name=NAME,
    version="1.0-v2",
    license="MIT (evaluation only)",
    hub_repo=None,
    hub_patterns=[FILE_NAME, f"**/{FILE_NAME}"],
)
