"""The staging cache key (issue 38: mutmut over `warehouse/fingerprint.py`, planted by an independent check):
each digest is written out here by hand with hashlib from the recipe in the module's docstring, salt parts
first (each ended by a NUL), then per file its name, NUL, size, NUL and bytes, files in sorted order."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tomforge.warehouse.fingerprint import fingerprint


def _by_hand(entries: list[tuple[str, bytes]], *salt: str) -> str:
    digest = hashlib.sha256()
    for part in salt:
        digest.update(part.encode("utf-8") + b"\0")
    for name, data in entries:
        digest.update(name.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def test_one_file_keyed_by_its_own_name_size_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "tömi.txt"
    path.parent.mkdir()
    path.write_bytes(b"1 Anne entered the den.\n")
    assert fingerprint(path) == _by_hand([("tömi.txt", b"1 Anne entered the den.\n")])
    assert fingerprint(path, "tomi", "v1") == _by_hand([("tömi.txt", b"1 Anne entered the den.\n")], "tomi", "v1")


def test_a_folder_keyed_by_relative_posix_paths_in_sorted_order(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "b").mkdir(parents=True)
    (root / "a.json").write_bytes(b"[1]")
    (root / "b" / "c.json").write_bytes(b"")
    (root / "Z.json").write_bytes(b"z")
    (root / "empty").mkdir()
    expected = _by_hand([("Z.json", b"z"), ("a.json", b"[1]"), ("b/c.json", b"")], "s")
    assert fingerprint(root, "s") == expected
    moved = tmp_path / "elsewhere"
    root.rename(moved)
    assert fingerprint(moved, "s") == expected  # moving a dataset keeps its key


def test_a_file_larger_than_one_read_block(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4097 + b"tail"  # 1 MiB + 260 bytes: two blocks of 1 << 20
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert fingerprint(path) == _by_hand([("big.bin", data)])


def test_salt_parts_are_kept_apart(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_bytes(b"x")
    assert fingerprint(path, "ab", "c") != fingerprint(path, "a", "bc")
    assert fingerprint(path, "ab", "c") == _by_hand([("x", b"x")], "ab", "c")
