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
    decode_references,
    file_paragraph,
    inline_text,
    keep,
    line_texts,
    strip_emphasis,
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
    if _long_paragraphs_outside_lists(tokens):
        return None
    return _list_papers(tokens, {i: (p, i + 4) for i, p in items.items() if p is not None})


def _long_paragraphs_outside_lists(tokens: list[Token]) -> int:
    """How many paragraphs outside any list have :data:`_PROSE_MIN_WORDS` words or more."""
    in_list, count = 0, 0
    for index, token in enumerate(tokens):
        if token.type in ("list_item_open", "list_item_close"):
            in_list += token.nesting
        elif (
            token.type == "inline"
            and not in_list
            and tokens[index - 1].type == "paragraph_open"
            and len(token.content.split()) >= _PROSE_MIN_WORDS
        ):
            count += 1
    return count


def _list_papers(
    tokens: list[Token], items: dict[int, tuple[Paper, int]]
) -> tuple[Header | None, list[Paper]]:
    """The header and papers of a list digest whose paper items open at the keys of
    ``items`` (the paper, and the index of the item's last token).

    Headings are sections (one before the first paper is the header when it names a venue
    and year); a block of links only (navigation) is dropped; every other block is an
    entry of its own, marked ``outside`` before the first paper."""
    header: Header | None = None
    papers: list[Paper] = []
    in_heading, skip_until = False, -1
    for index, token in enumerate(tokens):
        if index <= skip_until:
            continue
        if index in items:
            paper, skip_until = items[index]
            papers.append(paper)
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


#: A linked title has this many words: a paper's, not a navigation link or a badge.
_LINK_TITLE_WORDS = (3, 40)
#: A year note after a linked title's authors: ``(2026)``, ``[NeurIPS 2026]``, ``, 2026``.
_YEAR_NOTE = re.compile(r"[\s,.]*[(\[]?(?:[A-Za-z][\w ]{0,30}?\s)?(?:19|20)\d\d[)\]]?[\s.]*\Z")
_SEPARATORS = " -–—:|,"


def _linked_title(tokens: list[Token], index: int) -> tuple[str, str, str] | None:
    """``(title, url, rest of its line)`` of the list item opening at ``tokens[index]``
    when its first paragraph opens with an http(s) link (maybe bold) of 3 to 40 words."""
    inline = tokens[index + 2] if index + 2 < len(tokens) else None
    if inline is None or tokens[index + 1].type != "paragraph_open" or inline.type != "inline":
        return None
    children = inline.children or []
    at = 0
    while at < len(children) and (
        children[at].type in ("strong_open", "em_open")
        or (children[at].type == "text" and not children[at].content.strip())
    ):
        at += 1
    if at == len(children) or children[at].type != "link_open":
        return None
    url = str(children[at].attrs.get("href") or "")
    kinds = [child.type for child in children]
    close = kinds.index("link_close", at) if "link_close" in kinds[at:] else len(children)
    words = [c.content for c in children[at + 1 : close] if c.type in ("text", "code_inline")]
    title = " ".join("".join(words).split())
    low, high = _LINK_TITLE_WORDS
    if not url.startswith(("http://", "https://")) or not low <= len(title.split()) <= high:
        return None
    rest: list[str] = []
    for child in children[close + 1 :]:
        if child.type in ("softbreak", "hardbreak"):
            break
        if child.type in ("text", "code_inline"):
            rest.append(child.content)
    return title, url, "".join(rest)


def _item_end(tokens: list[Token], index: int) -> int:
    """The index of the ``list_item_close`` of the item opening at ``tokens[index]``."""
    level = tokens[index].level
    for end in range(index + 1, len(tokens)):
        if tokens[end].type == "list_item_close" and tokens[end].level == level:
            return end
    return len(tokens) - 1


def _link_item(tokens: list[Token], index: int) -> tuple[Paper, int] | None:
    """The paper of a reading list's item opening at ``tokens[index]`` and the index of
    its last token, or None when the item does not open with a linked title.

    The link is the title and URL. The rest of its line is the authors when it is only
    names (a year note such as ``(2026)`` after them dropped), or the abstract's first
    line when it is prose of 15 words or more. The item's other lines and blocks (a lazy
    continuation, a ``>`` block quote, nested paragraphs or labelled sub-items) are filed
    as a paper's blocks are; nested items of links only are dropped."""
    found = _linked_title(tokens, index)
    first = tokens[index + 2]
    if found is None or first.map is None:
        return None
    title, url, rest = found
    line = first.map[0] + 1
    paper = Paper(line=line, title=title, urls=[url])
    note = strip_emphasis(rest).strip(_SEPARATORS)
    names = person_names(_YEAR_NOTE.sub("", note).strip(_SEPARATORS)) if note else None
    if names is not None:
        paper.authors = names
    elif len(note.split()) >= _PROSE_MIN_WORDS:
        paper.body.append((line, note))
        paper.current = "body"
    more = decode_references(first.content).split("\n")[1:]
    paper.body.extend((line + offset, text) for offset, text in enumerate(more, start=1))
    end = _item_end(tokens, index)
    for at in range(index + 3, end):
        token = tokens[at]
        if token.type == "inline" and token.map is not None and not _links_only(token):
            file_paragraph(paper, token, token.map[0] + 1)
    return paper, end


def link_item_papers(tokens: list[Token]) -> tuple[Header | None, list[Paper]] | None:
    """The papers of a reading list of linked titles (an awesome-list), or None.

    Such a list writes each paper as a list item ``- [Title](https://…)``, maybe with
    ``- *Authors* (2026)`` after the link, and its abstract on the lines under it or in a
    ``>`` block quote in the item (:func:`_link_item`), under section headings. The shape
    holds when at least two items open with a linked title and fewer than half as many
    paragraphs outside lists have 15 words or more (else the headings are the papers and
    the links their references). Headings, navigation and other blocks: as
    :func:`_list_papers` says."""
    items: dict[int, tuple[Paper, int]] = {}
    index = 0
    while index < len(tokens):
        if (
            tokens[index].type == "list_item_open"
            and (found := _link_item(tokens, index)) is not None
        ):
            items[index] = found
            index = found[1]
        index += 1
    if len(items) < 2 or 2 * _long_paragraphs_outside_lists(tokens) >= len(items):
        return None
    return _list_papers(tokens, items)
