"""Tables of papers in Markdown digests: pipe tables and HTML ``<table>`` blocks whose
header names a title or abstract column (:data:`TABLE_FIELDS`), one paper per body row
(:func:`table_papers`). Used by :mod:`paperwatch.ingest.readers.markdown`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

from markdown_it.token import Token

from paperwatch.ingest.readers.markdown_blocks import Paper, decode_references, inline_text
from paperwatch.ingest.readers.records import author_names

HTML_TABLE = re.compile(r"<table\b", re.IGNORECASE)


#: Column names of a table whose rows are papers (``| Date | Title | Authors | PDF |``).
TABLE_FIELDS = {
    "title": "title",
    "paper": "title",
    "paper title": "title",
    "题目": "title",
    "标题": "title",
    "abstract": "abstract",
    "summary": "abstract",
    "authors": "authors",
    "author": "authors",
    "pdf": "url",
    "link": "url",
    "url": "url",
    "arxiv": "url",
    "paper link": "url",
}


@dataclass(frozen=True, slots=True)
class Cell:
    """A table cell: its text (markup removed, one line), its http(s) links, its text as
    written for an abstract (a pipe table's Markdown, references decoded), its line."""

    text: str
    links: tuple[str, ...]
    written: str
    line: int


def pipe_cell(token: Token) -> Cell:
    text, links = inline_text(token)
    line = (token.map[0] + 1) if token.map else 1
    return Cell(text, tuple(links), decode_references(token.content.strip()), line)


def table_rows(tokens: list[Token], start: int) -> tuple[list[list[Token]], int]:
    """The rows (lists of cell inline tokens) of the table opening at ``start``, and the
    index of its ``table_close``."""
    rows: list[list[Token]] = []
    index = start
    while index < len(tokens) and tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(token)
        index += 1
    return rows, index


class HtmlTables(HTMLParser):
    """The tables of an HTML block as rows of :class:`Cell` (``feed``, then ``tables``).

    The header row is the first row of ``<th>`` cells, else the first row; rows above it
    are dropped. A cell's text is its character data, references decoded once (the
    parser's ``convert_charrefs``), white space collapsed; ``<script>`` and ``<style>``
    contents are not text. End tags HTML lets one leave out (``</td>``, ``</tr>``) may be.
    A table inside a cell is text of that cell. ``first_line`` is the block's first line.
    """

    #: Tags that separate words (``a<br>b`` is two words); other tags join (``<b>k</b>-NN``).
    _BREAKS = frozenset({"br", "p", "div", "li", "ul", "ol", "hr", "table", "tr", "td", "th"})

    def __init__(self, first_line: int) -> None:
        super().__init__(convert_charrefs=True)
        self.first_line = first_line
        self.tables: list[list[list[Cell]]] = []
        self._rows: list[tuple[list[Cell], bool]] = []  # the open table's rows, "all <th>"
        self._depth = 0  # nesting of <table>
        self._cell: tuple[list[str], list[str], int] | None = None  # text, links, line
        self._heads = True  # the open row's cells are all <th>
        self._skip = 0  # inside <script> or <style>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "table":
            self._depth += 1
            if self._depth == 1:
                self._rows = []
        if self._depth != 1:
            self._space(tag)
            if self._cell is not None and tag == "a":
                self._link(attrs)
            return
        line = self.first_line + self.getpos()[0] - 1
        if tag == "tr":
            self._close_row()
            self._rows.append(([], True))
            self._heads = True
        elif tag in ("td", "th"):
            self._close_cell()
            if not self._rows:
                self._rows.append(([], True))
                self._heads = True
            self._heads = self._heads and tag == "th"
            self._cell = ([], [], line)
        elif self._cell is not None:
            self._space(tag)
            if tag == "a":
                self._link(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag == "table" and self._depth:
            self._depth -= 1
            if self._depth == 0:
                self._close_row()
                self._finish()
            return
        if self._depth != 1:
            self._space(tag)
        elif tag in ("td", "th"):
            self._close_cell()
        elif tag == "tr":
            self._close_row()
        else:
            self._space(tag)

    def handle_data(self, data: str) -> None:
        if self._cell is not None and not self._skip:
            self._cell[0].append(data)

    def close(self) -> None:
        super().close()
        if self._depth:  # a table the block does not close
            self._close_row()
            self._finish()
            self._depth = 0

    def _space(self, tag: str) -> None:
        if self._cell is not None and tag in self._BREAKS:
            self._cell[0].append(" ")

    def _link(self, attrs: list[tuple[str, str | None]]) -> None:
        assert self._cell is not None
        href = (dict(attrs).get("href") or "").strip()
        if href.startswith(("http://", "https://")):
            self._cell[1].append(href)

    def _close_cell(self) -> None:
        if self._cell is None or not self._rows:
            return
        parts, links, line = self._cell
        text = " ".join("".join(parts).split())
        self._rows[-1][0].append(Cell(text, tuple(links), text, line))
        self._cell = None

    def _close_row(self) -> None:
        self._close_cell()
        if self._rows:
            cells, _ = self._rows[-1]
            self._rows[-1] = (cells, self._heads and bool(cells))

    def _finish(self) -> None:
        rows = [(cells, heads) for cells, heads in self._rows if cells]
        header = next((i for i, (_, heads) in enumerate(rows) if heads), 0)
        self.tables.append([cells for cells, _ in rows[header:]])
        self._rows = []


def html_tables(token: Token) -> list[list[list[Cell]]]:
    """The tables of an HTML block (:class:`HtmlTables`); none without ``<table``."""
    if not HTML_TABLE.search(token.content):
        return []
    parser = HtmlTables((token.map[0] + 1) if token.map else 1)
    parser.feed(token.content)
    parser.close()
    return parser.tables


def record_columns(rows: list[list[Cell]]) -> dict[int, str] | None:
    """Column index → field of a table whose header names a title or abstract column."""
    if len(rows) < 2:
        return None
    names = [" ".join(cell.text.lower().split()) for cell in rows[0]]
    columns = {i: TABLE_FIELDS[n] for i, n in enumerate(names) if n in TABLE_FIELDS}
    if not {"title", "abstract"} & set(columns.values()):
        return None
    return columns


def table_papers(rows: list[list[Cell]]) -> list[Paper]:
    """One paper per body row of a records table (title, authors, links, abstract), or
    none when the table's header names no title or abstract column."""
    columns = record_columns(rows)
    if columns is None:
        return []
    title_column = next((i for i, name in columns.items() if name == "title"), 0)
    papers = []
    for row in rows[1:]:
        # The title cell's line (an HTML row may put each cell on a line of its own).
        line = row[min(title_column, len(row) - 1)].line if row else 1
        paper = Paper(line=line)
        for i, cell in enumerate(row):
            field_name = columns.get(i)
            if field_name == "title":
                paper.title = cell.text or None
            elif field_name == "abstract" and cell.written:
                paper.abstract.append((line, cell.written))
            elif field_name == "authors":
                paper.authors = author_names(cell.text)
            paper.urls.extend(cell.links)
        if paper.has_content():
            papers.append(paper)
    return papers
