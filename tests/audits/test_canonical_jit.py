"""The compiled sentence cutter (`audits.canonical_jit`) against its reference, the pure-Python rules of
`audits.canonical.document_sentences`: the same sentences, keys (names abstracted and kept), spans and
order on hand-written documents aimed at each rule (the three readings: line breaks as ends, as spaces,
and run-together lines cut), on thousands of documents generated from rule-bearing fragments, and on
re-formatted HiToM-like, ToMi-like, prose and generated stories; its blake2b against hashlib; the match
frame the scan and the audit use equal with and without the compiled path (and its counted join)."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from bench import reformat_plants as plants
from tests import reformat_data as rd
from tests.audits import test_reformat_short as short
from tomforge.audits import canonical, canonical_jit
from tomforge.audits.jit import AVAILABLE
from tomforge.audits.sentence_match import build_sentence_index, document_sentence_arrays, match_sentences
from tomforge.generators import generate_records

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


Row = tuple[int, int, int, int, int]


def _reference(texts: list[str], positions: list[int], min_words: int) -> list[Row]:
    return [
        (d, s.key, s.named_key, s.start, s.end)
        for d in positions
        for s in canonical.document_sentences(texts[d], min_words)
    ]


def _compiled(texts: list[str], positions: list[int], min_words: int) -> list[Row]:
    arrays = canonical_jit.sentence_arrays(texts, np.array(positions, dtype=np.int64), min_words)
    return list(zip(*(a.tolist() for a in arrays)))


def _same(texts: list[str], min_words: int = 3) -> None:
    positions = list(range(len(texts)))
    got, want = _compiled(texts, positions, min_words), _reference(texts, positions, min_words)
    if got != want:
        for d, text in enumerate(texts):  # name the first document that differs
            mine = [r for r in got if r[0] == d]
            theirs = [r for r in want if r[0] == d]
            assert mine == theirs, repr(text)
    assert got == want


@pytest.mark.parametrize("data", [b"", b"abc", b"x" * 127, b"x" * 128, b"x" * 129, bytes(range(256)) * 2])
def test_blake2b_is_hashlibs(data: bytes) -> None:
    arr = np.frombuffer(data, dtype=np.uint8) if data else np.empty(0, dtype=np.uint8)
    want = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
    scratch = np.zeros(16, dtype=np.uint64)
    assert int(canonical_jit.blake2b8_into(arr, len(data), canonical_jit._IV, canonical_jit._SIGMA, scratch)) == want


HAND_WRITTEN = [
    # numbering, list markers, the strip of leading markers and white space
    "1 Mary Ann entered the kitchen.\n2 The apple is in the green_box.\n3 Anne-Marie moved the apple to the red_bucket.",
    "1. Olive entered the attic.\n(2) The fig is in the box.\n[3] - * # > Olive exited the attic.",
    "  \t Olive entered the attic .  \n\n\x0b\x1cThe fig is in the box!!  Olive exited the attic?\r\n",
    # sentence ends: runs of punctuation, ends before quotes and brackets, ends that are not (3.5, a.b)
    'He said "Olive left the attic." Then (Jack took the fig.) The box is red.* The cup is_blue._ x',
    "The price is 3.5 dollars for the big red box. a.b.c is not an end for the small cup here",
    # names: runs, openers at the head, all openers, capitals inside words, digits, capitals only
    "The Then Mary Ann went to the Big Room. Then Jean-Luc Picard moved the fig. The The The is here.",
    "iPhone and McDonald and 3Mary met A1 Bob near the old Oak - Tree - House today.",
    "THE BOX IS IN THE KITCHEN NOW. NAME name Name went home.",
    # markup: tags, block tags, chat templates of several families, entities, JSON escapes
    "<div class='s'><p>Olive entered the attic.</p><P>The fig is in the box.</P><br/>Olive exited the attic.</div>",
    "<ol><li>Olive entered the attic</li><li>The fig is in the box</li></ol><b>bold words are here</b>",
    "<|im_start|>system\nYou answer questions.<|im_end|>\n<|im_start|>user\nStory: Olive entered the attic.<|im_end|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nOlive entered the attic today.<|eot_id|>",
    "[INST] <<SYS>>\nBe brief here now.\n<</SYS>>\nOlive entered the attic. [/INST] <s>The fig is in the box.</s>",
    "<start_of_turn>user\nOlive entered the attic.<end_of_turn>\n<start_of_turn>model\nThe fig is in the box.",
    "Olive&#x27;s fig is in the box &amp; the cup &lt;here&gt;. &quot;Jack&quot; moved the fig&#9;today&#10;now.",
    '{"story": "1 Olive entered the attic.\\n2 The fig is in the box.\\n3 Olive exited the attic.\\tNow."}',
    "<|not a token|> <|x|> <story>\nOlive entered the attic.\n</story>\n<question>Where is the fig now?</question>",
    "<p" + "x" * 300 + ">Olive entered the attic.</p> <a " + "y" * 250 + ">The fig is in the box.</a>",
    # rewrapped lines (both readings), blank lines, a tie of starts between the readings
    "Olive entered the\nattic. The fig is in\nthe red box. Olive exited\nthe attic.",
    "Olive entered the attic\nand the fig is here\n\n \nJack moved the fig to the box\n123\n",
    "",
    "no sentence",
    "...;;;!!!",
    # lines without their stops run together (the third reading): a capital after a lower-case word, with
    # at most a list number or marker between them; white space of every kind before it
    "1 Aria entered the study.\n2 Aria hates the persimmon\n3 Noah entered the study.\n4 Noah likes the fig",
    "Aria entered the study. Aria hates the persimmon Noah entered the study. The pear is in the red_box.",
    "Aria hates the persimmon 8 Noah entered the study. Aria hates the fig [9] Noah exited the study.",
    "Aria hates the fig 8. Noah went home today. Aria hates the fig (12) Noah left the hall now.",
    "Aria hates the fig -8- Noah went home. Aria hates the fig 1.2 Noah left here. Aria likes the fig 3rd Noah ran.",
    "Aria hates the fig .. 8 .. Noah went home. Aria hates the fig\tNoah left it\x0bNoah ran to the hall",
    "Aria hates the fig \n\n Noah went home. Aria hates the fig\n\nNoah left. Aria hates the fig \nNoah ran far",
    "Aria hates the fig_ Noah went home. Aria hates the fig) Noah left it. Aria hates the fiG Noah ran away",
    "Aria hates the fig  ",
    "aria hates the fig noah likes the pear. Aria Hates The Fig Noah Likes The Pear",
    "<p>Aria hates the persimmon</p><p>Noah likes the fig</p> Aria hates the persimmon <b>Noah</b> left",
    # names kept: one template told of other people is another sentence; the same people again is not
    "Mary went to the kitchen. John went to the kitchen. Mary went to the kitchen. MARY WENT TO THE KITCHEN.",
    "Mary Ann saw the fig in the box\nMary Ann saw the fig in the box. Anne-Marie saw the fig in the box",
]


def test_hand_written_documents_are_cut_as_the_reference_cuts_them() -> None:
    for min_words in (1, 3):
        _same(HAND_WRITTEN, min_words)


FRAGMENTS = (
    "Mary|Ann|Anne-Marie|The|Then|the|kitchen|green_box|red|apple|moved|entered|iPhone|McDonald|3Mary|A1|NAME|name|"
    "USER|BIG|Mr|O'Neil|it's|12|3rd|x7y|.|. |!|?|;|:|...|.\"|.)|.]|.*|._|.x|,|-| - |--|_|*|#|>|(|)|[|]|1.|2)|(3)|"
    "[4]|- |* |> |<p>|</p>|<P class='x'>|<br/>|<li>|</li>|<ol>|<pre>|<table>|<td>|<h2>|<b>|</b>|<span id=1>|<x|"
    '<a href="u">|<story>|</story>|<|im_start|>|<|im_start|>user\n|<|im_end|>|<|eot_id|>|<|foo bar|>|<|x|>|'
    "<|start_header_id|>assistant<|end_header_id|>\n\n|<|START|>SYSTEM|[INST]|[/INST]|[inst]|<<SYS>>|<</SYS>>|<s>|"
    "</s>|<S>|<start_of_turn>user|<end_of_turn>|<start_of_turnmodel|&amp;|&lt;|&gt;|&quot;|&#x27;|&#39;|&#9;|&#10;|"
    '&AMP;|&fjlig;|& |&#x;|&#12345678;|\\n|\\t|\\r|\\N|\\"|\\|<|>|&||>|<|'
).split("|") + [" ", "  ", "\t", "\n", "\n\n", " \n \n", "\r\n", "\x0b", "\x1c", "|"]
FRAGMENTS += "Aria|Noah|likes|hates|persimmon|study|8|[8]|-8-|8.|\x0b".split("|")
FRAGMENTS += [
    "\xa0",
    " \xa0",
    "\xa0\n",
    "&nbsp;",
    "&#160;",
    "&#xA0;",
    "<p\xa0class=x>",
    "<|im\xa0start|>",
]  # no-break spaces
OUTSIDE = ["caf\u00e9", "\u2022 ", "\u00e0", "\u0800", "&eacute;", "&#127;", "&#0;", "&zz;", "&q;"]  # the Python path's


def _generated(seed: int, n: int, fragments: list[str]) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(fragments) + rng.choice(("", " ", " ", "\n")) for _ in range(rng.randint(0, 60)))
        for _ in range(n)
    ]


def test_generated_documents_are_cut_as_the_reference_cuts_them() -> None:
    texts = _generated(0, 3000, FRAGMENTS)
    assert all(t.replace("\xa0", " ").isascii() for t in texts) and sum("\xa0" in t for t in texts) > 500
    for min_words in (1, 3):
        _same(texts, min_words)


def test_documents_this_path_cannot_read_go_to_the_reference_in_their_place() -> None:
    texts = _generated(1, 1500, FRAGMENTS + OUTSIDE)
    assert sum(not t.isascii() for t in texts) > 100
    for min_words in (1, 3):
        _same(texts, min_words)
    positions = [7, 3, 3, 1200, 0, 55]  # any order, repeats: the reference's order of positions
    assert _compiled(texts, positions, 3) == _reference(texts, positions, 3)
    few = ["caf\u00e9", "Olive entered the attic.", "\u00e9"]  # the Python path's texts hold no sentence
    assert _compiled(few, [0, 1, 2], 3) == _reference(few, [0, 1, 2], 3)
    for some in (few, ["caf\u00e9 Olive entered the attic.", "\u00e9"]):  # the Python path's sentences: none, one
        arrays = canonical_jit.sentence_arrays(some, np.arange(len(some)), 3)
        assert [a.dtype for a in arrays] == [np.int64, np.uint64, np.uint64, np.int64, np.int64]
    assert _compiled(few, [], 3) == []


def test_ascii_documents_with_no_break_spaces_never_take_the_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = HAND_WRITTEN + _generated(2, 500, FRAGMENTS)
    want = _reference(texts, list(range(len(texts))), 3)

    def refuse(text: str, min_words: int = 3) -> list:
        raise AssertionError(f"the Python path read {text!r}")

    monkeypatch.setattr(canonical_jit.canonical, "document_sentences", refuse)
    assert _compiled(texts, list(range(len(texts))), 3) == want


def test_reformatted_stories_are_cut_as_the_reference_cuts_them() -> None:
    texts = []
    for kind in ("hitom", "prose"):
        for story in rd.draw(kind, 25, seed=5):
            texts.append(story.text)
            texts += [form(story) for form in rd.FORMS.values()]
    _same(texts)


def _tomi_file(stories: list) -> str:
    """ToMi's own test-file format: each story's numbered lines, then `N question<TAB>answer<TAB>1`."""
    return "".join(f"{s.text}\n{len(s.lines) + 1} {s.question}\t{s.answer}\t1\n" for s in stories)


def _tomi_documents(seed: int) -> tuple[list[str], list[str]]:
    """ToMi-like stories (lines without stops among them) and documents holding them re-formatted."""
    stories = short.draw(24, seed, set())
    docs = [_tomi_file(stories[i : i + 3]) for i in range(0, len(stories), 3)]
    docs += [form(s) for s in stories for form in short.FORMS.values()]
    docs += [" ".join(s.lines) for s in stories] + ["\n".join(s.lines) for s in stories]
    return [s.text for s in stories], docs


def _planted(stories: list[plants.Story]) -> list[str]:
    out = []
    for story in stories:
        for form in plants.ALL_FORMS:
            text = plants.plant_text(story, form, seed=3)
            if text is not None:
                out.append(text)
    return out


def _generated_stories(n: int) -> list[plants.Story]:
    """Stories of the project's own generator (prose of several templates)."""
    return [
        plants.Story(f"gen:{i}", r["context"], r["question"], str(r["answer"]))
        for i, r in enumerate(generate_records(n, seed=11))
    ]


