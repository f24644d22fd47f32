"""What every command prints with (issue 38: mutmut over `flows/commands/terminal.py`, where two independent
checks planted bugs: the new and changed counts swapped, the first input named instead of the unreconciled
one). The reconciliation table is compared with lines laid out here by a hand-written fixed-width format
(each column as wide as its widest cell, two spaces between columns, names left, counts right)."""

from __future__ import annotations

import io

import pytest
import typer

from tomforge.flows.commands import terminal
from tomforge.warehouse.load import LoadReport, Unreconciled

NAMES = ("source", "input", "read", "loaded", "rejected", "new", "changed", "unchanged", "removed", "ok")


def _line(cells: tuple[str, ...], widths: list[int]) -> str:
    parts = [cell.ljust(width) if i < 2 else cell.rjust(width) for i, (cell, width) in enumerate(zip(cells, widths))]
    return "  ".join(parts).rstrip()


def _expected(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(name), *(len(row[i]) for row in rows)) for i, name in enumerate(NAMES)]
    total = sum(widths) + 2 * (len(NAMES) - 1)
    return [
        "reconciliation (read = loaded + rejected)",
        _line(NAMES, widths),
        "─" * total,
        *(_line(row, widths) for row in rows),
    ]


def _printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line.rstrip() for line in capsys.readouterr().out.splitlines()]


def test_the_reconciliation_table_row_by_row(capsys: pytest.CaptureFixture[str]) -> None:
    reports = [
        LoadReport("tomi", "a.txt", read=4, loaded=3, rejected=1, new=2, changed=7, unchanged=0, removed=5),
        LoadReport("hitom", "folder/b.json", read=12, loaded=3, rejected=1, unchanged=3),
    ]
    assert terminal.print_reports(reports) is False
    assert _printed(capsys) == _expected(
        [
            ("tomi", "a.txt", "4", "3", "1", "2", "7", "0", "5", "yes"),
            ("hitom", "folder/b.json", "12", "3", "1", "0", "0", "3", "0", "NO"),
        ]
    )


def test_a_table_that_reconciles_and_a_wide_count(capsys: pytest.CaptureFixture[str]) -> None:
    reports = [LoadReport("tomforge_generated", "g", read=1234567890, loaded=1234567890, rejected=0)]
    assert terminal.print_reports(reports) is True
    assert _printed(capsys) == _expected(
        [("tomforge_generated", "g", "1234567890", "1234567890", "0", "0", "0", "0", "0", "yes")]
    )


def test_an_empty_table_reconciles() -> None:
    assert terminal.print_reports([]) is True


def test_on_a_terminal_a_long_input_folds_in_the_room_left(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Widths without the input: 6+4+6+8+3+7+9+7+3 = 53, plus 18 between columns = 71. At 100 columns the
    input gets 100 - 71 = 29; at 60 it gets its floor, 16, and the table is printed 87 wide."""
    long = "folder/sub/very/long/input/b.json"  # 33 characters
    report = LoadReport("tomi", long, read=1, loaded=1)
    counts = ("1", "1", "0", "0", "0", "0", "0", "yes")
    for width, room in ((100, 29), (60, 16)):
        monkeypatch.setattr(terminal, "stdout_console", terminal.literal_console(force_terminal=True, width=width))
        assert terminal.print_reports([report]) is True
        widths = [6, room, 4, 6, 8, 3, 7, 9, 7, 3]
        pieces = [long[i : i + room] for i in range(0, len(long), room)]
        rows = [_line(("tomi", pieces[0], *counts), widths)]
        rows += [_line(("", piece, *("",) * 8), widths) for piece in pieces[1:]]
        total = sum(widths) + 18
        assert _printed(capsys) == [
            "reconciliation (read = loaded + rejected)",
            _line(NAMES, widths),
            "─" * total,
            *rows,
        ]


def test_on_a_wide_terminal_the_input_keeps_its_own_width(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(terminal, "stdout_console", terminal.literal_console(force_terminal=True, width=200))
    assert terminal.print_reports([LoadReport("tomi", "a.txt", read=1, loaded=1)])
    assert _printed(capsys)[1] == _line(NAMES, [6, 5, 4, 6, 8, 3, 7, 9, 7, 3])


def test_a_literal_console_prints_markup_emoji_and_numbers_as_they_are() -> None:
    out = io.StringIO()
    console = terminal.literal_console(file=out, force_terminal=True, color_system="truecolor", width=80)
    console.print("[bold]x[/bold] :smile: 123 'a' https://x.org")
    assert out.getvalue() == "[bold]x[/bold] :smile: 123 'a' https://x.org\n"


def test_the_module_consoles_write_to_stderr_and_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    terminal.console.print("[a] :smile:")
    terminal.stdout_console.print("[b] :smile:")
    captured = capsys.readouterr()
    assert (captured.err, captured.out) == ("[a] :smile:\n", "[b] :smile:\n")


def test_exit_with_error_prints_one_line_and_exits_with_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as raised:
        terminal.exit_with_error("bad [input] " + "word " * 30)
    assert raised.value.exit_code == 2  # bad input (docs/cli.md)
    assert capsys.readouterr().err == "error: bad [input] " + "word " * 30 + "\n"  # one line, never wrapped
    with pytest.raises(typer.Exit) as raised:
        terminal.exit_with_error("locked", 9)
    assert raised.value.exit_code == 9
    assert capsys.readouterr().err == "error: locked\n"


def test_show_reconciliation_names_the_first_input_that_does_not_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    good = LoadReport("tomi", "a.txt", read=2, loaded=2)
    first = LoadReport("hitom", "b.json", read=5, loaded=3, rejected=1)
    second = LoadReport("fantom", "c.json", read=1, loaded=2)
    terminal.show_reconciliation([good])
    assert "tomi" in capsys.readouterr().out  # shown even when every count adds up
    with pytest.raises(Unreconciled) as raised:
        terminal.show_reconciliation([good, first, second])
    assert raised.value.report is first
    assert (raised.value.loaded, raised.value.counts_shown) == (True, True)
    assert "fantom" in capsys.readouterr().out


def test_the_error_word_is_bold_red_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    console = terminal.literal_console(file=out, force_terminal=True, color_system="standard", width=80)
    monkeypatch.setattr(terminal, "console", console)
    with pytest.raises(typer.Exit):
        terminal.exit_with_error("no such file")
    # SGR 1 bold, 31 red on "error: " only, then reset: the message itself is plain (rich's Text + Text would have
    # given the left part's style to the whole line)
    assert out.getvalue() == "\x1b[1;31merror: \x1b[0mno such file\n"
