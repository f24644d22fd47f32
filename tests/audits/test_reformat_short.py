"""Issue 36 on short templated stories (ToMi's shape: 5-8 numbered lines of 4-6 words, told from a few
skeletons, some lines without a final stop): a benchmark story with one line dropped, rewrapped, put after
its question as one paragraph is named by `tomforge audit` and `tomforge scan`;
other stories of the same skeletons (the names, things and one line changed) are not, and a skeleton that
several benchmark stories share pairs no train story with them as a structural twin.

The fixtures are this test's own stories, in ToMi's bAbI file format, built from its own word lists. The
reference is the plant: which row holds which story in which form is decided here before any tool runs."""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from tests.reformat_data import verl_row, write_parquet
from tomforge.audits.scan import run_scan
from tomforge.flows.cli import app
from tomforge.warehouse.ingest import ingest

NAMES = (
    "Odile Piran Sunniva Tamsin Ulric Wendeline Yorick Zillah Bertil Cosima Dagny Evander Fenna Gideon Halvard Ingrid "
    "Jory Kestrel Linnea Magnus Nerys Osric Perpetua Quillon"
).split()
ROOMS = (
    "boot_room sewing_room orangery scriptorium granary chapel dovecote buttery solar undercroft stillroom "
    "gatehouse tack_room smokehouse"
).split()
FRUIT = (
    "quince medlar damson loquat sloe rowanberry bilberry greengage gooseberry mulberry elderberry cloudberry "
    "persimmon tamarind jujube feijoa rambutan salak longan pomelo"
).split()
BOXES = [
    f"{c}_{k}"
    for c in ("teal", "ochre", "mauve", "umber", "cerise", "slate")
    for k in ("hamper", "coffer", "satchel", "urn", "casket", "pannier")
]
HELD_OUT = "source = 'tomi'"
LEAK_KINDS = ("exact", "near_duplicate", "contained", "sentences", "structural")

# four skeletons; {a} {b} {c} agents, {r} a room, {f} {g} fruit, {x} {y} containers. Lines without a stop as
# ToMi has them ("... likes the quince"). The skeletons have 4 or 5 distinct lines once names are abstracted.
SKELETONS = (
    (
        "{a} entered the {r}.",
        "{b} entered the {r}.",
        "The {f} is in the {x}.",
        "{a} moved the {f} to the {y}.",
        "{b} exited the {r}.",
        "{c} likes the {g}",
    ),
    (
        "{a} entered the {r}.",
        "{b} entered the {r}.",
        "{b} likes the {g}",
        "The {f} is in the {x}.",
        "{b} exited the {r}.",
        "{a} moved the {f} to the {y}.",
        "{a} exited the {r}.",
    ),
    (
        "{a} entered the {r}.",
        "{b} entered the {r}.",
        "The {f} is in the {x}.",
        "{a} exited the {r}.",
        "{b} dislikes the {g}",
        "{b} moved the {f} to the {y}.",
    ),
    (
        "{a} entered the {r}.",
        "{b} entered the {r}.",
        "The {f} is in the {x}.",
        "{b} exited the {r}.",
        "{a} moved the {f} to the {y}.",
    ),
)


@dataclass
class Story:
    lines: list[str]
    question: str
    answer: str

    @property
    def text(self) -> str:
        return "\n".join(f"{i} {line}" for i, line in enumerate(self.lines, 1))


def story(skeleton: int, rng: random.Random) -> Story:
    a, b, c = rng.sample(NAMES, 3)
    x, y = rng.sample(BOXES, 2)
    f, g = rng.sample(FRUIT, 2)
    slots = {"a": a, "b": b, "c": c, "r": rng.choice(ROOMS), "f": f, "g": g, "x": x, "y": y}
    lines = [line.format(**slots) for line in SKELETONS[skeleton]]
    return Story(lines, f"Where will {a} look for the {f}?", y)


def draw(n: int, seed: int, taken: set[str]) -> list[Story]:
    """`n` stories, every skeleton in turn, none with a text in `taken` (which it extends)."""
    rng, out = random.Random(seed), []
    while len(out) < n:
        s = story(len(out) % len(SKELETONS), rng)
        if s.text not in taken:
            taken.add(s.text)
            out.append(s)
    return out


