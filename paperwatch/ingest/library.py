"""A reader's library file: the papers a reader already has, exported from a reference
manager (Zotero, Mendeley), to rank the week's papers against (docs/email.md).

The format is chosen by extension: ``.bib`` BibTeX (read by
:mod:`paperwatch.ingest.readers.bibtex`, as a listing is), ``.json`` CSL-JSON (Zotero's
and Mendeley's "CSL JSON" export: an array of items with ``title``, ``author``
``[{"family", "given"} | {"literal"}]``, ``abstract``, ``issued.date-parts``, ``DOI``,
``URL``), ``.ris`` RIS (``TY`` to ``ER``; ``TI``/``T1``, ``AU``/``A1``, ``PY``/``Y1``/``DA``,
``AB``/``N2``, ``DO``, ``UR``), ``.txt`` arXiv ids or DOIs, one a line (``#`` starts a
comment), found in the database by their external id. Every title and author is made
safe as a listing's are (:func:`paperwatch.untrusted.safe_entry`): the library is
untrusted text too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.parse import ListingDecodeError, decode_listing
from paperwatch.ingest.readers import ReaderError
from paperwatch.ingest.readers.records import (
    arxiv_id,
    author_names,
    doi,
    external_id,
    first_url,
    one_line,
    record_entry,
    without_lone_surrogates,
)
from paperwatch.untrusted import safe_entry

if TYPE_CHECKING:
    from paperwatch.settings import Reader

#: Largest library file read, in bytes (a 10,000-item Zotero BibTeX export with abstracts
#: is about 15 MB).
MAX_LIBRARY_BYTES = 64 * 1024 * 1024

#: Library formats by extension (lower case).
LIBRARY_FORMATS = {".bib": "bibtex", ".json": "csl-json", ".ris": "ris", ".txt": "ids"}

_RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: (.*))?$")
_YEAR = re.compile(r"\b(\d{4})\b")


class LibraryError(ValueError):
    """A library file that cannot be used: ``path`` and ``detail`` say which and why."""

    def __init__(self, path: Path, detail: str) -> None:
        self.path, self.detail = path, detail
        super().__init__(f"library file {path}: {detail}")


@dataclass(frozen=True, slots=True)
class LibraryItem:
    """One paper of a library.

    Attributes:
        title: one line of safe text, or None.
        authors: names as ``First Last``.
        year: publication year, or None.
        text: clean title and abstract joined (the text its terms are extracted from,
            cleaned as a listing's abstract is); empty for an id of an id list.
        external_id: ``arXiv:…`` or ``doi:…`` (normalised), or None.
    """

    title: str | None
    authors: tuple[str, ...]
    year: int | None
    text: str
    external_id: str | None


def read_library(path: Path) -> list[LibraryItem]:
    """The items of the library file at ``path``, in file order (format by extension).

    Raises:
        LibraryError: the file is missing, a folder, unreadable, larger than
            :data:`MAX_LIBRARY_BYTES`, not UTF-8, of an unknown extension, not valid in its
            format (naming the line where the reader says), or holds no paper.
    """
    fmt = LIBRARY_FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(LIBRARY_FORMATS)
        raise LibraryError(path, f"unknown extension {path.suffix!r} (one of {known})")
    try:
        if path.stat().st_size > MAX_LIBRARY_BYTES:
            raise LibraryError(path, f"larger than {MAX_LIBRARY_BYTES:,} bytes")
        data = path.read_bytes()
    except FileNotFoundError:
        raise LibraryError(path, "not found") from None
    except IsADirectoryError:
        raise LibraryError(path, "is a folder, not a file") from None
    except OSError as exc:
        raise LibraryError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = decode_listing(data, str(path))
        items = _READERS[fmt](text)
    except ListingDecodeError as exc:
        raise LibraryError(path, f"not UTF-8 (byte {exc.offset}, line {exc.line})") from None
    except ReaderError as exc:
        raise LibraryError(path, str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise LibraryError(path, str(exc)) from None
    if not items:
        raise LibraryError(path, f"holds no paper (read as {fmt})")
    return items


def reader_library(reader: Reader) -> list[LibraryItem] | None:
    """The items of ``reader``'s library file, or None without one.

    Raises:
        LibraryError: the file cannot be used; the message names the reader and the file.
    """
    if reader.library is None:
        return None
    try:
        return read_library(reader.library)
    except LibraryError as exc:
        raise LibraryError(
            exc.path, f"{exc.detail} (the library of reader {reader.address})"
        ) from None


def _item(
    title: str | None,
    authors: tuple[str, ...],
    year: int | None,
    abstract: str | None,
    ext_id: str | None,
) -> LibraryItem:
    """A safe item: fields through :func:`safe_entry`, text cleaned as an abstract."""
    entry = safe_entry(record_entry(1, 1, abstract, title=title, authors=authors, ext_id=ext_id))
    head = (entry.title or "").rstrip(" .")
    body = "" if entry.no_abstract else entry.text
    joined = f"{head}. {body}" if head and body else head or body
    text = clean_abstract(joined).abstract if joined else ""
    return LibraryItem(entry.title, entry.authors, year, text, entry.external_id)


def _bibtex(text: str) -> list[LibraryItem]:
    from paperwatch.ingest.readers.bibtex import read_with_years

    listing, years = read_with_years(text)
    return [
        _item(e.title, e.authors, year, None if e.no_abstract else e.text, e.external_id)
        for e, year in zip(listing.entries, years, strict=True)
    ]


def _csl_year(issued: Any) -> int | None:
    if isinstance(issued, dict):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            try:
                return int(parts[0][0])
            except (TypeError, ValueError):
                pass
        found = _YEAR.search(str(issued.get("raw") or issued.get("literal") or ""))
        return int(found.group(1)) if found else None
    found = _YEAR.search(str(issued or ""))
    return int(found.group(1)) if found else None


def _csl_json(text: str) -> list[LibraryItem]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: line {exc.lineno}: {exc.msg}") from None
    value, _ = without_lone_surrogates(value)  # "\ud800" escapes: no text holds them
    if isinstance(value, dict):
        value = value.get("items", [value])
    if not isinstance(value, list):
        raise ValueError("not CSL-JSON: expected an array of items")
    items = []
    for record in value:
        if not isinstance(record, dict):
            continue
        names = [
            {"name": a["literal"]} if isinstance(a, dict) and "literal" in a else a
            for a in (record.get("author") or [])
        ]
        url = first_url(one_line(record.get("URL")))
        items.append(
            _item(
                one_line(record.get("title")),
                author_names(names),
                _csl_year(record.get("issued")),
                one_line(record.get("abstract")),
                external_id(doi_value=one_line(record.get("DOI")), urls=[url]),
            )
        )
    return items


def _ris(text: str) -> list[LibraryItem]:
    items: list[LibraryItem] = []
    fields: dict[str, list[str]] | None = None
    last: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _RIS_TAG.match(line.rstrip())
        if match is None:
            if fields is not None and last is not None and line.strip():
                fields[last][-1] += " " + line.strip()  # a value continued on the next line
            continue
        tag, value = match.group(1), (match.group(2) or "").strip()
        if tag == "TY":
            fields, last = {}, None
            continue
        if fields is None:
            raise ValueError(f"line {number}: {tag} before the first TY (not RIS)")
        if tag == "ER":
            items.append(_ris_item(fields))
            fields, last = None, None
            continue
        fields.setdefault(tag, []).append(value)
        last = tag
    if fields is not None:
        raise ValueError("the last record has no ER line (not RIS, or cut short)")
    return items


def _ris_item(fields: dict[str, list[str]]) -> LibraryItem:
    def first(*tags: str) -> str | None:
        for tag in tags:
            if fields.get(tag):
                return one_line(fields[tag][0])
        return None

    authors = []
    for name in fields.get("AU", []) + fields.get("A1", []):
        last, _, given = name.partition(",")
        authors.append(" ".join(f"{given.strip()} {last.strip()}".split()))
    found = _YEAR.search(first("PY", "Y1", "DA") or "")
    url = first_url(first("UR"))
    return _item(
        first("TI", "T1"),
        tuple(a for a in authors if a),
        int(found.group(1)) if found else None,
        first("AB", "N2"),
        external_id(doi_value=first("DO"), urls=[url]),
    )


def _ids(text: str) -> list[LibraryItem]:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        value = line.split("#", 1)[0].strip()
        if not value:
            continue
        found = arxiv_id(value)
        ext_id = f"arXiv:{found}" if found else None
        if ext_id is None and (found := doi(value)) is not None:
            ext_id = external_id(doi_value=found)
        if ext_id is None:
            raise ValueError(f"line {number}: {value[:40]!r} is neither an arXiv id nor a DOI")
        items.append(LibraryItem(None, (), None, "", ext_id))
    return items


_READERS = {"bibtex": _bibtex, "csl-json": _csl_json, "ris": _ris, "ids": _ids}
