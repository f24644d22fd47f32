"""RL training files adapter: verl / TRL parquet, JSON lines, `datasets` folders, Hub datasets.

One unified record per row, so that `tomforge audit` can hold a training file against a
benchmark:
- context and question: plain `story` and `question` columns (or `extra_info.story` and
  `extra_info.question`) when a row has both, else split from
  the prompt's user text by markers (`rl_prompt.split_prompt`); a prompt the markers do not split
  keeps the whole user text as its context and still loads;
- answer: the first of `ANSWER_FIELDS` that holds a value (or `answer_field` when given; dotted
  paths reach into structs), in any JSON shape (`rl_prompt.answer_of`);
- `meta`: the whole row, every column as read (so `data_source`, the system message inside
  `prompt`, `extra_info`, `ability`, the raw ground truth with its type), plus `meta.tomforge_rl`:
  how the row was read (`prompt_split`: story_and_question / question_only / none / columns, the
  answer field used). The row's origin is `meta.data_source`; `source_ref` is `file#rowN`.
- question_type and belief_order from `extra_info` when it names them (tomforge's own export
  does), else "unknown" and null; split from `split` when given, else the file's place
  (`rl_rows.split_of`), else "train".
A row without a prompt (or story/question columns) or without an answer is a reject naming the
file, row and field.
"""

from __future__ import annotations

import base64
import datetime
import decimal
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from tomforge.schemas.record import build_record
from tomforge.schemas.vocabulary import QUESTION_TYPES, question_type_of_order
from tomforge.warehouse.sources.base import Adapter, RecordError, RecordOrReject, Reject, relative_name
from tomforge.warehouse.sources.rl_prompt import (
    SPLIT_BOTH,
    SPLIT_NONE,
    SPLIT_QUESTION_ONLY,
    Answer,
    PromptMarkers,
    SplitPrompt,
    answer_of,
    ignored_parts,
    split_prompt,
)
from tomforge.warehouse.sources.rl_rows import BadRow, count_rows, input_files, read_rows, split_choice

NAME = "rlfiles"
DEFAULT_SPLIT = "train"
ANSWER_FIELDS = (
    "reward_model.ground_truth",
    "answer",
    "ground_truth",
    "solution",
    "completion",
    "extra_info.answer",
    "extra_info.ground_truth",
)
ORDER_FIELDS = ("belief_order", "order", "question_order", "tom_order")
UNKNOWN_TYPE = "unknown"
SPLIT_COLUMNS = "columns"


@dataclass(frozen=True)
class RLFileOptions:
    """How rows are read: the split to file them under (None: from the file's place), the answer
    field (None: the first of `ANSWER_FIELDS` present), the prompt markers, the prompt's column,
    and the (story, question) column pairs used instead of the prompt when a row has both."""

    split: str | None = None
    answer_field: str | None = None
    markers: PromptMarkers = field(default_factory=PromptMarkers)
    prompt_field: str = "prompt"
    text_columns: tuple[tuple[str, str], ...] = (("story", "question"), ("extra_info.story", "extra_info.question"))


