"""Overlap audit at scale: shards give the single-pass result, a re-audit after adding items signs
only the new texts and equals a from-scratch audit, and the passes on Ray equal the local ones."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from tests.audit_data import FAST, load, planted_overlap_records
from tomforge.audits.config import AuditParams
from tomforge.audits.lsh import candidate_pairs, candidate_pairs_from_keys, choose_banding
from tomforge.audits.minhash import MinHasher
from tomforge.audits.passes import PassSettings, concat, gather, hash_shard, run_local
from tomforge.audits.run import run_audit
from tomforge.audits.synthetic import clean_records
from tomforge.audits.text import shingle_texts, text_key, tokens

SETTINGS = PassSettings(5, 64, 3, choose_banding(64, 0.8, 0.995))
AUDIT_TABLES_SQL = "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'audit_%' ORDER BY 1"


def texts_with_near_duplicates(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)] + ["é", "naïve"]
    base = [rng.choices(vocab, k=rng.randint(0, 120)) for _ in range(n)]
    texts = [" ".join(b) for b in base]
    for b in base[: n // 4]:  # near duplicates, so that the LSH has candidates to find
        c = list(b)
        if c:
            c[rng.randrange(len(c))] = "edit"
        texts.append(" ".join(c))
    return texts


def test_gather_picks_the_shingles_of_the_chosen_documents() -> None:
    flat, offsets = shingle_texts(["a b c d e f", "", "x y z", "one two three four five six seven"], 3)
    docs = np.array([3, 1, 0])
    sub, sub_off = gather(flat, offsets, docs)
    expect = [flat[offsets[d] : offsets[d + 1]] for d in docs]
    assert [sub[sub_off[i] : sub_off[i + 1]].tolist() for i in range(3)] == [e.tolist() for e in expect]


def test_shards_concatenate_to_the_single_pass_result() -> None:
    texts = texts_with_near_duplicates(300, 1)
    rng = np.random.default_rng(0)
    have = rng.random(len(texts)) < 0.3  # some signatures "cached": taken from a direct computation
    direct = MinHasher(64, 3).signatures(*shingle_texts(texts, 5))
    cached = np.where(have[:, None], direct, 0).astype(np.uint32)
    whole = run_local(texts, cached, have, SETTINGS)
    cuts = [0, 1, 57, 58, 200, len(texts)]
    parts = concat(
        [hash_shard(texts[a:b], cached[a:b], have[a:b], SETTINGS) for a, b in zip(cuts[:-1], cuts[1:])],
        64,
        SETTINGS.banding.bands,
    )
    for name in ("words", "word_offsets", "flat", "offsets", "signatures", "band_keys", "computed"):
        assert np.array_equal(getattr(whole, name), getattr(parts, name)), name
    assert np.array_equal(whole.signatures, direct)  # cached + computed = all computed here
    assert np.array_equal(whole.computed, ~have)
    from_keys = candidate_pairs_from_keys(parts.band_keys)
    from_sigs = candidate_pairs(direct, SETTINGS.banding)
    assert np.array_equal(from_keys[0], from_sigs[0]) and len(from_keys[0]) >= 50


def audit_tables(path: Path) -> dict[str, pl.DataFrame]:
    """Every audit table, rows in a canonical order (the signature cache is appended to run by run)."""
    with duckdb.connect(str(path), read_only=True) as con:
        names = [r[0] for r in con.execute(AUDIT_TABLES_SQL).fetchall()]
        return {
            n: con.sql(f'SELECT * FROM "{n}"').pl().sort(pl.all())
            if n != "audit_minhash"
            else con.sql(f'SELECT * FROM "{n}" ORDER BY text_key, params').pl()
            for n in names
        }


def without_cache_counts(runs: pl.DataFrame) -> pl.DataFrame:
    """audit_runs with the run's cache hit/miss counts left out of its stats (they differ by design)."""

    def strip(stats: str) -> str:
        d = json.loads(stats)
        return json.dumps(
            {k: v for k, v in d.items() if k not in ("signatures_cached", "signatures_computed")}, sort_keys=True
        )

    return runs.with_columns(pl.col("stats").map_elements(strip, return_dtype=pl.Utf8))


