"""rl/reward.py against hand-worked values (issue 38: the mutants mutmut left alive by tests/rl/test_rl_reward.py):
every synonym, preposition and empty-list word the module lists, the tags' order, the last answer block, the
letter forms an option is picked by, the score's parts under set weights, verl's extras and TRL's columns. The
expected values are written from the module's docstrings, not read from the code's output (< 1 s, strings only)."""

from __future__ import annotations

import pytest

from tomforge.rl.reward import (
    DEFAULT_WEIGHTS,
    RewardWeights,
    Scored,
    choice_index,
    completion_text,
    compute_score,
    extract_answer,
    format_ok,
    is_correct,
    list_matches,
    make_trl_rewards,
    normalize,
    score_completion,
    split_list,
    texts_match,
    trl_reward,
    yes_no,
)


def done(answer: str, think: str = "t") -> str:
    return f"<think>{think}</think><answer>{answer}</answer>"


def test_the_default_weights_are_the_published_recipe() -> None:
    assert DEFAULT_WEIGHTS == RewardWeights(1.0, -1.0, 2.0, -2.0, False, 0.0, 1.0)
    assert Scored(True, False, "x", 1.0, -2.0, 0.25).score == -0.75


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("<think>a</think><answer>b</answer>", True),
        ("<think></think>\n<answer></answer>", True),
        ("<think>a</think>", False),
        ("<answer>b</answer>", False),
        ("<think>a</think><answer>b</answer><answer>c</answer>", False),  # an answer twice
        ("<think>a</think><think>a</think><answer>b</answer>", False),
        ("<answer>b</answer><think>a</think>", False),  # the wrong order
        ("<think>a<answer>b</think></answer>", False),  # </think> after <answer>
        ("", False),
    ],
)
def test_the_format_is_each_tag_once_in_order(text: str, ok: bool) -> None:
    assert format_ok(text) is ok


def test_the_answer_is_the_last_block_stripped() -> None:
    assert extract_answer("<answer> a </answer> x <answer>\n b\nc \n</answer>") == "b\nc"
    assert extract_answer("<answer>a</answer>") == "a"
    assert extract_answer("<answer>a") is None
    assert extract_answer("") is None


@pytest.mark.parametrize(
    ("text", "norm"),
    [
        ("The Box.", "box"),
        ("Sally's basket", "sallys basket"),
        ("Sally\u2019s basket", "sallys basket"),
        ("Sally`s basket", "sallys basket"),
        ("green_box", "green box"),
        ("red-box", "red box"),
        ("Final answer: the red box", "red box"),
        ("answer is - An apple", "apple"),
        ("ANSWER:a box", "box"),
        ("\uff22\uff4f\uff58", "box"),  # full-width letters
        ("b\u200bo\u200bx", "box"),  # zero-width spaces
        ("  a   big \t box  ", "big box"),
        ("box+tin", "box tin"),  # a symbol is a space
        ("A", ""),
    ],
)
def test_normalize(text: str, norm: str) -> None:
    assert normalize(text) == norm


@pytest.mark.parametrize("preposition", ["in", "on", "at", "inside", "into", "under", "within", "to"])
def test_a_leading_preposition_is_forgiven(preposition: str) -> None:
    assert texts_match(f"{preposition} the basket", "basket")
    assert texts_match("basket", f"{preposition} basket")


def test_texts_match_never_by_substring() -> None:
    assert not texts_match("behind the basket", "basket")  # not a preposition it forgives
    assert not texts_match("not the basket", "basket")
    assert not texts_match("in", "on")  # a preposition alone is a word, not nothing
    assert not texts_match("basket in", "basket")
    assert texts_match("In The Basket!", "the basket")


@pytest.mark.parametrize("word", ["yes", "y", "true", "correct", "yeah", "yep", "affirmative", "right"])
def test_every_yes_word(word: str) -> None:
    assert yes_no(word) == "yes"
    assert yes_no(f"{word.upper()}, she does") == "yes"


@pytest.mark.parametrize("word", ["no", "n", "false", "incorrect", "nope", "negative", "wrong", "not"])
def test_every_no_word(word: str) -> None:
    assert yes_no(word) == "no"
    assert yes_no(f"{word}, she does not") == "no"


def test_yes_no_when_unclear() -> None:
    assert yes_no("") is None
    assert yes_no("maybe") is None
    assert yes_no("yes and no") is None  # both
    assert yes_no("no, that is correct") is None
    assert yes_no("she thinks yes") is None  # not a leading word


def test_split_list() -> None:
    assert split_list("[Ann, Bob]") == ["Ann", " Bob"]
    assert split_list("(Ann; Bob\nCid & Dan AND Eve)") == ["Ann", " Bob", "Cid ", " Dan ", " Eve"]
    assert split_list("{Ann and Bob}", allow_and=False) == ["Ann and Bob"]
    assert split_list("Anderson, Brandon") == ["Anderson", " Brandon"]  # 'and' inside a word
    assert split_list("Ann,, ,Bob") == ["Ann", "Bob"]
    assert split_list(" \uff21nn ") == ["Ann"]  # NFKC first


