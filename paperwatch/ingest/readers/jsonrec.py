"""JSON and JSON Lines exports of paper records (OpenReview, Semantic Scholar, scrapers).

The syntax is the standard library's ``json``; this module maps a record's fields:

- abstract: ``abstract``, ``summary``, ``paper_abstract``, ``abstract_text``, ``abs``;
- title: ``title``, ``paper_title``; authors: ``authors``, ``author``, ``authors_list``,
  ``paper_authors`` (names, objects with ``name``, or one string of names);
- URL: ``url``, ``URL`` (CSL-JSON, as Zotero exports), ``link``, ``pdf_url``, ``abs_url``,
  ``paper_url``, ``pdf``;
- external id: ``arxiv_id``/``arxiv``/``eprint``, ``doi``, Semantic Scholar's
  ``externalIds`` (``ArXiv``, ``DOI``), an OpenReview note's ``forum`` or ``id``, else
  what the URL names (:func:`paperwatch.ingest.readers.records.external_id`);
- venue and year (the listing's header) when every record names the same.

OpenReview's API v2 wraps each field as ``{"value": …}`` under ``content``: both are
unwrapped. Hugging Face's daily papers hold the paper under ``paper`` (``{"title": …,
"paper": {"id": …, "summary": …, "authors": […]}}``): a field the record lacks is read
there, and its ``id`` is the record's. A JSON file is an array of records, an object
holding arrays of them (``papers``, ``notes``, ``entries``, ``records``, ``items``, ``results``, ``data``), a map
of records (``{topic: {id: record}}``: objects keyed by anything but a record field whose
values are all records, arrays of records or such maps, at most :data:`MAX_MAP_DEPTH`
deep), or one record (:func:`_object_records`).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from paperwatch.ingest.parse import Entry, Header, Listing, decode_listing, parse_header
from paperwatch.ingest.readers import ReaderError
from paperwatch.ingest.readers.records import (
    SURROGATE_FAULT,
    LineIndex,
    author_names,
    external_id,
    first_url,
    one_line,
    record_entry,
    without_lone_surrogates,
)

_ABSTRACT_KEYS = ("abstract", "summary", "paper_abstract", "abstract_text", "abs", "paperAbstract")
_TITLE_KEYS = ("title", "paper_title")
_AUTHOR_KEYS = ("authors", "author", "authors_list", "paper_authors")
_URL_KEYS = ("url", "URL", "link", "abs_url", "paper_url", "html_url", "pdf_url", "pdf")
_ARXIV_KEYS = ("arxiv_id", "arxiv", "eprint", "arxivId")
_DOI_KEYS = ("doi", "DOI")
_VENUE_KEYS = ("venue", "conference", "booktitle")
#: Keys under which a file's object holds its list of records (JSON and YAML).
LIST_KEYS = ("papers", "notes", "entries", "records", "items", "results", "data")
#: The keys :func:`_entry` reads: an object holding any of them is a record, never a map
#: of records (:func:`_is_map`), even when every value is an object (OpenReview's
#: ``{"title": {"value": …}, …}``).
_RECORD_KEYS = frozenset(
    (
        *_ABSTRACT_KEYS,
        *_TITLE_KEYS,
        *_AUTHOR_KEYS,
        *_URL_KEYS,
        *_ARXIV_KEYS,
        *_DOI_KEYS,
        *_VENUE_KEYS,
        "year",
        "content",
        "paper",
        "externalIds",
        "id",
        "forum",
        "invitation",
        "invitations",
    )
)
#: Objects keyed by topic, date or id are read as maps of records this many levels deep
#: (``{venue: {topic: {id: record}}}``: 3); an object deeper than that is one record.
MAX_MAP_DEPTH = 3
#: A Python program's print of a dict or list of dicts: ``{'title': …`` (single quotes).
_PYTHON_LITERAL = re.compile(r"\A\s*\[?\s*\{\s*'[^'\n]{1,60}'\s*:|\A\s*\[?\s*\{\s*\}")


def read(data: bytes, name: str, lines: bool | None = None) -> Listing:
    """Read JSON (``lines=False``) or JSON Lines (``lines=True``; None: by ``name``'s
    extension ``.jsonl``/``.ndjson``) bytes; see :func:`read_text`.

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
        ReaderError: not valid JSON / JSON Lines, or not records.
    """
    if lines is None:
        lines = name.lower().endswith((".jsonl", ".ndjson"))
    return read_text(decode_listing(data, name), name, lines=lines)


def _python_literal(line: str) -> bool:
    return _PYTHON_LITERAL.match(line) is not None


#: A Python-literal line longer than this is not read (``ast.literal_eval`` parses the
#: whole line into a tree first); a paper record is a few kilobytes.
MAX_LITERAL_CHARS = 100_000
PYTHON_LITERAL_NOTE = "lines read as Python literals (ast.literal_eval, literals only)"

_PYTHON_DETAIL = (
    "a Python literal (a dict printed with single quotes), not JSON: "
    "write the records with json.dumps"
)


#: Nesting (arrays and objects inside each other) reported as too deep. Python's ``json``
#: recurses once per level and gives up near ``sys.getrecursionlimit()`` (1,000); a
#: paper record is nested a few levels deep (OpenReview's ``content.title.value``: 3).
MAX_NESTING = 500
_NESTING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _too_deep(fmt: str, text: str, first_line: int) -> ReaderError:
    """The error of JSON ``text`` (starting at line ``first_line``) that ``json`` could not
    read because it is nested too deep: the line where it passes :data:`MAX_NESTING`."""
    depth, deepest = 0, 0
    for match in _NESTING_TOKEN.finditer(text):
        token = match.group(0)
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_NESTING:
                line = first_line + text.count("\n", 0, match.start())
                return ReaderError(
                    fmt,
                    line,
                    f"arrays or objects nested more than {MAX_NESTING} levels deep "
                    f"(column {match.start() - text.rfind(chr(10), 0, match.start())}): "
                    "not a file of paper records",
                )
        elif token in "]}":
            depth -= 1
    return ReaderError(
        fmt, first_line, f"arrays or objects nested too deep to read ({deepest} levels)"
    )


_LONG_NUMBER = re.compile(r"\d{4300,}")


def _number_too_long(fmt: str, text: str, first_line: int, exc: ValueError) -> ReaderError:
    """The error of JSON ``text`` holding an integer longer than Python converts
    (``sys.get_int_max_str_digits()``, 4,300 digits): the line where it starts."""
    found = _LONG_NUMBER.search(text)
    line = first_line + (text.count("\n", 0, found.start()) if found else 0)
    return ReaderError(fmt, line, f"a number too long to read: {exc}")


def _syntax_error(fmt: str, text: str, exc: json.JSONDecodeError, line: int) -> ReaderError:
    """The error of a JSON document or line ``text`` that did not parse, at ``line``."""
    if _python_literal(text):
        return ReaderError(fmt, line, _PYTHON_DETAIL)
    return ReaderError(fmt, line, f"{exc.msg} (column {exc.colno})")


def read_text(text: str, name: str = "<text>", lines: bool = False) -> Listing:
    """The records of JSON or JSON Lines ``text`` as entries, in file order.

    Every record becomes an entry (a record without an abstract too: it is quarantined
    as "no abstract"); ``line`` is the 1-based line where the record starts. JSON Lines
    whose first line is a Python dict literal are read as such (:func:`_literal_records`,
    noted in ``Listing.format_note``); a line that is not a dict literal is an entry of
    its own text, quarantined.

    Raises:
        ReaderError: a syntax error (line and column; a JSON file whose later line is
            written as a Python literal says so), arrays or objects nested more than :data:`MAX_NESTING` levels deep
            (the line where), or a value that is not a record (an object).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    fmt = "jsonl" if lines else "json"
    records: list[tuple[int, Any]] = []
    note = None
    bad_lines: dict[int, str] = {}
    if lines:
        numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if numbered and _python_literal(numbered[0][1]) and not _is_json(numbered[0][1]):
            note = PYTHON_LITERAL_NOTE
            records, bad_lines = _literal_records(numbered)
            numbered = []
        for number, line in numbered:
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _syntax_error(fmt, line, exc, number) from None
            except RecursionError:
                raise _too_deep(fmt, line, number) from None
            except ValueError as exc:  # an integer of more than 4,300 digits
                raise _number_too_long(fmt, line, number, exc) from None
            records.append((number, value))
    else:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _syntax_error(fmt, text, exc, exc.lineno) from None
        except RecursionError:
            raise _too_deep(fmt, text, 1) from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise _number_too_long(fmt, text, 1, exc) from None
        records = _records_with_lines(text, value)
    return records_listing(fmt, text, records, bad_lines, note)


