"""Markdown digests that are lists of papers: a task list of titles (:func:`checkbox_papers`)
and a reading list of linked titles (:func:`link_item_papers`). Rules of
:mod:`paperwatch.ingest.readers.markdown`, which tries them before its heading rules."""

from __future__ import annotations

import re

from markdown_it.token import Token

from paperwatch.ingest.parse import Header, parse_header, person_names
from paperwatch.ingest.readers.markdown_blocks import (
    LABEL,
    Paper,
    file_paragraph,
    inline_text,
    keep,
    line_texts,
)

CHECKBOX = re.compile(r"\A\[[ xX]\][ \t]+(?=\S)")
CHECKBOX_TITLE_WORDS = (2, 30)
#: A paragraph outside the list with this many words is prose a paper might own.
_PROSE_MIN_WORDS = 15


def _checkbox_item(tokens: list[Token], index: int) -> Paper | None:
    """The title-only paper of the task-list item opening at ``tokens[index]``, or None.

    The item must be one paragraph of one or two lines: ``[ ] Title`` (2 to 30 words, not
    ending as a sentence or a label does), then optionally a line of names
    (:func:`person_names`, which become the authors). None for any other item."""
    inline = tokens[index + 2] if index + 4 < len(tokens) else None
    if (
        inline is None
        or tokens[index + 1].type != "paragraph_open"
        or inline.type != "inline"
        or inline.map is None
        or not CHECKBOX.match(inline.content)
        or tokens[index + 3].type != "paragraph_close"
        or tokens[index + 4].type != "list_item_close"
    ):
        return None
    lines = line_texts(inline)
    title = CHECKBOX.sub("", lines[0][0])
    low, high = CHECKBOX_TITLE_WORDS
    if (
        len(lines) > 2
        or not low <= len(title.split()) <= high
        or title.endswith((".", ":", "：", ";", ","))
        or LABEL.match(title)
    ):
        return None
    paper = Paper(line=inline.map[0] + 1, title=title, urls=list(lines[0][1]))
    if len(lines) == 2:
        names = person_names(lines[1][0])
        if names is None:
            return None
        paper.authors = names
    return paper


def _links_only(token: Token) -> bool:
    """True for an inline token that is nothing but links (and separators between them):
    a navigation list's item, with no prose of its own."""
    children = token.children or []
    depth, links = 0, 0
    for child in children:
        if child.type == "link_open":
            depth, links = depth + 1, links + 1
        elif child.type == "link_close":
            depth -= 1
        elif depth:
            continue  # a link's own text
        elif child.type == "text":
            if child.content.strip(" |·•,-–"):
                return False
        elif child.type not in ("softbreak", "hardbreak"):
            return False
    return links > 0


def checkbox_papers(tokens: list[Token]) -> tuple[Header | None, list[Paper]] | None:
    """The papers of a digest that is a task list of titles, or None.

    Such a digest writes each paper as ``- [ ] Title`` (or ``- [x] Title``) with its
    authors on the next line, under section headings. The shape holds when at least two
    list items start with a box and are titles (:func:`_checkbox_item`), at least as many
    as the boxed items that are not, and no paragraph outside a list has 15 or more words
    (an abstract under a heading: then the headings are the papers, and a box is a
    reader's to-do). Each title item is one paper without an abstract; headings are
    sections (one before the first paper is the header when it names a venue and year); a
    list item of links only (a digest's navigation) is dropped; other blocks, a boxed item
    that is no title among them, are entries of their own (marked ``outside`` before the
    first paper: the digest's own prose), judged as abstracts are.
    """
    boxes = [
        i
        for i, t in enumerate(tokens[:-2])
        if t.type == "list_item_open"
        and tokens[i + 2].type == "inline"
        and CHECKBOX.match(tokens[i + 2].content)
    ]
    if len(boxes) < 2:
        return None
    items = {i: _checkbox_item(tokens, i) for i in boxes}
    titles = sum(paper is not None for paper in items.values())
    if titles < 2 or titles < len(items) - titles:
        return None
    in_list = 0
    for index, token in enumerate(tokens):
        if token.type in ("list_item_open", "list_item_close"):
            in_list += token.nesting
        elif (
            token.type == "inline"
            and not in_list
            and tokens[index - 1].type == "paragraph_open"
            and len(token.content.split()) >= _PROSE_MIN_WORDS
        ):
            return None
    header: Header | None = None
    papers: list[Paper] = []
    in_heading, skip_until = False, -1
    for index, token in enumerate(tokens):
        if index <= skip_until:
            continue
        paper = items.get(index)
        if paper is not None:
            papers.append(paper)
            skip_until = index + 4
        elif token.type in ("heading_open", "heading_close"):
            in_heading = token.type == "heading_open"
        elif token.type != "inline" or token.map is None:
            continue
        elif in_heading:
            if header is None and not papers:
                header = parse_header(inline_text(token)[0])
        elif not _links_only(token):
            outside = Paper(line=token.map[0] + 1, outside=not papers)
            file_paragraph(outside, token, token.map[0] + 1)
            keep(papers, outside)
    return header, papers
