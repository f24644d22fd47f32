"""A realistic RL training file to try `tomforge ingest --source rlfiles` and `tomforge audit` on.

Writes a verl parquet of `--rows` generated questions (tomforge's own RL columns, as `rl/` exports
them), with `--plant` HiToM stories (of `--hitom`, default the project's own samples) planted among them in another
project's wording (own system prompt, "Read the story." preamble, two of them inside a longer
prompt with filler before the story), in row groups of 5,000 like a published shard. Prints the
rows and the planted row numbers, so the audit's findings can be checked against them.

    python bench/rl_file.py --rows 20000 --hitom ../shared/real-data/hitom --out var/rl-example/train.parquet
    python -m tomforge.flows.cli ingest -s hitom -p ../shared/real-data/hitom --warehouse var/rl-example/w.duckdb
    python -m tomforge.flows.cli ingest -s rlfiles -p var/rl-example/train.parquet --warehouse var/rl-example/w.duckdb
    python -m tomforge.flows.cli audit --warehouse var/rl-example/w.duckdb --train "source = 'rlfiles'" \\
        --heldout "source = 'hitom'" --out var/rl-example/audit
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.generators import generate_records
from tomforge.rl.data import SAMPLES_DIR
from tomforge.schemas.rl.columns import rl_table
from tomforge.warehouse.sources import get_adapter

SYSTEM = "You are an expert at theory of mind. Reason in <think></think>, then answer in <answer></answer>."
FILLER = "Some context first: the building is old, the stairs creak, and everyone knows each other well. " * 4


def planted_rows(n: int, hitom: Path) -> list[dict]:
    """`n` HiToM stories (of the release at `hitom`) with one of their questions, in another
    project's verl wording."""
    records = [r for r in get_adapter("hitom").read(hitom) if isinstance(r, dict)]
    stories = list({r["context"]: r for r in records}.values())[:n]
    rows = []
    for number, record in enumerate(stories):
        body = f"Story: {record['context']}" if number % 3 else f"{FILLER}\n{record['context']}"
        user = f"Read the story.\n{body}\n\nQuestion: {record['question']}"
        rows.append(
            {
                "data_source": "other-lab/tom-rl",
                "ability": "tom",
                "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                "reward_model": {"style": "rule", "ground_truth": record["answer"]},
                "extra_info": {"index": 0, "planted": record["source_ref"]},
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--plant", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--hitom",
        type=Path,
        default=SAMPLES_DIR / "hitom",
        help="HiToM release to plant stories from (default: the project's own samples, 2 stories)",
    )
    parser.add_argument("--out", type=Path, default=Path("var/rl-example/train.parquet"))
    args = parser.parse_args()
    rows = rl_table(generate_records(args.rows, max_order=4, seed=args.seed)).to_pylist()
    for row in rows:
        row["extra_info"] = {"index": row["extra_info"]["index"], "planted": None}
    rng = random.Random(args.seed)
    places = sorted(rng.sample(range(len(rows)), args.plant))
    for place, row in zip(places, planted_rows(args.plant, args.hitom)):
        rows.insert(place, row)
    for index, row in enumerate(rows):
        row["extra_info"]["index"] = index
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), args.out, row_group_size=5_000)
    planted = [i for i, row in enumerate(rows) if row["extra_info"]["planted"]]
    print(f"wrote {args.out}: {len(rows)} rows, {len(planted)} planted HiToM stories at rows {planted}")


if __name__ == "__main__":
    main()
