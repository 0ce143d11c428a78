"""The fast forms of cleaning, parsing and the entries frame give what their plain forms give.

Each speed-up of issue 14 replaced a plain form by a faster one that must return exactly
the same: a regex that looks behind its delimiter after reading it, a substring test that
decides a sentence cannot match before the regex runs, sentence ends found from their
terminators, ``str.splitlines`` for the line
regex, single-spaced text returned as it is, a list column built from its offsets, the
markup pass with fewer passes and one search for its spaces, code URLs taken from it, the
identity and word count read from the characters that are not ASCII. Here
the plain forms are written out again and compared with the fast ones on random text
drawn from the characters each rule turns on (derandomised: the same examples every run),
and on every line of the seeds.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from paperwatch.ingest import clean, parse, sentences
from paperwatch.ingest import names as method_names
from paperwatch.ingest.frames import string_lists

SEEDS = Path(__file__).resolve().parents[1] / "seeds"

#: The patterns as first written (lookbehind before the delimiter).
PLAIN = {
    "_MATH": re.compile(
        r"\$\$(?P<d>.+?)\$\$"
        r"|(?<![\\$])\$(?=[^\s$])(?P<i>[^$]*?[^\s\\$])\$(?!\d)"
        r"|(?<!\\)\$(?P<c>[^\s$\\])\$"
        r"|\\\((?P<p>(?:(?!\\\().)+?)\\\)"
        r"|\\\[(?P<b>(?:(?!\\\[).)+?)\\\]",
        re.DOTALL,
    ),
    "_BRACES": re.compile(r"(?<!\\)[{}]"),
    "_STRONG": re.compile(
        r"\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*|(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])"
    ),
    "_EMPH_STAR": re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"),
    "_EMPH_UNDERSCORE": re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])"),
}
_LINE_BREAK = re.compile("\r\n|[\r\n\v\f\x85\u2028\u2029]")

_MARKUP = st.text(st.sampled_from("ab Z1_*$\\{}()[]`\n\t.é中"), max_size=40)
_SPACES = st.text(
    st.sampled_from("ab é中\u00a0\u3000\u2028\u2029\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u200b"),
    max_size=30,
)
_BREAKS = st.text(st.sampled_from("ab \r\n\v\f\x85\u2028\u2029\x1c\x1d\x1e\t\ufeff"), max_size=30)
_WORDS = st.lists(
    st.sampled_from(
        [
            "We",
            "we",
            "propose",
            "proposed",
            "present",
            "address",
            "this",
            "gap",
            "with",
            "by",
            "introducing",
            "and",
            "then",
            "further",
            "Our",
            "our",
            "the",
            "method",
            "framework",
            "SOLA",
            "SOLA:",
            "a",
            "an",
            "Structured",
            "Operator",
            "Library",
            ",",
            ":",
            "—",
            "–",
            "HJA",
            "(HJA)",
            "paper",
            "Here",
            "solve",
            "resolve",
            "close",
            "called",
            "nicknamed",
            "dubbed",
            ".",
        ]
    ),
    max_size=14,
)
#: Words of :data:`_WORDS` joined by any white space, or none (``\b`` and ``\s`` edges).
_SPACED_WORDS = st.lists(
    st.tuples(
        st.sampled_from(["We", "we", "propose", "resolve", "named", "called", "(HJA)", ","]),
        st.sampled_from([" ", "", "\n", "\t", "\u00a0", "\u2003", "  "]),
    ),
    max_size=10,
).map(lambda pairs: "".join(word + space for word, space in pairs))


#: Raw entries: markup, white space of every kind, typographic marks, CJK, combining marks.
_RAW_ENTRIES = st.text(
    st.sampled_from("ab Z1_*$\\{}()[]`.,é中\u00a0\u3000\t\n\u0301“”–ﬁ½"), max_size=40
)


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_RAW_ENTRIES)
def test_clean_abstract_identity_and_count_skip_no_step(raw: str) -> None:
    """The identity and word count :func:`clean.clean_abstract` takes from its clean text
    (``clean=True``) are those of the whole procedure."""
    cleaned = clean.clean_abstract(raw)
    assert cleaned.paper_id == clean.paper_id_of(cleaned.abstract)
    assert cleaned.word_count == clean.count_words(cleaned.abstract)


def _same_matches(module: object, plain: dict[str, re.Pattern[str]], text: str) -> None:
    """Each pattern ``module.<name>`` finds the spans and groups ``plain[name]`` finds."""
    for name, written in plain.items():
        fast: re.Pattern[str] = getattr(module, name)
        assert [m.span() + m.groups() for m in fast.finditer(text)] == [
            m.span() + m.groups() for m in written.finditer(text)
        ], name


def _seed_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(SEEDS.glob("*")):
        if path.is_file():
            lines += path.read_text("utf-8").splitlines()
    return lines


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_MARKUP)
def test_rewritten_markup_patterns_match_as_written(text: str) -> None:
    _same_matches(clean, PLAIN, text)


def test_rewritten_markup_patterns_on_the_seeds() -> None:
    for line in _seed_lines():
        for name, plain in PLAIN.items():
            fast: re.Pattern[str] = getattr(clean, name)
            assert fast.sub("", line) == plain.sub("", line), name


#: Text drawn from what a sentence end turns on: every terminator, white space of several
#: kinds, the quotes and brackets a sentence may open with, capitals, digits, CJK.
_SENTENCES = st.lists(
    st.sampled_from([*'.!?。！？ \t\n\u00a0\u3000\x1c"“([aZ09中ーé,', "e.g", " et al"]),
    max_size=40,
).map("".join)


#: Matches of the sentence-end regex in the seeds' lines and the two lines below
#: (counted with the regex itself).
SEED_SENTENCE_ENDS = 409


def _regex_sentence_ends(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in sentences._SENTENCE_END.finditer(text)]


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_SENTENCES)
def test_sentence_ends_are_the_regex_matches(text: str) -> None:
    assert sentences.sentence_ends(text) == _regex_sentence_ends(text)


def test_sentence_ends_on_the_seeds() -> None:
    texts = [*_seed_lines(), "。 中文 A。\u3000B! (C) 1. 2.  \t D", "e.g. Fig. 2. X"]
    ends = 0
    for text in texts:
        clean_text = clean.clean_abstract(text).abstract
        assert sentences.sentence_ends(text) == _regex_sentence_ends(text)
        assert sentences.sentence_ends(clean_text) == _regex_sentence_ends(clean_text)
        ends += len(sentences.sentence_ends(text))
    assert ends == SEED_SENTENCE_ENDS


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_SPACES)
def test_collapse_spaces_is_split_and_join(text: str) -> None:
    assert clean.collapse_spaces(text) == " ".join(text.split())
    if text.isascii() or clean._CJK_CHAR.search(text) is None:
        assert clean.count_words(text) == len(text.split())


def test_collapse_spaces_keeps_the_object_of_single_spaced_text() -> None:
    text = "Graph neural networks (GNNs) scale, we show."
    assert clean.collapse_spaces(text) is text
    assert clean.collapse_spaces(" a\u00a0 b\n") == "a b"
    assert clean.collapse_spaces("") == ""
    assert clean.count_words("") == 0
    assert clean.count_words("one two  three\n") == 3


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_BREAKS)
def test_split_lines_is_the_line_break_regex(text: str) -> None:
    assert parse.split_lines(text) == _LINE_BREAK.split(text)


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_BREAKS)
def test_line_numbers_count_what_an_editor_counts(text: str) -> None:
    lines = parse.split_lines(text)
    starts = [0, *(m.end() for m in _LINE_BREAK.finditer(text))]
    assert len(starts) == len(lines)
    editor = [1 + len(re.findall("\r\n|[\r\n]", text[:start])) for start in starts]
    assert list(parse.line_numbers(text, lines)) == editor
    pieces = re.split("\r\n|[\r\n]", text)
    assert parse.text_line_count(text) == len(pieces) - (1 if pieces[-1] == "" else 0)


def test_split_lines_edges() -> None:
    assert parse.split_lines("") == [""]
    assert parse.split_lines("a\r\nb\r") == ["a", "b", ""]
    assert parse.split_lines("a\x1cb\nc") == ["a\x1cb", "c"]  # not a break here
    assert parse.split_lines("a\u2028b\x85c\fd") == ["a", "b", "c", "d"]


@settings(max_examples=800, derandomize=True, deadline=None)
@given(st.text(st.sampled_from("ab \u00a0\u3164\u2800\u115f\u200b\t\n\ufeff\x07"), max_size=12))
def test_is_blank_fast_path(line: str) -> None:
    plain = not line or all(
        c.isspace() or c in parse._BLANK_LETTERS or unicodedata.category(c) in ("Cf", "Cc")
        for c in line
    )
    assert parse.is_blank(line) == plain


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(st.one_of(_WORDS.map(" ".join), _SPACED_WORDS))
def test_method_name_prefilters_never_skip_a_match(sentence: str) -> None:
    """A sentence the substring tests skip has no match of the pattern they stand for."""
    if method_names._INTRO.search(sentence):
        assert method_names._INTRO_HINT.search(sentence)
    if method_names._NAMING.search(sentence):
        assert any(word in sentence for word in method_names._NAMING_WORDS)
    if method_names._OUR_NAME.search(sentence):
        assert any(word in sentence for word in method_names._OUR_WORDS)
    if method_names._APPOSITIVE.search(sentence):
        assert method_names._APPOSITIVE_HINT.search(sentence)


#: :data:`paperwatch.ingest.names._INTRO` as first written (``\\b`` before each word).
_PLAIN_INTRO = re.compile(
    rf"(?:\b(?:[Ww]e|paper|work|study|article|[Hh]ere)\s+(?:{method_names._ADVERBS}\s+)?"
    rf"{method_names._VERBS}s?\b"
    r"|\b(?:by|then)\s+(?:proposing|introducing|presenting|developing|designing)"
    rf"|\b(?:and|then)\s+(?:further\s+|also\s+|then\s+)?{method_names._VERBS}\b"
    r"|\b[Ww]e\s+(?:[a-z]+ly\s+)?(?:address|tackle|fill|close|bridge|overcome|solve|resolve)\s+"
    r"(?:this|these|that|the|such|both)\b[^.;:,]{0,40}?\bwith\s)"
)


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(st.one_of(_WORDS.map(" ".join), _SPACED_WORDS, st.text("Wweparbyhn d", max_size=20)))
def test_intro_pattern_matches_as_first_written(sentence: str) -> None:
    assert [m.span() for m in method_names._INTRO.finditer(sentence)] == [
        m.span() for m in _PLAIN_INTRO.finditer(sentence)
    ]


def test_intro_pattern_on_the_seeds() -> None:
    for line in _seed_lines():
        assert [m.span() for m in method_names._INTRO.finditer(line)] == [
            m.span() for m in _PLAIN_INTRO.finditer(line)
        ], line


#: :data:`paperwatch.ingest.names._OUR_NAME`, ``_APPOSITIVE`` and ``_NAMING`` as first
#: written (a ``\\b`` or look behind before their first letter).
_PLAIN_NAME_PATTERNS = {
    "_OUR_NAME": re.compile(
        rf"\b(?:[Oo]ur|[Tt]he\s+proposed)\s+(?:[a-z][\w-]*\s+){{0,3}}?{method_names._OUR_NOUNS}"
        r"\s+(?P<name>[^\s,;:()]+)"
    ),
    "_APPOSITIVE": re.compile(
        r"(?<![\w-])(?P<name>[A-Z][\w^+-]{1,23})\s*(?::|,|—|–)\s*(?:an?|the)\s+"
        r"(?P<expansion>(?:[\w-]+\s+){1,10}[\w-]+)"
    ),
    "_NAMING": re.compile(r"\b(?:called|named|dubbed|termed|coined|nicknamed)\s+"),
}
#: Text drawn from what those patterns turn on: their first words glued to others, capitals,
#: hyphens, the appositive's marks, white space of several kinds.
_NAME_PATTERN_TEXT = st.one_of(
    _WORDS.map(" ".join),
    st.lists(
        st.sampled_from(
            [
                "our",
                "Our",
                "four",
                "The",
                "the",
                "proposed",
                "method",
                "model",
                "FooNet",
                "SO",
                "-",
                "LA",
                ":",
                ",",
                "—",
                " a ",
                "an",
                " ",
                "\t",
                "\u00a0",
                "x",
                "nick",
                "named",
                "called",
                "(",
                ")",
                ": a Structured Operator",
                ", the method model",
            ]
        ),
        max_size=16,
    ).map("".join),
)


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(_NAME_PATTERN_TEXT)
def test_name_patterns_match_as_first_written(text: str) -> None:
    _same_matches(method_names, _PLAIN_NAME_PATTERNS, text)


def test_name_patterns_on_the_seeds() -> None:
    for line in _seed_lines():
        _same_matches(method_names, _PLAIN_NAME_PATTERNS, line)


#: Sentences with intro words and white space of every kind, the verbs glued or spaced.
_HINT_TEXT = st.one_of(
    _WORDS.map(" ".join),
    _SPACED_WORDS,
    st.lists(
        st.sampled_from(
            [
                "we",
                " ",
                "\t",
                "\n",
                "\u00a0",
                "\u2028",
                "\x1c",
                "propose",
                "propos",
                "solve",
                "resolve",
                "fill",
                "close",
                "x",
                "é",
                "\ue000",
                "\u0378",
            ]
        ),
        max_size=12,
    ).map("".join),
)


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(_HINT_TEXT)
def test_intro_hint_with_a_space_is_the_hint_with_white_space(sentence: str) -> None:
    """The ASCII-space hint decides a sentence as ``_INTRO_HINT`` does: on its own where the
    sentence is printable or holds no other white space, with ``_INTRO_HINT`` elsewhere."""
    plain = method_names._INTRO_HINT.search(sentence) is not None
    assert method_names._has_intro_hint(sentence) == plain
    spaced = " ".join(sentence.split())  # its only white space is the ASCII space
    assert method_names._has_intro_hint(spaced, spaced=True) == (
        method_names._INTRO_HINT.search(spaced) is not None
    )


@settings(max_examples=1000, derandomize=True, deadline=None)
@given(st.lists(st.tuples(_HINT_TEXT, st.sampled_from([". ", ".\n", " ", ", ", ". A "]))))
def test_clean_abstracts_name_as_without_clean(pieces: list[tuple[str, str]]) -> None:
    """``find_method_name(..., clean=True)``, as :func:`clean.clean_abstract` calls it,
    gives what the call without it gives on the same clean text."""
    raw = "".join(text + end for text, end in pieces)
    abstract = clean.strip_abstract_label(clean.strip_markup(raw))
    parts = sentences.split_sentences(abstract)
    assert method_names.find_method_name(abstract, (), parts, clean=True) == (
        method_names.find_method_name(abstract, (), parts)
    )
    cleaned = clean.clean_abstract(raw)  # (no backslash: no macro names)
    assert cleaned.method_name == method_names.find_method_name(cleaned.abstract)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.text(st.sampled_from("aZ2\\^_${}()"), max_size=8))
def test_tex_mark_is_the_characters_render_rewrites(name: str) -> None:
    assert (method_names._TEX_MARK.search(name) is None) == (not any(c in name for c in "\\^_${}"))


def test_our_words_are_the_ones_our_name_tests() -> None:
    """:func:`names._our_name` writes these words out as ``in`` tests."""
    assert method_names._OUR_WORDS == ("our", "Our", "proposed")


def test_method_name_prefilters_keep_the_labelled_names() -> None:
    assert method_names.find_method_name("We propose FooNet (FN), a model. It works.") == "FN"
    assert method_names.find_method_name("Our selection algorithm SP^2ec utilizes graphs.") == (
        "SP²ec"
    )
    assert (
        method_names.find_method_name(
            "SOLA: a Structured Operator Library for Attention speeds kernels up."
        )
        == "SOLA"
    )
    assert method_names.find_method_name("Graphs are everywhere. Nothing is named.") is None


def test_string_lists_is_the_nested_constructor() -> None:
    lists = [["https://a.io/x", "https://b.io"], [], ["中文"], [], [""]]
    fast = string_lists("code_urls", lists)
    plain = pl.Series("code_urls", lists, dtype=pl.List(pl.String))
    assert fast.dtype == pl.List(pl.String)
    assert fast.equals(plain)
    assert fast.to_list() == lists
    assert string_lists("code_urls", []).dtype == pl.List(pl.String)
    assert string_lists("code_urls", []).len() == 0


# --- strip_markup, the identity and the entry facts, as first written -------------------


def _plain_macros_to_text(text: str, keep_unknown: bool, names: set[str] | None = None) -> str:
    def replace(match: re.Match[str]) -> str:
        name, arg = match.group(1), match.group(2)
        if name in clean._TEXT_MACROS:
            return arg if arg is not None else ""
        if name in clean._SYMBOLS:
            return clean._SYMBOLS[name] + (arg if arg else "")
        if names is not None:
            names.add(name)
        if arg:
            return arg
        return name if keep_unknown else ""

    previous = None
    while previous != text:
        previous = text
        text = clean._MACRO.sub(replace, text)
    return text


def _plain_math_to_text(math: str) -> str:
    math = clean._ESCAPE.sub(lambda m: clean._ESCAPED[m.group(1)], math.replace("\\\\%", "%"))
    math = _plain_macros_to_text(math, keep_unknown=True)
    return clean._BRACES.sub("", math).strip()


def _first_group(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g is not None)


def _plain_strip_markup(raw: str, macro_names: set[str]) -> str:
    """:func:`clean.strip_markup` as first written: every rule's pass repeated until the
    text stops changing, the first group found by looking through all of them, each
    space rule run on its own."""
    text = clean._INVISIBLE.sub("", clean.ANSI_ESCAPE.sub("", raw))
    text = clean._HREF_MACRO.sub(lambda m: m.group(2), text)
    text = clean._URL_MACRO.sub(lambda m: m.group(1), text)
    text = clean._MD_LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    urls: list[str] = []
    text = clean._protect_urls(text, urls)
    text = clean._MATH.sub(lambda m: _plain_math_to_text(_first_group(m)), text)
    text = text.replace("\\\\%", "%")
    text = clean._ESCAPE.sub(lambda m: clean._ESCAPED[m.group(1)], text)
    text = _plain_macros_to_text(text, keep_unknown=True, names=macro_names)
    text = clean._BRACES.sub("", text)
    for pattern in (clean._STRONG, clean._EMPH_STAR, clean._EMPH_UNDERSCORE):
        previous = None
        while previous != text:
            previous = text
            text = pattern.sub(_first_group, text)
    text = clean._CODE.sub(lambda m: m.group(1), text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: urls[int(m.group(1))], text)
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    text = clean._SPACE_BEFORE_PUNCT.sub(r"\1", text)
    return clean._SPACE_AFTER_OPEN.sub(r"\1", text)


#: Markup-heavy raw entries: LaTeX, Markdown, URLs, spaces before and after punctuation,
#: white space of several kinds, hidden characters, typographic marks, CJK, Greek.
_MARKUP_ENTRIES = st.lists(
    st.sampled_from(
        [
            *"ab Z1_*$\\{}()[]`.,;%é中×α“”–\u00a0\u3000\t\n\u200b\x00\x07\ufe69",
            "**",
            "__",
            "$$",
            "\\emph{",
            "\\textbf{x}",
            "\\url{",
            "\\href{http://h.io/x}{",
            "\\foo",
            "\\times",
            "\\(",
            "\\)",
            "\\[",
            "\\]",
            "\\%",
            "\\\\%",
            "http://a.io/p",
            "https://b.org/q_r*s)",
            "[code](",
            "( ",
            " ,",
            " )",
            "\x1b[31m",
            "®",
            "1. ",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(_MARKUP_ENTRIES)
def test_strip_markup_is_the_plain_procedure(raw: str) -> None:
    fast_names: set[str] = set()
    plain_names: set[str] = set()
    assert clean.strip_markup(raw, fast_names) == _plain_strip_markup(raw, plain_names)
    assert fast_names == plain_names


def test_strip_markup_is_the_plain_procedure_on_the_seeds() -> None:
    for line in _seed_lines():
        assert clean.strip_markup(line) == _plain_strip_markup(line, set()), line


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_MARKUP)
def test_the_last_group_is_the_one_that_matched(text: str) -> None:
    """The one-group-per-alternative patterns: ``lastindex`` names the group that matched."""
    for pattern in (clean._MATH, clean._STRONG, clean._EMPH_STAR, clean._EMPH_UNDERSCORE):
        for match in pattern.finditer(text):
            assert clean._matched_group(match) == _first_group(match)


def test_nfkc_keeps_printable_text_printable() -> None:
    """Why ``strip_markup`` checks only the spaces of text that was printable: NFKC
    decomposes every printable character into printable ones, and composes only into
    printable ones (the two non-printable characters with a canonical decomposition,
    U+2000 and U+2001, decompose to a single character and are never composed)."""
    chars = [chr(code) for code in range(0x110000)]
    assert all(unicodedata.normalize("NFKD", c).isprintable() for c in chars if c.isprintable())
    composed = [c for c in chars if unicodedata.normalize("NFD", c) != c]
    assert [c for c in composed if not c.isprintable()] == ["\u2000", "\u2001"]
    assert all(unicodedata.normalize("NFC", c) != c for c in "\u2000\u2001")


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(st.text(st.sampled_from("ab  ,.;:!?%)]([\u00e9"), max_size=30))
def test_space_to_mend_finds_what_the_space_rules_change(text: str) -> None:
    untouched = text[:1] != " " and text[-1:] != " " and not clean._SPACE_TO_MEND.search(text)
    mended = clean._SPACE_AFTER_OPEN.sub(
        r"\1", clean._SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(text.split()))
    )
    assert untouched == (mended == text)


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(_MARKUP_ENTRIES)
def test_clean_abstract_urls_are_those_of_the_raw_entry(raw: str) -> None:
    """The URLs :func:`clean.clean_abstract` takes from the markup pass are those
    :func:`clean.extract_urls` finds in the raw entry."""
    assert clean.clean_abstract(raw).code_urls == clean.extract_urls(raw)


def test_clean_abstract_urls_on_the_seeds() -> None:
    for line in _seed_lines():
        assert clean.clean_abstract(line).code_urls == clean.extract_urls(line), line


#: Clean text whose case folding and typographic folds differ: the backtick (an ASCII
#: typographic mark), final sigma, sharp s and its capital, micro sign, dotted capital I.
_IDENTITY_TEXT = st.text(st.sampled_from("aZ 1.`´'“”–—ςΣßµ\u1e9eİ×α≤é中\u0301Ω"), max_size=40).map(
    lambda text: clean.strip_markup(text)
)


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(_IDENTITY_TEXT)
def test_identity_of_clean_text_is_the_plain_form(text: str) -> None:
    plain = clean.normalise_for_id(text, clean=True)
    assert (
        clean.paper_id_of(text, clean=True)
        == clean.hashlib.sha256(plain.encode("utf-8")).hexdigest()[:16]
    )
    assert clean.paper_id_of(text, clean=True) == clean.paper_id_of(text)


@settings(max_examples=1500, derandomize=True, deadline=None)
@given(
    st.one_of(_RAW_ENTRIES, _IDENTITY_TEXT, st.text(st.sampled_from("a $ {}中ア한 é"), max_size=30))
)
def test_entry_facts_are_their_plain_forms(text: str) -> None:
    assert clean.text_length(text) == len(text) + len(clean._CJK_CHAR.findall(text))
    assert clean.has_unbalanced_markup(text) == (
        text.count("$") % 2 == 1 or text.count("{") != text.count("}")
    )
    words = clean._WORD.findall(text) if clean._CJK_CHAR.search(text) else text.split()
    assert clean.count_words(text) == len(words)
