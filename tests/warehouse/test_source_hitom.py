"""HiToM adapter: own samples, real samples, and malformed inputs (rejects vs whole-file errors)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from tests.source_helpers import by_ref, read_all, source_error
from tomforge import schemas
from tomforge.warehouse.sources import get_adapter
from tomforge.warehouse.sources.hitom import ADAPTER
from tomforge.warehouse.sources.hitom_grammar import parse_choices, parse_question, parse_story

VALIDATOR = jsonschema.Draft202012Validator(schemas.record_schema())


@pytest.fixture()
def own(samples: Path) -> Path:
    return samples / "hitom"


@pytest.fixture()
def own_json_rows(own: Path) -> list[dict]:
    return json.loads((own / "Hi-ToM_data.json").read_text(encoding="utf-8"))["data"]


def write_rows(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "Hi-ToM_data.json"
    path.write_text(json.dumps({"data": rows}), encoding="utf-8")
    return path


def test_registry_and_static_facts() -> None:
    adapter = get_adapter("hitom")
    assert adapter is ADAPTER
    assert adapter.version.startswith("hitom@56dda76")
    assert adapter.license == "Apache-2.0"
    assert "Hi-ToM_data.json" in adapter.hub_patterns


def test_own_samples_load_completely(own: Path) -> None:
    records, rejects = read_all(ADAPTER, own)
    assert rejects == []
    assert len(records) == 30  # 20 JSON rows + 10 text files
    refs = [record["source_ref"] for record in records]
    assert sum(ref.startswith("Hi-ToM_data.json#") for ref in refs) == 20
    assert sum(ref.startswith("Hi-ToM_data/") and ref.endswith(".txt") for ref in refs) == 10
    assert Counter(record["question_type"] for record in records) == {
        "reality": 6,
        "first_order_belief": 6,
        "higher_order_belief": 18,
    }
    assert Counter(record["belief_order"] for record in records) == {0: 6, 1: 6, 2: 6, 3: 6, 4: 6}
    assert Counter(record["meta"]["prompting_type"] for record in records) == {"CoTP": 15, "VP": 15}
    for record in records:
        assert not list(VALIDATOR.iter_errors(record)), record["source_ref"]
        assert record["split"] == "unsplit" and record["answer_format"] == "multiple_choice"
        assert record["options"][record["answer_index"]] == record["answer"]
        assert len(record["perspective_chain"]) == record["belief_order"]
        assert record["context"].startswith("1 ")


def test_own_sample_fields(own: Path) -> None:
    records = by_ref(read_all(ADAPTER, own)[0])
    third = records["Hi-ToM_data.json#3"]
    assert third["question_type"] == "higher_order_belief" and third["belief_order"] == 3
    assert third["perspective_chain"] == ["Dara", "Kenji", "Tobias"]
    assert third["answer"] == "purple_jar" and len(third["options"]) == 15
    assert third["n_agents"] == 5 and third["n_events"] == 15
    assert third["meta"]["sample_id"] == 3 and third["meta"]["deception"] is False
    assert third["meta"]["choices"].startswith("A. white_tin, B. purple_jar")
    # false belief = differs from the same story's reality answer (second pass)
    assert records["Hi-ToM_data.json#0"]["is_false_belief"] is None
    assert records["Hi-ToM_data.json#1"]["is_false_belief"] is False
    assert records["Hi-ToM_data.json#3"]["is_false_belief"] is True
    vp = records["Hi-ToM_data.json#5"]
    assert vp["meta"]["prompting_type"] == "VP"
    assert vp["meta"]["instruction"].startswith("Read the story below")
    assert "Read the story" not in vp["context"]
    text = records["Hi-ToM_data/Tell/MC/length_1/sample_1/order_2.txt"]
    assert text["perspective_chain"] == ["Yusuf", "Ines"] and text["belief_order"] == 2
    assert text["meta"]["deception"] is True and text["meta"]["prompting_type"] == "VP"
    assert text["meta"]["note"].startswith("Assume the following")
    assert text["meta"]["instruction"].startswith("Read the story below")


def test_tree_path_meta_where_length_and_sample_differ(tmp_path: Path, own: Path) -> None:
    """story_length, sample, prompting style and deception come from the path; the own samples
    all sit in length_1/sample_1, so copy one file to paths where every number differs."""
    source = own / "Hi-ToM_data" / "Tell" / "MC" / "length_1" / "sample_1" / "order_2.txt"
    placed = (("Tell", "MC", 3, 7), ("No_Tell", "CoT", 4, 2))
    for tell, style, length, sample in placed:
        target = tmp_path / "Hi-ToM_data" / tell / style / f"length_{length}" / f"sample_{sample}" / "order_2.txt"
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    records, rejects = read_all(ADAPTER, tmp_path)
    assert not rejects and len(records) == 2
    got = {
        (r["meta"]["deception"], r["meta"]["prompting_type"], r["meta"]["story_length"], r["meta"]["sample"])
        for r in records
    }
    assert got == {(True, "VP", 3, 7), (False, "CoTP", 4, 2)}
    assert {r["belief_order"] for r in records} == {2}


def test_cotp_vp_and_text_tree_share_context_id(own: Path) -> None:
    records = by_ref(read_all(ADAPTER, own)[0])
    story_one = {records[f"Hi-ToM_data.json#{index}"]["context_id"] for index in range(10)}
    story_one.add(records["Hi-ToM_data/No_Tell/CoT/length_1/sample_1/order_4.txt"]["context_id"])
    story_two = {records[f"Hi-ToM_data.json#{index}"]["context_id"] for index in range(10, 20)}
    assert len(story_one) == 1 and len(story_two) == 1 and story_one != story_two


def test_ids_stable_and_unique(own: Path) -> None:
    first, second = read_all(ADAPTER, own)[0], read_all(ADAPTER, own)[0]
    assert [r["item_id"] for r in first] == [r["item_id"] for r in second]
    assert [r["content_hash"] for r in first] == [r["content_hash"] for r in second]
    assert len({r["item_id"] for r in first}) == len(first)


def test_single_file_roots(own: Path) -> None:
    records, rejects = read_all(ADAPTER, own / "Hi-ToM_data.json")
    assert len(records) == 20 and not rejects
    records, rejects = read_all(
        ADAPTER, own / "Hi-ToM_data" / "No_Tell" / "CoT" / "length_1" / "sample_1" / "order_3.txt"
    )
    assert not rejects and len(records) == 1
    assert records[0]["belief_order"] == 3 and records[0]["source_ref"] == "order_3.txt"
    assert records[0]["is_false_belief"] is None  # no order-0 answer to compare with
    records, rejects = read_all(ADAPTER, own / "Hi-ToM_data")  # the tree itself as root
    assert len(records) == 10 and not rejects


def test_a_folder_with_only_the_json_file_reads_like_the_file(tmp_path: Path, own: Path) -> None:
    """A folder without the text tree takes the column path (a JSON file on its own); the same rows in a
    folder with the tree take the row path with the tree's questions: both give the same JSON records."""
    shutil.copy(own / "Hi-ToM_data.json", tmp_path / "Hi-ToM_data.json")
    alone, rejects = read_all(ADAPTER, tmp_path)
    assert not rejects and len(alone) == 20 and ADAPTER.split_input(tmp_path) == tmp_path / "Hi-ToM_data.json"
    assert by_ref(alone) == by_ref(read_all(ADAPTER, tmp_path / "Hi-ToM_data.json")[0])
    beside_tree = {
        ref: r for ref, r in by_ref(read_all(ADAPTER, own)[0]).items() if ref.startswith("Hi-ToM_data.json#")
    }
    assert by_ref(alone) == beside_tree


