"""The rule reward: format (+1 / -1) plus correctness (+2 / -2), plus, when its weight is set, the
process reward (`rl.process_reward`: the <think> block's claims checked against the story's belief
states, on items whose ground truth carries the world), weights configurable.

Pure functions over strings, shared by training (verl, TRL) and evaluation, so a model is
scored the same way everywhere. Normalization is deliberately conservative: it forgives
surface form (case, unicode width, underscores, articles, punctuation, a leading preposition,
an option letter for its text, yes/no synonyms, list order) but never substring matches, so
"not the basket" does not score as "basket".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from tomforge.rl.process_reward import score_completion_process
from tomforge.schemas.rl.columns import decode_ground_truth

TAGS = ("<think>", "</think>", "<answer>", "</answer>")
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_ARTICLES = {"a", "an", "the"}
_PREPOSITIONS = {"in", "on", "at", "inside", "into", "under", "within", "to"}
_YES = {"yes", "y", "true", "correct", "yeah", "yep", "affirmative", "right"}
_NO = {"no", "n", "false", "incorrect", "nope", "negative", "wrong", "not"}
_EMPTY_LIST = {"", "none", "nobody", "no one", "noone", "nothing", "neither", "empty"}
_ANSWER_PREFIX = re.compile(r"^\s*(?:final\s+)?answer\s*(?:is)?\s*[:\-]?\s*", re.IGNORECASE)
_LETTER_RE = re.compile(
    r"^[\(\[]?\s*(?:option\s+|choice\s+)?([a-z]|\d{1,3})(?:[\)\]\.:]|\s|$)\s*(.*)$", re.IGNORECASE | re.DOTALL
)


@dataclass(frozen=True)
class RewardWeights:
    """Defaults are the published ToM RLVR recipe: +1/-1 format, +2/-2 correctness."""

    format_ok: float = 1.0
    format_bad: float = -1.0
    correct: float = 2.0
    wrong: float = -2.0
    score_malformed_answers: bool = False  # True: still check correctness when the tags are off
    process: float = 0.0  # weight of the process reward, in [-process * penalty, +process]; 0: off
    process_contradiction_penalty: float = 1.0  # a contradicted claim costs this many right ones


DEFAULT_WEIGHTS = RewardWeights()


@dataclass(frozen=True)
class Scored:
    format_ok: bool
    correct: bool
    extracted: str | None
    format_reward: float
    correctness_reward: float
    process_reward: float = 0.0
    claims_correct: int = 0
    claims_contradicted: int = 0
    states_deciding_belief: bool | None = None  # None: the item carries no world to check against
    faithful: bool | None = None  # names the deciding event, states the belief, nothing contradicted

    @property
    def score(self) -> float:
        return self.format_reward + self.correctness_reward + self.process_reward


# ---------------------------------------------------------------- format and extraction


def format_ok(text: str) -> bool:
    """Each of <think>, </think>, <answer>, </answer> exactly once, in that order."""
    if any(text.count(tag) != 1 for tag in TAGS):
        return False
    positions = [text.index(tag) for tag in TAGS]
    return positions == sorted(positions)


def extract_answer(text: str) -> str | None:
    """Content of the last <answer>...</answer> (None when absent)."""
    found = _ANSWER_RE.findall(text)
    return found[-1].strip() if found else None


# ---------------------------------------------------------------- normalization


def _unicode(text: str) -> str:
    """NFKC (full-width letters, ligatures), casefold, drop format characters (zero-width)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def normalize(text: str) -> str:
    """Case, unicode, underscores/hyphens, punctuation and articles removed, spaces collapsed."""
    text = _unicode(_ANSWER_PREFIX.sub("", text.strip()))
    text = re.sub(r"['\u2019`]", "", text)  # possessives: sally's -> sallys
    out = []
    for ch in text.replace("_", " ").replace("-", " "):
        category = unicodedata.category(ch)
        out.append(" " if category[0] in "PSZ" else ch)
    words = [w for w in "".join(out).split() if w not in _ARTICLES]
    return " ".join(words)


