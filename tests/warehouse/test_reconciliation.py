"""`read` is counted by each adapter's own simple pass over the raw input (`count_input`), apart from
its parser: the two must agree on well-formed and malformed inputs alike, since a load where they
do not is refused (exit 3). The numbers below are worked out from the sample files by hand."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.warehouse.test_batch import hitom_with_problems
from tomforge.warehouse.sources import SOURCE_NAMES, get_adapter

# Questions in each own sample, by hand: HiToM 20 JSON rows + 10 text files; ExploreToM 28 CSV rows;
# FANToM 4 sets of 1 fact + 3 belief + 1 list + 2 binary + 1 list + 2 binary questions, less one list
# question in the fourth set (37); OpenToM 3 + 6 + 6 + 12 + 6 + 18 + 18; ToMi 12 examples per file;
# BigToM 5 rows x 25 derived items; RL files 12 + 6 parquet rows and 3 JSON lines.
OWN_SAMPLES = {"hitom": 30, "exploretom": 28, "fantom": 37, "opentom": 69, "tomi": 24, "bigtom": 125, "rlfiles": 21}


def produced(source: str, root: Path) -> int:
    return sum(1 for _ in get_adapter(source).read(root))


@pytest.mark.parametrize("source", SOURCE_NAMES)
def test_count_input_of_the_own_samples(source: str, samples: Path) -> None:
    assert (
        get_adapter(source).count_input(samples / source) == OWN_SAMPLES[source] == produced(source, samples / source)
    )


@pytest.mark.parametrize("source", ["hitom", "exploretom", "opentom", "tomi", "bigtom"])
def test_count_input_of_the_real_samples(source: str, real_samples: Path) -> None:
    root = real_samples / source
    assert get_adapter(source).count_input(root) == produced(source, root)


def malformed(source: str, samples: Path, folder: Path) -> Path:
    """A copy of the own sample of `source` with records the parser rejects (or reads unusually)."""
    if source == "hitom":
        return hitom_with_problems(samples, folder)
    if source == "exploretom":
        text = (samples / "exploretom" / "exploretom-sample.csv").read_text(encoding="utf-8")
        rows = list(csv.reader(io.StringIO(text, newline="")))
        rows[2][rows[0].index("question")] = ""  # a row without its question
        rows[3] = rows[3][:-2]  # a row short of its last fields
        rows[5] = [""] * len(rows[0])  # a row of empty cells (a blank row: not a record)
        rows.insert(7, [])  # a blank line
        path = folder / "data.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerows(rows)
        return path
    if source == "fantom":
        sets = json.loads((samples / "fantom" / "fantom_v1.json").read_text(encoding="utf-8"))
        sets[1]["beliefQAs"] = "not a list"
        sets += [["not", "a", "set"], {"set_id": "empty"}]  # one reject each
        path = folder / "fantom_v1.json"
        path.write_text(json.dumps(sets), encoding="utf-8")
        return path
    if source == "opentom":
        shutil.copytree(samples / "opentom" / "opentom_data", folder / "opentom_data")
        path = folder / "opentom_data" / "attitude.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data[next(iter(data))] = {"question": "not in a list"}
        data["99999999"] = [{"question": "a story that does not exist?", "answer": "x"}]
        path.write_text(json.dumps(data), encoding="utf-8")
        return folder
    if source == "tomi":
        for suffix in (".txt", ".trace"):
            shutil.copy(samples / "tomi" / f"tomi_sample_train{suffix}", folder / f"tomi_sample_train{suffix}")
        story = folder / "tomi_sample_train.txt"
        lines = story.read_text(encoding="utf-8").splitlines()
        lines[6] = lines[6].split("\t")[0]  # a question without its answer
        story.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the last example loses its question
        return folder
    if source == "rlfiles":
        shutil.copytree(samples / "rlfiles", folder / "rlfiles")
        with (folder / "rlfiles" / "trl.jsonl").open("a", encoding="utf-8") as handle:
            handle.write('{"prompt": null, "answer": "x"}\n\n{"prompt": "cut off\n[1, 2]\n')  # 3 rejects, 1 blank
        return folder / "rlfiles"
    lines = (samples / "bigtom" / "bigtom-sample.csv").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].rsplit(";", 1)[0]
    path = folder / "bigtom.csv"
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("source", SOURCE_NAMES)
def test_count_input_agrees_with_the_parser_on_malformed_inputs(source: str, samples: Path, tmp_path: Path) -> None:
    root = malformed(source, samples, tmp_path)
    records = list(get_adapter(source).read(root))
    assert any(not isinstance(record, dict) for record in records), "the fixture has rejects"
    assert get_adapter(source).count_input(root) == len(records)
