"""Six behaviours of the scan's matching an independent check could break without the suite noticing
(issue 36 item 7), each tested against a reference worked out here, not read back from the code:
(a) the near-duplicate length prefilter, (b) which kind wins when a document matches in several
ways, (c) the purify count when one document holds two stories, (d) parquet document ids past the
first batch, (e) name keys shared by several benchmark stories, (f) a question matched inside
longer words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.audit_data import load, rename, variant
from tests.audit_reference import strongest
from tests.scan_data import filler, swap_names, write_jsonl
from tomforge.audits.scan import read_benchmark, run_scan
from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_index import build_index
from tomforge.audits.scan_match import KINDS, match_texts, signable
from tomforge.audits.synthetic import NAMES, clean_records
from tomforge.audits.text import tokens


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    """120 held-out synthetic stories, plus (for e) a renamed copy of the first one held out too:
    two benchmark stories that share one name key."""
    test = clean_records(120, seed=2, split="test")
    stories = sorted({r["context"] for r in test})
    first = next(r for r in test if r["context"] == stories[0])
    names = sorted(set(re.findall(r"\b(" + "|".join(NAMES) + r")\b", first["context"])))
    renamed = rename(first["context"], {n: f"Q{n.lower()}x" for n in names})
    twin = variant(first, "twin-of-first", "test", context=renamed)
    path = load(tmp_path_factory.mktemp("match") / "w.duckdb", test + [twin] + clean_records(20, seed=1))
    index = build_index(read_benchmark(path, "split = 'test'"), ScanParams())
    return path, index, stories, test, renamed


def _story_of(index, text: str) -> int:
    key = index.stories.filter(pl.col("text_key") == _key(text))["story"]
    return int(key[0])


def _key(text: str) -> str:
    import hashlib

    return hashlib.blake2b(" ".join(tokens(text)).encode(), digest_size=16).hexdigest()


# (a) the near-duplicate length prefilter


def test_signable_documents_are_exactly_those_the_jaccard_bound_allows() -> None:
    """|A ∩ B| / |A ∪ B| <= |A| / |B| when |A| <= |B|: a document with fewer shingles than J times
    the smallest story's can never reach J; every other one must be signed."""
    sizes = np.array([40, 25, 90])
    counts = np.arange(0, 120)
    expected = [c for c in range(120) if c / 25 >= 0.8]  # 20 and above
    assert signable(counts, sizes, 0.8).tolist() == expected


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = tokens(text)
    return {tuple(words[i : i + 5]) for i in range(len(words) - 4)}


def test_a_near_duplicate_shorter_than_every_story_is_found(bench) -> None:
    """The smallest story less its last words, as long as the reference Jaccard stays >= 0.8: the
    document has fewer shingles than any story, and is still a near duplicate."""
    _, index, stories, _, _ = bench
    smallest = min(stories[1:], key=lambda t: (len(_shingles(t)), t))
    floor = min(len(_shingles(t)) for t in stories)
    words = smallest.split(" ")
    cut = next(
        k
        for k in range(1, len(words))
        if len(tokens(" ".join(words[:-k]))) - 4 < floor
        and len(_shingles(" ".join(words[:-k])) & _shingles(smallest))
        / len(_shingles(" ".join(words[:-k])) | _shingles(smallest))
        >= 0.8
    )
    text = " ".join(words[:-cut])
    a, b = _shingles(text), _shingles(smallest)
    hits = match_texts(index, [text], ScanParams())
    row = hits.filter(pl.col("story") == _story_of(index, smallest)).row(0, named=True)
    assert row["jaccard"] == pytest.approx(len(a & b) / len(a | b))


# (b) which kind wins


def test_the_strongest_kind_wins_and_keeps_every_figure(bench) -> None:
    _, index, stories, _, _ = bench
    story = stories[5]
    sentences = story.split(". ")
    swapped = ". ".join([sentences[1], sentences[0], *sentences[2:]])
    mapping = {n: f"{n} Lou" for n in NAMES}
    docs = {
        "verbatim": story,  # also contained, near duplicate, names swapped and sentences
        "contained": story + " The end.",  # also a near duplicate (Jaccard >= 0.8)
        "names_swapped": swap_names(story),  # also sentences
        "sentences": rename(swapped, mapping),  # two-word names and two sentences swapped
    }
    hits = match_texts(index, list(docs.values()), ScanParams())
    s = _story_of(index, story)
    got = {list(docs)[d]: k for d, st, k in hits.select("doc", "story", "kind").iter_rows() if st == s}
    assert got == {k: k for k in docs}
    contained = hits.filter((pl.col("doc") == 1) & (pl.col("story") == s)).row(0, named=True)
    assert contained["jaccard"] is not None and contained["jaccard"] >= 0.8  # the near duplicate's figure kept
    verbatim = hits.filter((pl.col("doc") == 0) & (pl.col("story") == s)).row(0, named=True)
    assert verbatim["matched_sentences"] == verbatim["story_sentences"]  # the sentence figures kept too