def _variants(norm: str) -> set[str]:
    """The text and the text without a leading preposition ("in the basket" ~ "basket")."""
    words = norm.split()
    variants = {norm}
    if len(words) > 1 and words[0] in _PREPOSITIONS:
        variants.add(" ".join(words[1:]))
    return variants


def texts_match(response: str, gold: str) -> bool:
    return bool(_variants(normalize(response)) & _variants(normalize(gold)))


def yes_no(text: str) -> str | None:
    """'yes' / 'no' from a synonym or a leading yes/no word; None when unclear or both."""
    words = normalize(text).split()
    if not words:
        return None
    says_yes = words[0] in _YES
    says_no = words[0] in _NO
    if says_yes and not any(w in _NO for w in words[1:]):
        return "yes"
    if says_no and not any(w in _YES for w in words[1:]):
        return "no"
    return None


def split_list(text: str, allow_and: bool = True) -> list[str]:
    """Items of a list answer: commas, semicolons, newlines, '&' and (optionally) 'and'."""
    text = unicodedata.normalize("NFKC", text).strip().strip("[](){}")
    pattern = r",|;|\n|&|\band\b" if allow_and else r",|;|\n|&"
    return [part for part in re.split(pattern, text, flags=re.IGNORECASE) if part.strip()]


def list_matches(response: str, gold: Sequence[str]) -> bool:
    """Set equality of normalized items; 'none'/'nobody' means the empty list."""
    allow_and = not any(re.search(r"\band\b", item, re.IGNORECASE) for item in gold)
    got = {normalize(item) for item in split_list(response, allow_and)} - {""}
    want = {normalize(item) for item in gold} - {""}
    if got <= _EMPTY_LIST and not want:
        return True
    return got == want


def choice_index(response: str, options: Sequence[str], labels: Sequence[str]) -> int | None:
    """The option a response picks: by its text, or by its letter (optionally followed by the
    option text, which must then agree). None when it picks none or is ambiguous."""
    norm = normalize(response)
    by_text = [i for i, option in enumerate(options) if _variants(norm) & _variants(normalize(option))]
    if len(by_text) == 1:
        return by_text[0]
    stripped = _unicode(_ANSWER_PREFIX.sub("", response.strip()))
    match = _LETTER_RE.match(stripped)
    if not match:
        return None
    label, rest = match.group(1), match.group(2).strip()
    lowered = [lab.casefold() for lab in labels]
    if label not in lowered:
        return None
    index = lowered.index(label)
    if rest and not texts_match(rest, options[index]):
        return None
    return index


# ---------------------------------------------------------------- correctness and score


def is_correct(response: str, truth: dict[str, Any]) -> bool:
    """Whether an extracted answer matches the ground truth of `schemas.rl.columns.ground_truth`."""
    answer_format = truth.get("answer_format", "free_text")
    if answer_format == "multiple_choice" and truth.get("options"):
        options = list(truth["options"])
        labels = list(truth.get("option_labels") or [])
        index = truth.get("answer_index")
        picked = choice_index(response, options, labels)
        if index is None:
            return picked is not None and texts_match(options[picked], truth["answer"])
        return picked == index
    if answer_format == "yes_no":
        gold = yes_no(truth["answer"])
        return gold is not None and yes_no(response) == gold
    if answer_format == "list":
        gold_list = truth.get("answer_list")
        gold_items = list(gold_list) if gold_list is not None else split_list(truth["answer"])
        return list_matches(response, gold_items)
    return texts_match(response, truth["answer"])


