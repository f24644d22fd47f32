"""Output files that are either the old version or the complete new one, never half of one.

A report, a hits table or an evaluation's rows written in place is cut short when the process is killed, and the
next reader takes the torn file for the result. Every single-file output is therefore written to a hidden file
beside its target and renamed over it (`os.replace` is atomic on one filesystem); on an error the hidden file is
removed and the previous output stays. Folders (the warehouse, a release) have their own swap; this is for files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replaced_on_success(target: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside `target`; move it over `target` only if the block finishes."""
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        yield temp
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_text_atomically(target: Path | str, text: str) -> Path:
    """`Path.write_text` (UTF-8) that never leaves a torn file."""
    with replaced_on_success(target) as temp:
        temp.write_text(text, encoding="utf-8")
    return Path(target)
