"""The procedural ToM generator: world simulator, belief tracking, templates, adversarial operators.

`generate_records(n, max_order, seed, operators, styles, ...)` yields unified records (source
`tomforge_gen`, described by `ADAPTER_INFO`); `schemas.world.checker` re-derives every gold answer
independently and `audits.shortcuts` measures how far template heuristics get.

The names below load on first use (PEP 562), so that importing one module of the generator alone
(`generators.rationale_text`, as the release's exporter does) does not pull in the generator and the record
builder's dependencies. (The world model, which the RL stage's process reward imports on a GPU machine, is the
record contract's: `schemas/world/`.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tomforge.generators.generate import (
        ADAPTER_INFO,
        DEFAULT_SOURCE,
        FORMATS,
        GENERATOR,
        GENERATOR_VERSION,
        generate_records,
        generate_splits,
        generator_info,
    )
    from tomforge.generators.operators import OPERATORS
    from tomforge.generators.templates import STYLES

_HOMES = {"OPERATORS": "operators", "STYLES": "templates"}
__all__ = [
    "ADAPTER_INFO",
    "DEFAULT_SOURCE",
    "FORMATS",
    "GENERATOR",
    "GENERATOR_VERSION",
    "OPERATORS",
    "STYLES",
    "generate_records",
    "generate_splits",
    "generator_info",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES.get(name, 'generate')}"), name)
