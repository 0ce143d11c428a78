"""Cleaning one abstract: markup removed, identity, method name, first sentence, URLs.

Pure functions. The rules are written down in docs/cleaning.md; the tests in
tests/test_clean.py pin them on the seed abstracts.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from paperwatch.ingest.ligatures import repair_ligatures
from paperwatch.ingest.names import find_method_name
from paperwatch.ingest.sentences import split_sentences
from paperwatch.untrusted import ANSI_ESCAPE

# --- LaTeX -----------------------------------------------------------------

#: Macros whose braced argument is the text (formatting only).
_TEXT_MACROS = frozenset(
    [
        "emph",
        "textbf",
        "textit",
        "texttt",
        "textsc",
        "textsf",
        "textrm",
        "textup",
        "textnormal",
        "underline",
        "text",
        "mbox",
        "mathrm",
        "mathbf",
        "mathit",
        "mathsf",
        "mathtt",
        "mathcal",
        "mathbb",
        "mathfrak",
        "mathscr",
        "boldsymbol",
        "bm",
        "operatorname",
        "hat",
        "widehat",
        "tilde",
        "widetilde",
        "bar",
        "overline",
        "vec",
        "dot",
        "ddot",
        "check",
    ]
)
#: Font and size declarations that stand for no text ("{\em FlashNorm}" → FlashNorm).
FONT_SWITCHES = (
    "em",
    "sc",
    "sl",
    "sf",
    "tt",
    "up",
    "md",
    "itshape",
    "bfseries",
    "scshape",
    "slshape",
    "upshape",
    "mdseries",
    "rmfamily",
    "sffamily",
    "ttfamily",
    "normalfont",
    "tiny",
    "scriptsize",
    "footnotesize",
    "small",
    "normalsize",
    "large",
    "Large",
    "LARGE",
    "huge",
    "Huge",
)
#: Macros that stand for a symbol; the symbol replaces them.
_SYMBOLS = {
    "times": "×",
    "cdot": "·",
    "div": "÷",
    "pm": "±",
    "mp": "∓",
    "approx": "≈",
    "sim": "∼",
    "simeq": "≃",
    "neq": "≠",
    "ne": "≠",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "ll": "≪",
    "gg": "≫",
    "propto": "∝",
    "in": "∈",
    "notin": "∉",
    "subset": "⊂",
    "subseteq": "⊆",
    "cup": "∪",
    "cap": "∩",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "Rightarrow": "⇒",
    "leftrightarrow": "↔",
    "mapsto": "↦",
    "infty": "∞",
    "partial": "∂",
    "nabla": "∇",
    "sum": "∑",
    "prod": "∏",
    "int": "∫",
    "forall": "∀",
    "exists": "∃",
    "top": "⊤",
    "perp": "⊥",
    "circ": "∘",
    "star": "⋆",
    "ast": "∗",
    "dagger": "†",
    "ell": "ℓ",
    "ldots": "…",
    "cdots": "⋯",
    "dots": "…",
    "prime": "′",
    "degree": "°",
    "checkmark": "✓",
    "sqrt": "√",
    "emptyset": "∅",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "zeta": "ζ",
    "eta": "η",
    "theta": "θ",
    "vartheta": "ϑ",
    "iota": "ι",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "nu": "ν",
    "xi": "ξ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "upsilon": "υ",
    "phi": "φ",
    "varphi": "φ",
    "chi": "χ",
    "psi": "ψ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Xi": "Ξ",
    "Pi": "Π",
    "Sigma": "Σ",
    "Phi": "Φ",
    "Psi": "Ψ",
    "Omega": "Ω",
    "log": "log",
    "exp": "exp",
    "sin": "sin",
    "cos": "cos",
    "max": "max",
    "min": "min",
    "arg": "arg",
    "lim": "lim",
    "det": "det",
    "Pr": "Pr",
    # Font switches, as BibTeX abstracts write them ("{\em X}", "{\sc X}"): no text of
    # their own (sql/migrations/0012_font_switches.sql re-keys what the ones after "bf" changed).
    "rm": "",
    "it": "",
    "bf": "",
    **dict.fromkeys(FONT_SWITCHES, ""),
    "left": "",
    "right": "",
    "big": "",
    "Big": "",
    "displaystyle": "",
    "quad": " ",
    "qquad": " ",
}
_ESCAPED = {
    "%": "%",
    "&": "&",
    "_": "_",
    "#": "#",
    "$": "$",
    "{": "{",
    "}": "}",
    ",": " ",
    ";": " ",
    ":": " ",
    "!": "",
    " ": " ",
    "\\": " ",
}

_URL_MACRO = re.compile(r"\\url\{([^{}]*)\}")
_HREF_MACRO = re.compile(r"\\href\{([^{}]*)\}\{([^{}]*)\}")
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_URL = re.compile(r"https?://[^\s<>\"'`{}|\\^\[\]“”‘’]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?)»’”'"
_PLACEHOLDER = "\x00{}\x00"
_PLACEHOLDER_AT = re.compile(r"\x00(\d+)\x00")
_MATH = re.compile(
    r"\$\$(?P<d>.+?)\$\$"  # $$display$$
    r"|\$(?<![\\$]\$)(?=[^\s$])(?P<i>[^$]*?[^\s\\$])\$(?!\d)"  # $inline$
    r"|\$(?<!\\\$)(?P<c>[^\s$\\])\$"  # $k$
    # \( inline \) and \[ display \]: the content stops at the next opener of its kind, so
    # that a run of unclosed openers is read once, not once from each (quadratic).
    r"|\\\((?P<p>(?:(?!\\\().)+?)\\\)"
    r"|\\\[(?P<b>(?:(?!\\\[).)+?)\\\]",
    re.DOTALL,
)
_MACRO = re.compile(r"\\([A-Za-z]+)\*?(?:\s*\{([^{}]*)\})?")
_ESCAPE = re.compile(r"\\([%&_#${},;:! \\])")
_BRACES = re.compile(r"[{}](?<!\\[{}])")

# --- Markdown --------------------------------------------------------------
# Here and in _MATH and _BRACES above, a pattern starts with its delimiter and looks
# behind the delimiter it has read ("\*(?<![\w*]\*)" rather than "(?<![\w*])\*"): it
# matches exactly the same, faster (docs/design.md, "Fast paths in cleaning and parsing").

_STRONG = re.compile(
    r"\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*|__(?<![\w_]__)(?=\S)(.+?)(?<=\S)__(?![\w_])"
)
_EMPH_STAR = re.compile(r"\*(?<![\w*]\*)(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_EMPH_UNDERSCORE = re.compile(r"_(?<![\w_]_)(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])")
_CODE = re.compile(r"`([^`\n]+)`")
#: The emphasis patterns in the order they run, each with the marks it needs.
_EMPHASIS = ((_STRONG, ("**", "__")), (_EMPH_STAR, ("*",)), (_EMPH_UNDERSCORE, ("_",)))

_SPACE = re.compile(r"\s+")
#: Format (Cf) and control (Cc) characters that carry no text: zero-width space,
#: joiners and marks, soft hyphen, bidi embeddings/overrides/isolates, word
#: joiner and invisible operators, BOM, C0 controls except tab/newline/CR, DEL, C1.
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?%)\]])")
_SPACE_THEN_PUNCT = re.compile(r" [,.;:!?%)\]]")  # the same, in text with single spaces
_SPACE_AFTER_OPEN = re.compile(r"([(\[])\s+")
#: In printable text, a space that collapse_spaces, _SPACE_BEFORE_PUNCT or _SPACE_AFTER_OPEN
#: would change (two spaces, a space before the punctuation or after the bracket); the
#: pattern starts with the space so that the engine jumps from one space to the next.
_SPACE_TO_MEND = re.compile(r" (?:[ ,.;:!?%)\]]|(?<=[(\[] ))")

# --- Method names ----------------------------------------------------------


# --- Listed numbers ----------------------------------------------------------

#: A list number in front of an entry: ``1.``, ``2)``, ``[3]``, ``(12)``, ``#4``
#: followed by white space, or ``5、`` / ``6．`` (CJK lists, no space needed).
_LISTED_NUMBER = re.compile(
    r"^\s*(?:(?:(?P<a>\d{1,5})[.)]|\[(?P<b>\d{1,5})\]|\((?P<c>\d{1,5})\)|#(?P<d>\d{1,5}))\s+"
    r"|(?P<e>\d{1,5})[、．]\s*"
    r"|(?P<f>[\u2460-\u2473\u2776-\u277f])\s*"  # ① … ⑳, ❶ … ❿
    r"|(?:[-–•·▪‣◦*+>]\s+)+)(?=\S)"  # a bullet or a block quote mark, no number
)
#: First characters that may start a list number or a bullet (a cheap test first).
LIST_MARK_STARTS = frozenset("0123456789[(# \t-–•·▪‣◦*+>") | frozenset(
    chr(c) for c in [*range(0x2460, 0x2474), *range(0x2776, 0x2780)]
)


def split_listed_number(raw: str) -> tuple[int | None, str]:
    """Split a leading list number off an entry: ``"1. We propose…"`` → ``(1, "We propose…")``.

    Recognised: ``1.``, ``2)``, ``[3]``, ``(12)``, ``#4`` (1-5 digits) followed by white space,
    ``5、``/``6．`` as CJK lists write them, and circled numbers ``①``-``⑳``. The number is
    the entry's place in the listing as its author numbered it, not part of the abstract:
    the same abstract numbered and unnumbered is one paper. A bullet (``-``, ``•``, ``*``,
    ``+``) or block-quote mark (``>``) followed by white space is split off too, with no
    number: ``(None, rest)``. A decimal (``1.5 billion``), ``3D`` or ``-5%`` (no space after
    the mark) is text. Returns ``(None, raw)`` when there is none, or when nothing would be
    left after it.
    """
    if raw[:1] not in LIST_MARK_STARTS:
        return None, raw
    match = _LISTED_NUMBER.match(raw)
    if match is None:
        return None, raw
    found = [g for g in match.group("a", "b", "c", "d", "e") if g is not None]
    if found:
        return int(found[0]), raw[match.end() :]
    circled = match.group("f")
    return (int(unicodedata.numeric(circled)) if circled else None), raw[match.end() :]


@dataclass(frozen=True, slots=True)
class CleanAbstract:
    """The cleaned form of one entry.

    Attributes:
        abstract: text without Markdown/LaTeX markup, NFKC, whitespace collapsed.
        paper_id: 16 lowercase hex digits, sha256 of :func:`normalise_for_id` of ``abstract``.
        method_name: the name the abstract introduces, or None.
        first_sentence: the first sentence of ``abstract``.
        code_urls: http(s) URLs in the entry, in order of appearance, without duplicates.
        word_count: whitespace-separated words; each CJK character counts as one word.
        listed_number: the list number the entry was written with (``1.``, ``[3]``), or None.
        ligature_damage: words with PDF ligature damage left unrepaired (``xy®z``).
    """

    abstract: str
    paper_id: str
    method_name: str | None
    first_sentence: str
    code_urls: tuple[str, ...]
    word_count: int
    listed_number: int | None = None
    ligature_damage: tuple[str, ...] = ()


def _strip_url(url: str) -> str:
    while url and url[-1] in _URL_TRAILING:
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        url = url[:-1]
    return url


def _link_target(url: str) -> str:
    """A Markdown link's target, from the URL match that starts it (``[code](u)and`` →
    ``u``): up to the first ``)`` that no ``(`` of the URL opened."""
    depth = 0
    for i, char in enumerate(url):
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return url[:i]
            depth -= 1
    return url


def url_matches(text: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`_URL` in ``text``, as ``_URL.finditer(text)`` gives them.

    Every match holds ``://`` four or five characters after its start (``http://``,
    ``https://``): the scan finds each ``://`` with ``str.find`` and tries the pattern only
    there, instead of at every character (docs/design.md, "Fast paths in cleaning and
    parsing"; tests/test_properties.py compares the two).
    """
    start_from = 0  # the next match starts here or later
    find_from = 0
    while (found := text.find("://", find_from)) >= 0:
        for start in (found - 5, found - 4):
            if start >= start_from and (match := _URL.match(text, start)) is not None:
                yield match
                start_from = match.end()
                break
        find_from = max(found + 1, start_from)


def extract_urls(raw: str) -> tuple[str, ...]:
    """http(s) URLs in raw entry text (``\\url{}``, ``\\href{}``, Markdown links, bare).

    A URL holding an invisible or control character is not a code URL (it is not
    linked): a right-to-left override inside it would make ``…/\u202egpj.exe`` read
    ``…/exe.jpg``, and dropping the character would link another address.
    """
    if "://" not in raw:  # fast path: every match of _URL holds "://"
        return ()
    seen: dict[str, None] = {}
    for match in url_matches(raw):
        url = match.group(0)
        if raw[max(0, match.start() - 2) : match.start()] == "](":
            url = _link_target(url)
        url = _strip_url(url)
        if len(url) > len("https://") and (url.isprintable() or not _INVISIBLE.search(url)):
            seen.setdefault(url, None)
    return tuple(seen)


def _code_urls(protected: list[str]) -> tuple[str, ...]:
    """What :func:`extract_urls` gives for text whose URLs :func:`_strip_markup` protected
    as written: those URLs, printable, longer than ``https://``, without duplicates."""
    return tuple(dict.fromkeys(url for url in protected if len(url) > len("https://")))


def _math_to_text(math: str) -> str:
    if "\\" in math:  # (each step only when the character it needs is there)
        math = _ESCAPE.sub(_escaped, math.replace("\\\\%", "%"))
        math = _macros_to_text(math, keep_unknown=True)
    if "{" in math or "}" in math:
        math = _BRACES.sub("", math)
    return math.strip()


def _escaped(match: re.Match[str]) -> str:
    return _ESCAPED[match.group(1)]


def _math_match_to_text(match: re.Match[str]) -> str:
    # Each alternative of _MATH holds one group, so the group that matched is the last
    # one: what ``next(g for g in match.groups() if g is not None)`` finds.
    return _math_to_text(match.group(match.lastindex or 0))


def _matched_group(match: re.Match[str]) -> str:
    """The one group of the alternative that matched (_STRONG, _EMPH_*, _CODE)."""
    return match.group(match.lastindex or 0)


def _macros_to_text(text: str, keep_unknown: bool, names: set[str] | None = None) -> str:
    def replace(match: re.Match[str]) -> str:
        name, arg = match.group(1), match.group(2)
        if name in _TEXT_MACROS:
            return arg if arg is not None else ""
        if name in _SYMBOLS:
            symbol = _SYMBOLS[name]
            return symbol + (arg if arg else "")
        # Unknown macro (e.g. \hsco{}, \method{}): keep its name, or its argument when it has one.
        if names is not None:
            names.add(name)
        if arg:
            return arg
        return name if keep_unknown else ""

    # _MACRO needs a backslash: without one left, another pass would change nothing.
    while "\\" in text:  # nested \textbf{\emph{x}}
        text, replaced = _MACRO.subn(replace, text)
        if not replaced:
            break
    return text


def _single_spaced(text: str) -> bool:
    """Whether ``text``'s only white space is single ASCII spaces between non-spaces.

    A printable string holds no white space but U+0020 (every other ``str.isspace``
    character is a separator or control character, which ``str.isprintable`` rejects),
    so one C scan and two substring tests decide it.
    """
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "


def collapse_spaces(text: str) -> str:
    """``text`` with each run of white space (``str.isspace``: ``\\s`` of ``re``) made one
    ASCII space, and none at either end: ``" ".join(text.split())``, which it returns.

    Text already in that form (clean text nearly always is) is returned as it is.
    """
    return text if _single_spaced(text) else " ".join(text.split())


def _protect_urls(text: str, urls: list[str]) -> str:
    """``text`` with each URL (its trailing punctuation left out) replaced by a numbered
    placeholder, the URL appended to ``urls``: emphasis rules cannot touch it."""
    pieces: list[str] = []
    end = 0
    for match in url_matches(text):
        url = _strip_url(match.group(0))
        urls.append(url)
        pieces += (text[end : match.start()], _PLACEHOLDER.format(len(urls) - 1))
        end = match.start() + len(url)
    return "".join(pieces) + text[end:] if pieces else text


def strip_markup(raw: str, macro_names: set[str] | None = None) -> str:
    """Remove Markdown emphasis and LaTeX markup from one entry, keeping its words.

    ``\\emph{x}``, ``\\textbf{x}``, ``**x**``, ``*x*`` → x; ``$1.38\\times$`` → 1.38×;
    ``\\url{u}`` → u; ``\\href{u}{t}`` → t; unknown macros keep their name
    (``\\hsco{}`` → hsco) and are added to ``macro_names`` when given. URLs are
    protected from emphasis rules. The result is NFKC-normalised with whitespace
    collapsed to single spaces.

    Terminal escape sequences (:data:`paperwatch.untrusted.ANSI_ESCAPE`) and invisible
    characters are removed first: format characters (zero-width space
    and joiners, soft hyphen, word joiner, byte-order mark, bidirectional
    controls) and control characters other than white space, so that the same
    abstract with a hidden character is the same paper and nothing can reorder
    or hide text in the report.

    Each rule runs only when the character it needs is in the text (a backslash,
    ``$``, ``*``, ``_``, a brace, a backtick, ``://``), with the same result.
    """
    return _strip_markup(raw, macro_names)[0]


def _strip_markup(raw: str, macro_names: set[str] | None) -> tuple[str, list[str] | None]:
    """:func:`strip_markup`'s text, and the URLs it protected when it found them in ``raw``
    as written (printable, no ``\\url``, ``\\href`` or Markdown link), else None: then they
    are what :func:`extract_urls` finds in ``raw``, before their filter."""
    printable = as_written = raw.isprintable()
    text = raw if printable else _INVISIBLE.sub("", ANSI_ESCAPE.sub("", raw))
    backslash = "\\" in text
    if backslash:
        text, hrefs = _HREF_MACRO.subn(_link_text, text)
        text, bare = _URL_MACRO.subn(_matched_group, text)
        as_written = as_written and not hrefs and not bare
    # (A test for one character, which finds it with memchr, before a longer substring's.)
    if "]" in text and "](" in text:
        as_written = False
        text = _MD_LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    urls: list[str] = []
    text = _protect_urls(text, urls)  # (it looks for "://" first)
    if "$" in text or backslash:
        text = _MATH.sub(_math_match_to_text, text)
    if "\\" in text:
        if "%" in text:
            text = text.replace("\\\\%", "%")
        text = _ESCAPE.sub(_escaped, text)
        text = _macros_to_text(text, keep_unknown=True, names=macro_names)
    if "{" in text or "}" in text:
        text = _BRACES.sub("", text)
    for pattern, marks in _EMPHASIS:
        # Each pass replaces a match by less text: a pass that replaced nothing, or text
        # left without the marks, ends the repetition (another pass would change nothing).
        while any(mark[0] in text and mark in text for mark in marks):
            text, replaced = pattern.subn(_matched_group, text)
            if not replaced:
                break
    if "`" in text:
        text = _CODE.sub(_matched_group, text)
    if urls or "\x00" in text:
        text = _PLACEHOLDER_AT.sub(lambda m: urls[int(m.group(1))], text)
        printable = printable and "\x00" not in text
    text = unicodedata.normalize("NFKC", text)
    # Printable text stays printable through every rule (each puts back part of the text
    # or printable characters; the placeholders are all put back) and through NFKC
    # (tests/test_fast_paths.py checks every character), so its only white space is
    # U+0020: one search tells whether any of the three steps below would change it.
    if printable and text[:1] != " " and text[-1:] != " " and not _SPACE_TO_MEND.search(text):
        return text, (urls if as_written else None)
    text = collapse_spaces(text)
    if _SPACE_THEN_PUNCT.search(text):  # (one search rather than nine ``in`` scans)
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    if "( " in text or "[ " in text:
        text = _SPACE_AFTER_OPEN.sub(r"\1", text)
    return text, (urls if as_written else None)


def _link_text(match: re.Match[str]) -> str:
    return match.group(2)


#: Typographic quotes, apostrophes and dashes, and the ASCII character each stands for in
#: the identity form (NFKC leaves them apart: “x” and "x" would be two papers).
TYPOGRAPHIC_FOLDS = str.maketrans(
    {
        **dict.fromkeys("“”„‟«»″〝〞〟", '"'),
        **dict.fromkeys("‘’‚‛‹›′`´", "'"),
        **dict.fromkeys("‐‑‒–—―−⁃﹘﹣", "-"),
    }
)
_TYPOGRAPHIC = frozenset(chr(code) for code in TYPOGRAPHIC_FOLDS)
# A regex visits only the characters to fold; same result as str.translate with
# TYPOGRAPHIC_FOLDS (docs/design.md, "Fast paths in cleaning and parsing").
_TYPOGRAPHIC_CHAR = re.compile("[" + re.escape("".join(sorted(_TYPOGRAPHIC))) + "]")
_ASCII_TYPOGRAPHIC = "".join(sorted(char for char in _TYPOGRAPHIC if char.isascii()))  # "`"


def _fold_typographic(match: re.Match[str]) -> str:
    return str(TYPOGRAPHIC_FOLDS[ord(match.group())])


def normalise_for_id(abstract: str, *, clean: bool = False) -> str:
    """The identity form of a clean abstract: NFKC, typographic quotes, apostrophes and
    dashes folded to ASCII (:data:`TYPOGRAPHIC_FOLDS`), case-folded, whitespace collapsed.

    ``clean=True`` when ``abstract`` is :func:`strip_markup`'s output (NFKC, single
    spaces): the first and last steps would leave it as it is (case folding adds no
    space) and are skipped."""
    text = abstract if clean else unicodedata.normalize("NFKC", abstract)
    if not text.isascii():
        text = _TYPOGRAPHIC_CHAR.sub(_fold_typographic, text)
    return text.casefold() if clean else collapse_spaces(text.casefold())


def paper_id_of(abstract: str, *, clean: bool = False) -> str:
    """16 hex digits (64 bits) of sha256(UTF-8 of :func:`normalise_for_id`); ``clean`` as
    there.

    64 bits keep the expected number of collisions below 1e-6 up to ~6 million papers
    (birthday bound n²/2⁶⁵).
    """
    if clean and not abstract.isascii():
        return _clean_paper_id(abstract, _ASCII_RUN.sub("", abstract))
    normal = normalise_for_id(abstract, clean=clean)
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def _clean_paper_id(abstract: str, others: str) -> str:
    """``paper_id_of(abstract, clean=True)`` of a clean abstract that is not ASCII, given
    ``others``, its characters that are not ASCII (``_ASCII_RUN.sub("", abstract)``).

    The typographic folds run only when the text holds one (``others`` does, or the text
    holds the ASCII one, the backtick). Case folding maps character by character, so when
    it leaves the other characters as they are it changes only the ASCII capitals, which
    ``bytes.lower`` lowers in the UTF-8 (whose multi-byte sequences hold no ASCII byte):
    no pass over every character through Python's case tables (docs/design.md, "Fast
    paths in cleaning and parsing")."""
    if _TYPOGRAPHIC_CHAR.search(others) or any(c in abstract for c in _ASCII_TYPOGRAPHIC):
        abstract = _TYPOGRAPHIC_CHAR.sub(_fold_typographic, abstract)
        others = _TYPOGRAPHIC_CHAR.sub("", others)  # (folded to ASCII)
    if others.casefold() == others:
        data = abstract.encode("utf-8").lower()
    else:
        data = abstract.casefold().encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:16]


