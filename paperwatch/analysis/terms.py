"""Terms of abstracts. Pure, vectorised functions (Polars).

:func:`extract_terms` turns clean abstracts (markup removed by
:func:`paperwatch.ingest.clean.strip_markup`) into one row per (paper, term): single words
and phrases of two or three words in one clause, acronyms kept as written, other words
lower-cased and singular, no stop word at either end, no generic noun alone; an acronym
defined in the abstract counts as its expansion (after Schwartz & Hearst 2003, "A simple
algorithm for identifying abbreviation definitions in biomedical text", PSB 8:451-462);
CJK text gives character bigrams and trigrams. :func:`acronym_aliases` finds the acronyms
a corpus defines. The rules: docs/terms.md ("Terms of a paper"); the word lists:
``paperwatch/data/``; which terms trend: :mod:`paperwatch.analysis.trend_stats`.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import polars as pl

#: Folder of the word lists.
DATA_DIR = Path(__file__).resolve().parents[1] / "data"

#: Bump when the extraction rules change: papers extracted by an older version are re-extracted.
EXTRACTOR_VERSION = 1

#: Papers extracted per Polars batch (bounds memory: about 250 tokens per abstract).
BATCH_SIZE = 20_000

#: Stop words that may stand inside a three-word phrase.
CONNECTORS = ("of", "to")

#: Longest acronym expansion searched, in words.
MAX_EXPANSION_WORDS = 8

#: Longest token kept as a term word, in characters (longer ones are hashes, paths, garbage).
MAX_TOKEN_CHARS = 40

_CJK_CLASS = r"\p{Han}\p{Hiragana}\p{Katakana}ー"
_W = r"[\p{L}\p{N}\p{M}--\p{Han}\p{Hiragana}\p{Katakana}ー]"  # a letter or digit, not CJK
_WORD = rf"{_W}+(?:[\-'’]{_W}+|\.\p{{N}}{_W}*)*"
_URL = (
    r"https?://\S+|www\.\S+"
    r"|(?:[\p{L}\p{N}_\-]+\.)+(?:com|org|io|net|edu|ai|dev|gov|html|pdf)(?:/\S*)?"
)
_CJK_RUN = rf"[{_CJK_CLASS}]+"
#: One token: a URL, a CJK run, a word, or any other single non-space character (a boundary).
TOKEN_PATTERN = rf"{_URL}|{_CJK_RUN}|{_WORD}|\S"
#: An acronym definition: one to eight words, then a parenthesised token with upper-case letters.
_DEFINITION = rf"\b(?:{_WORD}\s+){{1,{MAX_EXPANSION_WORDS}}}\([\p{{L}}\p{{N}}\-]{{2,12}}\)"
_NUMBER = r"^\p{N}+(?:[.,]\p{N}+)*(?:x|×|k|m|b|%)?$"
_ACRONYM_PART = r"\p{Lu}[^\-]*\p{Lu}"
_ACRONYM_PLURAL = r"([\p{Lu}\p{N}])s$"

#: Irregular plurals and words the suffix rules below would get wrong.
IRREGULAR_SINGULARS: dict[str, str] = {
    "indices": "index",
    "matrices": "matrix",
    "vertices": "vertex",
    "apices": "apex",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "hypotheses": "hypothesis",
    "analyses": "analysis",
    "syntheses": "synthesis",
    "theses": "thesis",
    "bases": "basis",
    "diagnoses": "diagnosis",
    "parentheses": "parenthesis",
    "axes": "axis",
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "teeth": "tooth",
    "feet": "foot",
    "geese": "goose",
    "caches": "cache",
    "niches": "niche",
    "movies": "movie",
    "cookies": "cookie",
    "calories": "calorie",
    "zombies": "zombie",
    "biases": "bias",
    "aliases": "alias",
    "atlases": "atlas",
    "canvases": "canvas",
    "lenses": "lens",
    "buses": "bus",
    "statuses": "status",
    "viruses": "virus",
    "corpora": "corpus",
    "genera": "genus",
    "leaves": "leaf",
    "halves": "half",
    "shelves": "shelf",
    "wolves": "wolf",
    "lives": "life",
    "knives": "knife",
    "wives": "wife",
}
#: Words ending in -s that are not plurals (fields of study, mass nouns, adverbs).
INVARIANT_WORDS = frozenset(
    [
        "news",
        "series",
        "species",
        "means",
        "lens",
        "bias",
        "alias",
        "atlas",
        "canvas",
        "chaos",
        "gas",
        "ethos",
        "pathos",
        "thermos",
        "physics",
        "mathematics",
        "statistics",
        "dynamics",
        "robotics",
        "economics",
        "linguistics",
        "genomics",
        "proteomics",
        "ethics",
        "graphics",
        "analytics",
        "kinematics",
        "semantics",
        "pragmatics",
        "mechanics",
        "optics",
        "electronics",
        "logistics",
        "informatics",
        "politics",
        "acoustics",
        "photonics",
        "aerodynamics",
        "thermodynamics",
        "biomechanics",
        "cybernetics",
        "diabetes",
        "measles",
        "always",
        "perhaps",
        "whereas",
    ]
)


#: Words ending in -ly that are not adverbs (every other word of 5+ letters ending in -ly is
#: an adverb or an adjective like "costly", and is treated as a stop word).
NOT_ADVERBS = frozenset(
    [
        "anomaly",
        "anomalies",
        "family",
        "assembly",
        "supply",
        "reply",
        "italy",
        "monopoly",
        "butterfly",
        "firefly",
        "rally",
        "ally",
        "jelly",
        "belly",
        "homily",
        "early",
        "holy",
        "poly",
    ]
)


def _read_words(name: str) -> frozenset[str]:
    text = (DATA_DIR / name).read_text(encoding="utf-8")
    words = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return frozenset(word for word in words if word)


@cache
def stop_words() -> frozenset[str]:
    """The stop words of ``paperwatch/data/stopwords.txt`` (lowercase, ASCII apostrophes)."""
    return _read_words("stopwords.txt")


@cache
def generic_terms() -> frozenset[str]:
    """The generic research nouns of ``paperwatch/data/generic_terms.txt`` (singular)."""
    return _read_words("generic_terms.txt")


@cache
def cjk_stop_chars() -> frozenset[str]:
    """The Chinese function characters of ``paperwatch/data/stopchars_zh.txt``."""
    return _read_words("stopchars_zh.txt")


def singular_expr(word: pl.Expr) -> pl.Expr:
    """Singular form of lowercase words, as a Polars expression (no dictionary download).

    Rules, first match wins:

    1. :data:`IRREGULAR_SINGULARS` (indices → index, caches → cache, biases → bias);
    2. unchanged: words of three letters or fewer, :data:`INVARIANT_WORDS`, words not ending
       in "s", and words ending in -ss, -us, -is, -ous, -'s (loss, corpus, basis, various);
    3. -ies → -y after a consonant (strategies → strategy, queries → query);
    4. -sses, -xes, -zzes, -ches, -shes lose "es" (losses → loss, boxes → box,
       approaches → approach);
    5. otherwise the final "s" goes (models → model, responses → response).

    Hyphenated words follow their last part ("vision-language models" → "... model").
    """
    irregular = pl.DataFrame(
        {"plural": list(IRREGULAR_SINGULARS), "singular": list(IRREGULAR_SINGULARS.values())}
    )
    last_part = word.str.extract(r"([^\-]*)$", 1)
    return (
        pl.when(last_part.is_in(irregular["plural"].implode()))
        .then(
            word.str.slice(0, word.str.len_chars() - last_part.str.len_chars())
            + last_part.replace_strict(
                irregular["plural"], irregular["singular"], default=last_part
            )
        )
        .when(
            (last_part.str.len_chars() <= 3)
            | last_part.is_in(list(INVARIANT_WORDS))
            | ~word.str.ends_with("s")
            | word.str.contains(r"(?:ss|us|is|ous|'s)$")
        )
        .then(word)
        .when(word.str.contains(r"[^aeiou]ies$"))
        .then(word.str.replace(r"ies$", "y"))
        .when(word.str.contains(r"(?:sses|xes|zzes|ches|shes)$"))
        .then(word.str.replace(r"es$", ""))
        .otherwise(word.str.replace(r"s$", ""))
    )


def _vocabulary(tokens: pl.DataFrame) -> pl.DataFrame:
    """Per distinct token: its term form, the form after "of", and its flags."""
    stops = list(stop_words())
    generic = list(generic_terms())
    tok = pl.col("tok")
    norm = tok.str.replace_all("’", "'").str.replace(r"'s$", "")
    lower = pl.col("norm").str.to_lowercase()
    vocab = tokens.select(tok.unique()).with_columns(norm=norm)
    vocab = vocab.with_columns(
        is_url=tok.str.contains(rf"^(?:{_URL})$"),
        is_cjk=tok.str.contains(rf"^{_CJK_RUN}$"),
        is_word=tok.str.contains(rf"^{_WORD}$") & tok.str.contains(r"\p{L}"),
        is_acronym=pl.col("norm").str.contains(_ACRONYM_PART),
        lower=lower,
    )
    vocab = vocab.with_columns(
        acronym=pl.col("norm").str.replace(_ACRONYM_PLURAL, "${1}"),
        singular=singular_expr(pl.col("lower")),
    )
    vocab = vocab.with_columns(
        w=pl.when(pl.col("is_acronym")).then(pl.col("acronym")).otherwise(pl.col("singular")),
        w_of=pl.when(pl.col("is_acronym")).then(pl.col("acronym")).otherwise(pl.col("lower")),
    )
    is_stop = (
        ~pl.col("is_word")
        | (
            pl.col("lower").str.ends_with("ly")
            & (pl.col("lower").str.len_chars() > 4)
            & ~pl.col("lower").is_in(list(NOT_ADVERBS))
        )
        | pl.col("is_url")
        | pl.col("lower").is_in(stops)
        | pl.col("singular").is_in(stops)
        | (pl.col("lower").str.len_chars() < 2)
        | pl.col("lower").str.contains(_NUMBER)
        | (pl.col("lower").str.len_chars() > MAX_TOKEN_CHARS)
    )
    return vocab.with_columns(
        ok=~is_stop,
        conn=pl.col("lower").is_in(list(CONNECTORS)),
        generic=pl.col("singular").is_in(generic) | pl.col("lower").is_in(generic),
    ).select("tok", "w", "w_of", "lower", "ok", "conn", "generic", "is_cjk")


def _form_codes(values: pl.Series, forms: pl.Series, strict: bool = True) -> pl.Series:
    """``values`` (strings) as their positions in ``forms`` (distinct strings), UInt32;
    null for a null value, and with ``strict=False`` for a value not in ``forms``."""
    return values.cast(pl.Enum(forms), strict=strict).to_physical().cast(pl.UInt32)


def _word_forms(vocab: pl.DataFrame) -> tuple[pl.Series, pl.DataFrame]:
    """The distinct word forms of ``vocab`` (its ``w``, ``w_of`` and ``lower`` values),
    sorted, and ``vocab``'s rows with each form as its position in that list.

    Word terms are counted on these numbers rather than on their text (see
    :func:`_counted_word_grams`): a form has no space, and a space sorts before every
    character a form holds, so the tuple of a phrase's form positions sorts as the
    phrase's text does ("graph" < "graph model" < "graphs") and equal tuples are equal
    phrases."""
    stacked = pl.concat([vocab["w"], vocab["w_of"], vocab["lower"]])
    forms = stacked.drop_nulls().unique().sort()
    # One cast of the three columns: each cast builds the list's hash table again.
    positions = _form_codes(stacked, forms)
    n = vocab.height
    codes = vocab.select(
        w=positions.slice(0, n),
        w_of=positions.slice(n, n),
        lower=positions.slice(2 * n, n),
        ok="ok",
        conn="conn",
        generic="generic",
        is_of=pl.col("lower") == "of",
        is_cjk="is_cjk",
    )
    return forms, codes


#: Columns of a word n-gram: document, then the positions of its one to three forms in
#: the batch's word forms (:func:`_word_forms`; null past the n-gram's length).
_GRAM = ["doc", "a", "b", "c"]


def _word_grams(tokens: pl.DataFrame) -> pl.DataFrame:
    """Unigrams, bigrams and trigrams of word tokens: rows (doc, a, b, c), ``tokens``
    being the batch's tokens with their forms' positions (:func:`_word_forms`)."""
    ahead = tokens.with_columns(
        [
            pl.col(c).shift(-1).alias(f"{c}1")
            for c in ("doc", "w", "lower", "ok", "conn", "generic", "is_of")
        ]
        + [pl.col(c).shift(-2).alias(f"{c}2") for c in ("doc", "w", "w_of", "ok", "generic")]
    )
    none = pl.lit(None, dtype=pl.UInt32)
    unigrams = ahead.filter(pl.col("ok") & ~pl.col("generic")).select("doc", a="w", b=none, c=none)
    bigrams = ahead.filter(
        pl.col("ok")
        & pl.col("ok1")
        & (pl.col("doc1") == pl.col("doc"))
        & ~(pl.col("generic") & pl.col("generic1"))
    ).select("doc", a="w", b="w1", c=none)
    middle_is_word = pl.col("ok1") & ~pl.col("conn1")
    trigrams = ahead.filter(
        pl.col("ok")
        & pl.col("ok2")
        & (pl.col("ok1") | pl.col("conn1"))
        & (pl.col("doc2") == pl.col("doc"))
        & ~(pl.col("generic") & (pl.col("generic1") | pl.col("conn1")) & pl.col("generic2"))
    ).select(
        "doc",
        a="w",
        b=pl.when(middle_is_word).then(pl.col("w1")).otherwise(pl.col("lower1")),
        c=pl.when(pl.col("is_of1")).then(pl.col("w_of2")).otherwise(pl.col("w2")),
    )
    return pl.concat([unigrams, bigrams, trigrams])


def _cjk_ngrams(tokens: pl.DataFrame) -> pl.DataFrame:
    """Character bigrams and trigrams of CJK runs: rows (doc, term).

    A run shorter than an n-gram gives none of that size (a single 图 gives no term).
    ``str.len_chars`` is UInt32: the number of n-grams is computed in Int64 and the
    shorter runs are filtered out first, so ``len - size + 1`` never wraps below zero.
    """
    runs = tokens.filter(pl.col("is_cjk")).select(
        "doc", run=pl.col("tok"), length=pl.col("tok").str.len_chars().cast(pl.Int64)
    )
    if runs.height == 0:
        return pl.DataFrame(schema={"doc": pl.UInt32, "term": pl.String})
    stop = list(cjk_stop_chars())
    parts = []
    for size in (2, 3):
        grams = (
            runs.filter(pl.col("length") >= size)
            .with_columns(start=pl.int_ranges(0, pl.col("length") - size + 1, dtype=pl.Int64))
            .explode("start")
            .drop_nulls("start")
            .select("doc", term=pl.col("run").str.slice(pl.col("start"), size))
        )
        parts.append(grams)
    pattern = "[" + "".join(sorted(stop)) + "]"
    return pl.concat(parts).filter(~pl.col("term").str.contains(pattern))


def _definitions(docs: pl.DataFrame, vocab: pl.DataFrame) -> pl.DataFrame:
    """Acronyms defined in each abstract: rows (doc, acronym, canonical, expansion_is_term)."""
    stops = list(stop_words())
    found = (
        docs.select("doc", d=pl.col("abstract").str.extract_all(_DEFINITION))
        .explode("d")
        .drop_nulls("d")
        .with_columns(
            words=pl.col("d").str.extract(r"^(.*?)\s*\([^()]*\)$", 1).str.split(" "),
            acronym=pl.col("d")
            .str.extract(r"\(([^()]*)\)$", 1)
            .str.replace(_ACRONYM_PLURAL, "${1}"),
        )
        .filter(pl.col("acronym").str.contains(r"\p{Lu}.*\p{Lu}"))
    )
    if found.height == 0:
        return pl.DataFrame(
            schema={
                "doc": pl.UInt32,
                "acronym": pl.String,
                "canonical": pl.String,
                "expansion_is_term": pl.Boolean,
            }
        )
    best = _shortest_matching_expansions(found, stops)
    return _expansion_terms(best, vocab)


def _shortest_matching_expansions(found: pl.DataFrame, stops: list[str]) -> pl.DataFrame:
    """Per (doc, acronym) of ``found`` (columns doc, words, acronym), the shortest run of
    words before the parenthesis whose initials spell the acronym (all words' initials
    or those of the words not in ``stops``): rows of ``found`` with ``cand`` (the words)."""
    letters_upper = pl.col("acronym").str.replace_all(r"[^\p{Lu}]", "").str.to_lowercase()
    letters_all = pl.col("acronym").str.replace_all(r"[^\p{L}]", "").str.to_lowercase()
    parts = pl.col("cand").list.join(" ").str.replace_all("-", " ").str.split(" ")
    initial = pl.element().str.slice(0, 1)
    candidates = (
        found.with_row_index("def")
        .with_columns(k=pl.int_ranges(1, pl.col("words").list.len() + 1))
        .explode("k")
        .with_columns(cand=pl.col("words").list.tail(pl.col("k")))
        .with_columns(parts=parts)
        .with_columns(
            all_initials=pl.col("parts").list.eval(initial).list.join("").str.to_lowercase(),
            content_initials=pl.col("parts")
            .list.eval(pl.element().filter(~pl.element().str.to_lowercase().is_in(stops)))
            .list.eval(initial)
            .list.join("")
            .str.to_lowercase(),
            first_lower=pl.col("cand").list.first().str.to_lowercase(),
        )
    )
    matches = candidates.filter(
        (
            (pl.col("all_initials") == letters_upper)
            | (pl.col("all_initials") == letters_all)
            | (pl.col("content_initials") == letters_upper)
            | (pl.col("content_initials") == letters_all)
        )
        & ~pl.col("first_lower").is_in(stops)
        & (letters_upper.str.len_chars() >= 2)
    )
    return matches.sort("doc", "acronym", "k", "def").unique(
        subset=["doc", "acronym"], keep="first", maintain_order=True
    )


def _expansion_terms(best: pl.DataFrame, vocab: pl.DataFrame) -> pl.DataFrame:
    """Rows (doc, acronym, canonical, expansion_is_term): the expansion in its term forms
    (``vocab``), or the acronym itself when the expansion is not a term."""
    # The expansion's words in their term forms (same tokens and vocabulary as the text).
    words = (
        best.select("doc", "acronym", expansion=pl.col("cand").list.join(" "))
        .with_columns(tok=pl.col("expansion").str.extract_all(TOKEN_PATTERN))
        .with_columns(n_words=pl.col("tok").list.len())
        .explode("tok")
        .with_columns(i=pl.int_range(pl.len()).over("doc", "acronym"))
        .join(vocab, on="tok", how="left")
        .with_columns(after_of=(pl.col("lower").shift(1).over("doc", "acronym") == "of"))
    )
    form = pl.when(pl.col("after_of")).then(pl.col("w_of")).otherwise(pl.col("w"))
    first_or_last = (pl.col("i") == 0) | (pl.col("i") == pl.col("n_words") - 1)
    word_ok = pl.col("ok") | (~first_or_last & pl.col("conn"))
    expansions = (
        words.sort("doc", "acronym", "i")
        .group_by("doc", "acronym", maintain_order=True)
        .agg(
            canonical=form.str.join(" "),
            valid=(word_ok.fill_null(False).all() & (pl.len() <= 3) & ~pl.col("generic").all()),
        )
    )
    return expansions.select(
        "doc",
        "acronym",
        canonical=pl.when(pl.col("valid")).then(pl.col("canonical")).otherwise(pl.col("acronym")),
        expansion_is_term=pl.col("valid"),
    )


def _documents_and_tokens(papers: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``papers`` (``paper_id``, ``abstract``) numbered as documents (``doc``, ``paper_id``:
    a string, or the integer it is; ``abstract``: a null one is empty), and their tokens
    (``doc``, ``tok``: matches of :data:`TOKEN_PATTERN`, in order)."""
    ids = pl.col("paper_id")
    docs = papers.select(
        ids if papers.schema["paper_id"].is_integer() else ids.cast(pl.String),
        pl.col("abstract").cast(pl.String).fill_null(""),
    ).with_row_index("doc")
    tokens = (
        docs.select("doc", tok=pl.col("abstract").str.extract_all(TOKEN_PATTERN))
        .explode("tok")
        .drop_nulls("tok")
    )
    return docs, tokens


