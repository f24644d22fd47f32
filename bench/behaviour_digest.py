"""One sha256 per warehouse table and release file after a fixed set of commands, so a refactor can
show that behaviour did not change: run it on the tree before and after, and diff the two outputs.

Run: `python bench/behaviour_digest.py --repo ROOT [--work DIR] [--real ../shared/real-data]`.
The commands run with ROOT's code (PYTHONPATH=ROOT) in a fresh working folder:
1. `tomforge rebuild` on the embedded defaults (README command 1: the release id is printed);
2. into a second warehouse: the full HiToM and ToMi releases where `--real` holds them, generated
   questions with operators, the variants of HiToM, an audit, clean, and a folder publish.
Columns that hold wall-clock times or durations are left out of the table digests (their names are
listed in the output); everything else is hashed row by row in a fixed order.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

TIME_COLUMNS = re.compile(
    r"(_at|_seconds|_s|_ms|seconds|timings?|duration|elapsed|started|finished|created|"
    r"loaded_on|when|timestamp|time)$"
)


def tomforge(repo: Path, work: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(repo), "TOMFORGE_NO_PROGRESS": "1", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "tomforge.flows.cli", *args], cwd=work, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"tomforge {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr  # the rebuild flow logs its summary on stderr


def table_digests(warehouse: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    con = duckdb.connect(str(warehouse), read_only=True)
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1"
        ).fetchall()
    ]
    for table in tables:
        columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        kept = [c for c in columns if not TIME_COLUMNS.search(c.lower())]
        left = sorted(set(columns) - set(kept))
        listed = ", ".join(f'"{c}"' for c in kept)
        digest = hashlib.sha256()
        for row in con.execute(f"SELECT {listed} FROM {table} ORDER BY ALL").fetchall():
            digest.update(repr(row).encode())
        out[f"table {warehouse.parent.name}:{table}"] = digest.hexdigest()[:16] + (
            f"  (left out: {', '.join(left)})" if left else ""
        )
    con.close()
    return out


def file_digests(folder: Path, label: str) -> dict[str, str]:
    return {
        f"file {label}/{p.relative_to(folder)}": hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".lock" not in p.name
    }


def run(repo: Path, work: Path, real: Path) -> dict[str, str]:
    lines: dict[str, str] = {}
    printed = tomforge(repo, work, "rebuild")
    release = re.findall(r"release-[0-9a-f]{12}", printed)
    lines["rebuild release id"] = release[-1] if release else "(none printed)"
    lines |= table_digests(work / "var" / "warehouse.duckdb") | file_digests(work / "var" / "release", "release")
    wh = ["--warehouse", "var2/warehouse.duckdb"]
    if (real / "hitom").exists():
        tomforge(repo, work, "ingest", "--source", "hitom", "--path", str(real / "hitom"), *wh)
    if (real / "tomi").exists():
        tomforge(repo, work, "ingest", "--source", "tomi", "--path", str(real / "tomi"), *wh)
    tomforge(
        repo,
        work,
        "generate",
        "--n",
        "3000",
        "--max-order",
        "5",
        "--seed",
        "3",
        "--operators",
        "lie,private_tell,distractor",
        *wh,
    )
    tomforge(repo, work, "variants", "--source", "hitom", *wh)
    tomforge(
        repo, work, "audit", "--train", "split = 'train'", "--heldout", "split <> 'train'", "--out", "var2/audit", *wh
    )
    tomforge(repo, work, "clean", *wh)
    tomforge(repo, work, "publish", "--target", "var2/release", "--repo", "local/digest", "--tag", "v1", *wh)
    lines |= table_digests(work / "var2" / "warehouse.duckdb") | file_digests(work / "var2" / "release", "release2")
    report = work / "var2" / "audit" / "audit_report.md"
    lines["file audit2/audit_report.md"] = hashlib.sha256(report.read_bytes()).hexdigest()[:16]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="the tree whose code runs")
    parser.add_argument("--work", type=Path, default=None, help="working folder (default: a new temporary one)")
    parser.add_argument(
        "--real", type=Path, default=None, help="full real releases (default: ROOT/../shared/real-data)"
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tomforge-digest-"))
    work.mkdir(parents=True, exist_ok=True)
    real = args.real or args.repo.resolve().parent / "shared" / "real-data"
    for key, value in run(args.repo.resolve(), work, real.resolve()).items():
        print(f"{key}  {value}")


if __name__ == "__main__":
    main()
