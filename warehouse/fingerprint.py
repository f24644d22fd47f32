"""A content fingerprint of an input file or folder: the cache key of staged sources.

It hashes relative paths and bytes, so moving a dataset keeps its fingerprint and editing
one byte changes it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def fingerprint(path: Path, *salt: str) -> str:
    """sha256 over (relative path, size, bytes) of every file under `path`, plus `salt`."""
    digest = hashlib.sha256()
    for part in salt:
        digest.update(part.encode("utf-8") + b"\0")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        name = file.name if file == path else file.relative_to(path).as_posix()
        digest.update(name.encode("utf-8") + b"\0" + str(file.stat().st_size).encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
