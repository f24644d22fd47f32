"""The variants step in the warehouse: read a source's items, write `oracle_checks` and `<source>_variants`.

One atomic rebuild (`warehouse.db.building`): the oracle's verdict on every item of the source (and on
every variant) replaces that source's rows of `oracle_checks`, and the variants replace the previous
`<source>_variants` items. A failure leaves the previous warehouse untouched.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from tomforge.generators.real.oracle import OracleCheck, check_all
from tomforge.generators.real.variants import (
    GENERATOR_VERSION,
    Outcome,
    Settings,
    build_variants,
)
from tomforge.warehouse import db
from tomforge.warehouse.db import WarehouseError
from tomforge.warehouse.load import LoadReport, load_into
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.base import AdapterInfo

ORACLE_TABLE = """CREATE TABLE IF NOT EXISTS oracle_checks (
    item_id VARCHAR NOT NULL, source VARCHAR NOT NULL, belief_order BIGINT, parsed BOOLEAN NOT NULL,
    oracle_answer VARCHAR, gold VARCHAR NOT NULL, agrees BOOLEAN, rule_set VARCHAR NOT NULL,
    explanation VARCHAR NOT NULL)"""


@dataclass
class VariantsRun:
    checks: list[OracleCheck]
    outcome: Outcome
    report: LoadReport


def read_items(con: duckdb.DuckDBPyConnection, source: str) -> list[dict[str, Any]]:
    """Every item of `source` as a unified record (meta and trace decoded)."""
    cursor = con.execute("SELECT * FROM items_full WHERE source = ? ORDER BY item_id", [source])
    names = [d[0] for d in cursor.description]
    records = []
    for row in cursor.fetchall():
        record = dict(zip(names, row))
        record["meta"] = json.loads(record["meta"]) if record["meta"] else {}
        record["trace"] = json.loads(record["trace"]) if record["trace"] else None
        records.append(record)
    return records


def write_checks(con: duckdb.DuckDBPyConnection, sources: list[str], checks: list[OracleCheck]) -> None:
    con.execute(ORACLE_TABLE)
    con.execute(f"DELETE FROM oracle_checks WHERE source IN ({', '.join('?' * len(sources))})", sources)
    if checks:
        rows = [asdict(check) for check in checks]
        table = pa.Table.from_pylist(rows)
        con.register("new_checks", table)
        con.execute(
            "INSERT INTO oracle_checks SELECT item_id, source, belief_order, parsed, oracle_answer, gold, "
            "agrees, rule_set, explanation FROM new_checks"
        )
        con.unregister("new_checks")


def run_variants(warehouse: Path, source: str, settings: Settings) -> VariantsRun:
    """Oracle checks and variants of one source, written in one atomic rebuild of `warehouse`."""
    if not Path(warehouse).is_file():
        raise WarehouseError(f"{warehouse}: warehouse not found (run `tomforge ingest --source {source}` first)")
    target = f"{source}_variants"
    with db.building(Path(warehouse)) as con:
        records = read_items(con, source)
        if not records:
            raise WarehouseError(
                f"{warehouse}: no items of source {source!r} (run `tomforge ingest --source {source}`)"
            )
        checks = check_all(records)
        outcome = build_variants(source, records, settings)
        checks += check_all(outcome.records)
        write_checks(con, [source, target], checks)
        info = AdapterInfo(target, GENERATOR_VERSION, get_adapter(source).license)
        input_ref = (
            f"variants:source={source},max_order={settings.max_order},seed={settings.seed},"
            f"n_per_story={settings.n_per_story},operators={','.join(settings.operators or ['all'])}"
        )
        # this run's variants replace every earlier run's, counted as removed where not made again
        report = load_into(con, info, outcome.records, input_ref, replace_source=True)
    return VariantsRun(checks, outcome, report)
