"""Parsing listing files into a header and entries. Pure functions, no I/O.

A listing file (see docs/cleaning.md) is UTF-8 text: an optional header line
such as ``NeurIPS 2026 论文列表`` or ``ICLR 2025 accepted papers``, then one
abstract per paragraph, paragraphs separated by blank lines. Parsing tolerates a
UTF-8 byte-order mark, CRLF/CR line endings, trailing spaces, several blank or
whitespace-only lines between entries, and hard-wrapped paragraphs (their lines
are joined with one space). Form feeds, vertical tabs, NEL and the Unicode line
and paragraph separators count as line breaks too.

Two kinds of paragraph name the paragraph after them rather than being abstracts: a
newsletter's ``Title (4 minute read)``, and the block arXiv's listing pages
(``arxiv.org/list/…/new``, copied as text) write above each abstract, ``[1]
arXiv:2611.47001 [pdf, html, other]`` then ``Title:``, ``Authors:``, ``Comments:`` and
``Subjects:`` lines (:func:`_arxiv_block`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

_BOM = "\ufeff"
#: Line breaks: CRLF, CR, LF, and the ones text tools leave in (form feed at a
#: pdftotext page break, vertical tab, NEL, Unicode line and paragraph separators).
_LINE_BREAK_CHARS = "\r\n\v\f\x85\u2028\u2029"
_LINE_BREAK = re.compile(f"\r\n|[{_LINE_BREAK_CHARS}]")
#: The breaks of _LINE_BREAK an editor does not count as a new line.
_QUIET_BREAKS = "\v\f\x85\u2028\u2029"
#: The header: a short first line holding a venue and a four-digit year, and
#: optionally a label ("accepted papers", "论文列表"). Venue: 1-6 words before the year.
_HEADER = re.compile(
    r"^(?P<venue>[^\s\d][^\n]{0,60}?)\s*(?:'|’)?(?P<year>(?:19|20)\d{2})\b\s*(?P<label>[^\n]*)$"
)
#: A date written before the header's year (``Friday, November 20, 2026``,
#: ``20 Nov 2026``): the year is the date's, and the date is not part of the venue.
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_WEEKDAY = r"(?:Mon|Tue(?:s)?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_WRITTEN_DATE = re.compile(
    rf"(?<!\w)(?:{_WEEKDAY},?\s+)?(?:{_MONTH}\s+{_DAY}|{_DAY}\s+{_MONTH})\s*,?\s*\Z",
    re.IGNORECASE,
)
#: Brackets a header may write its year in: ``ICML (2026)``, ``cs.AI（2026-11-20）``.
_OPENING_BRACKETS = "([{（【「『"
_CLOSING_BRACKETS = ")]}）】」』"
#: The month and day after the year of an ISO date (``2026-11-20``, ``2026/11/20``).
_DATE_REST = re.compile(r"\A[-/.]\d{1,2}[-/.]\d{1,2}\b")
_HEADER_MAX_CHARS = 100
_HEADER_MAX_WORDS = 12
_VENUE_WORDS = re.compile(r"^[A-Z][\w&.\-]*(?: [A-Z][\w&.\-]*){0,3}$")
_NAME = re.compile(r"^(?P<seq>\d{1,9})_(?P<token>[0-9a-fA-F]{16})\.txt$")
#: Characters that show nothing: format (Cf) and control (Cc) characters such as the
#: zero-width space, joiners, word joiner, soft hyphen, bidi marks and BOM, and the
#: letters that render blank (Hangul fillers, braille blank).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_BLANK_PRINTABLE = " " + "".join(sorted(_BLANK_LETTERS))


def is_blank(line: str) -> bool:
    """True when ``line`` shows nothing: only white space (NBSP and the other Unicode
    spaces included), invisible format or control characters, or blank-rendering letters.

    Such a line separates paragraphs, as an empty line does: a separator typed as
    NBSP + zero-width space + NBSP must not merge two abstracts.
    """
    if not line or line.isspace():
        return True
    if line.isprintable():
        # Its only white space can be U+0020, and it has no format or control character
        # (neither is printable): blank when nothing but spaces and blank letters remain.
        return not line.strip(_BLANK_PRINTABLE)
    return all(
        c.isspace() or c in _BLANK_LETTERS or unicodedata.category(c) in ("Cf", "Cc") for c in line
    )


class ListingDecodeError(ValueError):
    """The file is not valid UTF-8. Carries the byte offset and 1-based line of the fault."""

    def __init__(self, path: str, offset: int, line: int, detail: str) -> None:
        self.path, self.offset, self.line, self.detail = path, offset, line, detail
        super().__init__(f"{path}: not valid UTF-8 at byte {offset} (line {line}): {detail}")


@dataclass(frozen=True, slots=True)
class Header:
    """The header line of a listing: venue (``NeurIPS``), year (2026), label (``论文列表``)."""

    text: str
    venue: str
    year: int
    label: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One abstract as written: 1-based ``position`` among entries, 1-based first ``line``.

    ``text`` is the paragraph's lines joined with one space; ``line_breaks`` holds the
    offsets in ``text`` of the spaces that were line breaks (empty for one line).
    """

    position: int
    line: int
    text: str
    line_breaks: tuple[int, ...] = ()
    #: What a structured format (Markdown digest, JSON, BibTeX, a feed) says beside the
    #: abstract; None (or empty) where the format has no such field. ``external_id`` is
    #: normalised (:func:`paperwatch.ingest.readers.records.external_id`): ``arXiv:2611.01234``,
    #: ``doi:10.…``, ``openreview:…``.
    title: str | None = None
    authors: tuple[str, ...] = ()
    url: str | None = None
    external_id: str | None = None
    #: The list number the format gives the record (a digest's ``## [3] Title``), if any.
    listed_number: int | None = None
    #: True for a record that has no abstract (a title-only record, a BibTeX entry
    #: without an ``abstract`` field): ``text`` then holds what identifies the record.
    no_abstract: bool = False
    #: True for a block of a digest's own prose outside any paper (its introduction, a
    #: notice before the first paper, a section's lead-in): kept so that nothing is lost,
    #: quarantined as such rather than judged as an abstract.
    outside_paper: bool = False
    #: What :func:`paperwatch.untrusted.safe_entry` changed in the fields above, one line
    #: per field ("url: holds a user name or password, not linked (…)"), and the fields as
    #: written (a JSON object) when it changed any.
    field_faults: tuple[str, ...] = ()
    raw_fields: str | None = None


