"""Reading the story, question and answer out of an RL row's prompt, function by function, on hand-written
prompts (issue 38: survivors of mutmut over `warehouse/sources/rl_prompt.py`). Each expected split is what a
reader of the prompt sees by eye."""

from __future__ import annotations

import pytest

from tomforge.warehouse.sources import rl_prompt as rp
from tomforge.warehouse.sources.base import RecordError
from tomforge.warehouse.sources.rl_prompt import Answer, Mark, PromptMarkers, SplitPrompt

M = PromptMarkers()


def test_default_markers() -> None:
    assert M.story == ("Story:", "Dialogue:", "Context:", "Passage:")
    assert M.question == ("Question:",)
    assert M.end == ("Options:", "Choices:", "Answer:")
    assert (rp.SPLIT_BOTH, rp.SPLIT_QUESTION_ONLY, rp.SPLIT_NONE) == ("story_and_question", "question_only", "none")


@pytest.mark.parametrize("kind", ["story", "question", "end"])
def test_an_empty_marker_is_refused_by_kind(kind: str) -> None:
    with pytest.raises(ValueError) as refused:
        PromptMarkers(**{kind: ("X:", "  ")})
    assert str(refused.value) == f"an empty {kind} marker: give text such as 'Story:'"


def test_no_question_marker_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        PromptMarkers(question=())
    assert str(refused.value) == "at least one question marker is needed (e.g. 'Question:')"
    assert PromptMarkers(story=(), end=()).story == ()


# --- finding markers --------------------------------------------------------------------------------------------


def test_first_mark_needs_a_boundary_and_prefers_the_longest_at_one_place() -> None:
    text = "xQ: no. Q: a\tQ: b QQ: c"
    assert rp.first_mark(text, ("Q:",)) == Mark(8, 10, "Q:")
    assert rp.first_mark(text, ("Q:",), 9) == Mark(13, 15, "Q:")
    assert rp.first_mark(text, ("Q:",), 0, 9) is None  # the match at 8 runs past the stop
    assert rp.first_mark("Q: x", ("Q:",)) == Mark(0, 2, "Q:")  # the start of the text is a boundary
    assert rp.first_mark("A Story: x Story line: y", ("Story:", "Story line:")) == Mark(2, 8, "Story:")
    assert rp.first_mark("A Story line: y Story: x", ("Story:", "Story line:")) == Mark(2, 13, "Story line:")
    assert rp.first_mark("A Story line: y", ("Story", "Story line:")) == Mark(2, 13, "Story line:")
    assert rp.first_mark("A Story line: y", ("Story line:", "Story")) == Mark(2, 13, "Story line:")
    assert rp.first_mark("nothing here", ("Q:",)) is None and rp.first_mark("x", ()) is None


def test_last_mark_needs_a_boundary_and_prefers_the_longest_at_one_place() -> None:
    text = "Q: a Q: b xQ: c"
    assert rp.last_mark(text, ("Q:",)) == Mark(5, 7, "Q:")
    assert rp.last_mark(text, ("Q:",), 0, 6) == Mark(0, 2, "Q:")  # the one at 5 runs past the stop
    assert rp.last_mark(text, ("Q:",), 1) == Mark(5, 7, "Q:")
    assert rp.last_mark(text, ("Q:",), 1, 6) is None
    assert rp.last_mark("Story line: y", ("Story", "Story line:")) == Mark(0, 11, "Story line:")
    assert rp.last_mark("Story line: y", ("Story line:", "Story")) == Mark(0, 11, "Story line:")
    assert rp.last_mark("a Story: x Passage: y", ("Passage:", "Story:")) == Mark(11, 19, "Passage:")
    assert rp.last_mark("a Story: x Passage: y", ("Story:", "Passage:")) == Mark(11, 19, "Passage:")
    assert rp.last_mark("aQ:Q: x", ("Q:",)) is None  # neither follows whitespace
    assert rp.last_mark("Q:Q:", ("Q:",)) == Mark(0, 2, "Q:")


# --- message content --------------------------------------------------------------------------------------------


def test_content_parts() -> None:
    assert rp.content_parts(None) == ("", [])
    assert rp.content_parts("plain") == ("plain", [])
    parts = [
        "a",
        {"type": "text", "text": "b"},
        {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "input_text", "text": "c"},
        {"type": "output_text", "text": "d"},
        {"text": "e"},
        {"type": None},
        {"type": "input_audio"},
    ]
    assert rp.content_parts(parts) == ("a\nb\nc\nd\ne", ["image_url", "None", "input_audio"])


