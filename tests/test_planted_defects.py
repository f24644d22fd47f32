"""Issue 25, item 11: three planted bugs that no test caught, each now pinned by a test that fails with
it (their entries in bench/mutations.py: freshness.removed_not_counted, ledger.keys_from_warehouse_only,
manifest.ledger_not_content).

- an audited item removed by a re-ingest makes the audit stale (exit 8, "1 removed"), for clean and publish;
- a release whose files hold rows (released or removed) under a (source, split) the warehouse lacks fails
  verify (exit 4) and publish (exit 3), naming the key;
- the content id (and so the default tag) covers data/, audit/ and ledger/, not the card.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from typer.testing import CliRunner

from tests.publish_fixtures import release_one
from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode
from tomforge.hub.export import ExportOptions
from tomforge.hub.manifest import MANIFEST_NAME, content_id, dump_manifest, file_entries, load_manifest, sha256_file
from tomforge.hub.release import ReleaseOptions, publish_folder

SAMPLES = Path(__file__).resolve().parents[1] / "warehouse" / "samples"


def run(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def test_an_audited_item_removed_by_a_reingest_makes_the_audit_stale(tmp_path: Path) -> None:
    folder, warehouse = tmp_path / "tomi", tmp_path / "w.duckdb"
    shutil.copytree(SAMPLES / "tomi", folder)
    assert run("ingest", "--source", "tomi", "--path", folder, "-w", warehouse).exit_code == 0
    audited = run(
        "audit",
        "-w",
        warehouse,
        "--train",
        "split = 'train'",
        "--heldout",
        "split = 'test'",
        "--out",
        tmp_path / "audit",
    )
    assert audited.exit_code == 0, audited.output
    assert run("clean", "-w", warehouse).exit_code == 0
    # the first test question becomes one ToMi cannot ask: its record is rejected, its item removed
    path = folder / "tomi_sample_test.txt"
    text = path.read_text(encoding="utf-8")
    assert "Where was the mango at the beginning?\t" in text
    path.write_text(
        text.replace("Where was the mango at the beginning?\t", "Why is the mango here?\t", 1), encoding="utf-8"
    )
    again = run("ingest", "--source", "tomi", "--path", folder, "-w", warehouse)
    assert again.exit_code == 0 and " 1 " in again.output.splitlines()[-1], again.output  # removed: 1
    for command in (
        ("clean", "-w", warehouse),
        ("publish", "-w", warehouse, "--repo", "org/tom", "--target", tmp_path / "rel"),
        ("publish", "-w", warehouse, "--repo", "org/tom", "--target", tmp_path / "rel", "--table", "items_full"),
    ):
        result = run(*command)
        assert result.exit_code == ExitCode.STALE_AUDIT, (command, result.output)
        assert len(error_lines(result.output)) == 1 and "1 removed" in result.output, result.output
    assert not (tmp_path / "rel").exists()


@pytest.fixture()
def release(tmp_path: Path) -> tuple[Path, Path]:
    warehouse = release_one(tmp_path / "w.duckdb")
    root = publish_folder(
        warehouse, tmp_path / "rel", ReleaseOptions("org/tom", tag="v1", export=ExportOptions(max_rows_per_shard=3))
    ).root
    return warehouse, root


def as_gamma(table: pa.Table, n: int) -> pa.Table:
    """`n` rows of `table` moved to a source the warehouse never had (new item ids)."""
    part = table.slice(0, n)
    part = part.set_column(part.schema.get_field_index("source"), "source", pa.array(["gamma"] * n))
    ids = pc.binary_join_element_wise(pa.array(["gamma-"] * n), part.column("item_id").cast(pa.string()), "")
    return part.set_column(
        part.schema.get_field_index("item_id"), "item_id", ids.cast(part.schema.field("item_id").type)
    )


def reseal(root: Path, added: str | None = None, n_rows: int | None = None) -> None:
    """Make the manifest list the files as they now are (sizes, hashes, content id), as a forger would."""
    manifest = load_manifest(root / MANIFEST_NAME)
    if added:
        manifest["files"].append({"path": added, "sha256": "", "size": 0, "n_rows": n_rows})
    for entry in manifest["files"]:
        entry.update(sha256=sha256_file(root / entry["path"]), size=(root / entry["path"]).stat().st_size)
    manifest["release"]["content_id"] = content_id(manifest["files"])
    (root / MANIFEST_NAME).write_bytes(dump_manifest(manifest))


def test_an_extra_shard_under_a_new_key_fails_verify(release) -> None:
    _, root = release
    assert run("verify", "--repo", root).exit_code == 0
    shard = root / "data/all/unsplit-00000-of-00002.parquet"
    extra = "data/all/zz_extra-00000-of-00001.parquet"
    pq.write_table(as_gamma(pq.read_table(shard), 2), root / extra)
    reseal(root, extra, 2)
    result = run("verify", "--repo", root)
    assert result.exit_code == ExitCode.MISMATCH, result.output
    assert "gamma/unsplit: warehouse 0 != released 2 + removed 0" in result.output


def test_removed_rows_under_a_new_key_fail_verify(release) -> None:
    _, root = release
    ledger = root / "ledger/removed.parquet"
    removed = pq.read_table(ledger)
    planted = pa.Table.from_pylist(
        [{"item_id": "gamma-1", "source": "gamma", "split": "test", "reason": "duplicate", "detail": "planted"}]
    )
    planted = planted.select(removed.column_names).cast(removed.schema)
    pq.write_table(pa.concat_tables([removed, planted]), ledger)
    reseal(root)
    result = run("verify", "--repo", root)
    assert result.exit_code == ExitCode.MISMATCH, result.output
    assert "gamma/test: warehouse 0 != released 0 + removed 1" in result.output


def test_publish_refuses_rows_under_a_key_the_warehouse_lacks(release, tmp_path: Path, monkeypatch) -> None:
    warehouse, _ = release
    import tomforge.hub.release as hub_release

    real = hub_release.export_table
    monkeypatch.setattr(
        hub_release, "export_table", lambda table, *a, **k: real(pa.concat_tables([table, as_gamma(table, 1)]), *a, **k)
    )
    result = run("publish", "-w", warehouse, "--repo", "org/tom", "--target", tmp_path / "other")
    assert result.exit_code == ExitCode.UNRECONCILED, result.output
    assert len(error_lines(result.output)) == 1
    assert "gamma/" in error_lines(result.output)[0] and "warehouse 0 != released 1" in result.output
    assert not (tmp_path / "other").exists()


def test_content_id_covers_data_audit_and_ledger_but_not_the_card(release, tmp_path: Path) -> None:
    _, root = release
    (root / "audit").mkdir()
    (root / "audit/audit_report.md").write_text("# audit\n", encoding="utf-8")

    def changed_by(relative: str, edit) -> bool:
        copy = tmp_path / f"copy-{relative.replace('/', '_')}"
        shutil.copytree(root, copy)
        before = content_id(file_entries(copy))
        edit(copy / relative)
        return content_id(file_entries(copy)) != before

    def new_removals(path: Path) -> None:
        table = pq.read_table(path)
        pq.write_table(
            table.slice(0, max(table.num_rows - 1, 0))
            if table.num_rows
            else pa.Table.from_pylist([dict.fromkeys(table.column_names, "x")]).cast(table.schema),
            path,
        )

    def rewrite_rows(path: Path) -> None:
        pq.write_table(pq.read_table(path).slice(1), path)

    def append_text(path: Path) -> None:
        path.write_text(path.read_text(encoding="utf-8") + "\nedited\n", encoding="utf-8")

    assert changed_by("ledger/removed.parquet", new_removals), "a different removal ledger is different content"
    assert changed_by("data/all/unsplit-00000-of-00002.parquet", rewrite_rows)
    assert changed_by("audit/audit_report.md", append_text)
    assert not changed_by("README.md", append_text), "the card is not content"
