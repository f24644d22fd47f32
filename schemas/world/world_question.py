"""A question in the world model, as a release carries it for the process reward.

Kept apart from `generators.rationale` (which parses real stories and knows the generator) so that the
RL stage can rebuild the world from a release's ground truth with nothing but the checker: the two are
the world model the record's trace is written in, the lowest layer (ARCHITECTURE.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tomforge.schemas.world.checker import RULE_SETS, TraceWorld

_WORLD_KINDS = frozenset({"setup", "enter", "exit", "init", "move", "tell"})  # what TraceWorld reads


@dataclass(frozen=True)
class WorldQuestion:
    """A question in the world model: the trace, the chain (empty: reality), kind and rule set."""

    trace: list[dict[str, Any]]
    chain: tuple[str, ...]
    kind: str  # "belief" (order 0 = reality) or "memory"
    rules: str

    @property
    def obj(self) -> str:
        return str(self.trace[0]["object"])

    def world(self) -> TraceWorld:
        return TraceWorld(self.trace, RULE_SETS[self.rules])

    def to_json(self) -> dict[str, Any]:
        """What the process reward needs to rebuild the world: the setup and the events the checker
        reads (no distractor statements, scenery or noise; no source sentences)."""
        trace = [
            {k: v for k, v in event.items() if k != "text"} for event in self.trace if event["kind"] in _WORLD_KINDS
        ]
        return {"trace": trace, "chain": list(self.chain), "kind": self.kind, "rules": self.rules}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "WorldQuestion":
        return cls(list(data["trace"]), tuple(data["chain"]), str(data["kind"]), str(data["rules"]))