@dataclass(frozen=True, slots=True)
class Listing:
    """A parsed listing file: its header (or None) and its entries, in file order.

    ``format`` names the reader that made it (``text`` for the blank-line format);
    ``format_note`` how the reader read it when that is not the format's usual way
    (appended to ``listing_files.format_reason``).
    """

    header: Header | None
    entries: list[Entry] = field(default_factory=list)
    line_count: int = 0
    format: str = "text"
    format_note: str | None = None


def sequence_number(name: str) -> int | None:
    """The ``NNN`` of a file named ``NNN_<16 hex>.txt``, or None for other names."""
    match = _NAME.match(name)
    return int(match.group("seq")) if match else None


def decode_listing(data: bytes, path: str = "<bytes>") -> str:
    """Decode a listing's bytes as strict UTF-8, dropping a leading byte-order mark.

    Raises:
        ListingDecodeError: the bytes are not UTF-8 (offset and line of the first bad byte).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ListingDecodeError(path, exc.start, line, exc.reason) from None
    return text[1:] if text.startswith(_BOM) else text


def split_lines(text: str) -> list[str]:
    """``text`` split at every line break of :data:`_LINE_BREAK` (``_LINE_BREAK.split``:
    a text ending with a break ends with an empty line; ``""`` is one empty line).

    ``str.splitlines`` breaks at the same characters and at three more (the file, group
    and record separators, ``\\x1c``-``\\x1e``); when the text holds none of those it is
    used, with the same result (docs/design.md, "Fast paths in cleaning and parsing").
    """
    if "\x1c" in text or "\x1d" in text or "\x1e" in text:
        return _LINE_BREAK.split(text)
    lines = text.splitlines()
    if not text or text[-1] in _LINE_BREAK_CHARS:
        lines.append("")
    return lines


def line_numbers(text: str, lines: list[str]) -> Sequence[int]:
    """The 1-based line, as an editor or ``grep -n`` counts it, of each of ``lines``.

    ``lines`` is :func:`split_lines` of ``text``. Editors break lines at LF, CRLF and CR
    only; a form feed, vertical tab, NEL or U+2028/U+2029 also ends one of ``lines``
    but not the count, so an error names the line the user will find.
    """
    if not any(quiet in text for quiet in _QUIET_BREAKS):  # str's search: fast
        return range(1, len(lines) + 1)
    numbers, number = [1], 1
    for separator in _LINE_BREAK.findall(text):
        number += separator in ("\n", "\r", "\r\n")
        numbers.append(number)
    return numbers


def text_line_count(text: str) -> int:
    """The number of lines an editor shows for ``text`` (LF, CRLF and CR break; none: 0)."""
    count = text.count("\n")
    if "\r" in text:
        count += text.count("\r") - text.count("\r\n")
    return count + (0 if not text or text[-1] in "\r\n" else 1)


def parse_header(line: str) -> Header | None:
    """Recognise a header line (venue, year, label), or return None for an abstract.

    A header is short (at most 100 characters and 12 words), does not end with a
    sentence full stop, and holds a year 1900-2099 after the venue. A date written
    before the year (``TLDR AI - Friday, November 20, 2026``) is not part of the venue
    (``TLDR AI``); nothing left before it: no header.
    """
    text = line.strip()
    if not text or len(text) > _HEADER_MAX_CHARS or len(text.split()) > _HEADER_MAX_WORDS:
        return None
    if text.endswith((".", "。")) and not text.endswith("..."):
        return None
    match = _HEADER.match(text)
    if not match:
        return None
    venue = match.group("venue")
    date = _WRITTEN_DATE.search(venue)
    if date is not None:
        venue = venue[: date.start()]
    venue = venue.strip(" -–—:,'’#" + _OPENING_BRACKETS)
    if not venue:
        return None
    # The rest of an ISO date (2026-11-20) and the bracket closing ``(2026)`` are no label.
    label = _DATE_REST.sub("", match.group("label"), count=1)
    label = label.lstrip(" " + _CLOSING_BRACKETS).strip()
    return Header(text=text, venue=venue, year=int(match.group("year")), label=label)


def parse_listing(text: str) -> Listing:
    """Split decoded listing text into a header and entries.

    Args:
        text: the whole file as ``str`` (see :func:`decode_listing`).

    Returns:
        A :class:`Listing`. The header is taken from the first paragraph when that
        paragraph is a single line that :func:`parse_header` recognises; otherwise
        the first paragraph is an entry. Entries are numbered from 1; ``line`` is
        the 1-based line of the entry's first line, as an editor counts it
        (:func:`line_numbers`). An empty file gives no header and no entries.
    """
    if text.startswith(_BOM):
        text = text[1:]
    lines = split_lines(text)
    paragraphs: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for number, raw in zip(line_numbers(text, lines), lines, strict=True):
        stripped = "" if is_blank(raw) else raw.strip()
        if stripped:
            if not current:
                start = number
            current.append(stripped)
        elif current:
            paragraphs.append((start, current))
            current = []
    if current:
        paragraphs.append((start, current))

    header: Header | None = None
    if paragraphs and _read_time_title(paragraphs[0][1]) is not None:
        pass  # a newsletter's first headline, its year not a venue's (no header)
    elif paragraphs and len(paragraphs[0][1]) == 1:
        header = parse_header(paragraphs[0][1][0])
        if header is not None:
            paragraphs = paragraphs[1:]
    elif paragraphs and len(paragraphs[0][1]) > 1:
        # A header directly followed by an abstract without a blank line between.
        # Stricter: the venue must be capitalised words ("ICML", "ACL Findings").
        candidate = parse_header(paragraphs[0][1][0])
        if candidate is not None and _VENUE_WORDS.match(candidate.venue):
            header = candidate
            first_start, first_lines = paragraphs[0]
            paragraphs[0] = (first_start + 1, first_lines[1:])

    entries = []
    for i, (start, chunk, title) in enumerate(_read_time_titles(paragraphs), start=1):
        if isinstance(title, _ArxivBlock):
            block = title
            entries.append(
                Entry(
                    position=i,
                    line=start,
                    text=" ".join(chunk) if chunk else block.title,
                    line_breaks=_line_breaks(chunk) if chunk else (),
                    title=block.title,
                    authors=block.authors,
                    url=f"https://arxiv.org/abs/{block.arxiv_id}",
                    external_id=f"arXiv:{block.arxiv_id}",
                    no_abstract=not chunk,
                )
            )
            continue
        entries.append(_paragraph_entry(i, start, chunk, title))
    return Listing(header=header, entries=entries, line_count=text_line_count(text))


#: A newsletter's read-time marker ending a title: ``(4 minute read)``, ``(12 min read)``.
_READ_TIME = re.compile(r"\s*\(\d{1,3}\s+min(?:ute)?s?\s+read\)\Z", re.IGNORECASE)
#: A paragraph ending with a read-time marker is a title when it has at most this many
#: words before the marker and does not hold a sentence's end (``. `` inside it): a
#: newsletter's headlines run to about 15 words, a short abstract that happens to end
#: with "(5 min read)" to 25 and more.
_TITLE_MAX_WORDS = 20


def _marked_title(lines: list[str], marker: re.Pattern[str]) -> str | None:
    """The title of a paragraph that ends with ``marker`` (a parenthesised note matched at
    the end: :data:`_READ_TIME`, :data:`_SPONSOR`), without it, when it has 1 to
    :data:`_TITLE_MAX_WORDS` words and no sentence end (``. ``); else None.

    The marker holds the paragraph's last ``(``, so the search starts there rather than at
    every character of an abstract (the title is stripped either way).
    """
    if not lines[-1].endswith(")"):
        return None
    text = " ".join(lines)
    opening = text.rfind("(")
    found = marker.search(text, opening) if opening >= 0 else None
    if found is None:
        return None
    title = text[: found.start()].strip()
    if ". " in title or not 0 < len(title.split()) <= _TITLE_MAX_WORDS:
        return None
    return title


def _read_time_title(lines: list[str]) -> str | None:
    """The title of a paragraph ending with a read-time marker (``Title (4 minute read)``),
    or None: :func:`_marked_title`."""
    return _marked_title(lines, _READ_TIME)


@dataclass(frozen=True, slots=True)
class _ArxivBlock:
    """The fields of an arXiv listing page's block above an abstract."""

    arxiv_id: str
    title: str
    authors: tuple[str, ...]


