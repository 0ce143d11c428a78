"""The per-week cache of term counts: the trending section reads the same from it as from
paper_terms, and a week whose papers or terms changed is never read from it stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from paperwatch.analysis.terms import extract_terms
from paperwatch.db import reader, writer
from paperwatch.db import trends as trending
from paperwatch.db.term_weeks import cache_is_current, refresh_term_weeks, stale_term_weeks
from paperwatch.db.trends import (
    TrendingResult,
    store_new_paper_terms,
    trending_terms_for_week,
    update_paper_terms,
)
from paperwatch.resources import resource_dir
from paperwatch.settings import Settings
from tests.trend_sim import history_abstracts, simulate_history

from .test_terms import insert_papers

#: Papers that define an acronym and papers that use it bare, in this week and before, so
#: that the aliased counts (read from paper_terms on both paths) are exercised too.
DEFINE = "Large Language Models (LLMs) reason over long contexts with riserterm."
BARE = "An LLM agent plans tool calls."
#: Terms whose order as bytes differs from their order as letters (the cached counts are
#: sorted in Python, the plain ones by DuckDB).
UNICODE = "Ångström lasers meet Über networks, zebra grids and 大语言模型 alignment."


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(database=tmp_path / "pw.duckdb")


def history_rows() -> tuple[str, list[dict[str, object]]]:
    """A five-week history with new, rising and falling terms, and an acronym."""
    history = simulate_history(3, 200, vocabulary=800)
    rows = history_abstracts(history)
    for i, week in enumerate([*history.baseline, history.week]):
        rows += [{"paper_id": f"d{i}-{j}", "abstract": DEFINE, "week": week} for j in range(3)]
        rows += [{"paper_id": f"u{i}-{j}", "abstract": BARE, "week": week} for j in range(i)]
        rows += [
            {"paper_id": f"n{i}-{j}", "abstract": f"{UNICODE} Case {j}.", "week": week}
            for j in range(3 + i)
        ]
    return history.week, rows


def section_html(result: TrendingResult) -> str:
    env = Environment(
        loader=FileSystemLoader(resource_dir("templates")),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2")),
        undefined=StrictUndefined,
    )
    return env.get_template("_trending.html.j2").render(trending=result)


def spy_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the SQL files :mod:`paperwatch.db.trends` reads from now on."""
    names: list[str] = []
    read_sql = trending.read_sql

    def spy(kind: str, name: str) -> str:
        names.append(name)
        return read_sql(kind, name)

    monkeypatch.setattr(trending, "read_sql", spy)
    return names


def stored_trending(con: duckdb.DuckDBPyConnection, week: str) -> list[tuple[Any, ...]]:
    return con.execute(
        "select * exclude (computed_at) from trending_terms where week = ? "
        "order by direction, rank, term",
        [week],
    ).fetchall()


def cache_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(
        "select week, term, papers, paper_xor, coalesce(paper_sum, paper_xor::hugeint) "
        "from term_week_stats order by all"
    ).fetchall()


