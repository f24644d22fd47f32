"""A settings field that is also a command-line flag, declared once: its default, its flag names and its help sit
on the dataclass field, and the command's option is made from them (`flows/commands/field_flags.py`).

Plain data only (no click, no typer): the settings classes live in low layers (`rl/`, `audits/`) that never import
the command line, and the GPU machine reads them without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

METADATA_KEY = "tomforge.flag"


@dataclass(frozen=True)
class Flag:
    """How a settings field shows on the command line: its flag names (`--bf16/--no-bf16` for an on/off pair),
    its help (fields of several settings classes sharing a flag each add their part; equal parts show once) and
    click's options for it (`min`, `max`)."""

    names: tuple[str, ...]
    help: str = ""
    options: tuple[tuple[str, Any], ...] = ()


def flag(
    default: Any = dataclasses.MISSING,
    *names: str,
    help: str = "",
    default_factory: Callable[[], Any] | None = None,
    **options: Any,
) -> Any:
    """A dataclass field with default `default` (or `default_factory`) that commands offer as the flag `names`."""
    if not names:
        raise TypeError("flag() needs at least one flag name")
    metadata = {METADATA_KEY: Flag(tuple(names), help, tuple(sorted(options.items())))}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_of(field: dataclasses.Field[Any]) -> Flag | None:
    """The flag a dataclass field declares, or None when it has none."""
    found = field.metadata.get(METADATA_KEY)
    return found if isinstance(found, Flag) else None
