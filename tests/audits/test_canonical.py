"""The canonical form (`audits.canonical`) and the sentence core (`audits.sentence_match`) on small
texts whose canonical sentences are written out by hand here."""

from __future__ import annotations

import numpy as np
import pytest

from tomforge.audits import sentence_match
from tomforge.audits.canonical import abstract_names, canonical_words, document_sentences, sentence_key, story_sentences
from tomforge.audits.sentence_match import (
    SentenceParams,
    build_sentence_index,
    candidates,
    match_sentences,
    sentence_evidence,
)


def _words(sentences) -> list[str]:
    return [s.words for s in sentences]


def test_a_name_span_is_one_slot_however_many_words() -> None:
    expected = "NAME and NAME moved the green box to the red drawer".split()
    for names in (("Ann", "Bo"), ("Mary Ann", "Bo"), ("Anne-Marie", "Jean-Luc Picard"), ("Mary Ann", "Rosa-Lee Smith")):
        text = f"{names[0]} and {names[1]} moved the green_box to the red-drawer."
        assert canonical_words(text) == expected, text


def test_common_sentence_words_stay_words_and_numbers_go() -> None:
    assert canonical_words("The apple is in the box.") == "the apple is in the box".split()
    assert canonical_words("3 Then Olive stayed for 1 minute.") == "then NAME stayed for minute".split()


def test_markup_numbering_and_templates_are_removed_with_places_kept() -> None:
    story = "1 Olive entered the attic.\n2 The fig is in the red_box.\n3 Olive exited the attic."
    expected = ["NAME entered the attic", "the fig is in the red box", "NAME exited the attic"]
    assert _words(story_sentences(story)) == expected
    html = (
        "<div><p>Olive&nbsp;entered the attic.</p><p>The fig is in the red_box.</p><p>Olive exited the attic.</p></div>"
    )
    chat = "<|im_start|>user\nStory: Olive entered the attic. The fig is in the red_box.\nOlive exited the attic.<|im_end|>"
    wrapped = "Olive entered the\nattic. The fig is in\nthe red_box. Olive exited\nthe attic."
    for doc in (html, chat, wrapped):
        found = document_sentences(doc)
        assert set(expected) <= set(_words(found)), doc
        for s in found:  # spans are places in the original text
            assert 0 <= s.start < s.end <= len(doc)
    first = next(s for s in document_sentences(html) if s.words == expected[1])
    assert html[first.start : first.end] == "The fig is in the red_box"


def test_a_story_json_escaped_inside_a_text_keeps_its_sentences() -> None:
    # bench/reformat.py's json_escaped form: numbered lines joined by a literal backslash-n inside a JSON string
    doc = 'Data: {"story": "1 Olive entered the attic.\\n2 The fig is in the red_box.\\n3 Olive exited the attic."}'
    expected = ["NAME entered the attic", "the fig is in the red box", "NAME exited the attic"]
    assert set(expected) <= set(_words(document_sentences(doc)))
    second = next(s for s in document_sentences(doc) if s.words == expected[1])
    assert doc[second.start : second.end].endswith("The fig is in the red_box")  # the span in the escaped text


def test_sentences_with_too_few_words_say_nothing() -> None:
    assert _words(story_sentences("Olive left. Bo sat. The fig is in the red box.")) == ["the fig is in the red box"]


STORIES = [
    "Olive entered the attic. The fig is in the red box. Olive moved the fig to the blue tub. Olive exited the attic.",
    "Bo entered the attic. The plum is in the red box. Bo moved the plum to the green jar. Bo exited the attic.",
    "Ida entered the cellar. The kiwi is in the tin sack. Ida moved the kiwi to the grey bin. Ida exited the cellar.",
]


def test_rare_sentences_weigh_more_and_the_null_is_the_best_other_story() -> None:
    index = build_sentence_index(STORIES)
    # "NAME entered the attic" and "NAME exited the attic" are in stories 0 and 1: weight 1/2 each
    assert index.abstract.story_weight.tolist() == [3.0, 3.0, 4.0]
    assert np.allclose(index.null_coverage, [1 / 3, 1 / 3, 0.0])  # story 1 holds 1 of story 0's 3 weight


