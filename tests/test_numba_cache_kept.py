"""bench/numba_cache.py `numba_cache_kept` (used by bench/mutations.py): after a mutant, its file's time stamp and numba cache entries are as before.

Why it matters: numba keys a kernel's cache on the source file's stamp; without this, every run after a mutant of a
file with kernels compiled them again (issue 38, CI time). A real kernel checks the premise, planted files the rules.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.numba_cache import numba_cache_kept

KERNEL = "from numba import njit\n\n\n@njit(cache=True)\ndef add(a, b):\n    return a + b\n"
CALL = "import kernel\nkernel.add(1, 2)\nprint(kernel.add.stats.cache_hits and 'hit' or 'miss')\n"


def _call(folder: Path) -> str:
    """A fresh interpreter calls the kernel: 'hit' when it came from numba's cache, 'miss' when compiled."""
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", CALL], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_after_a_mutant_the_original_kernel_loads_from_the_cache(tmp_path: Path) -> None:
    source = tmp_path / "kernel.py"
    source.write_text(KERNEL, encoding="utf-8")
    assert _call(tmp_path) == "miss"  # first compile, cached
    assert _call(tmp_path) == "hit"
    with numba_cache_kept(source):
        source.write_text(KERNEL.replace("a + b", "a - b"), encoding="utf-8")
        assert _call(tmp_path) == "miss"  # the mutant compiles (its text differs)
        source.write_text(KERNEL, encoding="utf-8")
    assert _call(tmp_path) == "hit"  # without numba_cache_kept: "miss", the original compiled again


def test_entries_and_stamp_put_back_and_the_mutants_own_removed(tmp_path: Path) -> None:
    source = tmp_path / "kern.py"
    source.write_text("x = 1\n", encoding="utf-8")
    os.utime(source, ns=(1_000_000_000, 2_000_000_000))
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    (cache / "kern.f-4.py311.nbi").write_bytes(b"index")
    (cache / "kern.f-4.py311.1.nbc").write_bytes(b"code")
    (cache / "other.g-1.py311.nbi").write_bytes(b"other")  # another file's entry: not this context's business
    with numba_cache_kept(source):
        source.write_text("x = 2\n", encoding="utf-8")
        (cache / "kern.f-4.py311.nbi").write_bytes(b"mutant index")
        (cache / "kern.f-4.py311.1.nbc").unlink()
        (cache / "kern.f-9.py311.nbi").write_bytes(b"mutant only")
        (cache / "other.g-1.py311.nbi").write_bytes(b"other, changed")
        source.write_text("x = 1\n", encoding="utf-8")
    assert source.stat().st_mtime_ns == 2_000_000_000
    assert {f.name: f.read_bytes() for f in cache.iterdir()} == {
        "kern.f-4.py311.nbi": b"index",
        "kern.f-4.py311.1.nbc": b"code",
        "other.g-1.py311.nbi": b"other, changed",
    }


def test_a_file_without_a_cache_folder_is_left_as_it_was(tmp_path: Path) -> None:
    source = tmp_path / "plain.py"
    source.write_text("y = 1\n", encoding="utf-8")
    stamp = source.stat().st_mtime_ns
    with numba_cache_kept(source):
        source.write_text("y = 2\n", encoding="utf-8")
        source.write_text("y = 1\n", encoding="utf-8")
    assert source.stat().st_mtime_ns == stamp
    assert not (tmp_path / "__pycache__").exists()