def score_completion(
    completion: str, ground_truth: str | dict[str, Any], weights: RewardWeights = DEFAULT_WEIGHTS
) -> Scored:
    """Score one completion against one ground truth (JSON string, dict, or plain answer text)."""
    truth = decode_ground_truth(ground_truth)
    ok = format_ok(completion)
    extracted = extract_answer(completion)
    # every <answer> block must be right: "<answer>no</answer>...<answer>yes</answer>" is a hedge, not an answer
    answers = (
        [found.strip() for found in _ANSWER_RE.findall(completion)] if ok or weights.score_malformed_answers else []
    )
    correct = all(is_correct(answer, truth) for answer in answers) if answers else False
    process = score_completion_process(completion, truth)
    return Scored(
        format_ok=ok,
        correct=correct,
        extracted=extracted,
        format_reward=weights.format_ok if ok else weights.format_bad,
        correctness_reward=weights.correct if correct else weights.wrong,
        process_reward=weights.process * process.score(weights.process_contradiction_penalty)
        if process is not None and weights.process
        else 0.0,
        claims_correct=process.n_correct if process is not None else 0,
        claims_contradicted=process.n_contradicted if process is not None else 0,
        states_deciding_belief=process.states_deciding_belief if process is not None else None,
        faithful=process.faithful if process is not None else None,
    )


def reward(completion: str, ground_truth: str | dict[str, Any], weights: RewardWeights = DEFAULT_WEIGHTS) -> float:
    return score_completion(completion, ground_truth, weights).score


# ---------------------------------------------------------------- verl


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, **kwargs: Any
) -> dict[str, float]:
    """verl's custom reward entry point (`custom_reward_function.name=compute_score`).
    Returns `score` plus numeric extras that verl logs (accuracy, format rate, the process reward and
    trace fidelity). Keyword arguments named as `RewardWeights` fields (verl's
    `custom_reward_function.reward_kwargs`, e.g. `process=0.5`) set the weights."""
    fields = set(RewardWeights.__dataclass_fields__)
    weights = RewardWeights(**{k: v for k, v in kwargs.items() if k in fields})
    scored = score_completion(solution_str, ground_truth, weights)
    return {
        "score": scored.score,
        "acc": float(scored.correct),
        "format_ok": float(scored.format_ok),
        "process": scored.process_reward,
        "faithful": float(bool(scored.faithful)),
    }


# ---------------------------------------------------------------- TRL


def completion_text(completion: Any) -> str:
    """TRL passes strings (standard) or message lists (conversational): take the assistant text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return "".join(str(m.get("content", "")) for m in completion if m.get("role", "assistant") == "assistant")


def _truths(n: int, kwargs: dict[str, Any]) -> list[Any]:
    """Ground truths from the dataset columns TRL forwards: `reward_model`, else `answer`."""
    if kwargs.get("reward_model") is not None:
        return [rm["ground_truth"] for rm in kwargs["reward_model"]]
    if kwargs.get("answer") is not None:
        return list(kwargs["answer"])
    raise KeyError("reward needs a `reward_model` or `answer` column in the dataset")


def make_trl_rewards(weights: RewardWeights = DEFAULT_WEIGHTS) -> list[Callable[..., list[float]]]:
    """TRL reward functions (format, correctness, and the process reward when its weight is set) that
    sum to the total reward; TRL logs each one's mean, which gives the format rate and the accuracy
    curves for free."""

    def format_reward(completions: list[Any], **kwargs: Any) -> list[float]:
        return [
            score_completion(completion_text(c), t, weights).format_reward
            for c, t in zip(completions, _truths(len(completions), kwargs))
        ]

    def correctness_reward(completions: list[Any], **kwargs: Any) -> list[float]:
        return [
            score_completion(completion_text(c), t, weights).correctness_reward
            for c, t in zip(completions, _truths(len(completions), kwargs))
        ]

    def process_reward(completions: list[Any], **kwargs: Any) -> list[float]:
        return [
            score_completion(completion_text(c), t, weights).process_reward
            for c, t in zip(completions, _truths(len(completions), kwargs))
        ]

    return [format_reward, correctness_reward, *([process_reward] if weights.process else [])]


def trl_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """The total reward as one TRL reward function (default weights)."""
    return [reward(completion_text(c), t) for c, t in zip(completions, _truths(len(completions), kwargs))]


__all__ = (
    "RewardWeights",
    "Scored",
    "score_completion",
    "reward",
    "compute_score",
    "trl_reward",
    "make_trl_rewards",
    "normalize",
    "format_ok",
    "extract_answer",
)
