"""The learning gate (`rl.gate`) in the experiment reports: each arm's accuracy on held-out items of the orders,
forms and renderings it was trained on, with their chance, and the verdict; comparisons refuse arms that did not
learn ("not compared: <arm> did not learn").

Models of runs 4-11 were trained before `tomforge_training.json` carried orders and forms, and several were never
trained by `tomforge train` (the SFT arms). Their records are rebuilt here from the release's training split of
the arm (`rl.trained_on.training_record`): the release is rebuilt from the repository by
`experiments.experiment_data` (the run READMEs' "Repeat"), byte for byte the same tag. The stored eval rows of those
runs carry no chance and (before run 9) no rendering: both are read from the release's evaluation splits, the
chance per split as `tomforge eval` computes it now (`rl.gate.chances`, the split being the set).

The reports gate on **the controlled generated set of the trained orders 0-3** (`tomforge_gen/test_orders0to3`)
and, for the arms trained on HiToM, on HiToM's own evaluation sets of orders 0-3; which of those items count is
`rl.gate.learning_gate`'s rule (the combination trained on, the item not trained on).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from tomforge.rl.gate import LEARNING_GATE, Gate, learning_gate

GATE_SPLITS = ("tomforge_gen/test_orders0to3", "hitom/test_orders0to3", "hitom/test_stories")


@lru_cache(maxsize=8)
def training_record_of(release: str, train: str) -> dict[str, Any]:
    """The training record of a model trained on split `train` (CONFIG/SPLIT) of the release folder."""
    from tomforge.rl.release import SplitRef, read_split
    from tomforge.rl.trained_on import training_record

    ref = SplitRef.parse(train)
    return training_record(release, None, ref, read_split(Path(release), ref))


@lru_cache(maxsize=8)
def _item_facts(release: str, splits: tuple[str, ...]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(config, split, item_id) -> {'chance', 'rendering'} for every item of the release's `splits`."""
    from tomforge.rl.gate import chances
    from tomforge.rl.release import SplitRef, read_split, renderings_of
    from tomforge.schemas.rl.columns import decode_ground_truth

    facts = {}
    for name in splits:
        ref = SplitRef.parse(name)
        try:
            table = read_split(Path(release), ref)
        except Exception:  # a split this release does not have (an older experiment's): nothing to add
            continue
        truths = [decode_ground_truth(rm["ground_truth"]) for rm in table.column("reward_model").to_pylist()]
        infos = table.column("extra_info").to_pylist()
        for info, chance, rendering in zip(infos, chances(truths), renderings_of(table)):
            facts[(ref.config, ref.split, str(info["item_id"]))] = {"chance": chance, "rendering": rendering}
    return facts


def with_release_facts(rows: Iterable[dict[str, Any]], release: str, splits: Sequence[str]) -> list[dict[str, Any]]:
    """The rows with `chance` and `rendering` filled from the release where the stored row lacks them."""
    facts = _item_facts(release, tuple(splits))
    out = []
    for row in rows:
        fact = facts.get((row["config"], row["split"], str(row["item_id"])), {})
        filled = dict(row)
        for key in ("chance", "rendering"):
            if filled.get(key) is None and fact.get(key) is not None:
                filled[key] = fact[key]
        out.append(filled)
    return out


def arm_gate(
    rows: Iterable[dict[str, Any]],
    release: str | None,
    train: str | None,
    splits: Sequence[str] = GATE_SPLITS,
    threshold: float = LEARNING_GATE,
) -> Gate:
    """One arm's (one model's) gate on its rows of `splits`; "unknown" without a release or a training split."""
    if release is None or train is None or not (Path(release) / "data").is_dir():
        return learning_gate([], None, threshold)
    mine = [r for r in rows if f"{r['config']}/{r['split']}" in splits]
    return learning_gate(with_release_facts(mine, release, splits), training_record_of(release, train), threshold)


def gate_entry(gate: Gate) -> dict[str, Any]:
    """What metrics.json keeps of a gate."""
    return gate.as_dict() | {"orders_forms_renderings": gate.what}


def gate_text(gate: dict[str, Any] | None) -> str:
    """A markdown cell: '0.354 (n=400; chance 0.292): did not learn'."""
    if not gate or gate.get("accuracy") is None:
        return (gate or {}).get("status", "unknown")
    chance = "-" if gate.get("chance") is None else f"{gate['chance']:.3f}"
    return f"{gate['accuracy']:.3f} (n={gate['n']}; chance {chance}): {gate['status']}"


def arm_verdict(seed_gates: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An arm's gate over its seeds: the mean accuracy and chance, n per seed, and passed only when every seed's
    gate passed (False when any seed did not learn; None when a seed's gate is unknown or not measured)."""
    measured = [g for g in seed_gates if g.get("accuracy") is not None]
    passed: bool | None
    if any(g.get("passed") is False for g in seed_gates):
        passed = False
    elif seed_gates and all(g.get("passed") is True for g in seed_gates):
        passed = True
    else:
        passed = None
    status = {True: "learned", False: "did not learn", None: "not measured" if seed_gates else "unknown"}[passed]
    if passed is None and seed_gates and all(g.get("status") == "unknown" for g in seed_gates):
        status = "unknown"

    def mean(key: str) -> float | None:
        known = [g[key] for g in measured if g.get(key) is not None]
        return round(sum(known) / len(known), 4) if known else None

    return {
        "accuracy": mean("accuracy"),
        "chance": mean("chance"),
        "n": measured[0]["n"] if measured else 0,
        "threshold": seed_gates[0]["threshold"] if seed_gates else LEARNING_GATE,
        "passed": passed,
        "status": status,
        "seeds": len(seed_gates),
    }


def not_compared(pair: Sequence[str], gates: Mapping[str, dict[str, Any] | None]) -> str | None:
    """'not compared: <arm> did not learn' (each arm of the pair that has not passed the gate: 'did not learn',
    or 'gate not measured' / 'gate unknown'), or None when both arms learned. `gates`: arm -> its gate entry."""
    reasons = []
    for arm in pair:
        gate = gates.get(arm) or {}
        if gate.get("passed") is True:
            continue
        if gate.get("passed") is False:
            reasons.append(f"{arm} did not learn")
        else:
            reasons.append(f"{arm} gate {gate.get('status', 'unknown')}")
    return "not compared: " + ", ".join(reasons) if reasons else None
