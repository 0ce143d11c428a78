"""The week's new papers as a CSV file (attached to the message, written beside the report)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

#: Columns of the new-papers CSV, in order.
NEW_PAPERS_CSV_COLUMNS = (
    "paper_id",
    "method_name",
    "first_sentence",
    "code_urls",
    "source_file",
    "position",
    "title",
    "authors",
    "url",
    "external_id",
)


def csv_name(week: str) -> str:
    """File name of the week's new-papers CSV: ``<week>-new-papers.csv``."""
    return f"{week}-new-papers.csv"


#: First characters that make a spreadsheet evaluate a cell (OWASP "CSV injection").
_FORMULA_STARTS = frozenset(("=", "+", "-", "@", "\t", "\r"))


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if type(value) is str:  # most cells: no conversion (the CSV of a 10k week has 98,000)
        text = value
    elif isinstance(value, list | tuple):
        text = " ".join(str(v) for v in value)
    else:
        text = str(value)
    # A cell starting like a formula runs as one in spreadsheets (OWASP "CSV injection").
    return "'" + text if text[:1] in _FORMULA_STARTS else text


def new_papers_csv(papers: Sequence[Mapping[str, Any]]) -> bytes:
    """The week's new papers as a CSV file.

    Args:
        papers: rows with at least the keys of :data:`NEW_PAPERS_CSV_COLUMNS`
            (``code_urls`` a list of strings), as :func:`collect_report` returns them.

    Returns:
        RFC 4180 CSV (CRLF line ends, fields quoted when needed), UTF-8 with a byte-order
        mark so that spreadsheet programs read accents and typographic quotes right. A
        header row, then one row per paper in the given order; ``code_urls`` joined with
        a space; a value starting with ``=``, ``+``, ``-``, ``@``, TAB or CR is prefixed
        with ``'`` so that no spreadsheet evaluates it (OWASP, "CSV Injection").
    """
    # Encoded as written: a week of 500,000 papers would otherwise hold the text twice more.
    buffer = io.BytesIO()
    out = io.TextIOWrapper(buffer, encoding="utf-8-sig", newline="", write_through=True)
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(NEW_PAPERS_CSV_COLUMNS)
    cell, columns, starts = _csv_cell, NEW_PAPERS_CSV_COLUMNS, _FORMULA_STARTS
    # Most cells are text that needs no change, or None (csv writes ""): only the others
    # go through _csv_cell.
    writer.writerows(
        [
            value
            if value is None or (type(value) is str and value[:1] not in starts)
            else cell(value)
            for value in [paper.get(column) for column in columns]
        ]
        for paper in papers
    )
    out.flush()
    data = buffer.getvalue()
    out.close()
    return data
