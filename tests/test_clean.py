"""Cleaning abstracts: markup removal, identity, method names, first sentence, URLs."""

from __future__ import annotations

import pytest

from paperwatch.ingest.clean import (
    clean_abstract,
    count_words,
    extract_urls,
    find_method_name,
    paper_id_of,
    strip_markup,
)
from paperwatch.ingest.parse import decode_listing, parse_listing
from paperwatch.ingest.sentences import split_sentences

from .conftest import SEEDS


def seed_entries(name: str) -> list[str]:
    listing = parse_listing(decode_listing((SEEDS / name).read_bytes()))
    return [e.text for e in listing.entries]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (r"we \emph{integrate} it", "we integrate it"),
        (r"\textbf{SpectralKV} is fast", "SpectralKV is fast"),
        (r"a $1.38\times$ speed-up", "a 1.38× speed-up"),
        (r"code at \url{https://example.org/x_y}.", "code at https://example.org/x_y."),
        (r"We present \hsco{}, a benchmark", "We present hsco, a benchmark"),
        (
            r"Merging with Directional Alignment (\method{})",
            "Merging with Directional Alignment (method)",
        ),
        ("we introduce **Graph Cascades**, a strategy", "we introduce Graph Cascades, a strategy"),
        ("How fast *could* a model run", "How fast could a model run"),
        (r"gains of $+1.8\%$ and 30.3\%", "gains of +1.8% and 30.3%"),
        (r"$18\text{ - }32\\%$ lower", "18 - 32% lower"),
        (r"SP$^3$, a novel method", "SP^3, a novel method"),
        (r"Maximum \emph{a posteriori} restoration", "Maximum a posteriori restoration"),
        (r"\textbf{\emph{nested}} markup", "nested markup"),
        (r"with $\kappa\in[1.3,100]$ and $d\in[2,785]$", "with κ∈[1.3,100] and d∈[2,785]"),
        ("see https://github.com/a_b/c_d_e for code", "see https://github.com/a_b/c_d_e for code"),
        ("it costs $5 and $10 only", "it costs $5 and $10 only"),
        ("full\u3000width\uff21 text", "full widthA text"),
        ("  spaced \t out\n text ", "spaced out text"),
    ],
)
def test_strip_markup(raw: str, clean: str) -> None:
    assert strip_markup(raw) == clean


def test_unknown_macros_are_reported() -> None:
    names: set[str] = set()
    strip_markup(r"We present \hsco{}, and \method{} too", names)
    assert names == {"hsco", "method"}


def test_paper_id_ignores_wrapping_case_and_emphasis() -> None:
    a = clean_abstract("We propose **HJA**, a ranking framework for judges.")
    b = clean_abstract("we propose HJA,   a RANKING framework\tfor judges.")
    c = clean_abstract(r"We propose \textbf{HJA}, a ranking framework for judges.")
    assert a.paper_id == b.paper_id == c.paper_id
    assert len(a.paper_id) == 16 and int(a.paper_id, 16) >= 0
    assert paper_id_of("Another text.") != a.paper_id


#: Method names of some seed abstracts (all of them: tests/data/method_names/seed_labels.tsv).
SEED_METHODS = {
    ("000_5dc500fada0b6079.txt", 1): "HJA",
    ("000_5dc500fada0b6079.txt", 2): "Ha-FCL",
    ("000_5dc500fada0b6079.txt", 3): "Hawkeye",
    ("000_5dc500fada0b6079.txt", 4): "HSCO-Bench",
    ("000_5dc500fada0b6079.txt", 5): "Hestia",
    ("000_5dc500fada0b6079.txt", 6): "HERO",
    ("000_5dc500fada0b6079.txt", 7): "HALO-VGGT",
    ("000_5dc500fada0b6079.txt", 9): "GEAM",
    ("000_5dc500fada0b6079.txt", 10): "Graph Cascades",
    ("000_5dc500fada0b6079.txt", 11): "HoZO",
    ("000_5dc500fada0b6079.txt", 14): "GA-SRMC",
    ("000_5dc500fada0b6079.txt", 16): "REEF-GP",
    ("000_5dc500fada0b6079.txt", 18): "SVF",
    ("000_5dc500fada0b6079.txt", 19): "Merging with Directional Alignment",
    ("002_bf103a832150c832.txt", 1): "SPIRIT",
    ("002_bf103a832150c832.txt", 3): "SPHERE-JEPA",
    ("002_bf103a832150c832.txt", 8): "SPACE",
    ("002_bf103a832150c832.txt", 10): "SP-CACW",
    ("002_bf103a832150c832.txt", 11): "SP³",
    ("002_bf103a832150c832.txt", 13): "SOLE-R1",
    ("002_bf103a832150c832.txt", 19): "SMOG",
    ("003_13ddc4bea7a17f78.txt", 1): "StyleRoute",
    ("003_13ddc4bea7a17f78.txt", 2): "DACS",
    ("003_13ddc4bea7a17f78.txt", 4): "SpectralKV",
    ("003_13ddc4bea7a17f78.txt", 9): None,
    ("003_13ddc4bea7a17f78.txt", 13): "ScaleBITS",
    ("003_13ddc4bea7a17f78.txt", 15): "STAR",
}


