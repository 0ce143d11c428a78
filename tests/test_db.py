"""DuckDB access: schema idempotence, the file lock, and the CLI-readable storage format."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from paperwatch import db

TABLES = {
    "ingest_runs",
    "listing_files",
    "paper_occurrences",
    "papers",
    "quarantine",
    "reports",
    "schema_migrations",
    "validation_results",
}


def test_schema_is_idempotent(database: Path) -> None:
    with db.writer(database) as con:
        con.execute(
            "insert into ingest_runs (run_id, started_at, as_of, week, folder) "
            "values ('r1', now(), now(), '2026-W48', 'x')"
        )
    with db.writer(database) as con:
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        assert tables >= TABLES
        assert con.execute("select count(*) from ingest_runs").fetchone() == (1,)
        assert con.execute("select count(*) from new_papers_by_week").fetchone() == (0,)


def test_writer_waits_then_names_the_lock_holder(database: Path) -> None:
    with db.writer(database):
        pass
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(database)!r}); print('ready', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        started = time.monotonic()
        with pytest.raises(db.DatabaseLockedError) as info, db.writer(database, timeout_s=1.0):
            pass
        assert time.monotonic() - started >= 1.0
        message = str(info.value)
        assert str(database) in message and f"PID {holder.pid}" in message
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    # Once the holder is gone the writer gets in.
    with db.writer(database, timeout_s=5.0) as con:
        assert con.execute("select 1").fetchone() == (1,)


def test_reader_on_missing_database_says_what_to_do(tmp_path: Path) -> None:
    with (
        pytest.raises(FileNotFoundError, match="run `paperwatch ingest` first"),
        db.reader(tmp_path / "none.duckdb"),
    ):
        pass


def _duckdb_cli() -> str:
    """The DuckDB CLI of this Python's environment (the test is skipped without it)."""
    cli = shutil.which("duckdb", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("duckdb CLI not installed (pip install duckdb-cli)")
    return cli


def test_database_opens_in_the_duckdb_cli(database: Path) -> None:
    cli = _duckdb_cli()
    with db.writer(database) as con:
        con.execute(
            "insert into ingest_runs (run_id, started_at, as_of, week, folder) "
            "values ('r1', now(), now(), '2026-W48', 'x')"
        )
    out = subprocess.run(
        [cli, "-readonly", "-csv", str(database), "-c", "select run_id, week from ingest_runs"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines() == ["run_id,week", "r1,2026-W48"]
    assert duckdb.__version__.startswith("2.")


#: Columns added by migration 0005 (listing formats), absent from an older database.
_FORMAT_COLUMNS = (
    "title",
    "authors",
    "url",
    "external_id",
    "text_paper_id",
    "format",
    "format_reason",
    "field_faults",
    "raw_fields",
)


def _without_columns(ddl: str, columns: tuple[str, ...]) -> str:
    """``ddl`` (a create table statement, one column per line) without ``columns``."""
    kept = [
        line
        for line in ddl.splitlines()
        if not any(line.strip().startswith(f"{c} ") for c in columns)
    ]
    return re.sub(r",((?:[ \t]*--[^\n]*)?\n(?:\s*--[^\n]*\n)*\s*)\)", r"\1)", "\n".join(kept))


def test_long_text_columns_are_stored_with_zstd_and_read_by_the_cli(database: Path) -> None:
    text = "We propose a method. " * 40
    with db.writer(database) as con:
        con.execute(
            "insert into papers (paper_id, abstract, abstract_raw, first_sentence, word_count, "
            "code_urls, first_file_id, first_position, first_seen, first_seen_week) "
            "select 'p' || i, ?, ?, 'We propose a method.', 160, [], 1, i, now(), '2026-W48' "
            "from range(3000) r(i)",
            [text, text],
        )
        con.execute(
            "insert into paper_occurrences (file_id, position, line, paper_id, raw_text, run_id) "
            "select 1, i, i, 'p' || i, ?, 'r1' from range(3000) r(i)",
            [text],
        )
    with db.writer(database) as con:  # the writer checkpointed when it closed
        rows = con.execute(
            "select table_name, column_name, list(distinct compression order by compression) "
            "from (select 'papers' as table_name, * from pragma_storage_info('papers') "
            "union all select 'paper_occurrences', * from pragma_storage_info('paper_occurrences')) "
            "where segment_type = 'VARCHAR' and column_name in "
            "('abstract', 'abstract_raw', 'first_sentence', 'raw_text') group by all order by all"
        ).fetchall()
    assert rows == [
        ("paper_occurrences", "raw_text", ["ZSTD"]),
        ("papers", "abstract", ["ZSTD"]),
        ("papers", "abstract_raw", ["ZSTD"]),
        ("papers", "first_sentence", ["ZSTD"]),
    ]
    cli = _duckdb_cli()
    out = subprocess.run(
        [
            cli,
            "-readonly",
            "-csv",
            str(database),
            "-c",
            "select count(*), sum(length(abstract)), max(raw_text = abstract) "
            "from papers join paper_occurrences using (paper_id)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines()[1] == f"3000,{3000 * len(text)},true"


def test_migrations_upgrade_a_database_in_place(database: Path) -> None:
    # A database created before migration 0001: the four tables with their primary keys,
    # paper_terms without its week (0002).
    database.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(database), config={"storage_compatibility_version": "v1.5.0"})
    for table in ("papers", "paper_occurrences", "paper_minhash", "paper_terms_extracted"):
        ddl = _without_columns(db.read_sql("tables", table), _FORMAT_COLUMNS)
        ddl = ddl.replace(" using compression zstd", "")  # before 0008
        if table != "paper_occurrences":
            ddl = ddl.replace("paper_id varchar not null,", "paper_id varchar primary key,", 1)
        else:
            # Before 0003: no listed_number.
            ddl = ddl.replace(
                "run_id varchar not null,",
                "run_id varchar not null, primary key (file_id, position)",
            )
            ddl = _without_columns(ddl, ("listed_number",))
        con.execute(ddl)
    con.execute(
        "insert into papers values ('p1', 'a', 'a', null, 'a', 1, [], null, null, 1, 1, "
        "'2026-11-23 10:00:00+00', '2026-W48')"
    )
    con.execute("insert into paper_occurrences values (1, 1, 3, 'p1', 'a', 'r1')")
    # Before 0011: a quarantine without the entries' record fields.
    con.execute(_without_columns(db.read_sql("tables", "quarantine"), ("record_fields",)))
    con.execute(
        "insert into quarantine (kind, path, position, line, raw_text, reasons, expectations, "
        "quarantined_at, week, run_id) values ('entry', 'a.txt', 1, 3, 'T', ['no abstract'], "
        "['papers.x'], '2026-11-23 10:00:00+00', '2026-W48', 'r1')"
    )
    con.execute("insert into paper_minhash values ('p1', 's', [1, 2], '2026-11-23 10:00:00+00')")
    con.execute("insert into paper_terms_extracted values ('p1', 1, 0, '2026-11-23 10:00:00+00')")
    con.execute(
        "create table paper_terms (paper_id varchar not null, term varchar not null, n integer not null)"
    )
    con.execute("insert into paper_terms values ('p1', 'a', 1)")
    # listing_files before 0004: no internal_error, no paperwatch_version.
    old_files = _without_columns(db.read_sql("tables", "listing_files"), _FORMAT_COLUMNS)
    for column in ("internal_error", "paperwatch_version"):
        old_files = "\n".join(line for line in old_files.splitlines() if column not in line)
    con.execute(old_files)
    con.execute(
        "insert into listing_files (sha256, path, name, size_bytes, mtime_ns, status, "
        "first_seen, first_seen_week, run_id) values ('s', 'a.txt', 'a.txt', 1, 1, 'loaded', "
        "'2026-11-23 10:00:00+00', '2026-W48', 'r1')"
    )
    keys = "select count(*) from duckdb_constraints() where constraint_type = 'PRIMARY KEY'"
    assert con.execute(f"{keys} and table_name like 'paper%'").fetchone() == (4,)
    zstd = (
        "select table_name from duckdb_tables() where contains(sql, 'USING COMPRESSION ZSTD') "
        "order by 1"
    )
    assert con.execute(zstd).fetchall() == []
    con.close()

    with db.writer(database) as con:
        assert con.execute(f"{keys} and table_name like 'paper%'").fetchone() == (0,)
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        assert not {t for t in tables if t.startswith(db.REBUILD_PREFIX)}
        assert con.execute("select paper_id, first_seen_week from papers").fetchall() == [
            ("p1", "2026-W48")
        ]
        assert con.execute("select file_id, position, line from paper_occurrences").fetchall() == [
            (1, 1, 3)
        ]
        assert con.execute("select signature from paper_minhash").fetchall() == [([1, 2],)]
        assert con.execute("select count(*) from paper_terms_extracted").fetchone() == (1,)
        # 0002: the week of each paper's terms.
        assert con.execute("select * from paper_terms").fetchall() == [("p1", "a", 1, "2026-W48")]
        # 0004: files quarantined after an internal error, and by which paperwatch.
        assert con.execute(
            "select path, internal_error, paperwatch_version from listing_files"
        ).fetchall() == [("a.txt", False, None)]
        assert con.execute("select version from schema_migrations order by 1").fetchall() == [
            (1,),
            (2,),
            (3,),
            (4,),
            (5,),
            (6,),
            (7,),
            (8,),
            (9,),
            (10,),
            (11,),
            (12,),
        ]
        # 0011: entries quarantined before kept their text only.
        assert con.execute("select raw_text, record_fields from quarantine").fetchall() == [
            ("T", None)
        ]
        # 0005: files recorded before other formats were read were read as text.
        assert con.execute("select format, format_reason from listing_files").fetchall() == [
            ("text", "recorded before other formats were read")
        ]
        assert con.execute(
            "select title, authors, url, external_id, text_paper_id from paper_occurrences"
        ).fetchall() == [(None, None, None, None, None)]
        # 0003: the list number of each entry (none here).
        assert con.execute("select listed_number from paper_occurrences").fetchall() == [(None,)]
        # 0006: sends per reader, related earlier papers.
        assert con.execute("select count(reader) from reports").fetchone() == (0,)
        assert con.execute("select count(*) from related_papers").fetchone() == (0,)
        # 0008: the long text columns are stored with zstd, the rows kept.
        assert con.execute(zstd).fetchall() == [("paper_occurrences",), ("papers",)]
        assert con.execute(
            "select abstract, abstract_raw, first_sentence from papers"
        ).fetchall() == [("a", "a", "a")]
        assert con.execute("select raw_text from paper_occurrences").fetchall() == [("a",)]
    with db.writer(database) as con:  # applied once
        assert con.execute("select count(*) from schema_migrations").fetchone() == (12,)


def test_memory_limit_grows_with_cores_from_one_gigabyte(database: Path) -> None:
    assert [db.memory_limit(c) for c in (1, 2, 4, 16)] == ["1024MB", "1024MB", "1024MB", "4096MB"]
    with db.writer(database, timeout_s=5.0) as con:
        setting = con.execute("select current_setting('memory_limit')").fetchone()
        progress = con.execute("select current_setting('enable_progress_bar')").fetchone()
    megabytes = int(db.memory_limit().removesuffix("MB"))
    shown = {2: "976.5 MiB", 4: "976.5 MiB", 8: "1.9 GiB"}  # DuckDB shows binary units
    assert setting is not None
    if (os.cpu_count() or 1) in shown:
        assert setting[0] == shown[os.cpu_count() or 1]
    else:
        assert setting[0].endswith(("MiB", "GiB")) and megabytes >= 1024
    assert progress == (False,)


def test_a_bulk_session_has_half_the_memory_limit(database: Path) -> None:
    assert [db.memory_limit(c, bulk=True) for c in (1, 2, 4, 16)] == [
        "512MB",
        "512MB",
        "512MB",
        "2048MB",
    ]
    with db.session(database, timeout_s=5.0), db.writer(database, timeout_s=5.0) as con:
        inside = con.execute("select current_setting('memory_limit')").fetchone()
    with db.writer(database, timeout_s=5.0) as con:
        after = con.execute("select current_setting('memory_limit')").fetchone()
    shown = {2: ("488.2 MiB", "976.5 MiB"), 4: ("488.2 MiB", "976.5 MiB")}
    assert inside is not None and after is not None
    if (os.cpu_count() or 1) in shown:
        assert (inside[0], after[0]) == shown[os.cpu_count() or 1]
    else:
        assert inside[0] != after[0]
    # The setting bulk_memory_limit_mb (here 1024 MB) replaces the default of a session.
    with db.session(database, 5.0, memory_mb=1024), db.writer(database, timeout_s=5.0) as con:
        chosen = con.execute("select current_setting('memory_limit')").fetchone()
    assert chosen == ("976.5 MiB",)