def records_listing(
    fmt: str,
    text: str,
    records: list[tuple[int, Any]],
    bad_lines: dict[int, str] | None = None,
    note: str | None = None,
) -> Listing:
    """The :class:`Listing` of ``records`` (``(1-based line, parsed value)``, in file
    order) read from ``text`` as ``fmt`` (``json``, ``jsonl`` or ``yaml``): one entry per
    record, its fields mapped as this module says; the header is the venue and year every
    record names, if they all name the same. ``bad_lines`` (by line) are entries of their
    own text, quarantined; ``note`` becomes ``Listing.format_note``.

    Raises:
        ReaderError: a value is not a record (a mapping), with its line.
    """
    bad_lines = bad_lines or {}
    entries: list[Entry] = []
    venues: set[str] = set()
    for number, record in records:
        if number in bad_lines:  # quarantined: a Python literal's shape, else "no abstract"
            bad = bad_lines[number]
            entries.append(
                Entry(
                    position=len(entries) + 1,
                    line=number,
                    text=bad,
                    no_abstract=not _python_literal(bad),
                )
            )
            continue
        if not isinstance(record, dict):
            kind = "YAML" if fmt == "yaml" else "JSON"
            raise ReaderError(
                fmt, number, f"a {kind} {type(record).__name__}, not a record (an object)"
            )
        entry, venue = _entry(len(entries) + 1, number, record)
        entries.append(entry)
        venues.add(venue or "")
    header = _header(venues.pop()) if len(venues) == 1 else None
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return Listing(
        header=header, entries=entries, line_count=line_count, format=fmt, format_note=note
    )


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _literal_records(
    numbered: list[tuple[int, str]],
) -> tuple[list[tuple[int, Any]], dict[int, str]]:
    """The records of JSON Lines written as Python literals (``{'title': …}``, what
    ``print(dict)`` writes), read with ``ast.literal_eval``: literals only, never code.

    Returns ``(records, bad_lines)``: ``(line, value)`` of every non-blank line, and the
    text of each line that is not a dict literal (too long, not a literal, not a dict), by
    line number; such a line becomes an entry of its own text, quarantined for its shape.
    """
    records: list[tuple[int, Any]] = []
    bad: dict[int, str] = {}
    for number, line in numbered:
        value: Any = None
        if len(line) <= MAX_LITERAL_CHARS:
            try:
                value = ast.literal_eval(line.strip())
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = None
        if not isinstance(value, dict):
            bad[number] = line.strip()
        records.append((number, value))
    return records, bad


