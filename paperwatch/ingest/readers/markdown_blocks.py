"""What the rules of the Markdown reader (:mod:`paperwatch.ingest.readers.markdown`) share:
the paper being read (:class:`Paper`), the text of inline tokens and HTML lines,
CommonMark's decoding of character references, labelled lines (:data:`LABEL`), and the
filing of a block's lines into a paper (:func:`file_paragraph`)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from markdown_it.common.entities import entities
from markdown_it.common.utils import isValidEntityCode
from markdown_it.token import Token

from paperwatch.ingest.readers.records import arxiv_id, author_names, first_url

#: A code span (a backtick run to a run of the same length), a backslash escape (both
#: keep the references in them), or a character reference (markdown-it's entity rule).
REFERENCE = re.compile(
    r"(?P<code>(?<!`)(?P<ticks>`+)(?!`).*?(?<!`)(?P=ticks)(?!`))"
    r"|(?P<escape>\\[!-/:-@\[-`{-~])"
    r"|&(?:#(?P<number>x[0-9a-f]{1,6}|[0-9]{1,7})|(?P<name>[a-z][a-z0-9]{1,31}));",
    re.IGNORECASE | re.DOTALL,
)


#: Characters that break a line (``str.splitlines``): a reference to one is a space, so a
#: decoded text has the lines of its source.
LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


#: An HTML tag.
TAG = re.compile(r"<[^>]*>")


@dataclass(slots=True)
class Paper:
    """A paper as the Markdown reader collects it: its first line (1-based), the fields
    read so far, and the ``(line, text)`` pieces of its abstract and of its other text."""

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
    #: Text of HTML blocks and code blocks under the paper (tags stripped): its text only
    #: when it has no other (an abstract in a ``<div>`` or a fence is not lost).
    blocks: list[tuple[int, str]] = field(default_factory=list)
    original_abstract: bool = False  # the abstract came from a section marked original
    outside: bool = False  # a block of prose outside any paper (before the first, …)
    title_labelled: bool = False  # the title came from a ``Title:`` line, not a heading

    def has_content(self) -> bool:
        return bool(self.title or self.abstract or self.body or self.urls or self.authors)


def decode_references(text: str) -> str:
    """``text`` (Markdown source) with its character references decoded as CommonMark
    decodes them: named ones of the HTML5 list (``&amp;``, ``&eacute;``), decimal and hex
    ones (``&#39;``, ``&#x2014;``; an invalid code point is U+FFFD). A reference in a code
    span or behind a backslash, and a name HTML does not define, stay as written; one
    that stands for a line break is a space. Markup is not otherwise touched.
    """
    if "&" not in text:
        return text

    def decode(match: re.Match[str]) -> str:
        number, name = match.group("number"), match.group("name")
        if number is not None:
            code = int(number[1:], 16) if number[0] in "xX" else int(number)
            char = chr(code) if isValidEntityCode(code) else "\ufffd"
        elif name in entities:
            char = entities[name]
        else:  # a code span, an escape, or a name that is no reference: as written
            return match.group(0)
        return " " if char in LINE_BREAKS else char

    return REFERENCE.sub(decode, text)


def html_text(text: str) -> str:
    """The text of an HTML fragment's line: tags removed, then its references decoded
    (HTML's rules: :func:`html.unescape`), white space collapsed. A decoded ``<`` is
    text; the tags were removed before."""
    return " ".join(html.unescape(TAG.sub(" ", text)).split())


def line_texts(token: Token) -> list[tuple[str, list[str]]]:
    """The lines of an inline ``token`` as ``(text, links)``: emphasis and link markup
    dropped, character references decoded, white space collapsed; its http(s) links."""
    lines: list[tuple[list[str], list[str]]] = [([], [])]
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            lines[-1][0].append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            lines.append(([], []))
        elif child.type == "link_open":
            href = str(child.attrs.get("href") or "")
            if href.startswith(("http://", "https://")):
                lines[-1][1].append(href)
    return [(" ".join("".join(parts).split()), links) for parts, links in lines]


def inline_text(token: Token) -> tuple[str, list[str]]:
    """The text of an inline token (emphasis and link markup dropped) and its links: the
    lines of :func:`line_texts` joined with one space."""
    lines = line_texts(token)
    text = " ".join(" ".join(line for line, _ in lines).split())
    return text, [link for _, links in lines for link in links]


#: A labelled line: ``**Authors:** …``, ``- Link: …``, ``__Abstract__: …``.
LABEL = re.compile(
    r"""\A[\s>*_\-+•·]*(?P<label>
        Abstract|Summary|TL;?DR|Authors?|Author\(s\)|Links?|URL|PDF|Paper|arXiv(?:\s+ID)?|DOI
      | OpenReview|Code|Project(?:\s+page)?|Keywords?|Comments?|Subjects?|Categor(?:y|ies)|Venue
      | Affiliations?|Date|Published|Submitted|Tags|Title|Analysis|Relevance|Score|Rating
      | PDF\s+Summary|摘要|作者|原文链接|链接|标题|发布日期|论文(?:下载)?(?:链接|地址)?|代码|开源代码
      | 更新日期|分类|备注|关键词|Relevancy(?:\s+score)?|Reasons?\s+for\s+(?:the\s+)?match
    )[*_]*\s*[:：][*_]*\s*(?P<value>.*)\Z""",
    re.VERBOSE | re.IGNORECASE,
)
LABEL_KIND = {
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


def opens_with_title_label(token: Token) -> bool:
    """Whether the block's first line is a labelled title (``**Title:** …``)."""
    label = LABEL.match(token.content.split("\n", 1)[0])
    return label is not None and label_kind(label) == "title"


def label_kind(label: re.Match[str]) -> str:
    """The field a matched :data:`_LABEL` line fills (``other`` for a label paperwatch
    does not store)."""
    return LABEL_KIND.get(" ".join(label.group("label").lower().split()), "other")


def keep(papers: list[Paper], *done: Paper | None) -> None:
    """Append to ``papers`` those of ``done`` that have content."""
    papers.extend(p for p in done if p is not None and p.has_content())


def file_paragraph(paper: Paper, token: Token, first_line: int) -> None:
    """File the lines of one paragraph (or block quote, or list item) of a paper."""
    _, links = inline_text(token)
    unlabelled_links = True
    if paper.current not in ("abstract", "body", "section"):
        paper.current = None  # a new block: a labelled field does not run on into it
    for offset, line in enumerate(decode_references(token.content).split("\n")):
        number = first_line + offset
        label = LABEL.match(line)
        if label:
            kind = label_kind(label)
            paper.current = kind
            unlabelled_links = False
            labelled_field(paper, kind, label.group("value").strip(), number)
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


def labelled_field(paper: Paper, kind: str, value: str, number: int) -> None:
    """File the value of a labelled line (``Authors: …``) of line ``number`` as ``kind``."""
    if kind == "abstract":
        if value:
            paper.abstract.append((number, value))
    elif kind == "authors":
        paper.authors = author_names(strip_emphasis(value))
    elif kind == "title" and not paper.title:
        paper.title = strip_emphasis(value) or None
        paper.title_labelled = True
    elif kind in ("url", "arxiv"):
        if kind == "arxiv":
            paper.arxiv = arxiv_id(strip_emphasis(value)) or arxiv_id(first_url(value))
        url = first_url(value)
        if url:
            paper.urls.append(url)
    elif kind == "doi":
        paper.doi = value


def strip_emphasis(value: str) -> str:
    """``value`` without ``**``/``__`` and the ``*``/``_`` around it, white space collapsed."""
    return " ".join(value.replace("**", "").replace("__", "").strip("*_ ").split())