@pytest.mark.parametrize("word", ["", "none", "nobody", "no one", "noone", "nothing", "neither", "empty", "None."])
def test_every_word_for_the_empty_list(word: str) -> None:
    assert list_matches(word, [])
    assert not list_matches(word, ["Ann"])


def test_list_matches() -> None:
    assert list_matches("Bob, the Ann", ["Ann", "Bob"])
    assert list_matches("Ann, Ann", ["Ann"])
    assert not list_matches("Ann", ["Ann", "Bob"])
    assert not list_matches("Ann", [])
    assert not list_matches("none, Ann", [])
    assert list_matches("Ben and Jerry", ["Ben and Jerry"])  # a gold item holding 'and': not a separator
    assert list_matches("Ben and Jerry", ["Ben", "Jerry"])  # "and" separates here
    assert list_matches("", [""])


LABELS = ["A", "B", "C", "D"]
OPTIONS = ["red box", "blue box", "green bag", "tin"]


@pytest.mark.parametrize(
    ("response", "index"),
    [
        ("B", 1),
        ("b", 1),
        ("(c)", 2),
        ("[D]", 3),
        ("option c", 2),
        ("Choice A", 0),
        ("B. blue box", 1),
        ("B) the blue box", 1),
        ("B: blue box", 1),
        ("Answer: C", 2),
        ("final answer is d", 3),
        ("in the green bag", 2),  # by its text
        ("B. red box", None),  # the letter and the text disagree
        ("E", None),  # no such label
        ("blue", None),
        ("", None),
        ("Bx", None),
    ],
)
def test_choice_index(response: str, index: int | None) -> None:
    assert choice_index(response, OPTIONS, LABELS) == index


def test_choice_index_by_number_and_ambiguous_text() -> None:
    assert choice_index("2", ["x", "y", "z"], ["1", "2", "3"]) == 1
    assert choice_index("12", [f"place {i}" for i in range(30)], [str(i + 1) for i in range(30)]) == 11
    assert choice_index("box", ["box", "the box"], ["A", "B"]) is None  # two options by text, no letter


def mc(index: int | None, answer: str = "blue box") -> dict:
    return {
        "answer_format": "multiple_choice",
        "options": OPTIONS,
        "option_labels": LABELS,
        "answer_index": index,
        "answer": answer,
    }


def test_is_correct_per_format() -> None:
    assert is_correct("B", mc(1)) and not is_correct("A", mc(1))
    assert is_correct("blue box", mc(None)) and is_correct("B", mc(None))  # no index: the picked text
    assert not is_correct("A", mc(None)) and not is_correct("E", mc(None))
    assert is_correct("blue box", {**mc(1), "options": []})  # no options: compared as text
    assert is_correct("correct", {"answer_format": "yes_no", "answer": "Yes"})
    assert not is_correct("no", {"answer_format": "yes_no", "answer": "Yes"})
    assert not is_correct("maybe", {"answer_format": "yes_no", "answer": "perhaps"})  # an unclear gold: never
    assert not is_correct("", {"answer_format": "yes_no", "answer": ""})
    assert is_correct("Bob and Ann", {"answer_format": "list", "answer": "Ann, Bob", "answer_list": None})
    assert is_correct("none", {"answer_format": "list", "answer": "Ann", "answer_list": []})  # the list first
    assert is_correct("in the tin", {"answer": "tin"})  # no format: free text


def test_the_score_and_its_parts() -> None:
    right = score_completion(done("B"), mc(1))
    assert right == Scored(True, True, "B", 1.0, 2.0, 0.0, 0, 0, None, None)
    assert right.score == 3.0
    weights = RewardWeights(format_ok=0.5, format_bad=-0.25, correct=4.0, wrong=-3.0)
    assert score_completion(done("A"), mc(1), weights).score == 0.5 - 3.0
    malformed = "<answer>B</answer>"
    assert score_completion(malformed, mc(1)) == Scored(False, False, "B", -1.0, -2.0)
    lenient = RewardWeights(score_malformed_answers=True)
    assert score_completion(malformed, mc(1), lenient).score == -1.0 + 2.0
    assert score_completion("no answer at all", mc(1), lenient).correct is False
    hedge = "<think>t</think><answer>A</answer><answer>B</answer>"
    assert score_completion(hedge, mc(1), lenient).correct is False  # every block must be right
    assert score_completion("<answer>B</answer> <answer>B</answer>", mc(1), lenient).correct is True
    assert score_completion(done("tin"), "tin").correct  # a plain answer text
    assert score_completion(done("B"), mc(1), RewardWeights(process=0.5)).process_reward == 0.0  # no world


def test_verl_gets_the_score_and_its_extras() -> None:
    gt = '{"answer_format": "free_text", "answer": "tin"}'
    assert compute_score("src", done("tin"), gt) == {
        "score": 3.0,
        "acc": 1.0,
        "format_ok": 1.0,
        "process": 0.0,
        "faithful": 0.0,
    }
    assert compute_score("src", "tin", gt, None, correct=5.0, wrong=-7.0, unknown=1) == {
        "score": -8.0,
        "acc": 0.0,
        "format_ok": 0.0,
        "process": 0.0,
        "faithful": 0.0,
    }
    assert compute_score("src", done("tin"), gt, {}, correct=5.0)["score"] == 6.0


