"""Property-based tests: random Unicode through every pure stage never raises and stays small.

The pipeline of one file, as a worker runs it: bytes → decode and parse → clean
(:func:`paperwatch.ingest.files.prepare_file`) → the rows the suites check
(:func:`~paperwatch.ingest.frames.files_frame`, :func:`~paperwatch.ingest.frames.entries_frame`) →
terms (:func:`~paperwatch.db.batches.batch_terms`) → shingles, MinHash, LSH bands and
near-duplicate pairs (:func:`~tests.near_duplicates.find_near_duplicates`).

Inputs mix CJK runs of one to three characters, emoji with zero-width joiners, combining
marks, right-to-left text, lone surrogates (written escaped, as invalid UTF-8 bytes, and
as ``\\ud800`` text), control characters, empty entries and 100 KB entries. Examples are
bounded and derandomised (the same examples every run).
"""

from __future__ import annotations

import os
import resource
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperwatch.analysis.duplicates import PaperText, shingle_hash_sets, shingles
from paperwatch.db.batches import batch_terms
from paperwatch.ingest.files import ListingFileStat, prepare_file
from paperwatch.ingest.frames import entries_frame, files_frame
from paperwatch.settings import DedupSettings
from tests.near_duplicates import find_near_duplicates

#: More memory than this (RSS growth of the test process in one example) is a failure.
MAX_RSS_GROWTH = 512 * 1024 * 1024

