"""What the `tomforge` command does around its subcommands: `--version`, `-h`, flags shown without a
type in `--help`, one line on Ctrl-C (issue 25 item 9), and a one-value option given twice refused. Kept apart from `flows/cli.py`, which
registers the subcommands, so that `cli.py` only wires these in."""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable, Mapping

import typer

from tomforge.flows.exit_codes import ExitCode
from tomforge.schemas.errors import TomforgeError

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
INTERRUPTED = (
    "interrupted (Ctrl-C): nothing was swapped in, so the warehouse and any release folder keep "
    "their last complete state"
)


def version_text() -> str:
    from tomforge import __version__

    return f"tomforge {__version__}"


def show_version(value: bool) -> None:
    """The eager `--version` callback: print and stop before any subcommand is looked for."""
    if value:
        sys.stdout.write(version_text() + "\n")
        raise typer.Exit()


def flags_without_a_type() -> None:
    """Typer 0.29's help shows `<bool>` after an on/off flag (`--dry-run <bool>`), as if it took a
    value: a flag's type column stays empty. Applied once, to typer's option class."""
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "_tomforge_flags", False):
        return
    shown: Callable[..., Any] = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich._tomforge_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def plain_help_text() -> None:
    """Help text is printed as written (issue 38), applied once to typer's rich help:
    - a bracket in it is text, not rich markup: "rebuild's [publish] target" lost "[publish]" and showed a
      doubled space;
    - a default given as text (`show_default="..."`, every settings flag) shows as `[default: 0]`, like the
      others, not `[default: (0)]`."""
    import typer.rich_utils as rich_utils
    from rich.markup import escape
    from typer.core import TyperOption

    if getattr(rich_utils._make_rich_text, "_tomforge_plain", False):
        return
    make_text: Callable[..., Any] = rich_utils._make_rich_text

    def _make_rich_text(*, text: str, style: str = "", markup_mode: Any) -> Any:
        if markup_mode == rich_utils.MARKUP_MODE_RICH:
            text = escape(text)
        return make_text(text=text, style=style, markup_mode=markup_mode)

    _make_rich_text._tomforge_plain = True  # type: ignore[attr-defined]
    rich_utils._make_rich_text = _make_rich_text
    default_string: Callable[..., str] = TyperOption._get_default_string

    def _get_default_string(self: TyperOption, *, ctx: Any, show_default_is_str: bool, default_value: Any) -> str:
        if show_default_is_str:
            return str(self.show_default)
        return default_string(self, ctx=ctx, show_default_is_str=False, default_value=default_value)

    TyperOption._get_default_string = _get_default_string  # type: ignore[method-assign]


def one_line_summaries(commands: Mapping[str, Any]) -> None:
    """Each command's line in `tomforge --help` is its docstring's first paragraph as one line: typer's rich
    panel kept the docstring's line breaks, so a sentence broke mid-line ("... (replacing the" / "previous run
    ...", issue 38)."""
    for command in commands.values():
        if command.short_help is None and command.help:
            first = inspect.cleandoc(command.help).split("\n\n", 1)[0]
            command.short_help = " ".join(first.split())


class RepeatedOption(TomforgeError):
    """An option that takes one value was given more than once: bad input, not the last one silently."""

    exit_code = ExitCode.BAD_INPUT


def refuse_repeated_options(command: Any, args: list[str]) -> None:
    """An option that takes one value, given twice (`variants --source tomi --source hitom`), is a usage
    error naming it: click would keep the last value and run on it without a word. Options that take a
    list (`multiple`) and on/off flags may repeat; nothing after `--` is an option."""
    words = args[: args.index("--")] if "--" in args else args
    for param in command.params:  # typer's own copy of click's Option: told apart by its attributes
        if param.param_type_name != "option" or param.multiple or param.is_flag or param.count:
            continue
        names = [*param.opts, *param.secondary_opts]
        given = [w for w in words if w in names or any(w.startswith(n + "=") for n in names if n.startswith("--"))]
        if len(given) > 1:
            raise RepeatedOption(
                f"{' / '.join(names)} was given {len(given)} times; it takes one value (run the command once per value)"
            )


def run(app: Callable[[], Any]) -> None:
    """Run the command; Ctrl-C (typer turns it into exit 130) adds the line saying nothing changed.
    Every write builds a copy and swaps it in at the end (`warehouse.db.building`, `hub.release`), so
    an interrupted command leaves the last complete warehouse and release folder."""
    try:
        app()
    except SystemExit as exc:
        if exc.code == ExitCode.INTERRUPTED:  # no command exits 130 on its own
            sys.stderr.write(INTERRUPTED + "\n")
        raise
    except KeyboardInterrupt:  # raised outside typer's own handling (before a command started)
        sys.stderr.write(INTERRUPTED + "\n")
        raise SystemExit(ExitCode.INTERRUPTED) from None
