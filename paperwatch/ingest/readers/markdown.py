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
- A table whose header names a ``Title`` or ``Abstract`` column is a table of papers:
  one paper per row (title, authors, links, abstract where there is a column), and the
  file's headings are then sections. A ``<details>`` block whose ``<summary>`` says
  Abstract holds the abstract (hard wraps joined); other tables, ``<details>`` blocks
  (collapsed BibTeX, long author lists), code blocks and HTML are dropped.
- Text outside any paper (an introduction before the first paper's heading) is the
  digest's own prose: not a paper.
- Without headings, ``---`` rules separate the papers (with headings, a rule inside a
  paper is decoration); a file of plain paragraphs gives one paper per paragraph.
- A ``---`` rule right under a labelled line (``**Abstract:** …`` then ``---`` with no
  blank line between, as the shape above is written) is a rule after that paragraph,
  not the underline of a setext heading: CommonMark would make the fields a heading.
- YAML front matter (a static-site page's ``---`` block at the top) is not content; the
  links of HTML blocks inside a paper (a toolbar's arXiv link) are its URLs.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

from paperwatch.ingest.parse import Entry, Header, Listing, decode_listing, parse_header
from paperwatch.ingest.readers.records import (
    arxiv_id,
    author_names,
    external_id,
    first_url,
    one_line,
    record_entry,
)

#: A labelled line: ``**Authors:** …``, ``- Link: …``, ``__Abstract__: …``.
_LABEL = re.compile(
    r"""\A[\s>*_\-+•·]*(?P<label>
        Abstract|Summary|TL;?DR|Authors?|Author\(s\)|Links?|URL|PDF|Paper|arXiv(?:\s+ID)?|DOI
      | OpenReview|Code|Project(?:\s+page)?|Keywords?|Comments?|Subjects?|Categor(?:y|ies)|Venue
      | Affiliations?|Date|Published|Submitted|Tags|Title|Analysis|Relevance|Score|Rating
      | PDF\s+Summary|摘要|作者|原文链接|链接|标题|发布日期|论文(?:下载)?(?:链接|地址)?|代码|开源代码
      | 更新日期|分类|备注|关键词
    )[*_]*\s*[:：][*_]*\s*(?P<value>.*)\Z""",
    re.VERBOSE | re.IGNORECASE,
)
_LABEL_KIND = {
    "abstract": "abstract",
    "summary": "abstract",
    "摘要": "abstract",
    "authors": "authors",
    "author": "authors",
    "author(s)": "authors",
    "作者": "authors",
    "title": "title",
    "标题": "title",
    "link": "url",
    "links": "url",
    "url": "url",
    "pdf": "url",
    "paper": "url",
    "链接": "url",
    "原文链接": "url",
    "论文": "url",
    "论文链接": "url",
    "论文地址": "url",
    "论文下载链接": "url",
    "论文下载地址": "url",
    "arxiv": "arxiv",
    "arxiv id": "arxiv",
    "doi": "doi",
    "openreview": "url",
}
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
_TAG = re.compile(r"<[^>]*>")

_PARSER = MarkdownIt("commonmark").enable("table")
#: Column names of a table whose rows are papers (``| Date | Title | Authors | PDF |``).
_TABLE_FIELDS = {
    "title": "title",
    "paper": "title",
    "paper title": "title",
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


@dataclass(slots=True)
class _Paper:
    line: int
    title: str | None = None
    listed_number: int | None = None
    urls: list[str] = field(default_factory=list)
    authors: tuple[str, ...] = ()
    arxiv: str | None = None
    doi: str | None = None
    abstract: list[tuple[int, str]] = field(default_factory=list)
    body: list[tuple[int, str]] = field(default_factory=list)
    current: str | None = None  # the field an unlabelled line continues
    original_abstract: bool = False  # the abstract came from a section marked original

    def has_content(self) -> bool:
        return bool(self.title or self.abstract or self.body or self.urls or self.authors)


def read(data: bytes, name: str) -> Listing:
    """Read a Markdown digest's bytes (see :func:`read_text`).

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
    """
    return read_text(decode_listing(data, name), name)


def _inline_text(token: Token) -> tuple[str, list[str]]:
    """The text of an inline token (emphasis and link markup dropped) and its links."""
    parts: list[str] = []
    links: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "link_open":
            href = str(child.attrs.get("href") or "")
            if href.startswith(("http://", "https://")):
                links.append(href)
    return " ".join("".join(parts).split()), links


def _table_rows(tokens: list[Token], start: int) -> tuple[list[list[Token]], int]:
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


def _record_columns(rows: list[list[Token]]) -> dict[int, str] | None:
    """Column index → field of a table whose header names a title or abstract column."""
    if len(rows) < 2:
        return None
    names = [" ".join(_inline_text(cell)[0].lower().split()) for cell in rows[0]]
    columns = {i: _TABLE_FIELDS[n] for i, n in enumerate(names) if n in _TABLE_FIELDS}
    if not {"title", "abstract"} & set(columns.values()):
        return None
    return columns


def _table_papers(rows: list[list[Token]], columns: dict[int, str]) -> list[_Paper]:
    """One paper per body row of a records table (title, authors, links, abstract)."""
    papers = []
    for row in rows[1:]:
        line = (row[0].map[0] + 1) if row and row[0].map else 1
        paper = _Paper(line=line)
        for i, cell in enumerate(row):
            text, links = _inline_text(cell)
            field_name = columns.get(i)
            if field_name == "title":
                paper.title = text or None
            elif field_name == "abstract" and cell.content.strip():
                paper.abstract.append((line, cell.content.strip()))
            elif field_name == "authors":
                paper.authors = author_names(text)
            paper.urls.extend(links)
        if paper.has_content():
            papers.append(paper)
    return papers


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
            and _LABEL.match(tokens[index + 1].content.split("\n", 1)[0])
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

    Each entry's ``text`` is its abstract as written in the source (emphasis and LaTeX
    kept for the cleaner, so the same abstract has the same ``paper_id`` as in a
    plain-text listing); ``line`` is the 1-based line of the paper's heading (or of its
    first line when it has none).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    front = _FRONT_MATTER.match(text)
    if front:  # blank lines in its place keep the line numbers
        text = "\n" * front.group(0).count("\n") + text[front.end() :]
    tokens = _fields_before_rules(_PARSER.parse(text))
    listed = _title_block_papers(tokens)
    if listed is not None:
        header_found, papers_found = listed
        entries = [_entry(position, p) for position, p in enumerate(papers_found, start=1)]
        line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return Listing(
            header=header_found, entries=entries, line_count=line_count, format="markdown"
        )
    level = _papers_level(tokens)
    header: Header | None = None
    papers: list[_Paper] = []
    paper: _Paper | None = None
    details = 0
    details_abstract = False  # inside a <details> block whose summary says "Abstract"
    in_heading: int | None = None
    by_paragraph = level is None and not any(t.type == "hr" for t in tokens)
    tables = {}
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            rows, _ = _table_rows(tokens, index)
            columns = _record_columns(rows)
            if columns is not None:
                tables[index] = _table_papers(rows, columns)
    if tables:  # a table of papers: headings are sections, prose is the digest's own
        level, by_paragraph = 0, False
    skip_until = -1

    def close() -> None:
        nonlocal paper
        if paper is not None and paper.has_content():
            papers.append(paper)
        paper = None

    for index, token in enumerate(tokens):
        if index <= skip_until:
            continue
        if token.type == "table_open":
            close()
            papers.extend(tables.get(index, []))
            skip_until = _table_rows(tokens, index)[1]
            continue
        if token.type == "html_block":
            if paper is not None and not details:
                paper.urls.extend(_HREF.findall(token.content))
                details_abstract = _details_abstract(paper, token)
            details += len(_DETAILS_OPEN.findall(token.content))
            details = max(0, details - len(_DETAILS_CLOSE.findall(token.content)))
            continue
        if details:
            if details_abstract and paper is not None and token.type == "inline" and token.map:
                at = token.map[0] + 1
                paper.abstract.extend(
                    (at + i, ln) for i, ln in enumerate(token.content.split("\n"))
                )
            continue
        if token.type == "hr":
            if level is None:  # rules separate papers only where headings do not
                close()
            continue
        if token.type == "heading_open":
            in_heading = int(token.tag[1])
            continue
        if token.type == "heading_close":
            in_heading = None
            continue
        if token.type != "inline" or token.map is None:
            continue
        first_line = token.map[0] + 1
        if in_heading is not None:
            heading, links = _inline_text(token)
            if level is not None and (in_heading < level or level == 0):
                close()
                if header is None and not papers:
                    header = parse_header(heading)
                continue
            if level is not None and in_heading > level:
                if paper is not None:
                    _section(paper, heading)
                continue
            close()
            paper = _Paper(line=first_line)
            number = _TITLE_NUMBER.match(heading)
            if number:
                paper.listed_number = int(next(g for g in number.groups() if g))
                heading = heading[number.end() :]
            paper.title = heading or None
            paper.urls.extend(links)
            continue
        if _inside_table_or_code(tokens, index):
            continue
        if paper is None and level is not None:
            continue  # the digest's own prose, outside any paper (before the first)
        if paper is None or by_paragraph:
            close()
            paper = _Paper(line=first_line)
        _paragraph(paper, token, first_line)
        if by_paragraph:
            close()
    close()
    entries = [_entry(position, p) for position, p in enumerate(papers, start=1)]
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return Listing(header=header, entries=entries, line_count=line_count, format="markdown")


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
        end += 1
    title = " ".join("".join(parts).split())
    if len(title.split()) < _MIN_TITLE_WORDS or title.endswith((":", "：")) or _LABEL.match(title):
        return None
    rest = "".join(c.content for c in children[end + 1 :] if c.type in ("text", "code_inline"))
    return title, rest


def _title_block_papers(tokens: list[Token]) -> tuple[Header | None, list[_Paper]] | None:
    """The papers of a digest that gives one paper per bold-title block, or None.

    Such digests (weekly lists, reading-list READMEs) write each paper as a list item or
    paragraph starting with ``**Title**`` (maybe after ``[cs.CL]``), its links beside it
    and its summary nested under it; headings are dates or sections. The shape holds
    when at least two blocks start with a bold title and they are at least twice the
    headings of the level used most. A list-item paper ends with its item; a paragraph
    paper runs to the next title block or heading. Blocks after a list-item paper and
    before the next title (an interjected paragraph) are an entry of their own; prose
    before the first paper is the digest's own.
    """
    titled = [
        i
        for i, t in enumerate(tokens)
        if t.type == "inline" and not _inside_table_or_code(tokens, i) and _bold_title(t)
    ]
    headings = Counter(int(t.tag[1]) for t in tokens if t.type == "heading_open")
    most = max(headings.values()) if headings else 0
    if len(titled) < 2 or len(titled) < 2 * most:
        return None
    header: Header | None = None
    papers: list[_Paper] = []
    paper: _Paper | None = None
    item_level: int | None = None  # the list_item level of a list-item paper
    loose: _Paper | None = None
    in_heading = False

    def close() -> None:
        nonlocal paper, loose, item_level
        for done in (paper, loose):
            if done is not None and done.has_content():
                papers.append(done)
        paper, loose, item_level = None, None, None

    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            close()
            in_heading = True
            continue
        if token.type == "heading_close":
            in_heading = False
            continue
        if token.type == "list_item_close" and item_level is not None and token.level == item_level:
            if paper is not None and paper.has_content():
                papers.append(paper)
            paper, item_level = None, None
            continue
        if token.type != "inline" or token.map is None:
            continue
        line = token.map[0] + 1
        if in_heading:
            if header is None and not papers and paper is None:
                header = parse_header(_inline_text(token)[0])
            continue
        found = _bold_title(token) if item_level is None else None
        if found is not None:
            close()
            title, rest = found
            paper = _Paper(line=line, title=title)
            paper.urls.extend(_inline_text(token)[1])
            bare = first_url(rest)
            if bare:
                paper.urls.append(bare)
            opener = tokens[index - 2] if index >= 2 else None
            if opener is not None and opener.type == "list_item_open":
                item_level = opener.level
            continue
        if paper is not None:
            _paragraph(paper, token, line)
        elif papers:
            if loose is None:
                loose = _Paper(line=line)
            _paragraph(loose, token, line)
    close()
    return header, papers


def _section(paper: _Paper, heading: str) -> None:
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


def _details_abstract(paper: _Paper, token: Token) -> bool:
    """Read a ``<details><summary>Abstract</summary> … </details>`` block of ``paper``
    (digests collapse the English abstract so): its text, tags removed, becomes the
    abstract, over any unlabelled text (a TL;DR or motivation line). True when the block
    is such a block and its ``</details>`` is not in this token (the paragraphs up to it
    then continue the abstract)."""
    content = token.content
    summary = _SUMMARY.search(content)
    if not _DETAILS_OPEN.search(content) or summary is None or token.map is None:
        return False
    if not _ABSTRACT_HEADING.match(" ".join(_TAG.sub(" ", summary.group(1)).split())):
        return False
    after = content[summary.end() :]
    closing = _DETAILS_CLOSE.search(after)
    first = token.map[0] + 1 + content[: summary.end()].count("\n")
    lines = [
        (first + offset, " ".join(_TAG.sub(" ", line).split()))
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


def _paragraph(paper: _Paper, token: Token, first_line: int) -> None:
    """File the lines of one paragraph (or block quote, or list item) of a paper."""
    _, links = _inline_text(token)
    unlabelled_links = True
    if paper.current not in ("abstract", "body", "section"):
        paper.current = None  # a new block: a labelled field does not run on into it
    for offset, line in enumerate(token.content.split("\n")):
        number = first_line + offset
        label = _LABEL.match(line)
        if label:
            kind = _LABEL_KIND.get(" ".join(label.group("label").lower().split()), "other")
            value = label.group("value").strip()
            paper.current = kind
            unlabelled_links = False
            if kind == "abstract":
                if value:
                    paper.abstract.append((number, value))
            elif kind == "authors":
                paper.authors = author_names(_strip_emphasis(value))
            elif kind == "title" and not paper.title:
                paper.title = _strip_emphasis(value) or None
            elif kind == "url":
                url = first_url(value)
                if url:
                    paper.urls.append(url)
            elif kind == "arxiv":
                paper.arxiv = arxiv_id(_strip_emphasis(value)) or arxiv_id(first_url(value))
                url = first_url(value)
                if url:
                    paper.urls.append(url)
            elif kind == "doi":
                paper.doi = value
            continue
        if paper.current == "abstract":
            paper.abstract.append((number, line))
        elif paper.current in (None, "body"):
            paper.current = "body"
            paper.body.append((number, line))
        # a line continuing another field (a wrapped author list) is that field's
    if unlabelled_links and paper.current == "body":
        return
    paper.urls.extend(links)


def _strip_emphasis(value: str) -> str:
    return " ".join(value.replace("**", "").replace("__", "").strip("*_ ").split())


def _entry(position: int, paper: _Paper) -> Entry:
    written = paper.abstract or paper.body
    url = paper.urls[0] if paper.urls else None
    ext = external_id(arxiv=paper.arxiv, doi_value=paper.doi, urls=paper.urls)
    return record_entry(
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
