"""Finding and preparing listing files: scan the folder, read, parse, clean.

Everything here is a pure function of its inputs except :func:`scan_folder` and
:func:`read_listing_file`, which only read the file system. Loading into DuckDB
is :mod:`paperwatch.store`; the Prefect flow in ``flows/ingest.py`` wires both.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from paperwatch.clean import CleanAbstract, clean_abstract
from paperwatch.parse import (
    Header,
    ListingDecodeError,
    decode_listing,
    parse_listing,
    sequence_number,
)

#: Names that are work in progress of an editor or a download, never listings.
_TEMP_SUFFIXES = (".swp", ".swx", ".tmp", ".part", ".crdownload", ".partial", "~")


@dataclass(frozen=True, slots=True)
class ListingFileStat:
    """A candidate listing file as found by :func:`scan_folder`.

    ``rel`` is the path relative to the watched folder (POSIX separators);
    ``mtime_ns`` is the modification time in nanoseconds since the epoch.
    """

    path: Path
    rel: str
    size: int
    mtime_ns: int

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Listing files found (sorted by ``rel``) and paths passed over, with the reason."""

    files: tuple[ListingFileStat, ...]
    ignored: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class PreparedEntry:
    """One parsed entry with its cleaned form (``clean`` is None when nothing is left of it)."""

    position: int
    line: int
    raw_text: str
    clean: CleanAbstract | None


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A listing file read, hashed, parsed and cleaned; or the reason it could not be.

    ``error``/``error_line`` are set when the whole file is rejected (not UTF-8,
    unreadable, too large); ``data`` then keeps its bytes for the quarantine.
    """

    stat: ListingFileStat
    sha256: str
    header: Header | None = None
    entries: tuple[PreparedEntry, ...] = ()
    error: str | None = None
    error_line: int | None = None
    data: bytes | None = field(default=None, repr=False)

    @property
    def sequence_number(self) -> int | None:
        return sequence_number(self.stat.name)


def _ignore_reason(name: str) -> str | None:
    if name.startswith("."):
        return "hidden file"
    if name.startswith("#") or name.endswith(_TEMP_SUFFIXES):
        return "editor or download temporary file"
    if not name.lower().endswith(".txt"):
        return "not a .txt listing file"
    return None


def scan_folder(folder: Path) -> ScanResult:
    """List the ``*.txt`` listing files under ``folder`` (recursively), with size and mtime.

    Hidden files and folders, editor/download temporary files, non-``.txt``
    files, directories named ``*.txt``, broken symbolic links and links that
    loop are passed over and listed in ``ignored`` with the reason. Symbolic
    links to folders are not followed (no loops).

    Raises:
        FileNotFoundError: ``folder`` does not exist.
        NotADirectoryError: ``folder`` is a file.
    """
    if not folder.exists():
        raise FileNotFoundError(f"watched folder {folder} does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"watched folder {folder} is not a folder")
    files: list[ListingFileStat] = []
    ignored: list[tuple[str, str]] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        root_path = Path(root)
        kept_dirs = []
        for d in sorted(dirs):
            rel = (root_path / d).relative_to(folder).as_posix()
            if d.startswith("."):
                continue
            if (root_path / d).is_symlink():
                ignored.append((rel, "link to a folder (not followed)"))
                continue
            if d.lower().endswith(".txt"):
                ignored.append((rel, "a folder, not a listing file"))
            kept_dirs.append(d)
        dirs[:] = kept_dirs
        for name in sorted(names):
            path = root_path / name
            rel = path.relative_to(folder).as_posix()
            reason = _ignore_reason(name)
            if reason:
                if reason != "hidden file":
                    ignored.append((rel, reason))
                continue
            try:
                st = path.stat()
            except FileNotFoundError:
                ignored.append((rel, "broken link or removed while scanning"))
                continue
            except OSError as exc:
                ignored.append((rel, f"cannot stat: {exc.strerror or exc}"))
                continue
            if not path.is_file():
                ignored.append((rel, "not a regular file"))
                continue
            files.append(
                ListingFileStat(path=path, rel=rel, size=st.st_size, mtime_ns=st.st_mtime_ns)
            )
    files.sort(key=lambda f: f.rel)
    return ScanResult(files=tuple(files), ignored=tuple(ignored))


def select_changed(
    files: Iterable[ListingFileStat], known: set[tuple[str, int, int]]
) -> list[ListingFileStat]:
    """The files whose (rel, size, mtime_ns) is not in ``known``: only those are read.

    Args:
        files: the scanned files.
        known: (rel, size, mtime_ns) of files already recorded in ``listing_files``.
    """
    return [f for f in files if (f.rel, f.size, f.mtime_ns) not in known]


def read_listing_file(stat: ListingFileStat) -> bytes:
    """Read a listing file's bytes.

    Raises:
        FileNotFoundError: it disappeared since the scan.
        OSError: it cannot be read.
    """
    return stat.path.read_bytes()


def prepare_file(stat: ListingFileStat, data: bytes, max_bytes: int) -> PreparedFile:
    """Hash, decode, parse and clean one listing file's bytes.

    Args:
        stat: the file as scanned (its name and path are used in messages).
        data: its bytes.
        max_bytes: larger files are rejected unparsed.

    Returns:
        A :class:`PreparedFile`; ``error`` names the byte offset and line when the
        bytes are not UTF-8, or the size when over ``max_bytes``. Never raises for
        bad content.
    """
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > max_bytes:
        return PreparedFile(
            stat=stat,
            sha256=digest,
            error=f"file is {len(data):,} bytes, over the limit of {max_bytes:,} (setting max_file_bytes)",
            data=data,
        )
    if b"\x00" in data:
        offset = data.index(b"\x00")
        line = data.count(b"\n", 0, offset) + 1
        return PreparedFile(
            stat=stat,
            sha256=digest,
            error=f"contains a NUL byte at byte {offset} (line {line}): binary or UTF-16, not UTF-8 text",
            error_line=line,
            data=data,
        )
    try:
        text = decode_listing(data, stat.rel)
    except ListingDecodeError as exc:
        return PreparedFile(
            stat=stat,
            sha256=digest,
            error=f"not valid UTF-8 at byte {exc.offset} (line {exc.line}): {exc.detail}",
            error_line=exc.line,
            data=data,
        )
    listing = parse_listing(text)
    entries = []
    for entry in listing.entries:
        cleaned = clean_abstract(entry.text)
        entries.append(
            PreparedEntry(
                position=entry.position,
                line=entry.line,
                raw_text=entry.text,
                clean=cleaned if cleaned.abstract else None,
            )
        )
    return PreparedFile(stat=stat, sha256=digest, header=listing.header, entries=tuple(entries))


ENTRY_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "file": pl.String,
    "position": pl.Int32,
    "line": pl.Int32,
    "abstract": pl.String,
    "abstract_raw": pl.String,
    "word_count": pl.Int32,
    "char_count": pl.Int32,
    "paper_id": pl.String,
    "method_name": pl.String,
    "first_sentence": pl.String,
    "code_urls": pl.List(pl.String),
}


def entries_frame(files: Iterable[PreparedFile]) -> pl.DataFrame:
    """One row per entry of the readable files, in file then position order.

    Columns (see ``ENTRY_SCHEMA``): file (the ``rel`` path), position, line,
    abstract (None when empty after cleaning), abstract_raw, word_count,
    char_count, paper_id, method_name, first_sentence, code_urls. This is the
    batch that the ``papers`` expectation suite validates.
    """
    rows: dict[str, list[object]] = {name: [] for name in ENTRY_SCHEMA}
    for prepared in files:
        if prepared.error is not None:
            continue
        for entry in prepared.entries:
            c = entry.clean
            rows["file"].append(prepared.stat.rel)
            rows["position"].append(entry.position)
            rows["line"].append(entry.line)
            rows["abstract"].append(c.abstract if c else None)
            rows["abstract_raw"].append(entry.raw_text)
            rows["word_count"].append(c.word_count if c else 0)
            rows["char_count"].append(len(c.abstract) if c else 0)
            rows["paper_id"].append(c.paper_id if c else None)
            rows["method_name"].append(c.method_name if c else None)
            rows["first_sentence"].append(c.first_sentence if c else None)
            rows["code_urls"].append(list(c.code_urls) if c else [])
    return pl.DataFrame(rows, schema=ENTRY_SCHEMA)
