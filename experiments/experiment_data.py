"""Data of the templated-vs-controlled experiment, made by the pipeline (CPU side).

real HiToM + the ToMi test split + generated questions (controlled, and with the heuristic controls
switched off) -> one DuckDB warehouse -> the table `experiment_items` (the experiment's splits, below)
-> a release folder published from that table (`hub.publish_and_verify.publish_warehouse`), which the GPU side
trains and evaluates on with `tomforge train` / `tomforge eval`.

Splits of the release (a row may sit in several: the table is a union of selections):
- `hitom/train_orders0to3`: HiToM orders 0-3, both prompt styles (the templated-real arm; order 4
  is held out for every arm, as in the paper);
- `hitom/train_story_split`: orders 0-3 of the train stories only (the story-disjoint arm). Stories,
  not rows, are divided: 2/3 of the 120 stories per (story length, deception) cell go to train by a
  seeded hash of the context id; both prompt styles of a story share its context, so they stay on
  one side;
- `hitom/test_order4`, `hitom/test_stories` (the held-out stories, orders 0-4), `hitom/test_orders0to3`:
  evaluation sets, VP prompt style only (the CoTP row of a question renders to the same prompt);
- `tomi/test`: a seeded, order-stratified subsample of the ToMi test split (never trained on);
- `tomforge_gen/train_controlled` and `tomforge_gen/train_templated`: orders 0-3 from the generator
  as it is and with `controls=False` (same seed, sizes, formats; no memory questions);
- `tomforge_gen/test_orders0to3`, `tomforge_gen/test_orders4to6`: the controlled generator on the
  held-out names, entities and phrasings, orders 0-6 in one run, divided by order;
- `tomforge_gen/test_templated` (only with `n_gen_test_templated` > 0, the rationale experiment): the generator
  with `controls=False` on the held-out pools, orders 0-3 (seed + 2).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tomforge.schemas.progress import PlainLineProgress, Progress

REAL_DATA = Path(__file__).resolve().parents[2] / "shared" / "real-data"
TABLE = "experiment_items"
STORY_TABLE = "experiment_story_split"


@dataclass(frozen=True)
class ExperimentData:
    hitom: str = str(REAL_DATA / "hitom" / "Hi-ToM_data.json")
    tomi: str = str(REAL_DATA / "tomi")
    n_gen_train: int = 1200  # per generated arm, orders 0-3
    n_gen_test: int = 700  # orders 0-6 (100 per order), held-out pools
    n_gen_test_templated: int = 0  # orders 0-3, held-out pools, controls off (0: not made; run 4's release)
    tomi_per_order: int = 200
    train_story_share: float = 2 / 3
    seed: int = 0
    repo_id: str = "tomforge/templated-vs-controlled"


def story_sides(stories: list[tuple[str, Any, Any]], share: float, seed: int) -> dict[str, str]:
    """{context_id: 'train' | 'test'}: within each (length, deception) cell, the first `share` of the
    stories in seeded-hash order go to train."""
    cells: dict[tuple[Any, Any], list[str]] = {}
    for context_id, length, deception in stories:
        cells.setdefault((length, deception), []).append(context_id)
    sides = {}
    for cell in sorted(cells, key=str):
        ordered = sorted(cells[cell], key=lambda c: hashlib.sha256(f"{seed}:{c}".encode()).hexdigest())
        cut = round(len(ordered) * share)
        sides.update({c: "train" if i < cut else "test" for i, c in enumerate(ordered)})
    return sides


def _generated(plan: ExperimentData) -> list[tuple[str, list[dict[str, Any]]]]:
    from tomforge.generators import generate_records
    from tomforge.generators.generate import generate_input_ref

    common: dict[str, Any] = dict(max_order=3, seed=plan.seed, include_memory=False, held_out=False)
    train, test = plan.n_gen_train, plan.n_gen_test
    return [
        (
            generate_input_ref(train, 3, plan.seed, split="train_controlled", include_memory=False, held_out=False),
            list(generate_records(train, split="train_controlled", **common)),
        ),
        (
            generate_input_ref(
                train, 3, plan.seed, split="train_templated", include_memory=False, held_out=False, controls=False
            ),
            list(generate_records(train, split="train_templated", controls=False, **common)),
        ),
        (
            generate_input_ref(test, 6, plan.seed + 1, split="test", include_memory=False, held_out=True),
            list(
                generate_records(
                    test, max_order=6, seed=plan.seed + 1, split="test", held_out=True, include_memory=False
                )
            ),
        ),
    ] + (
        [
            (
                f"generate:split=test_templated,n={plan.n_gen_test_templated},orders=0..3,seed={plan.seed + 2},held_out,"
                "controls=off",
                list(
                    generate_records(
                        plan.n_gen_test_templated,
                        max_order=3,
                        seed=plan.seed + 2,
                        split="test_templated",
                        held_out=True,
                        include_memory=False,
                        controls=False,
                    )
                ),
            )
        ]
        if plan.n_gen_test_templated
        else []
    )


def _selections(seed: int, tomi_per_order: int, templated_test: bool = False) -> list[tuple[str, str]]:
    """(split name, SQL over items_full `i` joined with the story sides `s`) for every release split."""
    vp = "json_extract_string(i.meta, '$.prompting_type') = 'VP'"
    tomi_rank = f"row_number() OVER (PARTITION BY i.belief_order ORDER BY md5(i.item_id || ':{int(seed)}'))"
    return [
        ("train_orders0to3", "i.source = 'hitom' AND i.belief_order <= 3"),
        ("train_story_split", "i.source = 'hitom' AND i.belief_order <= 3 AND s.side = 'train'"),
        ("test_order4", f"i.source = 'hitom' AND i.belief_order = 4 AND {vp}"),
        ("test_stories", f"i.source = 'hitom' AND s.side = 'test' AND {vp}"),
        (
            "test_orders0to3",
            f"i.source IN ('hitom', 'tomforge_gen') AND i.belief_order <= 3 AND "
            f"((i.source = 'hitom' AND {vp}) OR i.split = 'test')",
        ),
        ("test_orders4to6", "i.source = 'tomforge_gen' AND i.split = 'test' AND i.belief_order >= 4"),
        ("test", f"i.source = 'tomi' AND i.split = 'test' QUALIFY {tomi_rank} <= {int(tomi_per_order)}"),
        ("train_controlled", "i.source = 'tomforge_gen' AND i.split = 'train_controlled'"),
        ("train_templated", "i.source = 'tomforge_gen' AND i.split = 'train_templated'"),
    ] + ([("test_templated", "i.source = 'tomforge_gen' AND i.split = 'test_templated'")] if templated_test else [])


def build_experiment_table(con: Any, plan: ExperimentData) -> dict[str, int]:
    """Write the story sides and `experiment_items` into an open warehouse; rows per source/split."""
    stories = con.execute(
        "SELECT DISTINCT context_id, json_extract_string(meta, '$.story_length'), "
        "json_extract_string(meta, '$.deception') FROM items_full WHERE source = 'hitom' "
        "ORDER BY 1"
    ).fetchall()
    sides = story_sides(stories, plan.train_story_share, plan.seed)
    con.execute(f"CREATE OR REPLACE TABLE {STORY_TABLE} (context_id VARCHAR PRIMARY KEY, side VARCHAR NOT NULL)")
    con.executemany(f"INSERT INTO {STORY_TABLE} VALUES (?, ?)", sorted(sides.items()))
    parts = [
        f"(SELECT i.* REPLACE ('{name}' AS split) FROM items_full i LEFT JOIN {STORY_TABLE} s USING (context_id) "
        f"WHERE {where})"
        for name, where in _selections(plan.seed, plan.tomi_per_order, plan.n_gen_test_templated > 0)
    ]
    con.execute(f"CREATE OR REPLACE TABLE {TABLE} AS " + " UNION ALL ".join(parts))
    rows = con.execute(f"SELECT source || '/' || split, count(*) FROM {TABLE} GROUP BY 1 ORDER BY 1").fetchall()
    return {name: n for name, n in rows}


def prepare(out: Path, plan: ExperimentData = ExperimentData(), progress: Progress | None = None) -> dict[str, Any]:
    """Warehouse `out/data.duckdb` + release folder `out/release`; returns what was loaded and published.
    `progress`: its lines (default: printed)."""
    from tomforge.generators import ADAPTER_INFO
    from tomforge.hub.export import ExportOptions
    from tomforge.hub.publish_and_verify import publish_warehouse
    from tomforge.hub.release import ReleaseOptions
    from tomforge.warehouse import db
    from tomforge.warehouse.ingest import ingest
    from tomforge.warehouse.load import ingest_records

    progress = PlainLineProgress(print) if progress is None else progress
    out = Path(out)
    warehouse = out / "data.duckdb"
    for stale in (warehouse, warehouse.with_name(warehouse.name + ".wal")):
        stale.unlink(missing_ok=True)
    reports = [ingest(warehouse, "hitom", Path(plan.hitom)), ingest(warehouse, "tomi", Path(plan.tomi))]
    reports += [ingest_records(warehouse, ADAPTER_INFO, records, ref) for ref, records in _generated(plan)]
    loads = [
        {"source": r.source, "input": r.input_ref, "read": r.read, "loaded": r.loaded, "rejected": r.rejected}
        for r in reports
    ]
    for load in loads:
        progress.info(
            f"{load['source']} ({load['input']}): read {load['read']} = loaded {load['loaded']} + "
            f"rejected {load['rejected']}"
        )
    with db.building(warehouse) as con:
        counts = build_experiment_table(con, plan)
    release = publish_warehouse(
        warehouse,
        plan.repo_id,
        target=str(out / "release"),
        options=ReleaseOptions(plan.repo_id, export=ExportOptions(table=TABLE), derived=True),
        progress=progress,
    )
    result = {
        "plan": asdict(plan),
        "loads": loads,
        "splits": counts,
        "release": str(out / "release"),
        "tag": release.tag,
    }
    (out / "data.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m experiments.experiment_data --out out/exp`: the warehouse and release the GPU run reads."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m experiments.experiment_data")
    parser.add_argument("--out", default="out/exp")
    defaults = ExperimentData()
    names = ("hitom", "tomi", "n_gen_train", "n_gen_test", "n_gen_test_templated", "tomi_per_order", "seed")
    for name in names:
        value = getattr(defaults, name)
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    plan = ExperimentData(**{k: getattr(args, k) for k in names})
    result = prepare(Path(args.out), plan)
    print(json.dumps({"tag": result["tag"], "splits": result["splits"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
