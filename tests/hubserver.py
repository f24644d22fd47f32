"""A small Hugging Face Hub on loopback, for tests driven by the real `huggingface_hub` and `datasets`.

It speaks the HTTP API for the calls those clients make when publishing and loading a dataset:
repo create and info (per revision), preupload, commit (NDJSON, with `parentCommit` checks), the
LFS batch API with upload and verify, refs and tags, tree listings (404 for missing paths),
paths-info, resolve (HEAD and ranged GET) and card YAML validation. State lives in memory: git
blob ids, LFS pointers and commit ids are computed the way git and the Hub compute them, so the
clients' own checks (etags, unchanged-file detection) run for real. Tests can inject transient
failures (`fail`) and read every request made (`requests`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

USER = "tester"
DATE = "2026-01-01T00:00:00.000Z"
LFS_PATTERNS = re.compile(r"\.(parquet|arrow|bin|safetensors|zip|gz|zst|png|jpg|pt|npy)$")
LFS_MIN_SIZE = 10 * 1024 * 1024
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.arrow filter=lfs diff=lfs merge=lfs -text\n"
# The Hub's own lists are longer; these are the identifiers tomforge may emit plus a few common ones.
KNOWN_LICENSES = {
    "apache-2.0",
    "mit",
    "cc0-1.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0",
    "cc-by-nc-nd-4.0",
    "cc-by-3.0",
    "cc-by-sa-3.0",
    "cc-by-nc-3.0",
    "bsd-2-clause",
    "bsd-3-clause",
    "gpl-3.0",
    "lgpl-3.0",
    "odc-by",
    "odbl",
    "pddl",
    "openrail",
    "llama2",
    "unknown",
    "other",
}
KNOWN_SIZES = {"n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B", "n>1T"}
KNOWN_TASKS = {
    "question-answering",
    "multiple-choice",
    "text-generation",
    "text-classification",
    "token-classification",
    "summarization",
    "translation",
    "fill-mask",
    "other",
}


def git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class Blob:
    data: bytes
    lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def git_oid(self) -> str:
        return git_blob_oid(lfs_pointer(self.sha256, len(self.data)) if self.lfs else self.data)

    def entry(self, path: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "file", "oid": self.git_oid, "size": len(self.data), "path": path}
        if self.lfs:
            entry["lfs"] = {
                "oid": self.sha256,
                "size": len(self.data),
                "pointerSize": len(lfs_pointer(self.sha256, len(self.data))),
            }
        return entry


@dataclass
class Commit:
    oid: str
    parent: str | None
    title: str
    files: dict[str, Blob]


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit | None:
        oid = self.branches.get(revision) or self.tags.get(revision)
        if oid is None and re.fullmatch(r"[0-9a-f]{7,40}", revision):
            matches = [c for c in self.commits if c.startswith(revision)]
            oid = matches[0] if len(matches) == 1 else None
        return self.commits.get(oid) if oid else None


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}

    def response(self) -> Response:
        headers = {"X-Error-Message": self.message, **self.headers}
        if self.code:
            headers["X-Error-Code"] = self.code
        return JSONResponse({"error": self.message}, status_code=self.status, headers=headers)


class FakeHub:
    """The Hub's state and its HTTP handlers (a Starlette app)."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.leaky_errors = False  # a misbehaving proxy that echoes credentials into error messages
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs_store: dict[str, bytes] = {}
        self.requests: list[dict[str, Any]] = []
        self._faults: list[list[Any]] = []
        self._lock = threading.RLock()
        self._secret = b"loopback-hub"
        self._counter = 0
        self.app = Starlette(
            routes=[Route("/{rest:path}", self._dispatch, methods=["GET", "HEAD", "POST", "PUT", "DELETE"])]
        )

    # ----- test helpers -------------------------------------------------------------------
    def fail(self, method: str, pattern: str, status: int = 503, times: int = 1, after: bool = False) -> None:
        """Answer the next `times` requests matching `method` and the path regex with `status`;
        with `after`, the request is carried out first and only its answer is lost."""
        with self._lock:
            self._faults.append([method.upper(), re.compile(pattern), status, times, after])

    def files(self, repo_id: str, revision: str = "main", repo_type: str = "dataset") -> dict[str, bytes]:
        with self._lock:
            commit = self.repos[(repo_type, repo_id)].resolve(revision)
            return {path: blob.data for path, blob in commit.files.items()}

    def head(self, repo_id: str, branch: str = "main", repo_type: str = "dataset") -> str:
        with self._lock:
            return self.repos[(repo_type, repo_id)].branches[branch]

    # ----- plumbing -----------------------------------------------------------------------
    async def _dispatch(self, request: Request) -> Response:
        raw = request.scope.get("raw_path") or request.url.path.encode()
        path = raw.decode("latin-1").split("?", 1)[0]
        authorized = self.token is None or request.headers.get("authorization") == f"Bearer {self.token}"
        record = {
            "method": request.method,
            "path": unquote(path),
            "authorized": authorized,
            "sent_token": "authorization" in request.headers,
        }
        try:
            fault = self._take_fault(request.method, unquote(path), after=False)
            if fault is not None:
                raise HubError(fault, "injected transient failure")
            body = await request.body() if request.method in ("POST", "PUT") else b""
            with self._lock:
                response = self._route(request, path, body, authorized)
            lost = self._take_fault(request.method, unquote(path), after=True)
            if lost is not None:
                raise HubError(lost, "injected failure after the request was carried out")
        except HubError as exc:
            if exc.status == 401 and self.leaky_errors:
                exc.message += f" (received {request.headers.get('authorization', 'nothing')})"
            response = exc.response()
        record["status"] = response.status_code
        self.requests.append(record)
        return response

    def _take_fault(self, method: str, path: str, after: bool) -> int | None:
        with self._lock:
            for fault in self._faults:
                if fault[0] == method and fault[3] > 0 and fault[4] == after and fault[1].search(path):
                    fault[3] -= 1
                    return fault[2]
        return None

    def _route(self, request: Request, path: str, body: bytes, authorized: bool) -> Response:
        segments = [unquote(s) for s in path.strip("/").split("/")]
        method = request.method
        base = str(request.base_url).rstrip("/")
        query = parse_qs(urlsplit(str(request.url)).query)
        if segments[:2] == ["api", "agent-harnesses"]:  # huggingface_hub's client telemetry registry
            return JSONResponse({"standardEnvVars": [], "harnesses": {}})
        if segments[:2] == ["api", "whoami-v2"]:
            self._require_auth(authorized)
            return JSONResponse({"type": "user", "name": USER, "orgs": [], "auth": {"type": "access_token"}})
        if segments[:3] == ["api", "repos", "create"] and method == "POST":
            self._require_auth(authorized)
            return self._create_repo(json.loads(body), base)
        if segments[:2] == ["api", "validate-yaml"] and method == "POST":
            return self._validate_yaml(json.loads(body))
        if segments[0] == "api" and len(segments) >= 4 and segments[1] in ("models", "datasets", "spaces"):
            repo_type = segments[1][:-1]
            repo = self._repo(repo_type, f"{segments[2]}/{segments[3]}", authorized)
            return self._api(request, repo, segments[4:], body, authorized, base, query)
        if segments[0] == "lfs-upload" and method == "PUT":
            return self._lfs_put(segments[1], query, body)
        repo_type, rest = ("dataset", segments[1:]) if segments[0] == "datasets" else ("model", segments)
        if len(rest) >= 2 and rest[1].endswith(".git") and rest[2:] == ["info", "lfs", "objects", "batch"]:
            self._require_auth(authorized)
            repo = self._repo(repo_type, f"{rest[0]}/{rest[1][:-4]}", authorized)
            return self._lfs_batch(repo, json.loads(body), base)
        if rest[:1] == ["lfs-verify"] or segments[:1] == ["lfs-verify"]:
            return self._lfs_verify(json.loads(body))
        if len(rest) >= 5 and rest[2] == "resolve":
            repo = self._repo(repo_type, f"{rest[0]}/{rest[1]}", authorized)
            return self._resolve(request, repo, rest[3], "/".join(rest[4:]))
        raise HubError(404, f"no route for {method} {unquote(path)}")

    def _require_auth(self, authorized: bool) -> None:
        if not authorized:
            raise HubError(401, "Invalid credentials in Authorization header")

    def _repo(self, repo_type: str, repo_id: str, authorized: bool) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None or (repo.private and not authorized):
            raise HubError(404, "Repository not found", "RepoNotFound")
        return repo

    def _commit(self, repo: Repo, revision: str) -> Commit:
        commit = repo.resolve(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    def _new_commit(self, repo: Repo, parent: str | None, title: str, files: dict[str, Blob]) -> Commit:
        self._counter += 1
        listing = "\n".join(f"{p}\t{b.git_oid}" for p, b in sorted(files.items()))
        oid = hashlib.sha1(f"{parent}\n{title}\n{self._counter}\n{listing}".encode()).hexdigest()
        commit = Commit(oid, parent, title, dict(files))
        repo.commits[oid] = commit
        return commit

    # ----- repos --------------------------------------------------------------------------
    def _create_repo(self, payload: dict[str, Any], base: str) -> Response:
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or USER}/{payload['name']}"
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{base}/{prefix}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            return JSONResponse({"error": "You already created this repo", "url": url}, status_code=409)
        repo = Repo(repo_type, repo_id, private=payload.get("visibility") == "private" or bool(payload.get("private")))
        first = self._new_commit(repo, None, "initial commit", {".gitattributes": Blob(GITATTRIBUTES, False)})
        repo.branches["main"] = first.oid
        self.repos[(repo_type, repo_id)] = repo
        return JSONResponse({"url": url, "name": repo_id, "id": repo_id})

    def _api(
        self,
        request: Request,
        repo: Repo,
        rest: list[str],
        body: bytes,
        authorized: bool,
        base: str,
        query: dict[str, list[str]],
    ) -> Response:
        method = request.method
        if not rest and method == "GET":
            return self._info(repo, "main")
        action, args = rest[0], rest[1:]
        if action == "revision" and method == "GET":
            return self._info(repo, "/".join(args))
        if action == "refs" and method == "GET":
            return self._refs(repo)
        if action == "tree" and method == "GET":
            return self._tree(repo, args[0], "/".join(args[1:]), query)
        if action == "paths-info" and method == "POST":
            return self._paths_info(repo, args[0], body)
        if action in ("preupload", "commit", "tag") and method in ("POST", "DELETE"):
            self._require_auth(authorized)
            if action == "preupload":
                return self._preupload(repo, args[0], json.loads(body))
            if action == "commit":
                return self._commit_ndjson(repo, args[0], body, base)
            if method == "DELETE":
                return self._delete_tag(repo, args[0])
            return self._create_tag(repo, args[0], json.loads(body or b"{}"))
        raise HubError(404, f"no route for {method} api/{'/'.join(rest)}")

    def _info(self, repo: Repo, revision: str) -> Response:
        commit = self._commit(repo, revision)
        card = None
        readme = commit.files.get("README.md")
        if readme is not None:
            card = _front_matter(readme.data.decode("utf-8", "replace"))
        return JSONResponse(
            {
                "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
                "id": repo.repo_id,
                "author": repo.repo_id.split("/")[0],
                "sha": commit.oid,
                "lastModified": DATE,
                "createdAt": DATE,
                "private": repo.private,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "cardData": card,
                "siblings": [{"rfilename": p} for p in sorted(commit.files)],
                "usedStorage": sum(len(b.data) for b in commit.files.values()),
            }
        )

    def _refs(self, repo: Repo) -> Response:
        def ref(kind: str, name: str, oid: str) -> dict[str, str]:
            return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": oid}

        return JSONResponse(
            {
                "branches": [ref("heads", n, o) for n, o in sorted(repo.branches.items())],
                "converts": [],
                "tags": [ref("tags", n, o) for n, o in sorted(repo.tags.items())],
                "pullRequests": [],
            }
        )

    def _create_tag(self, repo: Repo, revision: str, payload: dict[str, Any]) -> Response:
        commit = self._commit(repo, revision)
        name = payload.get("tag")
        if not name:
            raise HubError(400, "tag name is required")
        if name in repo.tags:
            raise HubError(409, f"Tag {name} already exists")
        repo.tags[name] = commit.oid
        return JSONResponse({})

    def _delete_tag(self, repo: Repo, name: str) -> Response:
        if repo.tags.pop(name, None) is None:
            raise HubError(404, f"Tag {name} not found", "RevisionNotFound")
        return JSONResponse({})

    # ----- reading ------------------------------------------------------------------------
    def _last_commit(self, repo: Repo, commit: Commit, path: str) -> dict[str, str]:
        """The newest commit (walking parents) that changed `path` or anything under it."""

        def view(c: Commit | None) -> dict[str, str]:
            if c is None:
                return {}
            return {p: b.git_oid for p, b in c.files.items() if p == path or p.startswith(path + "/")}

        current = commit
        while current.parent is not None and view(current) == view(repo.commits.get(current.parent)):
            current = repo.commits[current.parent]
        return {"id": current.oid, "title": current.title, "date": DATE}

    def _entries(self, repo: Repo, commit: Commit, folder: str, recursive: bool, expand: bool) -> list[dict]:
        prefix = f"{folder}/" if folder else ""
        folders: dict[str, list[str]] = {}
        files = []
        for path, blob in sorted(commit.files.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):
                folders.setdefault(prefix + "/".join(parts[:depth]), []).append(blob.git_oid)
            if recursive or len(parts) == 1:
                files.append(blob.entry(path))
        entries = [
            {"type": "directory", "oid": hashlib.sha1("".join(sorted(oids)).encode()).hexdigest(), "path": p}
            for p, oids in sorted(folders.items())
        ] + files
        if expand:
            for entry in entries:
                entry["lastCommit"] = self._last_commit(repo, commit, entry["path"])
        return entries

    def _is_folder(self, commit: Commit, path: str) -> bool:
        return not path or any(p.startswith(path + "/") for p in commit.files)

    def _tree(self, repo: Repo, revision: str, folder: str, query: dict[str, list[str]]) -> Response:
        commit = self._commit(repo, revision)
        folder = folder.strip("/")
        if not self._is_folder(commit, folder):
            raise HubError(404, f"{folder} does not exist on {revision}", "EntryNotFound")
        recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
        expand = query.get("expand", ["false"])[0].lower() in ("true", "1")
        return JSONResponse(self._entries(repo, commit, folder, recursive, expand))

    def _paths_info(self, repo: Repo, revision: str, body: bytes) -> Response:
        commit = self._commit(repo, revision)
        form = parse_qs(body.decode())
        expand = form.get("expand", ["false"])[0].lower() in ("true", "1")
        out = []
        for path in form.get("paths", []):
            path = path.strip("/")
            if path in commit.files:
                entry = commit.files[path].entry(path)
            elif path and self._is_folder(commit, path):
                entry = {
                    "type": "directory",
                    "path": path,
                    "oid": hashlib.sha1(path.encode() + commit.oid.encode()).hexdigest(),
                }
            else:
                continue
            if expand:
                entry["lastCommit"] = self._last_commit(repo, commit, path)
            out.append(entry)
        return JSONResponse(out)

    def _resolve(self, request: Request, repo: Repo, revision: str, path: str) -> Response:
        commit = self._commit(repo, unquote(revision))
        blob = commit.files.get(path)
        if blob is None:
            raise HubError(404, "Entry not found", "EntryNotFound", {"X-Repo-Commit": commit.oid})
        headers = {
            "X-Repo-Commit": commit.oid,
            "ETag": f'"{blob.git_oid}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if blob.lfs:
            headers["X-Linked-Etag"] = f'"{blob.sha256}"'
            headers["X-Linked-Size"] = str(len(blob.data))
        data, status = blob.data, 200
        ranged = re.fullmatch(r"bytes=(\d*)-(\d*)", request.headers.get("range", ""))
        if ranged and request.method == "GET":
            start_s, end_s = ranged.groups()
            size = len(blob.data)
            start = int(start_s) if start_s else max(0, size - int(end_s))
            end = min(int(end_s), size - 1) if start_s and end_s else size - 1
            if start >= size:
                return Response(status_code=416, headers={"Content-Range": f"bytes */{size}", **headers})
            data, status = blob.data[start : end + 1], 206
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        if request.method == "HEAD":
            headers["Content-Length"] = str(len(data))
            return Response(status_code=status, headers=headers)
        return Response(content=data, status_code=status, headers=headers)

    # ----- writing ------------------------------------------------------------------------
    def _preupload(self, repo: Repo, revision: str, payload: dict[str, Any]) -> Response:
        commit = repo.resolve(unquote(revision))
        out = []
        for item in payload.get("files", []):
            sample = base64.b64decode(item.get("sample", ""))
            lfs = bool(LFS_PATTERNS.search(item["path"])) or item["size"] >= LFS_MIN_SIZE or b"\x00" in sample
            entry = {"path": item["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False}
            existing = commit.files.get(item["path"]) if commit else None
            if existing is not None:
                entry["oid"] = existing.sha256 if existing.lfs else existing.git_oid
            out.append(entry)
        return JSONResponse({"files": out, "commitOid": commit.oid if commit else None})

    def _signature(self, oid: str) -> str:
        return hmac.new(self._secret, oid.encode(), hashlib.sha256).hexdigest()

    def _lfs_batch(self, repo: Repo, payload: dict[str, Any], base: str) -> Response:
        if payload.get("operation") != "upload":
            raise HubError(400, "only uploads are supported here")
        objects = []
        for obj in payload.get("objects", []):
            oid, size = obj["oid"], int(obj["size"])
            entry: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            if oid not in self.lfs_store:
                entry["actions"] = {
                    "upload": {"href": f"{base}/lfs-upload/{oid}?size={size}&sig={self._signature(oid)}", "header": {}},
                    "verify": {"href": f"{base}/lfs-verify", "header": {}},
                }
            objects.append(entry)
        return JSONResponse(
            {"transfer": "basic", "objects": objects, "hash_algo": "sha256"},
            headers={"Content-Type": "application/vnd.git-lfs+json"},
        )

    def _lfs_put(self, oid: str, query: dict[str, list[str]], body: bytes) -> Response:
        if not hmac.compare_digest(query.get("sig", [""])[0], self._signature(oid)):
            raise HubError(403, "bad upload signature")
        if hashlib.sha256(body).hexdigest() != oid or len(body) != int(query.get("size", ["-1"])[0]):
            raise HubError(400, "uploaded content does not match its oid and size")
        self.lfs_store[oid] = body
        return Response(status_code=200, headers={"ETag": f'"{oid[:32]}"'})

    def _lfs_verify(self, payload: dict[str, Any]) -> Response:
        data = self.lfs_store.get(payload.get("oid", ""))
        if data is None or len(data) != payload.get("size"):
            raise HubError(404, "object not found")
        return JSONResponse({})

    def _commit_ndjson(self, repo: Repo, revision: str, body: bytes, base: str) -> Response:
        branch = unquote(revision)
        if branch not in repo.branches:
            raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "the first line must be the header")
        header = lines[0]["value"]
        head = repo.branches[branch]
        parent = header.get("parentCommit")
        if parent is not None and not head.startswith(parent):
            raise HubError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(repo.commits[head].files)
        for line in lines[1:]:
            self._apply(files, line["key"], line["value"])
        commit = self._new_commit(repo, head, header.get("summary", ""), files)
        repo.branches[branch] = commit.oid
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        return JSONResponse(
            {
                "success": True,
                "commitOid": commit.oid,
                "hookOutput": "",
                "pullRequestUrl": None,
                "commitUrl": f"{base}/{prefix}{repo.repo_id}/commit/{commit.oid}",
            }
        )

    def _apply(self, files: dict[str, Blob], key: str, value: dict[str, Any]) -> None:
        """One operation line of a commit applied to the files of the commit being built."""
        path = value["path"].strip("/")
        if key == "file":
            files[path] = Blob(base64.b64decode(value["content"]), False)
        elif key == "lfsFile":
            data = self.lfs_store.get(value["oid"])
            if data is None:
                raise HubError(
                    422,
                    f"Your push was rejected because an LFS pointer pointed to a file that does "
                    f"not exist. For instance: {path}",
                )
            files[path] = Blob(data, True)
        elif key == "deletedFile":
            if files.pop(path, None) is None:
                raise HubError(404, f"A file with this name doesn't exist: {path}", "EntryNotFound")
        elif key == "deletedFolder":
            doomed = [p for p in files if p.startswith(path + "/")]
            if not doomed:
                raise HubError(404, f"A folder with this name doesn't exist: {path}", "EntryNotFound")
            for p in doomed:
                del files[p]
        else:
            raise HubError(400, f"unknown operation {key}")

    def _validate_yaml(self, payload: dict[str, Any]) -> Response:
        try:
            metadata = _front_matter(payload.get("content", ""))
        except yaml.YAMLError as exc:
            return JSONResponse({"errors": [{"message": f"invalid YAML: {exc}"}]}, status_code=400)
        if metadata is None:
            return JSONResponse(
                {"errors": [], "warnings": [{"message": "Empty or missing yaml metadata in repo card"}]}
            )
        errors = _card_errors(metadata)
        if errors:
            return JSONResponse({"errors": [{"message": m} for m in errors]}, status_code=400)
        return JSONResponse({"errors": [], "warnings": []})


def _front_matter(text: str) -> dict[str, Any] | None:
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.DOTALL)
    if not match:
        return None
    data = yaml.safe_load(match.group(1))
    if data is not None and not isinstance(data, dict):
        raise yaml.YAMLError("metadata must be a mapping")
    return data


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _card_errors(meta: dict[str, Any]) -> list[str]:
    """The checks the Hub makes on a dataset card's metadata that matter for releases."""
    errors = []
    for name in _as_list(meta.get("license", [])):
        if name not in KNOWN_LICENSES:
            errors.append(f'"license" must be one of the Hub license identifiers (got {name!r})')
    for size in _as_list(meta.get("size_categories", [])):
        if size not in KNOWN_SIZES:
            errors.append(f'"size_categories" has an unknown value {size!r}')
    for task in _as_list(meta.get("task_categories", [])):
        if task not in KNOWN_TASKS:
            errors.append(f'"task_categories" has an unknown value {task!r}')
    configs = meta.get("configs", [])
    if not isinstance(configs, list):
        return errors + ['"configs" must be a list']
    return errors + _config_errors(configs)


def _config_errors(configs: list[Any]) -> list[str]:
    """The checks on the `configs` list: named, unique, at most one default, data files with a split."""
    errors = []
    names, defaults = set(), 0
    for config in configs:
        if not isinstance(config, dict) or not isinstance(config.get("config_name"), str):
            errors.append('"configs" items need a "config_name" string')
            continue
        if config["config_name"] in names:
            errors.append(f"duplicate config_name {config['config_name']!r}")
        names.add(config["config_name"])
        defaults += bool(config.get("default"))
        for item in _as_list(config.get("data_files", [])):
            if isinstance(item, str):
                continue
            if not (
                isinstance(item, dict)
                and isinstance(item.get("split"), str)
                and all(isinstance(p, str) for p in _as_list(item.get("path")))
            ):
                errors.append(f"config {config['config_name']!r}: data_files items need a split and a path")
    if defaults > 1:
        errors.append("at most one config can be the default")
    return errors


class HubServer:
    """Run a FakeHub with uvicorn in a daemon thread on 127.0.0.1 and a free port."""

    def __init__(self, hub: FakeHub) -> None:
        self.hub = hub
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(hub.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> "HubServer":
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the loopback hub did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


def hf_url(server_url: str, repo_id: str, path: str, revision: str = "main") -> str:
    return f"{server_url}/datasets/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"


def point_clients_at(monkeypatch: Any, url: str, home: Any, token: str | None) -> None:
    """Aim an already-imported huggingface_hub at the loopback server for one test.

    huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_DISABLE_XET once at import, and other
    tests may have imported it first: so set the environment (for code that reads it at call
    time, and for subprocesses) and patch the import-time constants too. Xet is off (uploads use
    LFS, which this server speaks) and the agent-registry lookup is pre-filled (no request out).
    """
    import huggingface_hub.constants as constants

    for name, value in {
        "HF_ENDPOINT": url,
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_DATASETS_CACHE": str(home / "datasets"),
    }.items():
        monkeypatch.setenv(name, value)
    if token is None:
        monkeypatch.delenv("HF_TOKEN", raising=False)
    else:
        monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    try:
        from huggingface_hub.utils import _detect_agent

        monkeypatch.setattr(_detect_agent, "_registry", {"standardEnvVars": [], "harnesses": {}})
    except (ImportError, AttributeError):
        pass


def forbid_internet(monkeypatch: Any) -> None:
    """Fail any connection or name lookup that is not loopback: tests must never reach out."""
    loopback = {"127.0.0.1", "localhost", "::1"}
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in loopback and host is not None:
            raise OSError(f"test tried to resolve {host!r}: no internet in tests")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in loopback:
            raise OSError(f"test tried to connect to {address!r}: no internet in tests")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