def test_completion_text_takes_the_assistants_words() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text({"role": "assistant", "content": "one"}) == "one"
    assert completion_text({"role": "assistant"}) == ""
    messages = [
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "u"},
        {"content": "b"},  # no role: the assistant's
        {"role": "assistant"},
    ]
    assert completion_text(messages) == "ab"


def test_trl_reads_reward_model_then_answer() -> None:
    completions = [done("tin"), "tin"]
    by_model = {"reward_model": [{"ground_truth": "tin"}, {"ground_truth": "tin"}], "answer": ["x", "x"]}
    assert trl_reward(completions, **by_model) == [3.0, -3.0]
    assert trl_reward(completions, reward_model=None, answer=["tin", "box"]) == [3.0, -3.0]
    with pytest.raises(KeyError, match=r"^'reward needs a `reward_model` or `answer` column in the dataset'$"):
        trl_reward(completions, prompt=["p", "p"])
    fmt, right = make_trl_rewards()
    assert (fmt.__name__, right.__name__) == ("format_reward", "correctness_reward")
    assert fmt(completions, answer=["tin", "tin"]) == [1.0, -1.0]
    assert right([{"role": "assistant", "content": done("tin")}], answer=["box"]) == [-2.0]
    with_process = make_trl_rewards(RewardWeights(process=0.5))
    assert [f.__name__ for f in with_process] == ["format_reward", "correctness_reward", "process_reward"]
    assert with_process[2](completions, answer=["tin", "tin"]) == [0.0, 0.0]  # no world: no process reward


def test_with_an_index_only_that_option_is_right_even_if_another_reads_the_same() -> None:
    twins = {**mc(2, "box"), "options": ["box", "tin", "box", "jar"]}
    assert is_correct("C", twins)
    assert not is_correct("A", twins)  # the same text, another option: the index decides


def test_list_words_in_any_case() -> None:
    assert list_matches("tom and jerry", ["Tom AND Jerry"])  # a gold 'AND' is a name's, whatever its case
    assert list_matches("Ann, the", ["Ann"])  # an item that normalizes to nothing is no item
    assert split_list("Xena, Max") == ["Xena", " Max"]  # only brackets are stripped from the ends
    assert split_list("Ann, Bob;Cid", allow_and=False) == ["Ann", " Bob", "Cid"]


def test_trl_functions_use_their_weights() -> None:
    weights = RewardWeights(format_ok=0.5, format_bad=-0.25, correct=4.0, wrong=-3.0)
    fmt, right = make_trl_rewards(weights)
    completions = [done("tin"), "<answer>tin</answer>"]
    assert fmt(completions, answer=["tin", "tin"]) == [0.5, -0.25]
    assert right(completions, answer=["tin", "tin"]) == [4.0, -3.0]


def test_the_process_parts_reach_verl_and_trl() -> None:
    import json

    from tests.rl.test_process_reward import RIGHT_REASONS, truth

    gold = json.dumps(truth(("Bob",), "crate"))  # that file's hand-worked story: right for the right reasons
    out = compute_score("src", done("crate", RIGHT_REASONS), gold, process=0.5)
    assert (out["faithful"], out["acc"], out["process"]) == (1.0, 1.0, 0.5)
    process = make_trl_rewards(RewardWeights(process=0.5, correct=3.0))[2]
    assert process([done("crate", RIGHT_REASONS)], answer=[gold]) == [0.5]


def test_a_yes_then_a_no_word_is_unclear() -> None:
    assert yes_no("Yes, no.") is None
    assert yes_no("no yes") is None


def test_the_process_figures_of_a_story_with_a_world() -> None:
    from tests.rl.test_process_reward import MOSTLY_RIGHT, RIGHT_REASONS, truth

    gold = truth(("Bob",), "crate")  # that file's claims, each verdict worked out by hand from its story
    right = score_completion(done("crate", RIGHT_REASONS), gold)  # weight 0: no process reward, figures reported
    assert (right.process_reward, right.claims_correct, right.claims_contradicted) == (0.0, 7, 0)
    assert (right.states_deciding_belief, right.faithful) == (True, True)
    mostly = score_completion(done("basket", MOSTLY_RIGHT), gold, RewardWeights(process=1.0))
    assert (mostly.claims_correct, mostly.claims_contradicted, mostly.states_deciding_belief, mostly.faithful) == (
        5,
        2,
        False,
        False,
    )
    assert mostly.process_reward == pytest.approx(3 / 7)  # (5 - 2) / 7
    harsh = score_completion(
        done("basket", MOSTLY_RIGHT), gold, RewardWeights(process=1.0, process_contradiction_penalty=2.0)
    )
    assert harsh.process_reward == pytest.approx(1 / 7)  # (5 - 2 * 2) / 7