def test_strongest_orders_the_kinds_as_documented() -> None:
    assert KINDS == ("verbatim", "contained", "near_duplicate", "names_swapped", "sentences", "ngram")
    for i, weaker in enumerate(KINDS):
        for stronger in KINDS[:i]:
            assert strongest({weaker: {}, stronger: {}})["kind"] == stronger


# (c) purify when one document holds two stories


def test_one_document_with_two_stories_is_removed_once(bench, tmp_path: Path) -> None:
    path, _, stories, _, _ = bench
    docs = [{"text": filler(__import__("random").Random(i), 80)} for i in range(6)]
    docs.insert(3, {"text": f"{stories[10]} {stories[20]}"})
    write_jsonl(tmp_path / "c" / "a.jsonl", docs)
    summary = run_scan(
        path, [str(tmp_path / "c")], tmp_path / "out", benchmark_where="split = 'test'", purify=tmp_path / "pure"
    )
    assert summary.hits.select("row").unique()["row"].to_list() == [3]
    assert summary.hits["story_key"].n_unique() == 2
    ledger = json.loads((tmp_path / "out" / "purify_ledger.json").read_text())
    assert ledger["total"] == {"read": 7, "kept": 6, "removed": 1, "rejected": 0}
    kept = (tmp_path / "pure" / "a.jsonl").read_text().splitlines()
    assert [json.loads(line)["text"] for line in kept] == [d["text"] for i, d in enumerate(docs) if i != 3]
    removed = pl.read_parquet(tmp_path / "out" / "purify_removed.parquet")
    assert removed.height == 1 and len(removed["story_keys"][0]) == 2


# (d) parquet ids past the first batch


@pytest.mark.parametrize("id_field", [None, "uid"])
def test_parquet_ids_and_rows_past_the_first_batch(bench, tmp_path: Path, id_field: str | None) -> None:
    path, _, stories, _, _ = bench
    rng = __import__("random").Random(3)
    texts = [filler(rng, 60) for _ in range(11)]
    texts[5], texts[10] = stories[30], stories[40]  # in the second and third batches of 4
    pq.write_table(
        pa.table({"text": texts, "uid": [f"u{i}" for i in range(11)]}), tmp_path / "d.parquet", row_group_size=3
    )
    summary = run_scan(
        path,
        [str(tmp_path / "d.parquet")],
        tmp_path / "out",
        benchmark_where="split = 'test'",
        params=ScanParams(batch_docs=4),
        id_field=id_field,
    )
    got = sorted(summary.hits.select("doc_id", "row").unique().iter_rows())
    expected_ids = ["d.parquet:5", "d.parquet:10"] if id_field is None else ["u5", "u10"]
    assert got == sorted(zip(expected_ids, [5, 10]))


# (e) name keys shared by several benchmark stories


def test_a_name_key_of_two_benchmark_stories_names_neither_by_names(bench) -> None:
    """The first story and its renamed twin are both held out: a third naming of it holds both,
    found by their sentences, and the names kind (one story per key) names neither."""
    _, index, stories, _, renamed = bench
    third = rename(stories[0], {n: f"Z{n.lower()}q" for n in NAMES})
    hits = match_texts(index, [third], ScanParams())
    both = {_story_of(index, stories[0]), _story_of(index, renamed)}
    assert set(hits["story"].to_list()) >= both
    assert hits.filter(pl.col("story").is_in(list(both)))["kind"].to_list() == ["sentences", "sentences"]


# (f) a question inside longer words


def test_a_question_inside_longer_words_is_not_a_question_found(bench, tmp_path: Path) -> None:
    path, _, stories, test, _ = bench
    item = next(r for r in test if r["context"] == stories[50])
    words = tokens(item["question"])
    inside = f"x{words[0]} {' '.join(words[1:])}s"  # the question's words with the first and last made longer
    docs = [{"text": f"{stories[50]} {inside}"}, {"text": f"{stories[50]} {item['question']}"}]
    write_jsonl(tmp_path / "f" / "a.jsonl", docs)
    hits = run_scan(path, [str(tmp_path / "f")], tmp_path / "out", benchmark_where="split = 'test'").hits
    by_row = {r["row"]: r["question_item_ids"] for r in hits.iter_rows(named=True)}
    assert item["item_id"] not in by_row[0]
    assert item["item_id"] in by_row[1]