def count_words(text: str, *, clean: bool = False) -> int:
    """Whitespace-separated words, each CJK character counting as one word; ``clean=True``
    when ``text`` is :func:`strip_markup`'s output (single spaces: not checked again)."""
    if text.isascii():
        return _count_words(text, None, clean)
    return _count_words(text, _ASCII_RUN.sub("", text), clean)


def _count_words(text: str, others: str | None, clean: bool) -> int:
    """:func:`count_words`, given ``others``, the characters of ``text`` that are not ASCII
    (None for ASCII text): CJK characters are among them, fewer places to look."""
    if others is None or _CJK_CHAR.search(others) is None:  # no CJK: plain split
        if clean or _single_spaced(text):  # (counting spaces allocates no words)
            return text.count(" ") + 1 if text else 0
        return len(text.split())
    return len(_WORD.findall(text))


def text_length(text: str) -> int:
    """Characters of ``text``, each CJK character counting as two: the length the
    ``papers`` suite bounds (80-5,000). A Chinese character carries about what two to
    four English letters do, so a 60-character Chinese summary is as long as a 150-letter
    English sentence, not shorter than the 80 characters an abstract needs."""
    if text.isascii():
        return len(text)
    # CJK characters are not ASCII: they are counted among the rest, once the ASCII runs
    # are deleted (docs/design.md, "Fast paths in cleaning and parsing").
    return len(text) + len(_CJK_CHAR.findall(_ASCII_RUN.sub("", text)))


