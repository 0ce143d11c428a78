"""The frames the expectation suites check: one row per listing file (``listing_files``)
and one per entry (``papers``), built from prepared files; sequence-number gaps."""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Sequence

import polars as pl

from paperwatch.ingest.clean import has_unbalanced_markup, latin_or_cjk_share, text_length
from paperwatch.ingest.files import PreparedFile
from paperwatch.ingest.parse import parse_header
from paperwatch.ingest.shapes import entry_shape, format_note


def _format_missing(missing: list[int], width: int) -> str:
    runs: list[str] = []
    start = prev = missing[0]
    for number in [*missing[1:], None]:
        if number is not None and number == prev + 1:
            prev = number
            continue
        runs.append(
            f"{start:0{width}d}" if start == prev else f"{start:0{width}d}–{prev:0{width}d}"
        )
        if number is not None:
            start = prev = number
    return ", ".join(runs)


def sequence_gaps(
    numbers: Iterable[int], known: Iterable[int], width: int = 3, copies: Iterable[int] = ()
) -> dict[int, str]:
    """For each of ``numbers`` and ``copies``, the sequence numbers missing just before it.

    A number ``n`` has a gap when the largest number below it among ``known`` and
    ``numbers`` is not ``n - 1``; numbers below the smallest one seen are not
    counted as missing (a folder may start mid-sequence). ``copies`` are the numbers
    of files that repeat another file's bytes: each is checked, but fills no gap (a
    copy saved under another listing's name is not that listing), as in the view
    ``sequence_gaps`` and :func:`paperwatch.db.load.known_sequence_numbers`.

    Returns:
        ``{n: "001"}`` or ``{n: "004–007"}`` for the numbers that follow a gap
        (zero-padded to ``width`` digits).
    """
    present = sorted(set(known) | set(numbers))
    gaps: dict[int, str] = {}
    for current in sorted(set(numbers) | set(copies)):
        below = bisect.bisect_left(present, current)
        if below == 0:
            continue
        previous = present[below - 1]
        if current - previous > 1:
            gaps[current] = _format_missing(list(range(previous + 1, current)), width)
    return gaps


FILE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "file": pl.String,
    "size_bytes": pl.Int64,
    "readable": pl.Boolean,
    "read_detail": pl.String,
    "has_nul": pl.Boolean,
    "nul_detail": pl.String,
    "decodes_utf8": pl.Boolean,
    "decode_error": pl.String,
    "entry_count": pl.Int32,
    "has_header": pl.Boolean,
    "sequence_number": pl.Int32,
    "sequence_gap": pl.String,
    "lfs_pointer": pl.Boolean,
    "lfs_detail": pl.String,
    "format_note": pl.String,
    "format": pl.String,
    "format_error": pl.String,
}


def files_frame(
    files: Iterable[PreparedFile],
    known_sequence_numbers: Iterable[int],
    known_contents: Collection[str] = (),
) -> pl.DataFrame:
    """One row per prepared file with the facts the ``listing_files`` suite checks.

    Args:
        files: the batch, in order.
        known_sequence_numbers: sequence numbers of files recorded before this batch.
        known_contents: sha256 of files recorded before this batch in the same run (files
            recorded by earlier runs are recognised by content before a run's batches):
            a file with the bytes of one of them, or of an earlier file of the batch, is
            loaded as a copy, so its sequence number fills no gap (:func:`sequence_gaps`).

    Returns:
        A frame with the columns of ``FILE_SCHEMA``; ``entry_count`` is null for a
        file that is not readable text, ``sequence_gap`` null when there is no gap;
        ``lfs_pointer`` is true for a Git LFS pointer (``lfs_detail`` says where the
        file is), ``format_note`` names the other format a file is written in.
    """
    files = list(files)
    numbers: list[int] = []
    copies: list[int] = []
    contents: set[str] = set()
    for f in files:
        if f.sequence_number is not None:
            copy = bool(f.sha256) and (f.sha256 in contents or f.sha256 in known_contents)
            (copies if copy else numbers).append(f.sequence_number)
        contents.add(f.sha256)
    gaps = sequence_gaps(numbers, known_sequence_numbers, copies=copies)
    rows = [
        {
            "file": f.stat.rel,
            "size_bytes": f.stat.size,
            "readable": f.read_detail is None,
            "read_detail": f.read_detail,
            "has_nul": f.nul_detail is not None,
            "nul_detail": f.nul_detail,
            # Judged only when the bytes were read and hold no NUL (else those checks speak).
            "decodes_utf8": None if f.read_detail or f.nul_detail else f.decode_error is None,
            "decode_error": f.decode_error,
            "entry_count": f.entry_count if f.is_text else None,
            "has_header": f.header is not None,
            "sequence_number": f.sequence_number,
            "sequence_gap": gaps.get(f.sequence_number) if f.sequence_number is not None else None,
            "lfs_pointer": f.lfs_detail is not None,
            "lfs_detail": f.lfs_detail,
            "format_note": format_note(f.file_format),
            "format": f.format,
            "format_error": f.format_error,
        }
        for f in files
    ]
    return pl.DataFrame(rows, schema=FILE_SCHEMA)


