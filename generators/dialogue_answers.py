"""Which questions a conversation asks mid-way, chosen so that being asked there tells nothing of the answer.

Where a question can be asked mid-conversation depends on its answer: it may only follow a turn after
which its answer no longer changes (`generators.dialogue.settled_from`), and a yes/no question whose
answer is "no" settles earlier than one whose answer is "yes". Left alone, the template
`exploretom.belief.yn.v0.dialogue.mid` answered "no" on 71% of its 173 items (20,000 items, seed 0;
55% over every yes/no question asked mid-conversation), and the quoted turn's words did the same
("for", from "Bye for now" and "wait here for a minute": 63% "no"). The audit's feature-label check
reads exactly these cues: the template id and each word of the question, against the label (the
yes/no answer; the gold's letter in multiple choice), over all orders and per order.

`AnswerBalance` admits a place for a question only if, for every key the place gives it (`keys`: its
template, its template at its order, its format at its order, the phrasing of the quoted turn), each
label's running surplus over its chance rate (1/2 for yes/no and "can Bob know", 1/k for k options)
stays within BOUND items. The quotas make every label equally frequent over the whole run, so
mid-conversation answers keep the end-of-conversation rates per key, however long the run. Questions
whose labels the quotas do not balance (free text, list, or a run without controls) are not held back.
"""

from __future__ import annotations

import random
from typing import Callable, Hashable, Sequence

from tomforge.generators.dialogue import Phrasing
from tomforge.generators.question_forms import ANSWERABILITY
from tomforge.generators.questions import Question

Key = tuple[Hashable, ...]


class AnswerBalance:
    """Per (key, label): how many more questions with that label were asked mid-conversation than its
    chance rate allows."""

    BOUND = 1.5

    def __init__(self) -> None:
        self.surplus: dict[tuple[Key, Hashable], float] = {}

    def _after(self, keys: Sequence[Key], label: Hashable, labels: Sequence[Hashable]) -> dict:
        """The surpluses after one more mid-conversation question with `label`."""
        chance = 1.0 / len(labels)
        return {
            (key, other): self.surplus.get((key, other), 0.0) + (other == label) - chance
            for key in keys
            for other in labels
        }

    def admits(self, keys: Sequence[Key], label: Hashable, labels: Sequence[Hashable]) -> bool:
        """Whether `label` stays within its bound under every key: BOUND items ahead of its chance rate for
        yes/no, (k - 1) x BOUND for k options (so the other labels, each at most that far ahead, keep it at
        most as far behind)."""
        bound = self.BOUND * (len(labels) - 1)
        after = self._after(keys, label, labels)
        return all(after[key, label] <= bound for key in keys)

    def take(self, keys: Sequence[Key], label: Hashable, labels: Sequence[Hashable]) -> None:
        """Count a question asked mid-conversation."""
        self.surplus.update(self._after(keys, label, labels))

    def choosing(
        self,
        keys_at: Callable[[int], list[Key]],
        labelled: tuple[Hashable, Sequence[Hashable]],
        choose: Callable[[list[int]], int | None] | None,
        rng: random.Random,
    ) -> Callable[[list[int]], int | None]:
        """A place chooser for `generators.dialogue.choose_cut`: `choose` (or a random draw) among the places
        this balance admits the question at (`keys_at(place)`: its keys there), counting the one taken."""

        def choose_admitted(places: list[int]) -> int | None:
            admitted = [j for j in places if self.admits(keys_at(j), *labelled)]
            if choose is not None:
                place = choose(admitted)
            else:
                place = rng.choice(admitted) if admitted else None
            if place is not None:
                self.take(keys_at(place), *labelled)
            return place

        return choose_admitted


def label_of(q: Question, n_options: int, controls: bool) -> tuple[Hashable, tuple[Hashable, ...]] | None:
    """The label the audit reads off a question and every label it could have had (None: a question whose
    labels the quotas do not balance, so none is held back)."""
    if not controls:
        return None
    if q.fmt == "yes_no" and q.yes is not None:
        return ("yes" if q.yes else "no"), ("yes", "no")
    if q.fmt == "multiple_choice" and q.position is not None:
        return q.position, tuple(range(n_options))
    if q.fmt == ANSWERABILITY and q.gold in ("yes", "no"):  # "can Bob know": the quota balances yes and no
        return q.gold, ("yes", "no")
    return None


def keys(q: Question, style: str, quoted: tuple[str, Phrasing]) -> list[Key]:
    """What a mid-conversation question shows the audit, beyond its story: its template (style, kind,
    format, variant: the template id ending `.mid`), the same at its order, its format at its order (the
    words every quote shares, 'Asked right after ... says'), and each part of the quoted turn's phrasing
    (`generators.dialogue.phrase`: its opener and its body)."""
    template = (style, q.kind, q.fmt, q.variant)
    kind, phrasing = quoted
    return [
        ("template", *template),
        ("order template", q.key, *template),
        ("order", q.key, q.fmt),
        *[("quoted turn", q.fmt, kind, part, index) for part, index in enumerate(phrasing)],
    ]


def keys_at(q: Question, style: str, phrasings: Sequence[tuple[str, Phrasing]], place: int) -> list[Key]:
    """`keys` of a question asked right after turn `place` (`phrasings`: `Dialogue.phrasings`)."""
    return keys(q, style, phrasings[place])
