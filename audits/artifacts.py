"""Template-artifact audits: gold priors and positions, feature-label association, heuristic rules,
label consistency. Each check controls its family-wise false-positive rate at `alpha` (Bonferroni
over every test the check runs), so on clean data a check flags anything with probability <= alpha.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import polars as pl
from scipy import sparse, stats

from tomforge.audits.config import AuditParams
from tomforge.audits.features import STRUCTURAL, stories_of
from tomforge.audits.text import distinct_words, norm_words, token_sets, use_jit

CONTAINER_HEURISTICS = ("first", "last", "most", "first_container")
HEURISTICS = (*CONTAINER_HEURISTICS, "modal_position")
HEURISTIC_LABELS = {
    "first": "first-mentioned candidate",
    "last": "last-mentioned candidate",
    "most": "most-mentioned candidate",
    "first_container": "object's first container",
    "modal_position": "most frequent gold position",
}
DESCRIPTIVE_HEURISTICS = ("modal_position",)  # fitted on the items it scores: tested by position_bias/answer_prior


def _strata(df: pl.DataFrame) -> Iterator[tuple[str, str, pl.DataFrame]]:
    """(selection, belief order as text or 'all', rows) for every selection and order."""
    for selection in sorted(df["selection"].unique().to_list()):
        part = df.filter(pl.col("selection") == selection)
        yield selection, "all", part
        orders = sorted(o for o in part["belief_order"].unique().to_list() if o is not None)
        if len(orders) > 1:
            for order in orders:
                yield selection, str(order), part.filter(pl.col("belief_order") == order)


def _binom_two_sided(k: np.ndarray, n: np.ndarray, p0: np.ndarray) -> np.ndarray:
    lower = stats.binom.cdf(k, n, p0)
    upper = stats.binom.sf(k - 1, n, p0)
    return np.minimum(1.0, 2 * np.minimum(lower, upper))


def position_bias(df: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """Gold position of multiple-choice items vs uniform: chi-square per group, z per position."""
    rows = []
    mc = df.filter((pl.col("answer_format") == "multiple_choice") & pl.col("answer_index").is_not_null())
    mc = mc.with_columns(pl.col("options").list.len().alias("n_options"))
    for selection, order, part in _strata(mc):
        for k in sorted(part["n_options"].unique().to_list()):
            group = part.filter(pl.col("n_options") == k)
            n = group.height
            if n < max(p.min_group_items, 5 * k):
                continue
            counts = np.bincount(group["answer_index"].to_numpy(), minlength=k)[:k]
            expected = n / k
            chi2, pval = stats.chisquare(counts)
            z = (counts - expected) / np.sqrt(n * (1 / k) * (1 - 1 / k))
            for pos in range(k):
                rows.append(
                    {
                        "selection": selection,
                        "belief_order": order,
                        "n_options": k,
                        "n": n,
                        "position": pos,
                        "count": int(counts[pos]),
                        "expected": expected,
                        "z": float(z[pos]),
                        "chi2": float(chi2),
                        "p_value": float(pval),
                    }
                )
    out = pl.DataFrame(
        rows,
        schema={
            "selection": pl.Utf8,
            "belief_order": pl.Utf8,
            "n_options": pl.Int64,
            "n": pl.Int64,
            "position": pl.Int64,
            "count": pl.Int64,
            "expected": pl.Float64,
            "z": pl.Float64,
            "chi2": pl.Float64,
            "p_value": pl.Float64,
        },
    )
    m = max(out.select("selection", "belief_order", "n_options").unique().height, 1)
    return out.with_columns(
        (pl.col("p_value") <= p.alpha / m).alias("flagged"), pl.lit(p.alpha / m).alias("alpha_corrected")
    )


def answer_prior(df: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """Gold-answer distribution per format; chi-square vs uniform over the observed classes when
    the answer space is small (yes/no and the like)."""
    rows = []
    norm = df.with_columns(pl.col("answer").str.to_lowercase().str.strip_chars().alias("answer_norm"))
    for selection, order, part in _strata(norm):
        for fmt in sorted(part["answer_format"].unique().to_list()):
            group = part.filter(pl.col("answer_format") == fmt)
            counts = group.group_by("answer_norm").len().sort(["len", "answer_norm"], descending=[True, False])
            n, n_classes = group.height, counts.height
            testable = (
                2 <= n_classes <= p.max_answer_classes
                and n / n_classes >= 5
                and n >= p.min_group_items
                and fmt != "multiple_choice"
            )  # MC answers are option texts; their position is tested instead
            pval = float(stats.chisquare(counts["len"].to_numpy()).pvalue) if testable else None
            for answer, count in counts.head(10).iter_rows():
                rows.append(
                    {
                        "selection": selection,
                        "belief_order": order,
                        "answer_format": fmt,
                        "answer": answer,
                        "count": int(count),
                        "n": n,
                        "share": count / n,
                        "n_classes": n_classes,
                        "p_value": pval,
                    }
                )
    out = pl.DataFrame(
        rows,
        schema={
            "selection": pl.Utf8,
            "belief_order": pl.Utf8,
            "answer_format": pl.Utf8,
            "answer": pl.Utf8,
            "count": pl.Int64,
            "n": pl.Int64,
            "share": pl.Float64,
            "n_classes": pl.Int64,
            "p_value": pl.Float64,
        },
    )
    m = max(
        out.filter(pl.col("p_value").is_not_null())
        .select("selection", "belief_order", "answer_format")
        .unique()
        .height,
        1,
    )
    return out.with_columns((pl.col("p_value").fill_null(1.0) <= p.alpha / m).alias("flagged"))


def _sorted_order(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order that sorts `names` (code-point order of str = byte order of UTF-8, as polars sorts)
    and each name's rank in it, to renumber matrix columns so that they come out sorted by name."""
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return order, rank


