"""The scan's shards as Ray tasks: each task runs `audits.scan.scan_shard` on one shard (it opens
and streams the file itself, and writes its purified copy beside the others), the index travels
once through Ray's object store, and the driver takes the results in shard order, so the hits
are the single-process hits, row for row. A cluster's nodes must see the corpus paths (a shared
filesystem or the Hub) and have tomforge installed; a local Ray inherits this environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from tomforge.audits.ray_passes import ray_session
from tomforge.audits.scan import ShardResult, ShardSettings, scan_shard
from tomforge.audits.scan_corpus import Shard
from tomforge.audits.scan_index import BenchmarkIndex
from tomforge.schemas.progress import Progress


@dataclass
class RayShards:
    """`audits.scan.ShardRunner` on Ray: `address` of a cluster ("" starts a local Ray of `num_cpus`).
    `resources`: custom resources each task also needs, to keep the tasks on the nodes that carry them
    (`bench/scan_ray.py` runs "one worker" on a two-node cluster this way)."""

    address: str = ""
    num_cpus: int | None = None
    resources: Mapping[str, float] | None = None

    def __call__(
        self, index: BenchmarkIndex, shards: Sequence[Shard], s: ShardSettings, progress: Progress
    ) -> list[ShardResult]:
        with ray_session(self.address, self.num_cpus) as ray:
            task = ray.remote(num_cpus=1, resources=dict(self.resources or {}))(scan_shard)
            index_ref, settings = ray.put(index), ray.put(s)
            futures = [task.remote(index_ref, shard, settings) for shard in shards]
            results = []
            with progress.stage("scan: shards on Ray", total=len(futures)) as stage:
                for future in futures:  # in shard order: the same order as the local path
                    results.append(ray.get(future))
                    stage.advance(1)
            return results
