"""Recompute paper identity in a stored database after the cleaning rules changed.

Migration ``sql/migrations/0003_identity_rules_v2.sql`` calls :func:`rekey_papers`:
entries stored under the earlier rules get the ``paper_id`` and clean fields that
:func:`paperwatch.ingest.clean.clean_abstract` gives them now, so that an upgraded database
holds the same rows as one built from scratch from the same files.

Only entries the new rules can change are read back: those holding a typographic
quote, apostrophe or dash, a PDF ligature-damage character, or starting with what
may be a list number or an "Abstract:" label (:data:`CANDIDATE_PATTERN`). For every other entry the old and
the new rules give the same text and id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import duckdb
import polars as pl

from paperwatch.ingest.clean import (
    FONT_SWITCHES,
    TYPOGRAPHIC_FOLDS,
    CleanAbstract,
    clean_abstract,
)
from paperwatch.ingest.ligatures import LIGATURE_DAMAGE

log = logging.getLogger(__name__)

#: RE2 pattern (DuckDB ``regexp_matches``) of the raw entries the v2 identity rules may
#: change: a character of :data:`~paperwatch.ingest.clean.TYPOGRAPHIC_FOLDS` or
#: :data:`~paperwatch.ingest.ligatures.LIGATURE_DAMAGE`, a leading digit, ``[``, ``(`` or ``#`` (a
#: list number), or a leading "Abstract"/"摘要" (a label: clean.strip_abstract_label).
CANDIDATE_PATTERN = (
    "["
    + "".join(chr(c) for c in TYPOGRAPHIC_FOLDS)
    + "".join(LIGATURE_DAMAGE)
    + r"]|^\s*[0-9\[(#\-–•·▪‣◦*+>\x{2460}-\x{2473}\x{2776}-\x{277f}]|^[\s*_]*(?i:abstract|摘要)"
)

_PAPER_COLUMNS = (
    "paper_id, abstract, abstract_raw, method_name, first_sentence, word_count, code_urls, "
    "venue, year, first_file_id, first_position, first_seen, first_seen_week"
)
#: Tables whose rows are derived from a paper's abstract and recomputed by the next run.
_DERIVED = (
    "paper_minhash",
    "paper_lsh_bands",
    "paper_lsh_pending",
    "paper_terms",
    "paper_terms_extracted",
)


@dataclass(frozen=True, slots=True)
class RekeyResult:
    """What :func:`rekey_papers` changed: occurrences re-keyed, paper rows rewritten
    (``papers_changed``), papers merged away into another, and derived rows dropped."""

    occurrences_changed: int
    papers_changed: int
    papers_merged: int
    derived_rows_dropped: int


def _cleaned(raw_texts: list[str]) -> dict[str, CleanAbstract]:
    return {raw: clean_abstract(raw) for raw in dict.fromkeys(raw_texts)}


#: RE2 pattern of the raw entries migration 0012 may change: a font switch of
#: :data:`~paperwatch.ingest.clean.FONT_SWITCHES` (``{\\em X}``), not followed by a letter.
FONT_SWITCH_PATTERN = r"\\(?:" + "|".join(FONT_SWITCHES) + r")(?:[^A-Za-z]|$)"


def rekey_font_switches(con: duckdb.DuckDBPyConnection) -> RekeyResult:
    """Migration 0012: :func:`rekey_papers` for the entries holding a font switch
    (:data:`FONT_SWITCH_PATTERN`), which the cleaner now drops (``{\\em X}`` → X)."""
    return rekey_papers(con, FONT_SWITCH_PATTERN, "font switches")


def rekey_papers(
    con: duckdb.DuckDBPyConnection,
    pattern: str = CANDIDATE_PATTERN,
    rules: str = "identity rules v2",
) -> RekeyResult:
    """Re-key stored entries and papers with the current cleaning rules.

    Only entries whose raw text matches ``pattern`` (RE2, default
    :data:`CANDIDATE_PATTERN`) are read back; ``rules`` names the change in the log line.

    Steps, on the caller's connection and inside its open transaction:

    1. ``paper_occurrences``: each candidate entry gets the ``paper_id`` and
       ``listed_number`` of ``clean_abstract(raw_text)``.
    2. ``papers``: each candidate paper's row is recomputed from its ``abstract_raw``;
       rows that now share a ``paper_id`` (a curly-quoted and a straight-quoted copy)
       become one: the earliest by (``first_seen``, ``first_file_id``,
       ``first_position``), as a fresh load would have kept it.
    3. Derived rows of every paper touched (old and new ids): MinHash signatures,
       LSH bands, near-duplicate pairs and terms are deleted; the next ingestion
       run sketches and extracts those papers again (they have no signature or
       terms row), finding the same pairs a fresh load finds.

    Args:
        con: a read-write connection inside a transaction (``db.apply_schema``).

    Returns:
        A :class:`RekeyResult` with the counts.

    Raises:
        duckdb.Error: a statement failed (the caller's transaction rolls back).
    """
    occurrences = con.execute(
        "select file_id, position, paper_id, raw_text from paper_occurrences "
        "where regexp_matches(raw_text, ?)",
        [pattern],
    ).fetchall()
    papers = con.sql(
        f"select {_PAPER_COLUMNS} from papers where regexp_matches(abstract_raw, $pattern)",
        params={"pattern": pattern},
    ).pl()
    cleaned = _cleaned([row[3] for row in occurrences] + papers["abstract_raw"].to_list())

    occurrences_changed = _update_occurrences(con, occurrences, cleaned)
    changed, old_ids = _recomputed_papers(papers, cleaned)
    if changed.height == 0:
        return RekeyResult(occurrences_changed, 0, 0, 0)
    merged, dropped = _replace_papers(con, changed, old_ids)
    result = RekeyResult(
        occurrences_changed=occurrences_changed,
        papers_changed=changed.height,
        papers_merged=merged,
        derived_rows_dropped=dropped,
    )
    log.info(
        "%s: %d entries and %d papers re-keyed, %d papers merged",
        rules,
        result.occurrences_changed,
        result.papers_changed,
        result.papers_merged,
    )
    return result


def _update_occurrences(
    con: duckdb.DuckDBPyConnection,
    occurrences: list[tuple[int, int, str, str]],
    cleaned: dict[str, CleanAbstract],
) -> int:
    """Give each ``(file_id, position, paper_id, raw_text)`` occurrence the ``paper_id`` and
    ``listed_number`` of its cleaned text; the number of rows updated."""
    updates = [
        (file_id, position, cleaned[raw].paper_id, cleaned[raw].listed_number)
        for file_id, position, old, raw in occurrences
        if cleaned[raw].paper_id != old or cleaned[raw].listed_number is not None
    ]
    if updates:
        upd = pl.DataFrame(  # noqa: F841 (read by DuckDB)
            updates,
            schema={"file_id": pl.Int32, "position": pl.Int32, "new_id": pl.String, "n": pl.Int32},
            orient="row",
        ).to_arrow()
        con.execute(
            "update paper_occurrences as o set paper_id = u.new_id, listed_number = u.n "
            "from upd as u where o.file_id = u.file_id and o.position = u.position"
        )
    return len(updates)


def _recomputed_papers(
    papers: pl.DataFrame, cleaned: dict[str, CleanAbstract]
) -> tuple[pl.DataFrame, list[str]]:
    """The rows of ``papers`` whose fields change when recomputed from ``abstract_raw``
    (recomputed), and their old ids (same order)."""

    def mapped(field: str) -> dict[str, object]:
        return {raw: getattr(c, field) for raw, c in cleaned.items()}

    raw = pl.col("abstract_raw")
    recomputed = papers.with_columns(
        paper_id=raw.replace_strict(mapped("paper_id")),
        abstract=raw.replace_strict(mapped("abstract")),
        method_name=raw.replace_strict(mapped("method_name"), return_dtype=pl.String),
        first_sentence=raw.replace_strict(mapped("first_sentence")),
        word_count=raw.replace_strict(mapped("word_count")).cast(pl.Int32),
    )
    changed_mask = (
        (recomputed["paper_id"] != papers["paper_id"])
        | (recomputed["abstract"] != papers["abstract"])
        | (recomputed["method_name"].fill_null("\x00") != papers["method_name"].fill_null("\x00"))
        | (recomputed["first_sentence"] != papers["first_sentence"])
        | (recomputed["word_count"] != papers["word_count"])
    )
    return recomputed.filter(changed_mask), papers.filter(changed_mask)["paper_id"].to_list()


def _replace_papers(
    con: duckdb.DuckDBPyConnection, changed: pl.DataFrame, old_ids: list[str]
) -> tuple[int, int]:
    """Replace the touched papers (old and new ids) by ``changed`` merged with rows already
    stored under a new id (the earliest first-seen row of each id is kept), and delete
    their derived rows; ``(papers merged away, derived rows deleted)``."""
    new_ids = changed["paper_id"].unique().to_list()
    touched = pl.DataFrame(  # noqa: F841 (read by DuckDB)
        {"paper_id": sorted(set(old_ids) | set(new_ids))}
    ).to_arrow()
    # Rows already stored under a new id that no candidate row had (the straight-quoted copy).
    others = con.sql(
        f"select {_PAPER_COLUMNS} from papers where list_contains($new, paper_id) "
        "and not list_contains($old, paper_id)",
        params={"new": new_ids, "old": old_ids},
    ).pl()
    merged = (
        pl.concat([changed, others.cast(dict(changed.schema))])
        .sort("first_seen", "first_file_id", "first_position")
        .unique("paper_id", keep="first", maintain_order=True)
    )
    kept = merged.to_arrow()  # noqa: F841 (read by DuckDB)
    con.execute("delete from papers where paper_id in (select paper_id from touched)")
    con.execute(f"insert into papers ({_PAPER_COLUMNS}) select {_PAPER_COLUMNS} from kept")
    dropped = 0
    for table in _DERIVED:
        row = con.execute(
            f"delete from {table} where paper_id in (select paper_id from touched)"
        ).fetchone()
        dropped += int(row[0]) if row else 0
    row = con.execute(
        "delete from near_duplicates where paper_id in (select paper_id from touched) "
        "or duplicate_of in (select paper_id from touched)"
    ).fetchone()
    dropped += int(row[0]) if row else 0
    return changed.height + others.height - merged.height, dropped
