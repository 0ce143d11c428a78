"""Trending terms: extraction rules, scores, DuckDB storage and the report partials."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from paperwatch.analysis.terms import (
    document_frequencies,
    extract_terms,
    generic_terms,
    stop_words,
)
from paperwatch.analysis.trend_stats import score_trending_terms
from paperwatch.clock import previous_weeks, week_monday
from paperwatch.db import writer
from paperwatch.db.trends import (
    TrendingResult,
    trending_terms_for_week,
    update_paper_terms,
)
from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.parse import decode_listing, parse_listing
from paperwatch.ingest.sentences import split_sentences
from paperwatch.resources import resource_dir
from paperwatch.settings import Settings
from tests.trend_sim import fightin_words_z

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def terms_of(*abstracts: str) -> dict[str, dict[str, int]]:
    """{paper_id: {term: n}} for abstracts given ids p0, p1, ..."""
    df = pl.DataFrame(
        {"paper_id": [f"p{i}" for i in range(len(abstracts))], "abstract": list(abstracts)}
    )
    out: dict[str, dict[str, int]] = {f"p{i}": {} for i in range(len(abstracts))}
    for row in extract_terms(df).iter_rows(named=True):
        out[row["paper_id"]][row["term"]] = row["n"]
    return out


# --- extraction rules ----------------------------------------------------------


def test_plurals_merge_and_words_are_lowercased() -> None:
    terms = terms_of(
        "Transformers and transformer layers. Policies for queries. Losses and patches "
        "of boxes. The caches of indices and the matrices."
    )["p0"]
    assert terms["transformer"] == 2
    assert terms["transformer layer"] == 1
    assert terms["policy"] == 1 and terms["query"] == 1 and terms["patch"] == 1
    assert terms["loss"] == 1 and terms["box"] == 1
    assert terms["cache"] == 1 and terms["index"] == 1 and terms["matrix"] == 1
    assert "Transformers" not in terms and "transformers" not in terms


def test_acronyms_kept_as_written_and_their_plurals_merge() -> None:
    terms = terms_of("LLMs and an LLM use a KV cache. KV caches of GNNs grow with LoRA.")["p0"]
    assert terms["LLM"] == 2
    assert terms["KV cache"] == 2
    assert terms["GNN"] == 1
    assert terms["LoRA"] == 1
    assert "LLMs" not in terms and "llm" not in terms


def test_acronym_and_expansion_are_one_term_named_by_the_expansion() -> None:
    terms = terms_of(
        "Federated Continual Learning (FCL) requires clients to learn tasks. "
        "We revisit FCL under drift, and FCLs at scale.",
        "Reinforcement Learning from Human Feedback (RLHF) aligns models. RLHF is costly.",
        "Vision-Language Models (VLMs) caption images. VLMs see.",
    )
    # The definition counts once, then "FCL" and "FCLs": three mentions of one term.
    assert terms["p0"]["federated continual learning"] == 3
    assert "FCL" not in terms["p0"]
    # An expansion longer than three words is not a term: the acronym is the canonical form.
    assert terms["p1"]["RLHF"] == 2
    assert terms["p2"]["vision-language model"] == 2
    assert "VLM" not in terms["p2"]


def test_stop_words_generic_words_and_markup_are_not_terms() -> None:
    terms = terms_of(
        "We propose a novel method that achieves state-of-the-art results in the paper. "
        "emph textbf $x$ 1.38× 2024 https://github.com/org/repo and github.com/x/y. "
        "The proposed method of the model."
    )["p0"]
    assert terms == {}


def test_phrases_never_start_or_end_with_a_stop_word() -> None:
    terms = terms_of(
        "A mixture of experts routes tokens to speculative decoding heads in the KV cache."
    )["p0"]
    assert "mixture of experts" in terms  # a stop word inside is allowed
    assert "speculative decoding" in terms
    stops = stop_words()
    for term in terms:
        words = term.split(" ")
        assert words[0].lower() not in stops and words[-1].lower() not in stops, term


def test_phrases_do_not_cross_punctuation() -> None:
    terms = terms_of("graph search, neural decoding. Kernel methods")["p0"]
    assert "search neural" not in terms
    assert "decoding kernel" not in terms
    assert terms["graph search"] == 1 and terms["neural decoding"] == 1


def test_chinese_text_gives_character_bigrams_and_trigrams() -> None:
    terms = terms_of("大语言模型的推理加速")["p0"]
    assert terms == {
        "大语": 1, "大语言": 1, "语言": 1, "语言模": 1, "言模": 1, "言模型": 1,
        "模型": 1, "推理": 1, "推理加": 1, "理加": 1, "理加速": 1, "加速": 1,
    }  # fmt: skip


def test_extraction_is_deterministic_and_sorted() -> None:
    df = pl.DataFrame(
        {
            "paper_id": ["b", "a", "b"],
            "abstract": ["KV cache compression.", "Speculative decoding drafts.", "ignored"],
        }
    )
    first, second = extract_terms(df), extract_terms(df.reverse())
    assert first.columns == ["paper_id", "term", "n"]
    assert first["paper_id"].to_list() == sorted(first["paper_id"].to_list())
    assert first.filter(pl.col("paper_id") == "b")["term"].to_list() == [
        "KV", "KV cache", "KV cache compression", "cache", "cache compression", "compression",
    ]  # fmt: skip
    # Same rows whatever the input order, except the repeated id keeps its first row.
    assert first.equals(extract_terms(df.slice(0, 2)))
    assert second.filter(pl.col("paper_id") == "a").equals(first.filter(pl.col("paper_id") == "a"))


def test_terms_sort_as_their_text() -> None:
    """Terms are counted on the positions of their words in the batch's sorted word forms;
    the order that gives must be the text's (a space sorts before every word character)."""
    abstract = (
        "Graph neural networks, graph-based graphics and Graph Cascades (GC) with GPT-3.5; "
        "the café model of été and Ωmega methods. Large Language Models (LLMs) help LLMs. "
        "we'd use x-ray CT and mixture of experts, 图像分割方法 too."
    )
    terms = extract_terms(pl.DataFrame({"paper_id": ["p"], "abstract": [abstract]}))
    assert terms["term"].to_list() == sorted(terms["term"].to_list())
    assert {"graph neural network", "graph-based graphics", "GPT-3.5", "café", "ωmega",
            "graph cascade", "large language model", "mixture of experts", "图像"} <= set(terms["term"])  # fmt: skip
    counts = dict(zip(terms["term"], terms["n"], strict=True))
    # "Large Language Models (LLMs)" is one mention; the bare "LLMs" after it is another.
    assert counts["large language model"] == 2
    assert "LLM" not in counts and "GC" not in counts


