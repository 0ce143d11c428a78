"""The plain-text listing: an optional header line, then one abstract per paragraph
(:func:`paperwatch.ingest.parse.parse_listing`)."""

from __future__ import annotations

from paperwatch.ingest.parse import Listing, decode_listing, parse_listing


def read(data: bytes, name: str) -> Listing:
    """Read a plain-text listing's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
    """
    return read_text(decode_listing(data, name), name)


def read_text(text: str, name: str = "<text>") -> Listing:
    """Header and paragraphs of ``text``: :func:`paperwatch.ingest.parse.parse_listing`."""
    return parse_listing(text)
