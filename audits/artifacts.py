"""Template-artifact audits: gold priors and positions, feature-label association, heuristic rules,
label consistency. Each check controls its family-wise false-positive rate at `alpha` (Bonferroni
over every test the check runs), so on clean data a check flags anything with probability <= alpha.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import polars as pl
from scipy import stats

from audits.config import AuditParams
from audits.features import STRUCTURAL
from audits.text import tokens

HEURISTICS = ("first", "last", "most")


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
                rows.append({"selection": selection, "belief_order": order, "n_options": k, "n": n, "position": pos,
                             "count": int(counts[pos]), "expected": expected, "z": float(z[pos]),
                             "chi2": float(chi2), "p_value": float(pval)})
    out = pl.DataFrame(rows, schema={"selection": pl.Utf8, "belief_order": pl.Utf8, "n_options": pl.Int64, "n": pl.Int64,
                                     "position": pl.Int64, "count": pl.Int64, "expected": pl.Float64, "z": pl.Float64,
                                     "chi2": pl.Float64, "p_value": pl.Float64})
    m = max(out.select("selection", "belief_order", "n_options").unique().height, 1)
    return out.with_columns((pl.col("p_value") <= p.alpha / m).alias("flagged"), pl.lit(p.alpha / m).alias("alpha_corrected"))


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
            testable = 2 <= n_classes <= p.max_answer_classes and n / n_classes >= 5 and n >= p.min_group_items \
                and fmt != "multiple_choice"  # MC answers are option texts; their position is tested instead
            pval = float(stats.chisquare(counts["len"].to_numpy()).pvalue) if testable else None
            for answer, count in counts.head(10).iter_rows():
                rows.append({"selection": selection, "belief_order": order, "answer_format": fmt, "answer": answer,
                             "count": int(count), "n": n, "share": count / n, "n_classes": n_classes,
                             "p_value": pval})
    out = pl.DataFrame(rows, schema={"selection": pl.Utf8, "belief_order": pl.Utf8, "answer_format": pl.Utf8,
                                     "answer": pl.Utf8, "count": pl.Int64, "n": pl.Int64, "share": pl.Float64,
                                     "n_classes": pl.Int64, "p_value": pl.Float64})
    m = max(out.filter(pl.col("p_value").is_not_null()).select("selection", "belief_order", "answer_format").unique().height, 1)
    return out.with_columns((pl.col("p_value").fill_null(1.0) <= p.alpha / m).alias("flagged"))


def _long_features(df: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """(item_id, feature) pairs: question tokens, story tokens and structural features."""
    ctx_tokens = {cid: sorted(set(tokens(text))) for cid, text in df.select("context_id", "context").unique("context_id").iter_rows()}
    q = df.select("item_id", pl.col("question").map_elements(lambda t: sorted(set(tokens(t))), return_dtype=pl.List(pl.Utf8)).alias("f"))
    q = q.explode("f").drop_nulls().with_columns(("q:" + pl.col("f")).alias("feature")).select("item_id", "feature")
    ctx = pl.DataFrame({"context_id": list(ctx_tokens), "f": list(ctx_tokens.values())}, schema={"context_id": pl.Utf8, "f": pl.List(pl.Utf8)})
    s = df.select("item_id", "context_id").join(ctx, on="context_id").explode("f").drop_nulls()
    s = s.with_columns(("s:" + pl.col("f")).alias("feature")).select("item_id", "feature")
    tok = pl.concat([q, s])
    keep = tok.group_by("feature").len().filter(pl.col("len") >= p.min_feature_count).sort(
        ["len", "feature"], descending=[True, False]).head(p.max_token_features).select("feature")
    tok = tok.join(keep, on="feature")
    structural = [df.select("item_id", (pl.lit(f"{name}=") + pl.col(name).cast(pl.Utf8).fill_null("null")).alias("feature"))
                  for name in STRUCTURAL if name in df.columns]
    return pl.concat([tok, *structural]).unique()


def feature_association(df: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """Gardner et al. (2021): for feature f and label y, z = (p_hat(y|f) - p0(y)) / sqrt(p0 (1 - p0) / n_f);
    flagged by an exact two-sided binomial test at alpha / (number of tests)."""
    labels = []
    mc = df.filter((pl.col("answer_format") == "multiple_choice") & pl.col("answer_index").is_not_null())
    if mc.height:
        labels.append(mc.select("item_id", "selection", "belief_order",
                                pl.format("gold_position|k={}", pl.col("options").list.len()).alias("label_kind"),
                                pl.col("answer_index").cast(pl.Utf8).alias("label")))
    other = df.filter(pl.col("answer_format") != "multiple_choice").with_columns(
        pl.col("answer").str.to_lowercase().str.strip_chars().alias("label"))
    if other.height:
        small = other.group_by("answer_format").agg(pl.col("label").n_unique().alias("k")).filter(
            pl.col("k") <= p.max_answer_classes)["answer_format"].to_list()
        other = other.filter(pl.col("answer_format").is_in(small))
        labels.append(other.select("item_id", "selection", "belief_order",
                                   ("answer|" + pl.col("answer_format")).alias("label_kind"), "label"))
    schema = {"selection": pl.Utf8, "belief_order": pl.Utf8, "label_kind": pl.Utf8, "label": pl.Utf8,
              "feature": pl.Utf8, "n_feature": pl.Int64, "n_label_and_feature": pl.Int64, "p_hat": pl.Float64,
              "p0": pl.Float64, "n": pl.Int64, "z": pl.Float64, "p_value": pl.Float64}
    if not labels:
        return pl.DataFrame(schema=schema | {"flagged": pl.Boolean, "alpha_corrected": pl.Float64})
    lab = pl.concat(labels)
    long = _long_features(df, p)
    frames = []
    strata = [lab.with_columns(pl.lit("all").alias("stratum"))]
    orders = lab.filter(pl.col("belief_order").is_not_null())
    if orders["belief_order"].n_unique() > 1:
        strata.append(orders.with_columns(pl.col("belief_order").cast(pl.Utf8).alias("stratum")))
    lab = pl.concat(strata).drop("belief_order").rename({"stratum": "belief_order"})
    fam = ["selection", "belief_order", "label_kind"]
    totals = lab.group_by(fam).len("n")
    priors = lab.group_by([*fam, "label"]).len("n_label").join(totals, on=fam).with_columns(
        (pl.col("n_label") / pl.col("n")).alias("p0"))
    joined = lab.join(long, on="item_id")
    n_f = joined.group_by([*fam, "feature"]).len("n_feature").filter(pl.col("n_feature") >= p.min_feature_count)
    k_fy = joined.group_by([*fam, "feature", "label"]).len("n_label_and_feature")
    tests = n_f.join(priors, on=fam).join(k_fy, on=[*fam, "feature", "label"], how="left").with_columns(
        pl.col("n_label_and_feature").fill_null(0))
    tests = tests.filter((pl.col("n") > pl.col("n_feature")) | (pl.col("p0") < 1.0))  # a feature on every item says nothing
    tests = tests.filter(pl.col("n_label") < pl.col("n"))  # a label with no alternative cannot be associated
    if tests.height == 0:
        return pl.DataFrame(schema=schema | {"flagged": pl.Boolean, "alpha_corrected": pl.Float64})
    k = tests["n_label_and_feature"].to_numpy().astype(np.int64)  # polars counts are unsigned: k - 1 must not wrap
    nf = tests["n_feature"].to_numpy().astype(np.int64)
    p0 = tests["p0"].to_numpy()
    pvals = _binom_two_sided(k, nf, p0)
    tests = tests.with_columns((pl.col("n_label_and_feature") / pl.col("n_feature")).alias("p_hat"))
    tests = tests.with_columns(((pl.col("p_hat") - pl.col("p0")) / (pl.col("p0") * (1 - pl.col("p0")) / pl.col("n_feature")).sqrt()).alias("z"),
                               pl.Series("p_value", pvals))
    m = tests.height
    tests = tests.with_columns((pl.col("p_value") <= p.alpha / m).alias("flagged"), pl.lit(p.alpha / m).alias("alpha_corrected"))
    # keep every flagged test and the strongest few per family as context
    order = ["p_value", *fam, "feature", "label"]
    top = tests.sort(order).group_by(fam, maintain_order=True).head(10)
    frames = pl.concat([tests.filter(pl.col("flagged")), top]).unique(subset=[*fam, "feature", "label"])
    return frames.select(*schema, "flagged", "alpha_corrected").sort(["flagged", *order], descending=[True] + [False] * len(order))


def heuristic_baselines(df: pl.DataFrame, p: AuditParams) -> pl.DataFrame:
    """Accuracy of first/last/most-mentioned-candidate rules per belief order against chance
    (1 / number of candidates), with a Cochran-Armitage trend test over orders: a rule whose accuracy
    rises with belief order means deeper questions are easier to game ("inverted difficulty")."""
    usable = df.filter(pl.col("gold_in_candidates") & (pl.col("n_candidates") >= 2))
    rows = []
    for selection in sorted(usable["selection"].unique().to_list()):
        part = usable.filter(pl.col("selection") == selection)
        orders = sorted(o for o in part["belief_order"].unique().to_list() if o is not None)
        for rule in HEURISTICS:
            correct_col = (pl.col(f"pick_{rule}") == pl.col("gold_norm")).fill_null(False)
            grouped = part.group_by("belief_order").agg(pl.len().alias("n"), correct_col.sum().alias("correct"),
                                                        (1.0 / pl.col("n_candidates")).mean().alias("chance"))
            per_order = {o: r for o, *r in grouped.iter_rows()}
            trend_z, trend_p = _trend([(o, *per_order[o][:2]) for o in orders if per_order[o][0] >= p.min_group_items])
            total_n = part.height
            total_c = int(part.select(correct_col.sum()).item())
            total_chance = float(part.select((1.0 / pl.col("n_candidates")).mean()).item()) if total_n else 0.0
            for order, n, correct, chance in [("all", total_n, total_c, total_chance)] + [
                    (str(o), per_order[o][0], per_order[o][1], per_order[o][2]) for o in orders]:
                pval = float(stats.binomtest(int(correct), int(n), min(max(chance, 1e-9), 1.0), alternative="greater").pvalue) if n else 1.0
                rows.append({"selection": selection, "heuristic": rule, "belief_order": order, "n": int(n),
                             "correct": int(correct), "accuracy": correct / n if n else None, "chance": chance,
                             "p_value": pval, "trend_z": trend_z, "trend_p": trend_p})
    out = pl.DataFrame(rows, schema={"selection": pl.Utf8, "heuristic": pl.Utf8, "belief_order": pl.Utf8, "n": pl.Int64,
                                     "correct": pl.Int64, "accuracy": pl.Float64, "chance": pl.Float64,
                                     "p_value": pl.Float64, "trend_z": pl.Float64, "trend_p": pl.Float64})
    tested = out.filter(pl.col("n") >= p.min_group_items)
    m = max(tested.height, 1)
    m_trend = max(out.filter(pl.col("trend_p").is_not_null()).select("selection", "heuristic").unique().height, 1)
    return out.with_columns(
        ((pl.col("p_value") <= p.alpha / m) & (pl.col("n") >= p.min_group_items)).alias("above_chance"),
        (pl.col("trend_p").fill_null(1.0) <= p.alpha / m_trend).alias("inverted_difficulty"),
    )


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


LABEL_CONFLICTS_SQL = """
WITH norm AS (
  SELECT item_id, context_id, source, split,
         trim(regexp_replace(lower(question), '[^a-z0-9_]+', ' ', 'g')) AS question_norm,
         CASE WHEN answer_format = 'list' THEN array_to_string(list_sort(answer_list), '|')
              ELSE trim(regexp_replace(lower(answer), '[^a-z0-9_]+', ' ', 'g')) END AS answer_norm
  FROM items
)
SELECT context_id, question_norm, count(*) AS n_items, count(DISTINCT answer_norm) AS n_answers,
       list_sort(list(DISTINCT answer_norm)) AS answers, list_sort(list(item_id)) AS item_ids,
       list_sort(list(DISTINCT source)) AS sources
FROM norm GROUP BY context_id, question_norm HAVING count(DISTINCT answer_norm) > 1
ORDER BY context_id, question_norm
"""
