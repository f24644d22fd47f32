"""`tomforge ingest --source rlfiles` flags -> the RL files adapter configured by them.

Kept apart from `flows/cli.py` (which only declares the flags): the flags apply to the RL files
source alone, and a flag given for another source is an error rather than silently ignored.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.sources.base import Adapter


class RLFilesOptionError(TomforgeError, ValueError):
    """An RL files flag given with another source, or an empty split name: bad input, one line (a ValueError
    too, so the config's validator reports it in place)."""


def rl_adapter(
    source: str,
    *,
    split: Optional[str] = None,
    answer_field: Optional[str] = None,
    story_markers: Optional[list[str]] = None,
    question_markers: Optional[list[str]] = None,
    end_markers: Optional[list[str]] = None,
    prompt_field: Optional[str] = None,
) -> Adapter | None:
    """The `rlfiles` adapter with the flags given (a marker flag, repeated, replaces that default list),
    or None for another source given no RL flag. `RLFilesOptionError` (`MarkerError` for a marker) for an RL flag
    given with another source, an empty marker or an empty split name."""
    given = {
        "--split": split,
        "--answer-field": answer_field,
        "--story-marker": story_markers,
        "--question-marker": question_markers,
        "--end-marker": end_markers,
        "--prompt-field": prompt_field,
    }
    named = [flag for flag, value in given.items() if value]
    if source != "rlfiles":
        if named:
            raise RLFilesOptionError(f"{', '.join(named)}: only for --source rlfiles (RL training files)")
        return None
    from tomforge.warehouse.sources.rl_prompt import PromptMarkers
    from tomforge.warehouse.sources.rlfiles import ADAPTER, RLFileOptions

    if split is not None and not split.strip():
        raise RLFilesOptionError("--split: give a split name, e.g. train")
    markers = PromptMarkers()
    markers = replace(
        markers,
        **{
            kind: tuple(values)
            for kind, values in (("story", story_markers), ("question", question_markers), ("end", end_markers))
            if values
        },
    )
    options = RLFileOptions(split=split, answer_field=answer_field or None, markers=markers)
    return ADAPTER.configured(replace(options, prompt_field=prompt_field) if prompt_field else options)