def test_counting_is_the_same_without_room_to_pack() -> None:
    """With too many documents and word forms to pack every n-gram into one 64-bit
    number, the documents are counted in ranges, or (past two million forms) the four
    columns sorted as they are: the same counts, in the same order."""
    from paperwatch.analysis.terms import _counted_word_grams

    rng = random.Random(7)
    rows = []
    for _ in range(400):
        size = rng.randint(1, 3)
        words = [rng.randint(0, 5) for _ in range(size)] + [None] * (3 - size)
        rows.append((rng.randint(0, 9), *words, rng.random() < 0.2))
    grams = pl.DataFrame(
        rows,
        schema={"doc": pl.UInt32, "a": pl.UInt32, "b": pl.UInt32, "c": pl.UInt32,
                "from_acronym": pl.Boolean},
        orient="row",
    )  # fmt: skip
    packed = _counted_word_grams(grams, forms=6, docs=10)  # all documents at once
    # 4,096 documents at most a range: documents spread over 0-4500 are counted in two.
    spread = grams.with_columns(doc=pl.col("doc") * 500)
    in_ranges = _counted_word_grams(spread, forms=2**10, docs=5000)
    assert in_ranges.equals(packed.with_columns(doc=pl.col("doc") * 500))
    # 2**19 forms (20 bits each) leave 3 bits, 8 documents a range: too few, four columns.
    assert packed.equals(_counted_word_grams(grams, forms=2**19, docs=10))
    assert packed.equals(_counted_word_grams(grams, forms=2**31, docs=10))  # four columns
    # 2**20 forms (21 bits each) leave no bit for the document, even for one document.
    first = grams.filter(pl.col("doc") == 0)
    assert _counted_word_grams(first, forms=2**20, docs=1).equals(packed.filter(pl.col("doc") == 0))
    assert packed.height == grams.unique(["doc", "a", "b", "c"]).height
    # A term whose occurrences include both an acronym and its expansion counts one less.
    both = grams.group_by("doc", "a", "b", "c").agg(
        n=pl.len(), acronyms=pl.col("from_acronym").sum()
    )
    expected = both.select(
        "doc", "a", "b", "c",
        n=pl.col("n") - ((pl.col("acronyms") > 0) & (pl.col("acronyms") < pl.col("n"))).cast(pl.Int64),
    ).sort("doc", "a", "b", "c", nulls_last=False)  # fmt: skip
    assert packed.equals(expected)


