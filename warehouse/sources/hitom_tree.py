"""HiToM's text tree (`Hi-ToM_data/<Tell|No_Tell>/<CoT|MC>/length_N/sample_N/order_N.txt`): one
question per file, its place in the tree (deception, prompting, length, sample, order) in `meta`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from tomforge.warehouse.sources.base import RecordError, Reject, SourceError, read_text, relative_name
from tomforge.warehouse.sources.hitom_grammar import ParseCache, split_text_file
from tomforge.warehouse.sources.hitom_records import NAME, Pending, pending

TREE_NAME = "Hi-ToM_data"
_LAYOUT = re.compile(r"(?:^|/)(Tell|No_Tell)/(CoT|MC)/length_(\d+)/sample_(\d+)/order_(\d+)\.txt$")
_ORDER_FILE = re.compile(r"order_(\d+)\.txt$")
_PROMPT_DIRS = {"CoT": "CoTP", "MC": "VP"}


def text_record(path: Path, root: Path, parser: ParseCache) -> Pending | Reject:
    """One text file's question (or its reject)."""
    text = read_text(path)
    name = relative_name(path, root)
    try:
        sections = split_text_file(text)
        if sections["story"] is None and "question" not in sections:
            raise SourceError(path, "not a HiToM text file: no 'Story:' or 'Question:' line")
        for field in ("story", "question", "answer", "choices"):
            if not sections.get(field):
                raise RecordError(field, f"missing {field.capitalize()} section")
        layout = _LAYOUT.search(path.as_posix())
        meta: dict[str, Any] = {"layout": "text"}
        if layout:
            tell, prompt, length, sample, order_text = layout.groups()
            meta.update(
                prompting_type=_PROMPT_DIRS[prompt],
                deception=tell == "Tell",
                story_length=int(length),
                sample=int(sample),
            )
            order = int(order_text)
        else:
            file_order = _ORDER_FILE.search(path.name)
            order = int(file_order.group(1)) if file_order else len(parser.question(sections["question"]).chain)
        meta.update(
            question_order=order,
            instruction=" ".join(sections["instruction"]) or None,
            note=sections["note"],
            choices=sections["choices"],
        )
        return pending(
            parser,
            name,
            "\n".join(sections["story"]),
            sections["question"],
            sections["choices"],
            sections["answer"],
            order,
            meta,
        )
    except RecordError as bad:
        return Reject(NAME, name, name, name, bad.field, bad.reason, text)


def text_tree(root: Path) -> Path | None:
    """The text tree `root` is or holds, if any."""
    if root.name == TREE_NAME or (root / "Tell").is_dir() or (root / "No_Tell").is_dir():
        return root
    tree = root / TREE_NAME
    return tree if tree.is_dir() else None


def tree_files(tree: Path, root: Path) -> list[Path]:
    """The tree's question files in a fixed order (their path under `root`)."""
    return sorted(tree.rglob("order_*.txt"), key=lambda path: path.relative_to(root).as_posix())


def tree_records(tree: Path, root: Path, parser: ParseCache) -> Iterator[Pending | Reject]:
    return (text_record(path, root, parser) for path in tree_files(tree, root))
