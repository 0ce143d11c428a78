"""Prefect's temporary server: the migrated-database template and the background start
(:mod:`paperwatch.prefect_server`)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from paperwatch.prefect_server import (
    DATABASE_NAME,
    TemporaryServer,
    cache_dir,
    keep_template,
    seed_database,
    template_path,
)
from tests.conftest import SEEDS

ROOT = Path(__file__).resolve().parent.parent


def _database(path: Path, rows: int, *, wal: bool = True) -> None:
    """A SQLite database like Prefect's: WAL journal, one table with ``rows`` rows."""
    con = sqlite3.connect(path)
    if wal:
        con.execute("pragma journal_mode=wal")
    con.execute("create table alembic_version (version_num text)")
    con.executemany("insert into alembic_version values (?)", [(f"v{i}",) for i in range(rows)])
    con.commit()
    con.close()


def _rows(path: Path) -> list[tuple[str]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("select version_num from alembic_version order by 1").fetchall()
    finally:
        con.close()


def test_cache_dir_and_template_path_follow_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" / "paperwatch"
    assert template_path("3.9.1") == tmp_path / "c" / "paperwatch" / "prefect-3.9.1.db"
    assert template_path("3.9.1+g1/x").name == "prefect-3.9.1_g1_x.db"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path("~/.cache/paperwatch").expanduser()


def test_keep_template_copies_a_live_database_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _database(home / DATABASE_NAME, 3)
    live = sqlite3.connect(home / DATABASE_NAME)  # a server holds it open meanwhile
    try:
        template = tmp_path / "cache" / "prefect-x.db"
        assert keep_template(home, template)
    finally:
        live.close()
    assert sorted(p.name for p in template.parent.iterdir()) == ["prefect-x.db"]
    assert _rows(template) == [("v0",), ("v1",), ("v2",)]
    assert sorted(p.name for p in template.parent.iterdir()) == ["prefect-x.db"]
    _database(home / "other.db", 1)
    assert not keep_template(home, template)  # one exists: left as it is
    assert _rows(template) == [("v0",), ("v1",), ("v2",)]


def test_keep_template_without_a_database_or_in_an_unwritable_cache_writes_nothing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    template = tmp_path / "cache" / "prefect-x.db"
    assert not keep_template(home, template)
    assert not template.parent.exists()
    _database(home / DATABASE_NAME, 2)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert not keep_template(home, blocker / "prefect-x.db")


def test_seed_database_copies_the_template_into_a_fresh_home_only(tmp_path: Path) -> None:
    template = tmp_path / "prefect-x.db"
    _database(template, 2, wal=False)
    before = template.read_bytes()
    home = tmp_path / "home"
    home.mkdir()
    assert seed_database(home, template)
    assert _rows(home / DATABASE_NAME) == [("v0",), ("v1",)]
    # The template is read as immutable: nothing written beside it, its bytes unchanged.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "prefect-x.db"]
    assert template.read_bytes() == before
    assert sorted(p.name for p in home.iterdir()) == [DATABASE_NAME]
    # A home with a database keeps it.
    _database(tmp_path / "own.db", 5, wal=False)
    (home / DATABASE_NAME).write_bytes((tmp_path / "own.db").read_bytes())
    assert not seed_database(home, template)
    assert len(_rows(home / DATABASE_NAME)) == 5


def test_a_missing_or_damaged_template_leaves_the_home_to_prefect(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert not seed_database(home, tmp_path / "missing.db")
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 600)
    assert not seed_database(home, damaged)
    assert list(home.iterdir()) == []  # no database, no partial copy


@pytest.mark.server
def test_a_server_that_exits_is_reported_and_leaves_the_start_lock_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that cannot open its database exits; wait() says so instead of waiting
    out the timeout, and the next start of that home is not kept waiting by the lock."""
    monkeypatch.setenv(
        "PREFECT_API_DATABASE_CONNECTION_URL", "sqlite+aiosqlite:////nonexistent/x/p.db"
    )
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    server = TemporaryServer(tmp_path / "home", None, timeout_s=600)
    server.start()
    try:
        assert server.api_url.startswith("http://127.0.0.1:")
        with pytest.raises(RuntimeError, match=r"it exited with code \d+"):
            server.wait()
    finally:
        server.stop()
    from filelock import FileLock

    with FileLock(tmp_path / "home" / "paperwatch-server-start.lock", timeout=0):
        pass
    assert server.process is None


@pytest.mark.server
def test_a_fresh_home_starts_from_the_template_the_first_start_kept(tmp_path: Path) -> None:
    """Two first runs in two new folders: the first migrates Prefect's database and keeps
    it as this Prefect version's template; the second home starts from a copy of it."""
    import prefect

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PAPERWATCH_"))}
    env |= {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PAPERWATCH_CONFIG": "",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    template = tmp_path / "cache" / "paperwatch" / f"prefect-{prefect.__version__}.db"
    versions = []
    for name in ("first", "second"):
        database = tmp_path / name / "paperwatch.duckdb"
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "paperwatch",
                "ingest",
                "--folder",
                str(SEEDS),
                "-d",
                str(database),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "new papers: 54" in result.stdout
        # The temporary server serves no UI: no run links to it.
        assert "View at" not in result.stdout + result.stderr
        assert template.is_file()
        if name == "first":  # mark the template: the second home must hold the mark
            con = sqlite3.connect(template)
            con.execute("create table paperwatch_test_mark (copied integer)")
            con.commit()
            con.close()
        home_db = tmp_path / name / ".prefect" / DATABASE_NAME
        con = sqlite3.connect(f"file:{home_db}?mode=ro", uri=True)
        try:
            versions.append(con.execute("select version_num from alembic_version").fetchall())
            marked = con.execute(
                "select count(*) from sqlite_master where name = 'paperwatch_test_mark'"
            ).fetchone()
            assert marked == ((0,) if name == "first" else (1,))
            # The home's own database holds this run; the template holds no run.
            assert con.execute("select count(*) from flow_run").fetchone() == (1,)
        finally:
            con.close()
    con = sqlite3.connect(f"file:{template}?mode=ro&immutable=1", uri=True)
    try:
        assert con.execute("select count(*) from flow_run").fetchone() == (0,)
        assert con.execute("select version_num from alembic_version").fetchall() == versions[0]
    finally:
        con.close()
    assert versions[0] == versions[1]


def test_prefect_settings_files_of_the_working_directory_leave_the_start_to_prefect(
    tmp_path: Path,
) -> None:
    """A server named in a file Prefect reads (not in the environment) must win: the early
    start is skipped when such a file is there."""
    from paperwatch.cli import _prefect_settings_files

    assert _prefect_settings_files() == []  # the tests run in tmp_path
    Path(".env").write_text("OTHER=1\n", encoding="utf-8")
    Path("pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    assert _prefect_settings_files() == []
    Path(".env").write_text("PREFECT_API_URL=http://127.0.0.1:4200/api\n", encoding="utf-8")
    Path("prefect.toml").write_text("[api]\nurl = 'http://127.0.0.1:4200/api'\n", encoding="utf-8")
    Path("pyproject.toml").write_text("[tool.prefect.api]\nurl = 'x'\n", encoding="utf-8")
    assert _prefect_settings_files() == [Path("prefect.toml"), Path(".env"), Path("pyproject.toml")]
    assert Path.cwd() == tmp_path
