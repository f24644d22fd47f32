"""Run 19's seed table: the gate's accuracy per seed, order and format for answer-only SFT at lr 1e-4 (issue 37).

Seed 0 is read from runs 15 (64k) and 16 (128k), seeds 1-2 from this folder's eval_results.parquet; the spread
between seeds is what a one-seed comparison of arms has to beat. Run from the repository root; later runs name
their own eval_results.parquet files as arguments (every label in them is read), e.g. run 20's 256k seeds.
"""

import sys

import polars as pl

HERE = "docs/runs/h100-run19-seed-spread"
SOURCES = {
    "docs/runs/h100-run15-scaling/eval_results.parquet": "answer-only-64k/s0",
    "docs/runs/h200-run16-rationale-scaling/eval_results.parquet": "answer-only-128k/s0",
    f"{HERE}/eval_results.parquet": None,
}


def gate_rows(extra: list[str]) -> pl.DataFrame:
    """Every seed's rows of the gate's split (held-out controlled items of orders 0-3)."""
    frames = []
    for path, label in {**SOURCES, **dict.fromkeys(extra)}.items():
        rows = pl.read_parquet(path).filter(pl.col("split") == "test_orders0to3")
        if label is not None:
            rows = rows.filter(pl.col("label") == label)
        frames.append(rows.select("label", "belief_order", "answer_format", "correct"))
    return pl.concat(frames)


def main() -> None:
    rows = gate_rows(sys.argv[1:]).with_columns(pl.col("correct").cast(pl.Float64))
    overall = rows.group_by("label").agg(pl.len().alias("n"), pl.col("correct").mean().alias("gate"))
    orders = rows.pivot(on="belief_order", index="label", values="correct", aggregate_function="mean")
    formats = rows.pivot(on="answer_format", index="label", values="correct", aggregate_function="mean")
    table = overall.join(orders.select("label", *sorted(orders.columns[1:])), on="label").join(formats, on="label")
    table = table.sort("label")
    with pl.Config(tbl_rows=20, tbl_cols=20, float_precision=3, tbl_width_chars=200):
        print(table)
    size = rows.with_columns(pl.col("label").str.extract(r"-(\d+k)/").alias("size"))
    per_seed = size.group_by("size", "label").agg(pl.col("correct").mean().alias("gate"))
    spread = per_seed.group_by("size").agg(
        pl.len().alias("seeds"), pl.col("gate").mean().alias("mean"), pl.col("gate").std().alias("sd")
    )
    with pl.Config(float_precision=3):
        print(spread.sort("size"))


if __name__ == "__main__":
    main()