def test_numeric_paper_ids_are_kept() -> None:
    abstracts = ["KV cache compression.", "Speculative decoding drafts."]
    by_name = extract_terms(pl.DataFrame({"paper_id": ["a", "b"], "abstract": abstracts}))
    by_number = extract_terms(
        pl.DataFrame({"paper_id": pl.Series([7, 9], dtype=pl.UInt64), "abstract": abstracts})
    )
    assert by_number.schema["paper_id"] == pl.UInt64
    assert by_number.with_columns(
        pl.col("paper_id").replace_strict({7: "a", 9: "b"}, return_dtype=pl.String)
    ).equals(by_name)
    empty = pl.DataFrame({"paper_id": pl.Series([], dtype=pl.UInt64), "abstract": []})
    assert extract_terms(empty).schema["paper_id"] == pl.UInt64


def test_word_lists_are_loaded() -> None:
    assert {"the", "of", "propose", "novel", "emph", "textbf"} <= stop_words()
    assert {"method", "result", "paper", "model", "data"} <= generic_terms()


# --- seeds: one week, no baseline ------------------------------------------------


def seed_papers() -> pl.DataFrame:
    rows: dict[str, dict[str, object]] = {}
    for path in sorted(SEEDS.glob("*.txt")):
        for entry in parse_listing(decode_listing(path.read_bytes())).entries:
            clean = clean_abstract(entry.text)
            rows.setdefault(
                clean.paper_id,
                {
                    "paper_id": clean.paper_id,
                    "abstract": clean.abstract,
                    "method_name": clean.method_name,
                    "first_sentence": clean.first_sentence,
                },
            )
    return pl.DataFrame(list(rows.values()))


def test_seed_terms() -> None:
    papers = seed_papers()
    assert papers.height == 54
    df = document_frequencies(extract_terms(papers))
    papers_of = dict(zip(df["term"], df["papers"], strict=True))
    assert papers_of["large language model"] == 11
    assert papers_of["LLM"] == 2
    assert papers_of["KV cache"] == 2
    assert papers_of["federated continual learning"] == 2
    stops = stop_words()
    for term in papers_of:
        assert term.lower() not in stops, term
        assert not ({"$", "\\", "{", "}", "*"} & set(term)), term
        assert not {"emph", "textbf", "url", "http", "https"} & set(term.lower().split()), term
        assert not term.replace(".", "").isdigit(), term


