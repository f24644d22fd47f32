"""Own fixtures for the re-formatting tests: HiToM-like numbered stories and ExploreToM-like
prose stories drawn from small template banks (written for these tests, in the published file
formats), the re-formattings a training pipeline makes, and an RL file (verl parquet rows, a
TRL jsonl file) holding planted re-formatted stories among templated distractors.

The reference is the plant itself: which row holds which story is decided here, before any
tool runs; distractors are other stories from the same templates (they share sentences with
the benchmark by construction) and must not be named."""

from __future__ import annotations

import csv
import json
import random
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FIRST = (
    "Olive Jasper Wren Felix Ivy Rufus Hazel Milo Clara Otto Nina Silas Greta Hugo Della Amos Iris Leon Tess Abel "
    "Maren Cyrus Edie Ansel Flora Boris Lena Quinn Petra Dario Vera Emil Rhea Tobin Una Caspar Lark Orin"
).split()
ROOMS = (
    "scullery attic cellar study porch hallway sunroom workshop larder loft nursery parlor gallery pantry_room "
    "boiler_room mud_room"
).split()
THINGS = (
    "apple pear plum melon onion potato carrot peach lemon radish turnip fig mango kiwi leek celery beet "
    "cherry apricot walnut almond raisin lime olive"
).split()
CONTAINERS = [
    f"{c}_{k}"
    for c in ("red", "blue", "green", "amber", "grey")
    for k in ("box", "crate", "tub", "drawer", "sack", "basket", "jar", "chest", "bin", "bucket")
]
PLACES = (
    "train station",
    "school library",
    "art studio",
    "boat house",
    "town hall",
    "bakery",
    "garden shed",
    "music room",
    "post office",
    "chemistry lab",
    "flower shop",
    "bus depot",
    "tea room",
    "fire station",
    "craft fair",
    "ferry terminal",
)
OBJECTS = tuple(
    f"{a} {b}"
    for a in (
        "copper leather glass wool brass paper silk bone clay velvet iron jade cork tin amber ivory pewter linen".split()
    )
    for b in (
        "kettle journal marble scarf compass whistle thimble locket ladle spoon mask key bell comb mirror fan".split()
    )
)
HOLDERS = tuple(
    f"{a} {b}"
    for a in "oak canvas tin wicker cedar pine straw steel felt birch maple rattan".split()
    for b in "cabinet bag box basket chest crate drawer case trunk satchel hamper locker".split()
)
TWO_WORD = ("Mary Ann", "Jean Luc", "Rosa Lee", "Billy Joe", "Anna Mae", "Lou Ellen", "Bobby Ray", "Sarah Jane")
HYPHENATED = (
    "Anne-Marie",
    "Jean-Paul",
    "Mary-Kate",
    "Hans-Peter",
    "Eva-Lotte",
    "Karl-Heinz",
    "Lise-Lotte",
    "Ole-Bjorn",
)


@dataclass
class Story:
    """One fixture story: its text as the source publishes it, its agents, one question and answer."""

    text: str
    agents: list[str]
    question: str
    answer: str
    choices: list[str] = field(default_factory=list)
    plot: str = ""  # the text without its names: two stories of one plot are one story renamed


def hitom_story(rng: random.Random) -> Story:
    """A numbered story in HiToM's line grammar: agents enter a room, a thing is moved between
    containers, agents leave, likes and dislikes; told in one to three rooms (HiToM's lengths)."""
    agents = rng.sample(FIRST, rng.randint(3, 5))
    lines: list[str] = []
    for room in rng.sample(ROOMS, rng.randint(1, 3)):
        thing = rng.choice(THINGS)
        where = rng.sample(CONTAINERS, 5)
        lines += [
            f"{', '.join(agents[:-1])} and {agents[-1]} entered the {room}.",
            f"The {thing} is in the {where[0]}.",
        ]
        place = where[0]
        for i, agent in enumerate(agents):
            if rng.random() < 0.6:
                place = where[1 + i % 4]
                lines.append(f"{agent} moved the {thing} to the {place}.")
            else:
                lines.append(f"{agent} made no movements and stayed in the {room} for 1 minute.")
            if rng.random() < 0.5:
                lines.append(f"{rng.choice(agents)} {rng.choice(['likes', 'dislikes'])} the {rng.choice(THINGS)}.")
            lines.append(f"{agent} exited the {room}.")
    text = "\n".join(f"{n} {line}" for n, line in enumerate(lines, 1))
    choices = sorted(set(where))
    return Story(text, agents, f"Where is the {thing} really?", place, choices, _plot(text, agents))


