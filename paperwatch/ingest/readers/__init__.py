"""Readers: one per listing format, behind one interface, and the choice between them.

Every reader is a module of this package with ``read(data: bytes, name: str) -> Listing``
(and ``read_text(text, name)`` for text already decoded); a reader turns the tree a kept
library builds (markdown-it-py, ``json``, bibtexparser, feedparser) into
:class:`paperwatch.ingest.parse.Entry` records: the abstract as written plus, where the format
has them, title, authors, URL, external id and list number. The formats and why each
library: docs/formats.md.

:func:`decide_format` chooses the reader of a file: a ``formats`` setting that names the
file's folder or glob first, then the extension, then (for ``.txt``) the content. It
records why, and names the candidates when the content fits more than one format.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import ModuleType

from paperwatch.ingest.parse import Listing, ListingDecodeError, decode_listing

#: Formats paperwatch reads, by the name settings and ``listing_files.format`` use.
FORMATS = ("text", "lines", "markdown", "json", "jsonl", "yaml", "bibtex", "feed")
#: Plain-language names, for messages.
FORMAT_NAMES = {
    "text": "a plain-text listing (one abstract per paragraph)",
    "lines": "one abstract per line",
    "markdown": "a Markdown digest",
    "json": "JSON",
    "jsonl": "JSON Lines",
    "yaml": "YAML records",
    "bibtex": "BibTeX",
    "feed": "an Atom or RSS feed",
}
#: The format an extension names (lower case); ``.txt`` is judged by its content.
EXTENSIONS: dict[str, str | None] = {
    ".txt": None,
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".bib": "bibtex",
    ".xml": "feed",
    ".atom": "feed",
    ".rss": "feed",
}


class ReaderError(ValueError):
    """The text is not valid in the format it is read as: ``line`` (1-based) and ``detail``
    say where and what; ``str()`` is the quarantine reason."""

    def __init__(self, fmt: str, line: int | None, detail: str) -> None:
        self.format, self.line, self.detail = fmt, line, detail
        where = f"line {line}: " if line else ""
        super().__init__(f"cannot be read as {FORMAT_NAMES[fmt]}: {where}{detail}")


@dataclass(frozen=True, slots=True)
class FormatDecision:
    """Which reader reads a file and why. ``format`` is None when no reader is chosen:
    ``candidates`` then names the formats the content fits (quarantined, never guessed)."""

    format: str | None
    reason: str
    candidates: tuple[str, ...] = ()


_BIB_START = re.compile(r"\A(?:\s*%[^\n]*\n)*\s*@[A-Za-z]+\s*[{(]")
_FEED_ROOT = re.compile(r"<(?:feed|rss|rdf:RDF)\b", re.IGNORECASE)
_SNIFF_CHARS = 65536
#: One abstract per line: each line at least this many words and ending a sentence.
_LINE_MIN_WORDS = 15
_SENTENCE_END = (".", "。", ")", "!", "?", "．")


def content_candidates(text: str) -> tuple[str, ...]:
    """The structured formats ``text`` fits, judged on its first 64 KiB (JSON on the whole).

    ``feed``: an XML document whose root is ``<feed>``, ``<rss>`` or ``<rdf:RDF>``;
    ``json``: the text parses as JSON; ``jsonl``: every line (the first 50) is a JSON
    object or array; ``bibtex``: the first thing after ``%`` comments is an ``@type{``
    record; ``markdown``: two headings, or one and a second sign (a rule, a table row,
    a metadata line such as ``**Authors:**``), as :func:`paperwatch.ingest.shapes.file_format`
    judges; ``lines``: after an optional header, two or more lines without a blank line
    between, most of at least 15 words ending a sentence (:func:`is_one_per_line`). Empty: a
    plain-text listing.
    """
    from paperwatch.ingest.parse import parse_header
    from paperwatch.ingest.shapes import file_format

    sample = text[:_SNIFF_CHARS].lstrip("\ufeff \t\r\n")
    if sample.startswith("<"):
        return ("feed",) if _FEED_ROOT.search(sample[:4096]) else ()
    if sample[:1] in "{[":
        found = file_format(text)
        if found == "JSON (.json)":
            return ("json",)
        if found == "JSON Lines (.jsonl)":
            return ("jsonl",)
    candidates = []
    if sample.startswith(("@", "%")) and _BIB_START.match(sample):
        candidates.append("bibtex")
    if "#" in sample and _looks_markdown(sample):
        candidates.append("markdown")
    lines = [line.strip() for line in sample.splitlines()]
    if lines and parse_header(lines[0]) is not None:
        lines = lines[1:]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    if len(text) > _SNIFF_CHARS and lines:
        lines.pop()  # the sample may end in the middle of a line
    if is_one_per_line(lines):
        candidates.append("lines")
    return tuple(candidates)


def is_one_per_line(lines: list[str]) -> bool:
    """True when ``lines`` (stripped, header and outer blank lines removed) are abstracts
    one per line: no blank line between them, at least two of them, and at least 3 in 4
    each of at least 15 words ending a sentence. A few short lines (an abstract split
    over two or three lines) do not change what the file is; hard-wrapped paragraphs
    (about 12 words a line, most ending mid-sentence) are far from it."""
    if len(lines) < 2 or not all(lines):
        return False
    long_lines = sum(
        1 for line in lines if len(line.split()) >= _LINE_MIN_WORDS and line.endswith(_SENTENCE_END)
    )
    return long_lines >= 2 and 4 * long_lines >= 3 * len(lines)


def _looks_markdown(sample: str) -> bool:
    """Two Markdown headings, or one and a second sign (a rule, a table row, a metadata
    line): the rule of :func:`paperwatch.ingest.shapes.file_format`, without its other formats."""
    from paperwatch.ingest.shapes import line_shape

    shapes = [line_shape(line) for line in sample.splitlines()]
    headings = shapes.count("markdown_heading")
    return headings >= 2 or (headings == 1 and len(set(shapes) - {None}) >= 2)


def pinned_format(rel: str, pins: Mapping[str, str]) -> tuple[str, str] | None:
    """The format the ``formats`` setting pins for the file at ``rel`` (a POSIX path
    relative to the watched folder), with the pattern that matched, or None.

    A pattern is a glob matched against the whole relative path (``digests/*.txt``,
    ``**/*.md``) or a folder (``digests`` or ``digests/``: every file under it). The
    longest matching pattern wins.
    """
    matched: list[tuple[int, str, str]] = []
    path = PurePosixPath(rel)
    for pattern, fmt in pins.items():
        folder = pattern.rstrip("/")
        if (
            fnmatch.fnmatchcase(rel, pattern)
            or (pattern.startswith("**/") and fnmatch.fnmatchcase(path.name, pattern[3:]))
            or (folder and any(str(parent) == folder for parent in path.parents))
        ):
            matched.append((len(pattern), pattern, fmt))
    if not matched:
        return None
    _, pattern, fmt = max(matched)
    return fmt, pattern


def decide_format(rel: str, text: str, pins: Mapping[str, str] | None = None) -> FormatDecision:
    """Choose the reader of the file at ``rel`` (relative POSIX path) holding ``text``.

    In order: a ``formats`` setting that matches ``rel`` (:func:`pinned_format`); the
    extension (:data:`EXTENSIONS`); for ``.txt`` (and other names) the content
    (:func:`content_candidates`): no structured candidate is the plain-text format, one
    is that format, two or more are ambiguous (``format`` None, the candidates named).

    Returns:
        A :class:`FormatDecision` whose ``reason`` is stored in ``listing_files.format_reason``.
    """
    if pins:
        pinned = pinned_format(rel, pins)
        if pinned is not None:
            return FormatDecision(pinned[0], f"pinned by the formats setting ({pinned[1]!r})")
    suffix = PurePosixPath(rel).suffix.lower()
    by_extension = EXTENSIONS.get(suffix)
    if by_extension is not None:
        return FormatDecision(by_extension, f"by extension ({suffix})")
    candidates = content_candidates(text)
    if not candidates:
        return FormatDecision("text", "by content: paragraphs of text")
    if len(candidates) == 1:
        return FormatDecision(candidates[0], f"by content: {FORMAT_NAMES[candidates[0]]}")
    names = " or ".join(FORMAT_NAMES[c] for c in candidates)
    return FormatDecision(
        None,
        f"ambiguous: the content could be {names} ({', '.join(candidates)}); "
        "pin the format with the formats setting",
        candidates,
    )


def reader(fmt: str) -> ModuleType:
    """The reader module of ``fmt`` (one of :data:`FORMATS`).

    Raises:
        KeyError: ``fmt`` is not a format paperwatch reads.
    """
    from paperwatch.ingest.readers import bibtex, feed, jsonrec, lines, markdown, text, yamlrec

    modules: dict[str, ModuleType] = {
        "text": text,
        "lines": lines,
        "markdown": markdown,
        "json": jsonrec,
        "jsonl": jsonrec,
        "yaml": yamlrec,
        "bibtex": bibtex,
        "feed": feed,
    }
    return modules[fmt]


def read_text(fmt: str, text: str, name: str = "<text>") -> Listing:
    """Read decoded ``text`` as ``fmt``; the record fields of a structured format (title,
    authors, url, external id, venue), the titles the text formats find, and every
    format's header made safe (:func:`paperwatch.untrusted.safe_entry`, ``safe_header``).

    Raises:
        ReaderError: the text is not valid in that format (line and detail).
    """
    from paperwatch.untrusted import safe_entry, safe_header

    module = reader(fmt)
    read: Callable[..., Listing] = module.read_text
    listing = (
        read(text, name, lines=fmt == "jsonl") if fmt in ("json", "jsonl") else read(text, name)
    )
    # The header goes to the mail's Subject and the report's heading, whatever the format.
    # The text formats' entries are their own text; only a title they find (a read-time
    # title, a Refer ``%T`` line) is capped.
    plain = fmt in ("text", "lines")
    return dataclasses.replace(
        listing,
        header=safe_header(listing.header),
        entries=[
            safe_entry(entry) if entry.title or not plain else entry for entry in listing.entries
        ],
    )


def read(data: bytes, name: str, pins: Mapping[str, str] | None = None) -> Listing:
    """Decode ``data`` (strict UTF-8, BOM dropped), choose its reader by ``name`` and
    content (:func:`decide_format`) and read it.

    Raises:
        ListingDecodeError: not UTF-8.
        ReaderError: ambiguous, or not valid in the chosen format.
    """
    text = decode_listing(data, name)
    decision = decide_format(name, text, pins)
    if decision.format is None:
        raise ReaderError("text", None, decision.reason)
    return read_text(decision.format, text, name)


__all__ = [
    "EXTENSIONS",
    "FORMATS",
    "FORMAT_NAMES",
    "FormatDecision",
    "ListingDecodeError",
    "ReaderError",
    "decide_format",
    "read",
    "read_text",
]
