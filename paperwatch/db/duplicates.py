"""The database side of near-duplicate detection: stored signatures, band keys, pairs.

Tables: ``paper_minhash`` (signatures), ``paper_lsh_bands`` (band keys),
``paper_lsh_pending`` (papers not yet compared) and ``near_duplicates`` (pairs of method
:data:`~paperwatch.analysis.duplicates.METHOD`). The maths is
:mod:`paperwatch.analysis.duplicates`; statements are in ``sql/queries/``. Several read
an Arrow table held in a local variable of the calling function (``wanted``, ``found``,
``new_minhash``, ``new_bands``) through DuckDB's replacement scan.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from paperwatch.analysis.duplicates import (
    BUCKET_ANCHORS,
    METHOD,
    VERIFY_PAIRS,
    NearDuplicate,
    PaperText,
    Sketch,
    agreement_floor,
    lsh_params,
    plausible_pairs,
    signature_scheme,
    sketch_papers,
    verify_in_lots,
)
from paperwatch.db import read_sql, transaction
from paperwatch.settings import DedupSettings, Settings

#: Band keys hashed per candidate query (:func:`_candidates`): a backfill of a million
#: papers (21 million band keys) is compared seven bands at a time.
CANDIDATE_BAND_ROWS = 7_000_000
#: Share of the sketched papers pending from which :func:`_candidates` ranks every shared
#: bucket rather than finding those the pending papers touch (crossover measured in
#: docs/design.md, "Near-duplicates in the database").
BACKFILL_SHARE = 0.25


def _run(con: duckdb.DuckDBPyConnection, name: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Rows of ``sql/queries/<name>.sql`` as tuples. Call it where the Arrow tables the
    statement reads are local variables: DuckDB's replacement scan looks there."""
    return con.execute(read_sql("queries", name), params).fetchall()


def _drop_stale_signatures(con: duckdb.DuckDBPyConnection, scheme: str) -> bool:
    """Delete every signature and band key when some were made with another scheme
    (all papers are then sketched again); True when it did."""
    rows = _run(con, "stale_signature_count", {"scheme": scheme})
    rebuild = bool(rows and rows[0][0])
    if rebuild:
        _run(con, "drop_signatures")
    return rebuild


def _papers_to_sketch(
    con: duckdb.DuckDBPyConnection,
    paper_ids: Collection[str] | None = None,
    signed: Collection[str] = (),
) -> list[PaperText]:
    """Papers without a signature, by paper id: all of them, or those of ``paper_ids``.

    With ``paper_ids`` only their rows are read, and the papers of ``signed`` (whose
    signature is given) get ``abstract == ""``: it is read back (:func:`_papers`) for the
    few in a candidate pair.
    """
    if paper_ids is not None:
        wanted = pa.table({"paper_id": pa.array(sorted(set(paper_ids)), pa.string())})  # noqa: F841
        rows = con.execute(read_sql("queries", "unsigned_papers_of_ids")).fetchall()
        given = set(signed)
        unsigned = [pid for pid, _ in rows if pid not in given]
        read = _papers(con, unsigned) if unsigned else {}
        return [read.get(pid) or PaperText(pid, "", seen) for pid, seen in rows]
    first = _run(con, "first_unsigned_rowid")
    if not first or first[0][0] is None:
        return []
    rows = _run(con, "unsigned_papers_from", {"first": first[0][0]})
    return [PaperText(pid, text, seen) for pid, text, seen in rows]


def _store_sketch(
    con: duckdb.DuckDBPyConnection, sketch: Sketch, scheme: str, computed_at: datetime
) -> None:
    num_perm = sketch.signatures.shape[1]
    signatures = pa.FixedSizeListArray.from_arrays(
        pa.array(sketch.signatures.reshape(-1), pa.uint32()), num_perm
    ).cast(pa.list_(pa.uint32()))
    new_minhash = pa.table({"paper_id": sketch.paper_ids, "signature": signatures})  # noqa: F841
    new_bands = sketch.bands().to_arrow()  # noqa: F841
    con.execute(read_sql("queries", "insert_paper_minhash"), {"scheme": scheme, "at": computed_at})
    con.execute(read_sql("queries", "insert_paper_lsh_bands"))


