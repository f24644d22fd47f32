"""The one adapter contract (`warehouse.sources.base.Adapter`) and the question-type vocabulary."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tomforge.schemas.record import build_record
from tomforge.schemas.vocabulary import QUESTION_TYPES, question_type_of_order
from tomforge.warehouse import parallel
from tomforge.warehouse.load import info_of
from tomforge.warehouse.sources import SOURCE_NAMES, get_adapter
from tomforge.warehouse.sources.base import Adapter, RecordError, RecordOrReject, Reject


class TwoLineAdapter(Adapter):
    """A minimal adapter: only `read` and `count_input`; every line of a file is one question, and a
    line without '?' is a malformed record."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        for number, line in enumerate(Path(root).read_text(encoding="utf-8").splitlines()):
            try:
                if "?" not in line:
                    raise RecordError("question", "no question mark")
                yield build_record(
                    source=self.name,
                    source_version=self.version,
                    source_key=str(number),
                    source_ref=f"{root.name}#{number}",
                    split="unsplit",
                    context="Ann is here.",
                    question=line,
                    question_type="reality",
                    answer="here",
                    answer_format="free_text",
                )
            except RecordError as bad:
                yield Reject(self.name, f"{root.name}#{number}", root.name, str(number), bad.field, bad.reason, line)

    def count_input(self, root: Path) -> int:
        return len(Path(root).read_text(encoding="utf-8").splitlines())


def test_every_source_adapter_fulfils_the_contract() -> None:
    for name in SOURCE_NAMES:
        adapter = get_adapter(name)
        assert isinstance(adapter, Adapter), name
        assert adapter.name == name


def test_an_adapter_without_count_input_cannot_be_made() -> None:
    class NoCount(Adapter):
        def read(self, root: Path) -> Iterator[RecordOrReject]:
            return iter(())

    with pytest.raises(TypeError, match="count_input"):
        NoCount(name="x", version="1", license="MIT")


def test_a_minimal_adapter_stages_in_one_process_through_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("Where is Ann?\nAnn left\nWhere was Ann?\n", encoding="utf-8")
    adapter = TwoLineAdapter(name="twoline", version="1", license="MIT")
    assert parallel.staging_processes(adapter, path, workers=4, min_bytes=0) == 1  # no split_input: never split
    staged = parallel.stage_input(info_of(adapter), adapter, path, "in", workers=4, min_bytes=0)
    assert (staged.read, staged.items.num_rows, staged.rejects.num_rows) == (3, 2, 1)
    assert staged.rejects.column("field").to_pylist() == ["question"]
    assert staged.rejects.column("reason").to_pylist() == ["no question mark"]


@pytest.mark.parametrize(
    ("order", "memory", "expected"),
    [
        (0, False, "reality"),
        (0, True, "memory"),
        (1, False, "first_order_belief"),
        (2, False, "higher_order_belief"),
        (5, False, "higher_order_belief"),
    ],
)
def test_question_type_of_order(order: int, memory: bool, expected: str) -> None:
    assert question_type_of_order(order, memory=memory) == expected
    assert expected in QUESTION_TYPES


def test_a_negative_order_is_refused() -> None:
    with pytest.raises(ValueError, match="-1"):
        question_type_of_order(-1)
