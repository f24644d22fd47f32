"""Issue 25 item 8: an adapter given the wrong kind of file names the format it found and how to
convert it (Parquet given as ExploreToM, UTF-16 with a byte-order mark, a .gz given as HiToM...),
one line, exit 2, the warehouse untouched. The files are written here by other tools (polars,
gzip, Python's UTF-16 codec), so the format is what those tools say it is."""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

import polars as pl
import pytest

from tests.flows.test_cli import assert_one_line_error, run
from tomforge.warehouse.sources.sniff import sniff

CSV = "story_structure,question,expected_answer\nAnne is in the den.,Where is Anne?,den\n"


def _files(tmp_path: Path) -> dict[str, tuple[Path, str, str]]:
    """name -> (path, format words the error must hold, conversion words)."""
    out = {}
    parquet = tmp_path / "exploretom.parquet"
    pl.DataFrame({"story_structure": ["Anne is in the den."], "question": ["Where is Anne?"]}).write_parquet(parquet)
    out["parquet"] = (parquet, "Parquet", "write_csv")
    utf16 = tmp_path / "exploretom_utf16.csv"
    utf16.write_bytes(CSV.encode("utf-16"))  # Python's UTF-16 codec writes the byte-order mark
    out["utf16"] = (utf16, "UTF-16 text", "iconv -f UTF-16 -t UTF-8")
    gz = tmp_path / "Hi-ToM_data.json.gz"
    gz.write_bytes(gzip.compress(b'{"data": []}'))
    out["gzip"] = (gz, "gzip-compressed", f"gzip -dc {gz} > {tmp_path / 'Hi-ToM_data.json'}")
    archive = tmp_path / "tomi.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("tomi_test.txt", "1 Anne entered the den.\n")
    out["zip"] = (archive, "zip archive", "unzip")
    return out


@pytest.mark.parametrize(
    "name, source",
    [
        ("parquet", "exploretom"),
        ("utf16", "exploretom"),
        ("gzip", "hitom"),
        ("zip", "tomi"),
        ("gzip", "fantom"),
        ("parquet", "bigtom"),
    ],
)
def test_the_error_names_the_format_and_the_conversion(tmp_path: Path, name: str, source: str) -> None:
    path, kind, convert = _files(tmp_path)[name]
    warehouse = tmp_path / "w.duckdb"
    result = run("ingest", "--source", source, "--path", str(path), "-w", str(warehouse))
    assert_one_line_error(result, str(path), kind, convert)
    assert "byte 0" not in result.output and "invalid start byte" not in result.output
    assert f"not the {source} format" in result.output  # was "not a exploretom file" (found re-checking issue 25)
    assert not warehouse.exists()


def test_a_utf16_file_inside_a_folder_is_named_too(tmp_path: Path) -> None:
    folder = tmp_path / "exploretom"
    folder.mkdir()
    (folder / "data.csv").write_bytes(CSV.encode("utf-16"))
    result = run("ingest", "--source", "exploretom", "--path", str(folder), "-w", str(tmp_path / "w.duckdb"))
    assert_one_line_error(result, "data.csv", "UTF-16 text")


def test_text_is_not_sniffed_as_anything(tmp_path: Path) -> None:
    for name, data in (
        ("a.csv", CSV.encode()),
        ("b.json", b'{"data": []}'),
        ("c.txt", "caf\xe9".encode("latin-1")),
        ("d.txt", "\ufeff1 Anne".encode("utf-8")),
    ):
        (tmp_path / name).write_bytes(data)
        assert sniff(tmp_path / name) is None, name


def run_the_hint(command: str, cwd: Path) -> None:
    import subprocess

    subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.mark.parametrize("name", ["Hi-ToM_data.json", "Hi-ToM_data.json.gz", "data"])
def test_the_gzip_hint_works_whatever_the_name(tmp_path: Path, name: str) -> None:
    """Issue 38: the hint said `gunzip -k file.json`, which refuses a name without .gz. The hint, run as
    printed, gives the plain file, beside the compressed one, whatever its name."""
    import shutil

    if shutil.which("gzip") is None:
        pytest.skip("no gzip binary")
    path = tmp_path / name
    path.write_bytes(gzip.compress(b'{"data": []}'))
    found = sniff(path)
    assert found is not None and "gunzip -k" not in found.convert
    before = set(tmp_path.iterdir())
    run_the_hint(found.convert, tmp_path)
    (made,) = set(tmp_path.iterdir()) - before
    assert made.read_bytes() == b'{"data": []}' and made.parent == tmp_path
    assert gzip.decompress(path.read_bytes()) == b'{"data": []}'  # the compressed file is kept


@pytest.mark.parametrize("name", ["scores.xlsx", "scores.zip"])
def test_a_workbook_is_exported_to_csv_not_unzipped(tmp_path: Path, name: str) -> None:
    """Issue 38: an .xlsx got "unzip it"; it is a workbook, and the way out is a sheet exported to CSV
    (by its name, or by the xl/ part inside a zip of any name)."""
    book = tmp_path / name
    with zipfile.ZipFile(book, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>" * 50)
        z.writestr("xl/workbook.xml", "<workbook/>")
        z.writestr("xl/worksheets/sheet1.xml", "<worksheet/>")
    found = sniff(book)
    assert found is not None and "Excel workbook" in found.name
    assert "CSV" in found.convert and "unzip" not in found.convert
    result = run("ingest", "--source", "exploretom", "--path", str(book), "-w", str(tmp_path / "w.duckdb"))
    assert_one_line_error(result, str(book), "Excel workbook", "export the sheet to CSV")
