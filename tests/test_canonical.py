"""The canonical form (`audits.canonical`) and the sentence core (`audits.sentence_match`) on small
texts whose canonical sentences are written out by hand here."""

from __future__ import annotations

import numpy as np

from tomforge.audits import sentence_match
from tomforge.audits.canonical import canonical_words, document_sentences, story_sentences
from tomforge.audits.sentence_match import SentenceParams, build_sentence_index, candidates, match_sentences


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
    assert index.story_weight.tolist() == [3.0, 3.0, 4.0]
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


def test_matching_in_small_pieces_finds_what_one_piece_finds(monkeypatch) -> None:
    """The hits are grouped a few documents at a time (bounded memory): each document's pairs,
    coverage and spans as with the whole batch at once; a document with more hits than the limit
    still counts whole. Planted: copies of each story among siblings and unrelated text."""
    index = build_sentence_index(STORIES, SentenceParams(min_sentences=3, min_share=0.75))
    docs = [STORIES[i % 3].replace("Olive", "Vera").replace("Bo ", "Al ") for i in range(7)]
    docs += ["Nothing to see.", STORIES[2] + " " + STORIES[0], "Zed entered the attic. Zed exited the attic."]
    expected = [(i, i % 3) for i in range(7)] + [(8, 0), (8, 2)]
    whole = match_sentences(index, docs)
    assert whole.select("doc", "story").rows() == expected
    for limit in (1, 3, 10):
        monkeypatch.setattr(sentence_match, "MATCH_ENTRIES", limit)
        assert match_sentences(index, docs).equals(whole)
