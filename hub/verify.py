"""Check a release (downloaded from the Hub, or a local folder) against its own manifest.

Every listed file must exist with the listed size and sha256, the manifest's content id must
match its file list, and no unlisted file may sit among the data (a stray shard would be picked
up by the card's globs and change what `load_dataset` returns).
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.manifest import MANIFEST_NAME, ManifestError, content_id, load_manifest, sha256_file
from hub.publish import MANAGED_PREFIXES, REPO_TYPE
from hub.remote import PublishError, RetryPolicy, with_retries


@dataclass
class VerifyReport:
    where: str
    tag: str | None = None
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_folder(root: Path, where: str | None = None) -> VerifyReport:
    """Compare the files under `root` with `root/manifest.json`."""
    root = Path(root)
    report = VerifyReport(where or str(root))
    try:
        manifest = load_manifest(root / MANIFEST_NAME)
    except ManifestError as exc:
        report.problems.append(str(exc))
        return report
    report.tag = manifest["release"]["tag"]
    listed = {entry["path"]: entry for entry in manifest["files"]}
    for path, entry in sorted(listed.items()):
        target = root / path
        report.checked += 1
        if not target.is_file():
            report.problems.append(f"{path}: missing")
        elif target.stat().st_size != entry["size"]:
            report.problems.append(f"{path}: size {target.stat().st_size} != {entry['size']} in the manifest")
        elif sha256_file(target) != entry["sha256"]:
            report.problems.append(f"{path}: sha256 differs from the manifest")
    for prefix in MANAGED_PREFIXES:
        for path in sorted((root / prefix).rglob("*")) if (root / prefix).is_dir() else []:
            relative = path.relative_to(root).as_posix()
            if path.is_file() and relative not in listed:
                report.problems.append(f"{relative}: not in the manifest (stale or foreign file)")
    if content_id(manifest["files"]) != manifest["release"]["content_id"]:
        report.problems.append("manifest: content_id does not match its own file list")
    return report


def verify_remote(repo_id: str, revision: str, *, api: Any = None, policy: RetryPolicy = RetryPolicy()) -> VerifyReport:
    """Download `repo_id@revision` into a fresh temporary folder (never a cache that could hide a
    change) and verify it."""
    from hub.remote import make_api

    api = api if api is not None else make_api()
    token = api.token if isinstance(getattr(api, "token", None), str) else None
    with tempfile.TemporaryDirectory(prefix="tomforge-verify-") as tmp:
        def download() -> str:
            from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

            try:
                return api.snapshot_download(repo_id, repo_type=REPO_TYPE, revision=revision, local_dir=tmp)
            except (RepositoryNotFoundError, RevisionNotFoundError):
                raise PublishError(f"{repo_id}@{revision}: no such dataset repo or revision") from None
        with_retries(f"download {repo_id}@{revision}", download, policy, token)
        return verify_folder(Path(tmp), where=f"{repo_id}@{revision}")
