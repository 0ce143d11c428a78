"""BibTeX files (PMLR, ACL Anthology, DBLP exports) with ``abstract`` fields.

The syntax is bibtexparser's (version 2): ``@string`` macros resolved, enclosing braces
or quotes removed, ``%`` comments between records and ``@comment``/``@preamble`` blocks
skipped. Why bibtexparser and not pybtex: docs/formats.md. This module maps its entries:

- ``@proceedings`` (and ``@book``, ``@periodical``: a volume, not a paper) records are
  not papers and give no entry; their ``booktitle``/``title`` and ``year`` give the header
  when the file has one proceedings record (``shorttitle`` or PMLR's ``shortname`` first);
- abstract: the ``abstract`` field, as written (its LaTeX is removed by the cleaner like
  any abstract's, so the same abstract keeps its ``paper_id``), with TeX escapes of
  special characters (``\\%``, ``\\&``, ``\\_``, ``\\#``, ``\\$``) and accents
  (``{\\"o}``, ``\\'e``) turned into the characters (pylatexenc's table);
- title and authors: decoded from LaTeX to text (pylatexenc), braces dropped, authors
  split on `` and ``, ``Last, First`` turned into ``First Last``;
- URL: ``url``, else ``pdf``, else the DOI's address; external id: the arXiv ``eprint``
  (``archivePrefix = {arXiv}``), the ``doi``, or what the URL names.

A record with a duplicate key is still read (it is a paper; BibTeX tools disagree on
keys); a block bibtexparser cannot parse makes the file unreadable, naming its line.
"""

from __future__ import annotations

import logging
import re

import bibtexparser
from bibtexparser.model import DuplicateBlockKeyBlock, ParsingFailedBlock
from bibtexparser.model import Entry as BibEntry
from pylatexenc.latex2text import LatexNodes2Text

from paperwatch.ingest.parse import Entry, Header, Listing, decode_listing, parse_header
from paperwatch.ingest.readers import ReaderError
from paperwatch.ingest.readers.records import external_id, first_url, one_line, record_entry

#: Entry types that are a volume, not a paper.
_VOLUME_TYPES = frozenset(["proceedings", "book", "periodical", "mvproceedings", "collection"])
#: TeX accent commands and their combining characters (the TeXbook, chapter 9).
_ACCENT = re.compile(r"\{?\\([`'^\"~=.uvHcdbkr])\s*\{?([A-Za-z]|\\[ij])\}?\}?")
_COMBINING = {
    "`": "\u0300",
    "'": "\u0301",
    "^": "\u0302",
    "~": "\u0303",
    "=": "\u0304",
    "u": "\u0306",
    ".": "\u0307",
    '"': "\u0308",
    "r": "\u030a",
    "H": "\u030b",
    "v": "\u030c",
    "d": "\u0323",
    "c": "\u0327",
    "k": "\u0328",
    "b": "\u0331",
}
_ESCAPED = re.compile(r"\\([%&_#$])")
_LATEX = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True)
# bibtexparser logs every block it gives up on as a warning, which Python's last-resort
# handler prints on stderr in the middle of a run's progress; the reader's error names the
# block and the reason instead (the quarantine keeps it).
logging.getLogger("bibtexparser").addHandler(logging.NullHandler())


def read(data: bytes, name: str) -> Listing:
    """Read a BibTeX file's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
        ReaderError: a block that does not parse.
    """
    return read_text(decode_listing(data, name), name)


def tex_escapes(text: str) -> str:
    """``text`` with TeX escapes of special characters (``\\%`` → ``%``) and accent
    commands (``{\\"o}`` → ``ö``, ``\\'{e}`` → ``é``) replaced by the characters; other
    LaTeX (math, ``\\emph``) is left for the cleaner."""
    import unicodedata

    def accent(match: re.Match[str]) -> str:
        letter = match.group(2).replace("\\i", "ı").replace("\\j", "ȷ")
        return unicodedata.normalize("NFC", letter + _COMBINING[match.group(1)])

    return _ESCAPED.sub(r"\1", _ACCENT.sub(accent, text))


