"""Issue 25 item 10: a source whose license forbids training never lands in an RL train split
unless the user says so: `publish` and `train` refuse with one line naming the source and its
license; `--allow-restricted-training` overrides, and the card says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flows.test_cli import assert_one_line_error, run
from tests.publish_fixtures import BETA, record
from tomforge.rl.release import ReleaseReadError, SplitRef, check_training_split
from tomforge.schemas.rl.licenses import forbids_training
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.base import AdapterInfo

EVAL_ONLY = AdapterInfo("gamma", "gamma-1", "MIT (evaluation only)")


def _warehouse(path: Path, split: str = "train") -> Path:
    ingest_records(path, EVAL_ONLY, [record("gamma", "gamma-1", i, split) for i in range(3)], "gamma.json")
    ingest_records(path, BETA, [record("beta", BETA.version, 10 + i, "unsplit") for i in range(2)], "beta.json")
    return path


@pytest.mark.parametrize(
    "license_text, forbids",
    [
        ("MIT (evaluation only)", True),
        ("CC BY-NC 4.0 (not for training)", True),
        ("Evaluation only", True),  # issue 38: the match is case-blind
        ("NOT FOR TRAINING", True),
        ("CC BY 4.0, Test-Only", True),
        ("research use; No Training", True),
        ("MIT", False),
        ("Apache-2.0", False),
        ("CC BY-NC 4.0", False),
        (None, False),
        ("", False),
    ],
)
def test_which_licenses_forbid_training(license_text, forbids) -> None:
    assert forbids_training(license_text) is forbids


def test_the_real_sources_that_say_evaluation_only_are_caught() -> None:
    assert {
        name
        for name in ("hitom", "tomi", "exploretom", "bigtom", "fantom", "opentom")
        if forbids_training(get_adapter(name).license)
    } == {"fantom", "opentom"}


def test_publish_refuses_then_overrides_and_the_card_says_so(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path / "w.duckdb")
    target = tmp_path / "release"
    refused = run("publish", "-w", str(warehouse), "--repo", "org/tom", "--target", str(target), "--tag", "v1")
    assert refused.exit_code == 2 and "Traceback" not in refused.output, refused.output
    [error] = [line for line in refused.output.splitlines() if line.startswith("error:")]  # after publish's info line
    for needle in ("source gamma", "'MIT (evaluation only)'", "'train' split", "--allow-restricted-training"):
        assert needle in error, error
    assert not target.exists()
    allowed = run(
        "publish",
        "-w",
        str(warehouse),
        "--repo",
        "org/tom",
        "--target",
        str(target),
        "--tag",
        "v1",
        "--allow-restricted-training",
    )
    assert allowed.exit_code == 0, allowed.output
    card = (target / "README.md").read_text()
    assert "**License override.**" in card and "source gamma (license 'MIT (evaluation only)') has 3 rows" in card


def test_a_restricted_source_outside_train_publishes_without_a_flag(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path / "w.duckdb", split="test")  # evaluation only, and only evaluated on
    result = run("publish", "-w", str(warehouse), "--repo", "org/tom", "--target", str(tmp_path / "r"), "--tag", "v1")
    assert result.exit_code == 0, result.output
    assert "License override" not in (tmp_path / "r/README.md").read_text()


def test_train_refuses_a_split_with_a_restricted_source(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path / "w.duckdb")
    target = tmp_path / "release"
    assert (
        run(
            "publish",
            "-w",
            str(warehouse),
            "--repo",
            "org/tom",
            "--target",
            str(target),
            "--tag",
            "v1",
            "--allow-restricted-training",
        ).exit_code
        == 0
    )
    train = (
        "train",
        "--backend",
        "verl",
        "--dataset",
        str(target),
        "--model",
        "Qwen/Qwen2.5-0.5B",
        "--train",
        "all/train",
    )
    for refused in (run(*train), run(*train, "--dry-run")):  # a dry run must not promise what the run refuses
        assert_one_line_error(
            refused, "source gamma", "'MIT (evaluation only)'", "all/train", "--allow-restricted-training"
        )
    planned = run(*train, "--dry-run", "--allow-restricted-training")
    assert planned.exit_code == 0 and "its license forbids training" in planned.output
    assert "checked when the training starts" not in planned.output
    with pytest.raises(ReleaseReadError, match="source beta"):  # beta's 2 unsplit rows: not for training either
        check_training_split(target, SplitRef("all", "unsplit"), "r")
    found = check_training_split(target, SplitRef("all", "train"), "r", allow=True)
    assert [(f.source, f.n_rows) for f in found] == [("gamma", 3)]


def test_restricted_sources_counted_only_where_they_have_rows_and_named_each() -> None:
    """A source whose license forbids training but has no row in the split is not restricted there; several
    restricted sources are each named, separated by "; " (issue 38, mutation survivors)."""
    from tomforge.schemas.rl.licenses import refusal, restricted

    licenses = {"a": "MIT (evaluation only)", "b": "NOT FOR TRAINING", "c": "MIT", "d": "Evaluation only"}
    found = restricted({"a": 3, "b": 2, "c": 5, "d": 0}, licenses)
    assert [(r.source, r.n_rows) for r in found] == [("a", 3), ("b", 2)]
    line = refusal(found, "all/train")
    assert line.startswith(
        "source a (license 'MIT (evaluation only)') has 3 rows; source b (license 'NOT FOR TRAINING') has 2 rows "
        "in all/train: its license forbids training"
    )


def test_release_licenses_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """A manifest's licenses are read as UTF-8 also under an ASCII locale (a license naming "Créative")."""
    import json

    from tests.ascii_locale import run_in_ascii_locale

    manifest = {"sources": [{"source": "a", "license": "Créative – evaluation only"}, {"license": "no source"}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    done = run_in_ascii_locale(
        "import sys; from tomforge.schemas.rl.licenses import release_licenses; print(release_licenses(sys.argv[1]))",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'a': 'Créative – evaluation only'}"
    from tomforge.schemas.rl.licenses import release_licenses

    assert release_licenses(tmp_path / "nowhere") == {}