#: The first line of an arXiv listing page's block: ``[3] arXiv:2611.47001 [pdf, other]``,
#: ``[9] arXiv:2611.47003 (cross-list from cs.LG) [pdf, html, other]``.
_ARXIV_BLOCK_FIRST = re.compile(
    r"\A\[\d{1,5}\]\s+arXiv:(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?"
    r"(?:\s+\([^()]{1,60}\))?(?:\s+\[[^\]]{1,60}\])?\Z"
)
#: The labels of the block's lines; a line without one continues the field above it.
_ARXIV_FIELD = re.compile(
    r"\A(Title|Authors|Comments|Subjects|Journal-ref|DOI|Report-no|MSC-class|ACM-class):\s*(.*)\Z"
)
_ARXIV_AUTHORS_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")


def _paragraph_entry(
    position: int, start: int, chunk: list[str], title: str | _Sponsored | None
) -> Entry:
    """The entry of one paragraph (``chunk``, its first line ``start``), with the title of a
    headline above it, or its own labelled title and authors (:func:`_labelled_fields`), or
    a Google Scholar alert's result or footer (:func:`_scholar_entry`)."""
    if (
        title is None
        and (len(chunk) > 1 or chunk[0][:1] in _SCHOLAR_FOOTER_OPENERS)
        and (scholar := _scholar_entry(position, start, chunk)) is not None
    ):
        return scholar
    labelled = _labelled_fields(chunk) if title is None else None
    if labelled is not None:
        title, authors = labelled
    else:
        authors = ()
    return Entry(
        position=position,
        line=start,
        text=" ".join(chunk),
        line_breaks=_line_breaks(chunk),
        title=title.title if isinstance(title, _Sponsored) else title,
        authors=authors,
        # An advertisement is the newsletter's own notice, not a paper.
        outside_paper=isinstance(title, _Sponsored),
    )


