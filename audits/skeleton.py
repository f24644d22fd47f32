"""Story skeletons: the text with its entities replaced by role tokens in order of first mention.

Two stories with the same skeleton tell the same events about different people and things (a
held-out item that is a train item with the names swapped). Entities are found without a tagger,
by rules that fit templated ToM stories: a name is a capitalized word seen at least once away from
a sentence start; a thing is the phrase (up to three words) after a determiner or possessive.
"""
from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"\w+|[.!?]")
_DETERMINERS = {"the", "a", "an", "his", "her", "their", "its", "my", "your", "our", "some", "this", "that"}
_FUNCTION = {
    "in", "into", "on", "onto", "to", "at", "from", "with", "and", "or", "but", "is", "was", "are", "were",
    "of", "for", "by", "after", "before", "while", "then", "there", "here", "where", "when", "who", "what",
    "which", "that", "it", "he", "she", "they", "him", "them", "not", "no", "does", "did", "do", "think",
    "thinks", "believe", "believes", "about", "inside", "under", "behind", "near", "left", "entered",
    "exited", "moved", "put", "placed", "has", "had", "have", "will", "would", "be", "been", "as", "so",
}
_ENDS = {".", "!", "?"}


_SENTENCE_WORDS = _DETERMINERS | _FUNCTION | {
    "i", "we", "you", "yes", "now", "later", "meanwhile", "finally", "first", "next", "everyone", "nobody",
    "someone", "each", "both", "all", "one", "two", "three", "once", "suddenly", "afterwards", "also", "how",
    "why", "if", "because", "although", "though", "since", "during", "until", "story", "question", "answer",
}


def _names(words: list[str]) -> set[str]:
    """Capitalized words seen away from a sentence start, plus sentence-initial capitalized words
    that never occur in lower case and are not common sentence openers."""
    lower_seen = {w for w in words if w.islower()}
    names = set()
    sentence_start = True
    for word in words:
        if word in _ENDS:
            sentence_start = True
            continue
        if word[:1].isupper() and word.lower() not in _SENTENCE_WORDS:
            if not sentence_start or word.lower() not in lower_seen:
                names.add(word)
        sentence_start = False
    return names


def _scan(text: str, roles: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """One pass: assign role tokens in order of first mention (unless `roles` is given) and emit the
    rewritten words. Things are matched after a determiner; names wherever they occur."""
    words = _WORD.findall(text)
    fixed = roles is not None
    roles = dict(roles) if roles else {}
    names = {w for w in roles if w[:1].isupper()} if fixed else _names(words)
    n_agents = sum(1 for r in roles.values() if r.startswith("AGENT"))
    n_ents = len(roles) - n_agents
    out: list[str] = []
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        if word in names:
            role = roles.get(word)
            if role is None:
                n_agents += 1
                role = roles[word] = f"AGENT{n_agents}"
            out.append(role)
            i += 1
            continue
        low = word.lower()
        out.append("NUM" if word.isdigit() else low)
        i += 1
        if low in _DETERMINERS:
            j = i
            while j < n and j - i < 3:
                nxt = words[j]
                lw = nxt.lower()
                if nxt in _ENDS or lw in _FUNCTION or lw in _DETERMINERS or nxt in names:
                    break
                j += 1
            if j > i:
                key = " ".join(words[i:j]).lower()
                role = roles.get(key)
                if role is None and not fixed:
                    n_ents += 1
                    role = roles[key] = f"ENT{n_ents}"
                if role is not None:
                    out.append(role)
                    i = j
    return out, roles


def role_map(text: str) -> dict[str, str]:
    """Surface entity (names as written, things in lower case) -> role token, by first mention."""
    return _scan(text)[1]


def apply_roles(text: str, roles: dict[str, str]) -> str:
    """Rewrite another text (a question) with a story's roles; unknown words stay, lower-cased."""
    return " ".join(_scan(text, roles)[0])


def skeleton(text: str) -> str:
    return " ".join(_scan(text)[0])


def skeleton_key(text: str) -> str:
    return hashlib.blake2b(skeleton(text).encode("utf-8"), digest_size=16).hexdigest()