def _token_matrix(texts: pl.Series, normalized: pl.Series | None = None) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Binary (text x token) matrix of each text's distinct `tokens`, and the token names (sorted):
    one compiled pass over the normalized bytes (`normalized`: `norm_words(texts)` when the caller
    has it), or polars lists (the reference, without numba)."""
    if use_jit():
        ids, id_offsets, names = distinct_words(norm_words(texts) if normalized is None else normalized)
        order, rank = _sorted_order(names)
        matrix = sparse.csr_matrix(
            (np.ones(len(ids), dtype=np.int64), rank[ids], id_offsets), shape=(len(texts), len(names))
        )
        matrix.sort_indices()
        return matrix, names[order]
    pairs = (
        pl.DataFrame({"_t": np.arange(len(texts), dtype=np.int64), "tok": token_sets(texts)})
        .explode("tok")
        .drop_nulls("tok")
    )
    vocab = pairs.select("tok").unique().sort("tok").with_row_index("_v")
    pairs = pairs.join(vocab, on="tok")
    matrix = sparse.csr_matrix(
        (np.ones(pairs.height, dtype=np.int64), (pairs["_t"].to_numpy(), pairs["_v"].to_numpy())),
        shape=(len(texts), vocab.height),
    )
    return matrix, vocab["tok"].to_numpy()


def _structural_matrix(df: pl.DataFrame) -> tuple[sparse.csr_matrix, np.ndarray]:
    """One-hot (row x `name=value`) matrix of the `STRUCTURAL` columns, columns sorted by that text.
    Each column's few distinct values are named and sorted once and looked up by binary search;
    every row has one entry per column, so the CSR arrays are written directly."""
    names = [name for name in STRUCTURAL if name in df.columns]
    values = [df[name].cast(pl.Utf8).fill_null("null") for name in names]
    distinct = [v.unique().sort() for v in values]
    features = np.array([f"{name}={value}" for name, d in zip(names, distinct) for value in d.to_list()], dtype=object)
    order, rank = _sorted_order(features)
    starts = np.cumsum([0] + [len(d) for d in distinct])
    cols = np.empty((df.height, len(names)), dtype=np.int64)
    for k, (v, d) in enumerate(zip(values, distinct)):
        cols[:, k] = rank[starts[k] + d.search_sorted(v).to_numpy()]
    indptr = (
        np.arange(0, df.height * len(names) + 1, max(len(names), 1))
        if names
        else np.zeros(df.height + 1, dtype=np.int64)
    )
    matrix = sparse.csr_matrix(
        (np.ones(cols.size, dtype=np.int64), cols.ravel(), indptr), shape=(df.height, len(features))
    )
    matrix.sort_indices()
    return matrix, features[order]


def _feature_matrices(
    df: pl.DataFrame, p: AuditParams, stories: pl.DataFrame | None = None
) -> tuple[list[tuple[sparse.csr_matrix, sparse.csr_matrix | None]], np.ndarray]:
    """The features of every row of `df` as sparse blocks (row selector, matrix): question tokens
    (`q:`), story tokens (`s:`, one row per context; `stories`: `features.context_stories`), structural
    features (`name=value`). Only the `max_token_features` most frequent tokens seen on at least
    `min_feature_count` rows are kept (ties by name); counts are over rows, as in a (row, feature) table."""
    n_rows = df.height
    q_matrix, q_names = _token_matrix(df["question"])
    ctx = (
        df.select("context_id", "context").unique("context_id", keep="first", maintain_order=True).with_row_index("_c")
    )
    row_ctx = (
        df.select("context_id")
        .join(ctx.select("context_id", "_c"), on="context_id", how="left", maintain_order="left")["_c"]
        .to_numpy()
        .astype(np.int64)
    )
    s_matrix, s_names = _token_matrix(ctx["context"], stories_of(ctx, stories) if stories is not None else None)
    counts = pl.DataFrame(
        {
            "feature": np.concatenate([np.char.add("q:", q_names.astype(str)), np.char.add("s:", s_names.astype(str))])
            if len(q_names) + len(s_names)
            else np.array([], dtype=str),
            "len": np.concatenate(
                [np.asarray(q_matrix.sum(axis=0)).ravel(), np.bincount(row_ctx, minlength=ctx.height) @ s_matrix]
            ).astype(np.int64),
            "_i": np.arange(len(q_names) + len(s_names)),
        },
        schema={"feature": pl.Utf8, "len": pl.Int64, "_i": pl.Int64},
    )
    keep = (
        counts.filter(pl.col("len") >= p.min_feature_count)
        .sort(["len", "feature"], descending=[True, False])
        .head(p.max_token_features)["_i"]
        .to_numpy()
    )
    q_keep, s_keep = np.sort(keep[keep < len(q_names)]), np.sort(keep[keep >= len(q_names)]) - len(q_names)
    st_matrix, st_names = _structural_matrix(df)
    ctx_selector = sparse.csr_matrix(
        (np.ones(n_rows, dtype=np.int64), (np.arange(n_rows), row_ctx)), shape=(n_rows, ctx.height)
    )
    blocks = [(None, q_matrix[:, q_keep]), (ctx_selector, s_matrix[:, s_keep]), (None, st_matrix)]
    names = np.concatenate(
        [
            np.array(["q:" + t for t in q_names[q_keep]], dtype=object),
            np.array(["s:" + t for t in s_names[s_keep]], dtype=object),
            st_names,
        ]
    )
    return blocks, names


_ASSOCIATION_SCHEMA = {
    "selection": pl.Utf8,
    "belief_order": pl.Utf8,
    "label_kind": pl.Utf8,
    "label": pl.Utf8,
    "feature": pl.Utf8,
    "n_feature": pl.Int64,
    "n_label_and_feature": pl.Int64,
    "p_hat": pl.Float64,
    "p0": pl.Float64,
    "n": pl.Int64,
    "z": pl.Float64,
    "p_value": pl.Float64,
}
_FAMILY = ["selection", "belief_order", "label_kind"]


def feature_association(df: pl.DataFrame, p: AuditParams, stories: pl.DataFrame | None = None) -> pl.DataFrame:
    """Gardner et al. (2021): for feature f and label y, z = (p_hat(y|f) - p0(y)) / sqrt(p0 (1 - p0) / n_f);
    flagged by an exact two-sided binomial test at alpha / (number of tests)."""
    df = df.with_row_index("_row")
    labels = _association_labels(df, p)
    if not labels:
        return _no_associations()
    lab = _with_order_strata(pl.concat(labels))
    fam = _FAMILY
    totals = lab.group_by(fam).len("n")
    priors = (
        lab.group_by([*fam, "label"])
        .len("n_label")
        .join(totals, on=fam)
        .with_columns((pl.col("n_label") / pl.col("n")).alias("p0"))
        .sort([*fam, "label"])
        .with_row_index("_fy")
    )
    # counts of (family, label) x feature as one sparse product: (family-label x row) @ (row x feature)
    blocks, names = _feature_matrices(df, p, stories)
    lab = lab.join(priors.select(*fam, "label", "_fy"), on=[*fam, "label"])
    fy, rows = lab["_fy"].to_numpy().astype(np.int64), lab["_row"].to_numpy().astype(np.int64)
    membership = sparse.csr_matrix((np.ones(len(fy), dtype=np.int64), (fy, rows)), shape=(priors.height, df.height))
    counts = np.hstack(
        [
            ((membership @ selector) @ matrix if selector is not None else membership @ matrix).toarray()
            for selector, matrix in blocks
        ]
    )
    tests = _candidate_tests(priors, counts, names, p)
    if tests.height == 0:
        return _no_associations()
    return _tested(tests, p)


def _no_associations() -> pl.DataFrame:
    """The empty table, with every column `feature_association` returns."""
    return pl.DataFrame(schema=_ASSOCIATION_SCHEMA | {"flagged": pl.Boolean, "alpha_corrected": pl.Float64})


def _association_labels(df: pl.DataFrame, p: AuditParams) -> list[pl.DataFrame]:
    """The labels a feature may predict, per row (`_row`): the gold position of a multiple-choice item (per
    number of options), and the normalized answer of the other formats that have at most `max_answer_classes`."""
    labels = []
    mc = df.filter((pl.col("answer_format") == "multiple_choice") & pl.col("answer_index").is_not_null())
    if mc.height:
        labels.append(
            mc.select(
                "_row",
                "selection",
                "belief_order",
                pl.format("gold_position|k={}", pl.col("options").list.len()).alias("label_kind"),
                pl.col("answer_index").cast(pl.Utf8).alias("label"),
            )
        )
    other = df.filter(pl.col("answer_format") != "multiple_choice").with_columns(
        pl.col("answer").str.to_lowercase().str.strip_chars().alias("label")
    )
    if other.height:
        small = (
            other.group_by("answer_format")
            .agg(pl.col("label").n_unique().alias("k"))
            .filter(pl.col("k") <= p.max_answer_classes)["answer_format"]
            .to_list()
        )
        other = other.filter(pl.col("answer_format").is_in(small))
        labels.append(
            other.select(
                "_row", "selection", "belief_order", ("answer|" + pl.col("answer_format")).alias("label_kind"), "label"
            )
        )
    return labels


def _with_order_strata(lab: pl.DataFrame) -> pl.DataFrame:
    """Every label row once under `belief_order` "all", and once more under its own order when there are
    several orders."""
    strata = [lab.with_columns(pl.lit("all").alias("stratum"))]
    orders = lab.filter(pl.col("belief_order").is_not_null())
    if orders["belief_order"].n_unique() > 1:
        strata.append(orders.with_columns(pl.col("belief_order").cast(pl.Utf8).alias("stratum")))
    return pl.concat(strata).drop("belief_order").rename({"stratum": "belief_order"})


def _candidate_tests(priors: pl.DataFrame, counts: np.ndarray, names: np.ndarray, p: AuditParams) -> pl.DataFrame:
    """One row per (family, label) and feature seen on at least `min_feature_count` items of the family, less the
    ones that can say nothing: a feature on every item, a label with no alternative."""
    fam = _FAMILY
    family = (
        priors.select(fam).with_columns(pl.struct(fam).rank("dense").cast(pl.Int64).alias("_f") - 1)["_f"].to_numpy()
    )
    per_family = np.zeros((family.max() + 1 if len(family) else 0, counts.shape[1]), dtype=np.int64)
    np.add.at(per_family, family, counts)
    n_feature = per_family[family]
    fy_i, f_i = np.nonzero(n_feature >= max(p.min_feature_count, 1))
    tests = priors.select(*fam, "label", "n_label", "n", "p0")[fy_i].with_columns(
        pl.Series("feature", names[f_i], dtype=pl.Utf8),
        pl.Series("n_feature", n_feature[fy_i, f_i], dtype=pl.UInt32),
        pl.Series("n_label_and_feature", counts[fy_i, f_i], dtype=pl.UInt32),
    )
    tests = tests.filter(
        (pl.col("n") > pl.col("n_feature")) | (pl.col("p0") < 1.0)
    )  # a feature on every item says nothing
    return tests.filter(pl.col("n_label") < pl.col("n"))  # a label with no alternative cannot be associated


def _tested(tests: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """The tests' z and exact p-values, flagged at alpha / (number of tests); every flagged test is kept, and the
    strongest ten per family as context."""
    fam = _FAMILY
    k = tests["n_label_and_feature"].to_numpy().astype(np.int64)  # polars counts are unsigned: k - 1 must not wrap
    nf = tests["n_feature"].to_numpy().astype(np.int64)
    p0 = tests["p0"].to_numpy()
    pvals = _binom_two_sided(k, nf, p0)
    tests = tests.with_columns((pl.col("n_label_and_feature") / pl.col("n_feature")).alias("p_hat"))
    tests = tests.with_columns(
        ((pl.col("p_hat") - pl.col("p0")) / (pl.col("p0") * (1 - pl.col("p0")) / pl.col("n_feature")).sqrt()).alias(
            "z"
        ),
        pl.Series("p_value", pvals),
    )
    m = tests.height
    tests = tests.with_columns(
        (pl.col("p_value") <= p.alpha / m).alias("flagged"), pl.lit(p.alpha / m).alias("alpha_corrected")
    )
    order = ["p_value", *fam, "feature", "label"]
    top = tests.sort(order).group_by(fam, maintain_order=True).head(10)
    frames = pl.concat([tests.filter(pl.col("flagged")), top]).unique(subset=[*fam, "feature", "label"])
    return frames.select(*_ASSOCIATION_SCHEMA, "flagged", "alpha_corrected").sort(
        ["flagged", *order], descending=[True] + [False] * len(order)
    )


def _strata_expr() -> pl.Expr:
    """Belief order as text; memory questions (which ask for the first container) apart."""
    return (
        pl.when(pl.col("question_type") == "memory")
        .then(pl.lit("memory"))
        .otherwise(pl.col("belief_order").cast(pl.Utf8))
        .alias("stratum")
    )


def _modal_position_scores(df: pl.DataFrame) -> pl.DataFrame:
    """ "Answer the option at the most frequent gold position" (yes/no: the most frequent answer), the
    mode taken per selection, stratum, format and number of options. The mode is fitted on the items
    it scores, so its accuracy is descriptive (never below chance); whether positions or answers
    depart from uniform is tested by `position_bias` and `answer_prior`, not here."""
    scored = modal_position_labels(df)
    return scored.select(
        "item_id",
        "selection",
        "stratum",
        "answer_format",
        pl.lit("modal_position").alias("heuristic"),
        (pl.col("label") == pl.col("mode")).alias("hit"),
        pl.when(pl.col("answer_format") == "yes_no").then(0.5).otherwise(1.0 / pl.col("k")).alias("chance"),
    )


def modal_position_labels(df: pl.DataFrame) -> pl.DataFrame:
    """The rows the modal-position rule scores, with `label` (gold option index as text, or yes/no),
    `k` (options) and `mode` (the rule's answer: the most frequent label of the row's selection,
    stratum, format and k). Also what compares a model's answers with the rule (experiments.experiment_report)."""
    if "stratum" not in df.columns:
        df = df.with_columns(_strata_expr())
    mc = (
        (pl.col("answer_format") == "multiple_choice")
        & pl.col("answer_index").is_not_null()
        & (pl.col("options").list.len() >= 2)
    )
    yn = (pl.col("answer_format") == "yes_no") & pl.col("gold_norm").is_in(["yes", "no"])
    part = df.filter(mc | yn).with_columns(
        pl.when(pl.col("answer_format") == "yes_no")
        .then(pl.col("gold_norm"))
        .otherwise(pl.col("answer_index").cast(pl.Utf8))
        .alias("label"),
        pl.when(pl.col("answer_format") == "yes_no")
        .then(pl.lit(2))
        .otherwise(pl.col("options").list.len())
        .cast(pl.Int64)
        .alias("k"),
        pl.col("stratum").fill_null("none").alias("stratum_key"),
    )
    keys = ["selection", "stratum_key", "answer_format", "k"]
    modes = (
        part.group_by([*keys, "label"])
        .len()
        .sort(["len", "label"], descending=[True, False])
        .group_by(keys, maintain_order=True)
        .first()
        .select(*keys, pl.col("label").alias("mode"))
    )
    return part.join(modes, on=keys, how="inner")


