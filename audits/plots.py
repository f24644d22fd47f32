"""The audit report's figures, one message each, read at a glance: belief order on an integer axis,
train and held-out in separate panels or clearly different line styles, chance always drawn.

Each `*_figure` function returns the matplotlib Figure (tests read its axes); `save` writes a PNG
without timestamps or software metadata, so the same inputs give the same bytes.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from tomforge.audits.artifacts import DESCRIPTIVE_HEURISTICS, HEURISTIC_LABELS, HEURISTICS
from tomforge.audits.config import AuditParams
from tomforge.audits.evidence import letter
from tomforge.schemas.atomic_files import replaced_on_success

SIDE_STYLE = {
    "train": {"color": "#1f5fa8", "ls": "-", "marker": "o", "label": "train"},
    "heldout": {"color": "#d9480f", "ls": "--", "marker": "s", "label": "held-out"},
}
CHANCE_STYLE = {"color": "#555555", "ls": ":", "lw": 1.5}
_PNG_META = {"Software": None}
OVER_Z = 3.0  # a letter drawn red in a side whose positions depart from uniform


def save(fig: Figure, path) -> None:
    with replaced_on_success(path) as temp:
        fig.savefig(temp, dpi=110, metadata=_PNG_META, format="png")
    plt.close(fig)


def heuristics_figure(heur: pl.DataFrame) -> Figure:
    """ "Which shortcut rules beat chance, at which belief order": one panel per rule, train solid
    circles vs held-out dashed squares, chance dotted; integer order ticks."""
    part = heur.filter(pl.col("belief_order").str.contains(r"^\d+$")).with_columns(
        pl.col("belief_order").cast(pl.Int64)
    )
    rules = [r for r in HEURISTICS if r in set(part["heuristic"].to_list())]
    orders = sorted(set(part["belief_order"].to_list()))
    fig, axes = plt.subplots(
        1,
        max(len(rules), 1),
        figsize=(2.7 * max(len(rules), 1) + 0.6, 3.3),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for ax, rule in zip(axes[0], rules):
        rows = part.filter(pl.col("heuristic") == rule)
        for side in ("train", "heldout"):
            curve = rows.filter(pl.col("selection") == side).sort("belief_order")
            if curve.height:
                style = SIDE_STYLE[side]
                ax.plot(
                    curve["belief_order"],
                    100 * curve["accuracy"],
                    color=style["color"],
                    ls=style["ls"],
                    marker=style["marker"],
                    label=style["label"],
                    lw=2,
                    ms=6,
                    zorder=3,
                )
        chance = rows.group_by("belief_order").agg(pl.col("chance").mean()).sort("belief_order")
        ax.plot(chance["belief_order"], 100 * chance["chance"], **CHANCE_STYLE, label="chance", zorder=2)
        flagged = (
            rows.filter(pl.col("inverted_difficulty"))["selection"].unique().to_list()
            if "inverted_difficulty" in rows.columns
            else []
        )
        title = HEURISTIC_LABELS[rule] + (" (fitted)" if rule in DESCRIPTIVE_HEURISTICS else "")
        ax.set_title(
            title + ("\nINVERTED DIFFICULTY" if flagged else ""), fontsize=9, color="#b00020" if flagged else "black"
        )
        ax.set_xticks(orders)
        ax.set_xlim(min(orders, default=0) - 0.4, max(orders, default=1) + 0.4)
        ax.set_xlabel("belief order")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("accuracy (%)")
    axes[0][0].set_ylim(0, 100)
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Answering by a rule, without reasoning: accuracy by belief order vs chance", fontsize=10)
    return fig


def positions_figure(pos: pl.DataFrame) -> Figure:
    """ "Is the gold letter uniform?": one panel per side (and number of options), share of items per
    gold letter as bars, uniform as a dotted line."""
    part = pos.filter(pl.col("belief_order") == "all")
    groups = [
        (side, k)
        for side in ("train", "heldout")
        for k in sorted(part.filter(pl.col("selection") == side)["n_options"].unique().to_list())
    ]
    groups = groups[:4]
    fig, axes = plt.subplots(
        1,
        max(len(groups), 1),
        figsize=(3.6 * max(len(groups), 1) + 0.4, 3.2),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    for ax, (side, k) in zip(axes[0], groups):
        g = part.filter((pl.col("selection") == side) & (pl.col("n_options") == k)).sort("position")
        share = 100 * g["count"].to_numpy() / g["n"].to_numpy()
        colors = ["#b00020" if f and z > OVER_Z else SIDE_STYLE[side]["color"] for f, z in zip(g["flagged"], g["z"])]
        ax.bar(g["position"].to_numpy(), share, color=colors, width=0.75)
        ax.axhline(100 / k, **CHANCE_STYLE, label="uniform")
        ax.set_xticks(range(k), [letter(i) for i in range(k)], fontsize=7 if k > 8 else 9)
        ax.set_title(f"{SIDE_STYLE[side]['label']}: {k} options, {int(g['n'][0])} items", fontsize=9)
        ax.set_xlabel(f"gold option (red: over-represented, z > {OVER_Z:g})")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("share of items (%)")
    fig.suptitle("Gold option letter vs uniform", fontsize=10)
    return fig


def lsh_figure(curve: pl.DataFrame, p: AuditParams, bands: int, rows: int) -> Figure:
    """ "The banding catches near duplicates": detection probability by true Jaccard."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
    ax.plot(
        curve["jaccard"], curve["p_detect"], color="#1f5fa8", lw=2, label=f"this audit: {bands} bands x {rows} rows"
    )
    ax.plot(
        curve["jaccard"], curve["p_detect_datasketch_default"], color="#555555", ls="--", label="datasketch default"
    )
    ax.axvline(p.jaccard_threshold, color="#b00020", lw=0.8, label=f"threshold {p.jaccard_threshold:g}")
    ax.set_xlabel("true Jaccard of a pair")
    ax.set_ylabel("P(pair is checked)")
    ax.set_title("Near-duplicate search: which pairs are checked exactly", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def ngram_null_figure(ngram: pl.DataFrame, p: AuditParams) -> Figure:
    """ "Held-out stories share no more long n-grams with train than train stories share with each
    other": the two coverage distributions, the test's threshold."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
    bins = np.linspace(0, 1, 41).tolist()
    null = ngram.filter(pl.col("side") == "train_null")["coverage"].to_numpy()
    obs = ngram.filter(pl.col("side") == "heldout")["coverage"].to_numpy()
    if len(null):
        ax.hist(null, bins=bins, color="#1f5fa8", alpha=0.55, label=f"train vs other train stories (n={len(null)})")
        ax.axvline(
            float(np.quantile(null, 1 - p.ngram_alpha)),
            color="#b00020",
            lw=1,
            label=f"threshold (null {1 - p.ngram_alpha:g} quantile)",
        )
    if len(obs):
        ax.hist(obs, bins=bins, color="#d9480f", histtype="step", lw=2, label=f"held-out vs train (n={len(obs)})")
    ax.set_xlabel(f"share of a story's {p.ngram_n}-grams found in other stories")
    ax.set_ylabel("stories")
    ax.set_yscale("symlog", linthresh=1)
    ax.legend(fontsize=8)
    ax.set_title(f"Long {p.ngram_n}-gram overlap: held-out vs what independent stories share", fontsize=10)
    return fig
