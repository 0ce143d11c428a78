"""Fields that come from a listing's records: made safe once, at read time.

Titles, authors, URLs, external ids and venues come from JSON, BibTeX, Markdown and
feeds written by anyone; they reach the report, the mail's text part, the CSV and the
database. :func:`safe_entry` is the one validation of them (docs/data-quality.md,
"Record fields"): control and bidi characters and line breaks removed, lengths capped
at the limits below, URLs reduced to plain http(s) addresses (:func:`web_url`), ids
checked against their syntax (:func:`valid_external_id`). Each change is named in
``Entry.field_faults`` (a data-quality warning) and the values as written are kept in
``Entry.raw_fields``. Pure functions.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from urllib.parse import quote, urlsplit, urlunsplit

import idna

from paperwatch.ingest.parse import Entry, Header

#: Length caps of record fields, in characters. A title over 1,000 characters is not a
#: title (the longest of the 54 seed papers' titles is under 200; arXiv caps none, but
#: Crossref's longest titles are a few hundred characters).
MAX_TITLE_CHARS = 1_000
MAX_AUTHOR_CHARS = 200
MAX_AUTHORS = 5_000
#: RFC 9110 §4.1 recommends senders and recipients support URIs of at least 8,000
#: octets; 2,048 is what browsers and mail clients show and link reliably.
MAX_URL_CHARS = 2_048
MAX_ID_CHARS = 300
MAX_VENUE_CHARS = 200

#: Unicode bidirectional formatting characters (UAX #9, "Explicit Directional
#: Embeddings/Overrides/Isolates", and the implicit marks).
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_LINE_SEPARATORS = frozenset("\u2028\u2029\x85")

#: Scripts that may share one host label (UTS #39 §5.2, "Highly Restrictive"): one
#: script, or Latin with the scripts written beside it in Chinese, Japanese and Korean.
_ALLOWED_MIXES = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
_SCRIPT_WORDS = {"CJK": "HAN", "IDEOGRAPHIC": "HAN"}

#: External id syntax: arXiv (https://info.arxiv.org/help/arxiv_identifier.html), DOI
#: (DOI Handbook 2.2: ``10.<registrant>/<suffix>``, the suffix printable), OpenReview
#: note ids (letters, digits, ``_`` and ``-``).
_ID_SYNTAX = {
    "arXiv": re.compile(r"\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7}"),
    "doi": re.compile(r"10\.\d{4,9}/\S+"),
    "openreview": re.compile(r"[A-Za-z0-9_\-]{1,100}"),
}


def is_unsafe_char(c: str) -> bool:
    """True for a character no shown text may hold: a control character (C0, C1, DEL),
    a bidi control, or a line/paragraph separator. Tab and newline are not unsafe."""
    return (c not in "\n\t" and unicodedata.category(c) == "Cc") or (
        c in BIDI_CONTROLS or c in _LINE_SEPARATORS
    )


def plain_text(value: object) -> str:
    """``value`` as text a terminal and a mail client show as written: every unsafe
    character (:func:`is_unsafe_char`: ESC, CR, NUL, bidi controls…) becomes U+FFFD.
    Newlines and tabs are kept."""
    text = str(value if value is not None else "")
    if text.isprintable():
        return text
    return "".join("\ufffd" if is_unsafe_char(c) else c for c in text)


#: A terminal's escape sequence (ECMA-48): CSI (``ESC [ 31 m``, colours and cursor
#: moves), OSC (``ESC ] … BEL``, titles and hyperlinks) and two-character escapes
#: (``ESC 7``). Text copied from a terminal holds them; dropping only the ESC would
#: leave ``[31m`` in the text.
ANSI_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_78=>c])"
)


def one_line_text(value: object) -> str:
    """``value`` as one line: terminal escape sequences (:data:`ANSI_ESCAPE`) and unsafe
    characters dropped, white space collapsed to single spaces, stripped."""
    text = str(value if value is not None else "")
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    return " ".join("".join(" " if is_unsafe_char(c) else c for c in text).split())


def shorten(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its first words within
    ``limit - 1`` characters (or its first ``limit - 1`` characters) and "…"."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _scripts(label: str) -> set[str]:
    scripts = set()
    for c in label:
        if c.isalpha():
            word = unicodedata.name(c, "UNKNOWN").split()[0]
            scripts.add(_SCRIPT_WORDS.get(word, word))
    return scripts


def is_mixed_script(label: str) -> bool:
    """True when the letters of ``label`` (one host label, Unicode) mix scripts beyond
    UTS #39's Highly Restrictive level (``аrxiv`` with a Cyrillic а). The script is the
    first word of the letter's Unicode name (LATIN, CYRILLIC, GREEK, CJK…)."""
    scripts = _scripts(label)
    return len(scripts) > 1 and not any(scripts <= mix for mix in _ALLOWED_MIXES)


