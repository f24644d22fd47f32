"""The format-transfer block (issue 28): the same generated worlds in two renderings, a tiny model trained on
one and evaluated on both, the block's cells against accuracies recomputed from the stored rows, its pairs
against the generator's own ids, and its paired difference against hand-worked values and other
implementations of the same statistics."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")

from experiments.data import DataPlan, build_release  # noqa: E402
from experiments.transfer import RECIPE, run  # noqa: E402
from tomforge.flows.cli import app  # noqa: E402
from tomforge.generators import generate_splits  # noqa: E402
from tomforge.rl.paired import mcnemar_exact, paired_difference  # noqa: E402
from tomforge.rl.release import ReleaseReadError, SplitRef, read_split  # noqa: E402
from tomforge.rl.stage import verl_data_files  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402
from tomforge.rl.transfer import transfer_view  # noqa: E402
from tomforge.schemas.progress import SILENT  # noqa: E402

runner = CliRunner()
RENDERINGS = ("third_person", "second_person")
PLAN = DataPlan(n=80, n_higher=2, extra_orders=1, seed=3, samples=(), renderings=RENDERINGS)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("transfer")
    build_release(base / "release", base / "data.duckdb", PLAN, progress=SILENT)
    return base / "release"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny") / "model"
    tokenizer = build_tokenizer(["You move the apple to the box. <think>x</think><answer>box</answer>"] * 4, 300)
    build_model(tokenizer, hidden_size=16, num_layers=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def generator_pairs(split: str) -> set[tuple[str, str]]:
    """(third-person item id, second-person item id) of the same question, straight from the generator: the
    two renderings of one run, matched by position."""
    told = [
        [
            r
            for r in generate_splits(PLAN.n, max_order=PLAN.max_order, seed=PLAN.seed, rendering=rendering)
            if r["split"] == split
        ]
        for rendering in RENDERINGS
    ]
    assert len(told[0]) == len(told[1]) > 0
    return {(third["item_id"], second["item_id"]) for third, second in zip(*told)}


def stored(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_train_on_one_rendering_evaluate_on_both(release: Path, tiny: Path, tmp_path: Path) -> None:
    recipe = {**RECIPE, "sft_steps": 2, "sft_batch": 4, "completion": 4, "generator": "hf"}
    metrics = run(
        release,
        str(tiny),
        tmp_path,
        recipe,
        trained=["second_person"],
        splits=("tomforge_gen/test",),
        extra_sft={"use_cpu": True, "max_length": None},
    )
    warehouse = tmp_path / "eval.duckdb"
    block = metrics["transfer"]["models"]["trained-second_person"]
    assert block["trained_on"] == "second_person"
    cells = block["splits"]["tomforge_gen/test"]["cells"]
    # cells: accuracy and n per rendering, recomputed by SQL from the stored per-item rows
    by_sql = {
        r: (round(a, 4), n)
        for r, a, n in stored(warehouse, "SELECT rendering, avg(correct::INT), count(*) FROM eval_results GROUP BY 1")
    }
    assert {r: (c["accuracy"], c["n"]) for r, c in cells.items()} == by_sql
    # the pairs: rows joined on their partner key are the generator's same question in both renderings
    pairs = stored(
        warehouse,
        "SELECT a.item_id, b.item_id, a.correct::INT, b.correct::INT FROM eval_results a "
        "JOIN eval_results b USING (pair_key) WHERE a.rendering = 'third_person' "
        "AND b.rendering = 'second_person'",
    )
    assert {(a, b) for a, b, _, _ in pairs} == generator_pairs("test")
    assert len(pairs) == cells["third_person"]["n"] == cells["second_person"]["n"] == PLAN.n // 10
    difference = cells["third_person"]["vs_trained"]
    assert difference["pairs"] == len(pairs)
    assert difference["only_reference_right"] == sum(1 for *_, third, second in pairs if second and not third)
    assert difference["only_other_right"] == sum(1 for *_, third, second in pairs if third and not second)
    assert difference["difference"] == round(sum(third - second for *_, third, second in pairs) / len(pairs), 4)
    # what the model was trained on: read from the record beside the checkpoint, stored on every row
    record = json.loads((tmp_path / "second_person" / "sft" / "tomforge_training.json").read_text())
    assert (record["train"], record["renderings"]) == ("tomforge_gen/train:second_person", ["second_person"])
    assert record["rows"] == PLAN.n * 8 // 10
    assert stored(warehouse, "SELECT DISTINCT trained_on, rendering, distribution FROM eval_results ORDER BY 2") == [
        ("second_person", "second_person", "in_distribution"),
        ("second_person", "third_person", "held_out"),
    ]
    text = (tmp_path / "transfer.md").read_text()
    assert "trained-second_person (second_person) | tomforge_gen/test | " in text
    assert "tomforge_gen/test:third_person (held_out)" in text


def release_rows(release: Path, split: str = "test") -> dict[str, dict]:
    """prompt (as JSON) -> its row, read straight from the release's parquet files."""
    rows = [
        row
        for f in sorted((release / "data" / "tomforge_gen").glob(f"{split}-*.parquet"))
        for row in pq.read_table(f).to_pylist()
    ]
    return {json.dumps(row["prompt"]): row for row in rows}


