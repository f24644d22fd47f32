"""bench/mutate_changed.py finds the tests of a module wherever under tests/ they sit (issue 39: tests move into
tests/<package>/; a glob of tests/ alone would silently stop running a moved file against the mutants). Planted
trees in a temporary folder: the expected lists are written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import mutate_changed


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_a_test_in_a_package_subfolder_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(
        tmp_path,
        {
            "tests/__init__.py": "",
            "tests/hub/__init__.py": "",
            "tests/hub/test_moved.py": "from tomforge.hub import release\n",
            "tests/hub/deeper/test_deep.py": "import tomforge.hub.release as r\n",
            "tests/test_top.py": "from tomforge.hub.release import build_release\n",
            "tests/test_other.py": "from tomforge.hub import ledger\n",  # another module of the package
            "tests/hub/helper.py": "from tomforge.hub import release\n",  # not a test file
        },
    )
    monkeypatch.setattr(mutate_changed, "REPO", tmp_path)
    assert mutate_changed.tests_for("hub/release.py", {}) == [
        "tests/hub/deeper/test_deep.py",
        "tests/hub/test_moved.py",
        "tests/test_top.py",
    ]
    assert mutate_changed.tests_for("hub/release.py", {"hub/release.py": ["tests/test_other.py"]}) == [
        "tests/hub/deeper/test_deep.py",
        "tests/hub/test_moved.py",
        "tests/test_top.py",
        "tests/test_other.py",
    ]


def test_a_slow_test_is_left_out_wherever_it_sits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(
        tmp_path,
        {
            "tests/flows/test_flows.py": "from tomforge.flows import config\n",
            "tests/test_scan_flow.py": "from tomforge.flows import config\n",
            "tests/flows/test_config.py": "from tomforge.flows import config\n",
        },
    )
    monkeypatch.setattr(mutate_changed, "REPO", tmp_path)
    assert mutate_changed.tests_for("flows/config.py", {}) == ["tests/flows/test_config.py"]


def test_every_extra_test_file_of_the_equivalents_exists() -> None:
    """`[tests]` of bench/equivalent_mutants.toml names files by path: a moved test must be renamed there too."""
    _, extra = mutate_changed.load_equivalents()
    missing = [
        f"{module}: {t}" for module, tests in extra.items() for t in tests if not (mutate_changed.REPO / t).is_file()
    ]
    assert missing == []
