"""The `tomforge` command line: one subcommand per pipeline step, one module per command group
(`flows/commands/`); this module holds only the app, the one error handler and the groups' registration.

Exit codes: `flows.exit_codes.ExitCode` (0 success, 2 bad input, 3 counts do not reconcile, ...). Errors become
them in one place, `user_errors`, which every subcommand runs inside (`UserErrorGroup`): a `TomforgeError`
(`schemas/errors.py`) is one line and its class's exit code; no command sets an exit code itself.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, cast

import typer
from typer.core import TyperGroup

from tomforge.flows import cli_polish
from tomforge.flows.commands import audit, ingest, rebuild, release, rl, scan, sql
from tomforge.flows.commands.flags import FlagError
from tomforge.flows.commands.rl import RL_EXTRAS, RL_EXTRAS_HINT
from tomforge.flows.commands.terminal import exit_with_error, print_reports
from tomforge.schemas.errors import MissingExtra, TomforgeError

if TYPE_CHECKING:
    from tomforge.warehouse.load import Unreconciled


class UserErrorGroup(TyperGroup):
    """The `tomforge` group: every subcommand runs inside `user_errors`, so a new command (and a new
    error class) needs no handler of its own."""

    def invoke(self, ctx: Any) -> Any:
        with user_errors(ctx):
            return super().invoke(ctx)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            cli_polish.refuse_repeated_options(command, rest)
        return name, command, rest

    def format_help(self, ctx: Any, formatter: Any) -> None:
        cli_polish.one_line_summaries(self.commands)
        super().format_help(ctx, formatter)


app = typer.Typer(
    help="Build, audit and publish Theory-of-Mind data for RLVR.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=UserErrorGroup,
    context_settings=cli_polish.HELP_OPTIONS,
)
cli_polish.flags_without_a_type()
cli_polish.plain_help_text()


@app.callback()
def _top(
    version: bool = typer.Option(
        False, "--version", "-V", is_eager=True, callback=cli_polish.show_version, help="Print the version and exit."
    ),
) -> None:
    """Build, audit and publish Theory-of-Mind data for RLVR."""


def _loaded_class(module: str, name: str) -> type[BaseException] | None:
    """A class, only if its module is already imported: a module never imported cannot have raised
    it, and importing it here would make `train`/`eval` need the warehouse's dependencies
    (jsonschema, pydantic...) on a GPU machine that has only the RL stage's."""
    loaded = sys.modules.get(module)
    return getattr(loaded, name, None) if loaded is not None else None


# Commands whose settings or SQL conditions are built from flags by libraries that raise a plain ValueError
# (pydantic's ValidationError, the TRL settings' own checks, an audit condition): bad input there. The
# project's own checks raise a `TomforgeError` class instead.
VALUE_ERRORS_ARE_INPUT = frozenset({"audit", "clean", "train", "eval", "scan"})
RL_COMMANDS = frozenset({"train", "eval"})


def as_user_error(exc: Exception, command: str | None) -> TomforgeError | None:
    """What a failure is to the user: a `TomforgeError` as it is; a library's failure worded as one of ours
    (a missing RL extra in `train`/`eval`: `MissingExtra`; a library's ValueError in `VALUE_ERRORS_ARE_INPUT`:
    `FlagError`); None for anything else (a bug: it keeps its traceback)."""
    if isinstance(exc, TomforgeError):
        return exc
    if isinstance(exc, ModuleNotFoundError):
        if command in RL_COMMANDS and (exc.name or "").split(".")[0] in RL_EXTRAS:
            return MissingExtra(f"{RL_EXTRAS_HINT} (missing: {exc.name})")
        return None
    if isinstance(exc, ValueError) and command in VALUE_ERRORS_ARE_INPUT:
        return FlagError(str(exc))
    return None


@contextmanager
def user_errors(ctx: Any) -> Iterator[None]:
    """The one handler, and the only place that sets an exit code: a `TomforgeError` (or a library's
    failure `as_user_error` words as one) is one line on stderr and exits with its class's `exit_code` (a
    load whose counts do not reconcile first prints its counts, unless the command did); one that
    `keeps_traceback` (INTERNAL: a bug or an internal signal), and any other exception, is raised on."""
    try:
        yield
    except Exception as caught:
        exc = as_user_error(caught, ctx.invoked_subcommand)
        if exc is None or exc.keeps_traceback():
            raise
        unreconciled = _loaded_class("tomforge.warehouse.load", "Unreconciled")
        if unreconciled is not None and isinstance(exc, unreconciled) and not cast("Unreconciled", exc).counts_shown:
            print_reports([cast("Unreconciled", exc).report])
        exit_with_error(str(exc), exc.exit_code)


# The command groups, in the order `tomforge --help` lists their commands.
app.add_typer(ingest.group)  # ingest, generate, variants
app.add_typer(sql.group)  # sql
app.add_typer(rebuild.group)  # rebuild
app.add_typer(release.group)  # publish, verify
app.add_typer(rl.group)  # train, eval
app.add_typer(audit.group)  # audit, clean
app.add_typer(scan.group)  # scan


def main() -> None:
    cli_polish.run(app)


if __name__ == "__main__":
    main()
