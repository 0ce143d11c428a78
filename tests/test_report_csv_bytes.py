"""The new-papers CSV keeps its bytes: :func:`new_papers_csv` against the cell-by-cell
conversion it replaced (every cell through ``_csv_cell``), on rows with every kind of cell."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from paperwatch.report.papers_csv import NEW_PAPERS_CSV_COLUMNS, _csv_cell, new_papers_csv


def reference_csv(papers: Sequence[Mapping[str, Any]]) -> bytes:
    """The CSV as every cell converted by ``_csv_cell``: the reference bytes."""
    buffer = io.BytesIO()
    out = io.TextIOWrapper(buffer, encoding="utf-8-sig", newline="", write_through=True)
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(NEW_PAPERS_CSV_COLUMNS)
    writer.writerows([_csv_cell(p.get(c)) for c in NEW_PAPERS_CSV_COLUMNS] for p in papers)
    out.flush()
    data = buffer.getvalue()
    out.close()
    return data


CELLS: list[Any] = [
    None,
    "",
    "plain text",
    "=1+1",
    "+call",
    "-minus",
    "@sum",
    "\ttab",
    "\rreturn",
    'quote " and, comma',
    "line\nbreak",
    "Zoë’s “quoted” 论文",
    0,
    17,
    -3,
    2.5,
    ["https://github.com/a/b", "https://example.org/c"],
    ["=formula-first"],
    [],
    ("t", "u"),
]


def test_the_csv_has_the_bytes_of_the_cell_by_cell_conversion() -> None:
    papers = [
        {column: CELLS[(i + j) % len(CELLS)] for j, column in enumerate(NEW_PAPERS_CSV_COLUMNS)}
        for i in range(len(CELLS) * 3)
    ]
    papers.append({"paper_id": "only-an-id"})  # missing keys are empty cells
    assert new_papers_csv(papers) == reference_csv(papers)
    assert new_papers_csv([]) == reference_csv([])