def _alias_grams(aliases: pl.DataFrame, forms: pl.Series) -> pl.DataFrame:
    """The acronyms of :func:`_definitions` and their canonical terms as word n-grams:
    rows (doc, acronym: the position of the acronym's form, a, b, c: the canonical
    term's forms, expansion_is_term). An acronym that is no word form of the batch stands
    for no n-gram and is left out.

    Raises:
        ValueError: a canonical term is not one to three forms of the batch (it is built
            from them, so this is a fault of the rules, not of the text)."""
    words = aliases["canonical"].str.split(" ")
    # One cast of the acronyms and the canonical terms' words (each cast builds the
    # forms' hash table again).
    stacked = pl.concat(
        [aliases["acronym"], *[words.list.get(i, null_on_oob=True) for i in range(3)]]
    )
    positions = _form_codes(stacked, forms, strict=False)
    n = aliases.height
    coded = pl.DataFrame(
        {
            "doc": aliases["doc"],
            "acronym": positions.slice(0, n),
            "a": positions.slice(n, n),
            "b": positions.slice(2 * n, n),
            "c": positions.slice(3 * n, n),
            "expansion_is_term": aliases["expansion_is_term"],
            "words": words.list.len(),
        }
    ).filter(pl.col("acronym").is_not_null())
    found = sum(pl.col(name).is_not_null().cast(pl.UInt32) for name in "abc")
    if coded.filter((pl.col("words") > 3) | (found != pl.col("words"))).height:
        raise ValueError("an acronym's canonical term is not made of the batch's word forms")
    return coded.drop("words")