def test_real_samples(real_samples: Path) -> None:
    records, rejects = read_all(ADAPTER, real_samples / "hitom")
    assert rejects == []
    refs = by_ref(records)
    assert sum(ref.startswith("Hi-ToM_data.json#") for ref in refs) == 25
    assert sum(ref.endswith(".txt") for ref in refs) == 10
    for record in records:
        assert not list(VALIDATOR.iter_errors(record)), record["source_ref"]
    # CoTP row 0 and VP row 10 tell the same story; so do JSON row 20 and the Tell/MC text files
    assert refs["Hi-ToM_data.json#0"]["context_id"] == refs["Hi-ToM_data.json#10"]["context_id"]
    tell = refs["Hi-ToM_data/Tell/MC/length_1/sample_1/order_0.txt"]
    assert refs["Hi-ToM_data.json#20"]["context_id"] == tell["context_id"]
    order_1 = refs["Hi-ToM_data/No_Tell/CoT/length_2/sample_3/order_1.txt"]
    order_4 = refs["Hi-ToM_data/No_Tell/CoT/length_2/sample_3/order_4.txt"]
    assert order_1["is_false_belief"] is False and order_4["is_false_belief"] is True
    assert (order_1["meta"]["story_length"], order_1["meta"]["sample"]) == (2, 3)  # from .../length_2/sample_3/...
    assert len(order_4["perspective_chain"]) == 4 and order_4["question_type"] == "higher_order_belief"


