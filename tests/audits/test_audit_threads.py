"""Where the audit's phases run (issue 42): the skeleton keys beside the sentences phase, the
partial-input baselines and the template artifacts each on a side thread of its own. Checked by
making one side wait for the other (a schedule that ran them one after the other would hang, and
fail after 30 s), never by timings: no machine load can make a planted bug pass."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from tests.audit_data import FAST, load, planted_overlap_records
from tomforge.audits import overlap
from tomforge.audits.config import AuditParams
from tomforge.audits.run import run_audit
from tomforge.audits.sentence_match import SentenceParams


def test_skeletons_run_beside_the_sentences_phase_and_give_the_reference_keys(tmp_path: Path, monkeypatch) -> None:
    """The skeleton keys are worked out on a thread of their own while the sentences phase runs
    (issue 42: the second core's idle time, not the main path's): here each waits at a barrier for
    the other to have started, which fails after 30 s were they run one after the other, in either
    order. Every context's key is still `skeleton_key` of its text (the Python reference)."""
    import threading

    from tomforge.audits.skeleton import skeleton_key

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    both_started = threading.Barrier(2, timeout=30)
    threads: list[str] = []
    real_keys, real_sentences = overlap.skeleton_keys, overlap._sentence_pairs

    def recording_keys(texts):
        threads.append(threading.current_thread().name)
        both_started.wait()  # BrokenBarrierError: the sentences phase did not run meanwhile
        return real_keys(texts)

    def waiting_sentences(*args, **kwargs):
        both_started.wait()
        return real_sentences(*args, **kwargs)

    monkeypatch.setattr(overlap, "skeleton_keys", recording_keys)
    monkeypatch.setattr(overlap, "_sentence_pairs", waiting_sentences)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert len(threads) == 1 and threads[0] != threading.current_thread().name
    with duckdb.connect(str(path), read_only=True) as con:  # a text key's skeleton is that of its first context
        rows = con.execute(
            "SELECT arg_min(c.context, a.context_id), any_value(a.skeleton_key), count(DISTINCT a.skeleton_key) "
            "FROM audit_contexts a JOIN contexts c USING (context_id) GROUP BY a.text_key"
        ).fetchall()
    assert rows and all(key == skeleton_key(text) and n == 1 for text, key, n in rows)


def test_the_artifacts_do_not_wait_for_the_baselines(tmp_path: Path, monkeypatch) -> None:
    """The partial-input baselines and the template artifacts run on side threads of their own, so
    the artifacts start once the overlap's largest phases are over even while the baselines still
    run: here the baselines wait until the artifacts have started, which would hang (and fail after
    30 s) were the two queued on one thread."""
    import threading

    from tomforge.audits import run

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    started = threading.Event()
    real_baselines, real_artifacts = run._baseline_tables, run._artifact_tables

    def waiting_baselines(*args, **kwargs):
        assert started.wait(30), "the artifacts did not start while the baselines ran"
        return real_baselines(*args, **kwargs)

    def recording_artifacts(*args, **kwargs):
        started.set()
        return real_artifacts(*args, **kwargs)

    monkeypatch.setattr(run, "_baseline_tables", waiting_baselines)
    monkeypatch.setattr(run, "_artifact_tables", recording_artifacts)
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert started.is_set() and summary.n_train > 0


def test_the_sentences_phase_gets_the_audits_own_thresholds_and_reports_its_pairs(monkeypatch) -> None:
    """`_sentences_beside_skeletons` passes the audit's sentence thresholds (not SentenceParams' defaults: 3 and
    0.6) to the sentences phase, files its pair count under `sentence_pairs`, and skips the phase when one
    side is missing (`counts` None), while the skeleton keys always come back, one per text in order."""
    from types import SimpleNamespace

    seen: list[SentenceParams] = []

    def counted_pairs(ev, sp: SentenceParams) -> int:
        seen.append(sp)
        return 7

    monkeypatch.setattr(overlap, "_sentence_pairs", counted_pairs)
    monkeypatch.setattr(overlap, "skeleton_keys", lambda texts: [f"k-{t}" for t in texts])
    ev = SimpleNamespace(texts=["a", "b"])
    docs = pl.DataFrame({"doc": [0, 1]})
    params = AuditParams(sentence_min_sentences=5, sentence_min_coverage=0.55)
    counts: dict[str, int] = {"near_duplicate_pairs": 2}
    timer = overlap.PhaseTimer("t")
    out = overlap._sentences_beside_skeletons(ev, docs, params, timer, counts)
    assert counts == {"near_duplicate_pairs": 2, "sentence_pairs": 7}
    assert seen == [SentenceParams(min_sentences=5, min_coverage=0.55)]
    assert out["skeleton_key"].to_list() == ["k-a", "k-b"]
    assert list(timer.seconds) == ["sentences", "skeletons"]  # the phase names the progress lines and bench show
    one_side = overlap.PhaseTimer("t")
    again = overlap._sentences_beside_skeletons(ev, docs, params, one_side, None)
    assert len(seen) == 1 and again["skeleton_key"].to_list() == ["k-a", "k-b"]
    assert list(one_side.seconds) == ["skeletons"]


def test_the_run_id_and_overlap_tables_are_made_while_the_artifacts_run(tmp_path: Path, monkeypatch) -> None:
    """The run id and the overlap's tables need only the selections and the overlap, so the main thread makes
    them while the artifacts' thread still runs (issue 42: it used to wait with a core idle, then make them):
    here the artifacts wait until the run id has been made, which would hang (and fail after 30 s) were it made
    after them. The run id is still the one `_run_id` gives and the one every pair row carries."""
    import threading

    from tomforge.audits import run

    records, _ = planted_overlap_records()
    path = load(tmp_path / "w.duckdb", records)
    made = threading.Event()
    ids: list[str] = []
    real_run_id, real_artifacts = run._run_id, run._artifact_tables

    def recording_run_id(*args, **kwargs):
        ids.append(real_run_id(*args, **kwargs))
        made.set()
        return ids[-1]

    def waiting_artifacts(*args, **kwargs):
        assert made.wait(30), "the run id was not made while the artifacts ran"
        return real_artifacts(*args, **kwargs)

    monkeypatch.setattr(run, "_run_id", recording_run_id)
    monkeypatch.setattr(run, "_artifact_tables", waiting_artifacts)
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert ids == [summary.run_id]
    with duckdb.connect(str(path), read_only=True) as con:
        pair_ids = {r[0] for r in con.execute("SELECT DISTINCT run_id FROM audit_overlap_pairs").fetchall()}
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert pair_ids == {summary.run_id}
    assert {"audit_overlap_pairs", "audit_contexts", "audit_items", "audit_lsh_curve"} <= tables