def insert_papers(con: duckdb.DuckDBPyConnection, rows: list[dict[str, object]]) -> None:
    """Insert papers rows (paper_id, abstract, week, and optionally method_name, first_sentence)."""
    frame = pl.DataFrame(
        [
            {
                "paper_id": r["paper_id"],
                "abstract": r["abstract"],
                "abstract_raw": r["abstract"],
                "method_name": r.get("method_name"),
                "first_sentence": r.get("first_sentence") or split_sentences(str(r["abstract"]))[0],
                "word_count": len(str(r["abstract"]).split()),
                "code_urls": [],
                "venue": "NeurIPS",
                "year": 2026,
                "first_file_id": 1,
                "first_position": i + 1,
                "first_seen": datetime.combine(
                    week_monday(str(r["week"])), datetime.min.time(), UTC
                ),
                "first_seen_week": r["week"],
            }
            for i, r in enumerate(rows)
        ],
        schema_overrides={"code_urls": pl.List(pl.String), "method_name": pl.String},
    )
    con.register("_rows", frame.to_arrow())
    con.execute("insert into papers by name select * from _rows")
    con.unregister("_rows")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(database=tmp_path / "pw.duckdb")


def test_seed_week_has_no_baseline_and_lists_distinctive_terms(settings: Settings) -> None:
    papers = seed_papers().with_columns(week=pl.lit("2026-W48"))
    with writer(settings.database) as con:
        insert_papers(con, papers.to_dicts())
        assert update_paper_terms(con) == 54
        assert update_paper_terms(con) == 0  # idempotent
        result = trending_terms_for_week(con, "2026-W48", settings)
        stored = con.execute(
            "select direction, count(*) from trending_terms where week = '2026-W48' group by all"
        ).fetchall()
        per_term = dict(
            con.execute(
                "select term, papers from weekly_term_counts where week = '2026-W48' and term in "
                "('KV cache', 'federated continual learning', 'large language model', 'LLM')"
            ).fetchall()
        )
    assert result.has_baseline is False
    assert result.baseline_weeks == ["2026-W44", "2026-W45", "2026-W46", "2026-W47"]
    assert (result.papers_week, result.papers_baseline) == (54, 0)
    assert result.new == result.rising == result.falling == []
    # At most ten distinctive terms (docs/terms.md), not the fifteen most frequent words.
    assert len(result.distinctive) == 10
    assert [r.rank for r in result.distinctive] == list(range(1, 11))
    assert all(1 <= len(r.examples) <= 3 for r in result.distinctive)
    assert stored == [("distinctive", 10)]
    # "LLM" is defined as "large language model(s)" by seed papers: counted together in the
    # report (12 papers), apart in paper_terms (11 and 2).
    assert result.aliases["LLM"] == "large language model"
    assert result.distinctive[0].term == "large language model"
    assert result.distinctive[0].papers_week == 12
    assert per_term == {
        "KV cache": 2, "federated continual learning": 2, "large language model": 11, "LLM": 2,
    }  # fmt: skip


# --- synthetic multi-week history -------------------------------------------------

WEEKS = ["2026-W51", "2026-W52", "2026-W53", "2027-W01", "2027-W02"]
PLANTED = [
    "We study speculative decoding.",
    "Speculative decoding drafts tokens cheaply.",
    "Faster speculative decoding helps.",
    "Our speculative decoding verifier is exact.",
]
SYLLABLES = ["ka", "lo", "mi", "ru", "te", "vo", "zan", "pel", "dor", "qui", "sen", "bra"]


def synthetic_history(papers_per_week: int = 100) -> list[dict[str, object]]:
    """Five ISO weeks across a year end. In the last week: "speculative decoding" rises from
    1 paper per week (1 %) to 20 (20 %); "graph neural network" is in 10 % of every week;
    "zanzibar quokka" is in a single paper. The rest is random filler words."""
    rng = random.Random(5)
    vocab = sorted({a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES})[:400]
    rows: list[dict[str, object]] = []
    for w, week in enumerate(WEEKS):
        last = week == WEEKS[-1]
        for i in range(papers_per_week):
            sentences = [" ".join(rng.sample(vocab, 5)).capitalize() + "." for _ in range(3)]
            if i < (20 if last else 1):
                sentences.insert(i % 3, PLANTED[i % len(PLANTED)])
            if 50 <= i < 60:
                sentences.append("A graph neural network helps.")
            if last and i == 99:
                sentences.append("The zanzibar quokka appears.")
            rows.append(
                {"paper_id": f"w{w}p{i:03d}", "abstract": " ".join(sentences), "week": week,
                 "method_name": f"M{w}{i}" if i % 2 else None}
            )  # fmt: skip
    return rows