#: Documents whose n-grams are sorted together by :func:`_counted_word_grams` (measured
#: choice: docs/design.md, "Counting term n-grams").
_DOCS_PER_SORT = 4096
#: Fewest documents per range worth packing; with less room the n-grams are sorted as they
#: are (docs/design.md, "Counting term n-grams").
_MIN_DOCS_PER_SORT = 1024


def _counted_word_grams(grams: pl.DataFrame, forms: int, docs: int) -> pl.DataFrame:
    """Occurrences of each (doc, a, b, c) of ``grams``, sorted by doc then a, b, c (a
    missing form first): rows (doc, a, b, c, n).

    ``grams`` has one row per occurrence and ``from_acronym`` (the occurrence is an
    acronym standing for the term, its expansion). A term with occurrences of both kinds
    is counted once less: "Expansion (ACR)" is one mention, counted once by each side.

    ``forms`` is the batch's number of word forms, ``docs`` its number of documents; they
    decide how n-grams are packed into 64-bit sort keys (docs/design.md, "Counting term
    n-grams").
    """
    bits = forms.bit_length()
    room = 64 - 1 - 3 * bits  # bits left for the document
    span = min(1 << room, _DOCS_PER_SORT) if room >= 1 else 0
    if span >= docs and room >= 1:
        return _counted_packed(grams, bits, 0)
    if span < _MIN_DOCS_PER_SORT:
        ordered = grams.sort(_GRAM).with_row_index("i")
        changed = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in _GRAM)
        return _runs(ordered, ordered.filter(changed))
    ranges = grams.with_columns(range=pl.col("doc") // span).partition_by(
        "range", as_dict=True, include_key=False
    )
    return pl.concat(
        [_counted_packed(ranges[key], bits, int(key[0]) * span) for key in sorted(ranges)]
    )


