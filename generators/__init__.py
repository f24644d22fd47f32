"""The procedural ToM generator: world simulator, belief tracking, templates, adversarial operators.

`generate_records(n, max_order, seed, operators, styles, ...)` yields unified records (source
`tomforge_gen`, described by `ADAPTER_INFO`); `generators.checker` re-derives every gold answer
independently and `audits.shortcuts` measures how far template heuristics get.
"""
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

__all__ = ["ADAPTER_INFO", "DEFAULT_SOURCE", "FORMATS", "GENERATOR", "GENERATOR_VERSION", "OPERATORS", "STYLES",
           "generate_records", "generate_splits", "generator_info"]