def test_malformed_rows_become_rejects(tmp_path: Path, own_json_rows: list[dict]) -> None:
    rows = [dict(row) for row in own_json_rows]
    del rows[2]["answer"]
    rows[3]["answer"] = "green_igloo"
    rows[4]["question_order"] = "4"
    rows[6]["choices"] = "purple_jar or white_sack"
    rows[7]["question_order"] = 3  # the question nests two agents
    rows[8] = ["not", "an", "object"]
    records, rejects = read_all(ADAPTER, write_rows(tmp_path, rows))
    assert len(records) + len(rejects) == 20 and len(rejects) == 6
    fields = {reject.record: (reject.field, reject.reason) for reject in rejects}
    assert fields["2"] == ("answer", "missing field")
    assert fields["3"][0] == "answer" and "not among the choices" in fields["3"][1]
    assert fields["4"][0] == "question_order" and "expected int" in fields["4"][1]
    assert fields["6"][0] == "choices"
    assert fields["7"][0] == "question_order"
    assert fields["8"][0] == "(record)"
    assert all(reject.file == "Hi-ToM_data.json" and reject.raw for reject in rejects)
    assert {reject.source_ref for reject in rejects} == {f"Hi-ToM_data.json#{i}" for i in (2, 3, 4, 6, 7, 8)}