#: A Google Scholar alert's source line under a result's title: authors as initials and
#: surname, the list cut with "…", `` - ``, then the venue and year, maybe the site
#: (``MS Stock, KK Harmon, JP Farthing… - Exercise and Sport …, 2026``).
#: A surname opens with a capital, after at most two particles (``A de Vries``).
_SCHOLAR_NAME = r"[A-Z]{1,4}(?: [a-z]{1,3}){0,2} [^\W\d_a-z][^\s,…]*(?:[ -][^\W\d_a-z][^\s,…]*)?"
_SCHOLAR_SOURCE = re.compile(
    rf"\A(?P<names>{_SCHOLAR_NAME}(?:, {_SCHOLAR_NAME})*)(?:…|\.\.\.)? - .*\b(?:19|20)\d\d\b"
)
#: The kind of link Scholar writes before a result's title.
_SCHOLAR_MARK = re.compile(r"\A\[(?:PDF|HTML|LINK|BOOK|CITATION|DOC)\]\s*")
#: The first letters of :data:`_SCHOLAR_FOOTER` (a cheap test before the pattern).
_SCHOLAR_FOOTER_OPENERS = frozenset("TtLlCc")
#: The alert's own lines after the results.
_SCHOLAR_FOOTER = re.compile(
    r"\A(?:This message was sent by Google Scholar\b|This (?:Google Scholar )?alert is "
    r"(?:sent|brought to you) by Google|(?:LIST|CANCEL) ALERTS?\Z)",
    re.IGNORECASE,
)


