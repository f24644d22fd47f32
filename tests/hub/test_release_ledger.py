"""The release ledger: after the README's sequence (generate, ingest, audit, clean, publish) every warehouse
item is released or removed with its reason, checked against counts taken here independently (SQL on the
warehouse, pyarrow on the files); planted losses make publish exit 3 and planted tampering makes verify exit 4."""

from __future__ import annotations

import hashlib
import json
import re
import socket
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from typer.testing import CliRunner

from tests.audit_data import FAST, load, planted_overlap_records
from tests.hubserver import forbid_internet
from tests.publish_fixtures import release_one
from tomforge.audits.clean import apply_cleaning
from tomforge.audits.run import run_audit
from tomforge.audits.synthetic import clean_records
from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode
from tomforge.hub.export import ExportOptions
from tomforge.hub.manifest import MANIFEST_NAME, content_id, dump_manifest, sha256_file
from tomforge.hub.release import ReleaseOptions, publish_folder
from tomforge.hub.remote import RetryPolicy, make_api, with_retries
from tomforge.schemas.hub_errors import PublishError

SAMPLES = Path(__file__).resolve().parents[2] / "warehouse" / "samples"


def run(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def sql_counts(warehouse: Path, query: str = "SELECT source, split, count(*) FROM items GROUP BY ALL") -> Counter:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return Counter({(source, split): n for source, split, n in con.execute(query).fetchall()})


def file_counts(paths: list[Path]) -> Counter:
    counts: Counter = Counter()
    for path in paths:
        table = pq.read_table(path, columns=["source", "split"])
        counts.update(zip(table.column("source").to_pylist(), table.column("split").to_pylist()))
    return counts


def released_and_removed(root: Path) -> tuple[Counter, Counter]:
    return file_counts(sorted((root / "data" / "all").glob("*.parquet"))), file_counts(
        [root / "ledger/removed.parquet"]
    )


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.fixture(scope="module")
def readme_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The README's sequence on generated data plus three sample sources (a smaller --n for CI time)."""
    root = tmp_path_factory.mktemp("readme")
    warehouse, release = root / "w.duckdb", root / "release"
    assert run("generate", "--n", 400, "--max-order", 3, "-w", warehouse).exit_code == 0
    for source in ("tomi", "hitom", "bigtom"):
        assert run("ingest", "--source", source, "--path", SAMPLES / source, "-w", warehouse).exit_code == 0
    audited = run(
        "audit", "-w", warehouse, "--train", "split = 'train'", "--heldout", "split = 'test'", "--out", root / "audit"
    )
    assert audited.exit_code == 0, audited.output
    assert run("clean", "-w", warehouse).exit_code == 0
    published = run(
        "publish", "-w", warehouse, "--repo", "org/tom", "--target", release, "--audit-report", root / "audit"
    )
    assert published.exit_code == 0, published.output
    return warehouse, release, published.output


def test_readme_sequence_releases_or_removes_every_item(readme_release) -> None:
    warehouse, release, output = readme_release
    in_warehouse = sql_counts(warehouse)
    released, removed = released_and_removed(release)
    assert set(in_warehouse) == set(released) | set(removed)
    for key, n in in_warehouse.items():
        assert n == released[key] + removed[key], key
    assert ("tomforge_gen", "validation") in released and {"tomi", "hitom", "bigtom"} <= {s for s, _ in released}
    total = sum(in_warehouse.values())
    assert f"ledger: warehouse {total} = released {sum(released.values())} + removed {sum(removed.values())}" in output
    assert (
        f"tomforge_gen/validation: warehouse {in_warehouse['tomforge_gen', 'validation']} = released "
        f"{released['tomforge_gen', 'validation']} + removed 0" in output
    )
    assert run("verify", "--repo", release).exit_code == 0


def test_items_outside_the_selections_are_published_unchanged_and_marked(readme_release) -> None:
    warehouse, release, _ = readme_release
    table = pq.read_table(
        release / "data" / "all", columns=["item_id", "options", "answer_index", "content_hash", "audit_selection"]
    )
    published = {row["item_id"]: row for row in table.to_pylist()}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        outside = con.execute(
            "SELECT item_id, options, answer_index, content_hash FROM items WHERE item_id NOT IN "
            "(SELECT item_id FROM audit_items)"
        ).fetchall()
        sides = dict(con.execute("SELECT item_id, min(side) FROM audit_items GROUP BY item_id").fetchall())
    assert outside, "the sample sources' `unsplit` splits and the validation split are outside the selections"
    for item_id, options, answer_index, content_hash in outside:
        row = published[item_id]
        assert (row["options"], row["answer_index"], row["content_hash"]) == (options, answer_index, content_hash)
        assert row["audit_selection"] == "not_audited"
    assert {item_id: row["audit_selection"] for item_id, row in published.items() if item_id in sides} == sides


CONTENT_FIELDS_BY_HAND = (
    "context_kind",
    "context",
    "turns",
    "n_agents",
    "n_events",
    "question",
    "question_type",
    "belief_order",
    "perspective_chain",
    "is_false_belief",
    "answer_format",
    "options",
    "answer",
    "answer_index",
    "answer_list",
    "template_id",
    "seed",
    "operators",
    "trace",
    "meta",
)


def recipe_hash(row: dict) -> str:
    """README "The unified record": sha256 of the canonical JSON of the content fields (JSON fields as values)."""
    payload = {
        name: json.loads(row[name]) if name in ("meta", "trace") and row[name] is not None else row[name]
        for name in CONTENT_FIELDS_BY_HAND
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_every_released_row_carries_the_hash_of_its_own_content(readme_release) -> None:
    """Rows whose options cleaning re-ordered included: their hash is recomputed, the warehouse keeps its own."""
    warehouse, release, _ = readme_release
    rows = pq.read_table(release / "data" / "all").to_pylist()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        stored = dict(con.execute("SELECT item_id, options FROM items").fetchall())
    reordered = [row for row in rows if row["options"] != stored[row["item_id"]]]
    assert len(reordered) > 50, "the generated multiple-choice items get their options re-ordered"
    assert [row["item_id"] for row in rows if row["content_hash"] != recipe_hash(row)] == []


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Train/test with planted overlap and conflicts (cleaning removes items) plus a validation split."""
    records, keys = planted_overlap_records()
    records += clean_records(20, seed=3, split="validation")
    path = load(tmp_path_factory.mktemp("planted") / "w.duckdb", records)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    apply_cleaning(path)
    return path, keys


def test_removed_items_carry_the_cleaning_step_that_removed_them(planted, tmp_path: Path) -> None:
    warehouse, keys = planted
    result = run("publish", "-w", warehouse, "--repo", "org/tom", "--target", tmp_path / "rel")
    assert result.exit_code == 0, result.output
    ledger = pq.read_table(tmp_path / "rel/ledger/removed.parquet").to_pylist()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        gone = {
            row[0]
            for row in con.execute("SELECT item_id FROM audit_items EXCEPT SELECT item_id FROM clean_items").fetchall()
        }
        exact = {
            row[0]
            for row in con.execute(
                "SELECT item_id FROM items WHERE context_id = ? AND split = 'train'", [keys["exact"]]
            ).fetchall()
        }
    assert {row["item_id"] for row in ledger} == gone and len(gone) > 0
    assert {row["reason"] for row in ledger if row["item_id"] in exact} == {"overlap_exact"}
    assert "not_selected" not in {row["reason"] for row in ledger}
    released, removed = released_and_removed(tmp_path / "rel")
    in_warehouse = sql_counts(warehouse)
    assert all(in_warehouse[key] == released[key] + removed[key] for key in in_warehouse)
    assert released["synth", "validation"] == sql_counts(warehouse)["synth", "validation"] > 0
    assert run("verify", "--repo", tmp_path / "rel").exit_code == 0


def test_only_audited_removes_the_rest_as_not_selected(planted, tmp_path: Path) -> None:
    warehouse, _ = planted
    result = run("publish", "-w", warehouse, "--repo", "org/tom", "--target", tmp_path / "rel", "--only-audited")
    assert result.exit_code == 0, result.output
    ledger = pq.read_table(tmp_path / "rel/ledger/removed.parquet").to_pylist()
    not_selected = sql_counts(
        warehouse,
        "SELECT source, split, count(*) FROM items WHERE item_id NOT IN (SELECT item_id FROM audit_items) GROUP BY ALL",
    )
    assert Counter((r["source"], r["split"]) for r in ledger if r["reason"] == "not_selected") == not_selected
    in_warehouse = sql_counts(warehouse)
    assert not_selected == Counter({("synth", "validation"): in_warehouse["synth", "validation"]})
    released, removed = released_and_removed(tmp_path / "rel")
    assert ("synth", "validation") not in released
    assert all(n == released[key] + removed[key] for key, n in in_warehouse.items())
    assert (
        "(0 released items not audited)" in result.output
        and f"not_selected {in_warehouse['synth', 'validation']}" in result.output
    )


def test_an_item_lost_on_the_way_fails_publish_and_keeps_the_release(planted, tmp_path: Path, monkeypatch) -> None:
    warehouse, _ = planted
    target = tmp_path / "rel"
    assert run("publish", "-w", warehouse, "--repo", "org/tom", "--target", target).exit_code == 0
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    import tomforge.hub.release as hub_release

    real = hub_release.export_table
    monkeypatch.setattr(hub_release, "export_table", lambda table, *a, **k: real(table.slice(1), *a, **k))
    lost = run("publish", "-w", warehouse, "--repo", "org/tom", "--target", target, "--tag", "v2")
    assert lost.exit_code == ExitCode.UNRECONCILED, lost.output
    assert len(error_lines(lost.output)) == 1
    found = re.search(r"(\w+)/(\w+): warehouse (\d+) != released (\d+) \+ removed (\d+)", lost.output)
    source, split, n, released, removed = found.groups()
    assert int(n) == sql_counts(warehouse)[source, split] == int(released) + int(removed) + 1
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    warehouse = release_one(tmp_path / "w.duckdb")
    return publish_folder(
        warehouse, tmp_path / "rel", ReleaseOptions("org/tom", tag="v1", export=ExportOptions(max_rows_per_shard=3))
    ).root


def reseal(root: Path, change=None) -> None:
    """Tamper consistently: the manifest's sizes, hashes and content id made to match the files again."""
    manifest = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    if change:
        change(manifest)
    for entry in manifest["files"]:
        entry.update(sha256=sha256_file(root / entry["path"]), size=(root / entry["path"]).stat().st_size)
    manifest["release"]["content_id"] = content_id(manifest["files"])
    (root / MANIFEST_NAME).write_bytes(dump_manifest(manifest))


def drop_first_row(root: Path) -> None:
    shard = root / "data/all/train-00000-of-00003.parquet"
    pq.write_table(pq.read_table(shard).slice(1), shard)
    reseal(root)


def bump_released(root: Path) -> None:
    def change(manifest: dict) -> None:
        row = manifest["ledger"]["rows"][0]
        row["released"] += 1
        row["warehouse"] += 1  # still adds up on paper; the files say otherwise
        manifest["ledger"]["totals"]["released"] += 1
        manifest["ledger"]["totals"]["warehouse"] += 1

    reseal(root, change)


def bump_warehouse(root: Path) -> None:
    def change(manifest: dict) -> None:
        manifest["ledger"]["rows"][0]["warehouse"] += 1
        manifest["ledger"]["totals"]["warehouse"] += 1

    reseal(root, change)


@pytest.mark.parametrize(
    "tamper, expected",
    [
        (drop_first_row, "data/all/train-00000-of-00003.parquet: 2 rows, the manifest lists 3"),
        (bump_released, "ledger alpha/test: released 3 in the files, 4 in the manifest"),
        (bump_warehouse, "alpha/test: warehouse 4 != released 3 + removed 0"),
        (lambda root: (root / "notes.txt").write_text("hi", encoding="utf-8"), "notes.txt: not in the manifest"),
        (
            lambda root: (root / "ledger/extra.parquet").write_bytes(b"PAR1"),
            "ledger/extra.parquet: not in the manifest",
        ),
        (lambda root: (root / "ledger/removed.parquet").unlink(), "ledger/removed.parquet: missing"),
    ],
    # short ids: bench/mutation_catchers.json names these nodes, and pytest cuts long ones in its summary line
    ids=["row-dropped", "released-bumped", "warehouse-bumped", "stray-file", "stray-ledger-file", "ledger-missing"],
)
def test_verify_catches_planted_problems(release: Path, tamper, expected: str) -> None:
    assert run("verify", "--repo", release).exit_code == 0
    tamper(release)
    result = run("verify", "--repo", release)
    assert result.exit_code == ExitCode.MISMATCH and f"mismatch: {expected}" in result.output, result.output


def test_drop_first_row_is_seen_by_the_ledger_too(release: Path) -> None:
    drop_first_row(release)
    output = run("verify", "--repo", release).output
    assert "ledger alpha/train: released 6 in the files, 7 in the manifest" in output
    assert "alpha/train: warehouse 7 != released 6 + removed 0" in output


def test_verify_of_a_missing_folder_is_bad_input_not_a_hub_lookup(tmp_path: Path, monkeypatch) -> None:
    forbid_internet(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    for repo in ("./missing-folder", "missing-folder", "a/b/c", "file.txt"):
        result = run("verify", "--repo", repo)
        assert result.exit_code == ExitCode.BAD_INPUT, (repo, result.output)
        assert error_lines(result.output) == [line for line in result.output.splitlines() if line]
        assert "no such release folder" in result.output


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_hub_fails_at_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("HF_TOKEN", "hf_notarealtokenatall")
    calls: list[int] = []
    api = make_api()

    def call() -> None:
        calls.append(1)
        api.repo_info("org/tom", repo_type="dataset")

    with pytest.raises(PublishError, match="cannot reach the Hub"):
        with_retries("read the repo", call, RetryPolicy(sleep=lambda s: calls.append(0)))
    assert calls == [1], "one attempt, no sleep"
    warehouse = release_one(tmp_path / "w.duckdb")
    result = run("publish", "-w", warehouse, "--target", "hub", "--repo", "org/tom", "--dry-run")
    assert result.exit_code == ExitCode.REMOTE and "retry" not in result.output, result.output
    assert len(error_lines(result.output)) == 1 and "cannot reach the Hub" in result.output
    assert "hf_notarealtokenatall" not in result.output


def derived_table(warehouse: Path, sql: str) -> None:
    with duckdb.connect(str(warehouse)) as con:
        con.execute(f"CREATE OR REPLACE TABLE exp_items AS {sql}")


RESPLIT = (
    "SELECT * REPLACE ('all_of_it' AS split) FROM items_full UNION ALL "
    "SELECT * REPLACE ('first_two' AS split) FROM (SELECT * FROM items_full ORDER BY item_id LIMIT 2)"
)


def test_a_derived_release_accounts_for_its_table_and_keeps_items_unchanged(tmp_path: Path) -> None:
    """An experiment's table re-splits items (one item in two splits): the warehouse ledger cannot account for
    it, the derived ledger does, and only while every row is an unchanged warehouse item."""
    from tomforge.hub.ledger import LedgerError

    warehouse = release_one(tmp_path / "w.duckdb")
    derived_table(warehouse, RESPLIT)
    options = ReleaseOptions("org/tom", tag="v1", export=ExportOptions(table="exp_items"))
    with pytest.raises(LedgerError, match="released more than once"):
        publish_folder(warehouse, tmp_path / "plain", options)
    root = publish_folder(warehouse, tmp_path / "rel", ReleaseOptions(**{**options.__dict__, "derived": True})).root
    n_items = sum(sql_counts(warehouse).values())
    released = file_counts(sorted((root / "data" / "all").glob("*.parquet")))
    assert sum(released.values()) == n_items + 2  # worked by hand: every item once, plus the first two again
    assert released == sql_counts(warehouse, "SELECT source, split, count(*) FROM exp_items GROUP BY ALL")
    assert pq.read_table(root / "ledger/removed.parquet").num_rows == 0
    assert run("verify", "--repo", root).exit_code == 0

    derived_table(
        warehouse,
        RESPLIT.replace("REPLACE ('first_two' AS split)", "REPLACE ('first_two' AS split, 'edited' AS content_hash)"),
    )
    with pytest.raises(LedgerError, match="exp_items: 2 rows are not warehouse items with unchanged content"):
        publish_folder(warehouse, tmp_path / "rel", ReleaseOptions(**{**options.__dict__, "derived": True}))
    derived_table(warehouse, RESPLIT.replace("'first_two'", "'all_of_it'"))  # the first two twice in one split
    with pytest.raises(LedgerError, match="2 items released more than once"):
        publish_folder(warehouse, tmp_path / "rel", ReleaseOptions(**{**options.__dict__, "derived": True}))
    assert run("verify", "--repo", root).exit_code == 0  # the failed publishes left the release as it was