def test_a_story_reordered_and_renamed_is_found_and_a_template_sibling_is_not() -> None:
    index = build_sentence_index(STORIES, SentenceParams(min_sentences=3, min_share=0.75))
    doc = (
        "Story: 1 Mary Ann moved the fig to the blue_tub.\n2 Mary Ann entered the attic.\n3 The fig is in the red box."
    )
    sibling = (
        "Zed entered the attic. The pear is in the red box. Zed moved the pear to the blue tub. Zed exited the attic."
    )
    hits = match_sentences(index, [doc, sibling])
    assert hits.select("doc", "story", "matched_sentences").rows() == [(0, 0, 3)]
    assert hits["coverage"][0] == 2.5 / 3.0  # the exit line (weight 1/2) is missing: 3 of 4 sentences
    strict = build_sentence_index(STORIES, SentenceParams(min_sentences=3, min_share=0.8))
    assert match_sentences(strict, [doc]).height == 0


def test_documents_without_an_anchor_word_are_never_read() -> None:
    index = build_sentence_index(STORIES)
    docs = ["Nothing here is about any of it.", "", "The fig is in the red box, said nobody."]
    assert candidates(index, docs).tolist() == [2]


def test_lines_run_together_without_their_stops_are_cut_before_a_capitalized_word() -> None:
    # ToMi's lines "Olive likes the fig" have no stop: run together (rewrapped, one paragraph, `[n]` numbers)
    # the next line starts at the capitalized word after a lower-case one
    expected = {"NAME likes the fig", "the plum is in the red box", "NAME entered the attic"}
    for doc in (
        "Olive likes the fig The plum is in the red_box. Bo entered the attic.",
        "Olive likes the fig\nThe plum is in the red_box. Bo\nentered the attic.",
        "[1] Olive likes the fig [2] The plum is in the red_box. [3] Bo entered the attic",
        "Question: Where is the plum?\nContext: Olive likes the fig The plum is in the red_box. Bo entered the attic",
    ):
        found = document_sentences(doc)
        assert expected <= set(_words(found)), doc
        fig = next(s for s in found if s.words == "NAME likes the fig")
        assert doc[fig.start : fig.end].endswith("Olive likes the fig")  # list markers before it stay in the span
    # a name inside a sentence ("told Bo") is still read whole, under the other readings
    assert "NAME told NAME that the plum is in the red box" in _words(
        document_sentences("Olive told Bo that the plum is in the red_box.")
    )


def test_every_sentence_is_also_keyed_with_its_names_kept() -> None:
    [one] = story_sentences("3 Mary Ann moved the fig to the red_box.")
    assert one.key == sentence_key("NAME moved the fig to the red box")
    assert one.named_key == sentence_key("mary ann moved the fig to the red box")
    lower = document_sentences("mary ann moved the fig to the red box")  # no name to find in lower case
    assert [s.named_key for s in lower] == [one.named_key] and lower[0].key != one.key


SHORT = [
    "1 Olive entered the attic.\n2 Bo entered the attic.\n3 The fig is in the red_box.\n4 Olive moved the fig to the tin_jar."
    "\n5 Bo exited the attic.",
    "1 Ida entered the attic.\n2 Cy entered the attic.\n3 The fig is in the grey_bin.\n4 Cy moved the fig to the tin_jar."
    "\n5 Cy exited the attic.",
    "1 Ed entered the cellar.\n2 Al entered the cellar.\n3 The kiwi is in the red_box.\n4 Al moved the kiwi to the oak_tub."
    "\n5 Ed exited the cellar.",
]


def test_a_short_story_with_one_line_dropped_is_found_by_its_names_and_not_without_them() -> None:
    index = build_sentence_index(SHORT)
    # story 0 has 4 distinct sentences once names are abstracted, 5 with them; its move line dropped leaves
    # 3 of 4 (abstracted: under the 80% rule) and 4 of 5 named sentences (all but one: found)
    dropped = "Olive entered the attic.\nBo entered the attic.\nThe fig is in the red_box.\nBo exited the attic."
    renamed = dropped.replace("Olive", "Una").replace("Bo", "Rex")
    hits = match_sentences(index, [dropped, renamed])
    assert hits.select("doc", "story", "matched_sentences", "story_sentences").rows() == [(0, 0, 4, 5)]
    assert index.abstract.story_sentences.tolist() == [4, 4, 4] and index.named.story_sentences.tolist() == [5, 5, 5]