def _counted_packed(grams: pl.DataFrame, bits: int, first: int) -> pl.DataFrame:
    """:func:`_counted_word_grams` of ``grams`` whose documents are ``first`` to
    ``first + 2**(63 - 3·bits) - 1``, each row packed into one 64-bit number."""

    def packed(name: str, shift: int) -> pl.Expr:
        return (pl.col(name).cast(pl.UInt64) + 1).fill_null(0) * (1 << shift)

    def unpacked(shift: int) -> pl.Expr:
        value = (pl.col("gram") // (1 << shift)) % (1 << bits)
        return pl.when(value == 0).then(None).otherwise(value - 1).cast(pl.UInt32)

    ordered = (
        grams.select(
            key=(pl.col("doc").cast(pl.UInt64) - first) * (1 << (3 * bits + 1))
            + packed("a", 2 * bits + 1)
            + packed("b", bits + 1)
            + packed("c", 1)
            + pl.col("from_acronym").cast(pl.UInt64)
        )
        .sort("key")
        .with_row_index("i")
        .with_columns(gram=pl.col("key") // 2, from_acronym=(pl.col("key") % 2).cast(pl.Boolean))
    )
    starts = ordered.filter(
        (pl.col("gram") != pl.col("gram").shift(1)).fill_null(True)
    ).with_columns(
        doc=(pl.col("gram") // (1 << (3 * bits)) + first).cast(pl.UInt32),
        a=unpacked(2 * bits),
        b=unpacked(bits),
        c=unpacked(0),
    )
    return _runs(ordered, starts)


def _runs(ordered: pl.DataFrame, starts: pl.DataFrame) -> pl.DataFrame:
    """The counts of :func:`_counted_word_grams` from the sorted n-grams (``i``: row
    number, ``from_acronym``) and the first row of each run (doc, a, b, c, i)."""
    acronyms = ordered["from_acronym"].cast(pl.Int64)
    before = (acronyms.cum_sum() - acronyms).gather(starts["i"])  # acronym rows before each run
    runs = starts.select(
        *_GRAM,
        n=(pl.col("i").shift(-1).fill_null(ordered.height) - pl.col("i")).cast(pl.Int64),
        acronyms=before.shift(-1).fill_null(int(acronyms.sum())) - before,
    )
    both = (pl.col("acronyms") > 0) & (pl.col("acronyms") < pl.col("n"))
    return runs.select(*_GRAM, n=pl.col("n") - both.cast(pl.Int64))


def _extract_batch(papers: pl.DataFrame) -> pl.DataFrame:
    docs, tokens = _documents_and_tokens(papers)
    vocab = _vocabulary(tokens)
    forms, coded = _word_forms(vocab)
    codes = _form_codes(tokens["tok"], vocab["tok"])
    words = pl.concat(
        [tokens.select("doc"), coded.select(pl.all().gather(codes))], how="horizontal"
    )
    grams = _word_grams(words)
    aliases = _definitions(docs, vocab)
    if aliases.height:
        # An acronym the abstract defines counts as the term it stands for.
        stands = _alias_grams(aliases, forms)
        grams = grams.join(
            stands.rename({"a": "ca", "b": "cb", "c": "cc"}),
            left_on=["doc", "a"],
            right_on=["doc", "acronym"],
            how="left",
            maintain_order="left",
        )
        hit = pl.col("ca").is_not_null() & pl.col("b").is_null()  # a unigram, the acronym
        grams = grams.select(
            "doc",
            *[pl.when(hit).then(f"c{name}").otherwise(name).alias(name) for name in "abc"],
            from_acronym=hit & pl.col("expansion_is_term"),
        )
    else:
        grams = grams.with_columns(from_acronym=pl.lit(False))
    counts = _counted_word_grams(grams, len(forms), docs.height)
    text = [pl.col(name).map_batches(forms.gather, return_dtype=pl.String) for name in "abc"]
    terms = counts.select("doc", term=pl.concat_str(text, separator=" ", ignore_nulls=True), n="n")
    cjk = _cjk_ngrams(tokens.with_columns(is_cjk=words["is_cjk"]))
    if cjk.height:
        # CJK n-grams are never word terms (no word form holds a CJK character), nor acronyms.
        cjk_counts = cjk.group_by("doc", "term").agg(n=pl.len().cast(pl.Int64))
        terms = pl.concat([terms, cjk_counts]).sort("doc", "term")
    # Documents are numbered in row order (``with_row_index``): a doc is its paper's row.
    return pl.DataFrame(
        {
            "paper_id": docs["paper_id"].gather(terms["doc"]),
            "term": terms["term"],
            "n": terms["n"].cast(pl.Int32),
        }
    )


def abstract_key(abstract: str) -> str:
    """16 hex digits of BLAKE2b-64 of a clean abstract's UTF-8: which text the terms are of.

    Not the paper id: abstracts differing only in case share a paper id, but their
    terms may differ (acronyms keep their case), and a paper's row keeps the text
    first seen.
    """
    return hashlib.blake2b(abstract.encode("utf-8"), digest_size=8).hexdigest()


def extract_terms(papers: pl.DataFrame, batch_size: int = BATCH_SIZE) -> pl.DataFrame:
    """Terms of each paper, with their number of occurrences.

    Args:
        papers: columns ``paper_id`` (str, unique; an integer column is kept as it is, as
            :func:`paperwatch.ingest.prepare.batch_terms` keys abstracts by number) and
            ``abstract`` (str, clean text as produced by
            :func:`paperwatch.ingest.clean.strip_markup`; null counts as empty). Other columns
            are ignored; a repeated ``paper_id`` keeps its first row.
        batch_size: papers processed per Polars batch (memory bound, not a result change).

    Returns:
        One row per (paper_id, term), sorted by paper_id then term, with columns
        ``paper_id`` (str, or the integer type given), ``term`` (str, canonical form, see
        the module docstring) and
        ``n`` (Int32, occurrences in that abstract, ≥ 1). A paper without terms has no
        row. Document frequency is the number of rows of a term.

    Raises:
        polars.exceptions.ColumnNotFoundError: ``paper_id`` or ``abstract`` is missing.
    """
    papers = (
        papers.select("paper_id", "abstract")
        .unique(subset="paper_id", keep="first", maintain_order=True)
        .sort("paper_id")
    )
    out = [
        _extract_batch(papers.slice(offset, batch_size))
        for offset in range(0, papers.height, batch_size)
    ]
    if not out:
        ids = papers.schema["paper_id"]
        return pl.DataFrame(
            schema={
                "paper_id": ids if ids.is_integer() else pl.String,
                "term": pl.String,
                "n": pl.Int32,
            }
        )
    return pl.concat(out)  # batches are sorted slices of input sorted by paper_id


def document_frequencies(paper_terms: pl.DataFrame) -> pl.DataFrame:
    """Papers per term: from rows (paper_id, term, ...) to rows (term, papers), sorted by term."""
    return (
        paper_terms.group_by("term")
        .agg(papers=pl.col("paper_id").n_unique().cast(pl.Int64))
        .sort("term")
    )


def acronym_aliases(papers: pl.DataFrame, acronyms: list[str] | None = None) -> pl.DataFrame:
    """Acronyms the corpus defines, with the canonical term each one stands for.

    Runs the definition rule of :func:`extract_terms` ("Large Language Models (LLMs)",
    Schwartz & Hearst 2003) over the abstracts, and keeps, per acronym, the canonical
    expansion most papers define it with, when at least two thirds of the papers defining it
    agree and the expansion is itself a term (more than three words, or starting/ending with
    a stop word: no alias). A paper that uses the acronym bare ("LLM") can then be counted
    with the papers that write or define the expansion: the report does that (see
    ``sql/queries/term_document_frequencies.sql``).

    Args:
        papers: columns ``paper_id`` (str) and ``abstract`` (str, clean).
        acronyms: keep only these acronyms (term forms, singular: "LLM"); None for all.

    Returns:
        Columns acronym (str), canonical (str), papers (Int64: papers defining it so), one
        row per acronym, sorted by acronym.
    """
    empty = pl.DataFrame(schema={"acronym": pl.String, "canonical": pl.String, "papers": pl.Int64})
    if papers.height == 0:
        return empty
    docs, tokens = _documents_and_tokens(papers)
    found = _definitions(docs, _vocabulary(tokens)).unique(subset=["doc", "acronym", "canonical"])
    if acronyms is not None:
        found = found.filter(pl.col("acronym").is_in(acronyms))
    if found.height == 0:
        return empty
    per = found.group_by("acronym", "canonical", "expansion_is_term").agg(
        papers=pl.len().cast(pl.Int64)
    )
    best = (
        per.with_columns(total=pl.col("papers").sum().over("acronym"))
        .sort("acronym", "papers", "canonical", descending=[False, True, False])
        .unique(subset="acronym", keep="first", maintain_order=True)
    )
    return best.filter(
        pl.col("expansion_is_term")
        & (pl.col("canonical") != pl.col("acronym"))
        & (3 * pl.col("papers") >= 2 * pl.col("total"))
    ).select("acronym", "canonical", "papers")
