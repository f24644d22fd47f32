"""hub/folder.py against hand-worked values (issue 38: the mutants mutmut left alive): the tag history's path, digests
and exact text, a tag that would move refused with the whole line, which leftovers of a killed writer go and which
stay, and the swap with and without the kernel's RENAME_EXCHANGE (a fake libc for the answers this machine never
gives). Temporary folders only (< 1 s)."""

from __future__ import annotations

import ctypes
import errno
import json
import os
from pathlib import Path

import pytest

import tomforge.hub.folder as folder
from tomforge.hub.folder import (
    check_tag,
    exchange,
    manifest_digest,
    recorded_tags,
    remember_tags,
    remove_leftovers,
    swap_in,
    tags_path,
)
from tomforge.schemas.hub_errors import ConflictError

ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc"), FIPS 180-2's example


def manifest(path: Path, tag: str) -> bytes:
    raw = json.dumps({"release": {"tag": tag}}).encode()
    path.write_bytes(raw)
    return raw


def test_the_history_sits_beside_the_folder_and_digests_are_sha256() -> None:
    assert tags_path(Path("/x/var/release")) == Path("/x/var/release.tags.json")
    assert manifest_digest(b"abc") == ABC


def test_recorded_tags_join_the_history_and_the_release_in_place(tmp_path: Path) -> None:
    target, current = tmp_path / "rel", tmp_path / "manifest.json"
    assert recorded_tags(target, current) == {}
    raw = manifest(current, "v2")
    assert recorded_tags(target, current) == {"v2": manifest_digest(raw)}
    tags_path(target).write_text(json.dumps({"v1": "d1", "v2": "kept"}), encoding="utf-8")
    assert recorded_tags(target, current) == {"v1": "d1", "v2": "kept"}  # the history's entry wins
    current.unlink()
    assert recorded_tags(target, current) == {"v1": "d1", "v2": "kept"}


@pytest.mark.parametrize("text", ["{not json", "[1, 2"])
def test_an_unreadable_history_refuses_the_release(tmp_path: Path, text: str) -> None:
    target = tmp_path / "rel"
    tags_path(target).write_text(text, encoding="utf-8")
    with pytest.raises(ConflictError) as caught:
        recorded_tags(target, tmp_path / "none.json")
    message = str(caught.value)
    assert message.startswith(f"{tags_path(target)}: unreadable tag history (")
    assert message.endswith("); not replacing the release")


@pytest.mark.parametrize("raw", [b"{", b'{"release": {}}', b"[1]", b'{"release": 3}'])
def test_an_unreadable_manifest_refuses_the_release(tmp_path: Path, raw: bytes) -> None:
    current = tmp_path / "manifest.json"
    current.write_bytes(raw)
    with pytest.raises(ConflictError) as caught:
        recorded_tags(tmp_path / "rel", current)
    assert str(caught.value) == f"{current}: unreadable manifest; not replacing the release"


def test_a_tag_is_new_the_same_or_refused(tmp_path: Path) -> None:
    target, current = tmp_path / "rel", tmp_path / "manifest.json"
    tags_path(target).write_text(json.dumps({"v1": ABC}), encoding="utf-8")
    assert check_tag(target, current, "v2", b"abc") is False
    assert check_tag(target, current, "v1", b"abc") is True
    with pytest.raises(ConflictError) as caught:
        check_tag(target, current, "v1", b"")
    assert str(caught.value) == (
        f"{target}: tag v1 already holds a different release (manifest sha256 ba7816bf8f01, this build "
        "e3b0c44298fc); tags never move: publish under another tag"
    )


def test_remember_tags_writes_sorted_indented_text_and_only_when_it_changes(tmp_path: Path) -> None:
    target, current = tmp_path / "rel", tmp_path / "manifest.json"
    history = tags_path(target)
    remember_tags(target, current)
    assert not history.exists()  # nothing held, nothing written
    raw = manifest(current, "v2")
    history.write_text(json.dumps({"v1": "d1"}), encoding="utf-8")
    remember_tags(target, current)
    assert history.read_text(encoding="utf-8") == f'{{\n  "v1": "d1",\n  "v2": "{manifest_digest(raw)}"\n}}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "rel.tags.json"]  # no temp left
    inode = history.stat().st_ino
    remember_tags(target, current)
    assert history.stat().st_ino == inode  # the same text: not replaced
    current.unlink()
    remember_tags(target, current)  # the history alone: still the same text
    assert history.stat().st_ino == inode


def test_remember_tags_keeps_an_empty_history_file_as_it_finds_it(tmp_path: Path) -> None:
    target, current = tmp_path / "rel", tmp_path / "manifest.json"
    tags_path(target).write_text("{}", encoding="utf-8")
    remember_tags(target, current)  # no tags, but a history file: written as the canonical text
    assert tags_path(target).read_text(encoding="utf-8") == "{}\n"


