"""numba for the audit's hot loops: `njit` (a stand-in when numba is missing) and `AVAILABLE`.

Why compiled loops: the numpy formulations in `audits.text`, `audits.minhash` and the others make
several whole-array passes over 8-byte temporaries per input byte or shingle; one fused loop per
document does the same arithmetic in one pass, in registers (the permutation loop vectorizes with
SIMD). Every compiled kernel sits in the module of its numpy twin (`word_hashes_jit` in
`audits.text`, `signatures_jit` in `audits.minhash`, `band_keys_jit` in `audits.lsh`, `skeletons_jit`
in `audits.skeleton`, `doc_unique_jit` + `gram_coverage_jit` in `audits.ngram`, `window_hits_jit` in
`audits.features`, `hashed_ngram_rows_jit` in `audits.hashing`), computes exactly its values (the tests
compare them: uint64/uint32 arithmetic wraps the same way in both) and is cached per file, so a change
recompiles only that file's kernels. numba compiles from PyPI wheels with no compiler step; when it is
missing, `AVAILABLE` is False and callers use the numpy path (polars or sklearn for some, as under
`TOMFORGE_JIT=0`: `audits.text.use_jit`).

`fmix64_jit` is shared by three files. numba's cache does not follow a call into another file, so a
change to it would leave their cached kernels stale: it is frozen (the stored MinHash signatures and
every n-gram hash depend on it), and changing it means clearing the `__pycache__/*.nbi` caches.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit

    AVAILABLE = True
except ImportError:
    AVAILABLE = False

    def njit(*_args, **_kwargs):  # type: ignore[no-redef]
        """Stand-in decorator: the kernels stay plain (slow) Python and are never called."""
        return lambda fn: fn


@njit(cache=True, nogil=True)
def fmix64_jit(h):
    """MurmurHash3's 64-bit finalizer (`audits.text.fmix64`, compiled)."""
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))