def _header(venue: str) -> Header | None:
    return parse_header(venue) if venue else None


def _records_with_lines(text: str, value: Any) -> list[tuple[int, Any]]:
    """The records of a parsed JSON document with the line each starts at: the items of
    an array, else those of the object (:func:`_object_records`)."""
    index = LineIndex(text)
    if isinstance(value, dict):
        return _object_records(text, text.find("{"), value, index, 0)
    if isinstance(value, list):
        return _array_lines(text, value, text.find("["), index)
    raise ReaderError("json", 1, f"a JSON {type(value).__name__}, not records")


def _object_records(
    text: str, start: int, value: dict[str, Any], index: LineIndex, depth: int
) -> list[tuple[int, Any]]:
    """The records of the object ``value`` that starts at offset ``start`` of ``text``,
    ``depth`` maps deep, in file order:

    1. an object holding arrays under :data:`LIST_KEYS` (``{"venue": …, "papers": […]}``):
       the items of every such array of objects (else of the first array, whose items
       are then refused as not records);
    2. a map of records (:func:`_is_map`: ``{topic: {id: record}}``), fewer than
       :data:`MAX_MAP_DEPTH` maps deep: the records of each value, by these rules again
       (an array's items are records);
    3. else the object itself, one record.
    """
    holds = any(isinstance(value.get(key), list) for key in LIST_KEYS)
    if not holds and not (depth < MAX_MAP_DEPTH and _is_map(value.items())):
        return [(index.line(start), value)]
    members = _members(text, start)
    records: list[tuple[int, Any]] = []
    if holds:
        lists = [m for m in members if m[0] in LIST_KEYS and isinstance(m[2], list)]
        # Every array of records (objects) the object holds, none left out; else the
        # first array by the order of LIST_KEYS, whose items are then refused.
        of_records = [m for m in lists if all(isinstance(item, dict) for item in m[2])]
        if not of_records:
            of_records = [min(lists, key=lambda m: LIST_KEYS.index(m[0]))]
        for _, offset, items in of_records:
            records.extend(_array_lines(text, items, offset, index))
        return sorted(records, key=lambda record: record[0])  # in the file's order
    if not _is_map([(key, item) for key, _, item in members]):
        return [(index.line(start), value)]  # a repeated key's other value is no record
    for _, offset, item in members:
        if isinstance(item, list):
            records.extend(_array_lines(text, item, offset, index))
        else:
            records.extend(_object_records(text, offset, item, index, depth + 1))
    return records