def test_planted_transfer_gap(release: Path, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that answers every third-person item right and, in second person, only the order-0 items: the
    block must show the gap the release's own rows predict, with the same numbers from a mixed split."""
    model = tmp_path / "model"
    shutil.copytree(tiny, model)
    (model / "tomforge_training.json").write_text(json.dumps({"renderings": ["third_person"]}))
    rows = release_rows(release)

    def scripted(model_path, batch_prompts, **kwargs):
        out = []
        for prompt in batch_prompts:
            row = rows[json.dumps(prompt)]
            right = json.loads(row["meta"])["rendering"] == "third_person" or row["belief_order"] == 0
            out.append(f"<think>x</think><answer>{row['answer'] if right else 'zz-not-an-answer'}</answer>")
        return out

    monkeypatch.setattr("tomforge.rl.evaluate.generate", scripted)
    second = [r for r in rows.values() if json.loads(r["meta"])["rendering"] == "second_person"]
    n, order0 = len(second), sum(1 for r in second if r["belief_order"] == 0)
    assert 0 < order0 < n
    views = []
    for splits in (["tomforge_gen/test:third_person", "tomforge_gen/test:second_person"], ["tomforge_gen/test"]):
        out = tmp_path / f"ev{len(splits)}"
        result = runner.invoke(
            app,
            [
                "eval",
                "--model",
                str(model),
                "--dataset",
                str(release),
                *[a for s in splits for a in ("--split", s)],
                "--label",
                "planted",
                "--generator",
                "hf",
                "--no-store",
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["matrix"]["planted"] == {
            "tomforge_gen/test:second_person (held_out)": round(order0 / n, 4),
            "tomforge_gen/test:third_person (held_out)": 1.0,
        }
        views.append(summary["transfer"])
        cell = summary["transfer"]["models"]["planted"]["splits"]["tomforge_gen/test"]["cells"]["second_person"]
        assert (cell["accuracy"], cell["n"]) == (round(order0 / n, 4), n)
        diff = cell["vs_trained"]
        assert (diff["pairs"], diff["only_reference_right"], diff["only_other_right"]) == (n, n - order0, 0)
        assert diff["difference"] == round((order0 - n) / n, 4)
        assert diff["p_mcnemar"] == round(2 * 0.5 ** (n - order0), 6)  # every discordant pair one way: 2 / 2^b
        low, high = diff["ci95"]
        assert low <= diff["difference"] <= high <= 0  # no resample can favour second person
        assert (
            f"planted (third_person) | tomforge_gen/test | {order0 / n:.3f} (n={n}) {(order0 - n) / n:+.3f} "
            f"[{low:+.3f}, {high:+.3f}] | 1.000 (n={n}) trained" in result.stdout
        )  # columns by name
    assert views[0] == views[1]  # selecting each rendering or reading the mixed split: one block


def row(label: str, rendering: str, key: str, correct: bool, trained: str | None = "third_person") -> dict:
    return {
        "label": label,
        "config": "c",
        "split": "s",
        "rendering": rendering,
        "pair_key": key,
        "correct": correct,
        "trained_on": trained,
    }


def test_unpaired_and_duplicate_items_are_counted() -> None:
    rows = [
        row("m", "third_person", "k1", True),
        row("m", "third_person", "k2", False),
        row("m", "second_person", "k1", False),
        row("m", "second_person", "k3", True),
        row("m", "second_person", "k1", True),  # k1 evaluated twice: the first counts
        row("m", "hitom", "k9", True),
        {**row("m", "x", "k8", True), "rendering": None},
    ]  # no rendering: not in
    view = transfer_view(rows)
    block = view["models"]["m"]["splits"]["c/s"]
    assert view["renderings"] == ["hitom", "second_person", "third_person"]
    assert block["duplicates"] == 1
    assert block["unpaired"] == {"second_person": 1, "hitom": 1}
    assert block["cells"]["second_person"]["accuracy"] == 0.5  # k1 wrong (first), k3 right
    assert block["cells"]["second_person"]["vs_trained"]["pairs"] == 1  # k1 only
    assert block["cells"]["second_person"]["vs_trained"]["difference"] == -1.0
    assert block["cells"]["hitom"]["vs_trained"] is None  # nothing to pair with
    assert "vs_trained" not in block["cells"]["third_person"]
    untrained = transfer_view(
        [row("u", "third_person", "k1", True, None), row("u", "second_person", "k1", False, None)]
    )
    assert all("vs_trained" not in c for c in untrained["models"]["u"]["splits"]["c/s"]["cells"].values())


def test_paired_difference_against_hand_worked_values_and_other_implementations() -> None:
    from scipy import stats

    # b = 3 right only in the reference, c = 1 right only in the other, 6 agreeing, of 10
    reference = [True, True, True, False, True, False, True, False, True, False]
    other = [False, False, False, True, True, False, True, False, True, False]
    found = paired_difference(reference, other)
    assert (found.pairs, found.only_reference_right, found.only_other_right) == (10, 3, 1)
    assert found.difference == -0.2
    assert found.p_mcnemar == 0.625  # 2 * (C(4,0) + C(4,1)) / 2^4
    for b, c in ((3, 1), (0, 7), (12, 30), (5, 5), (0, 0)):
        assert math.isclose(mcnemar_exact(b, c), stats.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0)
    # a large sample: the bootstrap interval meets the normal (Wald) interval of a paired difference,
    # se = sqrt(b + c - (b - c)^2 / n) / n, and scipy's own paired percentile bootstrap
    n, b, c = 400, 40, 20
    reference = [True] * b + [False] * c + [True] * 150 + [False] * (n - b - c - 150)
    other = [False] * b + [True] * c + [True] * 150 + [False] * (n - b - c - 150)
    found = paired_difference(reference, other, seed=1)
    se = math.sqrt(b + c - (b - c) ** 2 / n) / n
    wald = ((c - b) / n - 1.96 * se, (c - b) / n + 1.96 * se)
    assert all(abs(x - y) < 0.006 for x, y in zip(found.ci95, wald)), (found.ci95, wald)
    ref = stats.bootstrap(
        ([float(x) for x in reference], [float(x) for x in other]),
        lambda r, o: (o - r).mean(),
        paired=True,
        vectorized=False,
        n_resamples=4000,
        method="percentile",
        random_state=0,
    )
    assert all(abs(x - y) < 0.006 for x, y in zip(found.ci95, ref.confidence_interval)), ref.confidence_interval
    assert paired_difference(reference, other, seed=1) == found  # seeded: the same interval again
    with pytest.raises(ValueError):
        paired_difference([True], [True, False])


def test_split_refs_name_a_rendering(release: Path) -> None:
    ref = SplitRef.parse("tomforge_gen/test:second_person")
    assert (ref.config, ref.split, ref.rendering, str(ref), ref.stem) == (
        "tomforge_gen",
        "test",
        "second_person",
        "tomforge_gen/test:second_person",
        "test.second_person",
    )
    assert str(SplitRef.parse("tomforge_gen/test")) == "tomforge_gen/test"
    for bad in ("tomforge_gen/test:", "tomforge_gen:x", "test"):
        with pytest.raises(ReleaseReadError, match="CONFIG/SPLIT"):
            SplitRef.parse(bad)
    with pytest.raises(ReleaseReadError, match=r"no rows told in 'dialogue'.*second_person 8, third_person 8"):
        read_split(release, SplitRef.parse("tomforge_gen/test:dialogue"))
    assert verl_data_files("d", "tomforge_gen/train:second_person", "tomforge_gen/test")[0] == [
        str(Path("d") / "tomforge_gen" / "train.second_person.parquet")
    ]
    # the first N rows of each rendering are the same worlds (`--limit`), and only that rendering's rows
    firsts = {}
    for rendering in RENDERINGS:
        table = read_split(release, SplitRef("tomforge_gen", "test", rendering), limit=3)
        assert {json.loads(m)["rendering"] for m in table.column("meta").to_pylist()} == {rendering}
        firsts[rendering] = table.column("item_id").to_pylist()
    assert set(zip(firsts["third_person"], firsts["second_person"])) <= generator_pairs("test")


def test_tomforge_train_records_the_rendering(release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tomforge train --train CONFIG/SPLIT:RENDERING` trains on that rendering's rows and says so beside the
    checkpoint (the trainer itself replaced: what it is given is what is checked)."""
    from tomforge.rl import stage
    from tomforge.rl.trl_backend import TrlSettings

    given = {}
    monkeypatch.setattr("tomforge.rl.trl_backend.train_trl", lambda s, ds: given.update(rows=ds.to_list()) or {})
    stage.run_trl_here(
        TrlSettings(model="m", output_dir=str(tmp_path)), str(release), None, "tomforge_gen/train:third_person"
    )
    assert {json.loads(r["meta"])["rendering"] for r in given["rows"]} == {"third_person"}
    record = json.loads((tmp_path / "tomforge_training.json").read_text())
    assert (record["renderings"], record["rows"]) == (["third_person"], len(given["rows"])) == (["third_person"], 64)