def counted_now(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """What the cache must hold: paper_terms counted per week and term now."""
    return con.execute(
        "select first_seen_week, term, count(*), bit_xor(hash(paper_id)), "
        "sum(hash(paper_id)::hugeint) from paper_terms group by all order by all"
    ).fetchall()


def definitions(con: duckdb.DuckDBPyConnection, cached: bool) -> list[tuple[Any, ...]]:
    """The cached acronym definitions, or what the papers give now."""
    if cached:
        sql = "select week, paper_id, acronym from term_week_definitions order by all"
    else:
        sql = (
            "select distinct first_seen_week, paper_id, regexp_replace(unnest("
            "regexp_extract_all(abstract, '\\(([A-Za-z0-9-]{2,12})\\)', 1)), "
            "'([A-Z0-9])s$', '\\1') from papers order by all"
        )
    return con.execute(sql).fetchall()


def test_cached_and_plain_paths_give_the_same_rows_and_html(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    week, rows = history_rows()
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)  # counts the weeks into the cache
        assert cache_is_current(con, sorted({str(r["week"]) for r in rows}))
        assert cache_rows(con) == counted_now(con)
        assert definitions(con, cached=True) == definitions(con, cached=False) != []
        plain = trending_terms_for_week(con, week, settings, use_cache=False)
        plain_stored = stored_trending(con, week)
        weeks = plain.baseline_weeks
        sizes = (plain.papers_week, plain.papers_baseline, 3, plain.aliases)
        counted = [
            trending._document_frequencies(con, week, weeks, *sizes, cached=c)
            for c in (False, True)
        ]
        assert counted[0].equals(counted[1])
        bounds = {"weeks": [*weeks, week], "first": min(weeks), "last": week}
        acronyms = [
            con.execute(trending.read_sql("queries", name), bounds).fetchall()
            for name in ("term_acronyms", "cached_term_acronyms")
        ]
        assert acronyms[0] == acronyms[1] and ("LLM",) in acronyms[0]
        assert {"ångström", "über", "zebra", "大语言"} <= set(counted[0]["term"])
        queries = spy_queries(monkeypatch)
        cached = trending_terms_for_week(con, week, settings)
        cached_stored = stored_trending(con, week)
    assert "cached_term_document_frequencies" in queries
    assert "cached_term_week_papers" in queries and "cached_term_weekly_papers" in queries
    assert "cached_term_acronym_definitions" in queries
    assert plain.new and plain.rising and plain.falling
    assert plain.aliases == {"LLM": "large language model"}
    assert cached == plain
    assert cached_stored == plain_stored and len(plain_stored) >= 3
    assert section_html(cached).encode() == section_html(plain).encode()


def test_example_papers_come_from_repeated_terms_when_there_are_enough(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Papers using a term most are found among the week's repeated terms when the term has
    ``per_term`` of them; otherwise (or for an aliased term) the plain query answers."""
    week = "2027-W10"
    rows = [
        {"paper_id": f"r{i:02d}", "abstract": f"Zorvex maps. Zorvex {'zorvex ' * (i % 3)}"
         f"scales to {i} nodes.", "week": week}
        for i in range(12)
    ] + [
        {"paper_id": f"q{i:02d}", "abstract": f"Quendal nets {i}. Zorvex once.", "week": week}
        for i in range(6)
    ]  # fmt: skip
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)
        repeated = con.execute(
            "select count(*) from term_week_repeats where term = 'zorvex'"
        ).fetchone()
        assert repeated == (12,)
        for terms, per_term, fast in (
            (["zorvex"], 3, True),
            (["zorvex"], 12, True),
            (["zorvex"], 13, False),  # 12 papers use it twice or more: one more is needed
            (["zorvex", "quendal net"], 2, False),  # never twice in a paper
        ):
            queries = spy_queries(monkeypatch)
            cached = trending._example_rows(con, week, terms, per_term, {}, True)
            assert ("term_examples" not in queries) is fast
            plain = trending._example_rows(con, week, terms, per_term, {}, False)
            assert cached == plain and plain
            monkeypatch.undo()


def test_a_first_week_reads_the_same_from_the_cache(settings: Settings) -> None:
    week, rows = history_rows()
    rows = [r for r in rows if r["week"] == week]
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)
        plain = trending_terms_for_week(con, week, settings, persist=False, use_cache=False)
        cached = trending_terms_for_week(con, week, settings, persist=False)
    assert plain.distinctive and not plain.has_baseline
    assert cached == plain
    assert section_html(cached).encode() == section_html(plain).encode()


def test_papers_stored_without_a_refresh_make_the_week_stale(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch loader stores terms without counting the week again: a reader then counts
    from paper_terms, a writer counts the week again first."""
    week, rows = history_rows()
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)
        extra = [
            {"paper_id": f"x{i}", "abstract": "Newterm and riserterm again.", "week": week}
            for i in range(30)
        ]
        insert_papers(con, extra)
        frame = pl.DataFrame(extra).select("paper_id", "abstract", first_seen_week="week")
        store_new_paper_terms(
            con, frame.select("paper_id", "first_seen_week"), extract_terms(frame)
        )
        assert [w.week for w in stale_term_weeks(con)] == [week]
        plain = trending_terms_for_week(con, week, settings, persist=False, use_cache=False)
    with reader(settings.database) as con:
        queries = spy_queries(monkeypatch)
        read_only = trending_terms_for_week(con, week, settings, persist=False)
        assert not any(q.startswith("cached_") for q in queries)  # stale: not read from it
    assert read_only == plain
    with writer(settings.database) as con:
        queries.clear()
        assert trending_terms_for_week(con, week, settings) == plain
        assert "cached_term_document_frequencies" in queries
        assert stale_term_weeks(con) == [] and cache_rows(con) == counted_now(con)


@pytest.mark.parametrize(
    "change",
    [
        # re-keyed: the same papers under other ids (the counts stay, the keys change)
        "update papers set paper_id = 'k' || paper_id where paper_id like 's4p0001%';"
        "update paper_terms set paper_id = 'k' || paper_id where paper_id like 's4p0001%';"
        "update paper_terms_extracted set paper_id = 'k' || paper_id where paper_id like 's4p0001%'",
        # terms extracted again (the extraction time changes)
        "update paper_terms_extracted set extracted_at = extracted_at + interval 1 second "
        "where paper_id = 's4p00003'",
        # a term row removed outside paperwatch
        "delete from paper_terms where rowid = "
        "(select max(rowid) from paper_terms where first_seen_week = '2027-W10')",
        # a week rebuilt without its papers
        "delete from paper_terms where first_seen_week = '2027-W09';"
        "delete from paper_terms_extracted where paper_id in "
        "(select paper_id from papers where first_seen_week = '2027-W09');"
        "delete from papers where first_seen_week = '2027-W09'",
        # a paper loaded whose terms are not extracted yet (its definition counts already)
        "insert into papers select * replace ('z1' as paper_id, "
        "'Graph Transformers (GTs) scale.' as abstract) from papers where paper_id = 's4p00003'",
    ],
    ids=["rekeyed", "extracted-again", "row-removed", "week-emptied", "paper-unextracted"],
)
def test_a_changed_week_is_counted_again_before_it_is_read(settings: Settings, change: str) -> None:
    week, rows = history_rows()
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)
        for statement in change.split(";"):
            con.execute(statement)
        stale = [w.week for w in stale_term_weeks(con)]
        assert stale and not cache_is_current(con, stale)
        plain = trending_terms_for_week(con, week, settings, persist=False, use_cache=False)
        assert refresh_term_weeks(con) == stale
        assert cache_rows(con) == counted_now(con)
        assert definitions(con, cached=True) == definitions(con, cached=False)
        repeats = "select week, term, paper_id, n from {} where n >= 2 order by all"
        assert (
            con.execute(repeats.format("term_week_repeats")).fetchall()
            == con.execute(
                repeats.format("paper_terms").replace("week,", "first_seen_week,")
            ).fetchall()
        )
        assert stale_term_weeks(con) == []
        assert trending_terms_for_week(con, week, settings, persist=False) == plain
        cached_weeks = {w for (w,) in con.execute("select week from term_weeks").fetchall()}
        weeks_now = con.execute("select distinct first_seen_week from papers").fetchall()
        assert cached_weeks == {w for (w,) in weeks_now}


def test_an_older_database_without_the_cache_reads_paper_terms(settings: Settings) -> None:
    week, rows = history_rows()
    with writer(settings.database) as con:
        insert_papers(con, rows)
        update_paper_terms(con)
        plain = trending_terms_for_week(con, week, settings, persist=False, use_cache=False)
        con.execute("drop table term_week_stats")
        con.execute("drop table term_weeks")
        assert not cache_is_current(con, [week])
        assert trending_terms_for_week(con, week, settings, persist=False) == plain
