"""Staging one source, part by part (issue 38: mutmut over `flows/staging.py`, where two independent checks
planted bugs: the reading options left out of the cache key, a stale `.partial` folder left behind). The
folder names are worked out here by hand from the recipe the module's docstrings state (sha256 over the
salt parts, then each file's name, size and bytes), not by calling the module's own key functions."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tomforge.flows import staging
from tomforge.flows.config import GenerateConfig
from tomforge.generators import GENERATOR_VERSION
from tomforge.schemas import SCHEMA_DIR
from tomforge.schemas.progress import Progress
from tomforge.warehouse.load import STAGED_FORMAT
from tomforge.warehouse.sources import get_adapter

TOMI = Path(__file__).resolve().parents[2] / "warehouse" / "samples" / "tomi" / "tomi_sample_test.txt"
RL = Path(__file__).resolve().parents[2] / "warehouse" / "samples" / "rlfiles" / "trl.jsonl"


def _schema() -> str:
    return hashlib.sha256((SCHEMA_DIR / "record.schema.json").read_bytes()).hexdigest()[:16]


def _file_key(file: Path, *salt: str) -> str:
    """The fingerprint of one file, by hand: each salt part and a NUL, then name, NUL, size, NUL, bytes."""
    digest = hashlib.sha256()
    for part in salt:
        digest.update(part.encode() + b"\0")
    data = file.read_bytes()
    digest.update(file.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def test_schema_version_is_the_schema_files_hash() -> None:
    assert staging.schema_version() == _schema()
    assert len(staging.schema_version()) == 16


def test_staged_folder_of_a_source_without_options(tmp_path: Path) -> None:
    version = get_adapter("tomi").version
    key = _file_key(TOMI, "tomi", version, _schema(), STAGED_FORMAT)
    assert staging.staged_folder(tmp_path, "tomi", str(TOMI)) == tmp_path / f"tomi-{key[:24]}"
    assert staging.staged_folder(tmp_path, "tomi", str(TOMI), {}) == tmp_path / f"tomi-{key[:24]}"


def test_staged_folder_salted_by_the_reading_options_in_key_order(tmp_path: Path) -> None:
    version = get_adapter("rlfiles").version
    options = {"split": "test", "answer_field": "answer"}
    salt = json.dumps({"answer_field": "answer", "split": "test"})
    key = _file_key(RL, "rlfiles", version, _schema(), STAGED_FORMAT, salt)
    assert staging.staged_folder(tmp_path, "rlfiles", str(RL), options) == tmp_path / f"rlfiles-{key[:24]}"
    plain = _file_key(RL, "rlfiles", version, _schema(), STAGED_FORMAT)
    assert staging.staged_folder(tmp_path, "rlfiles", str(RL)) == tmp_path / f"rlfiles-{plain[:24]}"


def test_is_staged_needs_the_completion_file(tmp_path: Path) -> None:
    assert not staging.is_staged(tmp_path)
    (tmp_path / "staged.json").mkdir()
    assert not staging.is_staged(tmp_path)
    (tmp_path / "staged.json").rmdir()
    (tmp_path / "staged.json").write_text("{}")
    assert staging.is_staged(tmp_path)


class _Staged:
    """Stands in for `Staged`: its save writes one file and records the folder it was given."""

    def __init__(self) -> None:
        self.saved_in: list[Path] = []

    def save(self, folder: Path) -> Path:
        assert not folder.exists(), "saved over a leftover partial folder"
        folder.mkdir(parents=True)
        (folder / "staged.json").write_text("{}")
        self.saved_in.append(folder)
        return folder


def test_save_writes_aside_then_replaces_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "tomi-abc"
    partial = tmp_path / "tomi-abc.partial"
    partial.mkdir()
    (partial / "stale.parquet").write_text("left by a killed run")
    folder.mkdir()
    (folder / "old.parquet").write_text("an earlier staging")
    staged = _Staged()
    assert staging._save(folder, staged) == folder
    assert staged.saved_in == [partial]
    assert sorted(p.name for p in folder.iterdir()) == ["staged.json"]
    assert not partial.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tomi-abc"]


def test_stage_source_stages_the_file_in_its_folder(tmp_path: Path) -> None:
    folder = staging.stage_source(tmp_path, "tomi", str(TOMI))
    assert folder == staging.staged_folder(tmp_path, "tomi", str(TOMI))
    assert staging.is_staged(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]
    staged = staging.open_staged(folder)
    # the sample's questions: one per line that holds a tab (question, answer, supporting line)
    questions = sum("\t" in line for line in TOMI.read_text(encoding="utf-8").splitlines())
    assert (staged.info.name, staged.read) == ("tomi", questions)
    assert staged.items.num_rows + staged.rejects.num_rows == questions


def test_stage_source_with_options_stages_under_the_salted_folder(tmp_path: Path) -> None:
    options = {"split": "test"}
    folder = staging.stage_source(tmp_path, "rlfiles", str(RL), options=options)
    assert folder == staging.staged_folder(tmp_path, "rlfiles", str(RL), options)
    assert folder != staging.staged_folder(tmp_path, "rlfiles", str(RL))
    staged = staging.open_staged(folder)
    rows = sum(1 for line in RL.read_text(encoding="utf-8").splitlines() if line.strip())
    assert staged.read == rows
    assert set(staged.items.column("split").to_pylist()) == {"test"}


def _generated_key(settings: GenerateConfig, split: str) -> str:
    text = "|".join([settings.model_dump_json(), split, GENERATOR_VERSION, _schema(), STAGED_FORMAT])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@pytest.mark.parametrize("split", ["train", "test"])
def test_generated_folder_named_by_every_setting(tmp_path: Path, split: str) -> None:
    settings = GenerateConfig(n=12, seed=3)
    assert staging.generated_folder(tmp_path, settings, split) == tmp_path / (
        f"tomforge_gen-{split}-{_generated_key(settings, split)}"
    )


def test_stage_generated_writes_the_splits_questions(tmp_path: Path) -> None:
    settings = GenerateConfig(n=12, seed=3, split_fractions=(0.5, 0.25, 0.25))
    folder = staging.stage_generated(tmp_path, settings, "validation")
    assert folder == tmp_path / f"tomforge_gen-validation-{_generated_key(settings, 'validation')}"
    staged = staging.open_staged(folder)
    assert staged.read == 3  # a quarter of 12
    assert staged.items.num_rows == 3
    assert set(staged.items.column("split").to_pylist()) == {"validation"}
    assert staged.input_ref == f"generate:validation:n=3,max_order={settings.max_order},seed=3"


class _Stages(Progress):
    """Records the name of every stage started."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.totals: dict[str, int | None] = {}

    def started(self, stage) -> None:
        self.names.append(stage.name)
        self.totals[stage.name] = stage.total


