"""bench/warm_pytest.py: a child forked from the warm server gives the verdict a fresh `python -m pytest` gives,
and reads the project's modules anew on every run (a planted module changed between runs, a planted no-op)."""

from __future__ import annotations

import sys
from pathlib import Path

from bench import mutations
from bench.warm_pytest import WarmPytest

ROOT = Path(__file__).resolve().parents[1]

PLANTED_TEST = """
import planted_module


def test_passes():
    assert True


def test_value():
    assert planted_module.VALUE == 1
"""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "bench").symlink_to(ROOT / "bench")  # the server runs as `-m bench.warm_pytest` from the folder
    (folder / "planted_module.py").write_text("VALUE = 1\n", encoding="utf-8")
    (folder / "test_planted.py").write_text(PLANTED_TEST, encoding="utf-8")
    return folder


def _both(folder: Path, warm: WarmPytest, tests: tuple[str, ...]) -> tuple[tuple, tuple]:
    cold = mutations.run_tests(folder, tests, sys.executable, 120)
    hot = mutations.run_tests(folder, tests, sys.executable, 120, warm)
    return (cold.code, cold.failed, cold.last.split(" in ")[0]), (hot.code, hot.failed, hot.last.split(" in ")[0])


def test_a_warm_child_gives_a_fresh_processs_verdicts_and_rereads_changed_modules(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    warm = WarmPytest(folder, sys.executable, mutations.test_env(folder), modules=("pytest", "numpy"))
    try:
        cold, hot = _both(folder, warm, ("test_planted.py",))
        assert cold == hot == (0, None, "2 passed")
        # the planted bug: the module changed after the server started; the child must read it anew
        (folder / "planted_module.py").write_text("VALUE = 2\n", encoding="utf-8")
        cold, hot = _both(folder, warm, ("test_planted.py",))
        assert cold == hot == (1, "test_planted.py::test_value", "1 failed, 1 passed")
        # a no-op change (the same text written again) survives both ways
        (folder / "planted_module.py").write_text("VALUE = 1\n", encoding="utf-8")
        cold, hot = _both(folder, warm, ("test_planted.py::test_value",))
        assert cold == hot == (0, None, "1 passed")
    finally:
        warm.close()


def test_a_warm_child_past_its_timeout_is_killed_and_reported_as_timed_out(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "test_slow.py").write_text("import time\n\n\ndef test_sleeps():\n    time.sleep(60)\n", encoding="utf-8")
    warm = WarmPytest(folder, sys.executable, mutations.test_env(folder), modules=("pytest",))
    try:
        run = mutations.run_tests(folder, ("test_slow.py",), sys.executable, 2, warm)
        assert (run.code, run.last, run.failed) == (-1, "timed out after 2 s", None)
        # the server still answers after a killed child
        assert mutations.run_tests(folder, ("test_planted.py",), sys.executable, 120, warm).code == 0
    finally:
        warm.close()


def test_the_warm_server_never_preloads_what_must_be_imported_fresh() -> None:
    from bench import warm_pytest

    fresh = {"prefect", "typer", "rich", "tomforge", "tests", "bench"}
    assert not {m.split(".")[0] for m in warm_pytest.WARM_MODULES} & fresh
