"""Flags shared by several commands, and how a flag defers to a step's settings: an unset flag is None and
is not passed on, so every default is declared once, in the settings class."""
from __future__ import annotations

from typing import Any

import typer

from tomforge.warehouse.db import DEFAULT_WAREHOUSE

WarehouseOption = typer.Option(DEFAULT_WAREHOUSE, "--warehouse", "-w", help="DuckDB warehouse file.")


def given(**flags: Any) -> dict[str, Any]:
    """The flags the user set (not None): a step's typed settings take only these, so every default
    is declared once, in the settings class (`AuditParams`, `CleaningPolicy`, the generator's)."""
    return {name: value for name, value in flags.items() if value is not None}
