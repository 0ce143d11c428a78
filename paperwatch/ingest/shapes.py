"""What a file or an entry looks like when it is not a listing or not an abstract.

Pure functions. They name a shape (a Markdown heading, a BibTeX record, a list of
titles, a chatbot's reply, a Git LFS pointer, …); whether that shape is loaded,
quarantined or reported is policy, and lives in the expectation suites
(``expectations/papers.json`` checks the ``looks_like`` column of
:func:`paperwatch.ingest.frames.entries_frame`, ``expectations/listing_files.json`` the
``lfs_pointer`` and ``format_note`` columns of :func:`paperwatch.ingest.frames.files_frame`).
The rules and where they come from: docs/data-quality.md.

Entry shapes (the values of :data:`ENTRY_SHAPES`, in the order they are tried):

- ``bibtex``, ``ris``, ``json``, ``python_literal``, ``markup``: the entry starts as
  a record of another format (``@inproceedings{``, ``TY  - JOUR``, ``{"title": …``,
  ``{'abstract': …``, ``Paper(title=…``, ``<entry>``);
- ``delimited``: rows of a CSV or TSV export (a header row naming ``title`` or
  ``abstract``, or lines with the same number of tabs);
- ``placeholder``, ``chatbot``: the entry starts (or, for a chatbot, ends) as
  boilerplate rather than an abstract (a short ``No abstract``, lorem ipsum;
  ``As an AI language model, I``, ``I'm sorry, but I can't``, ``Here is a
  summary of``; closers such as "I hope this helps", and their Chinese forms);
- ``boilerplate``: a proceedings page's copyright line, a table of contents (dot
  leaders), an organiser's notice ("papers are listed in alphabetical order");
- ``reference``: a bibliography entry (initials and names, then a venue, pages or year);
- ``markdown_heading``, ``markdown_table``, ``separator``, ``metadata``: one of
  its lines, as written, is a Markdown heading, a table row, a rule (``---``),
  or a metadata line (``Authors:``, ``**Link:**``, ``arXiv:2611.00001``, …);
- ``title_list``, ``title``: three or more lines that are each a title, or a
  single line in Title Case without a full stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from paperwatch.ingest.clean import strip_abstract_label

#: Every value :func:`entry_shape` can return; each has an expectation in papers.json.
ENTRY_SHAPES = (
    "bibtex",
    "ris",
    "json",
    "python_literal",
    "markup",
    "delimited",
    "placeholder",
    "chatbot",
    "boilerplate",
    "reference",
    "markdown_heading",
    "markdown_table",
    "separator",
    "metadata",
    "title_list",
    "title",
)

#: Leading characters that are decoration, not text: Markdown emphasis, quotes,
#: block quotes, list bullets.
_LEAD = r"[\s*_>\"'“‘(\[•·+\-]*"
#: Decoration before a label or a phrase: emphasis, brackets, quotes.
_DECORATION = "*_ [(\"'“‘"

_BIBTEX = re.compile(r"\A\s*@[A-Za-z]+\s*[{(]")
#: An RIS tag line (``TY  - JOUR``, ``AB  - …``): two characters, two spaces, a dash.
_RIS = re.compile(r"\A\s*(?:TY|[A-Z][A-Z0-9])  - ")
_JSON = re.compile(r"\A\s*\[?\s*\{\s*\"[^\"\n]{1,60}\"\s*:")
_PYTHON = re.compile(
    r"\A\s*(?:\[?\s*\{\s*'[^'\n]{1,60}'\s*:|[A-Z][A-Za-z0-9_]*\(\s*[a-z_][a-z0-9_]*\s*=)"
)
#: A second keyword argument: ``Paper(title=…, abstract=…)``, not ``LoRA(r=8) adapts …``.
_SECOND_KEYWORD = re.compile(r",\s*[a-z_][a-z0-9_]*\s*=")
#: Document and feed markup only: an abstract wrapped in ``<p>`` is still an abstract
#: (the HTML warning reports it).
_MARKUP = re.compile(
    r"\A\s*<(?:!--|(?:\?xml|!doctype|html|head|body|feed|rss|channel|entry|item)\b)",
    re.IGNORECASE,
)
#: Placeholders are short: "No abstract", "Abstract not available.", "[Abstract: TBD]".
_PLACEHOLDER_MAX_CHARS = 200
_PLACEHOLDER = re.compile(
    _LEAD
    + r"""(?:
        no\s+abstract(?:\s+(?:is\s+|was\s+)?(?:available|provided|given|found|submitted|yet))?
            (?=[\s.,;:!)\]]*(?:\Z|for\b|on\b|\(|-|–|—))
      | (?:the\s+)?abstract\s+(?:is\s+)?(?:not\s+(?:yet\s+)?(?:available|provided)|unavailable
            |missing|withheld|forthcoming|to\s+(?:come|be\s+(?:added|announced|provided)))
      | insert\s+(?:the\s+)?abstract\b
      | (?:n/?a|none|null|tbd|tba|todo|coming\s+soon|to\s+be\s+announced|not\s+available)
            [\W_]*\Z
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_LOREM = re.compile(
    r"\A" + _LEAD + r"lorem\s+ipsum\b|lorem\s+ipsum\s+dolor\s+sit\s+amet", re.IGNORECASE
)
_CHATBOT_START = re.compile(
    _LEAD
    + r"""(?:
        as\s+(?:an\s+ai|a\s+(?:large\s+)?language\s+model)\b[^,.]{0,40},\s*i\b
      | (?:i['’]m|i\s+am)\s+(?:sorry|afraid|unable|not\s+able)\b
      | i\s+apologi[sz]e\b
      | (?:my\s+)?apologies,
      | sorry,?\s+(?:but\s+)?i\b
      | i\s+(?:can(?:no|['’])t|cannot|do\s+not|don['’]t)\s+(?:have\s+access|access|browse|open|read
            |provide|help|assist|summari[sz]e|find|retrieve|generate|view)\b
      | (?:sure|certainly|of\s+course|absolutely|okay)\b[!,.]*\s+(?:here|below|i)\b
      | i\s+hope\s+this\s+helps\b | great\s+question\b
      | note:\s+i\s+(?:could\s*not|couldn['’]t|cannot|can['’]t|did\s+not|didn['’]t)\b
      | (?:the\s+|these\s+)?(?:papers|abstracts|summaries)\s+(?:below|above)\s+(?:are|were)\b
      | 以下是 | 当然[，,！!] | 抱歉
      | (?:here\s+is|here\s+are|here['’]s|below\s+is)\s+(?:a|an|the|your|my)?\s*(?:[\w-]+\s+){0,3}?
            (?:(?:summary|abstract|overview|rewrite|rewritten|paraphrase)\b
              |(?:version|draft|translation)\s*(?::|of\s+(?:the|your|this)\s+(?:abstract|paper|text)))
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_CHATBOT_END = re.compile(
    r"(?:let\s+me\s+know\s+if|i\s+hope\s+this\s+helps|feel\s+free\s+to\s+ask"
    r"|would\s+you\s+like\s+me\s+to)\b[^.!?]*[.!?]?[\s*_]*\Z"
    r"|(?:请随时告诉我|如果您需要)[^。！？]*[。！？]?\s*\Z",
    re.IGNORECASE,
)

#: Words one of which a chatbot's closing line holds (a cheap test before the regex).
_CHATBOT_END_WORDS = (
    "let me know",
    "hope this helps",
    "feel free",
    "would you like",
    "请随时告诉我",
    "如果您需要",
)
#: An abstract may open by quoting a reply ("As an AI language model, I cannot …" is a
#: common refusal. We measure …): a quotation closed and followed by more text.
_QUOTED_OPENING = re.compile(r"\A\s*[\"“‘'][^\"”’]{1,200}[\"”’]\s+[\w(]")
#: Text of a proceedings page or an organiser's notice, not of an abstract: a copyright
#: line, a table of contents (dot leaders), an ordering or contact notice.
_BOILERPLATE = re.compile(
    r"copyright\s+(?:©\s*)?(?:\d{4}\s+)?(?:by\s+)?the\s+author|\ball\s+rights\s+reserved\b"
    r"|\btable\s+of\s+contents\b|\.{6,}\s*\d"
    r"|\b(?:papers|abstracts)\s+are\s+(?:listed|sorted|ordered)\s+(?:in|by)\b"
    r"|\bcontact\s+the\s+(?:program|programme|general)\s+chairs?\b",
    re.IGNORECASE,
)
#: A bibliography entry: author initials and names first, then a venue, pages or a year
#: at the end ("A. Smith, B. Jones, and C. Brown. Title. In Advances …, 2022.").
_REFERENCE_AUTHORS = re.compile(
    r"\A[\s\[\]\d.]*(?:(?:[A-Z]\.\s?)+[A-Z][\w'’-]+|[A-Z][\w'’-]+,\s(?:[A-Z]\.\s?)+)"
    r"(?:,|\s+and\s|\s+et\s+al\.)"
)
_REFERENCE_TAIL = re.compile(
    r"(?:\b(?:19|20)\d{2}[a-z]?\.?\s*\Z|\bIn\s+(?:Proceedings|Advances|International|Conference)"
    r"|\bpages?\s+\d+|\bpp\.\s*\d+|\bvol(?:ume|\.)\s*\d+)"
)
#: A CSV row without a header: an identifier, then a quoted field (``2611.01234,"Title",…``).
_CSV_ROW = re.compile(r'\A\s*[\w.:/-]{1,40}\s*,\s*"[^"\n]{1,400}"\s*,')


def _has_chatbot_ending(text: str) -> bool:
    """The text ends with a chatbot's closing offer ("Let me know if you would like …")."""
    tail = text[-200:].lower()
    return any(w in tail for w in _CHATBOT_END_WORDS) and _CHATBOT_END.search(tail) is not None


_HEADING = re.compile(r"\A#{1,6}\s+\S")
_TABLE_ROW = re.compile(r"\A\s*\|.*\|\s*\Z")
_SEPARATOR = re.compile(r"\A\s*(?:([-*_=~])(?:\s*\1){2,}|\\\\)\s*\Z")
#: Labels of metadata lines. A label must start with a capital letter (``Authors:``,
#: ``KEYWORDS:``): a hard-wrapped abstract line may start with "domain: we show".
_METADATA_LABEL = re.compile(
    r"""\A[\s>*_\-+•·]*(?P<label>
        Authors?|Author\(s\)|Affiliations?|Institutions?|Links?|URL|PDF|DOI|Comments?
      | Keywords?|Key\s+words|Subjects?|Categor(?:y|ies)|Primary\s+category|Domain|Tags|Topics
      | Venue|Conference|Journal(?:-ref)?|Published|Submitted|Updated|Date|Title|TL;?DR|Paper\s+ID
      | Index\s+terms|Journal\s+reference|Report-no|(?:MSC|ACM|Subj)-class|Submitter|References
      | 作者|标题|题目|链接|关键词|关键字|机构|单位
    )[*_]*\s*[:：]""",
    re.VERBOSE | re.IGNORECASE,
)
#: The last line of an entry of arXiv's e-mail listing: ``\\ ( https://arxiv.org/abs/… , 512kb)``.
_ARXIV_TRAILER = re.compile(r"\A\\\\\s*\(\s*https?://\S+\s*,\s*[\d.]+\s*[kKmM]b\s*\)\s*\Z")
_ARXIV_ID = re.compile(r"\A[\s>*_\-+•·]*arXiv\s*:?\s*\d{4}\.\d{4,5}(?:v\d+)?\b", re.IGNORECASE)
#: A line that is only Markdown links whose text names a resource (``[arXiv](…)``), or
#: only images and badges (``[![stars](…)](…)``).
_LINK_LINE = re.compile(
    r"\A[\s*_\-|•·]*(?:(?:\[(?:arxiv|pdf|paper|abs|html|code|project(?:\s+page)?|openreview|doi"
    r"|link|github|website|video|slides|poster|talk|demo|data(?:set)?|models?|weights|supp"
    r"|supplementary|bibtex|cite|blog|colab|hugging\s*face|leaderboard)\]\([^)\s]+\)|\[?!\[[^\]]*\]\([^)\s]*\)(?:\]\([^)\s]*\))?)[\s*_|,•·]*)+\Z",
    re.IGNORECASE,
)
#: A header row of a CSV/TSV export: short field names, one of them title or abstract.
_FIELD = re.compile(r"\A[A-Za-z_][\w .\-]{0,30}\Z")
_RECORD_FIELDS = frozenset(["title", "abstract", "paper_title", "paper_abstract", "summary"])
_DELIMITERS = ("\t", ",", ";")
_HEADER_ROW_MAX_CHARS = 300

#: Line shapes by precedence: an entry of a heading, author lines and a rule is a heading.
_LINE_SHAPES = ("markdown_heading", "markdown_table", "metadata", "separator")

_LIST_MARK = re.compile(r"\A(?:[-*+•·]\s+(?:\[[ xX]?\]\s+)?|\(?\d{1,4}[.)\]]\s+|\[\d{1,4}\]\s+)")
_MD_LINK = re.compile(r"\[([^\[\]]*)\]\([^()\s]*\)")
#: A word of four or more letters (for Title Case), apostrophes and hyphens allowed.
_LONG_WORD = re.compile(r"(?<![\w'’-])[^\W\d_](?:[^\W\d_]|['’-](?=[^\W\d_])){3,}")
#: Tags before a title in a reading list: ``[CNN][Paper] Title``.
_LEADING_TAGS = re.compile(r"\A(?:\[[^\[\]]{0,20}\]\s*)+")
_TITLE_MAX_WORDS = 30
_TITLE_MAX_CHARS = 250
_TITLE_LIST_MIN_LINES = 3
_SINGLE_TITLE_MAX_WORDS = 25


def entry_lines(text: str, line_breaks: Sequence[int] = ()) -> list[str]:
    """The lines of an entry as written, from its joined ``text`` and the offsets in
    ``text`` of the spaces that stand for its line breaks (``Entry.line_breaks``).

    ``entry_lines("a b c", (1,))`` is ``["a", "b c"]``; no breaks give ``[text]``.
    """
    if not line_breaks:
        return [text]
    lines, start = [], 0
    for offset in line_breaks:
        lines.append(text[start:offset])
        start = offset + 1
    lines.append(text[start:])
    return lines


def line_shape(line: str) -> str | None:
    """The shape of one line as written: ``markdown_heading``, ``markdown_table``,
    ``separator``, ``metadata``, or None for a line that may belong to an abstract."""
    if line.startswith("#") and _HEADING.match(line):
        return "markdown_heading"
    if "|" in line and line.count("|") >= 3 and _TABLE_ROW.match(line):
        return "markdown_table"
    if _SEPARATOR.match(line):
        return "separator"
    label = _METADATA_LABEL.match(line)
    if label and not label.group("label")[0].islower():
        return "metadata"
    if _ARXIV_ID.match(line) or ("](" in line and _LINK_LINE.match(line)):
        return "metadata"
    if line.startswith("\\") and _ARXIV_TRAILER.match(line):
        return "metadata"
    return None


def header_row_delimiter(line: str) -> str | None:
    """The delimiter of a CSV/TSV header row (``title,authors,abstract``), or None.

    A header row has two or more short field names, one of them ``title``,
    ``abstract`` or ``summary`` (any case, quotes allowed)."""
    if len(line) > _HEADER_ROW_MAX_CHARS:
        return None
    for delimiter in _DELIMITERS:
        if delimiter not in line:
            continue
        fields = [f.strip().strip("\"'").strip() for f in line.split(delimiter)]
        if (
            len(fields) >= 2
            and all(_FIELD.match(f) for f in fields)
            and any(f.lower() in _RECORD_FIELDS for f in fields)
        ):
            return delimiter
    return None


def _is_delimited(lines: list[str]) -> bool:
    """A CSV/TSV header row first, or two or more lines with the same number of tabs."""
    if header_row_delimiter(lines[0]) is not None:
        return True
    tabs = {line.count("\t") for line in lines}
    return len(lines) >= 2 and len(tabs) == 1 and 0 not in tabs


def _is_title_line(line: str) -> bool:
    """A line that reads as a title: 1-30 words, starting with a capital or a digit,
    and either in Title Case or not ending like a clause (``.``, ``,``, ``;``, ``:``)."""
    if line[:1].islower():  # no list marker, and not a capital: prose (the common case)
        return False
    text = _title_text(line)
    if not text or len(text) > _TITLE_MAX_CHARS:
        return False
    words = text.split()
    if len(words) > _TITLE_MAX_WORDS:
        return False
    first = text.lstrip("\"“‘'(")[:1]
    if not (first.isupper() or first.isdigit()):
        return False
    return text[-1] not in ".,;:-–—" or _is_title_case(text)


def _title_text(line: str) -> str:
    """A line without its list marker (``-``, ``1.``, ``[ ]``), leading tags (``[CNN]``),
    Markdown links (their text kept), brackets and emphasis:
    ``* [Title](url) [[code](url)]`` → ``Title code``."""
    text = _LIST_MARK.sub("", line.strip())
    if "[" in text:
        text = _LEADING_TAGS.sub("", _MD_LINK.sub(r"\1", text))
        text = text.replace("[", " ").replace("]", " ")
    return " ".join(text.replace("*", "").replace("_", " ").split())


def _is_title_case(text: str) -> bool:
    """At least two words of four or more letters, and at least 60% of them capitalised."""
    long_words = _LONG_WORD.findall(text)
    if len(long_words) < 2:
        return False
    capitalised = sum(1 for w in long_words if w[0].isupper())
    return capitalised >= 0.6 * len(long_words)


def _after_label(text: str) -> str:
    """The text after a leading "Abstract:" label (the one cleaning drops), decoration
    around it skipped; the text itself when it has no label."""
    lead = text.lstrip(_DECORATION)
    if lead[:1] not in ("A", "a", "摘"):
        return text
    rest = strip_abstract_label(lead)
    return text if rest is lead else rest.lstrip(_DECORATION)


#: Lines split off an abstract they stand above or below: metadata, a digest's title
#: heading, a rule.
_LABEL_LINE_SHAPES = frozenset(["metadata", "markdown_heading", "separator"])


def split_metadata_lines(
    text: str, line_breaks: Sequence[int] = ()
) -> tuple[str, tuple[int, ...], tuple[str, ...]]:
    """Split metadata lines written above or below an abstract off it.

    A digest often writes ``arXiv:2611.07777`` or ``TL;DR: …`` on the line above an
    abstract and ``Comments: 12 pages`` or ``Keywords: …`` on the line below, in the
    same paragraph, and a digest its ``## Title`` heading and ``**Authors:**`` line
    above the abstract. Those lines (:func:`line_shape` ``metadata``,
    ``markdown_heading``, ``separator``) at the start and at the end are split off, so the abstract between them is judged and loaded; the
    entry's raw text keeps them. Nothing is split when no other line would be left,
    or when the lines left still hold a line of another shape (then the entry is not
    an abstract with a label line, and the shapes judge it whole).

    Args:
        text: the entry as parsed (lines joined with one space).
        line_breaks: offsets in ``text`` of the spaces that were line breaks.

    Returns:
        ``(body, body_line_breaks, metadata_lines)``; ``(text, line_breaks, ())`` when
        nothing was split off.
    """
    if not line_breaks:
        return text, tuple(line_breaks), ()
    lines = entry_lines(text, line_breaks)
    start, end = 0, len(lines)
    while start < end and line_shape(lines[start]) in _LABEL_LINE_SHAPES:
        start += 1
    while end > start and line_shape(lines[end - 1]) in _LABEL_LINE_SHAPES:
        end -= 1
    if (start == 0 and end == len(lines)) or start >= end:
        return text, tuple(line_breaks), ()
    body_lines = lines[start:end]
    if any(line_shape(line) for line in body_lines):
        return text, tuple(line_breaks), ()
    breaks, offset = [], 0
    for line in body_lines[:-1]:
        offset += len(line)
        breaks.append(offset)
        offset += 1
    return " ".join(body_lines), tuple(breaks), tuple(lines[:start] + lines[end:])


def entry_shape(text: str, line_breaks: Sequence[int] = ()) -> str | None:
    """What an entry looks like when it is not an abstract, or None when it may be one.

    Args:
        text: the entry as parsed (its lines joined with one space).
        line_breaks: offsets in ``text`` of the spaces that were line breaks
            (``Entry.line_breaks``); empty for a one-line entry.

    Returns:
        One of :data:`ENTRY_SHAPES` (the first that applies, in that order), or None.
    """
    record = _record_shape(text)
    if record is not None:
        return record
    lines = entry_lines(text, line_breaks)
    if _is_delimited(lines) or ('",' in text[:450] and _CSV_ROW.match(text)):
        return "delimited"
    body = _after_label(text)  # "Abstract: N/A" is judged as "N/A"
    if (len(text) <= _PLACEHOLDER_MAX_CHARS and _PLACEHOLDER.match(body)) or (
        ("ipsum" in text or "IPSUM" in text) and _LOREM.search(body)
    ):
        return "placeholder"
    quoted = body[:1] in "\"“‘'" and _QUOTED_OPENING.match(body) is not None
    if (not quoted and _CHATBOT_START.match(body)) or _has_chatbot_ending(text):
        return "chatbot"
    if len(text) <= 1000 and _BOILERPLATE.search(text):
        return "boilerplate"
    if len(text) <= 600 and _REFERENCE_AUTHORS.match(text) and _REFERENCE_TAIL.search(text):
        return "reference"
    found = {line_shape(line) for line in lines}
    for shape in _LINE_SHAPES:
        if shape in found:
            return shape
    return _title_shape(text, lines)


def _record_shape(text: str) -> str | None:
    """``bibtex``, ``ris``, ``json``, ``python_literal`` or ``markup`` for an entry that is a
    record of another format, else None."""
    head = text[:1] if not text[:1].isspace() else text.lstrip()[:1]
    if head == "@" and _BIBTEX.match(text):
        return "bibtex"
    if head.isupper() and _RIS.match(text) and "  - " in text[5:]:
        return "ris"
    if head and head in "{[":
        if _JSON.match(text):
            return "json"
        if _PYTHON.match(text):
            return "python_literal"
    elif head.isupper() and _PYTHON.match(text) and _SECOND_KEYWORD.search(text, 0, 400):
        return "python_literal"
    if head == "<" and _MARKUP.match(text):
        return "markup"
    return None


def _title_shape(text: str, lines: list[str]) -> str | None:
    """``title_list`` for an entry of many title lines (a tenth may be other lines),
    ``title`` for a short one-title entry, else None."""
    if len(lines) >= _TITLE_LIST_MIN_LINES:
        allowed = len(lines) // 10  # lines that need not be titles (a section name)
        for line in lines:
            if not _is_title_line(line):
                allowed -= 1
                if allowed < 0:
                    return None
        return "title_list"
    if len(text) <= _TITLE_MAX_CHARS:
        words = text.split()
        if (
            len(words) <= _SINGLE_TITLE_MAX_WORDS
            and text.rstrip("*_ ")[-1:] not in ".。"
            and _is_title_line(text)
            and _is_title_case(text)
        ):
            return "title"
    return None


# --- whole files -------------------------------------------------------------

_LFS_POINTER = re.compile(
    r"\Aversion https://(?:git-lfs|hawser)\.github\.com/spec/v1\n(?:[a-z0-9.\-]+ [^\n]*\n?)+\Z"
)
_LFS_OID = re.compile(r"^oid sha256:(?P<oid>[0-9a-f]{64})$", re.MULTILINE)
_LFS_SIZE = re.compile(r"^size (?P<size>\d+)$", re.MULTILINE)
#: Git LFS pointer files are under 1024 bytes (the Git LFS specification).
_LFS_MAX_CHARS = 1024
_BIBTEX_LINE = re.compile(
    r"^\s*@(?:article|inproceedings|incollection|proceedings|conference|misc|book|inbook"
    r"|phdthesis|mastersthesis|techreport|unpublished|online|preprint)\s*[{(]",
    re.IGNORECASE | re.MULTILINE,
)
_ARXIV_EMAIL = re.compile(r"^\\\\\s*$", re.MULTILINE)
_ARXIV_ID_LINE = re.compile(r"^arXiv:\d{4}\.\d{4,5}", re.MULTILINE)
#: How much of a file :func:`file_format` reads: a digest or a record shows itself early.
_SNIFF_CHARS = 65536
_SNIFF_JSON_LINES = 50


def lfs_pointer_detail(text: str) -> str | None:
    """For a Git LFS pointer file (the text Git keeps in place of a file stored in Git
    LFS), what and where the real file is; None for any other text.

    >>> lfs_pointer_detail("version https://git-lfs.github.com/spec/v1\\noid sha256:" + "ab" * 32 + "\\nsize 1200\\n")
    'the listing (1,200 bytes, sha256 abababababab…) is in Git LFS storage: fetch it with git lfs pull'
    """
    if len(text) > _LFS_MAX_CHARS or not text.startswith("version "):
        return None
    text = text.replace("\r\n", "\n")
    if not _LFS_POINTER.match(text):
        return None
    oid, size = _LFS_OID.search(text), _LFS_SIZE.search(text)
    if oid is None or size is None:
        return None
    return (
        f"the listing ({int(size.group('size')):,} bytes, sha256 {oid.group('oid')[:12]}…) "
        "is in Git LFS storage: fetch it with git lfs pull"
    )


def file_format(text: str) -> str | None:
    """The other format a file is written in, when it is not a plain-text listing.

    Judged on the first 64 KiB (JSON on the whole text): ``"an Atom feed (.atom)"``,
    ``"an RSS feed (.rss)"``, ``"an HTML page (.html)"``, ``"XML (.xml)"``,
    ``"JSON (.json)"``, ``"JSON Lines (.jsonl)"``, ``"BibTeX (.bib)"``, ``"RIS (.ris)"``,
    ``"CSV (.csv)"``, ``"TSV (.tsv)"`` (the first line is a header row naming
    ``title`` or ``abstract``), ``"an arXiv e-mail listing"`` (``\\\\`` lines
    around ``arXiv:NNNN.NNNNN`` records), ``"a Markdown digest (.md)"``; None for a
    plain-text listing (or an unknown format).
    A Markdown digest has a heading and a second sign: another heading, a rule
    (``---``), a table row or a metadata line (``**Authors:**``).
    """
    sample = text[:_SNIFF_CHARS].lstrip("\ufeff \t\r\n")
    if sample.startswith("<") and (markup := _markup_format(sample)) is not None:
        return markup
    if sample[:1] in ("{", "[") and (data := _json_format(text, sample)) is not None:
        return data
    if "@" in sample and _BIBTEX_LINE.search(sample):
        return "BibTeX (.bib)"
    if sample.startswith("TY  - "):
        return "RIS (.ris)"
    first = sample.split("\n", 1)[0].rstrip("\r")
    delimiter = header_row_delimiter(first)
    if delimiter is not None:
        return "TSV (.tsv)" if delimiter == "\t" else "CSV (.csv)"
    if "\\\\" in sample and _ARXIV_EMAIL.search(sample) and _ARXIV_ID_LINE.search(sample):
        return "an arXiv e-mail listing"
    if "#" in sample:
        shapes = [line_shape(line) for line in sample.splitlines()]
        headings = shapes.count("markdown_heading")
        if headings >= 2 or (headings == 1 and len(set(shapes) - {None}) >= 2):
            return "a Markdown digest (.md)"
    return None


def _markup_format(sample: str) -> str | None:
    """Atom, RSS, HTML or XML, from the first 4 KiB of a file starting with ``<``."""
    lowered = sample[:4096].lower()
    if "<feed" in lowered:
        return "an Atom feed (.atom)"
    if "<rss" in lowered:
        return "an RSS feed (.rss)"
    if "<html" in lowered or "<!doctype html" in lowered:
        return "an HTML page (.html)"
    if lowered.startswith("<?xml"):
        return "XML (.xml)"
    return None


def _json_format(text: str, sample: str) -> str | None:
    """JSON (the whole text parses) or JSON Lines (the sample's first lines are records)."""
    try:
        json.loads(text)
        return "JSON (.json)"
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read
        lines = [line for line in sample.splitlines() if line.strip()]
        if len(text) > _SNIFF_CHARS:
            lines = lines[:-1]  # the sample may end in the middle of a line
        if lines and all(_is_json_record(line) for line in lines[:_SNIFF_JSON_LINES]):
            return "JSON Lines (.jsonl)"
    return None


def _is_json_record(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict | list)
    except (ValueError, RecursionError):
        return False


def format_note(fmt: str | None) -> str | None:
    """The sentence appended to the reasons of a file written in another format."""
    if fmt is None:
        return None
    return f"the file looks like {fmt}; paperwatch has no reader for that format and read it as plain text"
