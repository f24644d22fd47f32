"""Getting a published release onto the training machine and reading its splits.

A release is a Hub dataset repo (tagged) or a local folder of the same layout:
`data/<config>/<split>-NNNNN-of-NNNNN.parquet`. The RL stage reads whatever the release holds
and adds the RL columns when the publisher did not, so older releases stay trainable.

A generated row names the rendering its world is told in (`meta.rendering`: third person, second person,
dialogue...), and the renderings of one generator run share a split. `CONFIG/SPLIT:RENDERING` reads the rows
of one rendering only, by name, wherever a split is named (train, eval, in-distribution): docs/rl.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.rl.columns import RL_COLUMNS, with_rl_columns
from tomforge.schemas.rl.licenses import Restricted, refusal, release_licenses, restricted

SHARD_RE = re.compile(r"^(?P<split>[A-Za-z0-9_.\-]+?)-(?P<i>\d{5})-of-(?P<n>\d{5})\.parquet$")


class ReleaseReadError(TomforgeError):
    """The release cannot be found or does not have the expected layout."""


@dataclass(frozen=True)
class SplitRef:
    """One config/split of a release, written `config/split` on the command line; `config/split:rendering`
    keeps only the rows told in that rendering (`meta.rendering`)."""

    config: str
    split: str
    rendering: str | None = None

    @classmethod
    def parse(cls, text: str) -> "SplitRef":
        where, colon, rendering = text.partition(":")
        config, sep, split = where.partition("/")
        if not sep or not config or not split or (colon and not rendering):
            raise ReleaseReadError(
                f"{text!r}: expected CONFIG/SPLIT or CONFIG/SPLIT:RENDERING, e.g. default/test "
                "or tomforge_gen/test:second_person"
            )
        return cls(config, split, rendering or None)

    @property
    def stem(self) -> str:
        """The split's file name stem where one file holds it (`split` or `split.rendering`)."""
        return self.split if self.rendering is None else f"{self.split}.{self.rendering}"

    def __str__(self) -> str:
        return f"{self.config}/{self.split}" + (f":{self.rendering}" if self.rendering else "")


def rendering_of(meta: str | dict[str, Any] | None) -> str | None:
    """The rendering a row's world is told in (`meta.rendering`, a JSON text in a release); None for rows
    without one (sources other than the generator)."""
    if meta is None:
        return None
    found = (json.loads(meta) if isinstance(meta, str) else meta).get("rendering")
    return None if found is None else str(found)


def renderings_of(table: pa.Table) -> list[str | None]:
    """Each row's rendering (None for every row when the release has no `meta` column)."""
    if "meta" not in table.column_names:
        return [None] * table.num_rows
    return [rendering_of(meta) for meta in table.column("meta").to_pylist()]


def _select_rendering(table: pa.Table, ref: SplitRef, root: Path) -> pa.Table:
    """The rows of `ref.rendering`, in the order of their place in the generator run (`source_ref`, which no
    rendering changes), so the first N rows of every rendering are the same worlds (`--limit`); a rendering the
    split does not hold is an error naming those it does."""
    found = renderings_of(table)
    kept = table.filter(pa.array([r == ref.rendering for r in found], pa.bool_()))
    if kept.num_rows == 0:
        held = Counter("none" if r is None else r for r in found)
        raise ReleaseReadError(
            f"{root}: {ref}: no rows told in {ref.rendering!r} (meta.rendering); the split holds "
            + ", ".join(f"{name} {n}" for name, n in sorted(held.items()))
        )
    keys = [name for name in ("source_ref", "item_id") if name in kept.column_names]
    return kept.sort_by([(name, "ascending") for name in keys]) if keys else kept


