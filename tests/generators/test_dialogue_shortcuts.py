"""The two shortcuts the audit found in the dialogue rendering at 20,000 items (issue 28), counted here apart
from the generator.

1. Where a question is asked told its answer: a yes/no question asked mid-conversation answered "no" on 55% of
   them (71% for one template), because a "no" settles earlier. Reference: a fair coin, through exact binomial
   bounds (scipy), on the records' own fields (template id, answer, the quoted turn's words).
2. Every conversation opened with the same 25-word stage line and a few greetings, so held-out conversations
   shared 44-word runs with train ones. Reference: the third person, the template bank as written, told from the
   same worlds: the dialogue may not share more with train than templated prose does.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest
from scipy import stats

from tomforge.generators import generate_records

ALPHA = 0.001  # a fair coin leaves the tested interval with probability at most 0.1% (per family, Bonferroni)
N_GRAM = 13  # the audit's n-gram length; it calls a shared run of 2 x 13 words a copied passage


def inside(k: int, n: int, alpha: float) -> bool:
    """Whether k of n lies in the central (1 - alpha) interval of Binomial(n, 1/2)."""
    low, high = stats.binom.interval(1 - alpha, n, 0.5)
    return low <= k <= high


@pytest.fixture(scope="module")
def yes_no() -> list[dict]:
    """Yes/no questions only, so that a few thousand items put ~2,000 mid-conversation (before the control:
    1,097 "no" of 1,985, binomial p = 3e-6)."""
    return list(generate_records(8000, max_order=6, seed=1, rendering="dialogue", formats=("yes_no",)))


def test_mid_conversation_yes_no_answers_stay_at_fifty_percent(yes_no) -> None:
    mid = [r for r in yes_no if "asked_after_event" in r["meta"]]
    assert len(mid) > 0.15 * len(yes_no)  # the control holds some back, it does not empty the middle
    assert Counter(r["answer"] for r in yes_no) == {"yes": 4000, "no": 4000}  # the quotas: 50% over the run
    yes = sum(r["answer"] == "yes" for r in mid)
    assert inside(yes, len(mid), ALPHA), (yes, len(mid))
    by_template: defaultdict[str, Counter] = defaultdict(Counter)
    for r in mid:
        assert r["template_id"].endswith(".dialogue.mid")
        by_template[r["template_id"]][r["answer"]] += 1
    assert len(by_template) == 18  # 2 styles x (reality, memory, belief) x 3 variants
    worst = [(t, c["yes"], c.total()) for t, c in by_template.items() if not inside(c["yes"], c.total(), ALPHA / 18)]
    assert worst == []


def test_the_quoted_turn_says_nothing_of_the_answer(yes_no) -> None:
    """Each word of the quoted turns (on 40+ questions), as the audit's `q:` features read it."""
    by_word: defaultdict[str, Counter] = defaultdict(Counter)
    for r in yes_no:
        if "asked_after_event" in r["meta"]:
            quote = r["turns"][r["meta"]["asked_after_turn"] - 1]
            for word in set(re.findall(r"[a-z]+", f"{quote['speaker']} {quote['text']}".lower())):
                by_word[word][r["answer"]] += 1
    tested = {w: c for w, c in by_word.items() if c.total() >= 40}
    assert len(tested) > 30 and {"for", "now", "here"} <= set(tested)
    worst = [
        (w, c["yes"], c.total()) for w, c in tested.items() if not inside(c["yes"], c.total(), ALPHA / len(tested))
    ]
    assert worst == []


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def grams(text: str) -> list[tuple[str, ...]]:
    w = words(text)
    return [tuple(w[i : i + N_GRAM]) for i in range(len(w) - N_GRAM + 1)]


def longest_run(text: str, seen: set[tuple[str, ...]]) -> int:
    """The longest word run of `text` covered by n-grams of `seen` (train as one: at least any one pair's run)."""
    best = run = 0
    for gram in grams(text):
        run = run + 1 if gram in seen else 0
        best = max(best, run + N_GRAM - 1 if run else 0)
    return best


def shared_with_train(rendering: str) -> dict[str, float]:
    """Validation (same names and phrasings as train) against train, the same worlds in every rendering."""
    train = {r["context_id"]: r for r in generate_records(3000, seed=2, rendering=rendering)}
    held = {
        r["context"] for r in generate_records(1000, seed=2, split="validation", held_out=False, rendering=rendering)
    }
    seen = {g for r in train.values() for g in grams(r["context"])}
    out = {
        "longest": max(longest_run(text, seen) for text in held),
        "covered": sum(g in seen for text in held for g in grams(text)) / sum(len(grams(text)) for text in held),
    }
    if rendering == "dialogue":
        lines = Counter(text for r in train.values() for text in {t["text"] for t in r["turns"]})
        out["commonest line"] = lines.most_common(1)[0][1] / len(train)
    return out


def test_conversations_share_no_more_with_train_than_templated_prose() -> None:
    """Before: 13% of validation 13-grams were in train (third person 0.9%, dialogue now 1.1%), longest run 36
    words (third person 31), one line in every conversation; with one opener per greeting: 4.3%."""
    prose, spoken = shared_with_train("third_person"), shared_with_train("dialogue")
    assert spoken["longest"] < 2 * N_GRAM and spoken["longest"] <= prose["longest"], (spoken, prose)
    assert spoken["covered"] <= 2 * prose["covered"], (spoken, prose)
    assert spoken["commonest line"] < 1 / 3, spoken
