"""The RL files' row reader and counter part by part, on small files written here (issue 38: mutmut over
`warehouse/sources/rl_rows.py`, which two independent checks planted bugs in). Every expected row, count,
split and message is worked out by hand from the planted file, never read back from the reader."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tomforge.warehouse.sources import rl_rows
from tomforge.warehouse.sources.base import SourceError
from tomforge.warehouse.sources.rl_rows import (
    BadRow,
    SplitChoice,
    count_rows,
    input_files,
    name_parts,
    read_rows,
    split_choice,
    split_of,
)

SUFFIX_LIST = ".parquet, .jsonl, .json, .arrow"


def _orjson_error(data: bytes) -> str:
    """orjson's own message for `data`: the reference the reader's reasons quote."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return exc.msg
    raise AssertionError(f"{data!r} parses")


def _touch(path: Path, text: str = "{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _message(call, *args) -> str:
    with pytest.raises(SourceError) as caught:
        call(*args)
    return str(caught.value)


def test_the_module_constants() -> None:
    assert rl_rows.SUFFIXES == (".parquet", ".jsonl", ".json", ".arrow")
    assert rl_rows.BOOKKEEPING == {"dataset_info.json", "dataset_infos.json", "state.json", "dataset_dict.json"}
    assert rl_rows.BATCH_ROWS == 1024
    assert rl_rows.SPLIT_WORDS == {"train", "test", "validation", "valid", "val", "dev", "eval", "evaluation"}


def test_input_files_of_a_missing_path_and_a_wrong_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert _message(input_files, missing) == f"{missing}: path not found"
    text = _touch(tmp_path / "rows.txt")
    assert _message(input_files, text) == f"{text}: not an RL data file: expected one of {SUFFIX_LIST}"
    one = _touch(tmp_path / "rows.jsonl")
    assert input_files(one) == [one]


def test_input_files_of_a_folder_sorted_without_bookkeeping_or_hidden_parts(tmp_path: Path) -> None:
    root = tmp_path / ".cache" / "data"  # the root itself may sit in a hidden folder
    wanted = [
        _touch(root / "a" / "z.jsonl"),
        _touch(root / "b.parquet"),
        _touch(root / "c.arrow"),
        _touch(root / "train" / "d.json"),
    ]
    for name in ("state.json", "dataset_info.json", "dataset_infos.json", "dataset_dict.json", "notes.txt"):
        _touch(root / name)
    _touch(root / ".git" / "x.jsonl")
    _touch(root / "a" / ".hidden.jsonl")
    (root / "folder.json").mkdir()  # a folder named like a data file is no file
    assert input_files(root) == wanted


def test_input_files_of_a_folder_without_data(tmp_path: Path) -> None:
    _touch(tmp_path / "state.json")
    _touch(tmp_path / "readme.md")
    assert _message(input_files, tmp_path) == f"{tmp_path}: no {SUFFIX_LIST} files in the folder"


def test_name_parts_split_on_separators_and_lower_case() -> None:
    assert name_parts("ToM_test.v2") == ["tom", "test", "v2"]
    assert name_parts("__My-Dev  set/Eval\tX") == ["my", "dev", "set", "eval", "x"]
    assert name_parts("") == []


def test_split_words_each_once_in_order_and_only_whole_parts() -> None:
    assert rl_rows._split_words("test_train_test") == ["test", "train"]
    assert rl_rows._split_words("latest-contest-device") == []
    assert rl_rows._split_words("VALID") == ["valid"]


def _arrow_stream(path: Path, rows: list[dict], batches: int = 1) -> Path:
    table = pa.Table.from_pylist(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        size = max(1, len(rows) // batches)
        for batch in table.to_batches(max_chunksize=size):
            writer.write_batch(batch)
    return path


def test_split_from_a_datasets_state_file(tmp_path: Path) -> None:
    shard = _arrow_stream(tmp_path / "x" / "data-00000-of-00001.arrow", [{"a": 1}])
    _touch(shard.parent / "state.json", json.dumps({"_split": "holdout"}))
    assert split_choice(shard) == SplitChoice("holdout", "from the datasets folder's state.json")
    assert split_of(shard) == "holdout"


def test_a_state_file_is_read_only_for_arrow_files(tmp_path: Path) -> None:
    rows = _touch(tmp_path / "x" / "rows.jsonl")
    _touch(tmp_path / "x" / "state.json", json.dumps({"_split": "holdout"}))
    assert split_choice(rows) == SplitChoice(None, "no train/test/validation/dev part in the name")


@pytest.mark.parametrize("state", ['{"_split": ""}', '{"_split": 3}', "{not json", "{}"])
def test_a_state_file_without_a_split_falls_back_to_the_dataset_dicts_folder(tmp_path: Path, state: str) -> None:
    shard = _arrow_stream(tmp_path / "dd" / "heldout" / "data-00000-of-00001.arrow", [{"a": 1}])
    _touch(shard.parent / "state.json", state)
    _touch(tmp_path / "dd" / "dataset_dict.json", "{}")
    assert split_choice(shard) == SplitChoice("heldout", "from the DatasetDict's folder")


def test_a_state_file_without_a_split_or_a_dataset_dict_reads_the_shard_name(tmp_path: Path) -> None:
    shard = _arrow_stream(tmp_path / "heldout" / "validation-00001-of-00002.arrow", [{"a": 1}])
    _touch(shard.parent / "state.json", "{}")
    assert split_choice(shard) == SplitChoice("validation", "from the Hub shard name")


@pytest.mark.parametrize(
    ("name", "split"),
    [("train-00000-of-00002.parquet", "train"), ("my_split.v1-00012-of-00100.jsonl", "my_split.v1")],
)
def test_a_hub_shard_name(tmp_path: Path, name: str, split: str) -> None:
    assert split_choice(tmp_path / name) == SplitChoice(split, "from the Hub shard name")


def test_a_shard_name_needs_five_digits_and_a_letter_first(tmp_path: Path) -> None:
    assert split_choice(tmp_path / "train-0000-of-00002.parquet") == SplitChoice("train", "from the name: 'train'")
    assert split_choice(tmp_path / "1x-00000-of-00002.parquet") == SplitChoice(
        None, "no train/test/validation/dev part in the name"
    )


def test_a_split_word_in_the_file_name(tmp_path: Path) -> None:
    assert split_choice(tmp_path / "ToM_test_HiExTi_hint.parquet") == SplitChoice("test", "from the name: 'test'")
    assert split_choice(tmp_path / "my-dev-set.parquet") == SplitChoice("dev", "from the name: 'dev'")
    assert split_choice(tmp_path / "train_test_mix.jsonl") == SplitChoice(None, "the name says both train and test")
    # a suffix is not part of the name; a name without one is read whole
    assert split_choice(Path("rows.eval")) == SplitChoice(None, "no train/test/validation/dev part in the name")
    assert split_choice(Path("test")) == SplitChoice("test", "from the name: 'test'")


def test_folders_under_the_root_nearest_first(tmp_path: Path) -> None:
    root = tmp_path / "test_runs"  # the root's own name is not read
    path = root / "train_set" / "dev-part" / "rows.jsonl"
    assert split_choice(path, root) == SplitChoice("dev", "from the folder 'dev-part': 'dev'")
    two = root / "train_and_test" / "rows.jsonl"
    assert split_choice(two, root) == SplitChoice(None, "the folder 'train_and_test' says both train and test")
    far = root / "eval_set" / "misc" / "rows.jsonl"
    assert split_choice(far, root) == SplitChoice("eval", "from the folder 'eval_set': 'eval'")
    # a file named on the command line is its own root: no folder above it is read
    assert split_choice(path, path) == SplitChoice(None, "no train/test/validation/dev part in the name")
    # a root the file is not under gives no folders either
    assert split_choice(path, tmp_path / "other") == SplitChoice(None, "no train/test/validation/dev part in the name")


def test_a_parent_folder_named_exactly_like_a_split_without_a_root(tmp_path: Path) -> None:
    path = tmp_path / "Valid" / "rows.jsonl"
    assert split_choice(path) == SplitChoice("valid", "from the folder 'Valid'")
    assert split_of(tmp_path / "rows.jsonl") is None


def test_read_rows_of_json_lines_with_blank_bad_and_non_object_lines(tmp_path: Path) -> None:
    path = _touch(tmp_path / "rows.jsonl", '{"a": 1}\r\n\n   \n{bad\r\n[1, 2]\n"text"\n{"b": "é"}')
    bad = b"{bad"
    reason = f"invalid JSON ({_orjson_error(bad)})"
    assert list(read_rows(path)) == [
        {"a": 1},
        BadRow("{bad", reason),
        BadRow("[1, 2]", "not a JSON object"),
        BadRow('"text"', "not a JSON object"),
        {"b": "é"},
    ]
    assert count_rows(path) == 5


def test_a_json_file_of_lines_is_read_as_lines(tmp_path: Path) -> None:
    path = _touch(tmp_path / "rows.json", '{"a": 1}\n{"a": 2}\n')
    assert list(read_rows(path)) == [{"a": 1}, {"a": 2}]
    assert count_rows(path) == 2


def test_a_json_array_after_a_byte_order_mark_and_white_space(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_bytes(b'\xef\xbb\xbf \t\r\n[{"a": 1}, 7, {"b": [1]}, "x"]')
    assert list(read_rows(path)) == [
        {"a": 1},
        BadRow("7", "not a JSON object"),
        {"b": [1]},
        BadRow('"x"', "not a JSON object"),
    ]
    assert count_rows(path) == 4


def test_a_json_array_is_seen_within_its_first_4096_bytes(tmp_path: Path) -> None:
    near = tmp_path / "near.json"
    near.write_bytes(b" " * 4095 + b'[{"a": 1}]')
    assert count_rows(near) == 1
    assert list(read_rows(near)) == [{"a": 1}]
    far = tmp_path / "far.jsonl"  # 4096 blanks, then an array: read as one line holding an array
    far.write_bytes(b" " * 4096 + b'[{"a": 1}]')
    assert list(read_rows(far)) == [BadRow(" " * 4096 + '[{"a": 1}]', "not a JSON object")]


def test_a_truncated_json_array(tmp_path: Path) -> None:
    path = _touch(tmp_path / "rows.json", '[{"a": 1}, ')
    truncated = _orjson_error(b'[{"a": 1}, ')
    expected = f"{path}: invalid or truncated JSON array ({truncated})"
    assert _message(lambda: list(read_rows(path))) == expected
    assert _message(count_rows, path) == expected


def test_json_lines_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    expected = f"{path}: not UTF-8 text (byte 16: invalid start byte)"  # 9 + 7 bytes before it
    assert _message(lambda: list(read_rows(path))) == expected
    assert _message(count_rows, path) == expected


def test_parquet_rows_in_order_over_several_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([{"i": i} for i in range(5)]), path, row_group_size=2)
    monkeypatch.setattr(rl_rows, "BATCH_ROWS", 2)
    assert list(read_rows(path)) == [{"i": i} for i in range(5)]
    assert count_rows(path) == 5


def _arrow_says(call, *args) -> str:
    """The first line of pyarrow's own error for the file, read here without the module."""
    try:
        call(*args)
    except (pa.ArrowInvalid, OSError) as exc:
        return str(exc).strip().split("\n")[0]
    raise AssertionError("pyarrow read the file")


def test_unreadable_parquet_and_arrow_files(tmp_path: Path) -> None:
    parquet = tmp_path / "rows.parquet"
    parquet.write_bytes(b"PAR1 this is no parquet file\nsecond line")
    said = _arrow_says(pq.ParquetFile, parquet)
    assert " " in said  # a sentence: a first word alone would not do
    expected = f"{parquet}: not a readable parquet file ({said})"
    assert _message(lambda: list(read_rows(parquet))) == expected
    assert _message(count_rows, parquet) == expected
    arrow = tmp_path / "rows.arrow"
    arrow.write_bytes(b"not arrow at all, not even close to it\nsecond line")
    said = _arrow_says(lambda: pa.ipc.open_file(pa.memory_map(str(arrow))))
    assert _message(lambda: list(read_rows(arrow))) == f"{arrow}: not a readable Arrow file ({said})"


def test_a_parsed_array_that_is_no_list_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unreachable with orjson (a text starting with `[` parses to a list or fails): a planted parser
    returning an object stands for any other reader of the array."""
    path = _touch(tmp_path / "rows.json", "[1]")
    monkeypatch.setattr(rl_rows, "orjson", SimpleNamespace(loads=lambda data: {"rows": 1}, JSONDecodeError=ValueError))
    assert _message(rl_rows._json_array, path) == f"{path}: expected a JSON array of rows"


def test_a_line_starting_with_an_x_is_no_array(tmp_path: Path) -> None:
    path = _touch(tmp_path / "rows.jsonl", "X[1]\n")
    reason = f"invalid JSON ({_orjson_error(b'X[1]')})"
    assert list(read_rows(path)) == [BadRow("X[1]", reason)]


def test_a_bad_rows_text_keeps_everything_but_its_line_end(tmp_path: Path) -> None:
    path = _touch(tmp_path / "rows.jsonl", '{bad \n{badX\n"text" \r\n')
    reasons = []
    for line in (b"{bad ", b"{badX"):
        reasons.append(f"invalid JSON ({_orjson_error(line)})")
    assert list(read_rows(path)) == [
        BadRow("{bad ", reasons[0]),
        BadRow("{badX", reasons[1]),
        BadRow('"text" ', "not a JSON object"),
    ]


def test_utf8_files_are_read_as_utf8_under_an_ascii_locale(tmp_path: Path) -> None:
    from tests.ascii_locale import run_in_ascii_locale

    rows = _touch(tmp_path / "train" / "rows.jsonl", '{"q": "où est la balle ?"}\n\n{"q": "ß"}\n')
    shard = _arrow_stream(tmp_path / "x" / "data-00000-of-00001.arrow", [{"a": 1}])
    _touch(shard.parent / "state.json", json.dumps({"_split": "prüfung"}, ensure_ascii=False))
    assert count_rows(rows) == 2 and split_of(shard) == "prüfung"
    done = run_in_ascii_locale(
        "import sys; from pathlib import Path; from tomforge.warehouse.sources.rl_rows import "
        "count_rows, read_rows, split_of; "
        "print(ascii([list(read_rows(Path(sys.argv[1]))), count_rows(Path(sys.argv[1])), split_of(Path(sys.argv[2]))]))",
        str(rows),
        str(shard),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ascii([[{"q": "où est la balle ?"}, {"q": "ß"}], 2, "prüfung"])


def test_split_of_reads_the_folders_under_the_root(tmp_path: Path) -> None:
    assert split_of(tmp_path / "dev-part" / "rows.jsonl", tmp_path) == "dev"


def test_arrow_stream_and_file_formats(tmp_path: Path) -> None:
    rows = [{"i": i, "s": str(i)} for i in range(5)]
    stream = _arrow_stream(tmp_path / "stream.arrow", rows, batches=3)
    assert list(read_rows(stream)) == rows
    assert count_rows(stream) == 5
    table = pa.Table.from_pylist(rows)
    file = tmp_path / "file.arrow"
    with pa.OSFile(str(file), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=2):
            writer.write_batch(batch)
    assert list(read_rows(file)) == rows
    assert count_rows(file) == 5


def test_first_line_of_an_error() -> None:
    assert rl_rows._first_line(ValueError("  one word\ntwo\nthree ")) == "one word"
    assert rl_rows._first_line(ValueError("\n\nonly\n")) == "only"
