"""Chat prompts for one unified record: system + user messages asking for
`<think>...</think><answer>...</answer>`, with an answer instruction per answer format.

The reward (rl.reward) accepts exactly what these instructions ask for (an option letter or
its text, yes/no, a comma-separated list), so prompt and reward change together.
"""

from __future__ import annotations

import string
from typing import Any, Sequence

SYSTEM_PROMPT = (
    "You are a careful reader who reasons about what each person in a story knows, sees and believes. "
    "First think step by step inside <think> </think> tags, then give only the final answer inside "
    "<answer> </answer> tags, like this: <think> reasoning </think><answer> final answer </answer>. "
    "Use each tag exactly once."
)

FORMAT_INSTRUCTIONS: dict[str, str] = {
    "multiple_choice": "Choose one option. Inside <answer> </answer> give only the option's letter.",
    "yes_no": "Inside <answer> </answer> give only yes or no.",
    "free_text": "Inside <answer> </answer> give only the short answer (a few words, e.g. a place, object or name).",
    "list": "Inside <answer> </answer> give every item of the answer, separated by commas.",
}


def option_labels(n: int) -> list[str]:
    """A, B, C, ... (numbers 1..n past 26 options, where letters run out)."""
    if n <= len(string.ascii_uppercase):
        return list(string.ascii_uppercase[:n])
    return [str(i + 1) for i in range(n)]


def render_options(options: Sequence[str]) -> str:
    return "\n".join(f"{label}. {text}" for label, text in zip(option_labels(len(options)), options))


def render_context(record: dict[str, Any]) -> str:
    """The story text; a dialogue is rendered from its turns as `speaker: text` lines."""
    turns = record.get("turns")
    if record.get("context_kind") == "dialogue" and turns is not None and len(turns) > 0:
        return "\n".join(f"{turn['speaker']}: {turn['text']}" for turn in turns)
    return str(record["context"]).strip()


def user_message(record: dict[str, Any]) -> str:
    kind = "Dialogue" if record.get("context_kind") == "dialogue" else "Story"
    answer_format = record["answer_format"]
    parts = [f"{kind}:\n{render_context(record)}", f"Question: {str(record['question']).strip()}"]
    if answer_format == "multiple_choice":
        parts.append(f"Options:\n{render_options(list(record.get('options') or []))}")
    parts.append(FORMAT_INSTRUCTIONS[answer_format])
    return "\n\n".join(parts)


def build_messages(record: dict[str, Any], system_prompt: str = SYSTEM_PROMPT) -> list[dict[str, str]]:
    """Chat messages (system + user) for one record; every value a string (arrow-friendly)."""
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": user_message(record)},
    ]
