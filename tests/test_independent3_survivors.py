"""Issue 38: the survivors of the second independent check (2026-12-07), each killed by a test written for it
(docs/independent-check-2026-12-07.md says what each must assert). Planted inputs; every expected value is worked
by hand or read from the module's own documentation, never computed with the code under test."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.publish_fixtures import release_one, release_two
from tomforge.audits.clean import apply_cleaning
from tomforge.audits.run import run_audit
from tomforge.audits.store import SelectionError
from tomforge.audits.verdict import MAX_EVIDENCE, more
from tomforge.flows.cli import app
from tomforge.generators.generate import split_sizes
from tomforge.hub import release as release_module
from tomforge.hub.export import ExportOptions
from tomforge.hub.release import ReleaseOptions, publish_folder
from tomforge.hub.verify import verify_folder
from tomforge.rl.sft import target_completion
from tomforge.schemas.atomic_files import replaced_on_success
from tomforge.schemas.hub_errors import ConflictError
from tomforge.schemas.rl.licenses import forbids_training
from tomforge.warehouse.sources.exploretom import ADAPTER as EXPLORETOM

SAMPLES = Path(__file__).resolve().parents[1] / "warehouse" / "samples"

# --- 22 tomforge/atomic_files: an interrupt inside the block leaves the old file and no partial one ---------


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_leaves_the_old_file_and_no_partial_one(tmp_path: Path, interrupt: type[BaseException]) -> None:
    target = tmp_path / "report.md"
    target.write_text("old report", encoding="utf-8")
    with pytest.raises(interrupt):
        with replaced_on_success(target) as temp:
            temp.write_text("half of the new one", encoding="utf-8")
            raise interrupt()
    assert target.read_text(encoding="utf-8") == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]  # no .report.md.partial-PID left


# --- 27 schemas/rl/licenses: the hyphenated wordings forbid training as the spaced ones do --------------------------


@pytest.mark.parametrize(
    "license_text",
    ["MIT (evaluation-only)", "CC BY 4.0, Evaluation-Only", "test-only", "MIT (evaluation only)", "test only"],
)
def test_hyphenated_and_spaced_evaluation_only_forbid_training(license_text: str) -> None:
    assert forbids_training(license_text) is True


def test_a_plain_license_allows_training() -> None:
    assert forbids_training("MIT") is False


# --- 28 audits/verdict: no "more" line when every row is shown ------------------------------------------------


def test_more_says_nothing_when_every_row_is_shown() -> None:
    assert MAX_EVIDENCE == 8  # the figure the lines below are worked with
    assert more(0, "`x.csv`") == ""
    assert more(8, "`x.csv`") == ""  # all 8 shown: "0 more" would be wrong
    assert more(9, "`x.csv`") == "1 more: `x.csv`."
    assert more(20, "`x.csv`") == "12 more: `x.csv`."


# --- 36 generators/generate: train takes the rounding remainder -----------------------------------------------


def test_split_sizes_give_the_remainder_to_train() -> None:
    # by hand, fractions 0.8 / 0.1 / 0.1: int(5.6) = 5, int(0.7) = 0 twice, remainder 2 -> train
    assert split_sizes(7) == {"train": 7, "validation": 0, "test": 0}
    # int(15.2) = 15, int(1.9) = 1 twice, remainder 2 -> train
    assert split_sizes(19) == {"train": 17, "validation": 1, "test": 1}
    assert split_sizes(10) == {"train": 8, "validation": 1, "test": 1}


# --- 37 rl/sft: a reality question (order 0) says its order --------------------------------------------------


def _sft_row(order: int | None) -> dict:
    truth = '{"answer_format": "free_text", "answer": "box"}'
    return {"extra_info": {"belief_order": order, "question_type": "reality"}, "reward_model": {"ground_truth": truth}}


def test_the_sft_thought_names_order_zero() -> None:
    assert target_completion(_sft_row(0)) == (
        "<think>This is a reality question of order 0; I track who saw each event.</think><answer>box</answer>"
    )
    assert target_completion(_sft_row(None)) == (
        "<think>This is a reality question; I track who saw each event.</think><answer>box</answer>"
    )


# --- 40 warehouse/sources/exploretom: "Yes" is a yes/no answer as "yes" is ----------------------------------


def test_a_capitalized_yes_answer_is_yes_no(tmp_path: Path) -> None:
    source = SAMPLES / "exploretom" / "exploretom-sample.csv"
    with source.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    yes_rows = [i for i, row in enumerate(rows) if row["expected_answer"].strip() == "yes"]
    assert yes_rows, "the sample has a yes/no question"
    rows = [rows[yes_rows[0]]]
    planted = dict(rows[0], expected_answer="Yes")
    target = tmp_path / "explore.csv"
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerow(rows[0])
        writer.writerow(planted)
    records = [r for r in EXPLORETOM.read(target) if isinstance(r, dict)]
    assert [r["answer"] for r in records] == ["yes", "Yes"]
    assert [r["answer_format"] for r in records] == ["yes_no", "yes_no"]


# --- 32 hub/verify: a local folder holds no Hub bookkeeping: a stray .gitattributes is a foreign file --------


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("published")
    warehouse = release_one(root / "w.duckdb")
    target = root / "release"
    publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1"))
    return warehouse, target


def test_a_local_folder_with_hub_bookkeeping_files_fails_verify(published: tuple[Path, Path], tmp_path: Path) -> None:
    _, target = published
    assert verify_folder(target).ok
    (target / ".gitattributes").write_text("*.parquet filter=lfs\n", encoding="utf-8")
    (target / ".cache" / "huggingface").mkdir(parents=True)
    (target / ".cache" / "huggingface" / "stray.lock").write_text("", encoding="utf-8")
    try:
        report = verify_folder(target)
        assert not report.ok
        assert ".gitattributes: not in the manifest (stale or foreign file)" in report.problems
        assert ".cache/huggingface/stray.lock: not in the manifest (stale or foreign file)" in report.problems
        assert verify_folder(target, downloaded=True).ok  # a Hub download: its own bookkeeping is excused
    finally:
        (target / ".gitattributes").unlink()
        (target / ".cache" / "huggingface" / "stray.lock").unlink()


# --- 26 hub/ledger, 35 publish --table: audited warehouses ----------------------------------------------------
# release_one: alpha 7 train + 3 test, beta 4 unsplit (outside every selection below)


def _ids_by_mark(release: Path) -> dict[str, list[str]]:
    rows = pq.read_table(release / "data" / "all").to_pylist()
    marks: dict[str, list[str]] = {}
    for row in rows:
        marks.setdefault(f"{row['source']}/{row['split']}:{row['audit_selection']}", []).append(row["item_id"])
    return {key: sorted(ids) for key, ids in marks.items()}


def test_an_item_in_both_selections_is_published_as_heldout(tmp_path: Path) -> None:
    warehouse = release_one(tmp_path / "w.duckdb")
    # every alpha item is held out; the 7 alpha train items are in the train selection too
    run_audit(warehouse, "source = 'alpha' AND split = 'train'", "source = 'alpha'")
    release = tmp_path / "release"
    publish_folder(warehouse, release, ReleaseOptions("org/tom", tag="v1", export=ExportOptions(table="items_full")))
    counts = {key: len(ids) for key, ids in _ids_by_mark(release).items()}
    # the ledger's doc: "an item in both selections stays held-out (as cleaning keeps it)"
    assert counts == {"alpha/train:heldout": 7, "alpha/test:heldout": 3, "beta/unsplit:not_audited": 4}


def test_publish_with_an_explicit_table_removes_the_unaudited_items(tmp_path: Path) -> None:
    warehouse = release_one(tmp_path / "w.duckdb")
    run_audit(warehouse, "source = 'alpha' AND split = 'train'", "source = 'alpha' AND split = 'test'")
    apply_cleaning(warehouse)
    release = tmp_path / "release"
    result = CliRunner().invoke(
        app,
        ["publish", "--warehouse", str(warehouse), "--target", str(release), "--table", "clean_items", "--tag", "v1"],
    )
    assert result.exit_code == 0, result.output
    # the ledger's doc: "with `only_audited` (or an explicit table) the rest is removed as `not_selected`"
    published = {row["source"] for row in pq.read_table(release / "data" / "all").to_pylist()}
    assert published == {"alpha"}
    removed = pq.read_table(release / "ledger" / "removed.parquet").to_pylist()
    assert (
        sorted((row["source"], row["reason"]) for row in removed if row["source"] == "beta")
        == [("beta", "not_selected")] * 4
    )


# --- note 39 audits/run: an empty held-out selection's error names the held-out condition --------------------


def test_an_empty_heldout_selection_is_named_in_the_error(tmp_path: Path) -> None:
    warehouse = release_one(tmp_path / "w.duckdb")
    with pytest.raises(SelectionError) as raised:
        run_audit(warehouse, "source = 'alpha'", "split = 'nowhere'")
    assert f"{warehouse}: the held-out selection \"split = 'nowhere'\" matches no items; nothing audited" == str(
        raised.value
    )


# --- note 21 hub/release: the tag of the release swapped out is remembered (tags never move) -----------------


class _Killed(BaseException):
    """Stands for `kill -9` right after a checkpoint (the block's `finally` runs here, which changes no tag)."""


def test_the_tag_of_a_replaced_folder_release_never_moves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = release_one(tmp_path / "one.duckdb")
    second = release_two(tmp_path / "two.duckdb")
    target = tmp_path / "release"

    def killed_after_the_swap(name: str) -> None:
        if name == "release: swapped":
            raise _Killed(name)

    # v1 is in place, but its writer died right after the swap (before any later step)
    monkeypatch.setattr(release_module, "checkpoint", killed_after_the_swap)
    with pytest.raises(_Killed):
        publish_folder(first, target, ReleaseOptions("org/tom", tag="v1"))
    monkeypatch.undo()
    assert verify_folder(target).tag == "v1"
    publish_folder(second, target, ReleaseOptions("org/tom", tag="v2"))  # v1 is swapped out of the folder
    # hub.folder's doc: "--tag v1 can never come to mean other content"
    with pytest.raises(ConflictError, match="tag v1 already holds a different release"):
        publish_folder(second, target, ReleaseOptions("org/tom", tag="v1"))
