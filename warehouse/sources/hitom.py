"""HiToM adapter: `Hi-ToM_data.json` and the `Hi-ToM_data/` text tree -> unified records.

HiToM repeats every story and question under two prompting styles (CoTP and VP, where VP
stories start with an instruction sentence). The instruction goes to `meta` and the context
keeps only the numbered story lines, so both styles (and the text tree) share one
`context_id`: that is how a leaking row-level split is detected later.

The parts: `hitom_grammar.py` (story, question, choices and text-file grammar; also the real-story
parser's), `hitom_records.py` (the fields both layouts share, the false-belief pass), `hitom_json.py`
(the JSON file, the ingest hot path) and `hitom_tree.py` (the text tree). This module picks the
layouts of an input and composes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from tomforge.warehouse.batch import expand
from tomforge.warehouse.sources.base import Adapter, RecordOrReject, Reject, SourceError
from tomforge.warehouse.sources.hitom_grammar import ParseCache
from tomforge.warehouse.sources.hitom_json import JSON_NAME, json_batches, json_length, json_rows
from tomforge.warehouse.sources.hitom_records import NAME, SPLIT, VERSION, Pending, finish
from tomforge.warehouse.sources.hitom_tree import TREE_NAME, text_record, text_tree, tree_records

__all__ = ["ADAPTER", "JSON_NAME", "NAME", "SPLIT", "TREE_NAME", "HiToMAdapter"]


class HiToMAdapter(Adapter):
    """Reads a HiToM release: the JSON file, the text tree, one of their files, or a folder with both."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        return expand(self.read_columns(root))

    def read_columns(self, root: Path) -> Iterator[Any]:
        """What `read` yields, with the records of a JSON file gathered into column batches."""
        root = Path(root)
        if not root.exists():
            raise SourceError(root, "path not found")
        parser = ParseCache()
        if root.is_file():
            if root.suffix == ".json":
                yield from json_batches(root, root, parser)
            elif root.suffix == ".txt":
                yield from finish([text_record(root, root, parser)])
            else:
                raise SourceError(root, f"not a HiToM file: expected {JSON_NAME} or an order_N.txt file")
            return
        json_file = root / JSON_NAME
        tree = text_tree(root)
        if tree is None:
            if not json_file.is_file():
                raise SourceError(root, f"no {JSON_NAME} and no {TREE_NAME}/ text tree in this folder")
            yield from json_batches(json_file, root, parser)
            return
        parts: list[Iterable[Pending | Reject]] = [json_rows(json_file, root, parser)] if json_file.is_file() else []
        parts.append(tree_records(tree, root, parser))
        yield from finish(item for part in parts for item in part)

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: the length of each JSON file's
        `data` array (read by the json module) plus the number of `order_*.txt` files in the tree."""
        root = Path(root)
        if root.is_file():
            return json_length(root) if root.suffix == ".json" else 1
        json_file, tree = root / JSON_NAME, text_tree(root)
        count = json_length(json_file) if json_file.is_file() else 0
        return count + (sum(1 for _ in tree.rglob("order_*.txt")) if tree is not None else 0)

    def split_input(self, root: Path) -> Path | None:
        """The one file this input is read from when `read_part` can split it (a JSON file on its own)."""
        root = Path(root)
        if root.is_file():
            return root if root.suffix == ".json" else None
        json_file = root / JSON_NAME
        return json_file if root.is_dir() and json_file.is_file() and text_tree(root) is None else None

    def read_part(self, root: Path, part: int, parts: int) -> Iterator[Any]:
        """What `read_columns(root)` yields for rows [n * part // parts, n * (part + 1) // parts) of its JSON file."""
        path = self.split_input(root)
        if path is None:
            raise SourceError(root, "not a HiToM JSON file on its own: cannot be read in parts")
        yield from json_batches(path, Path(root), ParseCache(), part, parts)


ADAPTER = HiToMAdapter(
    name=NAME,
    version=VERSION,
    license="Apache-2.0",
    hub_repo="Hi-ToM/Hi-ToM_Dataset",
    hub_patterns=[JSON_NAME, f"{TREE_NAME}/*"],
)