def assert_same_audit(a: Path, b: Path, same_cache_use: bool = True) -> None:
    ta, tb = audit_tables(a), audit_tables(b)
    assert sorted(ta) == sorted(tb)
    if not same_cache_use:
        ta["audit_runs"], tb["audit_runs"] = (
            without_cache_counts(ta["audit_runs"]),
            without_cache_counts(tb["audit_runs"]),
        )
    for name in ta:
        assert ta[name].equals(tb[name]), name


def test_reaudit_after_adding_items_signs_only_the_new_texts(tmp_path: Path, monkeypatch) -> None:
    first, planted_keys = planted_overlap_records()
    more = clean_records(20, seed=9, split="train") + clean_records(6, seed=10, split="test")  # ~10% more stories
    path = load(tmp_path / "grow.duckdb", first)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    load(path, more)
    signed: list[int] = []
    original = MinHasher.signatures

    def counting(self, flat, offsets):
        signed.append(len(offsets) - 1)
        return original(self, flat, offsets)

    monkeypatch.setattr(MinHasher, "signatures", counting)
    again = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    old_texts = {" ".join(tokens(r["context"])) for r in first}
    new_texts = {" ".join(tokens(r["context"])) for r in more} - old_texts
    assert len(new_texts) == 26
    assert signed == [len(new_texts)] and again.stats["signatures_computed"] == len(new_texts)
    assert again.stats["signatures_cached"] == len(old_texts)
    with duckdb.connect(str(path), read_only=True) as con:
        cache_keys = [r[0] for r in con.execute("SELECT text_key FROM audit_minhash").fetchall()]
    assert len(cache_keys) == len(set(cache_keys)) == len(old_texts) + len(new_texts)

    scratch = load(tmp_path / "scratch.duckdb", first + more)
    monkeypatch.setattr(MinHasher, "signatures", original)
    fresh = run_audit(scratch, "split = 'train'", "split = 'test'", None, FAST)
    assert fresh.stats["signatures_computed"] == len(old_texts) + len(new_texts)
    assert fresh.run_id == again.run_id
    assert_same_audit(path, scratch, same_cache_use=False)
    with duckdb.connect(str(path), read_only=True) as con:  # the planted near duplicate is still found
        near = con.execute(
            "SELECT count(*) FROM audit_overlap_pairs WHERE kind = 'near_duplicate' AND scope = 'cross' "
            "AND a_context_id = ?",
            [planted_keys["near"]],
        ).fetchone()[0]
    assert near == 1


