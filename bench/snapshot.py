"""Benchmark: ways to publish the analysts' read-only snapshot of a paperwatch database.

On a database built by ``bench/pipeline.py`` (``<corpus>-paperwatch.duckdb``), each
method writes a snapshot into a fresh folder, and the script reports its wall time,
its size on disk, and whether the PyPI ``duckdb`` CLI (``.venv/bin/duckdb``) reads it
(``count(*)`` of ``papers`` and of the view ``new_papers_by_week``):

- **file copy** (what paperwatch does, :func:`paperwatch.db.snapshot.publish_snapshot`):
  open the database for writing (nothing else can change it), ``checkpoint``, copy
  the file byte for byte to a temporary file, ``fsync``, replace;
- **copy from database**: ``ATTACH`` a new file (v1.5 storage) and
  ``COPY FROM DATABASE`` (every table, views included);
- **copy tables**: ``ATTACH``, ``create table ... as`` for every table but the
  internal MinHash/LSH ones (``paper_minhash``, ``paper_lsh_bands``), the views;
  ``fsync``;
- **parquet + views**: ``COPY (...) TO 'x.parquet'`` per table (same tables, zstd),
  plus a small DuckDB file of views over ``read_parquet`` (and the views of
  ``sql/views/`` over those).

Usage::

    python bench/snapshot.py /tmp/pwc100k-paperwatch.duckdb --repeat 2
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from paperwatch import db  # noqa: E402
from paperwatch.db.snapshot import fsync_path, publish_snapshot  # noqa: E402

CLI = Path(sys.executable).parent / "duckdb"


def disk_bytes(path: Path) -> int:
    """Allocated bytes of a file or a folder (``du``-like: st_blocks × 512)."""
    if path.is_dir():
        return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())
    return path.stat().st_blocks * 512


INTERNAL = ("paper_minhash", "paper_lsh_bands")
PARQUET_MEMORY = "4GB"


def snapshot_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "select table_name from duckdb_tables() "
        "where database_name = current_database() and schema_name = 'main' order by 1"
    ).fetchall()
    return [name for (name,) in rows if name not in INTERNAL]


def file_copy(database: Path, out: Path) -> Path:
    target = out / "paperwatch.read.duckdb"
    publish_snapshot(database, target)
    return target


@contextmanager
def attached(database: Path, target: Path) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
    """The database open for writing with a new v1.5 file ``target`` attached as ``snap``:
    yields the connection and the database's catalog name; detaches and fsyncs after."""
    with db.writer(database) as con:
        source = con.execute("select current_database()").fetchall()[0][0]
        con.execute(f"attach '{target}' as snap (storage_version '{db.STORAGE_COMPATIBILITY}')")
        yield con, source
        con.execute(f'use "{source}"')
        con.execute("detach snap")
    fsync_path(target)


def copy_from_database(database: Path, out: Path) -> Path:
    target = out / "paperwatch.read.duckdb"
    with attached(database, target) as (con, source):
        con.execute(f'copy from database "{source}" to snap')
    return target


def copy_tables(database: Path, out: Path) -> Path:
    target = out / "paperwatch.read.duckdb"
    with attached(database, target) as (con, source):
        con.execute("begin transaction")
        for table in snapshot_tables(con):
            con.execute(
                f'create table snap.main."{table}" as select * from "{source}".main."{table}"'
            )
        con.execute("commit")
        con.execute("use snap")
        db.create_views(con)
    return target


def parquet_and_views(database: Path, out: Path) -> Path:
    folder = out / "parquet"
    folder.mkdir()
    views = out / "paperwatch.read.duckdb"
    with db.writer(database) as con:
        # At 1M papers this ran out of paperwatch's 1 GB memory limit, with or without
        # insertion order: the Parquet writer buffers whole row groups of long texts.
        con.execute("set preserve_insertion_order = false")
        con.execute(f"set memory_limit = '{PARQUET_MEMORY}'")
        tables = snapshot_tables(con)
        for table in tables:
            file = folder / f"{table}.parquet"
            con.execute(
                f"copy (select * from {table}) to '{file}' (format parquet, compression zstd)"
            )
            fsync_path(file)
    vcon = duckdb.connect(str(views), config={"storage_compatibility_version": "v1.5.0"})
    try:
        for table in tables:
            vcon.execute(
                f"create view {table} as select * from read_parquet('{folder / table}.parquet')"
            )
        db.create_views(vcon)
    finally:
        vcon.close()
    fsync_path(views)
    return out


METHODS: dict[str, Callable[[Path, Path], Path]] = {
    "file copy (paperwatch)": file_copy,
    "copy from database": copy_from_database,
    "copy tables": copy_tables,
    "parquet + views": parquet_and_views,
}


def cli_counts(snapshot: Path) -> str:
    """``count(*)`` of papers and new_papers_by_week through the PyPI duckdb CLI."""
    result = subprocess.run(
        [
            str(CLI),
            "-readonly",
            "-csv",
            "-noheader",
            str(snapshot),
            "-c",
            "select (select count(*) from papers), (select count(*) from new_papers_by_week)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or result.stderr.strip()[:80]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", type=Path)
    parser.add_argument("--work", type=Path, default=None, help="default: beside the database")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", action="append", default=None, help="method name(s)")
    args = parser.parse_args(argv)
    work = args.work or args.database.parent / f"{args.database.stem}-snapshots"
    print(f"{platform.node()}, {os.cpu_count()} cores, duckdb {duckdb.__version__}")
    print(f"database {args.database}: {disk_bytes(args.database) / 2**20:,.0f} MiB on disk")
    with duckdb.connect(str(args.database), read_only=True) as con:
        papers = con.execute("select count(*) from papers").fetchall()[0][0]
    print(f"papers: {papers:,}")
    print(f"{'method':28s} {'seconds':>8s} {'MiB':>8s}  load avg (1 min)  CLI reads")
    for _ in range(args.repeat):
        for name, method in METHODS.items():
            if args.only and name not in args.only:
                continue
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            load = os.getloadavg()[0]
            started = time.perf_counter()
            result = method(args.database, work)
            seconds = time.perf_counter() - started
            size = disk_bytes(work)
            readable = cli_counts(result if result.is_file() else result / "paperwatch.read.duckdb")
            print(f"{name:28s} {seconds:8.2f} {size / 2**20:8,.0f}  {load:16.2f}  {readable}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