_CJK_CHAR = re.compile(rf"[{_CJK}]")
_ASCII_RUN = re.compile(r"[\x00-\x7f]+")
_ASCII_LETTERS = string.ascii_letters.encode("ascii")


def has_unbalanced_markup(abstract: str) -> bool:
    """True when clean text still has an odd number of ``$`` or unbalanced braces."""
    if "$" not in abstract and "{" not in abstract and "}" not in abstract:
        return False  # (three substring tests cost less than three counts: the usual case)
    return abstract.count("$") % 2 == 1 or abstract.count("{") != abstract.count("}")


def latin_or_cjk_share(text: str) -> float:
    """Share (0-1) of the letters of ``text`` that are Latin or CJK; 1.0 when it has no letters.

    Letters are characters of Unicode category L*. Latin: Unicode name starts
    with "LATIN"; CJK: the ranges of ``_CJK`` (Han, kana, Hangul). Greek letters
    from mathematics count as other letters.
    """
    if text.isascii():  # every letter is Latin: the share is 1.0 (or no letters: 1.0)
        return 1.0
    # ASCII letters are Latin: counted in C (encode drops the rest, translate deletes the
    # letters); only the non-ASCII characters are judged one by one, each distinct one once.
    ascii_part = text.encode("ascii", "ignore")
    letters = latin_or_cjk = len(ascii_part) - len(ascii_part.translate(None, _ASCII_LETTERS))
    # (Deleting the ASCII runs rather than finding the non-ASCII ones: docs/design.md,
    # "Fast paths in cleaning and parsing".)
    for char, n in Counter(_ASCII_RUN.sub("", text)).items():
        if not char.isalpha():
            continue
        letters += n
        if _CJK_CHAR.match(char) or unicodedata.name(char, "").startswith("LATIN"):
            latin_or_cjk += n
    return latin_or_cjk / letters if letters else 1.0