def write_tomi(path: Path, stories: list[Story]) -> Path:
    """A ToMi test file: each example its numbered lines, then `N question<TAB>answer<TAB>1`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(f"{s.text}\n{len(s.lines) + 1} {s.question}\t{s.answer}\t1\n" for s in stories), encoding="utf-8"
    )
    return path.parent


def _run_together(s: Story) -> str:
    return " ".join(s.lines)


def line_dropped(s: Story) -> str:
    """The line moving the object dropped (the rarest sentence once names are abstracted), numbers dropped."""
    return "\n".join(line for line in s.lines if " moved the " not in line)


def rewrapped(s: Story) -> str:
    return "\n".join(textwrap.wrap(_run_together(s), 60))


def question_first(s: Story) -> str:
    return f"Question: {s.question}\nContext: {_run_together(s)}"


FORMS = {f.__name__: f for f in (line_dropped, rewrapped, question_first)}


def told_differently(s: Story, rng: random.Random) -> Story:
    """Another story of the same skeleton: every agent renamed, the first container and the liked or disliked
    thing changed: with names abstracted it holds all but one of a 4-sentence story's sentences (as an
    independent ToMi story can: bench/reformat.py's other half holds such stories)."""
    agents = [w for w in NAMES if any(line.startswith(w) or f" {w} " in line for line in s.lines)]
    others = rng.sample([n for n in NAMES if n not in agents], len(agents))
    lines = []
    for line in s.lines:
        for old, new in zip(agents, others):
            line = line.replace(old, new)
        if line.startswith("The "):
            line = line.rsplit(" ", 1)[0] + " " + next(b for b in BOXES if b not in s.text) + "."
        elif "likes the " in line:
            line = line.rsplit(" ", 1)[0] + " " + next(f for f in FRUIT if f not in s.text)
        lines.append(line)
    return Story(lines, s.question, s.answer)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("short")
    taken: set[str] = set()
    benchmark = draw(24, seed=3, taken=taken)  # 6 per skeleton: every skeleton shared by several stories
    warehouse = folder / "w.duckdb"
    ingest(warehouse, "tomi", write_tomi(folder / "tomi" / "fb_all_test.txt", benchmark))
    rng = random.Random(4)
    distractors = draw(60, seed=5, taken=taken) + [told_differently(s, rng) for s in benchmark]
    rows = []
    for s in distractors:
        for text in (s.text, "\n".join(s.lines), rewrapped(s), question_first(s)):
            user = text if text.startswith("Question:") else f"Story: {text}\nQuestion: {s.question}"
            rows.append(verl_row(user, s.answer, len(rows)))
    plants: dict[int, tuple[str, Story]] = {}
    for i, (form, make) in enumerate(FORMS.items()):
        for s in benchmark[4 * i : 4 * i + 4]:  # four stories per form, one of each skeleton
            text = make(s)
            plants[len(rows)] = (form, s)
            user = text if form == "question_first" else f"Story: {text}\nQuestion: {s.question}"
            rows.append(verl_row(user, s.answer, len(rows)))
    ingest(warehouse, "rlfiles", write_parquet(folder / "rl" / "train.parquet", rows))
    return folder, warehouse, plants


@pytest.fixture(scope="module")
def audited(world):
    folder, warehouse, _ = world
    args = ["audit", "-w", str(warehouse), "--train", "source = 'rlfiles'", "--heldout", HELD_OUT]
    result = CliRunner().invoke(app, [*args, "--out", str(folder / "audit")])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pairs = con.sql("SELECT kind, a_context_id, b_context_id FROM audit_overlap_pairs WHERE scope = 'cross'").pl()
        row_context = dict(con.execute("SELECT source_ref, context_id FROM items WHERE source = 'rlfiles'").fetchall())
        story_context = dict(con.execute(f"SELECT context, context_id FROM items_full WHERE {HELD_OUT}").fetchall())
    return pairs, row_context, story_context


@pytest.fixture(scope="module")
def scanned(world):
    folder, warehouse, _ = world
    return run_scan(warehouse, [str(folder / "rl")], folder / "scan", benchmark_where=HELD_OUT).hits


@pytest.mark.parametrize("form", sorted(FORMS))
def test_audit_names_each_short_story_in_every_form(audited, world, form: str) -> None:
    pairs, row_context, story_context = audited
    for row, (plant_form, s) in world[2].items():
        if plant_form == form:
            train_id, held_id = row_context[f"train.parquet#row{row}"], story_context[s.text]
            found = pairs.filter((pl.col("a_context_id") == train_id) & (pl.col("b_context_id") == held_id))
            assert "sentences" in found["kind"].to_list(), (form, s.text, found)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_scan_names_each_short_story_in_every_form(scanned, world, form: str) -> None:
    folder, warehouse, plants = world
    with duckdb.connect(str(warehouse), read_only=True) as con:
        held = dict(
            con.execute(f"SELECT context, min(context_id) FROM items_full WHERE {HELD_OUT} GROUP BY 1").fetchall()
        )
    for row, (plant_form, s) in plants.items():
        if plant_form == form:
            hit = scanned.filter(pl.col("doc_id") == f"train.parquet:{row}")
            assert held[s.text] in hit["context_id"].to_list(), (form, s.text, hit)


def test_no_other_story_of_the_same_skeletons_is_paired_by_the_audit(audited, world) -> None:
    """Other stories of the benchmark's skeletons (each skeleton held by 6 benchmark stories), and each
    benchmark story with its agents renamed and one line told differently: no pair of any kind, the structural
    twin included (a skeleton several benchmark stories share names none of them)."""
    pairs, row_context, _ = audited
    planted = {row_context[f"train.parquet#row{row}"] for row in world[2]}
    stray = pairs.filter(pl.col("kind").is_in(LEAK_KINDS) & ~pl.col("a_context_id").is_in(list(planted)))
    assert stray.height == 0, stray.group_by("kind").len()


def test_no_other_story_of_the_same_skeletons_is_named_by_the_scan(scanned, world) -> None:
    planted = {f"train.parquet:{row}" for row in world[2]}
    stray = scanned.filter(~pl.col("doc_id").is_in(list(planted)))
    assert stray.height == 0, stray.select("doc_id", "kind", "matched_sentences", "sentence_coverage")
