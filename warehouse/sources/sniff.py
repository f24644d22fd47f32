"""What a file is, from its first bytes, so that an adapter given the wrong kind of file says what it
found and how to convert it ("Parquet, not text: ...") rather than "not UTF-8 text (byte 7)".

Every adapter reads text (JSON, CSV, bAbI-style .txt); `sniff` recognizes the binary and
non-UTF-8 formats people hand them by mistake: columnar files, compressed files and archives, and
text with a UTF-16/UTF-32 byte-order mark. `stage_input` checks the input file before any adapter
opens it, and `read_text` words its UTF-8 error with it for files inside a folder."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Found:
    """A recognized format and how to turn it into text the adapter reads."""

    name: str
    convert: str


# (leading bytes, format, how to convert): longer prefixes first where they share a start
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"\x00\x00\xfe\xff", "UTF-32 text (big-endian byte-order mark)", "iconv -f UTF-32 -t UTF-8 {path} > {stem}.utf8"),
    (
        b"\xff\xfe\x00\x00",
        "UTF-32 text (little-endian byte-order mark)",
        "iconv -f UTF-32 -t UTF-8 {path} > {stem}.utf8",
    ),
    (b"\xff\xfe", "UTF-16 text (little-endian byte-order mark)", "iconv -f UTF-16 -t UTF-8 {path} > {stem}.utf8"),
    (b"\xfe\xff", "UTF-16 text (big-endian byte-order mark)", "iconv -f UTF-16 -t UTF-8 {path} > {stem}.utf8"),
    (
        b"PAR1",
        "Parquet",
        "python -c \"import polars as pl; pl.read_parquet('{path}').write_csv('{stem}.csv')\" "
        "(or the source's own published text file)",
    ),
    (b"ARROW1", "Arrow IPC", "python -c \"import polars as pl; pl.read_ipc('{path}').write_csv('{stem}.csv')\""),
    # `gzip -dc` reads a file whatever its name (`gunzip -k file.json` refuses a name without .gz, issue 38)
    (b"\x1f\x8b", "gzip-compressed data", "gzip -dc {path} > {plain}"),
    (b"BZh", "bzip2-compressed data", "bzip2 -dc {path} > {plain}"),
    (b"\xfd7zXZ\x00", "xz-compressed data", "xz -dc {path} > {plain}"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data", "zstd -dc {path} > {plain}"),
    (b"PK\x03\x04", "a zip archive", "unzip {path} and give the file inside"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x {path} and give the file inside"),
    (b"SQLite format 3\x00", "an SQLite database", "export the table to the source's published format"),
    (b"%PDF", "a PDF document", "give the source's data file, not its paper"),
)
_TAR_MAGIC_AT = 257  # "ustar" sits at byte 257 of a tar header
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
# an Office Open XML workbook is a zip with its sheets under xl/: export a sheet, unzipping gives XML
_XLSX = Found(
    "an Excel workbook (.xlsx)",
    "open it and export the sheet to CSV (a spreadsheet's Save As > CSV UTF-8), then give the .csv",
)


def _plain_name(path: Path) -> Path:
    """Where a decompressed copy goes: beside the file, the compression suffix dropped (`a.json.gz` ->
    `a.json`), or `.plain` put before the suffix when there is none to drop (`a.json` -> `a.plain.json`)."""
    if path.suffix in _COMPRESSED_SUFFIXES:
        return path.with_suffix("")
    return path.with_name(f"{path.stem}.plain{path.suffix}")


def _is_workbook(path: Path) -> bool:
    """An .xlsx by its name, or a zip holding a workbook's `xl/` part whatever its name."""
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        return True
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.startswith("xl/") for name in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def sniff(path: Path) -> Found | None:
    """The format `path` starts with, when it is one an adapter cannot read as UTF-8 text; None for
    anything else (text, or a format not recognized: the adapter's own error then speaks)."""
    try:
        with Path(path).open("rb") as handle:
            head = handle.read(_TAR_MAGIC_AT + 8)
    except (IsADirectoryError, FileNotFoundError, PermissionError):
        return None
    stem = Path(path).with_suffix("").name if Path(path).suffix else Path(path).name
    if head.startswith(b"PK\x03\x04") and _is_workbook(Path(path)):
        return _XLSX
    for magic, name, convert in _MAGIC:
        if head.startswith(magic):
            return Found(name, convert.format(path=path, stem=stem, plain=_plain_name(Path(path))))
    if head[_TAR_MAGIC_AT : _TAR_MAGIC_AT + 5] == b"ustar":
        return Found("a tar archive", f"tar -xf {path} and give the folder inside")
    return None


def describe(found: Found, expected: str) -> str:
    """The one-line problem: what the file is, what the adapter reads, how to convert."""
    return f"this is {found.name}, not {expected}; convert it first: {found.convert}"