def _scholar_entry(position: int, start: int, lines: list[str]) -> Entry | None:
    """The entry of a Google Scholar alert's paragraph, or None for any other paragraph.

    A result is one to three title lines (``[PDF]`` and the like dropped), the source line
    (:data:`_SCHOLAR_SOURCE`: its names are the authors, ``…`` dropped), then the snippet,
    which is the text; a result without a snippet has no abstract. The alert's footer
    (:data:`_SCHOLAR_FOOTER`) is an entry outside any paper.
    """
    if _SCHOLAR_FOOTER.match(lines[0]):
        return Entry(position, start, " ".join(lines), _line_breaks(lines), outside_paper=True)
    for at in range(1, min(len(lines), 4)):
        if " - " in lines[at] and (source := _SCHOLAR_SOURCE.match(lines[at])) is not None:
            break
    else:
        return None
    heading = [_SCHOLAR_MARK.sub("", line) for line in lines[:at]]
    if heading[-1].endswith(".") or not heading[0]:
        return None
    names = tuple(n.rstrip(" .…") for n in source.group("names").split(", "))
    title, snippet = " ".join(heading), lines[at + 1 :]
    return Entry(
        position=position,
        line=start,
        text=" ".join(snippet) if snippet else title,
        line_breaks=_line_breaks(snippet),
        title=title,
        authors=names,
        no_abstract=not snippet,
    )


#: A labelled line of a paragraph that names its own fields (:func:`_labelled_fields`).
_LABELLED_FIELD = re.compile(r"\A(Title|Authors?|Abstract|Summary)\s*:\s*(.*)\Z", re.IGNORECASE)


