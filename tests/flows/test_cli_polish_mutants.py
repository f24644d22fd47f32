"""What the `tomforge` command does around its subcommands, part by part on hand-made click options and
stand-ins for typer's help functions (issue 38: mutmut over `flows/cli_polish.py`, where two independent
checks planted bugs: a repeated `--opt=value` not counted, a list option refused). Each expected message,
call and exit code is written out by hand."""

from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace
from typing import Any

import click
import pytest
import typer
import typer.rich_utils as rich_utils
from typer.core import TyperOption

from tomforge.flows import cli_polish
from tomforge.flows.cli_polish import RepeatedOption, refuse_repeated_options

REFUSED = "was given {n} times; it takes one value (run the command once per value)"


def test_the_constants() -> None:
    assert cli_polish.HELP_OPTIONS == {"help_option_names": ["-h", "--help"]}
    assert cli_polish.INTERRUPTED == (
        "interrupted (Ctrl-C): nothing was swapped in, so the warehouse and any release folder keep "
        "their last complete state"
    )
    assert RepeatedOption.exit_code == 2


def test_version_text_and_the_eager_callback(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_polish.version_text() == f"tomforge {metadata.version('tomforge')}"
    cli_polish.show_version(False)
    assert capsys.readouterr().out == ""
    with pytest.raises(typer.Exit) as raised:
        cli_polish.show_version(True)
    assert raised.value.exit_code == 0
    assert capsys.readouterr().out == f"tomforge {metadata.version('tomforge')}\n"


def _command() -> click.Command:
    return click.Command(
        "variants",
        params=[
            click.Argument(["source"], required=False),
            click.Option(["--source", "-s"]),
            click.Option(["--tag"], multiple=True),
            click.Option(["--dry-run/--wet-run"]),
            click.Option(["--quiet"], is_flag=True),
            click.Option(["-v"], count=True),
        ],
    )


@pytest.mark.parametrize(
    ("args", "times"),
    [
        (["--source", "a", "--source", "b"], 2),
        (["--source=a", "-s", "b"], 2),
        (["-s", "a", "--source=b", "--source", "c"], 3),
    ],
)
def test_a_one_value_option_given_again_is_refused_naming_it(args: list[str], times: int) -> None:
    with pytest.raises(RepeatedOption) as raised:
        refuse_repeated_options(_command(), args)
    assert str(raised.value) == "--source / -s " + REFUSED.format(n=times)


@pytest.mark.parametrize(
    "args",
    [
        ["--source", "a"],
        ["--source=a", "--", "--source", "b"],  # after `--` nothing is an option
        ["-s", "a", "-s=b"],  # a short option's `=` is part of its value: `-s=b` is not counted
        ["--sourcefile", "x", "--source", "a", "--source-x=1"],
        ["--tag", "a", "--tag", "b", "--tag=c"],
        ["--dry-run", "--dry-run", "--wet-run", "--quiet", "--quiet", "-v", "-v"],
        ["source", "source", "--source", "a"],  # the argument's name is no option
        [],
    ],
)
def test_repeatable_words_pass(args: list[str]) -> None:
    refuse_repeated_options(_command(), args)


def test_one_line_summaries() -> None:
    commands = {
        "a": SimpleNamespace(
            short_help=None, help="    First line\n    goes on here.\n\n    Second paragraph.\n\n    Third."
        ),
        "b": SimpleNamespace(short_help="kept", help="Other help."),
        "c": SimpleNamespace(short_help=None, help=None),
        "d": SimpleNamespace(short_help=None, help="One  line\twith   gaps"),
    }
    cli_polish.one_line_summaries(commands)
    assert [command.short_help for command in commands.values()] == [
        "First line goes on here.",
        "kept",
        None,
        "One line with gaps",
    ]


def test_flags_without_a_type_patches_typers_option_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def shown(self: Any, ctx: Any) -> str:
        calls.append((self, ctx))
        return "INTEGER"

    monkeypatch.setattr(TyperOption, "display_type_rich", shown)
    cli_polish.flags_without_a_type()
    patched = TyperOption.display_type_rich
    assert patched is not shown
    cli_polish.flags_without_a_type()
    assert TyperOption.display_type_rich is patched  # not wrapped a second time
    flag = SimpleNamespace(is_flag=True)
    value = SimpleNamespace(is_flag=False)
    assert patched(flag, "ctx-1") is None
    assert patched(value, "ctx-2") == "INTEGER"
    assert calls == [(value, "ctx-2")]


def test_plain_help_text_escapes_rich_markup_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []

    def make_text(*, text: str, style: str = "", markup_mode: Any) -> str:
        made.append({"text": text, "style": style, "markup_mode": markup_mode})
        return text

    def default_string(self: Any, *, ctx: Any, show_default_is_str: bool, default_value: Any) -> str:
        return f"own({self.show_default},{ctx},{show_default_is_str},{default_value})"

    monkeypatch.setattr(rich_utils, "_make_rich_text", make_text)
    monkeypatch.setattr(TyperOption, "_get_default_string", default_string)
    cli_polish.plain_help_text()
    patched = rich_utils._make_rich_text
    cli_polish.plain_help_text()
    assert rich_utils._make_rich_text is patched
    assert patched(text="rebuild's [publish] target", markup_mode=rich_utils.MARKUP_MODE_RICH) == (
        "rebuild's \\[publish] target"
    )
    assert patched(text="a [b]", style="dim", markup_mode=rich_utils.MARKUP_MODE_MARKDOWN) == "a [b]"
    assert made == [
        {"text": "rebuild's \\[publish] target", "style": "", "markup_mode": "rich"},
        {"text": "a [b]", "style": "dim", "markup_mode": "markdown"},
    ]
    option = SimpleNamespace(show_default="0")
    get = TyperOption._get_default_string
    assert get(option, ctx="C", show_default_is_str=True, default_value=5) == "0"
    assert get(option, ctx="C", show_default_is_str=False, default_value=5) == "own(0,C,False,5)"


def _exit(code: int) -> Any:
    def app() -> None:
        raise SystemExit(code)

    return app


def test_run_adds_the_interrupted_line_on_exit_130(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        cli_polish.run(_exit(130))
    assert raised.value.code == 130
    assert capsys.readouterr().err == cli_polish.INTERRUPTED + "\n"


def test_run_passes_other_exits_and_returns_on_success(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        cli_polish.run(_exit(2))
    assert raised.value.code == 2
    ran: list[bool] = []
    cli_polish.run(lambda: ran.append(True))
    assert ran == [True]
    assert capsys.readouterr().err == ""


def test_run_turns_a_bare_ctrl_c_into_exit_130(capsys: pytest.CaptureFixture[str]) -> None:
    def app() -> None:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as raised:
        cli_polish.run(app)
    assert raised.value.code == 130
    assert raised.value.__suppress_context__
    assert capsys.readouterr().err == cli_polish.INTERRUPTED + "\n"
