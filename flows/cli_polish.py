"""What the `tomforge` command does around its subcommands: `--version`, `-h`, flags shown without a
type in `--help`, one line on Ctrl-C (issue 25 item 9), and a one-value option given twice refused. Kept apart from `flows/cli.py`, which
registers the subcommands, so that `cli.py` only wires these in."""

from __future__ import annotations

import sys
from typing import Any, Callable

import typer

from tomforge.errors import TomforgeError
from tomforge.flows.exit_codes import ExitCode

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
