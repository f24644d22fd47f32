"""What every command prints with: literal consoles (stderr for messages and progress, stdout for tables),
the one-line error exit (for the CLI's one handler, `flows.cli.user_errors`, alone), and the reconciliation
table every load prints."""

from __future__ import annotations

from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tomforge.flows.exit_codes import ExitCode


def literal_console(**options: Any) -> Console:
    """Prints values as they are: no markup, emoji codes or highlighting (a source named
    `generate:train:...` or a value `[/x]` is shown exactly, never parsed)."""
    return Console(markup=False, emoji=False, highlight=False, **options)


console = literal_console(stderr=True)  # messages, errors, progress (RichProgress: bars on a terminal only)
stdout_console = literal_console()  # tables


def exit_with_error(message: str, code: int = ExitCode.BAD_INPUT) -> None:
    """One line on stderr, no traceback, a meaningful exit code. Only the CLI's handler calls it: a command
    raises a `TomforgeError` instead."""
    console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)  # only the word styled
    raise typer.Exit(code)


def print_reports(reports: list) -> bool:
    """Print read = loaded + rejected per input; return whether every one reconciles."""
    names = ("source", "input", "read", "loaded", "rejected", "new", "changed", "unchanged", "removed", "ok")
    rows = [
        (
            r.source,
            r.input_ref,
            *(str(n) for n in (r.read, r.loaded, r.rejected, r.new, r.changed, r.unchanged, r.removed)),
            "yes" if r.reconciled else "NO",
        )
        for r in reports
    ]
    widths = [max([len(name)] + [len(row[i]) for row in rows]) for i, name in enumerate(names)]
    # nothing is cut: on a terminal the input column takes the room the others leave (at least 16)
    # and folds, and a terminal too narrow for that gets a wider table rather than truncated counts;
    # a log or a pipe gets every row on one line
    if stdout_console.is_terminal:
        room = stdout_console.width - sum(widths) + widths[1] - 2 * (len(names) - 1)
        widths[1] = min(widths[1], max(16, room))
    table = Table(
        title="reconciliation (read = loaded + rejected)",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        title_justify="left",
    )
    for i, name in enumerate(names):
        table.add_column(
            name,
            justify="left" if i < 2 else "right",
            width=widths[i],
            overflow="fold" if name == "input" else "ellipsis",
            no_wrap=name != "input",
        )
    for row in rows:
        table.add_row(*row)
    literal_console(width=max(stdout_console.width, sum(widths) + 2 * (len(names) - 1))).print(table)
    return all(r.reconciled for r in reports)


def show_reconciliation(reports: list) -> None:
    """Print read = loaded + rejected per input (`print_reports`); an input whose counts do not add up is an
    `Unreconciled` error (exit 3) with its counts already shown."""
    if not print_reports(reports):
        from tomforge.warehouse.load import Unreconciled

        raise Unreconciled(next(r for r in reports if not r.reconciled), loaded=True, counts_shown=True)