def test_evidence_shows_the_sentence_with_the_storys_own_names_and_reads_lower_case() -> None:
    story = "1 Olive entered the attic.\n2 The fig is in the red_box."
    doc = "Bo entered the attic. Olive entered the attic. the fig is in the red box."
    spans = [doc[e["doc_start"] : e["doc_end"]] for e in sentence_evidence(story, doc)]
    assert spans == ["Olive entered the attic", "the fig is in the red box"]
    low = "olive entered the attic. the fig is in the red box."  # no name to find: matched by the named key
    assert [low[e["doc_start"] : e["doc_end"]] for e in sentence_evidence(story, low)] == [
        "olive entered the attic",
        "the fig is in the red box",
    ]
    renamed = "Una entered the attic. The fig is in the red_box."
    assert [e["words"] for e in sentence_evidence(story, renamed)] == [
        "NAME entered the attic",
        "the fig is in the red box",
    ]


def test_sentences_come_in_text_order_with_their_spans_and_evidence_takes_the_first_place() -> None:
    story = "1 Olive entered the attic.\n2 The fig is in the red_box."
    assert [(s.start, s.end) for s in story_sentences(story)] == [(0, 25), (27, 54)]  # line numbers inside
    doc = "Una entered the attic. Rex entered the attic. The fig is in the red_box."
    found = document_sentences(doc)
    assert [(s.words, s.start, s.end) for s in found] == [
        ("NAME entered the attic", 0, 21),
        ("NAME entered the attic", 23, 44),
        ("the fig is in the red box", 46, 71),
    ]
    assert [(e["doc_start"], e["story_start"]) for e in sentence_evidence(story, doc)] == [(0, 0), (46, 27)]


def test_both_views_hand_worked_figures_spans_and_one_row_per_pair() -> None:
    """Weights by hand: abstracted, SHORT[0] and [1] share "NAME entered/exited the attic" and "NAME moved the
    fig to the tin jar" (1/2 each) and own their "is in" line (1): weight 2.5, null 1.5 / 2.5 = 0.6 (3 of 4 shared
    keys: not a copy); SHORT[2] shares nothing (weight 4, null 0). With names kept every sentence is one story's:
    5 sentences of weight 1, null 0."""
    index = build_sentence_index(SHORT)
    assert index.abstract.story_weight.tolist() == [2.5, 2.5, 4.0] and np.allclose(index.null_coverage, [0.6, 0.6, 0])
    assert index.named.story_weight.tolist() == [5.0, 5.0, 5.0] and index.named.null_coverage.tolist() == [0, 0, 0]
    dropped = "Olive entered the attic.\nBo entered the attic.\nThe fig is in the red_box.\nBo exited the attic."
    whole = (
        "Olive entered the attic. Bo entered the attic. The fig is in the red box. Olive moved the fig to the tin jar. "
        "Bo exited the attic."
    )
    lower = SHORT[2].lower()
    hits = match_sentences(index, [dropped, whole, lower], docs=np.array([0, 1, 2]))
    rows = hits.select("doc", "story", "matched_sentences", "story_sentences", "coverage", "null_coverage").rows()
    # found by both views: one row, the abstracted view's figures
    assert rows == [(0, 0, 4, 5, 0.8, 0.0), (1, 0, 4, 4, 1.0, 0.6), (2, 2, 5, 5, 1.0, 0.0)]
    first = hits.row(0, named=True)
    assert first["spans"] == [[0, 23], [25, 45], [47, 72], [74, 93]]
    assert (first["char_start"], first["char_end"]) == (0, 93)
    assert hits.row(1, named=True)["spans"] == [[0, 23], [47, 72], [74, 108], [110, 129]]  # "Bo entered": one key
    assert match_sentences(index, [dropped], docs=np.array([], dtype=np.int64)).height == 0


