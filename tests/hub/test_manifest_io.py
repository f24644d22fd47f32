"""A release manifest's files on disk (issue 38, mutation survivors in hub/manifest.py): each file's sha256 over all
of its bytes (blocks of 1 MiB), and a manifest read back as UTF-8 whatever the locale, validated, or refused with
one line naming the file and what went wrong."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.publish_fixtures import release_one
from tomforge.hub.manifest import ManifestError, load_manifest, sha256_file
from tomforge.hub.release import ReleaseOptions, build_release


def test_the_sha256_of_a_file_covers_every_block(tmp_path: Path) -> None:
    for size in (0, 5, (1 << 20) - 1, 1 << 20, (1 << 20) * 2 + 7):
        path = tmp_path / f"f{size}"
        data = bytes(i % 251 for i in range(size))
        path.write_bytes(data)
        assert sha256_file(path) == hashlib.sha256(data).hexdigest(), size


@pytest.fixture(scope="module")
def manifest_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rel")
    release = build_release(release_one(root / "w.duckdb"), root / "r", ReleaseOptions("org/tom", tag="v1"))
    return release.root / "manifest.json"


def test_a_manifest_reads_back_validated(manifest_path: Path) -> None:
    manifest = load_manifest(manifest_path)
    assert manifest == json.loads(manifest_path.read_text(encoding="utf-8"))
    assert manifest["release"]["tag"] == "v1"


def test_a_manifest_is_read_as_utf8_whatever_the_locale(manifest_path: Path, tmp_path: Path) -> None:
    from tests.ascii_locale import run_in_ascii_locale

    manifest = load_manifest(manifest_path)
    manifest["sources"][0]["license"] = "Licence – évaluation"
    copy = tmp_path / "manifest.json"
    copy.write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    assert load_manifest(copy)["sources"][0]["license"] == "Licence – évaluation"
    done = run_in_ascii_locale(
        "import sys; from tomforge.hub.manifest import load_manifest; "
        "print(ascii(load_manifest(__import__('pathlib').Path(sys.argv[1]))['sources'][0]['license']))",
        str(copy),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ascii("Licence – évaluation")


@pytest.mark.parametrize(
    "content, error",
    [(None, "FileNotFoundError"), (b"{not json", "JSONDecodeError"), (b"\xff\xfe", "UnicodeDecodeError")],
)
def test_an_unreadable_manifest_is_one_line(tmp_path: Path, content: bytes | None, error: str) -> None:
    path = tmp_path / "manifest.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ManifestError) as raised:
        load_manifest(path)
    assert str(raised.value) == f"manifest.json: cannot read the manifest ({error})"


def test_a_manifest_against_its_schema_is_refused(tmp_path: Path, manifest_path: Path) -> None:
    manifest = load_manifest(manifest_path)
    del manifest["release"]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ManifestError, match="manifest"):
        load_manifest(path)


def test_file_entries_list_every_file_but_the_manifest_with_its_rows(tmp_path: Path) -> None:
    from tomforge.hub.manifest import file_entries

    for name, data in (("a.txt", b"a"), ("manifest.json", b"{}"), ("z/b.parquet", b"bb"), ("zz.md", b"")):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    entries = file_entries(tmp_path, {"z/b.parquet": 3})
    assert [(e["path"], e["size"], e["n_rows"]) for e in entries] == [
        ("a.txt", 1, None),
        ("z/b.parquet", 2, 3),
        ("zz.md", 0, None),
    ]
    assert entries[1]["sha256"] == hashlib.sha256(b"bb").hexdigest()
    assert [e["n_rows"] for e in file_entries(tmp_path)] == [None, None, None]


def test_the_producer_version_is_the_installed_one_or_unknown(monkeypatch) -> None:
    from importlib import metadata

    from tomforge.hub import manifest

    assert manifest.producer_version() == metadata.version("tomforge")

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(manifest.metadata, "version", missing)
    assert manifest.producer_version() == "unknown"


def test_a_manifest_dumps_to_canonical_bytes() -> None:
    from tomforge.hub.manifest import dump_manifest

    assert dump_manifest({"b": 1, "a": ["é", {"d": 2, "c": 3}]}) == (
        '{\n  "a": [\n    "é",\n    {\n      "c": 3,\n      "d": 2\n    }\n  ],\n  "b": 1\n}\n'.encode("utf-8")
    )