def fetch_release(dataset: str, revision: str | None = None, cache_dir: str | Path | None = None) -> Path:
    """A local folder as is, else `snapshot_download` of the dataset repo at `revision` (a tag)."""
    local = Path(dataset).expanduser()
    if local.is_dir():
        if not (local / "data").is_dir():
            raise ReleaseReadError(f"{local}: no data/ folder (expected data/<config>/<split>-NNNNN-of-NNNNN.parquet)")
        return local
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(dataset)
    except HFValidationError:  # a path that is not there, not a Hub id: say so rather than "download failed"
        raise ReleaseReadError(
            f"{local}: no such release folder (give a release folder or a Hub dataset id ORG/NAME)"
        ) from None
    try:
        path = snapshot_download(
            repo_id=dataset,
            repo_type="dataset",
            revision=revision,
            cache_dir=None if cache_dir is None else str(cache_dir),
            allow_patterns=["data/**", "*.md", "*.json"],
        )
    except Exception as exc:  # the hub client raises many types; the CLI wants one line
        from tomforge.schemas.hub_errors import is_unreachable, unreachable

        if is_unreachable(exc):
            raise unreachable(f"download {dataset}@{revision or 'main'}", exc) from None
        raise ReleaseReadError(f"{dataset}@{revision or 'main'}: download failed: {exc}") from exc
    return Path(path)


def list_splits(root: Path) -> dict[str, list[str]]:
    """{config: [split, ...]} from the shard file names."""
    found: dict[str, set[str]] = {}
    for shard in sorted((Path(root) / "data").glob("*/*.parquet")):
        match = SHARD_RE.match(shard.name)
        if match:
            found.setdefault(shard.parent.name, set()).add(match["split"])
    return {config: sorted(splits) for config, splits in sorted(found.items())}


def shard_files(root: Path, ref: SplitRef) -> list[Path]:
    folder = Path(root) / "data" / ref.config
    files = sorted(
        p for p in folder.glob(f"{ref.split}-*.parquet") if (m := SHARD_RE.match(p.name)) and m["split"] == ref.split
    )
    if not files:
        raise ReleaseReadError(f"{root}: no shards for {ref} (have: {list_splits(Path(root))})")
    return files


def read_split(root: Path, ref: SplitRef, limit: int | None = None) -> pa.Table:
    """The split (only its rows of `ref.rendering`, when named) as one arrow table with the RL columns present;
    `limit`: its first rows."""
    table = pa.concat_tables([pq.read_table(f) for f in shard_files(root, ref)], promote_options="default")
    if ref.rendering is not None:
        table = _select_rendering(table, ref, root)
    if limit is not None:
        table = table.slice(0, limit)
    if not all(name in table.column_names for name in RL_COLUMNS):
        table = with_rl_columns(table)
    return table


def load_split(root: Path, ref: SplitRef, limit: int | None = None) -> Any:
    """The split as a `datasets.Dataset` (what TRL trainers take)."""
    from datasets import Dataset

    return Dataset(read_split(root, ref, limit))


def write_rl_parquet(root: Path, ref: SplitRef, out_dir: Path) -> Path:
    """One parquet file of the split with the RL columns, for verl's `data.train_files`."""
    out = Path(out_dir) / ref.config / f"{ref.stem}.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(read_split(root, ref), out)
    return out


def write_split(root: Path, config: str, split: str, table: pa.Table, n_shards: int = 1) -> list[Path]:
    """Write a table in the published layout (used by tests and the demo release)."""
    folder = Path(root) / "data" / config
    folder.mkdir(parents=True, exist_ok=True)
    rows = table.num_rows
    paths = []
    for i in range(n_shards):
        start, stop = rows * i // n_shards, rows * (i + 1) // n_shards
        path = folder / f"{split}-{i:05d}-of-{n_shards:05d}.parquet"
        pq.write_table(table.slice(start, stop - start), path)
        paths.append(path)
    return paths


def check_training_split(root: Path, ref: SplitRef, where: str, allow: bool = False) -> list[Restricted]:
    """Refuse (rl `ReleaseReadError`, one line) to train on split `ref` of the release at `root` when it
    holds a source whose license forbids training; with `allow`, what it holds, for a warning."""
    counts: Counter[str] = Counter()
    for shard in shard_files(root, ref):
        counts.update(pq.read_table(shard, columns=["source"]).column("source").to_pylist())
    found = restricted(counts, release_licenses(root))
    if found and not allow:
        raise ReleaseReadError(refusal(found, f"{ref} of {where}"))
    return found


def check_training_release(
    dataset: str, revision: str | None, train_split: str, allow: bool = False
) -> list[Restricted]:
    """`check_training_split` on a release as the command line names it: a folder or a Hub id at a revision,
    and `CONFIG/SPLIT`."""
    where = dataset if revision is None else f"{dataset}@{revision}"
    return check_training_split(fetch_release(dataset, revision), SplitRef.parse(train_split), where, allow)
