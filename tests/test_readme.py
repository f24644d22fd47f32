"""The README is a door: its two commands stay true (command 2 is what CI runs) and its links lead somewhere."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "README.md: no bash block with the two commands"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200


def test_ci_runs_the_readme_test_command() -> None:
    first, second = _readme_commands()
    assert first.endswith("tomforge rebuild") and "pip install -e ." in first
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # CI may run the set-up and the tests as two lines (it starts the mutation check between them), in that order
    setup, sep, tests = second.rpartition(" && ")
    assert sep and tests.endswith("pytest -q"), f"README's command 2 no longer ends with its test run: {second}"
    at = [i for i, line in enumerate(ci_lines) if line in (second, setup)]
    assert at, ".ci/run no longer runs the README's set-up command"
    assert ci_lines[at[0]] == second or tests in ci_lines[at[0] + 1 :], ".ci/run no longer runs the README's tests"


def test_readme_links_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t}
    missing = {t for t in targets if not (ROOT / t).exists()}
    assert not missing, f"README.md links to missing files: {sorted(missing)}"
    docs_pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")}
    assert docs_pages <= targets, f"docs pages the README does not list: {sorted(docs_pages - targets)}"
