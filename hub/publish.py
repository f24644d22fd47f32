"""Publish a release folder to a Hub dataset repo: one commit, stale shards deleted, a tag.

The plan (what to add, what is unchanged, what to delete) is computed against the branch head;
the commit names that head as its parent (optimistic locking), so a concurrent writer makes it
fail instead of being overwritten. Transient failures are retried with backoff. A dry run
prints the plan and changes nothing.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tomforge.hub.manifest import MANIFEST_NAME, load_manifest
from tomforge.hub.remote import RetryPolicy, with_retries
from tomforge.schemas.hub_errors import ConflictError, PublishError, status_of
from tomforge.schemas.progress import SILENT, Progress

HUB_MANAGED = frozenset({".gitattributes"})  # the Hub writes it; every other file the release lacks is deleted
REPO_TYPE = "dataset"


@dataclass(frozen=True)
class LocalFile:
    path: str
    size: int
    sha256: str
    git_oid: str


@dataclass
class Plan:
    repo_id: str
    tag: str
    branch: str
    repo_exists: bool
    parent: str | None
    tag_target: str | None
    add: list[LocalFile] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The plan as a user reads it (no secrets: paths, sizes, hashes, commit ids)."""
        out = [
            f"repo: {self.repo_id} (dataset){'' if self.repo_exists else ' -- will be created'}",
            f"branch: {self.branch} at {self.parent or '(new repo)'}",
            f"tag: {self.tag}" + (f" -- already exists at {self.tag_target}" if self.tag_target else " (new)"),
        ]
        out += [f"  add     {f.path} ({f.size} bytes, sha256 {f.sha256[:12]})" for f in self.add]
        out += [f"  delete  {path} (not in this release)" for path in self.delete]
        out.append(
            f"one commit: {len(self.add)} to upload, {len(self.delete)} to delete, {len(self.unchanged)} unchanged"
        )
        return out


@dataclass
class PublishResult:
    plan: Plan
    commit: str | None
    tag: str
    dry_run: bool
    already_published: bool = False
    manifest: dict[str, Any] | None = None  # of the release built for this publish


def local_file(root: Path, relative: str) -> LocalFile:
    """sha256 (what LFS compares) and git blob id (what regular files compare), streamed."""
    path = root / relative
    size = path.stat().st_size
    sha256, sha1 = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha256.update(block)
            sha1.update(block)
    return LocalFile(relative, size, sha256.hexdigest(), sha1.hexdigest())


def local_files(root: Path) -> dict[str, LocalFile]:
    paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return {relative: local_file(root, relative) for relative in paths}


def _same(local: LocalFile, remote: Any) -> bool:
    lfs = getattr(remote, "lfs", None)
    if lfs is not None:
        return lfs.sha256 == local.sha256
    return getattr(remote, "blob_id", None) == local.git_oid