def _is_map(members: Iterable[tuple[str, Any]]) -> bool:
    """Whether an object of ``members`` (key, value) is a map of records (keyed by topic,
    date or id, as digest generators write ``{topic: {id: record}}``): it has at least one
    member, none of its keys is a record field (:data:`_RECORD_KEYS`), and every value is
    an object or a non-empty array of objects."""
    members = list(members)
    return bool(members) and all(
        key not in _RECORD_KEYS
        and (
            isinstance(item, dict)
            or (isinstance(item, list) and item and all(isinstance(i, dict) for i in item))
        )
        for key, item in members
    )


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _members(text: str, start: int) -> list[tuple[str, int, Any]]:
    """Each member of the JSON object whose ``{`` is at offset ``start`` of ``text`` (valid
    JSON): its key, the offset where its value starts and the value, in file order (a
    repeated key each time it is written)."""
    decoder = json.JSONDecoder()
    members: list[tuple[str, int, Any]] = []
    position = _JSON_SPACE.match(text, start + 1).end()  # type: ignore[union-attr]
    while text[position] != "}":
        key, position = decoder.raw_decode(text, position)
        position = _JSON_SPACE.match(text, position).end()  # type: ignore[union-attr]
        offset = _JSON_SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
        item, position = decoder.raw_decode(text, offset)
        members.append((key, offset, item))
        position = _JSON_SPACE.match(text, position).end()  # type: ignore[union-attr]
        if text[position] == ",":
            position = _JSON_SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
    return members


def _array_lines(
    text: str, items: list[Any], start: int, index: LineIndex
) -> list[tuple[int, Any]]:
    """Each item of the array that starts at offset ``start`` with the line it starts at
    (found by decoding the array item by item; line 1 for all when ``start`` is unknown)."""
    if start < 0:
        return [(1, item) for item in items]
    decoder = json.JSONDecoder()
    offsets: list[int] = []
    position = start + 1
    whitespace = re.compile(r"[\s,]*")
    for _ in items:
        position = whitespace.match(text, position).end()  # type: ignore[union-attr]
        offsets.append(position)
        try:
            _, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return [(1, item) for item in items]
    return [(index.line(o), item) for o, item in zip(offsets, items, strict=True)]