def test_tomi_like_documents_are_cut_as_the_reference_cuts_them() -> None:
    stories, docs = _tomi_documents(4)
    _same(stories + docs)
    assert any(canonical._RUN_ON_HINT.search(d) for d in docs)  # the third reading is exercised


def test_every_planted_form_of_generated_and_hitom_like_stories_is_cut_as_the_reference_cuts_it() -> None:
    hitom = [plants.Story(f"h:{i}", s.text, numbered=True) for i, s in enumerate(rd.draw("hitom", 8, seed=2))]
    prose = [plants.Story(f"p:{i}", s.text) for i, s in enumerate(rd.draw("prose", 8, seed=2))]
    texts = _planted(hitom + prose + _generated_stories(12))
    assert len(texts) > 600
    _same(texts)


def test_the_match_is_the_same_with_and_without_the_compiled_path_on_short_stories(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stories, docs = _tomi_documents(6)
    others, _ = _tomi_documents(7)  # other stories of the same skeletons: they must not be found
    index = build_sentence_index(stories)
    docs = docs + others + [short.told_differently(short.draw(8, 6, set())[i], random.Random(i)).text for i in range(8)]
    compiled = match_sentences(index, docs)
    assert compiled.height >= 60  # most plants are found
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert match_sentences(index, docs).equals(compiled)


def test_the_scan_match_is_the_same_with_and_without_the_compiled_path(monkeypatch: pytest.MonkeyPatch) -> None:
    stories = rd.draw("hitom", 30, seed=9) + rd.draw("prose", 10, seed=9)
    index = build_sentence_index([s.text for s in stories])
    docs = [form(s) for s in stories for form in rd.FORMS.values()] + _generated(3, 200, FRAGMENTS)
    compiled = match_sentences(index, docs)
    assert compiled.height >= 9 * 35  # the plants are found (most of the 360)
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert match_sentences(index, docs).equals(compiled)


def test_the_byte_tables_hold_what_the_rules_name() -> None:
    keys, koff, vals, voff = canonical_jit._table([b"b", b"a", b"ab"], [b"2", b"1", b"3"])
    assert bytes(keys) == b"aabb" and koff.tolist() == [0, 1, 3, 4]  # sorted: a, ab, b
    assert bytes(vals) == b"132" and voff.tolist() == [0, 1, 2, 3]
    keys, koff, vals, voff = canonical_jit._table([b"x"], [])  # a set: empty values
    assert bytes(keys) == b"x" and koff.tolist() == [0, 1] and voff.tolist() == [0, 0]
    names = "p div br li ul ol h1 h2 h3 h4 h5 h6 tr td th table section article blockquote pre hr".split()
    assert canonical_jit._block_names() == names  # canonical._BLOCK_TAG's names, written out here
    keys, koff, vals, voff = canonical_jit._entity_table()
    found = {bytes(keys[koff[i] : koff[i + 1]]): bytes(vals[voff[i] : voff[i + 1]]) for i in range(len(koff) - 1)}
    assert found[b"amp"] == b"&" and found[b"quot"] == b'"' and found[b"apos"] == b"'" and found[b"lt"] == b"<"
    assert found[b"AMP"] == b"&" and found[b"Hat"] == b"^"  # names in any case, as `_ENTITY` reads them
    assert found[b"fjlig"] == b"fj" and b"eacute" not in found  # ASCII values only ...
    assert found[b"nbsp"] == b"\xa0" == bytes([canonical_jit.NBSP])  # ... and the no-break space as its one byte


def test_texts_become_their_utf8_bytes_and_offsets() -> None:
    data, offsets = canonical_jit.utf8_buffers(["ab", "", "c\u00e9"])
    assert bytes(data) == b"abc\xc3\xa9" and offsets.tolist() == [0, 2, 2, 5]
    assert data.dtype == np.uint8 and data.flags.writeable and offsets.dtype == np.int64
    data, offsets = canonical_jit.utf8_buffers(["ab", "cde"])  # plain ASCII: a character is a byte
    assert bytes(data) == b"abcde" and offsets.tolist() == [0, 2, 5] and offsets.dtype == np.int64
    for texts in ([], [""], ["", ""]):  # no bytes at all: an empty buffer, not None
        data, offsets = canonical_jit.utf8_buffers(texts)
        assert data.dtype == np.uint8 and len(data) == 0 and offsets.tolist() == [0] * (len(texts) + 1)


@pytest.mark.parametrize("jit", ["1", "0"])
def test_most_of_a_storys_sentences_are_needed_on_both_paths(monkeypatch: pytest.MonkeyPatch, jit: str) -> None:
    """A story of five distinct sentences (one story: every weight 1, null 0): a document with four of them
    holds it (4/5 = the 80% share), one with three does not (coverage 0.6 reaches `min_coverage`, the share
    does not; the named view needs all but one, 4); the compiled count and the frame's filter agree."""
    monkeypatch.setenv("TOMFORGE_JIT", jit)
    lines = [
        "Olive entered the dusty attic.",
        "The green fig is in the box.",
        "Olive moved the fig to the basket.",
        "Jack came back from the garden.",
        "Jack looked inside the old box.",
    ]
    index = build_sentence_index([" ".join(lines)])
    docs = [" ".join(lines[:4]), " ".join(lines[:3]), " ".join(lines[1:4] + ["Mia sang a long song today."])]
    found = match_sentences(index, docs)
    assert found.select("doc", "story", "matched_sentences").rows() == [(0, 0, 4)]


@pytest.mark.parametrize("jit", ["1", "0"])
def test_all_but_one_sentence_with_the_names_kept_is_enough_on_both_paths(
    monkeypatch: pytest.MonkeyPatch, jit: str
) -> None:
    """A story of four distinct sentences: three of them with its own names hold it (the named view takes all but
    one: a dropped line of a short story), the same three with other names do not (3/4 is under the 80% share of
    the abstracted view); the compiled count keeps the named view's rows."""
    monkeypatch.setenv("TOMFORGE_JIT", jit)
    lines = [
        "Olive entered the dusty attic.",
        "The green fig is in the box.",
        "Olive moved the fig to the basket.",
        "Jack looked inside the old box.",
    ]
    index = build_sentence_index(["\n".join(lines)])
    docs = ["\n".join(lines[:3]), "\n".join(lines[:3]).replace("Olive", "Mia")]
    found = match_sentences(index, docs)
    assert found.select("doc", "story", "matched_sentences", "story_sentences").rows() == [(0, 0, 3, 4)]


def test_the_python_path_gives_the_compiled_paths_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """`document_sentence_arrays` under TOMFORGE_JIT=0 (the reference, sentence by sentence) and compiled: the same
    values and dtypes, with `min_words` passed on (1 keeps "Mia ran.", 3 does not), and uint64 keys even when every
    key of the batch is under 2**63 (an int64 array would meet the index's uint64 keys as float64)."""
    small = next(
        t
        for t in (f"Olive saw the item number{i} now." for i in range(1000))
        if all(s.key < 2**63 and s.named_key < 2**63 for s in canonical.document_sentences(t, 1))
    )
    for texts in (
        ["Mia ran.", "Olive entered the attic. The fig is in the box.", "caf\u00e9 is hot here"],
        [small],
        ["Mia ran."],
    ):
        for min_words in (1, 3):
            positions = np.arange(len(texts))
            monkeypatch.setenv("TOMFORGE_JIT", "1")
            compiled = document_sentence_arrays(texts, positions, min_words)
            monkeypatch.setenv("TOMFORGE_JIT", "0")
            plain = document_sentence_arrays(texts, positions, min_words)
            want = [np.int64, np.uint64, np.uint64, np.int64, np.int64]
            assert [a.dtype for a in plain] == [a.dtype for a in compiled] == want
            assert [a.tolist() for a in plain] == [a.tolist() for a in compiled]
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert len(document_sentence_arrays(["Mia ran."], np.arange(1), 1)[0]) == 1
    assert len(document_sentence_arrays(["Mia ran."], np.arange(1), 3)[0]) == 0


def _benchmark_rows(arrays: tuple[np.ndarray, ...], keys: set[int], named: set[int]) -> list[Row]:
    return [r for r in zip(*(a.tolist() for a in arrays)) if r[1] in keys or r[2] in named]


def test_the_anchor_filter_keeps_every_sentence_a_benchmark_holds() -> None:
    """The compiled path leaves out a text with no anchor word (`holds_anchor`); every sentence of a
    benchmark story found without the filter is found with it, on texts aimed at the word rules (names,
    entities, capitals, leading digits) and on generated ones, and the filter does leave texts out."""
    stories = HAND_WRITTEN[:20] + _generated(11, 60, FRAGMENTS)
    index = build_sentence_index(stories)
    texts = HAND_WRITTEN + _generated(12, 1500, FRAGMENTS) + [s.upper() for s in stories] + [s.title() for s in stories]
    prose = [f"Zorp{i} blen quax dib.\nVel mox tarn sib for {i} ruk. Quen dal vor pim." for i in range(40)]
    texts += prose
    keys, named = set(index.abstract.key.tolist()), set(index.named.key.tolist())
    positions = np.arange(len(texts))
    whole = canonical_jit.sentence_arrays(texts, positions, 3)
    filtered = canonical_jit.sentence_arrays(texts, positions, 3, index.anchors)
    assert index.anchored
    assert _benchmark_rows(filtered, keys, named) == _benchmark_rows(whole, keys, named)
    assert len(_benchmark_rows(whole, keys, named)) > 300
    left_out = set(np.unique(whole[0]).tolist()) - set(np.unique(filtered[0]).tolist())
    assert set(range(len(texts) - len(prose), len(texts))) <= left_out  # no anchor word: not cut


def test_a_word_after_a_sentences_leading_digits_is_its_anchor_and_is_found() -> None:
    """Hand-worked: each sentence's rarest word (ties by the word) is its first, "abc", "abd", "abe", which
    the text holds only as "5abc" etc. (the sentence's `.lstrip` drops the digits); the story is found."""
    story = "5abc entered the zyx room. 6abd saw the zyx cup. 7abe left the zyx hall."
    index = build_sentence_index([story])
    from tomforge.audits.text import word_hash

    assert sorted(index.anchors.tolist()) == sorted(word_hash(w) for w in ("abc", "abd", "abe"))
    arrays = canonical_jit.sentence_arrays([story, "abcd entered the zyx room."], np.arange(2), 3, index.anchors)
    assert arrays[0].tolist() == [0, 0, 0]  # the second text holds no anchor: not cut
    assert match_sentences(index, [story]).select("doc", "story", "matched_sentences").rows() == [(0, 0, 3)]


def test_a_benchmark_sentence_without_a_plain_word_turns_the_anchor_filter_off() -> None:
    """Words holding a name's mark ("aMary" is "a" + a name) are never anchors (a text's own words never
    hold the mark); a sentence of such words only has no anchor, so no text may be left uncut."""
    plain = build_sentence_index(["Olive entered the attic. Olive saw the fig there."])
    assert plain.anchored and len(plain.anchors) == 2
    marked = build_sentence_index(["Olive entered the attic. aMary bJack cLiam. Olive saw the fig there."])
    assert not marked.anchored and len(marked.anchors) == 2
    text = "Olive entered the attic. aMary bJack cLiam. Olive saw the fig there."
    assert match_sentences(marked, [text]).select("doc", "matched_sentences").rows() == [(0, 3)]


def test_only_the_documents_asked_for_are_matched_and_none_gives_the_frames_columns() -> None:
    """`docs` narrows the match to those positions (an empty list: none), and a batch holding no sentence at all
    (prose the anchor test stops) still gives `MATCH_SCHEMA`'s columns, which the scan selects."""
    from tomforge.audits.sentence_match import MATCH_SCHEMA

    story = "Olive entered the attic. The fig is in the box. Olive moved the fig to the basket."
    index = build_sentence_index([story, "Jack came back from the garden. Jack looked inside the old box. Mia sang."])
    texts = ["Nothing to see here at all.", story, story.upper()]
    assert match_sentences(index, texts).select("doc", "story").rows() == [(1, 0), (2, 0)]
    assert match_sentences(index, texts, docs=[2]).select("doc", "story").rows() == [(2, 0)]
    assert match_sentences(index, texts, docs=[]).schema == MATCH_SCHEMA
    none = match_sentences(index, ["Nothing to see here at all.", "Zorp blen quax."])
    assert none.height == 0 and none.schema == MATCH_SCHEMA


def test_each_sentences_anchor_is_its_rarest_plain_word() -> None:
    """Hand-worked: "the" and "attic" are in both sentences (2 each), so the first sentence's anchor is "entered"
    and the second's "saw" (rarest, ties by the word: "saw" < "there"), not the alphabetical "attic"."""
    from tomforge.audits.text import word_hash

    index = build_sentence_index(["Olive entered the attic. Olive saw the attic there."])
    assert sorted(index.anchors.tolist()) == sorted([word_hash("entered"), word_hash("saw")])