def heuristic_scores(df: pl.DataFrame) -> pl.DataFrame:
    """One row per (item row, heuristic) the heuristic can be scored on: item_id, selection, stratum,
    answer_format, heuristic, hit, chance. The first-container rules skip memory questions, whose
    gold is the first container by definition."""
    base = df.with_columns(_strata_expr())
    frames = []
    for rule in CONTAINER_HEURISTICS:
        keep = pl.col("scorable").fill_null(False)
        if rule in ("first", "first_container"):
            keep = keep & (pl.col("stratum").fill_null("") != "memory")
        frames.append(
            base.filter(keep).select(
                "item_id",
                "selection",
                "stratum",
                "answer_format",
                pl.lit(rule).alias("heuristic"),
                pl.col(f"hit_{rule}").fill_null(False).alias("hit"),
                "chance",
            )
        )
    frames.append(_modal_position_scores(base))
    return pl.concat(frames)


def _stratum_sort_key(stratum: str) -> tuple[int, int, str]:
    return (0, 0, "") if stratum == "all" else (1, int(stratum), "") if stratum.isdigit() else (2, 0, stratum)


def heuristic_baselines(df: pl.DataFrame, p: AuditParams, by_format: bool = False) -> pl.DataFrame:
    """Accuracy of each heuristic rule per belief order against chance (what uniformly random options
    score), with a one-sided binomial test and a Cochran-Armitage trend test over orders. `by_format`:
    one curve per answer format (tests are Bonferroni-corrected within the table). The modal-position
    rule is reported without tests (see `_modal_position_scores`)."""
    return baselines_from_scores(heuristic_scores(df), p, by_format)