def _unwrap(value: Any) -> Any:
    """OpenReview API v2 writes a field as ``{"value": …}``."""
    if isinstance(value, dict) and "value" in value:
        return value["value"]
    return value


#: Objects a record holds its fields in, read after the record's own: OpenReview's
#: ``content``, Hugging Face daily papers' ``paper``.
_FIELD_HOLDERS = ("content", "paper")


def _held(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of :data:`_FIELD_HOLDERS` that ``record`` holds, in that order."""
    return [held for key in _FIELD_HOLDERS if isinstance(held := record.get(key), dict)]


def _field(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first non-empty value of ``keys`` in ``record``, else in the objects it holds
    (:func:`_held`), unwrapped (:func:`_unwrap`); None when there is none. A key written
    in other case (``Abstract``, ``TITLE``: spreadsheet exports) counts when no key is
    written as listed."""
    for source in (record, *_held(record)):
        for key in keys:
            if key in source:
                value = _unwrap(source[key])
                if value not in (None, "", []):
                    return value
    for source in (record, *_held(record)):
        folded = {k.casefold(): k for k in source if isinstance(k, str)}
        for key in keys:
            written = folded.get(key.casefold())
            if written is not None and written != key:
                value = _unwrap(source[written])
                if value not in (None, "", []):
                    return value
    return None


def _entry(position: int, line: int, record: dict[str, Any]) -> tuple[Entry, str | None]:
    record, replaced = without_lone_surrogates(record)
    faults = [SURROGATE_FAULT] if replaced else []
    abstract = _text_value("abstract", _field(record, _ABSTRACT_KEYS), faults)
    title = _text_value("title", _field(record, _TITLE_KEYS), faults)
    url = first_url(one_line(_field(record, _URL_KEYS)))
    is_openreview = "forum" in record or "invitation" in record or "invitations" in record
    forum = record.get("forum") or (record.get("id") if is_openreview else None)
    if url is None and forum:
        url = f"https://openreview.net/forum?id={forum}"
    plain_id = one_line(record.get("id"))
    if plain_id is None and isinstance(record.get("paper"), dict):
        plain_id = one_line(record["paper"].get("id"))  # Hugging Face: the arXiv id
    held_ids = record.get("externalIds")  # Semantic Scholar: {"ArXiv": …, "DOI": …}
    ids: dict[str, Any] = held_ids if isinstance(held_ids, dict) else {}
    ext = external_id(
        arxiv=one_line(_field(record, _ARXIV_KEYS) or ids.get("ArXiv")),
        doi_value=one_line(_field(record, _DOI_KEYS) or ids.get("DOI")),
        openreview=str(forum) if forum else None,
        urls=[url, plain_id],
    )
    if ext is None and plain_id:
        ext = external_id(arxiv=plain_id, doi_value=plain_id)
    venue = one_line(_field(record, _VENUE_KEYS))
    year = one_line(_field(record, ("year",)))
    if venue and year and year not in venue:
        venue = f"{venue} {year}"
    entry = record_entry(
        position,
        line,
        str(abstract) if abstract is not None else None,
        title=str(title) if title is not None else None,
        authors=author_names(_field(record, _AUTHOR_KEYS)),
        url=url,
        ext_id=ext,
    )
    if faults:
        entry = dataclasses.replace(entry, field_faults=(*entry.field_faults, *faults))
    if entry.no_abstract:  # the quarantine keeps the record as read: nothing is lost
        written = json.dumps(record, ensure_ascii=False, default=str)
        entry = dataclasses.replace(entry, raw_fields=written)
    return entry, venue


def _text_value(name: str, value: Any, faults: list[str]) -> str | None:
    """A record field as text: a string as it is, a list of strings joined by spaces (an
    abstract written as its paragraphs), a number as written; None for an object or a
    list holding other values, with a line added to ``faults`` naming the field."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    faults.append(f"{name}: a JSON {type(value).__name__}, not text; left out")
    return None
