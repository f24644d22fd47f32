"""Writing a release into a local folder safely: tags that never move, and one atomic swap.

A folder holds one release at a time, but every tag it held before is remembered in `<folder>.tags.json`
beside it (tag -> sha256 of that release's manifest; the current tag is in the folder's manifest), so
`--tag v1` can never come to mean other content, exactly as on the Hub (exit 6). The new release is built next to the folder and exchanged
with it in one `renameat2(RENAME_EXCHANGE)` (Linux): a reader, or a `kill -9` at any point, finds the
old release or the new one, never a missing or half-written folder.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

from tomforge.schemas.hub_errors import ConflictError

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def tags_path(target: Path) -> Path:
    return target.with_name(target.name + ".tags.json")


def manifest_digest(manifest_bytes: bytes) -> str:
    return hashlib.sha256(manifest_bytes).hexdigest()


def recorded_tags(target: Path, current_manifest: Path) -> dict[str, str]:
    """Every tag the folder has held -> its manifest digest (the history file plus the release in place)."""
    tags: dict[str, str] = {}
    history = tags_path(target)
    if history.is_file():
        try:
            tags.update(json.loads(history.read_text(encoding="utf-8")))
        except ValueError as exc:
            raise ConflictError(f"{history}: unreadable tag history ({exc}); not replacing the release") from None
    if current_manifest.is_file():
        raw = current_manifest.read_bytes()
        try:
            tag = json.loads(raw)["release"]["tag"]
        except (ValueError, KeyError, TypeError):
            raise ConflictError(f"{current_manifest}: unreadable manifest; not replacing the release") from None
        tags.setdefault(tag, manifest_digest(raw))
    return tags


def check_tag(target: Path, current_manifest: Path, tag: str, new_manifest: bytes) -> bool:
    """True when `tag` already holds exactly this release (nothing to do); raise ConflictError when it
    holds another; False when the tag is new."""
    held = recorded_tags(target, current_manifest).get(tag)
    if held is None:
        return False
    if held == manifest_digest(new_manifest):
        return True
    raise ConflictError(
        f"{target}: tag {tag} already holds a different release (manifest sha256 {held[:12]}, this "
        f"build {manifest_digest(new_manifest)[:12]}); tags never move: publish under another tag"
    )


def remember_tags(target: Path, current_manifest: Path) -> None:
    """Before the swap, write down every tag held so far (the release in place included): after the swap
    its tag is no longer in the folder, yet must never move. The new tag needs no entry: the folder's
    manifest holds it. So a kill at any point leaves the same tags meaning the same releases."""
    tags = recorded_tags(target, current_manifest)
    history = tags_path(target)
    text = json.dumps(tags, sort_keys=True, indent=2) + "\n"
    if (history.is_file() and history.read_text(encoding="utf-8") == text) or (not tags and not history.is_file()):
        return
    temp = history.with_name(f".{history.name}.{os.getpid()}")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, history)


def remove_leftovers(target: Path) -> None:
    """Half-built or retired folders of a writer that was killed (under the lock no other is running)."""
    for pattern in (f".{target.name}.building-*", f".{target.name}.old-*", f".{target.name}.tags.json.*"):
        for leftover in target.parent.glob(pattern):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def exchange(new: Path, target: Path) -> bool:
    """Atomically swap the two paths (both must exist); False where the kernel or file system cannot."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    status = renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE)
    if status == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(target))


def swap_in(new: Path, target: Path) -> None:
    """Put the folder `new` at `target`; the old release (if any) ends up at `new`, to be removed."""
    if not target.exists():
        os.replace(new, target)
        return
    if exchange(new, target):
        return
    # no RENAME_EXCHANGE here: two renames, with a short window where `target` is missing
    retired = new.with_name(new.name + ".retired")
    os.replace(target, retired)
    os.replace(new, target)
    os.replace(retired, new)
