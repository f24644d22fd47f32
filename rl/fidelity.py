"""Trace fidelity per set and belief order: of the evaluated answers, how many are right for the
right reasons (correct, and the reasoning faithful: it names the deciding event, states the deciding
belief and makes no contradicted claim, `rl.process_reward`) and how many right for the wrong reasons
(correct, but the reasoning is not faithful).

Only items whose release row carries the world count (`with_world`); the shares are of those items, so
`right_reasons + wrong_reasons` is their accuracy, and `faithful_share` is the share of their correct
answers that are right for the right reasons.
"""

from __future__ import annotations

from typing import Any, Iterable


def fidelity(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """{'with_world', 'right_reasons', 'wrong_reasons', 'faithful_share', 'mean_claims_correct',
    'mean_claims_contradicted'} over eval rows (None where nothing is measured)."""
    judged = [r for r in rows if r.get("faithful") is not None]
    n = len(judged)
    right = sum(bool(r["correct"]) and bool(r["faithful"]) for r in judged)
    wrong = sum(bool(r["correct"]) and not r["faithful"] for r in judged)

    def share(k: int, d: int) -> float | None:
        return round(k / d, 4) if d else None

    return {
        "with_world": n,
        "right_reasons": share(right, n),
        "wrong_reasons": share(wrong, n),
        "faithful_share": share(right, right + wrong),
        "mean_claims_correct": share(sum(int(r.get("claims_correct") or 0) for r in judged), n),
        "mean_claims_contradicted": share(sum(int(r.get("claims_contradicted") or 0) for r in judged), n),
    }


def fidelity_by_order(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`fidelity` per belief order ('none' for items without one), orders in increasing order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault("none" if r.get("belief_order") is None else str(r["belief_order"]), []).append(r)
    return {
        order: fidelity(items)
        for order, items in sorted(groups.items(), key=lambda kv: (kv[0] == "none", kv[0].zfill(3)))
    }