@pytest.mark.parametrize(
    "content, message",
    [
        (5, "message 3 is int, not text"),
        ([1.5], "message 3, content part 0: float, not a part object"),
        (["a", {"type": "text"}], "message 3, content part 1: a text part without text"),
        ([{"text": 7}], "message 3, content part 0: a text part without text"),
    ],
)
def test_bad_content_is_a_record_error_naming_the_part(content, message: str) -> None:
    with pytest.raises(RecordError) as bad:
        rp.content_parts(content, "message 3")
    assert (bad.value.field, bad.value.reason) == ("prompt", message)


def test_bad_content_without_a_place_says_message_content() -> None:
    with pytest.raises(RecordError) as bad:
        rp.content_parts({"a": 1})
    assert bad.value.reason == "message content is dict, not text"


def test_message_text_and_ignored_parts() -> None:
    assert rp.message_text([{"type": "text", "text": "hi"}, {"type": "image_url"}]) == "hi"
    assert rp.message_text(None) == ""
    prompt = [
        {"role": "system", "content": [{"type": "image_url"}]},
        {"role": "user", "content": "text"},
        {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "input_audio"}]},
        "not a message",
    ]
    assert rp.ignored_parts(prompt) == ["image_url", "input_audio"]
    assert rp.ignored_parts("Story: x") == []
    with pytest.raises(RecordError) as bad:
        rp.ignored_parts([{"role": "user", "content": "ok"}, {"role": "user", "content": [3]}])
    assert bad.value.reason == "message 1, content part 0: int, not a part object"


def test_user_texts() -> None:
    assert rp.user_texts("Story: x") == ["Story: x"]
    assert rp.user_texts("   \n") == []
    chat = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "reply"},
        {"from": "human", "value": "two"},
        {"role": "user", "content": "  "},
        {"from": "gpt", "value": "x"},
        {"role": "human", "content": [{"type": "text", "text": "three"}]},
    ]
    assert rp.user_texts(chat) == ["one", "two", "three"]
    assert rp.user_texts('[{"role": "user", "content": "json"}]') == ["json"]
    assert rp.user_texts('  [{"role": "user", "content": "spaced"}]') == ["spaced"]
    assert rp.user_texts("[{not json") == ["[{not json"]
    assert rp.user_texts('[{"a": 1}, 2]') == ['[{"a": 1}, 2]']
    assert rp.user_texts('[{"role": "user", "content": "x"}') == ['[{"role": "user", "content": "x"}']
    assert rp.user_texts('{"role": "user"}') == ['{"role": "user"}']


def test_messages_of_a_json_prompt() -> None:
    assert rp._messages('[{"role": "user", "content": "x"}]') == [{"role": "user", "content": "x"}]
    assert rp._messages("[1, 2]") is None and rp._messages('[{"a": 1}, "b"]') is None
    assert rp._messages('[{"a": 1}] tail') is None


@pytest.mark.parametrize(
    "prompt, message",
    [
        (5, "expected chat messages or a string, found int"),
        ({"role": "user"}, "expected chat messages or a string, found dict"),
        ([{"role": "user", "content": "a"}, "b"], "message 1 is not a {role, content} object"),
        ([{"role": "user"}], "message 0 is not a {role, content} object"),
    ],
)
def test_user_texts_refuse_what_is_not_a_chat(prompt, message: str) -> None:
    with pytest.raises(RecordError) as bad:
        rp.user_texts(prompt)
    assert (bad.value.field, bad.value.reason) == ("prompt", message)


def test_user_texts_name_the_message_of_bad_content() -> None:
    with pytest.raises(RecordError) as bad:
        rp.user_texts([{"role": "user", "content": "a"}, {"from": "human", "value": 3}])
    assert bad.value.reason == "message 1 is int, not text"


# --- splitting --------------------------------------------------------------------------------------------------


def test_story_then_question_then_options() -> None:
    text = "Read this.\nStory:\nAnne left.\nBob moved it.\n\nQuestion: Where is it?\n\nOptions:\nA. box"
    assert rp.split_text(text, M) == SplitPrompt("Anne left.\nBob moved it.", "Where is it?", rp.SPLIT_BOTH, "Story:")


def test_the_last_story_marker_opens_the_story() -> None:
    text = "Story: an example. Question: ex? Story: the real one. Question: Where?\nAnswer: box"
    assert rp.split_text(text, M) == SplitPrompt("the real one.", "Where?", rp.SPLIT_BOTH, "Story:")