def check_web_url(value: str | None) -> tuple[str | None, str | None]:
    """``value`` as a plain web address, or why it is not one.

    Rules (``urllib.parse`` splits; the host is checked with ``idna``, UTS #46): scheme
    http or https; a host; no user or password (``https://arxiv.org@evil.example/`` goes
    to evil.example); no white space, control or format character anywhere; at most
    :data:`MAX_URL_CHARS`; the host in its IDNA (ASCII) form and no label mixing scripts
    (:func:`is_mixed_script`). A path or query with non-ASCII characters is
    percent-encoded (RFC 3987 §3.1).

    Returns:
        ``(url, None)`` for an address that may be linked, ``(None, reason)`` otherwise;
        ``(None, None)`` for an empty value.
    """
    text = (value or "").strip()
    if not text:
        return None, None
    if len(text) > MAX_URL_CHARS:
        return None, f"over {MAX_URL_CHARS:,} characters"
    if any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text):
        return None, "holds white space, control or format characters"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        return None, f"not a URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return None, "not an http(s) address"
    if "@" in parts.netloc:
        return None, "holds a user name or password"
    host = parts.hostname or ""
    if not host:
        return None, "has no host"
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
        shown = idna.decode(ascii_host)
    except idna.IDNAError as exc:
        return None, f"host is not a valid domain name ({exc})"
    if any(is_mixed_script(label) for label in shown.split(".")):
        return None, f"host mixes scripts ({ascii_host})"
    if text.isascii() and ascii_host == host.lower():
        return text, None
    netloc = ascii_host if port is None else f"{ascii_host}:{port}"
    path = quote(parts.path, safe="/%:@!$&'()*+,;=-._~")
    query = quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
    fragment = quote(parts.fragment, safe="/%:@!$&'()*+,;=-._~?")
    return urlunsplit((parts.scheme.lower(), netloc, path, query, fragment)), None


def web_url(value: object) -> str | None:
    """``value`` as a plain web address (:func:`check_web_url`), or None."""
    return check_web_url(None if value is None else str(value))[0]


def valid_external_id(value: str | None) -> bool:
    """True when ``value`` is a normalised external id whose identifier has its scheme's
    syntax: ``arXiv:2611.01234`` / ``arXiv:cs/0112017``, ``doi:10.5555/abc``,
    ``openreview:AbC12x``; at most :data:`MAX_ID_CHARS`, no control or format character."""
    if not value or len(value) > MAX_ID_CHARS:
        return False
    scheme, _, ident = value.partition(":")
    syntax = _ID_SYNTAX.get(scheme)
    return (
        syntax is not None
        and syntax.fullmatch(ident) is not None
        and not any(unicodedata.category(c) in ("Cc", "Cf") for c in ident)
    )


def _capped(name: str, value: str, limit: int, faults: list[str]) -> str:
    text = one_line_text(value)
    if text != " ".join(value.split()):
        faults.append(f"{name}: control or bidi characters removed")
    if len(text) > limit:
        faults.append(f"{name}: {len(text):,} characters, shortened to {limit:,}")
        text = shorten(text, limit)
    return text


def safe_entry(entry: Entry) -> Entry:
    """``entry`` with its record fields made safe; unchanged when they already are.

    title, each author: one line (:func:`one_line_text`), capped at
    :data:`MAX_TITLE_CHARS` / :data:`MAX_AUTHOR_CHARS`; at most :data:`MAX_AUTHORS`
    authors; url: :func:`check_web_url`, else the address of a valid external id;
    external_id: dropped unless :func:`valid_external_id`. Each change adds a line to
    ``field_faults`` naming the field (never quoting a refused value: a password in a URL
    must not reach the report's warnings); ``raw_fields`` then holds the record's fields as
    written (JSON object of title, authors, url, external_id), unless the reader set it
    already (a JSON record without an abstract: the whole record as read).
    """
    from paperwatch.ingest.readers.records import id_url

    faults: list[str] = []
    title = entry.title
    if title is not None:
        title = _capped("title", title, MAX_TITLE_CHARS, faults) or None
    authors = entry.authors
    if len(authors) > MAX_AUTHORS:
        faults.append(f"authors: {len(authors):,} names, the first {MAX_AUTHORS:,} kept")
        authors = authors[:MAX_AUTHORS]
    if authors:
        author_faults: list[str] = []
        authors = tuple(
            a for a in (_capped("author", a, MAX_AUTHOR_CHARS, author_faults) for a in authors) if a
        )
        faults.extend(dict.fromkeys(author_faults))
    ext = entry.external_id
    if ext is not None and not valid_external_id(ext):
        faults.append("external_id: not a valid arXiv id, DOI or OpenReview id")
        ext = None
    url, problem = check_web_url(entry.url)
    if problem is not None:
        faults.append(f"url: {problem}, not linked")
    if url is None and ext is not None:
        url = id_url(ext)
    if not faults and (url, ext) == (entry.url, entry.external_id):
        return entry
    raw = {"title": entry.title, "authors": list(entry.authors), "url": entry.url}
    raw["external_id"] = entry.external_id
    return dataclasses.replace(
        entry,
        title=title,
        authors=authors,
        url=url,
        external_id=ext,
        field_faults=(*entry.field_faults, *faults),
        raw_fields=entry.raw_fields or (json.dumps(raw, ensure_ascii=True) if faults else None),
    )


def safe_header(header: Header | None) -> Header | None:
    """``header`` with its venue as one safe line of at most :data:`MAX_VENUE_CHARS`, and
    its line and label as safe lines (:func:`one_line_text`: control and bidi characters
    dropped); the same object when nothing changes."""
    if header is None:
        return None
    venue = shorten(one_line_text(header.venue), MAX_VENUE_CHARS)
    text, label = one_line_text(header.text), one_line_text(header.label)
    if (venue, text, label) == (header.venue, header.text, header.label):
        return header
    return dataclasses.replace(header, venue=venue, text=text, label=label)
