"""The purified copy of one corpus shard: the same format and relative path, without the
contaminated documents; the writer counts what it wrote, so the ledger's `kept` is counted where
the rows land, not derived from `read - removed`.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.audits.scan_corpus import Batch, Shard


class ShardWriter:
    """Writes the kept rows of one shard's batches (jsonl lines as read, gzip without a timestamp
    so the copy is byte-identical across runs; parquet record batches under the input's schema)."""

    def __init__(self, folder: Path, shard: Shard) -> None:
        self.path = folder / shard.name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.shard = shard
        self.written = 0
        self._raw: IO[bytes] | None = None
        self._text: Any = None
        self._parquet: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    def write(self, batch: Batch, removed: np.ndarray) -> None:
        keep = np.ones(len(batch), dtype=bool)
        keep[removed] = False
        if batch.raw_table is not None:
            if self._parquet is None:
                self._schema = batch.raw_table.schema
                self._parquet = pq.ParquetWriter(str(self.path), self._schema)
            table = batch.raw_table.filter(pa.array(keep))
            self._parquet.write_table(table)
            self.written += table.num_rows
            return
        assert batch.raw_lines is not None
        if self._text is None:
            self._raw = open(self.path, "wb")
            self._text = (
                gzip.GzipFile(filename="", fileobj=self._raw, mode="wb", mtime=0) if self.shard.gzipped else self._raw
            )
        lines = [line for line, k in zip(batch.raw_lines, keep) if k]
        self._text.writelines(lines)
        self.written += len(lines)

    def close(self) -> None:
        """Finish the file (an input with no rows still gets its empty copy)."""
        if self._parquet is not None:
            self._parquet.close()
        elif self._text is not None:
            if self._text is not self._raw:
                self._text.close()
            assert self._raw is not None
            self._raw.close()
        elif self.shard.fmt == "parquet":
            pq.write_table(pa.table({}), str(self.path))
        else:
            with open(self.path, "wb") as out:
                if self.shard.gzipped:
                    with gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0):
                        pass