def test_a_question_over_lines_ends_at_a_blank_line_or_an_end_marker() -> None:
    text = "Context: Anne talks.\nQuestion: Does Anne know\nwhat Bob said?\n \t\nAnswer yes or no."
    assert rp.split_text(text, M) == SplitPrompt(
        "Anne talks.", "Does Anne know\nwhat Bob said?", rp.SPLIT_BOTH, "Context:"
    )
    ended = "Passage: p.\nQuestion:\n\n  Who? Choices: a, b"
    assert rp.split_text(ended, M) == SplitPrompt("p.", "Who?", rp.SPLIT_BOTH, "Passage:")


def test_question_end() -> None:
    text = "Q: x\n\ny"
    assert rp._question_end(text, 2, M) == 4
    assert rp._question_end("Q:\n\n  Who? Options: a", 2, M) == 11
    assert rp._question_end("Q: Who?", 2, M) == 7
    assert rp._question_end("Q: a Answer: b\n\n", 2, M) == 5
    assert rp._question_end("Q: a\n\nb Answer: c", 2, M) == 4


def test_a_question_without_a_story_marker() -> None:
    text = "Anne put the ball in the box.\nQuestion: Where is the ball?"
    assert rp.split_text(text, M) == SplitPrompt(
        "Anne put the ball in the box.", "Where is the ball?", rp.SPLIT_QUESTION_ONLY, None
    )
    two = "Example Question: x? Anne left. Question: Where?"
    assert rp.split_text(two, M) == SplitPrompt("Example Question: x? Anne left.", "Where?", rp.SPLIT_QUESTION_ONLY)


@pytest.mark.parametrize(
    "text",
    [
        "no markers at all",
        "Question: Where is it?",  # no story before it
        "Story:   \nQuestion: Where?",  # an empty story
        "Story: Anne left.\nQuestion:   \n\nOptions: a",  # an empty question
        "Anne left. Question: \nAnswer: box",  # the end marker right after the question marker
    ],
)
def test_texts_the_markers_do_not_split(text: str) -> None:
    assert rp.split_text(text, M) is None


def test_a_question_asked_before_its_story() -> None:
    text = "Question: x? Question: Where is the ball?\nStory: Anne put it in the box.\nOptions: box, bag"
    assert rp.split_text(text, M) == SplitPrompt(
        "Anne put it in the box.", "Where is the ball?", rp.SPLIT_BOTH, "Story:"
    )
    to_the_end = "Question: Who spoke?\nDialogue:\nAnne: hi\nBob: hello"
    assert rp.split_text(to_the_end, M) == SplitPrompt(
        "Anne: hi\nBob: hello",
        "Who spoke?",
        rp.SPLIT_BOTH,
        "Dialogue:",
        [{"speaker": "Anne", "text": "hi"}, {"speaker": "Bob", "text": "hello"}],
    )
    assert rp.split_text("Story: Anne left. And then?", M) is None  # no question at all
    assert rp.split_text("Question:  \nStory: Anne left.", M) is None
    assert rp.split_text("Question: Who?\nStory:  \nAnswer: a", M) is None


def test_a_dialogue_gets_its_turns() -> None:
    text = "Dialogue:\nAnne: I put it in the box.\nBob: OK: fine.\nQuestion: Where is it?"
    found = rp.split_text(text, M)
    assert found is not None and found.marker == "Dialogue:"
    assert found.turns == [{"speaker": "Anne", "text": "I put it in the box."}, {"speaker": "Bob", "text": "OK: fine."}]
    story = rp.split_text("Story:\nAnne: hi\nQuestion: Who?", M)
    assert story is not None and story.turns is None  # only a dialogue marker reads turns


@pytest.mark.parametrize(
    "context, turns",
    [
        ("Anne: hi\nBob: yo", [{"speaker": "Anne", "text": "hi"}, {"speaker": "Bob", "text": "yo"}]),
        ("Anne: ", [{"speaker": "Anne", "text": ""}]),
        ("Anne: hi\nno speaker here", None),
        ("Anne:hi", None),
        (" : hi", None),
        ("", None),
    ],
)
def test_dialogue_turns(context: str, turns) -> None:
    assert rp.dialogue_turns(context) == turns


def test_split_prompt_tries_the_last_message_then_all_joined() -> None:
    chat = [
        {"role": "user", "content": "Story: first. Question: one?"},
        {"role": "user", "content": "Story: second. Question: two?"},
    ]
    assert rp.split_prompt(chat, M) == SplitPrompt("second.", "two?", rp.SPLIT_BOTH, "Story:")
    across = [{"role": "user", "content": "Story: Anne left."}, {"role": "user", "content": "Question: Where?"}]
    assert rp.split_prompt(across, M) == SplitPrompt("Anne left.", "Where?", rp.SPLIT_BOTH, "Story:")


