"""Atom and RSS feeds: the arXiv API's Atom, arXiv's RSS, a blog's paper feed.

The syntax is feedparser's (it reads Atom 0.3/1.0, RSS 0.9x/1.0/2.0, and sanitises HTML);
this module maps its entries: abstract from ``summary`` (arXiv's RSS writes
``arXiv:2611.01234v1 Announce Type: new Abstract: …``: the part before ``Abstract:`` is
dropped; HTML in a summary is turned into text), title, authors, the entry's link, and
the external id from the entry's ``id`` or link (arXiv) or ``arxiv_doi``/DOI.
"""

from __future__ import annotations

import html
import re
from typing import Any
from xml.sax import SAXParseException

import feedparser

from paperwatch.ingest.parse import Header, Listing, decode_listing, parse_header
from paperwatch.ingest.readers import ReaderError
from paperwatch.ingest.readers.records import (
    LineIndex,
    author_names,
    external_id,
    first_url,
    one_line,
    record_entry,
)

_ENTRY_TAG = re.compile(r"<(?:[\w-]+:)?(?:entry|item)[\s>]", re.IGNORECASE)
_ROOT = re.compile(r"<(?:[\w-]+:)?(?:feed|rss|RDF)\b")
_ANNOUNCE = re.compile(
    r"\A\s*arXiv:\S+\s+Announce\s+Type:\s*\S+\s*(?:Abstract:\s*)?", re.IGNORECASE
)
_TAG = re.compile(r"<[^>]+>")
#: An entity declaration of an internal DTD: the likely cause of a parse error.
_ENTITY_DECLARATION = re.compile(r"<!ENTITY\s")
#: Comments and CDATA sections: an ``<entry>`` written inside one is not an entry.
_NOT_MARKUP = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>", re.DOTALL)


def _blank_out(match: re.Match[str]) -> str:
    """The match with every character but line breaks turned into a space (same offsets)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def read(data: bytes, name: str) -> Listing:
    """Read a feed's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
        ReaderError: not a feed, or not well-formed.
    """
    return read_text(decode_listing(data, name), name)


def _summary_text(entry: feedparser.FeedParserDict) -> str | None:
    summary = _as_text(entry, "summary")
    return _ANNOUNCE.sub("", summary) if summary else None


def _as_text(entry: dict[str, Any], key: str) -> str | None:
    """An entry's ``key`` (``summary``, ``title``) as text: HTML content
    (``type="html"``) without its tags and with its character references decoded.

    feedparser fills ``summary`` from the first ``content`` (RSS ``content:encoded``) when
    the entry has no summary of its own, and gives its type there only."""
    value = entry.get(key)
    if not value:
        return None
    detail = entry.get(f"{key}_detail") or {}
    if not detail and key == "summary" and entry.get("content"):
        detail = entry["content"][0]
    if "html" in str(detail.get("type", "")):
        value = html.unescape(_TAG.sub(" ", value))
    return str(value)


def read_text(text: str, name: str = "<text>") -> Listing:
    """The entries (``<entry>``, ``<item>``) of an Atom or RSS feed, in feed order.

    ``line`` is the 1-based line of the entry's start tag. The header is the feed's
    title when it names a venue and year.

    Raises:
        ReaderError: the root is not ``<feed>``, ``<rss>`` or ``<rdf:RDF>``; or the XML
            is not well-formed (a feed cut short: the line of the fault), so that no
            entry is loaded from half a feed.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if not _ROOT.search(text[:8192]):
        raise ReaderError("feed", None, "XML without a <feed>, <rss> or <rdf:RDF> root")
    parsed = feedparser.parse(text.encode("utf-8"))
    exc = parsed.get("bozo_exception")
    if parsed.get("bozo") and (isinstance(exc, SAXParseException) or not parsed.entries):
        line = exc.getLineNumber() if hasattr(exc, "getLineNumber") else None
        detail = getattr(exc, "getMessage", lambda: str(exc))()
        if (declared := _ENTITY_DECLARATION.search(text)) is not None:
            line = text.count("\n", 0, declared.start()) + 1
            raise ReaderError(
                "feed",
                line,
                f"XML not read ({detail}): the feed declares entities (<!ENTITY …>), and the "
                "parser refuses one that holds another or stands for an outside file",
            )
        raise ReaderError("feed", line, f"not well-formed XML ({detail})")
    index = LineIndex(text)
    markup = _NOT_MARKUP.sub(_blank_out, text)
    starts = [index.line(m.start()) for m in _ENTRY_TAG.finditer(markup)]
    title = one_line(parsed.feed.get("title"))
    header: Header | None = parse_header(title) if title else None
    entries = []
    for number, item in enumerate(parsed.entries):
        link = first_url(item.get("link"))
        entry_id = one_line(item.get("id"))
        authors = author_names(item.get("authors") or item.get("author"))
        if len(authors) == 1 and "," in authors[0]:  # RSS dc:creator: "A. One, B. Two"
            authors = author_names(authors[0])
        entries.append(
            record_entry(
                number + 1,
                starts[number] if number < len(starts) else 1,
                _summary_text(item),
                title=_as_text(item, "title"),
                authors=authors,
                url=link,
                ext_id=external_id(
                    doi_value=item.get("arxiv_doi") or item.get("prism_doi"),
                    urls=[entry_id, link],
                ),
            )
        )
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return Listing(header=header, entries=entries, line_count=line_count, format="feed")
