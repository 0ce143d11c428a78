"""A run killed between loading and near-duplicate detection, or between sketching the
new papers and comparing them: the next run marks it ``interrupted`` with what it loaded,
and completes the signatures, pairs and terms."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from paperwatch.flows.ingest import ingest_listings
from tests.conftest import write_revised_seed

pytestmark = pytest.mark.usefixtures("prefect_harness")

AS_OF = "2026-11-25T10:00:00+00:00"

#: Runs the real ingestion flow in a child process that dies (exit status 9, no
#: clean-up, as under SIGKILL) the moment the flow starts near-duplicate detection.
_KILLED_BEFORE_NEAR_DUPLICATES = """
import os, sys
import paperwatch.flows.ingest as flow

def die(*args, **kwargs):
    os._exit(9)

flow.update_near_duplicates = die
flow.ingest_listings(sys.argv[1], sys.argv[2], sys.argv[3])
"""


#: The same, dying the moment the flow starts comparing the papers it sketched.
_KILLED_BEFORE_COMPARING = _KILLED_BEFORE_NEAR_DUPLICATES.replace(
    "flow.update_near_duplicates = die", "flow.compare_near_duplicates = die"
)


def rows(database: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize(
    ("script", "sketched"),
    [(_KILLED_BEFORE_NEAR_DUPLICATES, 0), (_KILLED_BEFORE_COMPARING, 55)],
    ids=["before-sketching", "before-comparing"],
)
@pytest.mark.slow
def test_a_run_killed_before_near_duplicates_is_completed_by_the_next(
    seed_folder: Path, database: Path, tmp_path: Path, script: str, sketched: int
) -> None:
    from prefect.settings import PREFECT_API_URL

    write_revised_seed(seed_folder)
    reference = tmp_path / "reference.duckdb"
    ingest_listings(str(seed_folder), str(reference), AS_OF)

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(seed_folder),
            str(database),
            AS_OF,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == 9, killed.stderr[-2000:]
    # What the kill left: every entry loaded, no pair, the run 'running'; the papers
    # sketched or not, and the sketched ones waiting to be compared.
    assert rows(database, "select count(*) from papers") == [(55,)]
    assert rows(database, "select count(*) from paper_minhash") == [(sketched,)]
    assert rows(database, "select count(*) from paper_lsh_pending") == [(sketched,)]
    assert rows(database, "select count(*) from near_duplicates") == [(0,)]
    assert rows(database, "select status from ingest_runs") == [("running",)]

    summary = ingest_listings(str(seed_folder), str(database), "2026-11-26T10:00:00+00:00")
    assert (summary.files_loaded, summary.new_papers, summary.near_duplicates) == (0, 0, 1)
    runs = rows(
        database,
        "select status, files_loaded, entries_loaded, new_papers from ingest_runs "
        "order by started_at",
    )
    assert runs == [("interrupted", 4, 58, 55), ("completed", 0, 0, 0)]
    compare = (
        "select paper_id, duplicate_of, round(similarity, 6) from near_duplicates order by all",
        "select paper_id, signature from paper_minhash order by all",
        "select paper_id, term, n, first_seen_week from paper_terms order by all",
    )
    for sql in compare:
        assert rows(database, sql) == rows(reference, sql), sql
    assert rows(database, "select count(*) from near_duplicates") == [(1,)]
    assert rows(database, "select count(*) from paper_lsh_pending") == [(0,)]
