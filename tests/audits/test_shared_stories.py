"""The artifacts phase normalizes each story once (`features.context_stories`, held by `TableInputs`)
for both the item features and the feature-label cues: the same tables as each normalizing on its
own (the per-item reference and `norm_words` itself), stories in another order are not taken, and
the stories given are the ones read."""

from __future__ import annotations

import random

import polars as pl

from tests.audit_reference import reference_item_features
from tests.audits.test_audit_features import frame, random_case
from tomforge.audits import features, text
from tomforge.audits.artifacts import _feature_matrices, feature_association
from tomforge.audits.check import TableInputs
from tomforge.audits.config import AuditParams
from tomforge.audits.features import context_stories, item_features, stories_of


def _items(seed: int) -> pl.DataFrame:
    df = frame(*random_case(random.Random(seed)))
    return df.with_columns(
        pl.lit("train").alias("selection"),
        pl.lit("train").alias("side"),
        pl.lit(1).alias("belief_order"),
        pl.lit(None, pl.Int64).alias("answer_index"),
        pl.lit("reality").alias("question_type"),
    )


def test_context_stories_are_each_context_once_in_first_seen_order() -> None:
    items = pl.DataFrame(
        {"context_id": ["b", "a", "b", "c"], "context": ["Noah  went IN.", "Mia: hi!", "ignored", None]}
    )
    assert context_stories(items).to_dicts() == [
        {"context_id": "b", "story": "noah went in"},
        {"context_id": "a", "story": "mia hi"},
        {"context_id": "c", "story": ""},
    ]  # hand-worked: lower case, punctuation runs to one space, ends trimmed, null -> ""


def test_stories_in_another_order_are_not_taken() -> None:
    ctx = pl.DataFrame({"context_id": ["a", "b"], "context": ["One two.", "Three!"]})
    swapped = pl.DataFrame({"context_id": ["b", "a"], "story": ["three", "one two"]})
    assert stories_of(ctx, swapped).to_list() == ["one two", "three"]
    assert stories_of(ctx, None).to_list() == ["one two", "three"]
    given = pl.DataFrame({"context_id": ["a", "b"], "story": ["planted", "words"]})
    assert stories_of(ctx, given).to_list() == ["planted", "words"]  # the same contexts: taken as they are


def test_item_features_with_shared_stories_equal_the_per_item_definition() -> None:
    for seed in range(30):
        items = _items(seed)
        shared = item_features(items, context_stories(items))
        assert shared.to_dicts() == reference_item_features(items).to_dicts()


def test_given_stories_are_the_ones_read() -> None:
    """A planted story that names no candidate: the features given it see no mention at all."""
    items = _items(3).filter(pl.col("answer_format") == "multiple_choice")
    planted = context_stories(items).with_columns(pl.lit("nothing here").alias("story"))
    assert item_features(items, planted)["pick_first"].is_null().all()
    _, names = _feature_matrices(items, AuditParams(min_feature_count=1), planted)
    assert sorted(n for n in names if n.startswith("s:")) == ["s:here", "s:nothing"]
    _, own = _feature_matrices(items, AuditParams(min_feature_count=1))
    assert "s:nothing" not in set(own)


def test_the_phase_normalizes_each_story_once(monkeypatch) -> None:
    other = _items(6).with_columns(
        ("x" + pl.col("context_id")).alias("context_id"), ("x" + pl.col("item_id")).alias("item_id")
    )
    items = pl.concat([_items(5), other])
    calls: list[int] = []
    real = text.norm_words

    def counted(texts: pl.Series) -> pl.Series:
        if texts.name == "context":
            calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(features, "norm_words", counted)
    monkeypatch.setattr("tomforge.audits.artifacts.norm_words", counted)
    data = TableInputs(items, items, None, AuditParams(min_feature_count=1))
    with_shared = feature_association(data.frame, data.params, data.stories)
    assert calls == [items["context_id"].n_unique()]  # the stories, once, for both tables
    monkeypatch.undo()
    assert with_shared.to_dicts() == feature_association(data.frame, data.params).to_dicts()