def _plot(text: str, agents: list[str]) -> str:
    return re.sub(r"\b(" + "|".join(agents) + r")\b", "X", text)


def prose_story(rng: random.Random) -> Story:
    """A story in the plain prose of ExploreToM's `story_structure` (sentences of a small template
    bank with places, objects and containers filled in)."""
    a, b, c = rng.sample(FIRST, 3)
    place = rng.choice(PLACES)
    obj = rng.choice(OBJECTS)
    first, second, third = rng.sample(HOLDERS, 3)
    sentences = [f"{a} entered the {place}.", f"The {obj} is in the {first}, which is located in the {place}."]
    options = [
        f"{a} moved the {obj} to the {second}, which is also located in the {place}.",
        f"While this action was happening, {b} witnessed this action in secret (and only this action).",
        f"{b} entered the {place}.",
        f"{a} left the {place}.",
        f"{b} moved the {obj} to the {third}, which is also located in the {place}.",
        f"{c} entered the {place} and looked around for a while.",
        f"{b} told {c} privately that the {obj} is in the {third}.",
        f"{c} left the {place}.",
        f"{a} entered the {place} again and checked the {second}.",
    ]
    keep = sorted(rng.sample(range(len(options)), rng.randint(6, 8)))
    sentences += [options[i] for i in keep]
    text = " ".join(sentences)
    return Story(
        text, [a, b, c], f"In which container was the {obj} at the beginning?", first, plot=_plot(text, [a, b, c])
    )


def draw(kind: str, n: int, seed: int, exclude: list[Story] = ()) -> list[Story]:  # type: ignore[assignment]
    """`n` stories of one kind (`hitom` or `prose`) of distinct plots, none the plot of a story in
    `exclude` (a story of the same plot with other names is that story renamed, not a distractor)."""
    rng = random.Random(seed)
    make = hitom_story if kind == "hitom" else prose_story
    taken = {s.plot for s in exclude}
    out: dict[str, Story] = {}
    while len(out) < n:
        story = make(rng)
        if story.plot not in taken:
            out.setdefault(story.plot, story)
    return list(out.values())


# ---- re-formattings (each a function of the story; lines are HiToM's, sentences the prose's)


def _units(story: Story) -> list[str]:
    """The story's lines without their numbers (HiToM) or its sentences (prose)."""
    if re.match(r"\d+ ", story.text):
        return [re.sub(r"^\d+ ", "", line) for line in story.text.splitlines()]
    return re.split(r"(?<=\.) (?=[A-Z])", story.text)


def _rename(story: Story, names: tuple[str, ...]) -> str:
    mapping = dict(zip(story.agents, names))
    return re.sub(r"\b(" + "|".join(story.agents) + r")\b", lambda m: mapping[m.group(1)], story.text)


def numbering_dropped(story: Story) -> str:
    return "\n".join(_units(story))


def html_paragraphs(story: Story) -> str:
    return "<div class='story'>" + "".join(f"<p>{u.replace(' ', '&nbsp;', 1)}</p>" for u in _units(story)) + "</div>"


def chat_template(story: Story) -> str:
    body = "\n".join(_units(story))
    return (
        "<|im_start|>system\nYou answer questions about stories.<|im_end|>\n<|im_start|>user\n"
        f"Story: {body}\nQuestion: {story.question}<|im_end|>\n<|im_start|>assistant\n"
    )


def swapped_renumbered(story: Story) -> str:
    units = _units(story)
    i = len(units) // 2
    units[i], units[i + 1] = units[i + 1], units[i]
    return "\n".join(f"{n} {u}" for n, u in enumerate(units, 1))


