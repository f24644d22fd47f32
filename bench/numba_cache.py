"""A mutant's file put back whole for numba: its time stamp and its own cache entries (`bench/mutations.py`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def numba_cache_kept(source: Path) -> Iterator[None]:
    """Around a mutant of `source`: afterwards its modification time and its numba cache files are as before.

    Why: numba keys a kernel's cache on its source file's time stamp and size, so a mutant's compile replaces the
    cached original, and once the text is restored every later run in this copy compiled the original kernels again
    (issue 38: files with kernels held 635 s of the 1,751 s of CI's mutation check). Only `source`'s own entries are
    kept: a kernel of another file that inlines one of `source`'s is not invalidated by numba either way.
    """
    stamp = source.stat()
    cache = source.parent / "__pycache__"
    mine = [f"{source.stem}.*.nbi", f"{source.stem}.*.nbc"]
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as keep:
        kept = {f.name for pattern in mine for f in cache.glob(pattern)}
        for name in kept:
            shutil.copy2(cache / name, Path(keep) / name)
        try:
            yield
        finally:
            os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
            for f in [f for pattern in mine for f in cache.glob(pattern)]:
                if f.name not in kept:
                    f.unlink()
            for name in kept:
                shutil.copy2(Path(keep) / name, cache / name)
