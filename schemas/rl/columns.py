"""RL-ready columns for one unified record, the same for verl, TRL and OpenRLHF.

verl reads `data_source`, `prompt` (chat messages), `ability`, `reward_model` {style,
ground_truth} and `extra_info`; TRL reads `prompt` and passes every other column to the reward
functions; OpenRLHF reads a prompt key and a label key (`answer`). Column types never vary
between rows, splits or configs (`RL_SCHEMA`): fields whose shape depends on the answer format
travel as one JSON string (`reward_model.ground_truth`) so arrow sees one type.

Location questions whose story the world model holds (generated ones, and HiToM / ToMi /
ExploreToM and their variants) also carry their belief-state rationale: `rationale` (the structure,
JSON), `rationale_text` (one text per form, the SFT targets' reasoning), and the world itself in the
ground truth (key `world`), which the process reward checks claims against. The columns are a
contract of the release, so this module imports nothing above it: whoever builds a release passes
the rationales in (`hub.export` passes `generators.rationale_text.rationale_columns`); without
them the two columns are null and the ground truth carries no world.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import pyarrow as pa

from tomforge.schemas.rl.prompts import build_messages, option_labels

ABILITY = "theory_of_mind"
REWARD_STYLE = "rule"
DATA_SOURCE_PREFIX = "tomforge/"
RL_COLUMNS = ("data_source", "prompt", "ability", "reward_model", "extra_info", "answer", "rationale", "rationale_text")

_STR_LIST = pa.list_(pa.string())
EXTRA_INFO_TYPE = pa.struct(
    [
        ("split", pa.string()),
        ("index", pa.int64()),
        ("item_id", pa.string()),
        ("context_id", pa.string()),
        ("source", pa.string()),
        ("belief_order", pa.int64()),
        ("question_type", pa.string()),
        ("answer_format", pa.string()),
        ("options", _STR_LIST),
        ("option_labels", _STR_LIST),
        ("answer_index", pa.int64()),
        ("answer_list", _STR_LIST),
        ("is_false_belief", pa.bool_()),
        ("perspective_chain", _STR_LIST),
        ("template_id", pa.string()),
    ]
)
RATIONALE_FORMS = ("events", "beliefs", "curriculum", "steps")  # `generators.rationale_text.FORMS` renders each
RATIONALE_TEXT_TYPE = pa.struct([(form, pa.string()) for form in RATIONALE_FORMS])
RL_SCHEMA = pa.schema(
    [
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", EXTRA_INFO_TYPE),
        ("answer", pa.string()),
        ("rationale", pa.string()),
        ("rationale_text", RATIONALE_TEXT_TYPE),
    ]
)


def _str_list(value: Any) -> list[str]:
    """Lists may arrive as None, tuples or numpy arrays (records read back from parquet)."""
    return [] if value is None else [str(v) for v in list(value)]


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def canonical_answer(record: dict[str, Any]) -> str:
    """The one answer text: the option at `answer_index` for multiple choice, the items joined
    by ', ' for lists, else `answer` as stored."""
    answer_format = record["answer_format"]
    options = _str_list(record.get("options"))
    index = _opt_int(record.get("answer_index"))
    if answer_format == "multiple_choice" and index is not None and 0 <= index < len(options):
        return options[index]
    if answer_format == "list" and record.get("answer_list") is not None:
        return ", ".join(_str_list(record["answer_list"]))
    return str(record["answer"])


def ground_truth(record: dict[str, Any], world: dict[str, Any] | None = None) -> str:
    """JSON (sorted keys) with what the reward needs: the format, the answer text, the options
    with their letters and index (so a letter or the option text both score), the list items;
    and the world (`WorldQuestion.to_json`) when the item has one, for the process reward."""
    options = _str_list(record.get("options"))
    payload: dict[str, Any] = {
        "answer_format": record["answer_format"],
        "answer": canonical_answer(record),
        "options": options,
        "option_labels": option_labels(len(options)),
        "answer_index": _opt_int(record.get("answer_index")),
        "answer_list": None if record.get("answer_list") is None else _str_list(record["answer_list"]),
    }
    if world is not None:
        payload["world"] = world
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class RationaleColumns:
    """One record's rationale as the release carries it: the world (for the process reward), the
    structure and one text per form of `RATIONALE_FORMS`."""

    world: dict[str, Any]
    rationale: dict[str, Any]
    texts: dict[str, str]


Rationales = Callable[[dict[str, Any]], "RationaleColumns | None"]  # a record -> its rationale, or None


def rl_columns(
    record: dict[str, Any], *, index: int | None = None, rationales: Rationales | None = None
) -> dict[str, Any]:
    """The RL-ready columns for one unified record (types as in `RL_SCHEMA`).

    `index` is the row's position in its split (verl's `extra_info.index`); None when unknown.
    The flat `answer` equals the record's own answer text (list items joined by ', ').
    """
    options = _str_list(record.get("options"))
    answer_list = record.get("answer_list")
    rationale = rationales(record) if rationales is not None else None
    world = rationale.world if rationale is not None else None
    return {
        "data_source": DATA_SOURCE_PREFIX + str(record["source"]),
        "prompt": build_messages(record),
        "ability": ABILITY,
        "reward_model": {"style": REWARD_STYLE, "ground_truth": ground_truth(record, world)},
        "extra_info": {
            "split": str(record["split"]),
            "index": index,
            "item_id": str(record["item_id"]),
            "context_id": str(record.get("context_id") or ""),
            "source": str(record["source"]),
            "belief_order": _opt_int(record.get("belief_order")),
            "question_type": str(record["question_type"]),
            "answer_format": str(record["answer_format"]),
            "options": options,
            "option_labels": option_labels(len(options)),
            "answer_index": _opt_int(record.get("answer_index")),
            "answer_list": None if answer_list is None else _str_list(answer_list),
            "is_false_belief": None if record.get("is_false_belief") is None else bool(record["is_false_belief"]),
            "perspective_chain": _str_list(record.get("perspective_chain")),
            "template_id": None if record.get("template_id") is None else str(record["template_id"]),
        },
        "answer": canonical_answer(record),
        "rationale": _json(rationale.rationale) if rationale is not None else None,
        "rationale_text": {form: rationale.texts[form] for form in RATIONALE_FORMS} if rationale is not None else None,
    }


def rl_table(records: Iterable[dict[str, Any]], rationales: Rationales | None = None) -> pa.Table:
    """RL columns of many records (index = position) as an arrow table with `RL_SCHEMA`,
    so an all-null column (say belief_order) keeps its type in every split."""
    rows = [rl_columns(record, index=i, rationales=rationales) for i, record in enumerate(records)]
    return pa.Table.from_pylist(rows, schema=RL_SCHEMA)


def with_rl_columns(table: pa.Table, rationales: Rationales | None = None) -> pa.Table:
    """A published table (unified record columns) with the RL columns added; `answer` is
    replaced by the canonical answer text, which equals it for every well-formed record."""
    rl = rl_table(table.to_pylist(), rationales)
    out = table
    for name in RL_COLUMNS:
        column = rl.column(name)
        if name in out.column_names:
            out = out.set_column(out.column_names.index(name), name, column)
        else:
            out = out.append_column(pa.field(name, column.type), column)
    return out


def decode_ground_truth(value: str | dict[str, Any]) -> dict[str, Any]:
    """Inverse of `ground_truth`; a plain (non-JSON) string is taken as a free-text answer so the
    reward also works on datasets that carry only the answer text."""
    if isinstance(value, dict):
        return value
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError):
        decoded = None
    if not isinstance(decoded, dict) or "answer" not in decoded:
        return {
            "answer_format": "free_text",
            "answer": str(value),
            "options": [],
            "option_labels": [],
            "answer_index": None,
            "answer_list": None,
        }
    return decoded


__all__: Sequence[str] = (
    "RL_SCHEMA",
    "RL_COLUMNS",
    "rl_columns",
    "rl_table",
    "with_rl_columns",
    "ground_truth",
    "decode_ground_truth",
    "canonical_answer",
)
