"""Audit parameters and the cleaning policy, as dataclasses with working defaults.

Plain frozen dataclasses: the CLI builds them from the flags given, the typed config
(`flows/config.py`) validates its `[audit] params` and `[clean] policy` tables into them (unknown
or ill-typed keys fail on load), and every run records exactly what it used (`as_dict`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.flag_fields import flag


class AuditSettingsError(TomforgeError, ValueError):
    """An audit or scan parameter the overlap passes cannot work with (a shingle size out of range, MinHash
    permutations that give no LSH banding reaching the recall target): bad input, one line, from a flag or a
    config file alike."""


@dataclass(frozen=True)
class AuditParams:
    # overlap: MinHash + LSH + exact verification
    shingle_n: int = flag(5, "--shingle-n", help="Word n-gram size of MinHash shingles.")
    num_perm: int = flag(128, "--num-perm", help="MinHash permutations.")
    minhash_seed: int = 1
    jaccard_threshold: float = flag(0.8, "--jaccard", help="Near-duplicate Jaccard threshold.")
    containment_threshold: float = 0.8
    target_recall: float = 0.995  # P(LSH candidate | J = jaccard_threshold)
    max_bucket: int = 5000
    max_spans: int = 3
    # exact long n-gram overlap, calibrated by a conformal test against a within-train null
    ngram_n: int = flag(13, "--ngram-n", help="Exact long n-gram size.")
    ngram_alpha: float = 0.01  # false-positive rate per held-out context under exchangeability
    ngram_max_doc_freq: int = 1000  # grams shared by more train contexts are skipped for best-match lookup
    # re-formatted copies: a held-out story's canonical sentences found in a train story (audits.sentence_match)
    sentence_min_coverage: float = 0.6  # weighted share of the held-out story's sentences
    sentence_min_sentences: int = 3  # distinct sentences found
    # template artifacts
    alpha: float = 0.01  # family-wise, Bonferroni-corrected within each test family
    min_feature_count: int = 20
    max_token_features: int = 2000
    max_answer_classes: int = 30
    bootstrap: int = 1000
    folds: int = 5
    baseline_max_train: int = 20000
    baseline_max_eval: int = 20000  # held-out items scored (whole stories, seeded) by the partial-input baselines
    min_group_items: int = 30
    seed: int = flag(0, "--seed", help="Seed of baselines and bootstrap.")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CleaningPolicy:
    drop_cross_jaccard: float = flag(  # drop train items whose context overlaps held-out at/above this
        0.8, "--drop-jaccard", help="Drop train items whose context overlaps held-out at this Jaccard."
    )
    drop_cross_containment: float = flag(0.8, "--drop-containment", help="... or at this containment.")
    drop_ngram_flagged: bool = True  # drop the train context that best explains a flagged held-out one
    drop_structural: bool = flag(  # structural twins are reported; dropping them is opt-in
        False, "--drop-structural/--keep-structural", help="Also drop structural twins."
    )
    collapse_duplicates: bool = True  # same question and answer on (near-)identical contexts, per side
    quarantine_conflicts: bool = True
    reshuffle_options: bool = flag(
        True, "--reshuffle/--no-reshuffle", help="Balance gold positions of multiple choice."
    )
    reshuffle_sides: tuple[str, ...] = ("train", "heldout")
    seed: int = flag(0, "--seed", help="Seed of the option re-ordering.")
    quarantine_oracle: bool = flag(  # last: its flag comes last in `clean --help`, as it did when written by hand
        False,
        "--quarantine-oracle/--keep-oracle-rejects",
        help="Quarantine items whose gold the oracle rejects (tomforge variants).",
    )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
