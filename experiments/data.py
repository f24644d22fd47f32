"""Training and evaluation data for RL runs, made by the project's own pipeline.

generated records (`generators`) + source samples (`warehouse/samples`) -> warehouse (DuckDB,
validated) -> published release folder (`hub.publish_and_verify.publish_warehouse`, the code behind
`tomforge publish --target DIR`) -> the RL stage reads it like any release.

The release holds, besides the `all` config (which mixes sources: do not train on it here):
- `tomforge_gen/{train,validation,test}`: orders 0..`max_order` plus memory questions; the test
  split uses held-out names, entities and phrasings (the generator's default). In-distribution.
- `tomforge_gen/test_higher_order`: the same generator at orders `max_order+1 .. max_order+extra`,
  held-out entities and phrasings. Held-out (an order the model never trained on).
- `tomi/*`, `hitom/unsplit`: the project's sample files in the public ToMi and HiToM formats, a
  story style and question phrasing the model never trained on. Held-out (tiny: tens of items).

With several `renderings` (`--renderings third_person,second_person`), every generated split holds the same
worlds told in each of them, item for item (`meta.rendering` names a row's; `CONFIG/SPLIT:RENDERING` selects
one): the data of the format-transfer block (`experiments/transfer.py`, docs/rl.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tomforge.schemas.progress import PlainLineProgress, Progress

HIGHER_ORDER_SPLIT = "test_higher_order"
SAMPLES_DIR = Path(__file__).resolve().parents[1] / "warehouse" / "samples"
SAMPLE_SOURCES = {"tomi": "tomi", "hitom": "hitom/Hi-ToM_data.json"}
TRAIN_REF = "tomforge_gen/train"
IN_DISTRIBUTION = ("tomforge_gen/train", "tomforge_gen/validation", "tomforge_gen/test")


@dataclass(frozen=True)
class DataPlan:
    """What the release holds; every number feeds a deterministic generator call."""

    n: int = 6000  # generated questions, split 80/10/10 train/validation/test
    max_order: int = 2  # highest belief order trained on
    extra_orders: int = 2  # held-out orders max_order+1 .. max_order+extra_orders
    n_higher: int = 400  # held-out higher-order questions (at least; whole stories are kept)
    seed: int = 0
    samples: tuple[str, ...] = tuple(SAMPLE_SOURCES)
    renderings: tuple[str, ...] = ("third_person",)  # generated worlds told in each (generators.renderings)
    repo_id: str = "tomforge/rl-demo"
    tag: str | None = None


def _higher_order_records(plan: DataPlan, rendering: str = "third_person") -> list[dict[str, Any]]:
    """Generated questions of orders above `max_order` only, on held-out entities and phrasings.
    The generator asks one question per order per story (plus memory), so asking for
    (orders + 2) questions per wanted one and keeping the high orders gives about `n_higher`."""
    from tomforge.generators import generate_records

    top = plan.max_order + plan.extra_orders
    per_story = top + 2
    wanted = -(-plan.n_higher * per_story // plan.extra_orders)
    records = generate_records(
        wanted, max_order=top, seed=plan.seed + 1, split=HIGHER_ORDER_SPLIT, held_out=True, rendering=rendering
    )
    return [r for r in records if r["belief_order"] is not None and r["belief_order"] > plan.max_order]


def build_release(
    root: Path, warehouse: Path, plan: DataPlan = DataPlan(), progress: Progress | None = None
) -> dict[str, Any]:
    """Generate, ingest and publish into `root` (a fresh warehouse at `warehouse`); returns the
    release tag and row counts per config/split. Same plan => byte-identical release files.
    `progress`: the publish step's lines (default: printed)."""
    from tomforge.generators import ADAPTER_INFO, generate_splits
    from tomforge.generators.generate import generate_input_ref
    from tomforge.hub.publish_and_verify import publish_warehouse
    from tomforge.hub.release import ReleaseOptions
    from tomforge.rl.release import SplitRef, list_splits, read_split
    from tomforge.warehouse.ingest import ingest
    from tomforge.warehouse.load import ingest_records

    warehouse = Path(warehouse)
    for stale in (warehouse, warehouse.with_name(warehouse.name + ".wal")):
        stale.unlink(missing_ok=True)
    reports = []
    for rendering in plan.renderings:
        told = {} if rendering == "third_person" else {"rendering": rendering}  # the default's refs as before
        reports += [
            ingest_records(
                warehouse,
                ADAPTER_INFO,
                generate_splits(plan.n, max_order=plan.max_order, seed=plan.seed, rendering=rendering),
                generate_input_ref(plan.n, plan.max_order, plan.seed, **told),
            ),
            ingest_records(
                warehouse,
                ADAPTER_INFO,
                _higher_order_records(plan, rendering),
                generate_input_ref(
                    plan.n_higher,
                    plan.max_order + plan.extra_orders,
                    plan.seed + 1,
                    split=HIGHER_ORDER_SPLIT,
                    held_out=True,
                    min_order=plan.max_order + 1,
                    **told,
                ),
            ),
        ]
    reports += [ingest(warehouse, name, SAMPLES_DIR / SAMPLE_SOURCES[name]) for name in plan.samples]
    for report in reports:
        if report.rejected:
            raise ValueError(f"{report.source} ({report.input_ref}): {report.rejected} records rejected")
    release = publish_warehouse(
        warehouse,
        plan.repo_id,
        target=str(root),
        options=ReleaseOptions(plan.repo_id, tag=plan.tag),
        progress=PlainLineProgress(print) if progress is None else progress,
    )
    counts = {
        f"{config}/{split}": read_split(Path(root), SplitRef(config, split)).num_rows
        for config, splits in list_splits(Path(root)).items()
        for split in splits
    }
    return {
        "tag": release.tag,
        "counts": counts,
        "plan": plan.__dict__ | {"samples": list(plan.samples), "renderings": list(plan.renderings)},
    }


def eval_refs(root: Path) -> list[str]:
    """The splits to evaluate: the generated test split (in-distribution), then every held-out
    split of the release (the mixed `all` config left out)."""
    from tomforge.rl.release import list_splits

    found = [
        f"{config}/{split}" for config, splits in list_splits(Path(root)).items() if config != "all" for split in splits
    ]
    return [ref for ref in ("tomforge_gen/test",) if ref in found] + [
        ref for ref in found if ref not in IN_DISTRIBUTION
    ]


def main(argv: list[str] | None = None) -> int:
    """`python -m experiments.data --out DIR`: build the release folder (e.g. here, then carry it to a GPU machine)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m experiments.data")
    parser.add_argument("--out", required=True, help="release folder to write")
    parser.add_argument("--warehouse", default=None, help="warehouse file to build (default: beside --out)")
    for name, default in DataPlan().__dict__.items():
        if isinstance(default, int):
            parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    parser.add_argument(
        "--renderings",
        default=",".join(DataPlan().renderings),
        help="generated worlds told in each of these renderings, comma-separated",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    plan = DataPlan(
        **{k: getattr(args, k) for k, v in DataPlan().__dict__.items() if isinstance(v, int)},
        renderings=tuple(r for r in args.renderings.split(",") if r),
    )
    warehouse = Path(args.warehouse) if args.warehouse else out.with_name(out.name + ".duckdb")
    result = build_release(out, warehouse, plan)
    print(json.dumps({"tag": result["tag"], "counts": result["counts"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
