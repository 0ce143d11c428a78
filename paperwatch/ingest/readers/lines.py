"""One abstract per line (``abstracts.txt``): an optional header line, then every
non-blank line is an entry. Blank lines are allowed and separate nothing.

A line that does not end a sentence runs on into the next (an abstract split over a few
lines); a Refer/EndNote field tag at the start of a line (``%X `` abstract, ``%T `` title
of the next abstract) is the field's name, not its text."""

from __future__ import annotations

import re
from dataclasses import replace

from paperwatch.ingest.parse import Entry, Listing, decode_listing, is_blank, parse_header

#: A Refer/EndNote tagged line: ``%X`` abstract, ``%T`` title (https://en.wikipedia.org/wiki/Refer_(software)).
_REFER_TAG = re.compile(r"\A%([A-Z0-9])\s+")
#: What a line ending an abstract ends with (as the format's detection asks).
_SENTENCE_END = (".", "。", ")", "!", "?", "．", "”", '"')


def read(data: bytes, name: str) -> Listing:
    """Read a one-abstract-per-line file's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
    """
    return read_text(decode_listing(data, name), name)


def read_text(text: str, name: str = "<text>") -> Listing:
    """Entries of ``text``, one per non-blank line (1-based ``line`` as in the file).

    The first non-blank line is the header when :func:`paperwatch.ingest.parse.parse_header`
    recognises it. A form feed, vertical tab, NEL or U+2028/U+2029 ends a line too, but
    ``line`` counts LF, CRLF and CR only (:func:`paperwatch.ingest.parse.line_numbers`).
    """
    from paperwatch.ingest.parse import line_numbers, split_lines, text_line_count

    if text.startswith("\ufeff"):
        text = text[1:]
    raw_lines = split_lines(text)
    header = None
    entries: list[Entry] = []
    title: str | None = None
    open_entry = False  # the last entry's line did not end a sentence: the next continues it
    for number, raw in zip(line_numbers(text, raw_lines), raw_lines, strict=True):
        if is_blank(raw):
            continue
        line = raw.strip()
        if header is None and not entries and (found := parse_header(line)) is not None:
            header = found
            continue
        tag = _REFER_TAG.match(line)
        if tag is not None and tag.group(1) == "T":
            title, open_entry = line[tag.end() :].strip() or None, False
            continue
        if tag is not None and tag.group(1) == "X":
            line, open_entry = line[tag.end() :], False
        if open_entry:
            last = entries[-1]
            joined = f"{last.text} {line}"
            entries[-1] = replace(
                last, text=joined, line_breaks=(*last.line_breaks, len(last.text))
            )
        else:
            entries.append(Entry(position=len(entries) + 1, line=number, text=line, title=title))
            title = None
        open_entry = not line.endswith(_SENTENCE_END)
    listing = Listing(
        header=header, entries=entries, line_count=text_line_count(text), format="lines"
    )
    return replace(listing)