def baselines_from_scores(scores: pl.DataFrame, p: AuditParams, by_format: bool = False) -> pl.DataFrame:
    """`heuristic_baselines` on per-item scores (selection, stratum, answer_format, heuristic, hit,
    chance). "Inverted difficulty" (deeper questions easier to game) needs both a rising curve
    (trend test) and a rule that beats chance on the higher orders pooled (`higher_orders_test`):
    a rule that never beats chance only gets less wrong, which is no shortcut."""
    group = ["selection", *(["answer_format"] if by_format else []), "heuristic"]
    table = _counted_by_stratum(scores, group)
    rank = {h: i for i, h in enumerate(HEURISTICS)}
    rows = []
    for key, part in sorted(
        table.partition_by(group, as_dict=True).items(), key=lambda kv: (*kv[0][:-1], rank[kv[0][-1]])
    ):
        rows += _baseline_rows(dict(zip(group, key)), part, p)
    schema = {
        "selection": pl.Utf8,
        **({"answer_format": pl.Utf8} if by_format else {}),
        "heuristic": pl.Utf8,
        "belief_order": pl.Utf8,
        "n": pl.Int64,
        "correct": pl.Int64,
        "accuracy": pl.Float64,
        "chance": pl.Float64,
        "p_value": pl.Float64,
        "trend_z": pl.Float64,
        "trend_p": pl.Float64,
        "high_orders_accuracy": pl.Float64,
        "high_orders_chance": pl.Float64,
        "high_orders_p": pl.Float64,
    }
    return _with_flags(pl.DataFrame(rows, schema=schema), group, p)