def test_passes_on_local_ray_equal_the_single_process_path(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    from tomforge.audits.ray_passes import RayPasses

    records, _ = planted_overlap_records()
    local = load(tmp_path / "local.duckdb", records)
    on_ray = tmp_path / "ray.duckdb"
    shutil.copy(local, on_ray)
    texts = texts_with_near_duplicates(120, 4)
    have = np.zeros(len(texts), dtype=bool)
    have[::3] = True
    cached = np.where(have[:, None], MinHasher(64, 3).signatures(*shingle_texts(texts, 5)), 0).astype(np.uint32)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        passes = RayPasses(shard_docs=40)  # several shards per run
        spread = passes(texts, cached, have, SETTINGS)
        summary_ray = run_audit(on_ray, "split = 'train'", "split = 'test'", None, FAST, passes=passes)
    finally:
        ray.shutdown()
    alone = run_local(texts, cached, have, SETTINGS)
    for name in ("words", "word_offsets", "flat", "offsets", "signatures", "band_keys", "computed"):
        assert np.array_equal(getattr(alone, name), getattr(spread, name)), name
    summary_local = run_audit(local, "split = 'train'", "split = 'test'", None, FAST)
    assert summary_ray.stats == summary_local.stats and summary_ray.stats["lsh_candidates"] > 0
    assert_same_audit(local, on_ray)


def test_audit_params_key_names_what_signatures_depend_on() -> None:
    """A cached signature is reused only under the same shingle size, permutations, seed and normalizer."""
    from tomforge.audits.overlap import signature_params_key

    base = signature_params_key(AuditParams())
    for change in ({"shingle_n": 4}, {"num_perm": 64}, {"minhash_seed": 2}):
        assert signature_params_key(AuditParams(**change)) != base
    assert text_key("Anne, the BOX!") == text_key("anne the box")


def test_a_failure_on_the_baselines_thread_fails_the_audit_and_keeps_the_last_tables(
    tmp_path: Path, monkeypatch
) -> None:
    """The partial-input baselines run on a thread of their own beside the overlap and artifact
    phases: their error must surface as the audit's error, and the audit tables of the previous run
    must stay as they were (nothing half-written)."""
    from tomforge.audits import baselines

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    first = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    with duckdb.connect(str(path), read_only=True) as con:
        before = {
            name: con.execute(f'SELECT * FROM "{name}"').fetchall()
            for (name,) in con.execute(AUDIT_TABLES_SQL).fetchall()
        }

    def broken(*_args, **_kwargs):
        raise RuntimeError("planted failure in the baselines")

    monkeypatch.setattr(baselines, "partial_input_baselines", broken)
    with pytest.raises(RuntimeError, match="planted failure in the baselines"):
        run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    with duckdb.connect(str(path), read_only=True) as con:
        after = {
            name: con.execute(f'SELECT * FROM "{name}"').fetchall()
            for (name,) in con.execute(AUDIT_TABLES_SQL).fetchall()
        }
    assert after == before and first.run_id in {row[0] for row in before["audit_runs"]}
    assert (
        "baselines: own thread" in first.timings
        and first.timings["baselines"] <= first.timings["baselines: own thread"] + 0.5
    )


def test_artifacts_are_submitted_held_back_behind_the_overlaps_largest_phases(tmp_path: Path, monkeypatch) -> None:
    """The artifacts job goes to the side thread wrapped in `_after(event, ...)`, and that event is
    the one the overlap sets once its largest phases are over (`largest_done`). Checked on the
    submission itself, not on timings or memory: no machine load can make a planted bug pass."""
    import threading

    from tomforge.audits import run

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    held: list[tuple[threading.Event, object]] = []
    released: list[object] = []
    real_after, real_overlap = run._after, run.audit_overlap

    def recording_after(event, step):
        wrapped = real_after(event, step)

        def run_held(*args):
            held.append((event, args[0] if args else None))
            return wrapped(*args)

        return run_held

    def recording_overlap(*args, largest_done, **kwargs):
        released.append(largest_done)
        return real_overlap(*args, largest_done=largest_done, **kwargs)

    monkeypatch.setattr(run, "_after", recording_after)
    monkeypatch.setattr(run, "audit_overlap", recording_overlap)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert [step for _, step in held] == [run._artifact_tables]
    (event, _), (setter,) = held[0], released
    assert getattr(setter, "__self__", None) is event  # the overlap's callback sets exactly that event


def test_after_runs_its_step_only_once_the_event_is_set() -> None:
    import threading

    from tomforge.audits.run import _after

    event = threading.Event()
    seen: list[bool] = []
    thread = threading.Thread(target=_after(event, lambda: seen.append(event.is_set())))
    thread.start()
    event.set()
    thread.join()
    assert seen == [True]


def test_artifacts_wait_for_the_overlaps_largest_phases_and_a_failed_overlap_does_not_hang(
    tmp_path: Path, monkeypatch
) -> None:
    """The side thread starts the template artifacts only once the overlap's 13-gram test is over
    (beside it a million items pass 6 GB); an overlap that fails before that point must fail the
    audit, not leave the side thread waiting forever."""
    import time

    from tomforge.audits import overlap, run

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    log: list[str] = []
    real_ngram, real_artifacts = overlap.ngram_test, run._artifact_tables

    def slow_ngram(*args, **kwargs):
        log.append("13-gram start")
        time.sleep(1.0)  # long enough for the side thread to start the artifacts, were it not held back
        result = real_ngram(*args, **kwargs)
        log.append("13-gram end")
        return result

    def logged_artifacts(*args, **kwargs):
        log.append("artifacts start")
        return real_artifacts(*args, **kwargs)

    monkeypatch.setattr(overlap, "ngram_test", slow_ngram)
    monkeypatch.setattr(run, "_artifact_tables", logged_artifacts)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert log == ["13-gram start", "13-gram end", "artifacts start"]

    def failing_ngram(*_args, **_kwargs):
        raise RuntimeError("planted failure in the overlap")

    monkeypatch.setattr(overlap, "ngram_test", failing_ngram)
    with pytest.raises(RuntimeError, match="planted failure in the overlap"):  # returns: the side thread was released
        run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
