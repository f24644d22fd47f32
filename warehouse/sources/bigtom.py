"""BigToM adapter: `bigtom.csv` (cicl-stanford/procedural-evals-tom) -> the derived test items.

The published file holds one causal template per row (19 `;`-separated fields, no header, no
quoting). The benchmark's test items are not rows but are derived from them by the repo's
`code/src/generate_conditions.py`; this module reproduces that derivation exactly, so that the
warehouse holds the items models were evaluated on:

- for init_belief in (0, 1) (hide / show the story's initial-belief sentence, part 3 of the
  story split on "."), for variable in (forward_belief, forward_action, backward_belief), for
  condition in (true_belief, false_belief, true_control, false_control): a story built from the
  story parts plus the awareness sentence (forward) or the action (backward), or, for the
  controls, the first parts plus the random event and its awareness sentence; the gold answer
  is the "aware" answer for true_belief and the "not aware" answer otherwise (a random event
  changes nothing, so the initial belief stands);
- plus percept_to_belief (init_belief 1, true_belief only): the first three story parts and
  the belief question, gold = the "aware" belief answer, as the original code writes it.
  That is 25 items per row (200 rows -> the published 5,000 items). Note, reproduced as is:
  the percept_to_belief gold does not follow from its truncated story, and the two backward
  belief controls produce the same story and gold.

The original shuffles the two options with `random.shuffle` at evaluation time; here their
order is fixed by a hash of the item key, so it is deterministic and the gold is not always
first. question_type: first_order_belief for the belief variables, action for forward_action;
belief_order 1 for all (predicting an action from what the agent believes is a first-order
question, as ExploreToM's and ToMi's "where will X search" are); is_false_belief True for the
false_belief condition (the agent did not perceive the event), False for true_belief and both
controls, null for percept_to_belief. Every raw field is kept in `meta`.

A row with the wrong number of fields, or a story with fewer than five "."-separated parts (the
original would fail on it), gives one Reject per item it should have given (25, keyed as those
items would be), all naming the field: so every count is in questions, and the input's count
(rows x 25, `count_input`) is checked against loaded + rejected. A file where fewer than half of
the rows have 19 fields is not BigToM and raises SourceError.
"""

from __future__ import annotations

import hashlib
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
    relative_name,
)

NAME = "bigtom"
FIELDS: tuple[str, ...] = (
    "story",
    "aware_of_event",
    "not_aware_of_event",
    "action_aware",
    "action_not_aware",
    "belief_question",
    "desire_question",
    "action_question",
    "belief_answer_aware",
    "desire_answer_aware",
    "action_answer_aware",
    "belief_answer_not_aware",
    "desire_answer_not_aware",
    "action_answer_not_aware",
    "random_event",
    "aware_of_random_event",
    "not_aware_of_random_event",
    "unused_18",
    "unused_19",
)
INIT_BELIEFS = (0, 1)
VARIABLES = ("forward_belief", "forward_action", "backward_belief", "percept_to_belief")
CONDITIONS = ("true_belief", "false_belief", "true_control", "false_control")
ITEMS_PER_ROW = 3 * len(CONDITIONS) * len(INIT_BELIEFS) + 1
_USED = (
    "story",
    "aware_of_event",
    "not_aware_of_event",
    "action_aware",
    "action_not_aware",
    "belief_question",
    "action_question",
    "belief_answer_aware",
    "action_answer_aware",
    "belief_answer_not_aware",
    "action_answer_not_aware",
    "random_event",
    "aware_of_random_event",
    "not_aware_of_random_event",
)


def derive_items(row: dict[str, str]) -> Iterator[tuple[str, str, str, str, str, str, str]]:
    """The items generate_conditions.py writes for one row, in its order.

    Yields `(key, variable, condition, story, question, gold, wrong)`; key is the original's
    condition folder name `{init_belief}_{variable}_{condition}`.
    """
    parts = row["story"].split(".")
    if len(parts) < 5:
        raise RecordError("story", f"needs at least 5 '.'-separated parts, found {len(parts)}")
    belief = (row["belief_question"], row["belief_answer_aware"], row["belief_answer_not_aware"])
    action = (row["action_question"], row["action_answer_aware"], row["action_answer_not_aware"])
    awareness = (row["aware_of_event"], row["not_aware_of_event"])
    awareness_random = (row["aware_of_random_event"], row["not_aware_of_random_event"])
    actions = (row["action_aware"], row["action_not_aware"])
    for init_belief in INIT_BELIEFS:
        for variable in VARIABLES:
            if variable == "percept_to_belief":
                if init_belief == 1:
                    question, aware, not_aware = belief
                    story = parts[0] + "." + parts[1] + "." + parts[2] + "."
                    yield (
                        f"{init_belief}_{variable}_true_belief",
                        variable,
                        "true_belief",
                        story,
                        question,
                        aware,
                        not_aware,
                    )
                continue
            question, aware, not_aware = action if variable == "forward_action" else belief
            shown = [parts[0], parts[1], parts[2]] + ([parts[3]] if init_belief == 1 else []) + [parts[4]]
            story = ".".join(shown) + "."
            control = ".".join(parts[: 3 + init_belief] + [" " + row["random_event"]])
            backward = variable == "backward_belief"
            stories = {
                "true_belief": f"{story} {actions[0] if backward else awareness[0]}",
                "false_belief": f"{story} {actions[1] if backward else awareness[1]}",
                "true_control": f"{control} {actions[1] if backward else awareness_random[0]}",
                "false_control": f"{control} {actions[1] if backward else awareness_random[1]}",
            }
            for condition in CONDITIONS:
                gold, wrong = (aware, not_aware) if condition == "true_belief" else (not_aware, aware)
                yield (
                    f"{init_belief}_{variable}_{condition}",
                    variable,
                    condition,
                    stories[condition],
                    question,
                    gold,
                    wrong,
                )