def test_stage_source_reports_its_stages_and_its_input(tmp_path: Path) -> None:
    progress = _Stages()
    folder = staging.stage_source(tmp_path, "tomi", str(TOMI), progress)
    assert "count tomi" in progress.names  # `stage_input`'s own count of the input
    assert staging.open_staged(folder).input_ref == str(TOMI)  # the location as given


def test_a_hub_location_is_resolved_with_the_sources_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hub id is downloaded with the adapter's file patterns: the adapter must reach `resolve_input`."""
    seen: list[tuple[str, str | None]] = []

    def resolve(location: str, adapter) -> Path:
        seen.append((location, getattr(adapter, "name", None)))
        return TOMI

    monkeypatch.setattr(staging, "resolve_input", resolve)
    folder = staging.staged_folder(tmp_path, "tomi", "some-org/tomi")
    assert staging.stage_source(tmp_path, "tomi", "some-org/tomi") == folder
    assert seen == [("some-org/tomi", "tomi"), ("some-org/tomi", "tomi")]


def test_staged_folder_builds_the_adapter_with_the_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, dict | None]] = []
    choose = staging._adapter

    def adapter(source: str, options: dict | None):
        asked.append((source, options))
        return choose(source, options)

    monkeypatch.setattr(staging, "_adapter", adapter)
    staging.staged_folder(tmp_path, "rlfiles", str(RL), {"split": "test"})
    assert asked == [("rlfiles", {"split": "test"})]


@pytest.mark.parametrize(("held_out_test", "held_out"), [(True, None), (False, False)])
def test_stage_generated_passes_every_setting_to_the_generator(
    tmp_path: Path, held_out_test: bool, held_out: bool | None
) -> None:
    """The staged items are the records `generate_records` gives when called here with the settings written
    out by hand (each one set away from its default, so a setting left out changes the records)."""
    from tomforge.generators import generate_records
    from tomforge.generators.generate import generate_input_ref

    settings = GenerateConfig(
        n=16,
        seed=7,
        max_order=2,
        operators=["distractor", "return"],
        styles=["exploretom"],
        split_fractions=(0.5, 0.25, 0.25),
        held_out_test=held_out_test,
        rendering="second_person",
    )
    progress = _Stages()
    folder = staging.stage_generated(tmp_path, settings, "test", progress)
    staged = staging.open_staged(folder)
    assert progress.totals["stage tomforge_gen"] == 4  # the split's size, known before generating
    assert staged.input_ref == generate_input_ref(4, 2, 7, split="test", rendering="second_person")
    assert "rendering" in staged.input_ref
    expected = generate_records(
        4,
        max_order=2,
        seed=7,
        split="test",
        operators=["distractor", "return"],
        styles=["exploretom"],
        held_out=held_out,
        rendering="second_person",
    )
    expected = list(expected)
    assert staged.items.column("item_id").to_pylist() == [record["item_id"] for record in expected]
    # the item id does not change with the surface style; the content hash does
    assert staged.items.column("content_hash").to_pylist() == [record["content_hash"] for record in expected]


def test_held_out_phrasings_differ_from_the_others(tmp_path: Path) -> None:
    """The two cases above differ only by `held_out`: their records must differ, or that test sees nothing."""
    from tomforge.generators import generate_records

    common = dict(max_order=2, seed=7, split="test", operators=["distractor"], styles=["exploretom"])
    plain = [r["content_hash"] for r in generate_records(4, held_out=False, **common)]
    held = [r["content_hash"] for r in generate_records(4, held_out=None, **common)]
    assert plain != held