def _text(value: str | None) -> str | None:
    """A title or name field as text: LaTeX decoded (pylatexenc), spaces collapsed."""
    if not value:
        return None
    try:
        decoded = _LATEX.latex_to_text(value)
    except Exception:  # pylatexenc gives up on some malformed input: keep the field
        decoded = tex_escapes(value).replace("{", "").replace("}", "")
    return one_line(decoded)


def _authors(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    names = []
    for part in re.split(r"\s+and\s+", " ".join(value.split())):
        name = _text(part) or ""
        if "," in name:
            last, _, first = name.partition(",")
            name = f"{first.strip()} {last.strip()}".strip()
        if name and name.lower() != "others":
            names.append(name)
    return tuple(names)


def read_text(text: str, name: str = "<text>") -> Listing:
    """The paper records of BibTeX ``text`` as entries, in file order.

    ``line`` is the 1-based line of the ``@type{`` that starts the record; every paper
    record is an entry (one without ``abstract`` is quarantined as "no abstract").

    Raises:
        ReaderError: a block bibtexparser cannot parse (its line and the parser's reason).
    """
    return _read(text)[0]


def read_with_years(text: str) -> tuple[Listing, list[int | None]]:
    """:func:`read_text` of ``text``, and each entry's year (the ``year`` field, else the
    first four digits of ``date``; None without either), in entry order.

    Raises:
        ReaderError: as :func:`read_text`.
    """
    return _read(text)


def _year(fields: dict[str, str]) -> int | None:
    found = re.search(r"\b(\d{4})\b", fields.get("year") or fields.get("date") or "")
    return int(found.group(1)) if found else None


def _read(text: str) -> tuple[Listing, list[int | None]]:
    if text.startswith("\ufeff"):
        text = text[1:]
    library = bibtexparser.parse_string(text)
    records: list[BibEntry] = list(library.entries)
    for block in library.failed_blocks:
        if isinstance(block, DuplicateBlockKeyBlock) and isinstance(
            block.ignore_error_block, BibEntry
        ):
            records.append(block.ignore_error_block)
            continue
        if isinstance(block, ParsingFailedBlock):
            line = (block.start_line or 0) + 1
            # BlockAbortedException keeps its message in abort_reason (str() is empty).
            reason = getattr(block.error, "abort_reason", None) or str(block.error or "")
            detail = f"{reason.strip() or 'a block that does not parse'} (the block that starts on this line)"
            raise ReaderError("bibtex", line, one_line(detail) or detail)
    records.sort(key=lambda r: r.start_line or 0)
    header: Header | None = None
    volumes = [r for r in records if r.entry_type.lower() in _VOLUME_TYPES]
    if len(volumes) == 1:
        volume = volumes[0].fields_dict
        title = (
            volume.get("shorttitle")
            or volume.get("shortname")
            or volume.get("booktitle")
            or volume.get("title")
        )
        year = volume.get("year")
        if title is not None:
            venue = _text(str(title.value)) or ""
            year_text = str(year.value) if year is not None else ""
            if year_text and year_text in venue:
                year_text = ""
            header = parse_header(f"{venue} {year_text}".strip()) if venue else None
    entries: list[Entry] = []
    years: list[int | None] = []
    for record in records:
        if record.entry_type.lower() in _VOLUME_TYPES:
            continue
        fields: dict[str, str] = {
            key.lower(): str(value.value) for key, value in record.fields_dict.items()
        }
        abstract = fields.get("abstract")
        doi_value = fields.get("doi")
        url = first_url(fields.get("url")) or first_url(fields.get("pdf"))
        if url is None and doi_value:
            url = f"https://doi.org/{doi_value.strip()}"
        prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
        eprint = fields.get("eprint") if prefix in ("arxiv", "") else None
        years.append(_year(fields))
        entries.append(
            record_entry(
                len(entries) + 1,
                (record.start_line or 0) + 1,
                tex_escapes(abstract) if abstract else None,
                title=_text(fields.get("title")),
                authors=_authors(fields.get("author")),
                url=url,
                ext_id=external_id(arxiv=eprint, doi_value=doi_value, urls=[url]),
            )
        )
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    listing = Listing(header=header, entries=entries, line_count=line_count, format="bibtex")
    return listing, years