#: A leading "Abstract:" label (also "Abstract.", "Abstract —", IEEE's "Abstract—", 摘要：),
#: emphasis marks around it allowed (``Abstract**:**``). "Abstract-level …" is not a label.
_ABSTRACT_LABEL = re.compile(
    r"^(?:abstract|摘要)[*_]*(?:\s*[:：—–]|\.\s|\s+-\s)[*_]*\s*", re.IGNORECASE
)


def strip_abstract_label(abstract: str) -> str:
    """``abstract`` without a leading "Abstract:" label (kept when nothing follows it)."""
    if abstract[:1] not in "Aa摘" or not abstract:
        return abstract
    rest = _ABSTRACT_LABEL.sub("", abstract, count=1)
    return rest if rest else abstract


def clean_abstract(raw: str) -> CleanAbstract:
    """Clean one raw entry (as parsed, hard wraps joined) into a :class:`CleanAbstract`.

    In order: a leading list number is split off (:func:`split_listed_number`), PDF
    ligature damage repaired (:func:`repair_ligatures`), markup stripped
    (:func:`strip_markup`); the identity, method name, first sentence, URLs and word
    count are read from the result.
    """
    macro_names: set[str] = set()
    listed_number, body = split_listed_number(raw)
    text, damage = repair_ligatures(body)
    stripped, protected = _strip_markup(text, macro_names)
    abstract = strip_abstract_label(stripped)
    sentences = split_sentences(abstract)
    # The URLs found in the body as written are those extract_urls finds in ``raw``: a list
    # number holds no letter, ":" or "/" and ends in white space, "、", "．" or a circled
    # number, so no match of _URL, nor a "](" before one, reaches into it.
    if protected is not None and text is body:
        code_urls = _code_urls(protected)
    else:
        code_urls = extract_urls(raw)
    # The identity and the word count both look at the characters that are not ASCII.
    others = None if abstract.isascii() else _ASCII_RUN.sub("", abstract)
    return CleanAbstract(
        abstract=abstract,
        paper_id=(
            paper_id_of(abstract, clean=True)
            if others is None
            else _clean_paper_id(abstract, others)
        ),
        method_name=find_method_name(abstract, macro_names, sentences, clean=True),
        first_sentence=sentences[0] if sentences else abstract,
        code_urls=code_urls,
        word_count=_count_words(abstract, others, clean=True),
        listed_number=listed_number,
        ligature_damage=damage,
    )