def _counted_by_stratum(scores: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """Items, hits and mean chance per group and stratum, with an `all` stratum per group first.

    Counts per distinct chance first (a few rows per group), then the mean chance summed over them in
    sorted order: a float mean that does not depend on how joins happened to order the items."""
    counted = scores.group_by([*group, "stratum", "chance"]).agg(
        pl.len().alias("n"), pl.col("hit").sum().alias("correct")
    )
    counted = counted.sort([*group, "stratum", "chance"], nulls_last=True)
    agg = (
        pl.col("n").sum(),
        pl.col("correct").sum(),
        ((pl.col("chance") * pl.col("n")).sum() / pl.col("n").filter(pl.col("chance").is_not_null()).sum()).alias(
            "chance"
        ),
    )
    per = counted.filter(pl.col("stratum").is_not_null()).group_by([*group, "stratum"], maintain_order=True).agg(*agg)
    total = counted.group_by(group, maintain_order=True).agg(*agg).with_columns(pl.lit("all").alias("stratum"))
    return pl.concat([total.select(per.columns), per])


def _baseline_rows(keys: dict[str, str], part: pl.DataFrame, p: AuditParams) -> list[dict]:
    """One group's rows (`keys`: its selection, format and heuristic), one per stratum: accuracy against chance,
    and the group's trend and higher-order tests on every row (none for a descriptive heuristic)."""
    by_stratum = {r["stratum"]: r for r in part.iter_rows(named=True)}
    orders = sorted(int(s) for s in by_stratum if s.isdigit())
    descriptive = keys["heuristic"] in DESCRIPTIVE_HEURISTICS
    points = [
        (o, int(by_stratum[str(o)]["n"]), int(by_stratum[str(o)]["correct"]), float(by_stratum[str(o)]["chance"]))
        for o in orders
        if by_stratum[str(o)]["n"] >= p.min_group_items
    ]
    trend_z, trend_p = (None, None) if descriptive else _trend([pt[:3] for pt in points])
    high_acc, high_chance, high_p = (None, None, None) if descriptive or trend_p is None else higher_orders_test(points)
    rows = []
    for stratum in sorted(by_stratum, key=_stratum_sort_key):
        r = by_stratum[stratum]
        n, correct, chance = int(r["n"]), int(r["correct"]), float(r["chance"])
        pval = (
            None
            if descriptive
            else float(stats.binomtest(correct, n, min(max(chance, 1e-9), 1.0), alternative="greater").pvalue)
        )
        rows.append(
            keys
            | {
                "belief_order": stratum,
                "n": n,
                "correct": correct,
                "accuracy": correct / n,
                "chance": chance,
                "p_value": pval,
                "trend_z": trend_z,
                "trend_p": trend_p,
                "high_orders_accuracy": high_acc,
                "high_orders_chance": high_chance,
                "high_orders_p": high_p,
            }
        )
    return rows


def _with_flags(out: pl.DataFrame, group: list[str], p: AuditParams) -> pl.DataFrame:
    """`above_chance` and `inverted_difficulty`, Bonferroni-corrected over the tested rows and the groups with a
    trend test."""
    tested = out.filter((pl.col("n") >= p.min_group_items) & pl.col("p_value").is_not_null())
    m = max(tested.height, 1)
    m_trend = max(out.filter(pl.col("trend_p").is_not_null()).select(group).unique().height, 1)
    return out.with_columns(
        ((pl.col("p_value").fill_null(1.0) <= p.alpha / m) & (pl.col("n") >= p.min_group_items)).alias("above_chance"),
        (
            (pl.col("trend_p").fill_null(1.0) <= p.alpha / m_trend)
            & (pl.col("high_orders_p").fill_null(1.0) <= p.alpha / m_trend)
        ).alias("inverted_difficulty"),
    )


def higher_orders_test(points: list[tuple[int, int, int, float]]) -> tuple[float, float, float]:
    """Does the rule beat chance on the higher half of the orders (the upper half of the sorted
    orders, the middle one included when their number is odd)? Points are (order, n, correct,
    mean chance); returns the pooled accuracy, the pooled chance and the one-sided binomial p-value."""
    high = sorted(points)[len(points) // 2 :]
    n = sum(pt[1] for pt in high)
    correct = sum(pt[2] for pt in high)
    chance = sum(pt[1] * pt[3] for pt in high) / n
    pval = float(stats.binomtest(correct, n, min(max(chance, 1e-9), 1.0), alternative="greater").pvalue)
    return correct / n, chance, pval


def _trend(points: list[tuple[int, int, int]]) -> tuple[float | None, float | None]:
    """Cochran-Armitage test for a rising proportion over ordered groups (one-sided, z and p)."""
    if len(points) < 3:
        return None, None
    w = np.array([o for o, _, _ in points], dtype=float)
    n = np.array([c for _, c, _ in points], dtype=float)
    x = np.array([k for _, _, k in points], dtype=float)
    total, p_bar = n.sum(), x.sum() / n.sum()
    if p_bar in (0.0, 1.0):
        return 0.0, 1.0
    t = np.sum(w * (x - n * p_bar))
    var = p_bar * (1 - p_bar) * (np.sum(n * w * w) - np.sum(n * w) ** 2 / total)
    if var <= 0:
        return None, None
    z = float(t / np.sqrt(var))
    return z, float(stats.norm.sf(z))


# The same question (normalized) on the same story with different gold answers. Each item is normalized
# once (a materialized CTE) and the groups are found by min <> max (count(DISTINCT) > 1 over the same
# non-null values) before any list is built: nearly every group holds one item, and building their
# lists only to drop them cost about as much as the regexes (0.87 -> 0.52 CPU s at 200,000 items).
LABEL_CONFLICTS_SQL = """
WITH norm AS MATERIALIZED (
  SELECT item_id, context_id, source,
         trim(regexp_replace(lower(question), '[^a-z0-9_]+', ' ', 'g')) AS question_norm,
         CASE WHEN answer_format = 'list' THEN array_to_string(list_sort(answer_list), '|')
              ELSE trim(regexp_replace(lower(answer), '[^a-z0-9_]+', ' ', 'g')) END AS answer_norm
  FROM items
), conflicted AS (
  SELECT context_id, question_norm FROM norm
  GROUP BY context_id, question_norm HAVING min(answer_norm) <> max(answer_norm)
)
SELECT n.context_id, n.question_norm, count(*) AS n_items, count(DISTINCT n.answer_norm) AS n_answers,
       list_sort(list(DISTINCT n.answer_norm)) AS answers, list_sort(list(n.item_id)) AS item_ids,
       list_sort(list(DISTINCT n.source)) AS sources
FROM norm AS n SEMI JOIN conflicted AS c
  ON n.context_id IS NOT DISTINCT FROM c.context_id AND n.question_norm IS NOT DISTINCT FROM c.question_norm
GROUP BY n.context_id, n.question_norm
ORDER BY n.context_id, n.question_norm
"""