def test_malformed_text_file_becomes_reject(tmp_path: Path, own: Path) -> None:
    tree = tmp_path / "Hi-ToM_data"
    shutil.copytree(own / "Hi-ToM_data", tree)
    bad = tree / "Tell" / "MC" / "length_1" / "sample_1" / "order_1.txt"
    bad.write_text("\n".join(line for line in bad.read_text().splitlines() if not line.startswith("Answer:")))
    records, rejects = read_all(ADAPTER, tmp_path)
    assert len(records) == 9 and len(rejects) == 1
    assert rejects[0].field == "answer" and rejects[0].file.endswith("order_1.txt")


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("Hi-ToM_data.json", b'{"data": [{"prompting_type": "CoTP", "story": "1 A', "truncated JSON"),
        ("Hi-ToM_data.json", b'{"data": []}'.replace(b"[]", b'["caf\xe9"]'), "not UTF-8"),
        ("Hi-ToM_data.json", b'{"rows": []}', '"data" list'),
        (
            "Hi-ToM_data.json",
            b'{"data": [{"story": "1 A\\udbff entered"}]}',
            "lone surrogate escape (not valid Unicode) at /data/0/story",
        ),
        ("hitom.csv", b"prompting_type,story\nCoTP,1 A entered\n", "not a HiToM file"),
        ("order_0.txt", b"prompting_type,story\nCoTP,1 A entered\n", "not a HiToM text file"),
    ],
)
def test_whole_file_problems_raise_source_error(tmp_path: Path, name: str, content: bytes, problem: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    source_error(ADAPTER, path, name, problem)


def test_missing_or_empty_root_raises(tmp_path: Path) -> None:
    source_error(ADAPTER, tmp_path / "nowhere", "nowhere", "not found")
    source_error(ADAPTER, tmp_path, "no Hi-ToM_data.json")


def test_parsers() -> None:
    assert parse_choices("A. red_box, B. blue_jar, C. green_tin") == ("red_box", "blue_jar", "green_tin")
    assert parse_question("Where is the fig really?").chain == ()
    assert parse_question("Where does Ana really think the fig is?").chain == ("Ana",)
    assert parse_question("Where does Ana think Bo thinks Cy thinks the fig is?").chain == ("Ana", "Bo", "Cy")
    story = parse_story("Do this.\n1 Ana and Bo entered the den.\n2 Bo exited the den.\n\n")
    assert (story.instruction, story.n_agents, story.n_events) == ("Do this.", 2, 2)
    assert story.context == "1 Ana and Bo entered the den.\n2 Bo exited the den."


def test_parse_story_strips_a_trailing_separator_and_keeps_it() -> None:
    story = parse_story("1 Ana and Bo entered the den.\n2 Bo exited the den.\n\n***")
    assert story.context == "1 Ana and Bo entered the den.\n2 Bo exited the den."
    assert (story.trailer, story.n_events, story.n_agents) == ("***", 2, 2)
    assert parse_story("1 Ana entered the den.\n\n").trailer is None
    assert parse_story("Do this.\n1 Ana entered the den.\n---\n=== \n").trailer == "---\n==="


@pytest.mark.parametrize(
    "story",
    [
        "1 Ana entered the den.\n***\n2 Bo exited the den.",  # a separator inside the story
        "1 Ana entered the den.\nBo exited the den.",  # an unnumbered sentence
        "1 Ana entered the den.\n\n*** the end",  # text after the separator
    ],
)
def test_an_unnumbered_line_inside_the_story_is_still_rejected(story: str) -> None:
    with pytest.raises(Exception, match="unnumbered line inside the story"):
        parse_story(story)


def separator_rows(own_json_rows: list[dict]) -> list[dict]:
    """Own rows where the CoTP stories of sample group 0-4 end with a blank line and '***' (as a
    few real stories do), plus one row with '***' inside its story (really broken)."""
    rows = [dict(row) for row in own_json_rows]
    for index in range(5):
        assert rows[index]["prompting_type"] == "CoTP"
        rows[index]["story"] = rows[index]["story"].rstrip("\n") + "\n\n***"
    lines = rows[6]["story"].split("\n")
    rows[6]["story"] = "\n".join([*lines[:3], "***", *lines[3:]])
    return rows


@pytest.mark.parametrize("path", ["rows", "columns"])
def test_stories_ending_with_a_separator_load_on_both_paths(
    tmp_path: Path, own_json_rows: list[dict], path: str
) -> None:
    from tomforge.warehouse.batch import expand

    file = write_rows(tmp_path, separator_rows(own_json_rows))
    produced = list(ADAPTER.read(file) if path == "rows" else expand(ADAPTER.read_columns(file)))
    records = by_ref([p for p in produced if isinstance(p, dict)])
    rejects = [p for p in produced if not isinstance(p, dict)]
    assert [(r.record, r.field) for r in rejects] == [("6", "story")]
    assert "unnumbered line inside the story: '***'" in rejects[0].reason
    assert len(records) == 19
    (tmp_path / "plain").mkdir()
    plain = by_ref(read_all(ADAPTER, write_rows(tmp_path / "plain", own_json_rows))[0])
    for index in range(5):
        ref = f"Hi-ToM_data.json#{index}"
        assert records[ref]["meta"]["story_trailer"] == "***"
        assert "***" not in records[ref]["context"]
        # the same story as without the separator: same context, same context_id, same parsed fields
        for field in ("context", "context_id", "n_events", "n_agents", "is_false_belief", "answer_index"):
            assert records[ref][field] == plain[ref][field], field
    assert all("story_trailer" not in records[f"Hi-ToM_data.json#{i}"]["meta"] for i in range(5, 20) if i != 6)


def test_a_text_file_whose_story_ends_with_a_separator_loads(tmp_path: Path, own: Path) -> None:
    tree = tmp_path / "Hi-ToM_data"
    shutil.copytree(own / "Hi-ToM_data", tree)
    file = tree / "Tell" / "MC" / "length_1" / "sample_1" / "order_1.txt"
    text = file.read_text(encoding="utf-8")
    file.write_text(text.replace("\nQuestion:", "\n\n***\nQuestion:", 1), encoding="utf-8")
    records, rejects = read_all(ADAPTER, tmp_path)
    assert rejects == [] and len(records) == 10
    record = by_ref(records)["Hi-ToM_data/Tell/MC/length_1/sample_1/order_1.txt"]
    assert record["meta"]["story_trailer"] == "***" and "***" not in record["context"]


REAL_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "real-data" / "hitom" / "Hi-ToM_data.json"


@pytest.mark.skipif(not REAL_DATA.is_file(), reason=f"the full HiToM release is not at {REAL_DATA}")
def test_the_whole_real_release_loads_on_both_paths() -> None:
    from tomforge.warehouse.load import info_of, stage

    expected = len(json.loads(REAL_DATA.read_text(encoding="utf-8"))["data"])  # 1,200 as published
    assert expected == 1200
    by_rows = stage(info_of(ADAPTER), ADAPTER.read(REAL_DATA), "in")
    by_columns = stage(info_of(ADAPTER), ADAPTER.read_columns(REAL_DATA), "in")
    for staged in (by_rows, by_columns):
        assert (staged.items.num_rows, staged.rejects.num_rows) == (expected, 0)
    assert by_columns.items.equals(by_rows.items)
    trailers = [m for m in by_rows.items.column("meta").to_pylist() if "story_trailer" in m]
    assert len(trailers) == 6  # rows 42, 60, 61, 62, 80 and 81 end with '\n\n***'