class Publisher:
    """One publish run against one repo (the api, retry policy and progress travel together)."""

    def __init__(
        self, api: Any, repo_id: str, *, policy: RetryPolicy = RetryPolicy(), progress: Progress = SILENT
    ) -> None:
        self.api, self.repo_id, self.policy, self.progress = api, repo_id, policy, progress
        self.token = api.token if isinstance(getattr(api, "token", None), str) else None

    def _call(self, action: str, call: Callable[[], Any]) -> Any:
        return with_retries(action, call, self.policy, self.token, on_retry=self.progress.info)

    def _missing(self, action: str, call: Callable[[], Any]) -> Any:
        """Run a read that may answer 404 (repo or revision absent): None then."""
        from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

        def guarded() -> Any:
            try:
                return call()
            except (RepositoryNotFoundError, RevisionNotFoundError):
                return None

        return self._call(action, guarded)

    def head(self, branch: str) -> str | None:
        info = self._missing(
            "read the repo", lambda: self.api.repo_info(self.repo_id, repo_type=REPO_TYPE, revision=branch)
        )
        return None if info is None else info.sha

    def tag_target(self, tag: str) -> str | None:
        refs = self._missing("list the tags", lambda: self.api.list_repo_refs(self.repo_id, repo_type=REPO_TYPE))
        if refs is None:
            return None
        return next((ref.target_commit for ref in refs.tags if ref.name == tag), None)

    def remote_manifest(self, revision: str) -> bytes | None:
        from huggingface_hub.errors import EntryNotFoundError

        def read() -> bytes | None:
            with tempfile.TemporaryDirectory(prefix="tomforge-manifest-") as tmp:  # never the shared cache
                try:
                    path = self.api.hf_hub_download(
                        self.repo_id, MANIFEST_NAME, repo_type=REPO_TYPE, revision=revision, local_dir=tmp
                    )
                except EntryNotFoundError:
                    return None
                return Path(path).read_bytes()

        return self._call("read the remote manifest", read)

    def plan(self, local: dict[str, LocalFile], tag: str, branch: str) -> Plan:
        parent = self.head(branch)
        plan = Plan(
            self.repo_id,
            tag,
            branch,
            repo_exists=parent is not None,
            parent=parent,
            tag_target=self.tag_target(tag) if parent is not None else None,
        )
        remote: dict[str, Any] = {}
        if parent is not None:
            tree = self._call(
                "list the repo files",
                lambda: list(
                    self.api.list_repo_tree(self.repo_id, repo_type=REPO_TYPE, revision=parent, recursive=True)
                ),
            )
            remote = {item.path: item for item in tree if hasattr(item, "blob_id")}
        for path in sorted(local):
            if path in remote and _same(local[path], remote[path]):
                plan.unchanged.append(path)
            else:
                plan.add.append(local[path])
        plan.delete = sorted(p for p in remote if p not in HUB_MANAGED and p not in local)
        return plan

    def commit(self, root: Path, plan: Plan, message: str, local_manifest: bytes) -> str | None:
        """One commit with every addition and deletion, parent = the planned head. A transient
        failure is retried; if the commit landed although its answer was lost, it is recognized.
        None only when there is nothing to commit and the branch has no head (the caller refuses to tag)."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        if not plan.add and not plan.delete:
            return plan.parent  # nothing changed: the release is the head as it is

        def attempt() -> str:
            current = self.head(plan.branch)
            if current != plan.parent:
                if current is not None and self.remote_manifest(current) == local_manifest:
                    return current  # an earlier attempt landed; its answer was lost
                raise ConflictError(
                    f"{self.repo_id}@{plan.branch} moved from {plan.parent} to {current} while "
                    "publishing; run publish again to plan against the new head"
                )
            operations: list[CommitOperationAdd | CommitOperationDelete] = [
                CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=str(root / f.path)) for f in plan.add
            ]
            operations += [CommitOperationDelete(path_in_repo=path) for path in plan.delete]
            try:
                info = self.api.create_commit(
                    self.repo_id,
                    operations,
                    commit_message=message,
                    repo_type=REPO_TYPE,
                    revision=plan.branch,
                    parent_commit=plan.parent,
                )
            except Exception as exc:
                if status_of(exc) in (409, 412):
                    raise ConflictError(
                        f"{self.repo_id}@{plan.branch} moved since {plan.parent}: another commit "
                        "landed first; run publish again"
                    ) from None
                raise
            return info.oid

        return self._call("commit the release", attempt)

    def tag(self, tag: str, commit: str) -> None:
        def create() -> None:
            try:
                self.api.create_tag(
                    self.repo_id, tag=tag, revision=commit, repo_type=REPO_TYPE, tag_message=f"tomforge release {tag}"
                )
            except Exception as exc:
                if status_of(exc) == 409 and self.tag_target(tag) == commit:
                    return  # an earlier attempt created it
                raise

        self._call(f"create tag {tag}", create)


def publish_release(
    root: Path,
    repo_id: str,
    *,
    api: Any = None,
    tag: str | None = None,
    branch: str = "main",
    private: bool = False,
    dry_run: bool = False,
    policy: RetryPolicy = RetryPolicy(),
    progress: Progress = SILENT,
) -> PublishResult:
    """Upload the release folder `root` (as built by `hub.release.build_release`) and tag it: the plan
    and the outcome as info lines, the commit as the stage "upload" (files added)."""
    from tomforge.hub.remote import make_api

    root = Path(root)
    manifest = load_manifest(root / MANIFEST_NAME)
    tag = tag or manifest["release"]["tag"]
    if tag != manifest["release"]["tag"]:
        raise PublishError(f"tag {tag!r} differs from the manifest's {manifest['release']['tag']!r}; rebuild with it")
    publisher = Publisher(api if api is not None else make_api(), repo_id, policy=policy, progress=progress)
    local = local_files(root)
    plan = publisher.plan(local, tag, branch)
    for line in plan.lines():
        progress.info(line)
    if dry_run:
        return PublishResult(plan, None, tag, dry_run=True)
    local_manifest = (root / MANIFEST_NAME).read_bytes()
    if plan.tag_target is not None:
        if publisher.remote_manifest(plan.tag_target) == local_manifest:
            progress.info(f"tag {tag} already holds this release; nothing to do")
            return PublishResult(plan, plan.tag_target, tag, dry_run=False, already_published=True)
        raise ConflictError(f"tag {tag} already exists on {repo_id} with a different release; choose another tag")
    if not plan.repo_exists:
        publisher._call(
            "create the repo",
            lambda: publisher.api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True),
        )
        plan = publisher.plan(local, tag, branch)
    with progress.stage("upload", total=len(plan.add)) as uploading:
        commit = publisher.commit(root, plan, f"Release {tag}", local_manifest)
        uploading.advance(len(plan.add))  # one commit carries them all
    if commit is None:
        raise PublishError(f"{repo_id}: no commit to tag")
    publisher.tag(tag, commit)
    progress.info(f"published {repo_id}@{tag} (commit {commit})")
    return PublishResult(plan, commit, tag, dry_run=False)
