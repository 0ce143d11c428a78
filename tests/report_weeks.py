"""Databases of several weeks for the report's tests, built in SQL without Prefect.

The seeds as they are loaded (three NeurIPS 2026 listings, 57 entries, 54 papers) in
one week, and listing files of earlier weeks holding abstracts written for these tests,
so that a report has a baseline (trending terms) and earlier papers (related papers).
Terms are extracted by :func:`paperwatch.db.trends.update_paper_terms`, as ingestion does.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from paperwatch import db
from paperwatch.clock import week_days
from paperwatch.db.trends import update_paper_terms
from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.parse import decode_listing, parse_listing

from .conftest import SEEDS

#: Abstracts of earlier weeks, written for these tests: varied topics, each a distinct
#: paper. A week's file holds them in this order.
EARLIER_ABSTRACTS = [
    "We propose QuantEdge, a post-training quantization method for large language models "
    "that keeps outlier channels in higher precision. On LLaMA models QuantEdge reaches "
    "4-bit weights with little loss of perplexity and halves the memory of the KV cache.",
    "Federated continual learning asks clients to learn new tasks without forgetting old "
    "ones. We present DriftGuard, a distillation scheme for federated continual learning "
    "that handles heterogeneous clients and task shifts across rounds.",
    "Graph neural networks struggle with long-range dependencies. We introduce HopMix, a "
    "rewiring strategy for graph neural networks that adds edges between distant nodes "
    "and improves node classification on heterophilous graphs.",
    "Diffusion models generate images by denoising. We propose StyleFlow, a diffusion "
    "stylization method that transfers the style of a reference image to chosen regions "
    "while preserving the structure of the content image.",
    "Medieval manuscripts hold marginal notes in many hands. This study catalogues the "
    "marginalia of twelve monastic libraries and dates them by ink and script, showing "
    "that readers annotated sermons more often than chronicles.",
    "Speculative decoding speeds up inference of large language models with a small draft "
    "model. We present DraftTune, which adapts the draft length online to the measured "
    "acceptance rate and raises decode throughput on long prompts.",
]


def _listing_file(
    con: Any, name: str, sequence: int | None, venue: str | None, week: str, entries: int
) -> int:
    monday, _ = week_days(week)
    seen = datetime.combine(monday, datetime.min.time(), UTC) + timedelta(hours=10)
    row = con.execute(
        """
        insert into listing_files (sha256, path, name, sequence_number, size_bytes, mtime_ns,
            venue, year, header, entry_count, entries_loaded, entries_quarantined, status,
            first_seen, first_seen_week, loaded_at, run_id)
        values ($sha, $name, $name, $sequence, 0, 0, $venue, $year, $header, $entries, $entries,
            0, 'loaded', $seen, $week, $seen, 'test')
        returning file_id
        """,
        {
            "sha": hashlib.sha256(name.encode()).hexdigest(),
            "name": name,
            "sequence": sequence,
            "venue": venue,
            "year": 2026 if venue else None,
            "header": f"{venue} 2026 论文列表" if venue else None,
            "entries": entries,
            "seen": seen,
            "week": week,
        },
    ).fetchone()
    return int(row[0])


def add_week(
    con: Any,
    week: str,
    abstracts: list[str],
    *,
    name: str,
    sequence: int | None = None,
    venue: str | None = "NeurIPS",
) -> list[str]:
    """Load ``abstracts`` as one listing file first seen in ``week``; returns the new
    papers' ids in order (an abstract already stored adds an occurrence only)."""
    file_id = _listing_file(con, name, sequence, venue, week, len(abstracts))
    monday, _ = week_days(week)
    seen = datetime.combine(monday, datetime.min.time(), UTC) + timedelta(hours=10)
    known = {r[0] for r in con.execute("select paper_id from papers").fetchall()}
    papers: list[dict[str, object]] = []
    occurrences: list[dict[str, object]] = []
    for position, raw in enumerate(abstracts, start=1):
        clean = clean_abstract(raw)
        occurrences.append(
            {"file_id": file_id, "position": position, "line": 2 * position + 1,
             "paper_id": clean.paper_id, "raw_text": raw, "run_id": "test"}
        )  # fmt: skip
        if clean.paper_id in known:
            continue
        known.add(clean.paper_id)
        papers.append(
            {
                "paper_id": clean.paper_id,
                "abstract": clean.abstract,
                "abstract_raw": raw,
                "method_name": clean.method_name,
                "first_sentence": clean.first_sentence,
                "word_count": clean.word_count,
                "code_urls": list(clean.code_urls),
                "venue": venue,
                "year": 2026 if venue else None,
                "first_file_id": file_id,
                "first_position": position,
                "first_seen": seen,
                "first_seen_week": week,
            }
        )
    if papers:
        frame = pl.DataFrame(papers, schema_overrides={"code_urls": pl.List(pl.String)})
        con.register("_papers", frame.to_arrow())
        con.execute("insert into papers by name select * from _papers")
        con.unregister("_papers")
    frame = pl.DataFrame(occurrences)
    con.register("_occurrences", frame.to_arrow())
    con.execute("insert into paper_occurrences by name select * from _occurrences")
    con.unregister("_occurrences")
    return [str(p["paper_id"]) for p in papers]


def add_seeds(con: Any, week: str) -> None:
    """The three seed listings, first seen in ``week``."""
    for path in sorted(SEEDS.glob("*.txt")):
        listing = parse_listing(decode_listing(path.read_bytes()))
        add_week(
            con,
            week,
            [e.text for e in listing.entries],
            name=path.name,
            sequence=int(path.name[:3]),
        )


def build(database: Path, weeks: dict[str, list[str]], *, seeds_week: str | None) -> Path:
    """A database with the seeds in ``seeds_week`` and ``weeks`` (ISO week → abstracts),
    each week one listing file ``9NN_<hex>.txt``; terms extracted for every paper."""
    with db.writer(database) as con:
        for index, (week, abstracts) in enumerate(sorted(weeks.items())):
            add_week(
                con, week, abstracts, name=f"{900 + index}_{'a' * 16}.txt", sequence=900 + index
            )
        if seeds_week:
            add_seeds(con, seeds_week)
        update_paper_terms(con)
    return database


_SUBJECTS = [
    "coral reef monitoring", "glacier retreat", "soil moisture", "bird migration",
    "urban heat islands", "river sediment", "wildfire smoke", "ocean salinity",
    "crop rotation", "pollinator decline", "groundwater recharge", "desert dunes",
    "mangrove carbon", "alpine lakes", "kelp forests", "permafrost thaw",
]  # fmt: skip
_SETTINGS = ["satellite images", "field surveys", "sensor networks", "citizen reports",
             "drone flights", "weather stations"]  # fmt: skip


def baseline_abstracts(week_index: int, count: int = 24) -> list[str]:
    """``count`` distinct abstracts about earth sciences (a vocabulary the seeds do not
    use), different for each ``week_index``: a baseline for the seeds' terms to rise
    against."""
    return [
        f"We study {_SUBJECTS[(i + week_index) % len(_SUBJECTS)]} from "
        f"{_SETTINGS[(i * 7 + week_index) % len(_SETTINGS)]} collected over {3 + i} seasons "
        f"in region {week_index}-{i}. The survey maps {_SUBJECTS[(i * 5) % len(_SUBJECTS)]} "
        f"across {10 + i} sites and reports how {_SUBJECTS[(i * 3 + 1) % len(_SUBJECTS)]} "
        f"changed between the first and the last season of observation."
        for i in range(count)
    ]