def test_previous_iso_weeks_cross_year_boundaries() -> None:
    assert previous_weeks("2027-W01", 5) == [
        "2026-W49", "2026-W50", "2026-W51", "2026-W52", "2026-W53",
    ]  # fmt: skip
    assert previous_weeks("2026-W01", 1) == ["2025-W52"]
    assert previous_weeks("2027-W02", 4) == WEEKS[:4]
    with pytest.raises(ValueError):
        previous_weeks("2025-W53", 1)  # 2025 has 52 ISO weeks
    with pytest.raises(ValueError):
        previous_weeks("2026-48", 1)


def test_planted_phrase_rises_first(settings: Settings) -> None:
    with writer(settings.database) as con:
        insert_papers(con, synthetic_history())
        assert update_paper_terms(con) == 500
        result = trending_terms_for_week(con, "2027-W02", settings)
        again = trending_terms_for_week(con, "2027-W02", settings)
        stored = con.execute(
            "select term, papers_week, papers_baseline, rank from trending_terms "
            "where week = '2027-W02' and direction = 'rising' and rank = 1"
        ).fetchall()
    assert isinstance(result, TrendingResult)
    assert result.has_baseline is True
    assert result.baseline_weeks == WEEKS[:4]
    assert (result.papers_week, result.papers_baseline) == (100, 400)
    top = result.rising[0]
    assert (top.term, top.rank, top.papers_week, top.papers_baseline) == (
        "speculative decoding", 1, 20, 4,
    )  # fmt: skip
    assert (top.rate_week, top.rate_baseline) == (0.2, 0.01)
    assert top.new_this_week is False and top.effect == "×18.1"
    assert top.q_value is not None and top.q_value < 1e-6
    # The sub-terms "speculative" and "decoding" are in exactly the same papers: dropped.
    shown = [r.term for r in result.shown]
    assert "speculative" not in shown and "decoding" not in shown
    assert [e.paper_id for e in top.examples] == ["w4p000", "w4p001", "w4p002"]
    assert top.examples[1].method_name == "M41"
    assert top.examples[0].first_sentence.endswith(".")
    assert [e.sentence for e in top.examples] == [
        "We study speculative decoding.",
        "Speculative decoding drafts tokens cheaply.",
        "Faster speculative decoding helps.",
    ]
    # A steady term and a single-paper term are not shown; nothing but the planted phrase
    # and the phrases of the three planted sentences no baseline paper has (5 papers each).
    assert [(r.term, r.also) for r in result.new] == [
        ("decoding draft token", ("speculative decoding draft",)),
        ("faster speculative decoding", ()),
        ("speculative decoding verifier", ()),
    ]
    assert [r.term for r in result.rising] == ["speculative decoding"] and result.falling == []
    assert "graph neural network" not in shown
    assert "zanzibar quokka" not in shown and "quokka" not in shown
    assert stored == [("speculative decoding", 20, 4, 1)]
    assert again == result  # deterministic