def test_only_a_killed_writers_leftovers_are_removed(tmp_path: Path) -> None:
    target = tmp_path / "rel"
    target.mkdir()
    (target / "data.parquet").write_text("x")
    tags_path(target).write_text("{}")
    for name in (".rel.building-12", ".rel.old-12"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text("x")
    (tmp_path / ".rel.tags.json.4242").write_text("{")  # a half-written history
    (tmp_path / ".rel.building-file").write_text("x")  # a file, not a folder
    for keep in (".other.building-1", "rel.building-1", ".rel.tags.json", ".relx.old-1"):
        (tmp_path / keep).write_text("x")
    remove_leftovers(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".other.building-1",
        ".rel.tags.json",
        ".relx.old-1",
        "rel",
        "rel.building-1",
        "rel.tags.json",
    ]
    assert (target / "data.parquet").read_text() == "x"


def test_the_exchange_swaps_two_folders(tmp_path: Path) -> None:
    new, target = tmp_path / "new", tmp_path / "rel"
    for path, mark in ((new, "new"), (target, "old")):
        path.mkdir()
        (path / "mark").write_text(mark)
    assert exchange(new, target) is True
    assert ((target / "mark").read_text(), (new / "mark").read_text()) == ("new", "old")
    with pytest.raises(OSError) as caught:
        exchange(tmp_path / "missing", target)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOENT, str(target))


class FakeLibc:
    def __init__(self, status: int) -> None:
        self.status = status
        self.calls: list[tuple] = []

    def renameat2(self, *args: object) -> int:
        self.calls.append(args)
        return self.status


@pytest.mark.parametrize(("code", "result"), [(errno.ENOSYS, False), (errno.EINVAL, False), (errno.ENOTSUP, False)])
def test_a_kernel_without_the_exchange_says_so(monkeypatch, tmp_path: Path, code: int, result: bool) -> None:
    libc = FakeLibc(-1)
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno: libc)
    monkeypatch.setattr(ctypes, "get_errno", lambda: code)
    assert exchange(tmp_path / "a", tmp_path / "b") is result
    assert libc.calls == [(-100, os.fsencode(tmp_path / "a"), -100, os.fsencode(tmp_path / "b"), 2)]


def test_other_answers_of_the_fake_libc(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno: FakeLibc(0))
    assert exchange(tmp_path / "a", tmp_path / "b") is True
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno: FakeLibc(-1))
    monkeypatch.setattr(ctypes, "get_errno", lambda: errno.EACCES)
    with pytest.raises(PermissionError):
        exchange(tmp_path / "a", tmp_path / "b")
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno: object())  # no renameat2
    assert exchange(tmp_path / "a", tmp_path / "b") is False
    monkeypatch.setattr(folder.ctypes.util, "find_library", lambda name: None)
    assert exchange(tmp_path / "a", tmp_path / "b") is False


@pytest.mark.parametrize("kernel_exchange", [True, False])
def test_swap_in_leaves_the_new_release_in_place_and_the_old_beside_it(
    monkeypatch, tmp_path: Path, kernel_exchange: bool
) -> None:
    if not kernel_exchange:
        monkeypatch.setattr(folder, "exchange", lambda new, target: False)
    new, target = tmp_path / "new", tmp_path / "rel"
    new.mkdir()
    (new / "mark").write_text("first")
    swap_in(new, target)  # no release yet: a rename
    assert ((target / "mark").read_text(), new.exists()) == ("first", False)
    new.mkdir()
    (new / "mark").write_text("second")
    swap_in(new, target)
    assert ((target / "mark").read_text(), (new / "mark").read_text()) == ("second", "first")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "rel"]  # no ".retired" left


def test_the_history_is_written_in_tag_order_whatever_order_the_tags_came_in(tmp_path: Path) -> None:
    target, current = tmp_path / "rel", tmp_path / "manifest.json"
    tags_path(target).write_text(json.dumps({"v9": "d9"}), encoding="utf-8")
    raw = manifest(current, "v10")  # read after the history: "v10" sorts before "v9"
    remember_tags(target, current)
    assert tags_path(target).read_text(encoding="utf-8") == (
        f'{{\n  "v10": "{manifest_digest(raw)}",\n  "v9": "d9"\n}}\n'
    )


def test_the_kernels_refusal_is_worded_by_the_system(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda name, use_errno: FakeLibc(-1))
    monkeypatch.setattr(ctypes, "get_errno", lambda: errno.EACCES)
    with pytest.raises(PermissionError) as caught:
        exchange(tmp_path / "a", tmp_path / "b")
    assert str(caught.value) == f"[Errno {errno.EACCES}] Permission denied: '{tmp_path / 'b'}'"


def test_a_leftover_that_cannot_be_removed_does_not_stop_the_cleanup(tmp_path: Path) -> None:
    target = tmp_path / "rel"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".rel.building-1").symlink_to(tmp_path / "elsewhere")  # rmtree refuses a link
    (tmp_path / ".rel.old-2").mkdir()
    remove_leftovers(target)  # no error
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rel.building-1", "elsewhere"]


def test_a_leftover_gone_before_its_turn_is_no_error(monkeypatch, tmp_path: Path) -> None:
    target = tmp_path / "rel"
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter([self / ".rel.old-gone"]))
    remove_leftovers(target)  # a file listed, then missing when removed: nothing to do