def _labelled_fields(lines: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """The title and authors of a paragraph that labels its lines: a first line ``Title:
    …``, then ``Authors: …`` and ``Abstract: …`` (or ``Summary:``), one field each, as a
    conference's export of selected papers writes them; else None.

    A line without a label continues the field above it (a wrapped title or author
    list). The abstract stays the paragraph's text: the cleaner drops the labelled
    metadata lines ahead of the abstract (:mod:`paperwatch.ingest.clean`).
    """
    if lines[0][:5].lower() != "title" or len(lines) < 2:
        return None
    fields: dict[str, str] = {}
    label = ""
    for line in lines:
        found = _LABELLED_FIELD.match(line)
        if found is not None:
            label = found.group(1).lower().rstrip("s").replace("summary", "abstract")
            fields[label] = found.group(2).strip()
        elif label:
            fields[label] = f"{fields[label]} {line}".strip()
    if not fields.get("title") or "abstract" not in fields:
        return None
    names = _ARXIV_AUTHORS_SPLIT.split(fields.get("author", ""))
    return fields["title"], tuple(n for n in names if n)


def _arxiv_block(lines: list[str]) -> _ArxivBlock | None:
    """The fields of ``lines`` when the paragraph is the block an arXiv listing page
    writes above an abstract: a first line ``[n] arXiv:ID [links]``, then labelled lines
    (:data:`_ARXIV_FIELD`) of which one is a non-empty ``Title:``; else None.

    A line without a label continues the field above it, except the first such line
    after ``Title:`` when it is a list of names (:func:`person_names`): the authors, as
    the pages since 2024 write them, without an ``Authors:`` label. Authors are split on
    commas and "and"; the arXiv id is kept without its version."""
    first = _ARXIV_BLOCK_FIRST.match(lines[0])
    if first is None or len(lines) < 2:
        return None
    fields: dict[str, str] = {}
    label = None
    for line in lines[1:]:
        found = _ARXIV_FIELD.match(line)
        if found is not None:
            label = found.group(1)
            fields[label] = found.group(2).strip()
        elif label == "Title" and "Authors" not in fields and person_names(line) is not None:
            label, fields["Authors"] = "Authors", line
        elif label is None:
            return None
        else:
            fields[label] = f"{fields[label]} {line}".strip()
    title = fields.get("Title")
    if not title:
        return None
    names = _ARXIV_AUTHORS_SPLIT.split(fields.get("Authors", ""))
    return _ArxivBlock(first.group(1), title, tuple(n for n in names if n))


#: A newsletter's sponsor headline: ``Try Acme free for 30 days (Sponsor)``.
_SPONSOR = re.compile(r"\s*\((?:sponsor|sponsored)\)\Z", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Sponsored:
    """The headline of a sponsor's message: the paragraph after it is an advertisement."""

    title: str


def _sponsor_title(lines: list[str]) -> _Sponsored | None:
    """The headline of a paragraph ending ``(Sponsor)`` (:func:`_marked_title`), or None."""
    title = _marked_title(lines, _SPONSOR)
    return None if title is None else _Sponsored(title)


def _read_time_titles(
    paragraphs: list[tuple[int, list[str]]],
) -> list[tuple[int, list[str], str | _ArxivBlock | _Sponsored | None]]:
    """``paragraphs`` (first line, lines) as entries (first line, lines, title).

    A paragraph that is a read-time title (:func:`_read_time_title`: a newsletter's
    ``Title (4 minute read)``) followed by a paragraph that is not one is the title of
    that paragraph: one entry, at the title's line. An arXiv listing page's block
    (:func:`_arxiv_block`) followed by a paragraph that is not one is that paragraph's
    :class:`_ArxivBlock`, one entry at the block's line; a block with no abstract after
    it (a replacement) is an entry with no lines. A sponsor's headline
    (:func:`_sponsor_title`) followed by a paragraph that is no title is that
    advertisement's :class:`_Sponsored`, one entry at the headline's line. Every other
    paragraph is an entry of its own without a title (a title with no summary after it
    too).
    """
    out: list[tuple[int, list[str], str | _ArxivBlock | _Sponsored | None]] = []
    # What each paragraph names, judged once: an arXiv block, a headline, or nothing.
    kinds = [
        _arxiv_block(lines) or _read_time_title(lines) or _sponsor_title(lines)
        for _, lines in paragraphs
    ]
    i = 0
    while i < len(paragraphs):
        start, lines = paragraphs[i]
        kind, after = kinds[i], kinds[i + 1] if i + 1 < len(paragraphs) else None
        has_next = i + 1 < len(paragraphs)
        if isinstance(kind, _ArxivBlock):
            follows = has_next and not isinstance(after, _ArxivBlock)
            out.append((start, paragraphs[i + 1][1] if follows else [], kind))
            i += 2 if follows else 1
        elif kind is not None and has_next and not isinstance(after, str | _Sponsored):
            out.append((start, paragraphs[i + 1][1], kind))
            i += 2
        else:
            out.append((start, lines, None))
            i += 1
    return out


def _line_breaks(lines: list[str]) -> tuple[int, ...]:
    """Offsets, in ``" ".join(lines)``, of the spaces that join ``lines``."""
    if len(lines) == 1:
        return ()
    offsets, offset = [], -1
    for line in lines[:-1]:
        offset += len(line) + 1
        offsets.append(offset)
    return tuple(offsets)


#: A word of a person's name: capitalised (``Ada``, ``O'Neil``, ``Jean-Luc``), or an
#: initial (``J.``, ``J.-P.``); letters only, no digits.
_NAME_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’\-](?=[^\W\d_]))*|[^\W\d_]\.(?:-[^\W\d_]\.)?")
#: Lower-case particles a name may hold between its capitalised words (``Vincent van Gogh``).
_NAME_PARTICLES = frozenset(
    {"van", "von", "de", "der", "den", "del", "della", "da", "di", "du", "dos", "das"}
    | {"la", "le", "bin", "ibn", "al", "el", "ter", "ten", "zu", "y"}
)
#: What separates the names of a line: ``,`` (``, and``), `` · ``, ``;``, `` and ``, `` & ``.
_NAMES_SPLIT = re.compile(r"\s*(?:,\s*(?:and\s+|&\s*)?|\s·\s|;|\s&\s|\sand\s)\s*")
_NAME_MIN_WORDS, _NAME_MAX_WORDS = 2, 4
_NAMES_MAX = 100
#: Capitalised function words: in a title (``Mixture Of Experts``), never in a name.
_TITLE_WORDS = frozenset(
    {"A", "An", "The", "For", "Of", "In", "On", "With", "To", "From", "Via", "At", "By"}
    | {"Is", "Are", "Do", "Does", "When", "Why", "How", "What", "Towards", "Beyond", "Into"}
)
#: A name all of whose words are English words at least this frequent (Zipf scale,
#: wordfreq: 3.5 is about 3 per million words) is a phrase (``Graph Neural Networks``,
#: ``Spotlight Poster``), not a person; ``Grace Hopper`` keeps ``hopper`` (3.5-).
_COMMON_WORD_ZIPF = 3.5