ITEM_KEYS: tuple[str, ...] = tuple(  # the 25 item keys of every row, in derive_items' order
    key for key, *_ in derive_items({**dict.fromkeys(FIELDS, "x"), "story": "a. b. c. d. e."})
)


def ordered_options(key: str, gold: str, wrong: str) -> list[str]:
    """Two options in an order fixed by the item key: deterministic, gold first about half the time."""
    gold_first = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()[0] & 1
    return [gold, wrong] if gold_first else [wrong, gold]


def agent_of(row: dict[str, str]) -> list[str]:
    """The protagonist: the subject of the belief answer ("Noor believes ..."), else the story's first word."""
    answer = row["belief_answer_aware"].strip()
    name = answer.split(" believes", 1)[0] if " believes" in answer else row["story"].strip().split(" ", 1)[0]
    name = name.strip(" .,;:")
    return [name] if name else []


class BigToMAdapter(Adapter):
    """Reads `bigtom.csv` (or a folder holding it, e.g. the repo's `data/bigtom/`)."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        root = Path(root)
        for path in _files(root):
            yield from _read_file(path, relative_name(path, root), self.version)

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: the non-blank lines of each file
        times the 25 items the benchmark derives from every row."""
        lines = sum(
            1 for path in _files(Path(root)) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()
        )
        return lines * ITEMS_PER_ROW


def _files(root: Path) -> list[Path]:
    if not root.exists():
        raise SourceError(root, "path not found")
    if root.is_file():
        return [root]
    files = sorted(root.rglob("bigtom.csv")) or sorted(root.glob("*.csv"))
    if not files:
        raise SourceError(root, "no bigtom.csv (or other .csv) file found in the folder")
    return files


def _lines(path: Path) -> list[str]:
    text = read_text(path)  # SourceError when not UTF-8
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped:
        raise SourceError(path, "empty file: no rows")
    if stripped[0] in "{[":
        raise SourceError(path, "looks like JSON, not the BigToM ';'-separated file")
    lines = [line.removesuffix("\r") for line in text.lstrip("\ufeff").split("\n")]
    lines = [line for line in lines if line.strip()]
    widths = [line.count(";") + 1 for line in lines]
    good = sum(1 for width in widths if width == len(FIELDS))
    if good * 2 < len(lines):
        seen = sorted(set(widths))[:5]
        raise SourceError(
            path,
            f"not BigToM: {good} of {len(lines)} rows have {len(FIELDS)} ';'-separated fields (found widths {seen})",
        )
    return lines


def _read_file(path: Path, file: str, version: str) -> Iterator[RecordOrReject]:
    for index, line in enumerate(_lines(path)):
        ref = f"{file}#row{index}"
        values = line.split(";")
        try:
            if len(values) != len(FIELDS):
                raise RecordError("row", f"expected {len(FIELDS)} ';'-separated fields, found {len(values)}")
            row = dict(zip(FIELDS, values))
            for name in _USED:
                if not row[name].strip():
                    raise RecordError(name, "empty value")
            items = list(derive_items(row))
        except RecordError as exc:  # one reject per item this row should have given
            for key in ITEM_KEYS:
                yield Reject(NAME, f"{ref}/{key}", file, f"row{index}/{key}", exc.field, exc.reason, line)
            continue
        agent = agent_of(row)
        for key, variable, condition, story, question, gold, wrong in items:
            item_ref = f"{ref}/{key}"
            if gold == wrong:
                yield Reject(
                    NAME,
                    item_ref,
                    file,
                    f"row{index}/{key}",
                    _answer_field(variable),
                    "aware and not-aware answers are identical",
                    line,
                )
                continue
            meta: dict[str, Any] = dict(row)
            meta.update(init_belief=int(key[0]), variable=variable, condition=condition)
            yield build_record(
                source=NAME,
                source_version=version,
                source_key=item_ref,
                source_ref=item_ref,
                split=UNSPLIT,
                context=story,
                question=question,
                question_type="action" if variable == "forward_action" else question_type_of_order(1),
                answer=gold,
                answer_format="multiple_choice",
                options=ordered_options(item_ref, gold, wrong),
                belief_order=1,
                perspective_chain=agent,
                is_false_belief=None if variable == "percept_to_belief" else condition == "false_belief",
                meta=meta,
            )


def _answer_field(variable: str) -> str:
    return "action_answer_aware" if variable == "forward_action" else "belief_answer_aware"


ADAPTER = BigToMAdapter(
    name=NAME,
    version="fe647d6-v2",
    license="MIT",
    hub_repo=None,
    hub_patterns=None,
)
