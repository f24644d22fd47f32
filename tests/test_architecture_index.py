"""ARCHITECTURE.md's module index (issue 39 item 5): one line per module of the installed package saying its
job, so a new module is placed and described deliberately, and a removed one leaves no stale line."""

from __future__ import annotations

import re

from tests.test_import_cycles import REPO, project_modules

LINE = re.compile(r"^- `(?P<path>[\w/]+\.py)`: (?P<job>\S.*)$")


def index_lines() -> list[tuple[str, str]]:
    """(path, job) of every line of the "Module index" section."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## Module index\n", 1)[1].split("\n## ", 1)[0]
    return [(m["path"], m["job"]) for line in section.splitlines() if (m := LINE.match(line))]


def test_every_module_has_one_line_and_every_line_a_module() -> None:
    listed = [path for path, _ in index_lines()]
    assert len(listed) == len(set(listed)), "a module listed twice"
    modules = {path.relative_to(REPO).as_posix() for path in project_modules().values()}
    assert sorted(modules - set(listed)) == [], "modules missing from ARCHITECTURE.md's module index"
    assert sorted(set(listed) - modules) == [], "index lines naming no module"


def test_each_line_says_a_job() -> None:
    """A job is words, not a bare name: at least four words, on one line."""
    short = [path for path, job in index_lines() if len(job.split()) < 4]
    assert short == []


def test_the_index_reader_on_a_planted_section(monkeypatch, tmp_path) -> None:
    """The reader takes exactly the section's list lines (a planted page, read by hand: 2 lines)."""
    page = "# A\n\n## Module index\n\nIntro `x.py`.\n\n- `a/b.py`: does one job well\n- `c.py`: another job here\n\n## Outputs\n- `d.py`: not in the section\n"
    (tmp_path / "ARCHITECTURE.md").write_text(page, encoding="utf-8")
    monkeypatch.setattr("tests.test_architecture_index.REPO", tmp_path)
    assert index_lines() == [("a/b.py", "does one job well"), ("c.py", "another job here")]