def field_value(row: dict[str, Any], path: str) -> Any:
    """`row[a][b]` for the path "a.b" (a column named with a dot wins); None where absent."""
    if path in row:
        return row[path]
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def jsonable(value: Any) -> Any:
    """A row value as JSON can hold it: bytes as base64, decimals as text, dates as ISO text."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return str(value) if isinstance(value, datetime.timedelta) else value.isoformat()
    return value


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, (str, list, dict)) and not value)


class RLFilesAdapter(Adapter):
    """Reads RL training files; `configured` gives a copy with other `RLFileOptions`."""

    binary_formats = frozenset({"Parquet"})

    options: RLFileOptions = RLFileOptions()  # frozen: one shared default is safe

    def configured(self, options: RLFileOptions) -> "RLFilesAdapter":
        copy = replace(self)
        copy.options = options
        return copy

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        root = Path(root)
        for path in input_files(root):
            file = relative_name(path, root)
            split, _ = self.split_for(path, root)
            for index, row in enumerate(read_rows(path)):
                yield self._produce(row, file, index, split)

    def split_for(self, path: Path, root: Path) -> tuple[str, str]:
        """The split a file's rows go under and why: `--split`, else what its place names
        (`rl_rows.split_choice`), else the default."""
        if self.options.split:
            return self.options.split, "from --split"
        choice = split_choice(path, root)
        if choice.split is not None:
            return choice.split, choice.reason
        return DEFAULT_SPLIT, f"default: {choice.reason}"

    def count_input(self, root: Path) -> int:
        """Rows in the files, from footers and line counts (`rl_rows.count_rows`), not the parser."""
        return sum(count_rows(path) for path in input_files(Path(root)))

    def load_notes(self, items: Any, root: Path) -> list[str]:
        """The split of each file and why (one line per file, with its rows loaded), then how the
        loaded rows' story and question were found and which held non-text content parts, counted
        from the staged items (the same counts `SELECT meta->'tomforge_rl'->>'prompt_split', count(*)
        ... GROUP BY 1` gives)."""
        import duckdb

        con = duckdb.connect()
        try:
            con.register("staged_items", items)
            counts = dict(
                con.execute(
                    "SELECT json_extract_string(meta, '$.tomforge_rl.prompt_split'), count(*) FROM staged_items GROUP BY 1"
                ).fetchall()
            )
            per_file = dict(
                con.execute(
                    "SELECT split_part(source_ref, '#row', 1), count(*) FROM staged_items GROUP BY 1"
                ).fetchall()
            )
            ignored = con.execute(
                "SELECT part, count(*) FROM (SELECT unnest(CAST(json_extract(meta, '$.tomforge_rl.ignored_parts') "
                "AS VARCHAR[])) AS part FROM staged_items) GROUP BY 1 ORDER BY 1"
            ).fetchall()
            with_ignored = con.execute(
                "SELECT count(*) FROM staged_items WHERE json_extract(meta, '$.tomforge_rl.ignored_parts') IS NOT NULL"
            ).fetchall()[0][0]
        finally:
            con.close()
        lines = []
        root = Path(root)
        for path in input_files(root):
            file = relative_name(path, root)
            split, reason = self.split_for(path, root)
            n = per_file.get(file, 0)
            lines.append(f"{self.name}: {file} -> split {split} ({reason}; {n} row{'' if n == 1 else 's'} loaded)")
        total = sum(counts.values())
        if with_ignored:
            lines.append(
                f"{self.name}: {with_ignored} of {total} loaded rows hold content parts that are not text "
                f"({', '.join(f'{part} {n}' for part, n in ignored)}), left out: only text parts are read"
            )
        return lines + [
            f"{self.name}: {counts.get(SPLIT_NONE, 0)} of {total} loaded rows keep the whole prompt as their context "
            f"(no story/question markers found: meta.tomforge_rl.prompt_split = 'none'); "
            f"{counts.get(SPLIT_BOTH, 0)} split at story and question markers, "
            f"{counts.get(SPLIT_QUESTION_ONLY, 0)} at the question marker only, "
            f"{counts.get(SPLIT_COLUMNS, 0)} read from story/question columns"
        ]

    def _produce(self, row: Any, file: str, index: int, split: str) -> RecordOrReject:
        ref = f"{file}#row{index}"
        if isinstance(row, BadRow):
            return Reject(NAME, ref, file, f"row{index}", "row", row.reason, row.raw)
        try:
            return self._record(row, ref, split)
        except RecordError as bad:
            return Reject(NAME, ref, file, f"row{index}", bad.field, bad.reason, Reject.raw_of(jsonable(row)))

    def _text_of(self, row: dict[str, Any]) -> SplitPrompt:
        for story_field, question_field in self.options.text_columns:
            story, question = field_value(row, story_field), field_value(row, question_field)
            if isinstance(story, str) and isinstance(question, str) and story.strip() and question.strip():
                return SplitPrompt(story, question, SPLIT_COLUMNS)
        prompt = field_value(row, self.options.prompt_field)
        if not _present(prompt):
            raise RecordError(self.options.prompt_field, "no prompt (null or empty) and no story/question columns")
        return split_prompt(prompt, self.options.markers)

    def _answer_of(self, row: dict[str, Any]) -> tuple[str, Answer]:
        names = (self.options.answer_field,) if self.options.answer_field else ANSWER_FIELDS
        for name in names:
            value = field_value(row, name)
            if _present(value) or self.options.answer_field:
                return name, answer_of(value, name)
        raise RecordError(names[0], f"no answer: none of {', '.join(names)} holds a value")

    def _record(self, row: dict[str, Any], ref: str, split: str) -> dict[str, Any]:
        row = jsonable(row)  # once: meta keeps it, and prompt and answer are read from it
        text = self._text_of(row)
        answer_field, answer = self._answer_of(row)
        extra = field_value(row, "extra_info")
        extra = extra if isinstance(extra, dict) else {}
        order = next(
            (
                extra[name]
                for name in ORDER_FIELDS
                if isinstance(extra.get(name), int) and not isinstance(extra[name], bool)
            ),
            None,
        )
        order = order if order is not None and order >= 0 else None
        named_type = extra.get("question_type")
        question_type = (
            named_type
            if named_type in QUESTION_TYPES
            else question_type_of_order(order)
            if order is not None
            else UNKNOWN_TYPE
        )
        meta = dict(row)
        meta["tomforge_rl"] = {"prompt_split": text.how, "answer_field": answer_field, "story_marker": text.marker}
        left_out = ignored_parts(field_value(row, self.options.prompt_field)) if text.how != SPLIT_COLUMNS else []
        if left_out:  # non-text content parts (images, audio): named, so that the load can say so
            meta["tomforge_rl"]["ignored_parts"] = left_out
        return build_record(
            source=NAME,
            source_version=self.version,
            source_key=ref,
            source_ref=ref,
            split=split,
            context=text.context,
            question=text.question,
            question_type=question_type,
            context_kind="dialogue" if text.turns else "story",
            turns=text.turns,
            belief_order=order,
            answer=answer.answer,
            answer_format=answer.answer_format,
            options=answer.options,
            answer_index=answer.answer_index,
            answer_list=answer.answer_list,
            meta=meta,
        )


ADAPTER = RLFilesAdapter(
    name=NAME,
    version="1",
    license="as published (see the files' own card)",
    hub_repo=None,
    hub_patterns=["*.parquet", "*.jsonl", "*.json", "*.arrow"],
)