ENTRY_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "file": pl.String,
    "position": pl.Int32,
    "line": pl.Int32,
    "abstract": pl.String,
    "abstract_raw": pl.String,
    "word_count": pl.Int32,
    "char_count": pl.Int32,
    "paper_id": pl.String,
    "method_name": pl.String,
    "first_sentence": pl.String,
    "code_urls": pl.List(pl.String),
    "is_header_line": pl.Boolean,
    "unbalanced_markup": pl.Boolean,
    "latin_or_cjk_share": pl.Float64,
    "listed_number": pl.Int32,
    "ligature_damage": pl.String,
    "removed_chars": pl.Int32,
    "looks_like": pl.String,
    "format_note": pl.String,
    "title": pl.String,
    "authors": pl.List(pl.String),
    "url": pl.String,
    "external_id": pl.String,
    "no_abstract": pl.Boolean,
    "outside_paper": pl.Boolean,
    "field_faults": pl.String,
    "raw_fields": pl.String,
}


def entries_frame(files: Iterable[PreparedFile]) -> pl.DataFrame:
    """One row per entry of the files that are readable text, in file then position order.

    Columns (see ``ENTRY_SCHEMA``): file (the ``rel`` path), position, line,
    abstract (None when empty after cleaning), abstract_raw, word_count,
    char_count, paper_id, method_name, first_sentence, code_urls, and the facts
    the ``papers`` suite checks: is_header_line, unbalanced_markup,
    latin_or_cjk_share (0-1, rounded to 3 decimals), looks_like (what the entry
    looks like when it is not an abstract, :func:`paperwatch.ingest.shapes.entry_shape`;
    null for a header line, which is_header_line names), format_note (the
    other format the whole file is written in, or null), listed_number (the list
    number the entry was written with, or None) and ligature_damage (the words with
    PDF ligature damage left unrepaired, comma-separated, or None), removed_chars (how
    many characters of the entry cleaning removed: markup, or thousands of backslashes);
    and what a structured format gives: title, authors (list), url, external_id,
    no_abstract (true for a record without an abstract, quarantined as "no abstract"),
    field_faults (what making those fields safe changed, "; "-joined, or null) and
    raw_fields (the fields as written, JSON, when it changed any).
    """
    rows: dict[str, list[object]] = {name: [] for name in ENTRY_SCHEMA if name != "code_urls"}
    urls: list[list[str]] = []  # built apart: string_lists
    for prepared in files:
        if not prepared.is_text:
            continue
        note = format_note(prepared.file_format)
        for entry in prepared.entries:
            c = entry.clean
            rows["file"].append(prepared.stat.rel)
            rows["position"].append(entry.position)
            rows["line"].append(entry.line)
            rows["abstract"].append(c.abstract if c else None)
            rows["abstract_raw"].append(entry.raw_text)
            rows["word_count"].append(c.word_count if c else 0)
            rows["char_count"].append(text_length(c.abstract) if c else 0)
            rows["paper_id"].append(c.paper_id if c else None)
            rows["method_name"].append(c.method_name if c else None)
            rows["first_sentence"].append(c.first_sentence if c else None)
            urls.append(list(c.code_urls) if c else [])
            # A record without an abstract is judged by that alone ("no abstract").
            is_header = not entry.no_abstract and parse_header(entry.raw_text) is not None
            rows["is_header_line"].append(is_header)
            rows["unbalanced_markup"].append(has_unbalanced_markup(c.abstract) if c else False)
            rows["latin_or_cjk_share"].append(
                round(latin_or_cjk_share(c.abstract), 3) if c else 1.0
            )
            rows["listed_number"].append(
                c.listed_number if c and c.listed_number is not None else entry.listed_number
            )
            rows["ligature_damage"].append(
                ", ".join(c.ligature_damage) if c and c.ligature_damage else None
            )
            judged = entry.body if entry.body is not None else entry.raw_text
            rows["removed_chars"].append(max(0, len(judged) - (len(c.abstract) if c else 0)))
            rows["looks_like"].append(
                None
                if is_header or entry.no_abstract
                else (
                    entry_shape(entry.body, entry.body_line_breaks)
                    if entry.body is not None
                    else entry_shape(entry.raw_text, entry.line_breaks)
                )
            )
            rows["format_note"].append(note)
            rows["title"].append(entry.title)
            rows["authors"].append(list(entry.authors) or None)
            rows["url"].append(entry.url)
            rows["external_id"].append(entry.external_id)
            rows["no_abstract"].append(entry.no_abstract)
            rows["outside_paper"].append(entry.outside_paper)
            rows["field_faults"].append("; ".join(entry.field_faults) or None)
            rows["raw_fields"].append(entry.raw_fields)
    frame = pl.DataFrame(rows, schema={k: v for k, v in ENTRY_SCHEMA.items() if k in rows})
    return frame.insert_column(
        list(ENTRY_SCHEMA).index("code_urls"), string_lists("code_urls", urls)
    )


def string_lists(name: str, lists: Sequence[Sequence[str]]) -> pl.Series:
    """A ``List(String)`` series of ``lists`` (no null list, no null string), built from
    the flat strings and their offsets: the same series as ``pl.Series(name, lists,
    dtype=pl.List(pl.String))``, built faster (docs/design.md, "Fast paths in cleaning and
    parsing")."""
    import numpy as np
    import pyarrow as pa

    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(strings) for strings in lists], out=offsets[1:])
    values = pa.array([value for strings in lists for value in strings], pa.large_string())
    return pl.Series(name, pa.LargeListArray.from_arrays(pa.array(offsets), values))
