"""The eval matrix's format-transfer block: train on one rendering, evaluate on the others (issue 28).

The generator tells the same worlds in several renderings (`meta.rendering`: `third_person`, `second_person`,
and any other it gains), with the same questions, options and golds item for item. Each evaluated row carries
its rendering and a `pair_key` that is equal for the same question about the same world in every rendering, so
the block compares a model on exactly the same worlds told two ways:

- rows: a model (its label) and the rendering(s) it was trained on (`rl.trained_on`), per evaluated split;
- columns: the rendering evaluated on; cells: accuracy, and, where the model was trained on one rendering,
  the paired difference to that rendering on the same worlds with a seeded 95% interval (`rl.paired`).

Nothing is dropped silently: items of a rendering with no partner in the trained rendering are counted as
`unpaired`, and an item evaluated twice by one model (a split named twice) counts once, the rest as `duplicates`.
Renderings are handled by name, so a new one joins the block with no change here.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from tomforge.rl.gate import NOT_LEARNED_CELL
from tomforge.rl.paired import RESAMPLES, paired_difference


def pair_key(source: str, source_ref: str, ground_truth: str) -> str:
    """Equal for the same question about the same world in any rendering: the record's place in its generator
    run (`source_ref` has no rendering in it) and its ground truth (gold, options and, where the release
    carries it, the world itself), which a rendering never changes."""
    return hashlib.blake2b(f"{source}\x1f{source_ref}\x1f{ground_truth}".encode(), digest_size=8).hexdigest()


def _accuracy(values: list[bool]) -> float:
    return round(sum(values) / len(values), 4)


def _cells(
    by_rendering: dict[str, dict[str, bool]], trained: str | None, seed: int, resamples: int, void: bool = False
) -> tuple[dict[str, Any], dict[str, int]]:
    """{rendering: cell} and {rendering: items with no partner in the trained rendering}; `void`: the model did not
    learn (`rl.gate`), so no cell gets a difference (`vs_trained` None, `not_compared` says why)."""
    cells: dict[str, Any] = {}
    unpaired: dict[str, int] = {}
    reference = by_rendering.get(trained) if trained is not None else None
    for rendering, results in sorted(by_rendering.items()):
        cell: dict[str, Any] = {"accuracy": _accuracy(list(results.values())), "n": len(results)}
        if void and reference is not None and rendering != trained:
            cell["vs_trained"], cell["not_compared"] = None, "did not learn"
        elif reference is not None and rendering != trained:
            keys = sorted(set(results) & set(reference))
            unpaired[rendering] = len(results) - len(keys)
            cell["vs_trained"] = (
                paired_difference(
                    [reference[k] for k in keys], [results[k] for k in keys], seed=seed, resamples=resamples
                ).as_dict()
                if keys
                else None
            )
        cells[rendering] = cell
    return cells, unpaired


def transfer_view(
    rows: Iterable[dict[str, Any]],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    did_not_learn: Iterable[str] = (),
) -> dict[str, Any]:
    """{'seed', 'resamples', 'renderings', 'models': {label: {'trained_on', 'did_not_learn', 'splits': {config/split:
    {'cells': {rendering: {'accuracy', 'n', 'vs_trained'}}, 'unpaired', 'duplicates'}}}}}, from per-item eval rows
    that carry `rendering`, `pair_key` and `trained_on`. Empty `models` when no row names a rendering. A model in
    `did_not_learn` (below the learning gate, `rl.gate`) keeps its accuracies and gets no differences."""
    void = set(did_not_learn)
    results: dict[str, dict[str, dict[str, dict[str, bool]]]] = {}
    trained: dict[str, str | None] = {}
    duplicates: dict[tuple[str, str], int] = {}
    for r in rows:
        if r.get("rendering") is None:
            continue
        label, split = r["label"], f"{r['config']}/{r['split']}"
        trained.setdefault(label, r.get("trained_on"))
        seen = results.setdefault(label, {}).setdefault(split, {}).setdefault(r["rendering"], {})
        if r["pair_key"] in seen:
            duplicates[(label, split)] = duplicates.get((label, split), 0) + 1
            continue
        seen[r["pair_key"]] = bool(r["correct"])
    models: dict[str, Any] = {}
    for label, splits in sorted(results.items()):
        entry: dict[str, Any] = {"trained_on": trained[label], "did_not_learn": label in void, "splits": {}}
        for split, by_rendering in sorted(splits.items()):
            cells, unpaired = _cells(by_rendering, trained[label], seed, resamples, label in void)
            entry["splits"][split] = {
                "cells": cells,
                "unpaired": unpaired,
                "duplicates": duplicates.get((label, split), 0),
            }
        models[label] = entry
    renderings = sorted({rendering for splits in results.values() for by in splits.values() for rendering in by})
    return {"seed": seed, "resamples": resamples, "renderings": renderings, "models": models}


def _cell_text(cell: dict[str, Any] | None, is_trained: bool) -> str:
    if cell is None:
        return "-"
    text = f"{cell['accuracy']:.3f} (n={cell['n']})"
    if is_trained:
        return text + " trained"
    if cell.get("not_compared"):
        return f"{text} {NOT_LEARNED_CELL}"
    diff = cell.get("vs_trained")
    if diff is None:
        return text
    low, high = diff["ci95"]
    return text + f" {diff['difference']:+.3f} [{low:+.3f}, {high:+.3f}]"


def format_transfer(view: dict[str, Any]) -> str:
    """The block as plain text: one line per model and split, one column per rendering; beside each accuracy
    its paired difference to the trained rendering on the same worlds and the 95% interval; then what was
    left out of the pairing."""
    renderings = view["renderings"]
    if len(renderings) < 2:  # one rendering: nothing transfers; the matrix above says it all
        return ""
    lines = [
        f"format transfer: accuracy (n); other renderings: minus the trained one on the same worlds "
        f"[95% paired bootstrap, seed {view['seed']}]",
        "model (trained on) | split | " + " | ".join(renderings),
    ]
    notes = []
    for label, entry in view["models"].items():
        for split, block in entry["splits"].items():
            cells = [_cell_text(block["cells"].get(r), r == entry["trained_on"]) for r in renderings]
            mark = " [DID NOT LEARN]" if entry.get("did_not_learn") else ""
            lines.append(f"{label}{mark} ({entry['trained_on'] or 'unknown'}) | {split} | " + " | ".join(cells))
            notes += [
                f"{label} {split}: {n} {r} items without a {entry['trained_on']} partner, not paired"
                for r, n in block["unpaired"].items()
                if n
            ]
            if block["duplicates"]:
                notes.append(f"{label} {split}: {block['duplicates']} items evaluated twice, counted once")
    return "\n".join(lines + notes)
