"""Markdown digests: a paper per heading, labelled fields, ``---`` rules between papers.

The syntax is markdown-it-py's (CommonMark); this module maps its block tokens. The
shape it reads is what digest generators and reading lists write::

    # NeurIPS 2026 digest               <- a heading above the papers' level: the header
    ## [3] Title of the paper           <- a paper: title, list number, a link's URL
    **Authors:** A. Author, B. Author   <- labelled lines (also as list items)
    **Link:** https://arxiv.org/abs/2611.01234
    **Abstract:** We propose …         <- the abstract (or the unlabelled paragraphs)
    ---

- The papers' level is the heading level used most (ties: the deeper); a heading above
  it is a section, or the header when it names a venue and year; one below it, such as
  ``#### Abstract``, labels what follows.
- A paper's abstract is its ``Abstract:`` field (with the lines that continue it), else
  its unlabelled paragraphs and block quotes. A paper with neither has no abstract.
- A table whose header names a ``Title`` (``题目``, ``标题``) or ``Abstract`` column is a
  table of papers: one paper per row (title, authors, links, abstract where there is a
  column; other columns are dropped), and the file's headings are then sections. An HTML
  ``<table>`` in an HTML block is read the same way (:mod:`.markdown_tables`: its
  ``<th>`` row, else its first row, is the header; cells are their text, tags removed,
  references decoded once). A ``<details>`` block whose ``<summary>`` says Abstract
  holds the abstract (hard wraps joined), and the paper's one unlabelled line
  right above it, when it is only people's names, is the authors; other tables,
  ``<details>`` blocks (collapsed BibTeX, long author lists), code blocks and HTML are
  dropped.
- A task list of titles (``- [ ] Title`` items, each maybe with a line of names under it)
  gives one paper without an abstract per item (:func:`.markdown_lists.checkbox_papers`);
  a reading list of ``- [Title](url)`` items gives one paper per item, its abstract the
  item's other lines or block quote (:func:`.markdown_lists.link_item_papers`).
- Prose outside any paper (a paragraph, list item or block quote before the first
  paper's heading, or between a section heading and the next paper) is not dropped:
  each block is an entry of its own, without a title, marked ``outside_paper``: the
  ``papers`` suite quarantines it with its line as the digest's own prose.
- Without headings, ``---`` rules separate the papers (with headings, a rule inside a
  paper is decoration); a file of plain paragraphs gives one paper per paragraph.
- A ``---`` rule right under a labelled line (``**Abstract:** …`` then ``---`` with no
  blank line between, as the shape above is written) is a rule after that paragraph,
  not the underline of a setext heading: CommonMark would make the fields a heading.
- YAML front matter (a static-site page's ``---`` block at the top) is not content; the
  links of HTML blocks inside a paper (a toolbar's arXiv link) are its URLs.
- Character references (``&amp;``, ``&lt;``, ``&#39;``, ``&nbsp;``) are the characters
  they stand for, as CommonMark reads them (:func:`decode_references`); in the text of
  HTML blocks, as HTML reads them, after the tags are removed. Text stays text: a
  decoded ``<`` is a character of the abstract, which the report escapes again.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import replace

from markdown_it import MarkdownIt
from markdown_it.token import Token

from paperwatch.ingest.parse import (
    Entry,
    Header,
    Listing,
    decode_listing,
    parse_header,
    person_names,
)
from paperwatch.ingest.readers.markdown_blocks import (
    LABEL,
    TAG,
    Paper,
    decode_references,
    file_paragraph,
    html_text,
    inline_text,
    keep,
    opens_with_title_label,
)
from paperwatch.ingest.readers.markdown_lists import CHECKBOX, checkbox_papers, link_item_papers
from paperwatch.ingest.readers.markdown_tables import (
    html_tables,
    pipe_cell,
    record_columns,
    table_papers,
    table_rows,
)
from paperwatch.ingest.readers.records import (
    external_id,
    first_url,
    one_line,
    record_entry,
)

#: A list number before a title: ``[3]``, ``3.``, ``#3``, ``(3)``.
_TITLE_NUMBER = re.compile(r"\A\s*(?:\[(\d{1,5})\]|#?(\d{1,5})[.):]|\((\d{1,5})\))\s+")
_DETAILS_OPEN = re.compile(r"<details\b", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)
#: A heading that labels the abstract below it: "Abstract", "📄 摘要（原文）", "Summary (English)".
_ABSTRACT_HEADING = re.compile(r"\A\W*(?:abstract|summary|摘要)(?:\W.*)?\Z", re.IGNORECASE)
#: Of several abstract sections (a translation and the original), the original wins.
_ORIGINAL = re.compile(r"原文|original|english", re.IGNORECASE)
#: YAML front matter of a static-site page (``---`` … ``---`` at the very start).
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?:.*\n)*?(?:---|\.\.\.)[ \t]*\n")
_HREF = re.compile(r"""href=["'](https?://[^"'\s]+)["']""", re.IGNORECASE)
_SUMMARY = re.compile(r"<summary\b[^>]*>(.*?)</summary\s*>", re.IGNORECASE | re.DOTALL)

_PARSER = MarkdownIt("commonmark").enable("table")


def read(data: bytes, name: str) -> Listing:
    """Read a Markdown digest's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
    """
    return read_text(decode_listing(data, name), name)


def _papers_level(tokens: list[Token]) -> int | None:
    """The papers' heading level, or None without headings: the level just above the
    headings that label an abstract (``## Abstract`` under ``# Title``), else the level
    used most (ties: the deeper)."""
    levels: Counter[int] = Counter()
    labels: set[int] = set()
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            level = int(token.tag[1])
            if _ABSTRACT_HEADING.match(tokens[index + 1].content.strip()):
                labels.add(level)
            else:
                levels[level] += 1
    if labels:
        above = [level for level in levels if level < min(labels)]
        if above:
            return max(above)
    if not levels:
        return None
    return max(levels.items(), key=lambda item: (item[1], item[0]))[0]


def _fields_before_rules(tokens: list[Token]) -> list[Token]:
    """The tokens with each setext heading underlined by ``---`` whose first line is a
    labelled field (``**Abstract:** …``) turned back into a paragraph and a rule.

    CommonMark reads ``---`` right under a paragraph as a level-2 setext underline
    (spec 0.31.2, 4.3 "Setext headings"), so a digest written as fields then ``---``
    without a blank line would make its authors, link and abstract one heading. A
    heading never starts with such a label; an ATX heading (``## Abstract: …``) and a
    ``===`` underline are left as they are.
    """
    out: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if (
            token.type == "heading_open"
            and token.markup == "-"
            and index + 2 < len(tokens)
            and LABEL.match(tokens[index + 1].content.split("\n", 1)[0])
        ):
            inline, close = tokens[index + 1], tokens[index + 2]
            end = (token.map or [0, 0])[1]
            token.type, token.tag, token.markup = "paragraph_open", "p", ""
            close.type, close.tag, close.markup = "paragraph_close", "p", ""
            rule = Token("hr", "hr", 0, map=[end - 1, end], markup="---", block=True)
            rule.level = token.level
            out.extend([token, inline, close, rule])
            index += 3
            continue
        out.append(token)
        index += 1
    return out


def read_text(text: str, name: str = "<text>") -> Listing:
    """The papers of a Markdown digest as entries (see the module's description).

    Each entry's ``text`` is its abstract as written in the source, character references
    decoded (emphasis and LaTeX kept for the cleaner, so the same abstract has the same
    ``paper_id`` as in a plain-text listing); ``line`` is the 1-based line of the paper's
    heading (or of its first line when it has none).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    front = _FRONT_MATTER.match(text)
    if front:  # blank lines in its place keep the line numbers
        text = "\n" * front.group(0).count("\n") + text[front.end() :]
    tokens = _fields_before_rules(_PARSER.parse(text))
    listed = checkbox_papers(tokens) or link_item_papers(tokens) or _title_block_papers(tokens)
    header, papers = listed if listed is not None else _Walk(tokens).run()
    entries = [_entry(position, p) for position, p in enumerate(papers, start=1)]
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return Listing(header=header, entries=entries, line_count=line_count, format="markdown")


def _keep_block(paper: Paper, token: Token, markup: bool) -> None:
    """Keep the lines of a block ``token`` as the paper's :attr:`Paper.blocks`: an HTML
    block's text (``markup``: tags removed, references decoded), a code block's as
    written."""
    first = (token.map[0] + 1) if token.map else paper.line
    content = TAG.sub(" ", token.content) if markup else token.content  # tags may span lines
    for offset, line in enumerate(content.split("\n")):
        text = " ".join((html.unescape(line) if markup else line).split())
        if text:
            paper.blocks.append((first + offset, text))


class _Walk:
    """One pass over a digest's tokens: papers by heading (at the papers' level), by rule,
    by paragraph, or by table row; the digest's header from a heading above them."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.level = _papers_level(tokens)
        self.header: Header | None = None
        self.papers: list[Paper] = []
        self.paper: Paper | None = None
        self.details = 0
        self.details_abstract = False  # inside a <details> block whose summary says "Abstract"
        self.in_heading: int | None = None
        #: A reader's to-do items (``- [ ] …``) under the open paper: entries of their own
        #: after it, not lines of its abstract.
        self.to_dos: list[Paper] = []
        self.by_paragraph = self.level is None and not any(t.type == "hr" for t in tokens)
        #: Index of a table's token (``table_open``, or the HTML block holding tables of
        #: papers) → its papers.
        self.tables: dict[int, list[Paper]] = {}
        for index, token in enumerate(tokens):
            if token.type == "table_open":
                rows, _ = table_rows(tokens, index)
                cells = [[pipe_cell(cell) for cell in row] for row in rows]
                if record_columns(cells) is not None:
                    self.tables[index] = table_papers(cells)
            elif token.type == "html_block":
                tables = [t for t in html_tables(token) if record_columns(t) is not None]
                if tables:
                    self.tables[index] = [p for t in tables for p in table_papers(t)]
        if self.tables:  # a table of papers: headings are sections, prose is the digest's own
            self.level, self.by_paragraph = 0, False

    def close(self) -> None:
        if self.paper is not None and self.paper.has_content():
            self.papers.append(self.paper)
        self.paper = None
        keep(self.papers, *self.to_dos)
        self.to_dos = []

    def run(self) -> tuple[Header | None, list[Paper]]:
        skip_until = -1
        for index, token in enumerate(self.tokens):
            if index <= skip_until:
                continue
            if token.type == "table_open":
                self.close()
                self.papers.extend(self.tables.get(index, []))
                skip_until = table_rows(self.tokens, index)[1]
            elif token.type == "html_block" and index in self.tables:
                self.close()
                self.papers.extend(self.tables[index])
                self._count_details(token)
            elif token.type == "html_block":
                self._html(token, index)
            elif self.details:
                self._details_line(token)
            elif token.type == "hr":
                if self.level is None:  # rules separate papers only where headings do not
                    self.close()
            elif token.type == "heading_open":
                self.in_heading = int(token.tag[1])
            elif token.type == "heading_close":
                self.in_heading = None
            elif token.type in ("fence", "code_block") and self.paper is not None:
                _keep_block(self.paper, token, markup=False)
            elif token.type != "inline" or token.map is None:
                continue
            elif self.in_heading is not None:
                self._heading(token, self.in_heading)
            elif not _inside_table_or_code(self.tokens, index):
                self._prose(token)
        self.close()
        return self.header, self.papers

    def _html(self, token: Token, index: int) -> None:
        if self.paper is not None and not self.details:
            self.paper.urls.extend(html.unescape(url) for url in _HREF.findall(token.content))
            if _opens_abstract_details(token):
                _names_above(self.paper, self.tokens, index)
            self.details_abstract = _details_abstract(self.paper, token)
            _keep_block(self.paper, token, markup=True)
        self._count_details(token)

    def _count_details(self, token: Token) -> None:
        self.details += len(_DETAILS_OPEN.findall(token.content))
        self.details = max(0, self.details - len(_DETAILS_CLOSE.findall(token.content)))

    def _details_line(self, token: Token) -> None:
        paper = self.paper
        if self.details_abstract and paper is not None and token.type == "inline" and token.map:
            at = token.map[0] + 1
            lines = decode_references(token.content).split("\n")
            paper.abstract.extend((at + i, line) for i, line in enumerate(lines))

    def _heading(self, token: Token, depth: int) -> None:
        assert token.map is not None
        heading, links = inline_text(token)
        level = self.level
        if level is not None and (depth < level or level == 0):
            self.close()
            if self.header is None and all(p.outside for p in self.papers):
                self.header = parse_header(heading)
            return
        if level is not None and depth > level:
            if self.paper is not None:
                _section(self.paper, heading)
            return
        self.close()
        paper = self.paper = Paper(line=token.map[0] + 1)
        number = _TITLE_NUMBER.match(heading)
        if number:
            paper.listed_number = int(next(g for g in number.groups() if g))
            heading = heading[number.end() :]
        paper.title = heading or None
        paper.urls.extend(links)

    def _prose(self, token: Token) -> None:
        assert token.map is not None
        first_line = token.map[0] + 1
        if self.paper is None and self.level is not None:
            # Prose outside any paper (before the first): an entry per block, not dropped.
            outside = Paper(line=first_line, outside=True)
            file_paragraph(outside, token, first_line)
            keep(self.papers, outside)
            return
        if self.paper is None or self.by_paragraph:
            self.close()
            self.paper = Paper(line=first_line)
        elif (self.paper.abstract or self.paper.body) and CHECKBOX.match(token.content):
            # "- [ ] Reproduce table 2" under a paper's abstract: the reader's own note.
            to_do = Paper(line=first_line, outside=True)
            file_paragraph(to_do, token, first_line)
            self.to_dos.append(to_do)
            return
        elif self.paper.has_content() and opens_with_title_label(token):
            self._next_labelled_paper(first_line)
        file_paragraph(self.paper, token, first_line)
        if self.by_paragraph:
            self.close()

    def _next_labelled_paper(self, first_line: int) -> None:
        """A ``Title:`` line after a paper with a title or text opens the next paper (the
        items of an LLM digest: ``1. **Title:** …``, then ``- **Authors:** …``, ``- **Abstract:**
        …``, all under one heading). A heading above the first item with nothing under it
        is the digest's header when it reads as one (:func:`parse_header`)."""
        paper = self.paper
        assert paper is not None
        heading_only = (
            paper.title is not None
            and not paper.title_labelled
            and not (paper.abstract or paper.body or paper.authors or paper.urls)
        )
        if heading_only and self.header is None and not self.papers:
            self.header = parse_header(paper.title or "")
            if self.header is not None:
                self.paper = None
        self.close()
        self.paper = Paper(line=first_line)


#: What may stand before a bold title in its line: an arXiv category tag (``[cs.CL]``).
_TITLE_PREFIX = re.compile(r"\s*(?:\[[^\]\n]{1,24}\]\s*)?")
_MIN_TITLE_WORDS = 4


def _bold_title(token: Token) -> tuple[str, str] | None:
    """``(title, rest)`` when the inline ``token`` starts with a bold title of at least four
    words (after an optional ``[cs.CL]`` tag) that is not a field label; ``rest`` is the
    text after it. None otherwise."""
    children = token.children or []
    index = 0
    while (
        index < len(children)
        and children[index].type == "text"
        and _TITLE_PREFIX.fullmatch(children[index].content)
    ):
        index += 1
    if index >= len(children) or children[index].type != "strong_open":
        return None
    end = index + 1
    parts: list[str] = []
    while end < len(children) and children[end].type != "strong_close":
        if children[end].type in ("text", "code_inline"):
            parts.append(children[end].content)
        elif children[end].type in ("softbreak", "hardbreak"):  # a title wrapped in two
            parts.append(" ")
        end += 1
    title = " ".join("".join(parts).split())
    if len(title.split()) < _MIN_TITLE_WORDS or title.endswith((":", "：")) or LABEL.match(title):
        return None
    rest = "".join(c.content for c in children[end + 1 :] if c.type in ("text", "code_inline"))
    return title, rest


def _title_block_papers(tokens: list[Token]) -> tuple[Header | None, list[Paper]] | None:
    """The papers of a digest that gives one paper per bold-title block, or None.

    Such digests (weekly lists, reading-list READMEs) write each paper as a list item or
    paragraph starting with ``**Title**`` (maybe after ``[cs.CL]``), its links beside it
    and its summary nested under it; headings are dates or sections. The shape holds
    when at least two blocks start with a bold title and they are at least twice the
    headings of the level used most. A list-item paper ends with its item; a paragraph
    paper runs to the next title block or heading. Blocks after a list-item paper and
    before the next title (an interjected paragraph) are an entry of their own, judged as
    any entry; the blocks before the first paper (the digest's introduction) are one
    entry too, marked ``outside`` (quarantined as the digest's own prose).
    """
    if not _title_blocks_dominate(tokens):
        return None
    header: Header | None = None
    papers: list[Paper] = []
    paper: Paper | None = None
    item_level: int | None = None  # the list_item level of a list-item paper
    loose: Paper | None = None
    in_heading = False

    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            keep(papers, paper, loose)
            paper, loose, item_level = None, None, None
            in_heading = True
            continue
        if token.type == "heading_close":
            in_heading = False
            continue
        if token.type == "list_item_close" and token.level == item_level:
            keep(papers, paper)
            paper, item_level = None, None
            continue
        if token.type == "code_block" and paper is not None:
            # An indented block under a title is its summary, not code (the form of
            # digests that indent each abstract by four spaces).
            _keep_block(paper, token, markup=False)
            continue
        if token.type != "inline" or token.map is None:
            continue
        line = token.map[0] + 1
        if in_heading:
            if header is None and not papers and paper is None and loose is None:
                header = parse_header(inline_text(token)[0])
            continue
        found = _bold_title(token) if item_level is None else None
        if found is not None:
            keep(papers, paper, loose)
            loose = None
            paper, item_level = _title_paper(tokens, index, found, line)
            continue
        if paper is not None:
            file_paragraph(paper, token, line)
        else:  # before the first paper (the digest's prose), or interjected: an entry
            loose = loose or Paper(line=line, outside=not papers)
            file_paragraph(loose, token, line)
    keep(papers, paper, loose)
    return header, papers


#: A task-list item's box, as GitHub writes one: ``[ ]``, ``[x]``, ``[X]``.
def _title_blocks_dominate(tokens: list[Token]) -> bool:
    """At least two blocks start with a bold title, and at least twice as many as the
    headings of the level used most."""
    titled = [
        i
        for i, t in enumerate(tokens)
        if t.type == "inline" and not _inside_table_or_code(tokens, i) and _bold_title(t)
    ]
    headings = Counter(int(t.tag[1]) for t in tokens if t.type == "heading_open")
    most = max(headings.values()) if headings else 0
    return len(titled) >= 2 and len(titled) >= 2 * most


def _title_paper(
    tokens: list[Token], index: int, found: tuple[str, str], line: int
) -> tuple[Paper, int | None]:
    """The paper a bold-title block starts at ``tokens[index]`` (``found``: its title and the
    rest of the line), and the list-item level it ends with (None: a paragraph paper)."""
    title, rest = found
    paper = Paper(line=line, title=title)
    paper.urls.extend(inline_text(tokens[index])[1])
    bare = first_url(rest)
    if bare:
        paper.urls.append(bare)
    # A line of names right under the title in its block is the authors
    # (``L. Moreau; J. Okonkwo``).
    below = decode_references(tokens[index].content).split("\n")[1:2]
    if below and (names := person_names(below[0])) is not None:
        paper.authors = names
    opener = tokens[index - 2] if index >= 2 else None
    item_level = opener.level if opener is not None and opener.type == "list_item_open" else None
    return paper, item_level


def _section(paper: Paper, heading: str) -> None:
    """A heading inside a paper: an abstract section (the original wins over a
    translation: a later one marked original replaces the abstract), or another section
    whose text is not the abstract."""
    if not _ABSTRACT_HEADING.match(heading):
        paper.current = "section"
        return
    original = _ORIGINAL.search(heading) is not None
    if paper.abstract and (paper.original_abstract or not original):
        paper.current = "section"  # keep the abstract already read
        return
    paper.abstract = []
    paper.original_abstract = original
    paper.current = "abstract"


def _opens_abstract_details(token: Token) -> bool:
    """True when the HTML block ``token`` opens a ``<details>`` whose ``<summary>`` says
    Abstract (the block :func:`_details_abstract` reads)."""
    summary = _SUMMARY.search(token.content)
    return (
        _DETAILS_OPEN.search(token.content) is not None
        and summary is not None
        and _ABSTRACT_HEADING.match(" ".join(TAG.sub(" ", summary.group(1)).split())) is not None
    )


def _names_above(paper: Paper, tokens: list[Token], index: int) -> None:
    """Make the paragraph right above ``tokens[index]`` (an abstract ``<details>`` block)
    the authors of ``paper`` when it is a line of names (:func:`person_names`), the
    paper's only unlabelled text so far, and the paper has no authors and no abstract
    yet: a digest writes ``### [Title](url)``, the names, then the collapsed abstract.
    Anything else (a sentence, a TL;DR, two lines) stays where it is."""
    if paper.authors or paper.abstract or len(paper.body) != 1 or index < 2:
        return
    inline, close = tokens[index - 2], tokens[index - 1]
    if close.type != "paragraph_close" or close.level != tokens[index].level:
        return
    if inline.type != "inline" or inline.map is None or paper.body[0][0] != inline.map[0] + 1:
        return
    names = person_names(paper.body[0][1])
    if names is not None:
        paper.authors, paper.body = names, []


def _details_abstract(paper: Paper, token: Token) -> bool:
    """Read a ``<details><summary>Abstract</summary> … </details>`` block of ``paper``
    (digests collapse the English abstract so): its text, tags removed, becomes the
    abstract, over any unlabelled text (a TL;DR or motivation line). True when the block
    is such a block and its ``</details>`` is not in this token (the paragraphs up to it
    then continue the abstract)."""
    content = token.content
    summary = _SUMMARY.search(content)
    if summary is None or token.map is None or not _opens_abstract_details(token):
        return False
    after = content[summary.end() :]
    closing = _DETAILS_CLOSE.search(after)
    first = token.map[0] + 1 + content[: summary.end()].count("\n")
    lines = [
        (first + offset, html_text(line))
        for offset, line in enumerate((after[: closing.start()] if closing else after).split("\n"))
    ]
    paper.abstract = [(number, line) for number, line in lines if line]
    paper.original_abstract = True
    paper.current = "section"
    return closing is None


def _inside_table_or_code(tokens: list[Token], index: int) -> bool:
    """True for an inline token of a table cell (tables are not parsed in CommonMark
    mode, so this guards only a parser with tables enabled)."""
    previous = tokens[index - 1] if index else None
    return previous is not None and previous.type in ("th_open", "td_open")


def _entry(position: int, paper: Paper) -> Entry:
    written = paper.abstract or paper.body or paper.blocks
    url = paper.urls[0] if paper.urls else None
    ext = external_id(arxiv=paper.arxiv, doi_value=paper.doi, urls=paper.urls)
    entry = record_entry(
        position,
        written[0][0] if written and paper.title is None else paper.line,
        " ".join(line for _, line in written) if written else None,
        title=one_line(paper.title),
        authors=paper.authors,
        url=url,
        ext_id=ext,
        listed_number=paper.listed_number,
        abstract_lines=[line for _, line in written] if written else None,
    )
    return replace(entry, outside_paper=True) if paper.outside else entry


__all__ = ["decode_references", "read", "read_text"]