def test_an_unsplit_prompt_keeps_the_whole_text_and_its_last_question_line() -> None:
    chat = [
        {"role": "user", "content": "Anne left. Is it here?"},
        {"role": "user", "content": " Bob came.\n  Where is it?  \nThink. Why?\nAnswer briefly."},
    ]
    assert rp.split_prompt(chat, M) == SplitPrompt(
        "Anne left. Is it here?\n\n Bob came.\n  Where is it?  \nThink. Why?\nAnswer briefly.",
        "Think. Why?",
        rp.SPLIT_NONE,
    )
    assert rp.split_prompt("  just text  ", M) == SplitPrompt("just text", "just text", rp.SPLIT_NONE)
    with pytest.raises(RecordError) as empty:
        rp.split_prompt([{"role": "system", "content": "x"}], M)
    assert (empty.value.field, empty.value.reason) == ("prompt", "no user message with text")


def test_one_message_is_split_alone() -> None:
    assert rp.split_prompt("Story: Anne left.\nQuestion: Where?", M) == SplitPrompt(
        "Anne left.", "Where?", rp.SPLIT_BOTH, "Story:"
    )


# --- answers ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, answer",
    [
        ("box", Answer("box", "free_text")),
        (" Yes ", Answer(" Yes ", "yes_no")),
        ("NO", Answer("NO", "yes_no")),
        (3, Answer("3", "free_text")),
        (True, Answer("true", "free_text")),
        ("[x", Answer("[x", "free_text")),
        ("{x", Answer("{x", "free_text")),
        ('["a", "b"]', Answer("a, b", "list", answer_list=["a", "b"])),
        ('  ["é"]', Answer("é", "list", answer_list=["é"])),
        (
            ["a", 2, {"k": "é", "a": 1}],
            Answer('a, 2, {"a": 1, "k": "é"}', "list", answer_list=["a", "2", '{"a": 1, "k": "é"}']),
        ),
        ({"k": 1}, Answer('{"k": 1}', "free_text")),
        ({"role": "assistant", "content": "basket"}, Answer("basket", "free_text")),
        ({"role": "assistant", "content": [{"type": "text", "text": "yes"}]}, Answer("yes", "yes_no")),
        (
            [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}, {"content": "c"}],
            Answer("a\nc", "free_text"),
        ),
    ],
)
def test_answer_of(value, answer: Answer) -> None:
    assert rp.answer_of(value, "reward_model.ground_truth") == answer


@pytest.mark.parametrize(
    "value, reason",
    [
        (None, "no answer (null or empty)"),
        ("", "no answer (null or empty)"),
        ([], "no answer (null or empty)"),
        ({}, "no answer (null or empty)"),
        ("[]", "no answer (null or empty)"),
        ("   ", "no answer (blank text)"),
        ({"role": "assistant", "content": None}, "no answer (null or empty)"),
    ],
)
def test_no_answer_is_a_record_error_on_the_field(value, reason: str) -> None:
    with pytest.raises(RecordError) as bad:
        rp.answer_of(value, "solution")
    assert (bad.value.field, bad.value.reason) == ("solution", reason)


def test_a_dict_with_content_but_no_role_is_its_json() -> None:
    assert rp.answer_of({"content": "x"}, "f") == Answer('{"content": "x"}', "free_text")
    assert rp.answer_of([{"content": "x"}, "y"], "f") == Answer(
        '{"content": "x"}, y', "list", answer_list=['{"content": "x"}', "y"]
    )


def test_tomforge_answers() -> None:
    mc = {"answer": "bag", "answer_format": "multiple_choice", "options": ["box", "bag"], "answer_index": 1}
    assert rp.answer_of(mc, "f") == Answer("bag", "multiple_choice", ["box", "bag"], 1)
    listed = '{"answer": "a, b", "answer_format": "list", "answer_list": ["a", 2], "answer_index": 0}'
    assert rp.answer_of(listed, "f") == Answer("a, b", "list", [], None, ["a", "2"])
    free = {"answer": "box", "answer_format": "free_text", "options": None, "answer_index": 3}
    assert rp.answer_of(free, "f") == Answer("box", "free_text", [], None, None)
    numbered = {"answer": "2", "answer_format": "yes_no", "options": [1, 2]}
    assert rp.answer_of(numbered, "f") == Answer("2", "yes_no", ["1", "2"], None, None)
    assert rp.answer_of({"answer": 3, "answer_format": "free_text"}, "f") == Answer(
        '{"answer": 3, "answer_format": "free_text"}', "free_text"
    )
    assert rp.answer_of({"answer": "x"}, "f") == Answer('{"answer": "x"}', "free_text")


