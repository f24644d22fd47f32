"""The second-person rendering, rule by rule (issue 38: mutmut over `generators/renderings.py`, hit by an
independent check that left "you has"). Each sentence below is rewritten by hand, one agreement rule each."""

from __future__ import annotations

import pytest

from tomforge.generators.renderings import RENDERINGS, GeneratorChoiceError, render, second_person


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Anne likes the apple.", "You like the apple."),
        ("Bob knows Anne really dislikes the box.", "Bob knows you really dislike the box."),
        ("Bob said Anne loves, hates, admires it.", "Bob said you love, hates, admires it."),
        (
            "Bob: Anne admires it. Anne believes it. Anne thinks so.",
            "Bob: you admire it. You believe it. You think so.",
        ),
        ("Bob thinks Anne is in the den.", "Bob thinks you are in the den."),
        ("Bob thinks Anne has the key.", "Bob thinks you have the key."),
        ("Bob asked whether Anne does.", "Bob asked whether you do."),
        ("Where does Anne think the apple is?", "Where do you think the apple is?"),
        ("Does Anne know?", "Do you know?"),
        ("Is Anne in the den?", "Are you in the den?"),
        ("What is Anne's belief?", "What is your belief?"),
        ("Bob took Anne's box.", "Bob took your box."),
        ("Anne made their choice. Anne checked their bag.", "You made your choice. You checked your bag."),
        ("Bob made their choice.", "Bob made their choice."),
        ("1 Anne entered the den.\n2 Anne left.", "1 You entered the den.\n2 You left."),
        ("Bob saw Anne! Anne ran? Anne hid.", "Bob saw you! You ran? You hid."),
        ("Annette met Anne.", "Annette met you."),  # a name inside another is not the reader
        ("Bob is here.", "Bob is here."),
    ],
)
def test_second_person_rule_by_rule(text: str, expected: str) -> None:
    assert second_person(text, "Anne") == expected


def test_a_reader_name_is_matched_literally() -> None:
    assert second_person("Anne met An.e.", "An.e") == "Anne met you."


def test_render_per_rendering() -> None:
    assert RENDERINGS == ("third_person", "second_person", "dialogue")
    text = "Anne has the key."
    assert render(text, "third_person", "Anne") == text
    assert render(text, "dialogue", "Anne") == text
    assert render(text, "second_person", "Anne") == "You have the key."


def test_an_unknown_rendering_is_bad_input() -> None:
    with pytest.raises(GeneratorChoiceError) as raised:
        render("x", "first_person", "Anne")
    assert str(raised.value) == ("unknown rendering 'first_person'; choose from third_person, second_person, dialogue")
    assert isinstance(raised.value, ValueError) and raised.value.exit_code == 2
