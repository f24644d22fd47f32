"""Single-file outputs are the old version or the complete new one, also when the writer is killed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tomforge.schemas.atomic_files import replaced_on_success, write_text_atomically

OLD = "previous report\n"


def test_new_text_replaces_old(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.md"
    write_text_atomically(target, OLD)
    write_text_atomically(target, "new ü\n")
    assert target.read_bytes() == "new ü\n".encode()
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.md"]


def test_error_mid_write_keeps_old_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "hits.parquet"
    target.write_text(OLD)
    with pytest.raises(RuntimeError, match="disk full"):
        with replaced_on_success(target) as temp:
            temp.write_text("half of the new")
            raise RuntimeError("disk full")
    assert target.read_text() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["hits.parquet"]


def test_killed_writer_leaves_old_file(tmp_path: Path) -> None:
    """A real SIGKILL while the new file is half written: the reader still finds the old one whole."""
    target = tmp_path / "eval_rows.jsonl"
    target.write_text(OLD)
    child = f"""
import os, signal
from tomforge.schemas.atomic_files import replaced_on_success
with replaced_on_success({str(target)!r}) as temp:
    with open(temp, "w") as out:
        out.write("x" * 100_000)
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", child], cwd=Path(__file__).parents[2], check=False)
    assert done.returncode == -signal.SIGKILL
    assert target.read_text() == OLD
    # the hidden partial stays behind a kill (nothing can run then); it never takes the target's name
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p != target)
    assert len(leftovers) == 1 and leftovers[0].startswith(".eval_rows.jsonl.partial-")


def test_written_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """UTF-8 also where the locale's encoding is ASCII (a container's C locale)."""
    from tests.ascii_locale import run_in_ascii_locale

    target = tmp_path / "report.md"
    write_text_atomically(target, OLD)  # here too, so that a mutation tool maps this test to the function
    done = run_in_ascii_locale(
        "import sys; from tomforge.schemas.atomic_files import write_text_atomically; "
        "write_text_atomically(sys.argv[1], 'caf\\u00e9 \\u2013 ok\\n')",
        str(target),
    )
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == "café – ok\n".encode("utf-8")