def person_names(line: str) -> tuple[str, ...] | None:
    """The names of ``line`` when the whole line is a list of people's names, else None.

    The line must be only names separated by commas, `` · ``, semicolons, "and" or "&"
    (at most 100 names): each name 2 to 4 words, each word capitalised or an initial
    (``J.``), lower-case particles (``van``, ``de``) only between them; letters only (no
    digits, footnote marks or other punctuation), so a sentence, a title with a colon or
    an affiliation in parentheses is not names; no capitalised function word (``Of``,
    ``For``); and a line without a comma, semicolon or `` · `` is no names when every name
    in it is common English words only (:func:`_common_words_only`), so a Title-Case
    phrase is not names either (``Computer Vision and Pattern Recognition``, ``Spotlight
    Poster``; ``Rose Young`` alone is missed, ``Rose Young, Karl Weber`` is not). A single
    name (``Pedro Alves``) is a list of one.
    """
    text = " ".join(line.split())
    if not text or len(text) > 4000:
        return None
    names = _NAMES_SPLIT.split(text)
    if len(names) > _NAMES_MAX:
        return None
    for name in names:
        words = name.split(" ")
        if not _NAME_MIN_WORDS <= len(words) <= _NAME_MAX_WORDS:
            return None
        for position, word in enumerate(words):
            if not _NAME_WORD.fullmatch(word) or word in _TITLE_WORDS:
                return None
            if not all(c.isalpha() for c in word if c not in "'’-."):  # ¹, ², †
                return None
            inner = 0 < position < len(words) - 1
            if not word[0].isupper() and not (inner and word in _NAME_PARTICLES):
                return None
    listed = any(mark in text for mark in ",;·")  # a phrase is not written so
    if not listed and all(_common_words_only(name.split(" ")) for name in names):
        return None
    return tuple(names)


def _common_words_only(words: list[str]) -> bool:
    """Whether every word is a dictionary word of English (pyspellchecker) at least
    :data:`_COMMON_WORD_ZIPF` frequent (wordfreq): a phrase, not a person's name."""
    from wordfreq import zipf_frequency

    from paperwatch.ingest.ligatures import _known_words

    checker = _known_words()
    return all(
        (lower := word.lower()) in checker and zipf_frequency(lower, "en") >= _COMMON_WORD_ZIPF
        for word in words
    )