def _candidates(
    con: duckdb.DuckDBPyConnection,
    bands: int,
    pending: int,
    stored: int,
    anchors: int = BUCKET_ANCHORS,
) -> list[tuple[str, str]]:
    """Sorted unordered candidate pairs of the ``pending`` papers of ``paper_lsh_pending``
    against the band keys of all ``stored`` papers (``bands`` bands each;
    ``sql/queries/near_duplicate_candidates.sql``, with
    :func:`~paperwatch.analysis.duplicates.candidate_pairs`' rule for buckets of more than
    ``anchors``).

    When at least :data:`BACKFILL_SHARE` of the papers are pending, every shared bucket is
    ranked (the lines ending ``-- touched`` are left out); a query covers about
    :data:`CANDIDATE_BAND_ROWS` hashed keys.
    """
    sql = read_sql("queries", "near_duplicate_candidates")
    backfill = pending >= BACKFILL_SHARE * stored
    if backfill:
        sql = "\n".join(line for line in sql.splitlines() if not line.endswith("-- touched"))
    hashed = stored if backfill else pending
    per_query = max(1, min(bands, CANDIDATE_BAND_ROWS // max(hashed, 1)))
    pairs: set[tuple[str, str]] = set()
    for first in range(0, bands, per_query):
        last = min(bands, first + per_query) - 1
        found = con.execute(sql, {"first": first, "last": last, "anchors": anchors}).fetchall()
        pairs.update((x, y) for x, y in found)
    return sorted(pairs)


def _papers(con: duckdb.DuckDBPyConnection, paper_ids: Collection[str]) -> dict[str, PaperText]:
    wanted = pa.table({"paper_id": pa.array(sorted(paper_ids), pa.string())})  # noqa: F841
    rows = con.execute(read_sql("queries", "paper_texts")).fetchall()
    return {pid: PaperText(pid, text, seen) for pid, text, seen in rows}


def _store_pairs(
    con: duckdb.DuckDBPyConnection,
    pairs: Sequence[NearDuplicate],
    detected_at: datetime,
    rebuild: bool,
) -> int:
    found = pa.table(  # noqa: F841
        {
            "paper_id": pa.array([p.paper_id for p in pairs], pa.string()),
            "duplicate_of": pa.array([p.duplicate_of for p in pairs], pa.string()),
            "similarity": pa.array([p.similarity for p in pairs], pa.float64()),
        }
    )
    if rebuild:  # settings changed: drop pairs the new settings no longer find
        con.execute(read_sql("queries", "delete_unfound_near_duplicates"), {"method": METHOD})
    row = con.execute(
        read_sql("queries", "insert_near_duplicates"), {"method": METHOD, "at": detected_at}
    ).fetchone()
    return int(row[0]) if row else 0


def _plausible(
    con: duckdb.DuckDBPyConnection, pairs: Sequence[tuple[str, str]], dedup: DedupSettings
) -> list[tuple[str, str]]:
    """The candidate ``pairs`` whose stored signatures agree enough to be verified
    (:func:`~paperwatch.analysis.duplicates.plausible_pairs`), :data:`VERIFY_PAIRS` at a
    time: the signatures of one lot's papers in memory at once."""
    floor = agreement_floor(dedup.num_perm, dedup.threshold)
    kept: list[tuple[str, str]] = []
    for start in range(0, len(pairs), VERIFY_PAIRS):
        lot = pairs[start : start + VERIFY_PAIRS]
        ids = sorted({pid for pair in lot for pid in pair})
        wanted = pa.table({"paper_id": pa.array(ids, pa.string())})  # noqa: F841
        table = con.sql(read_sql("queries", "signatures_of_ids")).to_arrow_table()
        values = table.column("signature").combine_chunks()
        flat = np.asarray(values.flatten(), dtype=np.uint32)
        if len(flat) != table.num_rows * dedup.num_perm:  # not this scheme's: verify all
            kept.extend(lot)
            continue
        signatures = flat.reshape(table.num_rows, dedup.num_perm)
        kept.extend(plausible_pairs(lot, table.column("paper_id").to_pylist(), signatures, floor))
    return kept


def _pending_pairs(
    con: duckdb.DuckDBPyConnection, dedup: DedupSettings
) -> tuple[int, list[tuple[str, str]], dict[str, PaperText]]:
    """The papers of ``paper_lsh_pending`` (how many), their candidate pairs against every
    stored paper whose signatures agree enough to be verified (:func:`_plausible`), and the
    papers named in those pairs (one scan of ``papers``)."""
    rows = _run(con, "lsh_counts")
    pending, stored = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
    if not pending:
        return 0, [], {}
    bands = lsh_params(dedup.num_perm, dedup.threshold).bands
    pairs = _plausible(con, _candidates(con, bands, pending, stored), dedup)
    return pending, pairs, _papers(con, {pid for pair in pairs for pid in pair})


def _record_pairs(
    con: duckdb.DuckDBPyConnection,
    found: Sequence[NearDuplicate],
    detected_at: datetime,
    rebuild: bool,
    pending: int,
) -> int:
    """Store the verified pairs and empty ``paper_lsh_pending`` (in the caller's
    transaction); the rows inserted."""
    inserted = _store_pairs(con, found, detected_at, rebuild) if found or rebuild else 0
    if pending:
        _run(con, "clear_lsh_pending")
    return inserted


def update_near_duplicates(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    detected_at: datetime,
    signatures: Mapping[str, np.ndarray] | None = None,
    paper_ids: Collection[str] | None = None,
    compare: bool = True,
) -> int:
    """Sketch papers that have no signature yet, and record their near-duplicates.

    One transaction writes ``paper_minhash``, ``paper_lsh_bands`` and ``paper_lsh_pending``;
    with ``compare`` a second compares every pending paper with every stored one (band
    keys, then exact Jaccard of the candidates' abstracts) and writes ``near_duplicates``
    (method :data:`~paperwatch.analysis.duplicates.METHOD`), emptying
    ``paper_lsh_pending``. Call it outside an open transaction. When the stored signatures
    are of another scheme (:func:`~paperwatch.analysis.duplicates.signature_scheme`) all
    are rebuilt and compared in the first transaction, and pairs no longer found are
    deleted. Existing rows keep their ``detected_at``. Design: docs/design.md,
    "Near-duplicates in the database".

    Args:
        con: a read-write connection with the schema applied.
        settings: uses ``settings.dedup``.
        detected_at: timezone-aware time of this run (the run's clock).
        signatures: MinHash signatures already computed for some papers
            (:func:`~paperwatch.analysis.duplicates.abstract_signatures` of their stored
            abstract), by paper id; the others are sketched here. Same rows either way.
        paper_ids: sketch only these papers (those among them without a signature); None
            for every paper without one. Ignored when the signatures are rebuilt.
        compare: compare the pending papers now (False: leave them pending, unless the
            signatures were rebuilt).

    Returns:
        The number of near_duplicates rows inserted (0 when nothing was compared).

    Raises:
        ValueError: ``detected_at`` is naive.
        duckdb.Error: a statement failed (its transaction is rolled back).
    """
    if detected_at.tzinfo is None or detected_at.utcoffset() is None:
        raise ValueError("detected_at must be timezone-aware")
    dedup = settings.dedup
    scheme = signature_scheme(dedup)
    with transaction(con):
        rebuild = _drop_stale_signatures(con, scheme)
        given = signatures or {}
        by_id = paper_ids is not None and not rebuild
        batch = _papers_to_sketch(con, paper_ids if by_id else None, given.keys())
        if batch:
            _store_sketch(con, sketch_papers(batch, dedup, signatures), scheme, detected_at)
        if rebuild:  # every paper again, and the pairs no longer found deleted: at once
            pending, pairs, papers = _pending_pairs(con, dedup)
            found = verify_in_lots(pairs, papers, dedup)
            return _record_pairs(con, found, detected_at, rebuild, pending)
    if not compare:
        return 0
    # Nothing is written between reading the candidates and recording the pairs (the
    # writer lock is held): DuckDB checkpoints what the run wrote meanwhile, while the
    # pairs are verified in Python.
    pending, pairs, papers = _pending_pairs(con, dedup)
    if not pending:
        return 0
    with ThreadPoolExecutor(1, thread_name_prefix="paperwatch-checkpoint") as pool:
        checkpoint = pool.submit(con.cursor().execute, "checkpoint")
        found = verify_in_lots(pairs, papers, dedup)
        checkpoint.result()
    with transaction(con):
        return _record_pairs(con, found, detected_at, rebuild, pending)
