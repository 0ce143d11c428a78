"""One abstract per line (``abstracts.txt``): an optional header line, then every
non-blank line is an entry. Blank lines are allowed and separate nothing."""

from __future__ import annotations

from dataclasses import replace

from paperwatch.ingest.parse import Entry, Listing, decode_listing, is_blank, parse_header


def read(data: bytes, name: str) -> Listing:
    """Read a one-abstract-per-line file's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
    """
    return read_text(decode_listing(data, name), name)


def read_text(text: str, name: str = "<text>") -> Listing:
    """Entries of ``text``, one per non-blank line (1-based ``line`` as in the file).

    The first non-blank line is the header when :func:`paperwatch.ingest.parse.parse_header`
    recognises it. Line breaks are LF, CRLF or CR.
    """
    from paperwatch.ingest.parse import split_lines

    if text.startswith("\ufeff"):
        text = text[1:]
    raw_lines = split_lines(text)
    header = None
    entries: list[Entry] = []
    for number, raw in enumerate(raw_lines, start=1):
        if is_blank(raw):
            continue
        line = raw.strip()
        if header is None and not entries and (found := parse_header(line)) is not None:
            header = found
            continue
        entries.append(Entry(position=len(entries) + 1, line=number, text=line))
    line_count = len(raw_lines) - (1 if raw_lines and raw_lines[-1] == "" else 0)
    listing = Listing(header=header, entries=entries, line_count=line_count, format="lines")
    return replace(listing)
