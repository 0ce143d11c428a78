"""A 10k-paper corpus gives the same tables and the same report as before the per-week
term cache, and the cached and plain trending paths give the same bytes.

Two ISO weeks of ``bench/corpus.py`` (seed 2026, 10 files of 1,000 abstracts, planted exact
and near duplicates) and a file of planted new, rising and falling terms each are ingested by the real flow, one week after the other, and the second
week's report is collected. :data:`EXPECTED` holds the sha256 of each table's contents and of
the report's HTML as the code before the cache (commit 3099a26) gives them: run this file as
a script (``python tests/test_output_10k.py``) to print them for the code checked out.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sys
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest

ROOT = Path(__file__).resolve().parent.parent

#: sha256 of each part as the code before the per-week cache gives it (see the docstring).
EXPECTED = {
    "papers": "8d43b91df64e37b1f16d700511093fed9e3a9a3450667eea726b6c50b2dfe343",
    "exact_duplicates": "c3aedbe0b4cf27cde25a9b7ef1a132ab37bd36e3b7244cf6b2fc383b55d6c7cc",
    "near_duplicates": "8e0878a8d3e083916ec43cfa0fa01364bf2397dbcbafc56e126eb431016c3d29",
    "trending_terms": "9c81b105aec576533732e66100488c85f3305a91634d34e755db0f43ed655c00",
    # The same report but for its count of checks: the papers suite's outside_paper
    # expectation adds one per loaded file (250 of 252 → 256 of 258).
    "report_html": "8fee3b8f01a0a6dfdfc973d30c347d018a2b2a25e16d1c003c6f6f2f0199bae4",
}

#: What each part reads (rows sorted; no run ids nor wall-clock times).
QUERIES = {
    "papers": "select paper_id, abstract, method_name, first_sentence, word_count, code_urls, "
    "venue, year, first_position, first_seen_week from papers order by all",
    "exact_duplicates": "select o.paper_id, f.name, o.position from paper_occurrences as o "
    "join listing_files as f using (file_id) where o.paper_id in (select paper_id from "
    "paper_occurrences group by paper_id having count(*) > 1) order by all",
    "near_duplicates": "select paper_id, duplicate_of, similarity, method from near_duplicates "
    "order by all",
    "trending_terms": "select * exclude (computed_at) from trending_terms order by all",
}


def _corpus_module() -> Any:  # bench/ is not a package
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_corpus"] = module
    spec.loader.exec_module(module)
    return module


#: Terms planted in a listing file of each week (papers in week 1, in week 2), so that the
#: second week has new, rising and falling terms (the generated corpus has none).
PLANTED = {"Quorilnet": (0, 60), "Merrowprune": (6, 60), "Zorblaxcode": (60, 4)}
_TOPICS = ("retrieval", "tokenization", "speech", "robotics", "graphs", "vision", "proteins")


def planted_listing(week: int) -> str:
    """A listing file (plain-text format) of the planted terms' papers of ``week`` (1 or 2)."""
    abstracts = [
        f"We study {term} for {_TOPICS[i % len(_TOPICS)]} on benchmark {week}-{i} with "
        f"{3 + i % 5} layers. Experiments on {10 + i} datasets show that {term} improves "
        f"accuracy by {i % 9 + 1} points while using {i % 4 + 2} times less memory."
        for term, counts in PLANTED.items()
        for i in range(counts[week - 1])
    ]
    return "ICML 2026\n\n" + "\n\n".join(abstracts) + "\n"


def ingest_two_weeks(work: Path) -> tuple[Path, str]:
    """The corpus ingested week by week into ``work/paperwatch.duckdb``; returns the
    database and the second ISO week. Needs a Prefect API (a test harness)."""
    from paperwatch.clock import iso_week, parse_as_of
    from paperwatch.flows.ingest import ingest_listings
    from paperwatch.settings import Settings

    manifest = _corpus_module().generate(
        work / "corpus",
        files=10,
        entries=1000,
        weeks=2,
        seed=2026,
        exact_rate=0.02,
        near_rate=0.05,
        start=date(2026, 10, 5),
    )
    folder, database = work / "listings", work / "paperwatch.duckdb"
    folder.mkdir()
    week = ""
    for index, part in enumerate(manifest["weeks"], start=1):
        for path in sorted((work / "corpus" / part["folder"]).glob("*.txt")):
            shutil.copy(path, folder / path.name)
        name = f"{900 + index}_{index:016x}.txt"
        (folder / name).write_text(planted_listing(index), encoding="utf-8")
        ingest_listings(str(folder), str(database), part["as_of"])
        week = iso_week(parse_as_of(part["as_of"], Settings().tz), Settings().tz)
    return database, week


def report_html(database: Path, week: str) -> bytes:
    """The HTML of ``week``'s report as ``paperwatch report`` renders it (stores its
    trending terms and related papers)."""
    from paperwatch import db
    from paperwatch.db.report_data import collect_report
    from paperwatch.report.render import render_report
    from paperwatch.settings import Settings

    with db.writer(database) as con:
        data = collect_report(con, week, Settings(database=database))
    return render_report(data).html.encode()


def digests(database: Path, html: bytes) -> dict[str, str]:
    """sha256 of each part of :data:`QUERIES` (rows as their repr) and of ``html``."""
    out = {}
    with duckdb.connect(str(database), read_only=True) as con:
        for name, sql in QUERIES.items():
            rows = con.execute(sql).fetchall()
            out[name] = hashlib.sha256(repr(rows).encode()).hexdigest()
    out["report_html"] = hashlib.sha256(html).hexdigest()
    return out


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_10k_tables_and_report_equal_the_code_before_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paperwatch.db import trends

    database, week = ingest_two_weeks(tmp_path)
    cached_html = report_html(database, week)
    found = digests(database, cached_html)
    with duckdb.connect(str(database), read_only=True) as con:
        cached_weeks = con.execute("select week from term_weeks order by week").fetchall()
        assert len(cached_weeks) == 2  # both weeks counted at ingest
        kinds = con.execute("select distinct direction from trending_terms order by 1").fetchall()
        assert kinds == [("falling",), ("new",), ("rising",)]
    monkeypatch.setattr(trends, "_cache_ready", lambda *_a, **_k: False)
    plain_html = report_html(database, week)
    assert plain_html == cached_html
    assert digests(database, plain_html) == found
    assert found == EXPECTED


if __name__ == "__main__":
    import tempfile

    from prefect.testing.utilities import prefect_test_harness

    with tempfile.TemporaryDirectory() as tmp, prefect_test_harness(server_startup_timeout=120):
        base, last_week = ingest_two_weeks(Path(tmp))
        for key, value in digests(base, report_html(base, last_week)).items():
            print(f'    "{key}": "{value}",')