_PIECES = st.one_of(
    # CJK runs of 1-3 characters (Han, Hiragana, Katakana), alone or between words.
    st.text(st.sampled_from("图神经网络猫狗见附录のはカタナー"), min_size=1, max_size=3),
    st.sampled_from(
        [
            "👩\u200d💻",  # emoji with a zero-width joiner
            "👨\u200d👩\u200d👧\u200d👦",
            "🏳️\u200d🌈",
            "e\u0301",  # combining acute
            "a\u0308\u0323",
            "\u0301",  # a combining mark with nothing before it
            "שלום עולם",  # Hebrew
            "نموذج لغوي كبير",  # Arabic
            "\u202eevil\u202c",  # right-to-left override
            "\\ud800",  # a lone surrogate, escaped as text
            "\ufeff",
            "\u00a0",
            "\t",
            "\r\n",
            "\n\n",
            "$k$",
            "\\emph{",
            "**LLM**",
            "(FCL)",
            "Federated Continual Learning (FCL)",
            "https://github.com/x/y",
            "x" * 41,
            "1.38×",
            "-",
            "'",
        ]
    ),
    st.text(st.characters(codec="utf-8"), max_size=12),
    st.sampled_from(["We", "propose", "models", "of", "to", "KV", "cache", "LLMs", "a"]),
)
_TEXT = st.lists(_PIECES, max_size=40).map(" ".join)
#: One entry of 0 to about 100 KB (a short text repeated).
_ENTRY = st.one_of(
    _TEXT,
    st.just(""),
    st.tuples(_TEXT, st.integers(1, 100_000)).map(
        lambda p: (p[0] or "图") * (p[1] // max(1, len(p[0] or "图")))
    ),
)


def _listing_bytes(entries: list[str], header: bool, surrogate: bool) -> bytes:
    text = "\n\n".join((["NeurIPS 2026 论文列表"] if header else []) + entries) + "\n"
    data = text.encode("utf-8")
    if surrogate:  # a lone surrogate written as (invalid) UTF-8 bytes: CESU-8
        data = (
            data[: len(data) // 2]
            + "\ud800".encode("utf-8", "surrogatepass")
            + data[len(data) // 2 :]
        )
    return data


def _rss() -> int:
    return int(psutil.Process(os.getpid()).memory_info().rss)


def _run_pipeline(tmp: Path, data: bytes) -> None:
    path = tmp / "001_0000000000000000.txt"
    path.write_bytes(data)
    stat = ListingFileStat(path=path, rel=path.name, size=len(data), mtime_ns=0)
    prepared = prepare_file(stat, data, len(data) + 1)
    files = files_frame([prepared], [])
    assert files.height == 1
    entries = entries_frame([prepared])
    assert entries.height == (len(prepared.entries) if prepared.is_text else 0)
    terms = batch_terms([prepared])
    assert terms["n"].min() is None or terms["n"].min() >= 1  # type: ignore[operator]
    papers = [
        PaperText(row["paper_id"], row["abstract"], datetime(2026, 11, 25, tzinfo=UTC))
        for row in entries.filter(entries["abstract"].is_not_null())
        .unique("paper_id", keep="first", maintain_order=True)
        .iter_rows(named=True)
    ]
    hashes = shingle_hash_sets([p.abstract for p in papers])
    for i, paper in enumerate(papers):
        assert len(hashes.set_of(i)) == len(shingles(paper.abstract))
    find_near_duplicates(papers, dedup=DedupSettings())


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    entries=st.lists(_ENTRY, max_size=6),
    header=st.booleans(),
    surrogate=st.booleans(),
)
def test_any_listing_goes_through_every_stage(
    tmp_path_factory: pytest.TempPathFactory, entries: list[str], header: bool, surrogate: bool
) -> None:
    before = _rss()
    _run_pipeline(tmp_path_factory.mktemp("prop"), _listing_bytes(entries, header, surrogate))
    assert _rss() - before < MAX_RSS_GROWTH


@settings(max_examples=80, derandomize=True, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=8))
def test_terms_and_shingles_of_any_text(texts: list[str]) -> None:
    import polars as pl

    from paperwatch.analysis.terms import extract_terms

    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    texts = [t.replace("\\ud800", "\ud800").encode("utf-8", "replace").decode() for t in texts]
    papers = pl.DataFrame({"paper_id": [f"p{i}" for i in range(len(texts))], "abstract": texts})
    terms = extract_terms(papers)
    assert set(terms["paper_id"]) <= set(papers["paper_id"])
    hashes = shingle_hash_sets(texts)
    assert len(hashes) == len(texts)
    assert [len(hashes.set_of(i)) for i in range(len(texts))] == [len(shingles(t)) for t in texts]
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert peak_after - peak_before < MAX_RSS_GROWTH


#: Pieces that make and break URLs: schemes in both cases, "://" without a scheme,
#: URLs inside URLs, and the characters that end one.
_URL_PIECE = st.sampled_from(
    [
        "http",
        "https",
        "HTTPS",
        "hTtP",
        "s",
        "://",
        ":/",
        "//",
        "x",
        ".org/",
        "/a?b=",
        " ",
        "\n",
        "<",
        ">",
        '"',
        "“",
        "{",
        "|",
        "\\",
        "^",
        "[",
        "]",
        "(",
        ")",
        ".",
        "é",
        "\u202e",
        "\x00",
    ]
)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.lists(_URL_PIECE, max_size=30).map("".join))
def test_url_scan_finds_what_the_url_pattern_finds(text: str) -> None:
    from paperwatch.ingest.clean import _URL, url_matches

    assert [m.span() for m in url_matches(text)] == [m.span() for m in _URL.finditer(text)]


_READ_TIME_PIECE = st.sampled_from(
    [
        "(",
        ")",
        " ",
        "  ",
        "4",
        "12",
        "1234",
        "min",
        "minute",
        "minutes",
        "s",
        "read",
        "Read",
        "x",
        ".",
    ]
)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(
    st.lists(st.lists(_READ_TIME_PIECE, min_size=1, max_size=12).map("".join), min_size=1),
    st.sampled_from(["", " (4 minute read)", "(12 min read)", "  (3 Minutes Read)", "(1 read)"]),
)
def test_read_time_title_is_found_from_the_last_parenthesis(lines: list[str], end: str) -> None:
    from paperwatch.ingest.parse import _READ_TIME, _TITLE_MAX_WORDS, _read_time_title

    lines = [*lines[:-1], lines[-1] + end]
    text = " ".join(lines)
    marker = _READ_TIME.search(text)  # the plain search, from every character
    title = text[: marker.start()].strip() if marker else ""
    fits = 0 < len(title.split()) <= _TITLE_MAX_WORDS and ". " not in title
    expected = title if marker and fits else None
    assert _read_time_title(lines) == expected
