"""The new-papers CSV keeps its bytes: :func:`new_papers_csv` against the cell-by-cell
conversion it replaced (every cell through ``_csv_cell``), on rows with every kind of cell."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from paperwatch.report.papers_csv import NEW_PAPERS_CSV_COLUMNS, new_papers_csv
from paperwatch.report.rows import FrameRows

#: First characters that make a spreadsheet evaluate a cell (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: object) -> str:
    """One cell as the CSV first wrote it, value by value."""
    if value is None:
        return ""
    text = " ".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
    return "'" + text if text[:1] in FORMULA_STARTS else text


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


#: The columns' types as ``report_new_papers.sql`` gives them.
FRAME_SCHEMA = {
    column: pl.List(pl.String)
    if column == "code_urls"
    else pl.Int32
    if column == "position"
    else pl.String
    for column in NEW_PAPERS_CSV_COLUMNS
}


def _frame_rows(papers: list[dict[str, Any]]) -> FrameRows:
    return FrameRows(pl.DataFrame(papers, schema=FRAME_SCHEMA, orient="row"))


def test_rows_from_the_database_give_the_same_bytes() -> None:
    texts = [c for c in CELLS if c is None or isinstance(c, str)]
    lists = [c for c in CELLS if c is None or isinstance(c, list)]
    papers = [
        {
            column: lists[i % len(lists)]
            if column == "code_urls"
            else (None if i % 7 == 0 else i - 3)
            if column == "position"
            else texts[(i + j) % len(texts)]
            for j, column in enumerate(NEW_PAPERS_CSV_COLUMNS)
        }
        for i in range(len(texts) * 4)
    ]
    rows = _frame_rows(papers)
    assert list(rows) == papers
    assert new_papers_csv(rows) == reference_csv(papers)
    assert new_papers_csv(_frame_rows([])) == reference_csv([])


_TEXT = st.one_of(st.none(), st.text(alphabet=st.characters(exclude_categories=("Cs",))))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                column: st.one_of(st.none(), st.lists(st.text(min_size=1), max_size=3))
                if column == "code_urls"
                else st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
                if column == "position"
                else _TEXT
                for column in NEW_PAPERS_CSV_COLUMNS
            }
        ),
        max_size=8,
    )
)
def test_any_text_gives_the_bytes_of_the_cell_by_cell_conversion(
    papers: list[dict[str, Any]],
) -> None:
    assert new_papers_csv(papers) == reference_csv(papers)
    assert new_papers_csv(_frame_rows(papers)) == reference_csv(papers)
