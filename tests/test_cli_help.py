"""Every command's `--help` reads as written (issue 38): a default shows as `[default: 0]`, never
`[default: (0)]`; no doubled space (a `[publish]` in a help text was read as rich markup and dropped, leaving
"rebuild's  target"); each command's line in `tomforge --help` is one sentence run on, not broken where its
docstring's line ended."""

from __future__ import annotations

import inspect
import re

import pytest
import typer
from typer.testing import CliRunner

from tomforge.flows.cli import app
from tomforge.flows.commands.flags import resolve_shown_defaults

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
runner = CliRunner()


def help_of(*args: str, width: int = 100) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": str(width), "TERMINAL_WIDTH": str(width)})
    assert result.exit_code == 0, result.output
    return result.output


def cell_text(output: str) -> str:
    """The words of the help's boxes, box drawing and column padding removed, one space between words."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


def test_commands_are_all_there() -> None:
    assert {"ingest", "generate", "publish", "train", "audit", "scan", "rebuild"} <= set(COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_defaults_show_one_way(command: str) -> None:
    text = help_of(*([command] if command else []))
    assert "[default: (" not in text, re.findall(r"\[default: \([^\]]*", text)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_texts_are_printed_whole_with_single_spaces(command: str) -> None:
    """Each option's help, joined on single spaces, appears in the rendered help word for word (brackets
    included), and the help strings themselves hold no doubled space."""
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    resolve_shown_defaults(click_command)  # a help drawn from a registry (the --source lists), as --help draws it
    shown = cell_text(help_of(command, width=400))
    for param in click_command.params:
        text = param.help or ""
        for line in text.splitlines():
            assert not re.search(r"\S  +\S", line), (param.name, line)
        assert " ".join(text.split()) in shown, (param.name, text)
    first = inspect.cleandoc(click_command.help or "").split("\n\n")[0]
    assert " ".join(first.split()) in shown


def test_top_level_lines_are_not_broken_mid_sentence() -> None:
    """At 200 columns each command's summary fits on its row: the row holds the whole first paragraph."""
    output = help_of(width=200)
    rows = {line.split()[1]: line for line in output.splitlines() if line.startswith("│ ") and len(line.split()) > 2}
    group = typer.main.get_command(app)
    for name in COMMANDS:
        first = inspect.cleandoc(group.commands[name].help or "").split("\n\n")[0]  # type: ignore[attr-defined]
        summary = " ".join(first.split())
        if len(summary) < 150:
            assert summary in " ".join(rows[name].split()), (name, rows[name])