def one_dropped(story: Story) -> str:
    units = _units(story)
    del units[len(units) // 2]
    return "\n".join(units)


def two_word_names(story: Story) -> str:
    return _rename(story, TWO_WORD)


def hyphenated_names(story: Story) -> str:
    return _rename(story, HYPHENATED)


def numbered_list(story: Story) -> str:
    return "\n".join(f"{n}. {u}" for n, u in enumerate(_units(story), 1))


def rewrapped(story: Story) -> str:
    return "\n".join(textwrap.wrap(" ".join(_units(story)), 41))


FORMS = {
    f.__name__: f
    for f in (
        numbering_dropped,
        html_paragraphs,
        chat_template,
        swapped_renumbered,
        one_dropped,
        two_word_names,
        hyphenated_names,
        numbered_list,
        rewrapped,
    )
}


# ---- files in the published formats


def write_hitom_json(path: Path, stories: list[Story]) -> Path:
    """A Hi-ToM_data.json of these stories (one order-0 question each)."""
    rows = []
    for i, s in enumerate(stories):
        letters = ", ".join(f"{chr(65 + k)}. {c}" for k, c in enumerate(s.choices))
        rows.append(
            {
                "prompting_type": "CoTP",
                "deception": False,
                "story_length": 1,
                "question_order": 0,
                "sample_id": i,
                "story": s.text,
                "question": s.question,
                "choices": letters,
                "answer": s.answer,
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"data": rows}), encoding="utf-8")
    return path


EXPLORETOM_COLUMNS = (
    "story_structure,infilled_story,question,expected_answer,qprop=params,qprop=nth_order,"
    "qprop=non_unique_mental_state,sprop=is_false_belief_story_1st,sprop=is_false_belief_story_1st_and_2nd,"
    "sprop=story_accuracy_1st_raw,sprop=story_accuracy_1st_infilled,sprop=global_idx,param=story_type,"
    "param=num_stories_total,param=max_sentences,param=num_people,param=num_moves,param=num_rooms"
).split(",")


def write_exploretom_csv(path: Path, stories: list[Story]) -> Path:
    """An ExploreToM CSV of these stories (one memory question each)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, EXPLORETOM_COLUMNS)
        writer.writeheader()
        for i, s in enumerate(stories):
            obj = s.question.split("was the ")[1].split(" at the")[0]
            writer.writerow(
                {
                    "story_structure": s.text,
                    "infilled_story": s.text,
                    "question": s.question,
                    "expected_answer": s.answer,
                    "qprop=params": f"(None, '{obj}', 'memory-container_location')",
                    "qprop=nth_order": "-1",
                    "qprop=non_unique_mental_state": "True",
                    "sprop=is_false_belief_story_1st": "False",
                    "sprop=is_false_belief_story_1st_and_2nd": "False",
                    "sprop=story_accuracy_1st_raw": "1.0",
                    "sprop=story_accuracy_1st_infilled": "1.0",
                    "sprop=global_idx": str(i),
                    "param=story_type": "tomi+object-state+asymmetric",
                    "param=num_stories_total": "10",
                    "param=max_sentences": "15",
                    "param=num_people": "3",
                    "param=num_moves": "2",
                    "param=num_rooms": "1",
                }
            )
    return path


@dataclass
class Plant:
    row: int  # row of the RL file
    form: str
    kind: str  # hitom | prose
    story: Story


def verl_row(user: str, truth: str, index: int) -> dict:
    return {
        "data_source": "someone/tom-rl",
        "ability": "tom",
        "extra_info": {"index": index},
        "prompt": [{"role": "system", "content": "Think, then answer."}, {"role": "user", "content": user}],
        "reward_model": {"style": "rule", "ground_truth": truth},
    }


def rl_rows(
    benchmark: dict[str, list[Story]], distractors: list[Story], seed: int = 5
) -> tuple[list[dict], list[Plant]]:
    """verl rows: every distractor as "Story: ... Question: ...", and one planted row per form and
    story kind (each a different benchmark story), at seeded places."""
    rng = random.Random(seed)
    rows = [verl_row(f"Story: {s.text}\nQuestion: {s.question}", s.answer, i) for i, s in enumerate(distractors)]
    plants: list[Plant] = []
    for kind, stories in sorted(benchmark.items()):
        for story, (form, make) in zip(stories, FORMS.items()):
            text = make(story)
            user = text if form == "chat_template" else f"Story: {text}\nQuestion: {story.question}"
            row = rng.randrange(len(rows) + 1)
            for p in plants:
                p.row += p.row >= row
            rows.insert(row, verl_row(user, story.answer, row))
            plants.append(Plant(row, form, kind, story))
    for i, r in enumerate(rows):
        r["extra_info"] = {"index": i}
    return rows, plants


def write_parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
