"""Parameters of `tomforge scan` (a training corpus against the held-out benchmark items).

The overlap parameters keep the audit's meaning and defaults (`audits.config.AuditParams`): the
same shingles, MinHash permutations, Jaccard threshold, LSH recall target and 13-gram test level,
so a scan and an audit of the same texts agree on what a near duplicate is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.flag_fields import flag

DEFAULT_BENCHMARK = "split NOT IN ('train')"  # every held-out split (test, validation, val, dev, ...)


class ScanSettingsError(TomforgeError, ValueError):
    """A scan parameter outside its range (`--jaccard`, `--alpha`, `--batch-docs`...): bad input, one line."""


@dataclass(frozen=True)
class ScanParams:
    shingle_n: int = 5  # MinHash shingles (words), as the audit
    num_perm: int = 128
    minhash_seed: int = 1
    jaccard_threshold: float = flag(  # near duplicate: exact Jaccard of the shingle sets
        0.8, "--jaccard", help="Near-duplicate Jaccard threshold."
    )
    target_recall: float = 0.995  # P(LSH candidate | J = jaccard_threshold)
    containment_threshold: float = flag(  # contained: share of the story's n-grams found in the document
        0.8, "--containment", help="Share of a story's n-grams that makes it `contained`."
    )
    ngram_n: int = 13  # long n-grams: containment and the calibrated overlap test
    ngram_alpha: float = flag(  # conformal level of the n-gram test (per document x story pair)
        0.01, "--alpha", help="Level of the n-gram test."
    )
    min_shared_ngrams: int = 3  # an n-gram hit needs at least this many shared distinct n-grams
    # ... and this share of the story's n-grams: the null comes from the benchmark's own stories (hundreds
    # to thousands), its far tail is thin, and a corpus tests millions of (document, story) pairs
    ngram_min_coverage: float = 0.25
    # re-formatted stories: the share of a story's canonical sentences (weighted by rarity) and how many
    # (audits.sentence_match, the audit's core too)
    sentence_min_coverage: float = 0.6
    sentence_min_sentences: int = 3
    batch_docs: int = flag(  # documents per batch: memory is bounded by this, not by the corpus
        20_000, "--batch-docs", help="Documents per batch (memory is bounded by this)."
    )

    def __post_init__(self) -> None:
        if not 0 < self.jaccard_threshold <= 1 or not 0 < self.containment_threshold <= 1:
            raise ScanSettingsError("--jaccard and --containment must be within (0, 1]")
        if not 0 < self.ngram_alpha < 1:
            raise ScanSettingsError("--alpha must be within (0, 1)")
        if self.batch_docs < 1 or self.shingle_n < 1 or self.ngram_n < 1:
            raise ScanSettingsError("--batch-docs, --shingle-n and --ngram-n must be >= 1")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