@pytest.mark.parametrize(
    "truth, reason",
    [
        ({"answer": "x", "answer_format": "essay"}, "unknown answer_format 'essay'"),
        ({"answer": "x", "answer_format": "multiple_choice", "options": ["a"], "answer_index": 1}, None),
        ({"answer": "x", "answer_format": "multiple_choice", "options": ["a"], "answer_index": -1}, None),
        ({"answer": "x", "answer_format": "multiple_choice", "options": ["a"], "answer_index": "0"}, None),
        ({"answer": "x", "answer_format": "multiple_choice", "answer_index": 0}, None),
        ({"answer": "x", "answer_format": "list", "answer_list": "a"}, "a list answer without answer_list"),
        ({"answer": "x", "answer_format": "list"}, "a list answer without answer_list"),
    ],
)
def test_bad_tomforge_answers(truth: dict, reason: str | None) -> None:
    with pytest.raises(RecordError) as bad:
        rp.answer_of(truth, "ground_truth")
    n = len(truth.get("options") or [])
    expected = reason or f"answer_index {truth.get('answer_index')!r} does not point into {n} options"
    assert (bad.value.field, bad.value.reason) == ("ground_truth", expected)


def test_json_strings_decode_only_objects_and_lists() -> None:
    assert rp._decoded('{"a": 1}') == {"a": 1}
    assert rp._decoded(" [1]") == [1]
    assert rp._decoded("[1") == "[1"
    assert rp._decoded("1") == "1" and rp._decoded(1) == 1 and rp._decoded("") == ""
    assert rp._text("é") == "é" and rp._text({"b": "é", "a": None}) == '{"a": null, "b": "é"}'


def test_question_first_takes_the_question_before_the_story_marker_and_the_story_after_it() -> None:
    markers = PromptMarkers(story=("Tale Question:",), question=("Question:",))
    # the question marker inside the story marker is not the question's: the one before the story is
    assert rp.split_text("Question: Who? Tale Question: Anne left.", markers) == SplitPrompt(
        "Anne left.", "Who?", rp.SPLIT_BOTH, "Tale Question:"
    )
    # an end marker inside the question does not end the story
    assert rp.split_text("Question: Which? Answer: briefly.\nStory: Anne left.", M) == SplitPrompt(
        "Anne left.", "Which? Answer: briefly.", rp.SPLIT_BOTH, "Story:"
    )
    # a story marker other than "Dialogue:" reads no turns, even from `name: text` lines
    assert rp.split_text("Question: Who spoke?\nStory: Anne: hi", M) == SplitPrompt(
        "Anne: hi", "Who spoke?", rp.SPLIT_BOTH, "Story:", None
    )


def test_a_question_marker_with_only_spaces_after_it_ends_at_the_end() -> None:
    assert rp._question_end("Q:  \n ", 2, M) == 6
    assert rp.split_text("Story: Anne left.\nQuestion:   ", M) is None


def test_an_end_marker_inside_the_story_does_not_end_the_question() -> None:
    assert rp.split_text("Story: Answer: it moved.\nQuestion: Where?", M) == SplitPrompt(
        "Answer: it moved.", "Where?", rp.SPLIT_BOTH, "Story:"
    )


def test_an_unsplit_prompt_asks_its_last_question_line_of_three() -> None:
    assert rp.split_prompt("A?\nB?\nC?", M).question == "C?"


def test_a_multiple_choice_gold_may_be_the_first_option() -> None:
    mc = {"answer": "box", "answer_format": "multiple_choice", "options": ["box", "bag"], "answer_index": 0}
    assert rp.answer_of(mc, "f") == Answer("box", "multiple_choice", ["box", "bag"], 0)


def test_last_mark_never_looks_before_its_start() -> None:
    # after index 3 only "xQ:" (no boundary); the "Q:" at 0 lies before the start
    assert rp.last_mark("Q: a xQ: b", ("Q:",), 3) is None


def test_last_mark_steps_back_over_overlapping_occurrences() -> None:
    # "QQ" occurs at 1 and 2; the one at 2 follows a "Q", the one at 1 a space
    assert rp.last_mark(" QQQ y", ("QQ",)) == Mark(1, 3, "QQ")