def test_support_filter_in_sql_keeps_every_row_the_scores_would_keep(settings: Settings) -> None:
    """The document-frequency query drops terms that cannot pass min_support; scoring the
    complete frequencies (computed here with Polars) must give the same rows."""
    with writer(settings.database) as con:
        insert_papers(con, synthetic_history())
        update_paper_terms(con)
        result = trending_terms_for_week(con, "2027-W02", settings)
        terms = con.sql("select paper_id, term, n, first_seen_week from paper_terms").pl()
        stored = con.execute(
            "select term, direction, papers_week, papers_baseline from trending_terms "
            "where week = '2027-W02' order by direction, rank"
        ).fetchall()
    cfg = settings.trending
    week = terms.filter(pl.col("first_seen_week") == "2027-W02")
    baseline = (
        terms.filter(pl.col("first_seen_week").is_in(WEEKS[:4]))
        .group_by("term", week="first_seen_week")
        .agg(papers=pl.len())
    )
    full = score_trending_terms(
        document_frequencies(week),
        baseline,
        100,
        dict.fromkeys(WEEKS[:4], 100),
        cfg.min_support,
        fdr=cfg.fdr,
    )
    assert result.tested > 0
    # Every reported term is shown, or listed with a shown term found in the same papers.
    shown = {(t, r.direction) for r in result.shown for t in (r.term, *r.also)}
    assert shown == set(full.select("term", "kind").iter_rows())
    assert stored == [
        (r.term, r.direction, r.papers_week, r.papers_baseline)
        for r in sorted(result.shown, key=lambda r: (r.direction, r.rank))
    ]


def test_fightin_words_z_kept_for_the_simulator() -> None:
    # Monroe et al. with α0 = 100, α = 100 · 24/500 = 4.8, full delta-method variance:
    # δ = ln(24.8/175.2) − ln(8.8/491.2); σ² = 1/24.8 + 1/175.2 + 1/8.8 + 1/491.2.
    z = fightin_words_z(np.array([20]), np.array([4]), 100, 400, 100.0)
    assert z[0] == pytest.approx(5.140262, abs=1e-6)


# --- report partials --------------------------------------------------------------


@pytest.fixture
def env() -> Environment:
    return Environment(
        loader=FileSystemLoader(resource_dir("templates")),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2")),
        undefined=StrictUndefined,
    )


def test_partials_render_trends_and_escape(settings: Settings, env: Environment) -> None:
    rows = synthetic_history()
    rows[0]["abstract"] = (
        str(rows[0]["abstract"]) + " <script>alert(1)</script> speculative decoding."
    )
    rows[400]["abstract"] = str(rows[400]["abstract"]).replace(
        "We study speculative decoding.", "We study <b>bold</b> & speculative decoding."
    )
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)
        result = trending_terms_for_week(con, "2027-W02", settings, persist=False)
    html = env.get_template("_trending.html.j2").render(trending=result)
    text = env.get_template("_trending.txt.j2").render(trending=result)
    assert "Rising" in html and "speculative decoding" in html
    # The example quotes the sentence that uses the term, escaped.
    assert "We study &lt;b&gt;bold&lt;/b&gt; &amp; speculative decoding." in html
    assert "<script" not in html and "<svg" not in html.lower()
    assert 'width="100%"' in html and "bgcolor=" in html
    assert "trends start next week" not in html
    assert "  1. speculative decoding — 20 papers, 1.0% -> 20.0%, ×18.1, q < 0.001  [" in text
    assert "    - We study <b>bold</b> & speculative decoding." in text


def test_partials_render_the_first_week_and_an_empty_week(
    settings: Settings, env: Environment
) -> None:
    papers = seed_papers().with_columns(week=pl.lit("2026-W48"))
    with writer(settings.database) as con:
        insert_papers(con, papers.to_dicts())
        update_paper_terms(con)
        result = trending_terms_for_week(con, "2026-W48", settings, persist=False)
        empty = trending_terms_for_week(con, "2026-W40", settings, persist=False)
    html = env.get_template("_trending.html.j2").render(trending=result)
    text = env.get_template("_trending.txt.j2").render(trending=result)
    assert max(len(line) for line in text.splitlines()) <= 80
    text = " ".join(text.split())  # the text part is wrapped at 78 columns
    for out in (html, text):
        assert "First week" in out and "trends start next week" in out
        assert "Rising" not in out and "Falling" not in out
        assert result.distinctive[0].term in out
    assert "no terms to show" in env.get_template("_trending.txt.j2").render(trending=empty)
