"""The shingle and signature passes as Ray tasks over shards of the documents.

Each task runs `audits.passes.hash_shard` on a contiguous shard (its texts and cached signatures
travel through Ray's object store); the driver concatenates the shards in order and joins the LSH
buckets from the collected band keys, so the result is the single-process result, bit for bit.
Workers import tomforge: on a cluster every node needs the package installed (`pip install
tomforge`); a local Ray started here inherits this process's environment.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from tomforge.audits.passes import Hashed, PassSettings, concat, hash_shard
from tomforge.schemas.errors import MissingExtra

DEFAULT_SHARD_DOCS = 20_000  # ~0.3 s of work per shard at ~70k docs/s: task overhead stays small


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtra("the Ray path needs ray: pip install -e '.[ray]'") from None
    return ray


@contextmanager
def ray_session(address: str, num_cpus: int | None) -> Iterator[Any]:
    """Ray, connected to the cluster at `address` ("" starts a local Ray of `num_cpus`) unless this process
    is already connected; a session started here is shut down on the way out."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


@dataclass
class RayPasses:
    """`audits.passes.Passes` on Ray: `address` of a cluster ("" starts a local Ray of `num_cpus`)."""

    address: str = ""
    num_cpus: int | None = None
    shard_docs: int = DEFAULT_SHARD_DOCS

    def __call__(self, texts: Sequence[str], cached: np.ndarray, have: np.ndarray, s: PassSettings) -> Hashed:
        with ray_session(self.address, self.num_cpus) as ray:
            task = ray.remote(hash_shard)
            settings = ray.put(s)
            cuts = range(0, len(texts), max(self.shard_docs, 1))
            futures = [
                task.remote(
                    list(texts[lo : lo + self.shard_docs]),
                    cached[lo : lo + self.shard_docs],
                    have[lo : lo + self.shard_docs],
                    settings,
                )
                for lo in cuts
            ]
            return concat(ray.get(futures), s.num_perm, s.banding.bands)
