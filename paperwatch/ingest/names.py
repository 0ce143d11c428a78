"""The method name an abstract introduces ("We propose **HJA**…" → HJA), or none.

Pure functions over clean abstract text (:func:`paperwatch.ingest.clean.strip_markup`). The
rules are written down in docs/cleaning.md ("Facts of an entry"); tests/test_method_names.py
pins them on hand labels of every seed abstract (tests/data/method_names/seed_labels.tsv)
and on examples of each rule (tests/data/method_names/examples.tsv).

A name is a token or short phrase the abstract itself introduces. Where the
abstract introduces none, none is returned: a report shows the first words of the
abstract instead, never an invented name.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from paperwatch.ingest.sentences import split_sentences

#: Adverbs that may stand between "we" and the verb: "we therefore propose".
_ADVERBS = (
    r"(?:[a-z]+ly|then|also|further|therefore|thus|hence|now|here|first|instead|next|finally"
    r"|additionally|consequently|accordingly|so)"
)
_VERBS = (
    r"(?:propose|introduce|present|develop|design|devise|formulate|build|construct|contribute"
    r"|offer)"
)


def _opening(word: str) -> str:
    """``word`` at the start of a word: ``\\bword`` written with the word first, then a
    look behind it (the same matches; a pattern whose every alternative opens with a
    letter lets the scan skip to those letters: docs/design.md, "Fast paths in cleaning
    and parsing")."""
    return rf"{word}(?<!\w{word})"


def _alternatives(words: tuple[str, ...], rest: str) -> list[str]:
    return [_opening(word) + rest for word in words]


#: An introducing phrase; the name is read from the words after it. As first written
#: (tests/test_fast_paths.py holds it to this form):
#: ``\b(?:[Ww]e|paper|work|study|article|[Hh]ere)\s+(?:ADVERB\s+)?VERBs?\b`` |
#: ``\b(?:by|then)\s+(?:proposing|…)`` | ``\b(?:and|then)\s+(?:further\s+|…)?VERB\b`` |
#: ``\b[Ww]e\s+(?:[a-z]+ly\s+)?(?:address|…)\s+(?:this|…)\b[^.;:,]{0,40}?\bwith\s``,
#: alternatives in that order.
_INTRO = re.compile(
    "|".join(
        [
            *_alternatives(
                ("We", "we", "paper", "work", "study", "article", "Here", "here"),
                rf"\s+(?:{_ADVERBS}\s+)?{_VERBS}s?\b",
            ),
            *_alternatives(
                ("by", "then"), r"\s+(?:proposing|introducing|presenting|developing|designing)"
            ),
            # "we define … and further propose a … (SPACE) framework"
            *_alternatives(("and", "then"), rf"\s+(?:further\s+|also\s+|then\s+)?{_VERBS}\b"),
            # "We address this gap with SpatialEpiBench, a …"
            *_alternatives(
                ("We", "we"),
                r"\s+(?:[a-z]+ly\s+)?(?:address|tackle|fill|close|bridge|overcome|solve|resolve)"
                r"\s+(?:this|these|that|the|such|both)\b[^.;:,]{0,40}?\bwith\s",
            ),
        ]
    )
)
#: The verbs (or their stems) of :data:`_INTRO`, one of which every match holds right after
#: white space: see :data:`_INTRO_HINT`.
_INTRO_WORDS = (
    "propos",
    "introduc",
    "present",
    "develop",
    "design",
    "devise",
    "formulate",
    "build",
    "construct",
    "contribute",
    "offer",
    "address",
    "tackle",
    "fill",
    "close",
    "bridge",
    "overcome",
    "solve",
    "resolve",
)
#: White space, then one of :data:`_INTRO_WORDS`: a sentence without it is not searched with
#: :data:`_INTRO`. The leading ``\s`` lets the scan skip to white space (8.5 against 19.8 µs
#: an abstract's sentences: docs/design.md, "Fast paths in cleaning and parsing").
_INTRO_HINT = re.compile(r"\s(?:" + "|".join(_INTRO_WORDS) + ")")


def _by_first_letter(words: tuple[str, ...]) -> str:
    """``words`` as an alternation grouped by first letter (``p(?:ropos|resent)|…``): at
    each place the engine tries one alternative a letter, not one a word. Whether a text
    holds a match is the same as with the words side by side."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(re.escape(word[1:]))
    return "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items())


#: :data:`_INTRO_HINT` with the ASCII space for ``\s``: the engine skips to a literal far
#: faster than to a class. A printable text holds no other white space (``str.isprintable``
#: rejects every other ``str.isspace`` character), so there the two decide alike: see
#: :func:`_has_intro_hint`.
_INTRO_HINT_SPACE = re.compile(" (?:" + _by_first_letter(_INTRO_WORDS) + ")")


def _has_intro_hint(sentence: str, spaced: bool = False) -> bool:
    """Whether :data:`_INTRO_HINT` matches in ``sentence`` (docs/design.md, "Fast paths in
    cleaning and parsing"). ``spaced``: the sentence holds no white space but the ASCII
    space (clean text); else only a printable sentence is decided without ``\\s``."""
    if _INTRO_HINT_SPACE.search(sentence) is not None:
        return True
    if spaced or sentence.isprintable():
        return False
    return _INTRO_HINT.search(sentence) is not None


#: As first written (tests/test_fast_paths.py holds it to this form):
#: ``\b(?:called|named|dubbed|termed|coined|nicknamed)\s+``; each word now opens its
#: alternative (:func:`_opening`).
_NAMING = re.compile(
    "(?:"
    + "|".join(_alternatives(("called", "named", "dubbed", "termed", "coined", "nicknamed"), ""))
    + r")\s+"
)
#: Words one of which every match of :data:`_NAMING` holds ("nicknamed" holds "named").
_NAMING_WORDS = ("called", "named", "dubbed", "termed", "coined")
_TOKEN = re.compile(r"\((?P<paren>[^()]{1,80})\)|(?P<punct>[,;:—–.]|\s-\s)|(?P<word>[^\s,;:—–()]+)")
_ACRONYM = re.compile(r"^(?=.*[A-Z])[A-Za-z0-9][\w\-^+.]{0,23}$")
_LEAD_SKIP = frozenset(["a", "an", "the", "our", "two", "three", "new", "novel", "simple"])
#: How much of a sentence after an intro phrase is read for the name: far more than the 41
#: tokens :func:`_name_after` reads, and a bound, so that a sentence of thousands of intro
#: phrases is not copied and split once for each (quadratic).
_TAIL_CHARS = 2000
#: A word ending with one of these (closing quotes and brackets aside) ends its sentence,
#: and the name with it.
_SENTENCE_END_MARKS = ".!?"
#: Longer "names" are runs of capitalised text (titles, tables), not method names.
_MAX_NAME_CHARS = 60
_CONNECTORS = frozenset(["with", "for", "of", "and", "on", "in", "the", "to", "from", "via"])
_STOP = frozenset(
    [
        "that",
        "which",
        "who",
        "whose",
        "where",
        "when",
        "whereby",
        "to",
        "for",
        "of",
        "by",
        "using",
        "via",
        "from",
        "across",
        "on",
        "in",
        "with",
        "under",
        "into",
        "based",
        "while",
        "and",
        "or",
        "as",
        "at",
        "is",
        "are",
        "was",
        "were",
        "be",
        "can",
    ]
)
_GENERIC_NAMES = frozenset(
    [
        "a",
        "an",
        "the",
        "novel",
        "new",
        "we",
        "this",
        "our",
        "it",
        "its",
        "these",
        "method",
        "approach",
        "framework",
        "model",
        "llm",
        "llms",
        "in",
        "to",
        "for",
    ]
)


#: Nouns after "our …" that the name follows: "Our selection algorithm SP^2ec utilizes".
_OUR_NOUNS = (
    r"(?:algorithm|method|framework|model|approach|system|benchmark|dataset|library|tool"
    r"|toolkit|pipeline|technique|architecture|agent|scheme|estimator|optimizer|solver|module)"
)
#: As first written (tests/test_fast_paths.py holds it to this form):
#: ``\b(?:[Oo]ur|[Tt]he\s+proposed)\s+…``; each word now opens its alternative
#: (:func:`_opening`), so that the scan skips to those letters.
_OUR_NAME = re.compile(
    "(?:"
    + "|".join([*_alternatives(("Our", "our"), ""), *_alternatives(("The", "the"), r"\s+proposed")])
    + rf")\s+(?:[a-z][\w-]*\s+){{0,3}}?{_OUR_NOUNS}\s+"
    r"(?P<name>[^\s,;:()]+)"
)
#: Words one of which every match of :data:`_OUR_NAME` holds (:func:`_our_name` tests
#: them with ``in``, written out).
_OUR_WORDS = ("our", "Our", "proposed")
#: What every match of :data:`_APPOSITIVE` holds: a sentence without it is not searched
#: (docs/design.md, "Fast paths in cleaning and parsing").
_APPOSITIVE_HINT = re.compile(r"[:,—–]\s*(?:an?|the)\s")
#: "SOLA: a Structured Operator Library for Attention" (the name, then its expansion). As
#: first written, ``(?<![\w-])(?P<name>[A-Z]…``: the look behind now follows the capital it
#: looks behind, so that the scan skips to capitals (tests/test_fast_paths.py holds the two
#: to the same matches).
_APPOSITIVE = re.compile(
    r"(?P<name>[A-Z](?<![\w-][A-Z])[\w^+-]{1,23})\s*(?::|,|—|–)\s*(?:an?|the)\s+"
    r"(?P<expansion>(?:[\w-]+\s+){1,10}[\w-]+)"
)
#: Verbs after a name that opens a sentence: "SPEXT resolves this through …".
_SOLVING_VERBS = frozenset(
    [
        "resolves",
        "addresses",
        "tackles",
        "overcomes",
        "solves",
        "mitigates",
        "bridges",
        "closes",
        "fixes",
        "remedies",
        "alleviates",
        "circumvents",
        "sidesteps",
        "eliminates",
    ]
)
_LEADING_NAME = re.compile(r"^(?P<name>[A-Z][\w^+-]{1,23})\s+(?P<verb>[a-z]+)\b")


def _is_name_token(token: str, macro_names: Collection[str]) -> bool:
    bare = token.strip("*\"'“”‘’")
    if not bare:
        return False
    if bare in macro_names:
        return True
    return bare[0].isupper() or (bare[0].isdigit() and any(c.isupper() for c in bare))


def _name_after(tail: str, macro_names: Collection[str]) -> str | None:
    """The method name at the start of ``tail`` (the words after an intro verb), or None."""
    run: list[str] = []
    descriptive = False  # a lowercase word was read: only a parenthesised acronym can follow
    # Up to 40 tokens are read, each with the one after it at hand; they are matched only
    # as they are read (most tails end after a few: docs/design.md, "Fast paths in
    # cleaning and parsing").
    tokens = _TOKEN.finditer(tail)
    following_token = next(tokens, None)
    for _ in range(40):
        token = following_token
        if token is None:
            break
        following_token = next(tokens, None)
        paren, punct, word = token.groups()  # (the groups "paren", "punct", "word")
        if paren is not None:
            content = paren.strip().strip("*")
            if _ACRONYM.match(content) and content.lower() not in _GENERIC_NAMES:
                return content
            if run:
                break
            continue
        if punct is not None:
            break
        assert word is not None
        if _is_name_token(word, macro_names):
            if descriptive:
                continue
            closed = word.rstrip("\"'”’»)]")
            if closed[-1:] in _SENTENCE_END_MARKS:  # "(We propose FlashNorm.) Experiments"
                run.append(closed.rstrip(_SENTENCE_END_MARKS))
                break
            run.append(word)
            if len(run) > 8:  # a capitalised title or sentence, not a name
                return None
            continue
        lower = word.lower()
        if run:
            following = following_token.group("word") if following_token is not None else None
            if lower in _CONNECTORS and following and _is_name_token(following, macro_names):
                run.append(word)
                continue
            break
        if lower in _STOP:
            return None
        descriptive = True
    name = " ".join(run).strip("*\"'“”‘’. ")
    if not name or name.lower() in _GENERIC_NAMES or not 2 <= len(name) <= _MAX_NAME_CHARS:
        return None
    return name


_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,}s$")


def _is_coined(token: str) -> bool:
    """Whether ``token`` looks like a coined name (SPEXT, SpatialEpiBench, SP^2ec, H2G), not
    an ordinary capitalised word (This, Our, Experiments) or a plural acronym (LLMs)."""
    if not 2 <= len(token) <= 40 or not token[0].isupper():
        return False
    if token.lower() in _GENERIC_NAMES or _PLURAL_ACRONYM.search(token):
        return False
    capitals = sum(c.isupper() for c in token)
    return capitals >= 2 or any(c.isdigit() or c in "^+-" for c in token[1:])


def _defined_acronyms(abstract: str) -> set[str]:
    """Tokens the abstract defines in parentheses after a phrase: ``large language models
    (LLMs)`` → LLMs. A sentence opening with one of them is about the field, not a name."""
    return {m.group(1) for m in re.finditer(r"\w\s+\(([A-Za-z][\w-]{0,23})\)", abstract)}


def _resolve_macro(name: str, abstract: str, macro_names: Collection[str]) -> str | None:
    """A name that is an unknown macro's name (``\\hsco{}`` → hsco) is not shown: the name
    it stands for is the abstract's capitalised word that starts with it (HSCO-Bench), else
    there is none."""
    if name not in macro_names:
        return name
    pattern = re.compile(rf"(?<![\w-])({re.escape(name)}[\w-]*)", re.IGNORECASE)
    for match in pattern.finditer(abstract):
        found = match.group(1).rstrip("-")
        if found != name and any(c.isupper() for c in found):
            return found
    return None


def _initials(words: list[str]) -> str:
    """Capital initials of a run of capitalised words (and their hyphenated parts),
    connectors skipped: ``Structured Operator Library for Attention`` → SOLA."""
    letters: list[str] = []
    for word in words:
        if word.lower() in _CONNECTORS:
            continue
        parts = [part for part in word.split("-") if part]
        if not parts or not parts[0][:1].isupper():
            break
        letters.extend(part[0].upper() for part in parts if part[:1].isupper())
    return "".join(letters)


def _intro_name(
    sentences: list[str], names: Collection[str], abstract: str, spaced: bool
) -> str | None:
    for sentence in sentences:
        if not _has_intro_hint(sentence, spaced):
            continue
        for intro in _INTRO.finditer(sentence):
            tail = sentence[intro.end() : intro.end() + _TAIL_CHARS]
            head = tail[:300]
            naming = _NAMING.search(head) if any(word in head for word in _NAMING_WORDS) else None
            found: str | None = None
            if naming:
                found = _name_after(tail[naming.end() :], names)
            if not found:
                words = tail.split()
                while words and words[0].lower() in _LEAD_SKIP:
                    words = words[1:]
                found = _name_after(" ".join(words), names)
            if found:
                resolved = _resolve_macro(found, abstract, names)
                if resolved:
                    return resolved
    return None


def _our_name(sentences: list[str]) -> str | None:
    """ "Our selection algorithm SP^2ec utilizes …", "the proposed method FooNet" → the name."""
    for sentence in sentences:
        # _OUR_WORDS, tested one by one: a generator's calls cost more than the scans.
        if "our" not in sentence and "Our" not in sentence and "proposed" not in sentence:
            continue
        for match in _OUR_NAME.finditer(sentence):
            name = match.group("name").rstrip(".")
            if _is_coined(name):
                return name
    return None


def _appositive_name(sentences: list[str]) -> str | None:
    """ "SOLA: a Structured Operator Library for Attention" → SOLA: a name followed by an
    expansion (after an article) whose capital initials spell the name's capitals."""
    for sentence in sentences:
        if _APPOSITIVE_HINT.search(sentence) is None:
            continue
        for match in _APPOSITIVE.finditer(sentence):
            name = match.group("name")
            capitals = "".join(c for c in name if c.isupper())
            if len(capitals) < 2 or not _is_coined(name):
                continue
            if _initials(match.group("expansion").split()) == capitals:
                return name
    return None


def _leading_name(sentences: list[str], abstract: str) -> str | None:
    """ "SPEXT resolves this through …": a coined name opening a sentence, followed by a
    problem-solving verb; not an acronym the abstract defines for its field (LLMs)."""
    defined: set[str] | None = None
    for sentence in sentences:
        match = _LEADING_NAME.match(sentence)
        if match is None or match.group("verb") not in _SOLVING_VERBS:
            continue
        name = match.group("name")
        if not _is_coined(name):
            continue
        if defined is None:
            defined = _defined_acronyms(abstract)
        if name not in defined:
            return name
    return None


#: Superscript and subscript forms of the characters TeX names use (``SP^2ec`` → SP²ec).
_SUPERSCRIPTS = str.maketrans("0123456789+-=()niT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵀ")
_SUBSCRIPTS = str.maketrans("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")
_SCRIPTABLE_SUP = frozenset("0123456789+-=()niT")
_SCRIPTABLE_SUB = frozenset("0123456789+-=()")
_TEX_MACRO_ARG = re.compile(r"\\[A-Za-z]+\s*\{([^{}]*)\}")
#: A character :func:`render_tex_name` rewrites or drops; most names hold none.
_TEX_MARK = re.compile(r"[\\^_${}]")
_TEX_SCRIPT = re.compile(r"(?P<op>[\^_])(?:\{(?P<group>[^{}]{1,8})\}|(?P<one>[0-9A-Za-z+\-]))")


def render_tex_name(name: str) -> str:
    """A method name with its TeX rendered as text: ``SP^2ec`` and ``SP$^{2}$ec`` → SP²ec,
    ``H_2O`` → H₂O, ``\\mathcal{X}-Net`` → X-Net; ``$`` and braces dropped.

    Only characters Unicode has super/subscript forms for are raised or lowered (digits,
    ``+ - = ( )``, and ``n i T`` above the line); any other script stays written as it
    was (``X^{ab}`` → X^ab). Input and output are ``str``; nothing is raised.
    """
    if _TEX_MARK.search(name) is None:
        return name
    text = name.replace("$", "")
    previous = None
    while previous != text:  # nested \mathbf{\mathcal{X}}
        previous = text
        text = _TEX_MACRO_ARG.sub(lambda m: m.group(1), text)

    def script(match: re.Match[str]) -> str:
        body = match.group("group") if match.group("group") is not None else match.group("one")
        sup = match.group("op") == "^"
        allowed = _SCRIPTABLE_SUP if sup else _SCRIPTABLE_SUB
        if body and all(c in allowed for c in body):
            return body.translate(_SUPERSCRIPTS if sup else _SUBSCRIPTS)
        return match.group("op") + body

    text = _TEX_SCRIPT.sub(script, text)
    return text.replace("{", "").replace("}", "")


def find_method_name(
    abstract: str,
    macro_names: Collection[str] | None = None,
    sentences: list[str] | None = None,
    *,
    clean: bool = False,
) -> str | None:
    """The name an abstract introduces for its method, or None.

    Args:
        abstract: clean abstract text (:func:`paperwatch.ingest.clean.strip_markup`: markup
            removed, ``SP$^2$ec`` written ``SP^2ec``).
        macro_names: names of the unknown LaTeX macros the raw entry used
            (``\\hsco{}`` → ``{"hsco"}``); such a name is never returned as it is.
        sentences: ``split_sentences(abstract)`` when the caller has it (saves splitting
            twice).
        clean: ``abstract`` is :func:`~paperwatch.ingest.clean.strip_markup`'s output,
            whose only white space is single ASCII spaces: sentences are then searched
            for intro phrases without asking whether they hold other white space (the
            same result).

    Returns:
        The name with its TeX rendered (:func:`render_tex_name`: ``SP^2ec`` → SP²ec), or
        None when the abstract introduces none. Nothing is raised.

    The rules, first that gives a name wins, are in docs/cleaning.md ("Facts of an entry");
    sources: hand labels of the seed abstracts and the missed kinds of issue 17, each pinned
    by tests/data/method_names/examples.tsv.
    """
    names = frozenset(macro_names or ())
    parts = split_sentences(abstract) if sentences is None else sentences
    found = (
        _intro_name(parts, names, abstract, clean)
        or _our_name(parts)
        or _appositive_name(parts)
        or _leading_name(parts, abstract)
    )
    if found is None or found in names:
        return None
    return render_tex_name(found)


def reread_method_names(con: Any) -> int:
    """Migration 0006: read the method names of stored papers again with these rules.

    Only papers the rules of issue 17 can change are read: those without a name, and those
    whose raw text holds TeX or a macro (``\\``, ``^``, ``_``, ``$``); the others keep
    theirs (the intro rules found them and still do). Runs inside the migration's
    transaction.

    Args:
        con: a read-write DuckDB connection (``duckdb.DuckDBPyConnection``).

    Returns:
        The number of papers whose ``method_name`` changed.
    """
    import polars as pl

    # Here, not at the top: the cleaner imports this module for find_method_name.
    from paperwatch.ingest.clean import clean_abstract

    rows = con.execute(
        "select paper_id, abstract_raw, method_name from papers "
        "where method_name is null or regexp_matches(abstract_raw, '[\\\\^_$]')"
    ).fetchall()
    changed = {
        paper_id: name
        for paper_id, raw, old in rows
        if (name := clean_abstract(raw).method_name) != old
    }
    if not changed:
        return 0
    frame = pl.DataFrame(
        {"paper_id": list(changed), "method_name": list(changed.values())},
        schema={"paper_id": pl.String, "method_name": pl.String},
    )
    con.register("_method_names", frame)
    try:
        con.execute(
            "update papers set method_name = m.method_name from _method_names m "
            "where papers.paper_id = m.paper_id"
        )
    finally:
        con.unregister("_method_names")
    return len(changed)
