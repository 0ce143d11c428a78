"""What every structured reader shares: field values to entries, external ids, line numbers.

Pure functions. The readers (one module per format) turn a library's tree (markdown-it
tokens, ``json`` values, bibtexparser entries, feedparser entries) into records; this
module turns a record's fields into a :class:`paperwatch.ingest.parse.Entry`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import Any

from paperwatch.ingest.parse import Entry

#: arXiv identifiers, new style (``2611.01234``, ``2611.01234v2``) and old style
#: (``cs/0112017``): https://info.arxiv.org/help/arxiv_identifier.html
_ARXIV_NEW = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")
_ARXIV_OLD = re.compile(r"\b([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?\b")
_ARXIV_URL = re.compile(
    r"arxiv\.org/(?:abs|pdf|html)/([a-z\-]+(?:\.[A-Z]{2})?/\d{7}|\d{4}\.\d{4,5})", re.IGNORECASE
)
#: A DOI: ``10.<registrant>/<suffix>`` (https://www.doi.org/the-identifier/resources/handbook).
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)
_OPENREVIEW_URL = re.compile(r"openreview\.net/(?:forum|pdf)\?id=([\w\-]+)", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s<>()\"'\]]+")
#: arXiv's announcement prefix (its RSS and the digests copied from it write
#: ``arXiv:2611.01234v1 Announce Type: new Abstract: …``): not part of the abstract.
ANNOUNCE_PREFIX = re.compile(
    r"\A\s*arXiv:\S+\s+Announce\s+Type:\s*\S+\s*(?:Abstract:\s*)?", re.IGNORECASE
)
_AUTHOR_SPLIT = re.compile(r"\s*(?:;|,|\band\b|&)\s*")
#: Separators of names that may themselves be written "Last, First" (BibTeX's convention).
_NAME_LIST_SPLIT = re.compile(r"\s*(?:;|\band\b|&)\s*")


def arxiv_id(value: str | None) -> str | None:
    """The arXiv identifier in ``value`` without its version (``2611.01234``), or None.

    Accepts a bare id (``2611.01234v2``, ``arXiv:2611.01234``, ``cs/0112017``) or an
    arxiv.org URL (``/abs/``, ``/pdf/``, ``/html/``). The version is dropped: every
    version of an arXiv paper is the same paper.
    """
    if not value:
        return None
    found = _ARXIV_URL.search(value)
    if found:
        return found.group(1)
    text = value.strip()
    if text.lower().startswith("arxiv:"):
        text = text[6:].strip()
    for pattern in (_ARXIV_NEW, _ARXIV_OLD):
        match = pattern.fullmatch(text)
        if match:
            return match.group(1)
    return None


def doi(value: str | None) -> str | None:
    """The DOI in ``value`` (a bare DOI, ``doi:…`` or a doi.org URL), lower-cased, or None.

    DOIs are case-insensitive (DOI Handbook 2.4), so the lower-cased form identifies it.
    """
    if not value:
        return None
    found = _DOI.search(value)
    return found.group(1).rstrip(".,;").lower() if found else None


def external_id(
    *,
    arxiv: str | None = None,
    doi_value: str | None = None,
    openreview: str | None = None,
    urls: Iterable[str | None] = (),
) -> str | None:
    """A record's identity outside its text, normalised, or None.

    In order: an arXiv id (``arXiv:2611.01234``, version dropped), a DOI
    (``doi:10.5555/abc``, lower-cased), an OpenReview note id (``openreview:AbC12x``);
    each taken from the named field, else from any of ``urls`` (arxiv.org, doi.org,
    openreview.net). A DOI that arXiv mints for a paper (``10.48550/arXiv.2611.01234``)
    is its arXiv id.
    """
    links: list[str] = [u for u in urls if u]
    found = arxiv_id(arxiv)
    if found is None:
        for url in links:
            if (found := arxiv_id(url) if "arxiv.org" in url.lower() else None) is not None:
                break
    if found is None and doi_value and "arxiv." in doi_value.lower():
        found = arxiv_id(doi_value.lower().split("arxiv.", 1)[1])
    if found is not None:
        return f"arXiv:{found}"
    found = doi(doi_value)
    if found is None:
        for url in links:
            if "doi.org/" in url.lower() and (found := doi(url)) is not None:
                break
    if found is not None:
        return f"doi:{found}"
    if openreview:
        return f"openreview:{openreview.strip()}"
    for url in links:
        match = _OPENREVIEW_URL.search(url)
        if match:
            return f"openreview:{match.group(1)}"
    return None


def id_url(ext_id: str) -> str | None:
    """The address of a normalised external id (:func:`external_id`): arxiv.org/abs,
    doi.org, openreview.net/forum; None for another scheme."""
    scheme, _, value = ext_id.partition(":")
    if scheme == "arXiv":
        return f"https://arxiv.org/abs/{value}"
    if scheme == "doi":
        return f"https://doi.org/{value}"
    if scheme == "openreview":
        return f"https://openreview.net/forum?id={value}"
    return None


#: Schemes that run code or carry a document when a link is followed; a field written with
#: one is not a paper's address, even when an http(s) URL appears inside it.
_ACTIVE_SCHEME = re.compile(r"\A\s*(?:javascript|vbscript|data)\s*:", re.IGNORECASE)


def first_url(value: str | None) -> str | None:
    """The first http(s) URL in ``value`` (a bare URL or a Markdown link), or None.

    None too for a value that is a ``javascript:``, ``vbscript:`` or ``data:`` URL
    (``javascript:fetch('https://x.example/')`` names no paper's address).
    """
    if not value or _ACTIVE_SCHEME.match(value):
        return None
    found = _URL.search(value)
    return found.group(0).rstrip(".,;") if found else None


def author_names(value: object) -> tuple[str, ...]:
    """Author names from a field: a list of names, of ``{"name": …}`` or
    ``{"first": …, "last": …}`` objects (or one such object), or one string separated by
    commas, semicolons, "and" or "&" (names written ``Last, First`` are turned round:
    :func:`_split_names`). Empty names are dropped; order kept."""
    if value is None:
        return ()
    if isinstance(value, dict):  # one author written as an object, not in a list
        value = [value]
    if isinstance(value, str):
        parts = _split_names(value)
    elif isinstance(value, list | tuple):
        parts = []
        for item in value:
            if isinstance(item, dict):
                name = item.get("name") or " ".join(
                    str(item.get(k) or "") for k in ("first", "given", "last", "family")
                )
                parts.append(str(name))
            elif item is not None:
                parts.append(str(item))
    else:
        parts = [str(value)]
    return tuple(" ".join(p.split()) for p in parts if p and p.strip())


def _split_names(value: str) -> list[str]:
    """One string of names as names. When every name between semicolons, "and" or "&"
    holds exactly one comma (``Lee, Ann; Moreau, Émilie``), or the whole string is one
    such name whose family part is one word (``Lee, Ann``), each is ``Last, First`` and is
    turned round (``Ann Lee``), as BibTeX writes names; otherwise commas separate names
    too (``Ann Lee, Bo Li``)."""
    names = [p for p in _NAME_LIST_SPLIT.split(value) if p.strip()]
    inverted = names and all(n.count(",") == 1 for n in names)
    if inverted and len(names) == 1:
        family = names[0].split(",")[0].split()
        inverted = len(family) == 1
    if not inverted:
        return _AUTHOR_SPLIT.split(value)
    turned = []
    for name in names:
        family, given = (" ".join(part.split()) for part in name.split(","))
        turned.append(f"{given} {family}".strip())
    return turned


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

#: ``Entry.field_faults`` line of a record whose lone surrogate escapes were replaced.
SURROGATE_FAULT = "a lone surrogate escape (\\ud800-\\udfff, not a character) replaced by U+FFFD"


def without_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` (parsed JSON: dicts, lists, strings, numbers) with every lone surrogate
    (``"\\ud800"`` escapes JSON allows but no text encoding can hold) replaced by U+FFFD,
    in strings and keys; and whether any was. A valid pair was joined by the parser."""
    if isinstance(value, str):
        fixed = _LONE_SURROGATE.sub("\ufffd", value)
        return fixed, fixed != value
    if isinstance(value, list):
        items = [without_lone_surrogates(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(value, dict):
        changed = False
        out = {}
        for key, item in value.items():
            new_key, key_changed = without_lone_surrogates(key)
            new_item, item_changed = without_lone_surrogates(item)
            out[new_key] = new_item
            changed = changed or key_changed or item_changed
        return out, changed
    return value, False


def one_line(value: object) -> str | None:
    """A field value as one line of text (white space collapsed), or None when empty."""
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _without_announce_prefix(lines: list[str]) -> list[str]:
    """``lines`` (white space collapsed, none empty) without :data:`ANNOUNCE_PREFIX` at the
    start of their text joined by single spaces."""
    found = ANNOUNCE_PREFIX.match(" ".join(lines))
    if found is None:
        return lines
    cut, kept = found.end(), []
    for line in lines:
        if cut > len(line):
            cut -= len(line) + 1  # the line and the space joining it to the next
            continue
        kept.append(line[cut:].strip())
        cut = 0
    return [x for x in kept if x]


def record_entry(
    position: int,
    line: int,
    abstract: str | None,
    *,
    title: str | None = None,
    authors: Sequence[str] = (),
    url: str | None = None,
    ext_id: str | None = None,
    listed_number: int | None = None,
    abstract_lines: Sequence[str] | None = None,
) -> Entry:
    """The :class:`~paperwatch.ingest.parse.Entry` of one record.

    ``abstract`` is the text as written (markup is removed later by the cleaner, as for
    the text format, so the same abstract gives the same ``paper_id`` in every format),
    without arXiv's announcement prefix (:data:`ANNOUNCE_PREFIX`, which a Markdown digest
    copied from arXiv's RSS keeps);
    ``abstract_lines``, when given, are its lines, and ``line_breaks`` records where they
    were joined. A record without an abstract (None or blank) is an entry with
    ``no_abstract`` set whose text is its title (or its id), so the quarantine shows it.
    """
    if abstract_lines is not None:
        lines = [" ".join(x.split()) for x in abstract_lines]
        lines = [x for x in lines if x]
        lines = _without_announce_prefix(lines)
        text = " ".join(lines)
        breaks, offset = [], -1
        for x in lines[:-1]:
            offset += len(x) + 1
            breaks.append(offset)
        line_breaks = tuple(breaks)
    else:
        text = " ".join(_without_announce_prefix([" ".join((abstract or "").split())]))
        line_breaks = ()
    title = one_line(title)
    if url is None and ext_id is not None:
        url = id_url(ext_id)
    if not text:
        return Entry(
            position=position,
            line=line,
            text=title or ext_id or url or "",
            title=title,
            authors=tuple(authors),
            url=url,
            external_id=ext_id,
            listed_number=listed_number,
            no_abstract=True,
        )
    return Entry(
        position=position,
        line=line,
        text=text,
        line_breaks=line_breaks,
        title=title,
        authors=tuple(authors),
        url=url,
        external_id=ext_id,
        listed_number=listed_number,
    )


class LineIndex:
    """1-based line numbers of character offsets in a text (binary search over newlines)."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        """The 1-based line holding character ``offset``."""
        return bisect.bisect_right(self._starts, offset)
