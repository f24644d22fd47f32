"""`sniff` on planted files (issue 38: mutmut over `warehouse/sources/sniff.py`, where two independent checks
planted bugs): tar archives written by the standard library's `tarfile`, workbooks told by name or by their
`xl/` part, and the conversion line's file stem, each expected line written out by hand."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from tomforge.warehouse.sources.sniff import Found, sniff

WORKBOOK = "an Excel workbook (.xlsx)"


def _tar(path: Path, tar_format: int) -> Path:
    with tarfile.open(path, "w", format=tar_format) as archive:
        data = b'{"story": "Anne is in the den."}\n'
        member = tarfile.TarInfo("hitom/data.json")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return path


@pytest.mark.parametrize("tar_format", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_a_tar_archive_by_its_ustar_mark(tmp_path: Path, tar_format: int) -> None:
    path = _tar(tmp_path / "hitom.json", tar_format)  # named like data: only the bytes tell
    assert sniff(path) == Found("a tar archive", f"tar -xf {path} and give the folder inside")


def test_ustar_elsewhere_is_no_tar(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"x" * 256 + b"ustar" + b"x" * 20)  # one byte early
    assert sniff(path) is None


def _zip(path: Path, member: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, "<xml/>")
    return path


@pytest.mark.parametrize("name", ["Book.XLSX", "Book.xlsx", "Book.Xlsm", "book.xlsm"])
def test_a_workbook_by_its_name_in_any_case(tmp_path: Path, name: str) -> None:
    path = _zip(tmp_path / name, "sheet.txt")  # no xl/ part: the name alone says workbook
    assert sniff(path).name == WORKBOOK


def test_a_workbook_by_its_xl_part_whatever_its_name(tmp_path: Path) -> None:
    assert sniff(_zip(tmp_path / "export.zip", "xl/workbook.xml")).name == WORKBOOK
    assert sniff(_zip(tmp_path / "other.zip", "data/xl.txt")) == Found(
        "a zip archive", f"unzip {tmp_path / 'other.zip'} and give the file inside"
    )


def test_a_broken_zip_is_a_zip_not_a_workbook(tmp_path: Path) -> None:
    path = tmp_path / "rows.zip"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 40)  # a zip's local header mark, then nothing readable
    assert sniff(path) == Found("a zip archive", f"unzip {path} and give the file inside")


def test_the_conversion_names_the_file_without_its_suffix(tmp_path: Path) -> None:
    path = tmp_path / "rows.v2.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 8)
    assert "write_csv('rows.v2.csv')" in sniff(path).convert
    bare = tmp_path / "rows"
    bare.write_bytes(b"\xff\xfe" + "a,b\n".encode("utf-16-le"))
    assert sniff(bare) == Found(
        "UTF-16 text (little-endian byte-order mark)", f"iconv -f UTF-16 -t UTF-8 {bare} > rows.utf8"
    )
