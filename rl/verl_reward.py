"""The file verl's `custom_reward_function.path` names. verl (0.9.1: `verl.utils.import_utils.load_module`) executes
that file under a made-up module name it never registers in `sys.modules`, so a file defining a dataclass under
`from __future__ import annotations` fails there (`rl/reward.py` did: AttributeError in `dataclasses`). This file
defines nothing: it imports tomforge's reward from the package, found on PYTHONPATH like any module."""

from tomforge.rl.reward import compute_score

__all__ = ["compute_score"]