def test_all_but_one_is_the_named_views_rule_only_and_the_coverage_floor_holds() -> None:
    four = "1 Olive entered the attic.\n2 The fig is in the red_box.\n3 Olive moved the fig to the tin_jar.\n4 Olive exited the attic."
    index = build_sentence_index([four, SHORT[1], SHORT[2]])
    dropped = "Olive entered the attic.\nThe fig is in the red_box.\nOlive exited the attic."  # 3 of 4 (75%)
    hits = match_sentences(index, [dropped, dropped.replace("Olive", "Una")])
    assert hits.select("doc", "story", "matched_sentences", "story_sentences", "coverage").rows() == [
        (0, 0, 3, 4, 0.75)
    ]
    # 3 of SHORT[0]'s 5 named sentences (60%, weighted 0.6): neither 80% nor all but one
    assert (
        match_sentences(
            build_sentence_index(SHORT), ["Olive entered the attic. Bo entered the attic. The fig is in the red box."]
        ).height
        == 0
    )
    # 4 of 5 sentences found but the rare one missing: weighted share 0.5 < 0.6 (the 4 common ones weigh 1/4 each; the
    # stories holding them hold 80% of each other's sentences, so they are copies, out of the null: null 0)
    common = "NAME entered the attic. NAME sat in the attic. NAME slept in the attic. NAME exited the attic. "
    stories = [
        common.replace("NAME", n) + f"The fig is in the {box}."
        for n, box in zip(("Ann", "Bo", "Cy", "Di"), ("red_box", "tin_jar", "oak_tub", "grey_bin"))
    ]
    index = build_sentence_index(stories)
    assert index.abstract.story_weight.tolist() == [2.0] * 4 and index.null_coverage.tolist() == [0.0] * 4
    assert match_sentences(index, [common.replace("NAME", "Una")]).height == 0


def test_markup_each_kind_read_as_written_here() -> None:
    def words(doc: str) -> set[str]:
        return set(_words(document_sentences(doc)))

    assert "NAME entered the café" in words("Olive entered the caf&eacute;.")  # an entity alone: no fast path
    assert "the fig is in the red box" in words("[INST] the fig is in the red box [/INST]")  # a chat token alone
    assert "NAME likes the fig" in words("<b>Olive</b> likes the fig")  # an inline tag is a space
    assert words("the fig is <b>in</b> the red box") == {"the fig is in the red box"}
    # a block tag or a chat token ends a sentence even before a lower-case word (no run-on cut there)
    for doc in (
        "<p>Olive likes the fig</p><p>the plum is in the red box</p>",
        "Olive likes the fig<|im_end|>the plum is in the red box",
    ):
        assert {"NAME likes the fig", "the plum is in the red box"} <= words(doc), doc
    # a JSON-escaped line break ends a line, an escaped tab is a space
    assert {"NAME likes the fig", "the plum is in the red box"} <= words(
        "Olive likes the fig\\nthe plum is in the red box"
    )
    assert words("the fig\\tis in the red box") == {"the fig is in the red box"}


def test_a_name_span_becomes_one_mark_of_the_same_length() -> None:
    for text in ("Then Mary Ann moved the fig.", "Jean-Luc Picard left.", "Bo sat."):
        out = abstract_names(text)
        assert len(out) == len(text) and out.count("\u01c2") == 1, out
    assert abstract_names("Then Mary Ann moved.") == "Then \u01c2        moved."


def test_min_words_reaches_both_sides_and_a_story_without_sentences_keeps_its_place() -> None:
    stories = ["1 Olive entered the attic.\n2 The fig is in the red_box.\n3 Olive sat on the oak bench.", "Hi there."]
    index = build_sentence_index(stories, SentenceParams(min_words=5, min_sentences=2, min_share=1.0))
    # "NAME entered the attic" has 3 words besides the name: under 5, not a sentence
    assert index.abstract.story_sentences.tolist() == [2, 0] and index.abstract.story_weight.tolist() == [2.0, 0.0]
    doc = "The fig is in the red box. Olive sat on the oak bench. Olive entered the attic."
    assert match_sentences(index, [doc]).select("matched_sentences", "story_sentences").rows() == [(2, 2)]


def test_matching_in_small_pieces_finds_what_one_piece_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hits are grouped a few documents at a time (bounded memory: the 1M-item audit ran out of
    memory with a batch in one piece): each document's pairs, coverage and spans as with the whole
    batch at once; a document with more hits than the limit still counts whole. Planted: renamed
    copies of each story, a document holding two stories, unrelated text."""
    index = build_sentence_index(STORIES, SentenceParams(min_sentences=3, min_share=0.75))
    docs = [STORIES[i % 3].replace("Olive", "Vera").replace("Bo ", "Al ") for i in range(7)]
    docs += ["Nothing to see.", STORIES[2] + " " + STORIES[0], "Zed entered the attic. Zed exited the attic."]
    whole = match_sentences(index, docs)
    assert whole.select("doc", "story").rows() == [(i, i % 3) for i in range(7)] + [(8, 0), (8, 2)]
    for limit in (1, 3, 10):
        monkeypatch.setattr(sentence_match, "MATCH_ENTRIES", limit)
        assert match_sentences(index, docs).equals(whole)