@pytest.mark.parametrize(("key", "name"), sorted(SEED_METHODS.items(), key=lambda kv: kv[0]))
def test_seed_method_names(key: tuple[str, int], name: str | None) -> None:
    file, position = key
    assert clean_abstract(seed_entries(file)[position - 1]).method_name == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("We propose a novel framework for ranking.", None),
        ("We propose a new method that improves LLMs.", None),
        ("In this paper we present Foo-Net, a network.", "Foo-Net"),
        ("This paper presents BarBench, a benchmark.", "BarBench"),
        ("We describe things. Then we introduce a model called Zeta.", "Zeta"),
        ("Large language models (LLMs) are big. We propose an approach for LLMs.", None),
    ],
)
def test_method_name_rules(text: str, name: str | None) -> None:
    assert find_method_name(text) == name


def test_seed_cleaning_counts() -> None:
    entries = [
        clean_abstract(t)
        for n in sorted(p.name for p in SEEDS.glob("*.txt"))
        for t in seed_entries(n)
    ]
    assert len(entries) == 57
    assert len({e.paper_id for e in entries}) == 54
    assert sum(e.method_name is not None for e in entries) == 54
    assert all("\\" not in e.abstract and "**" not in e.abstract for e in entries)
    assert min(e.word_count for e in entries) == 112
    assert max(e.word_count for e in entries) == 265


def test_code_urls() -> None:
    raw = seed_entries("003_13ddc4bea7a17f78.txt")[3]
    assert clean_abstract(raw).code_urls == ("https://anonymous.4open.science/r/spectralKV-2FF7",)
    assert extract_urls("see (https://a.org/x) and https://b.org/y.") == (
        "https://a.org/x",
        "https://b.org/y",
    )
    assert extract_urls("javascript:alert(1) ftp://x.org") == ()


def test_first_sentence_and_abbreviations() -> None:
    assert split_sentences("We use e.g. Fig. 2 here. Next one. 3D is last.") == [
        "We use e.g. Fig. 2 here.",
        "Next one.",
        "3D is last.",
    ]
    first = clean_abstract(seed_entries("002_bf103a832150c832.txt")[0]).first_sentence
    assert first.startswith("Self-speculative decoding offers") and first.endswith(
        "offline profiling."
    )


def test_word_count_cjk() -> None:
    assert count_words("我们提出 a new model") == 7
    assert clean_abstract("我们提出了一种新的方法。").word_count == 12


@pytest.mark.parametrize(
    "hidden",
    [
        "ro\u200bbust",
        "ro\u00adbust",
        "ro\u2060bust",
        "\ufeffrobust",
        "ro\u202ebust\u202c",
        "ro\x1bbust",
    ],
)
def test_invisible_characters_do_not_make_a_new_paper(hidden: str) -> None:
    plain = clean_abstract("We propose FooNet, a robust learning method for graphs.")
    variant = clean_abstract(f"We propose FooNet, a {hidden} learning method for graphs.")
    assert variant.abstract == plain.abstract
    assert variant.paper_id == plain.paper_id


def test_overlong_names_are_not_method_names() -> None:
    assert find_method_name("We propose " + "Very " * 20 + "Long, a method.") is None


def test_unclosed_math_openers_are_read_once() -> None:
    """``\\(`` and ``\\[`` content stops at the next opener of its kind: a run of unclosed
    openers stays as written (each is not read to the end of the text again)."""
    assert strip_markup("\\(a \\(b\\) c") == "\\(a b c"
    assert strip_markup("\\[x\\] and \\[y") == "x and \\[y"
    run = "\\(" * 50_000 + "\\[" * 50_000
    assert strip_markup(run) == run


def test_a_sentence_of_intro_phrases_reads_a_bounded_tail() -> None:
    assert clean_abstract("We propose " * 10_000).method_name is None
    assert find_method_name("We propose FooNet" + " x" * 5_000 + ".") == "FooNet"


def test_a_markdown_link_target_ends_at_its_closing_parenthesis() -> None:
    assert extract_urls("see [code](https://github.com/q/r)and data") == ("https://github.com/q/r",)
    assert extract_urls("[c](https://x.org/a_(b)) and https://y.org/p).") == (
        "https://x.org/a_(b)",
        "https://y.org/p",
    )
