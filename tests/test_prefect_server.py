"""Prefect's temporary server: the migrated-database template and the background start
(:mod:`paperwatch.prefect_server`)."""

from __future__ import annotations

import gc
import hashlib
import importlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from paperwatch.prefect_server import (
    DATABASE_NAME,
    SETUP_MARKER,
    ServerExited,
    TemporaryServer,
    cache_dir,
    keep_template,
    migration_version,
    seed_database,
    set_up_for,
    setup_key,
    template_path,
    usable_template,
    warm_imports,
)
from tests.conftest import SEEDS, dead_pid

ROOT = Path(__file__).resolve().parent.parent


HEAD = "27d8f4e1a6c9"


def _database(path: Path, rows: int, *, wal: bool = True, head: str = HEAD, runs: int = 0) -> None:
    """A SQLite database like Prefect's: WAL journal, Alembic at ``head``, ``runs`` flow
    runs, and a table ``mark`` of ``rows`` rows that tells copies apart."""
    con = sqlite3.connect(path)
    if wal:
        con.execute("pragma journal_mode=wal")
    con.execute("create table alembic_version (version_num text)")
    con.execute("insert into alembic_version values (?)", [head])
    con.execute("create table flow_run (id text)")
    con.executemany("insert into flow_run values (?)", [(f"r{i}",) for i in range(runs)])
    con.execute("create table mark (v text)")
    con.executemany("insert into mark values (?)", [(f"v{i}",) for i in range(rows)])
    con.commit()
    con.close()


def _rows(path: Path) -> list[tuple[str]]:
    con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return con.execute("select v from mark order by 1").fetchall()
    finally:
        con.close()


def _ingest_seeds(
    database: Path, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``paperwatch ingest`` of the seeds into ``database`` as a process; checks that it
    loaded the 54 seed papers."""
    result = subprocess.run(
        [sys.executable, "-m", "paperwatch", "ingest", "--folder", str(SEEDS), "-d", str(database)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "new papers: 54" in result.stdout
    return result


@pytest.mark.parametrize("enabled", [True, False])
def test_warm_imports_pause_the_collector_then_freeze_what_the_process_holds(
    enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = importlib.import_module

    def probe(module: str) -> object:
        seen.append(gc.isenabled())
        return real(module)

    monkeypatch.setattr(importlib, "import_module", probe)
    (gc.enable if enabled else gc.disable)()
    gc.unfreeze()
    try:
        warm_imports(["json", "no.such.module"])  # a failing import is left to the flow
        assert seen == [False, False]
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_cache_dir_and_template_path_follow_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" / "paperwatch"
    key = "prefect-3.9.1.dist-info prefect_dask-0.3.7.dist-info"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    assert template_path(key) == tmp_path / "c" / "paperwatch" / f"prefect-3.9.1-{digest}.db"
    # Another collection installed: another template, of the same Prefect version.
    other = template_path("prefect-3.9.1.dist-info")
    assert (
        other is not None
        and other.name.startswith("prefect-3.9.1-")
        and other != template_path(key)
    )
    odd = template_path("prefect-3.9.1+g1/x.dist-info")
    assert odd is not None and odd.name.startswith("prefect-3.9.1_g1_x-")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path("~/.cache/paperwatch").expanduser()
    # A relative XDG_CACHE_HOME is ignored (XDG Base Directory Specification).
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert cache_dir() == tmp_path / "h" / ".cache" / "paperwatch"


def test_without_a_home_there_is_no_template(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME unset and the user not in the password database (a container's uid): no cache
    folder, no template, instead of Path.expanduser's KeyError/RuntimeError."""
    import pwd

    def unknown(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", unknown)
    assert cache_dir() is None
    assert template_path("3.9.1") is None


def test_migration_version_is_the_one_alembic_row(tmp_path: Path) -> None:
    _database(tmp_path / "a.db", 1)
    assert migration_version(tmp_path / "a.db") == HEAD
    (tmp_path / "b.db").write_bytes(b"not a database" * 100)
    assert migration_version(tmp_path / "b.db") is None
    assert migration_version(tmp_path / "missing.db") is None
    con = sqlite3.connect(tmp_path / "a.db")
    con.execute("insert into alembic_version values ('second')")
    con.commit()
    con.close()
    assert migration_version(tmp_path / "a.db") is None  # two rows: no single revision


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
    assert usable_template(template)
    assert not keep_template(home, template)  # a usable one exists: left as it is
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
    assert not keep_template(home, blocker / "prefect-x.db")  # the cache is a file
    assert blocker.read_text() == "not a folder"
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    try:
        if os.access(readonly, os.W_OK):
            pytest.skip("root writes into read-only folders")
        assert not keep_template(home, readonly / "prefect-x.db")
        assert list(readonly.iterdir()) == []
    finally:
        readonly.chmod(0o755)


def test_keep_template_never_keeps_a_database_with_runs_or_unmigrated(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _database(home / DATABASE_NAME, 2, runs=1)
    template = tmp_path / "cache" / "prefect-x.db"
    assert not keep_template(home, template)
    assert list(template.parent.iterdir()) == []  # no partial copy either
    (home / DATABASE_NAME).unlink()
    _database(home / DATABASE_NAME, 2)
    con = sqlite3.connect(home / DATABASE_NAME)
    con.execute("delete from alembic_version")  # never migrated
    con.commit()
    con.close()
    assert not keep_template(home, template)
    assert list(template.parent.iterdir()) == []


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


def _bad_templates(tmp_path: Path) -> dict[str, Path]:
    """Templates a fresh home must not start from: each is refused by seed_database."""
    good = tmp_path / "good.db"
    _database(good, 40, wal=False)
    whole = good.read_bytes()
    bad = {}
    for name, content in (
        ("empty", b""),
        ("random", bytes(range(256)) * 64),
        ("truncated", whole[: len(whole) // 2]),
    ):
        bad[name] = tmp_path / f"{name}.db"
        bad[name].write_bytes(content)
    bad["unmigrated"] = tmp_path / "unmigrated.db"  # no Alembic revision
    _database(bad["unmigrated"], 40, wal=False)
    con = sqlite3.connect(bad["unmigrated"])
    con.execute("delete from alembic_version")
    con.commit()
    con.close()
    bad["with-runs"] = tmp_path / "with-runs.db"
    _database(bad["with-runs"], 40, wal=False, runs=2)
    return bad


@pytest.mark.parametrize("kind", ["empty", "random", "truncated", "unmigrated", "with-runs"])
def test_a_bad_template_is_not_copied_and_is_replaced_by_the_next_migrated_database(
    tmp_path: Path, kind: str
) -> None:
    """A 0-byte file, random bytes, a copy cut short, a database Alembic never migrated,
    or one holding runs: the home gets nothing (Prefect migrates its own, which
    an empty copy would only hide), and the next kept template replaces it."""
    template = _bad_templates(tmp_path)[kind]
    home = tmp_path / "home"
    home.mkdir()
    assert not usable_template(template)
    assert not seed_database(home, template)
    assert list(home.iterdir()) == []
    _database(home / DATABASE_NAME, 3)  # what the server then migrated
    assert keep_template(home, template)
    assert usable_template(template)
    assert _rows(template) == [("v0",), ("v1",), ("v2",)]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert seed_database(fresh, template)
    assert _rows(fresh / DATABASE_NAME) == [("v0",), ("v1",), ("v2",)]


def test_seeding_removes_journal_files_of_a_deleted_database(tmp_path: Path) -> None:
    """A user who deleted prefect.db to start over leaves its -wal and -shm: SQLite would
    apply that journal to the copy."""
    template = tmp_path / "prefect-x.db"
    _database(template, 2, wal=False)
    home = tmp_path / "home"
    home.mkdir()
    _database(home / DATABASE_NAME, 7)
    con = sqlite3.connect(home / DATABASE_NAME)
    con.execute("pragma wal_autocheckpoint=0")
    con.executemany("insert into mark values (?)", [(f"w{i}",) for i in range(50)])
    con.commit()
    (home / "kept-wal").write_bytes((home / f"{DATABASE_NAME}-wal").read_bytes())
    con.close()
    (home / DATABASE_NAME).unlink()
    (home / f"{DATABASE_NAME}-wal").write_bytes((home / "kept-wal").read_bytes())
    (home / f"{DATABASE_NAME}-shm").write_bytes(b"\0" * 32768)
    assert seed_database(home, template)
    assert sorted(p.name for p in home.iterdir()) == ["kept-wal", DATABASE_NAME]
    assert _rows(home / DATABASE_NAME) == [("v0",), ("v1",)]


def test_templates_in_folders_with_spaces_unicode_and_uri_characters(tmp_path: Path) -> None:
    """SQLite reads the copies through ``file:`` URIs: ``?``, ``#``, ``%`` and spaces in a
    folder name (XDG_CACHE_HOME, the database's folder) must stay one path."""
    odd = tmp_path / "my cache ü #1 ?x %41"
    home = odd / "data" / ".prefect"
    home.mkdir(parents=True)
    _database(home / DATABASE_NAME, 4)
    template = odd / "paperwatch" / "prefect-x.db"
    assert keep_template(home, template)
    fresh = odd / "other" / ".prefect"
    fresh.mkdir(parents=True)
    assert seed_database(fresh, template)
    assert _rows(fresh / DATABASE_NAME) == [("v0",), ("v1",), ("v2",), ("v3",)]


def test_an_interrupted_or_killed_copy_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import paperwatch.prefect_server as module

    home = tmp_path / "home"
    home.mkdir()
    _database(home / DATABASE_NAME, 2)
    cache = tmp_path / "cache"
    cache.mkdir()
    template = cache / "prefect-x.db"
    # A copy of a process killed meanwhile (a pid that is not running) ...
    orphan = cache / f".prefect-x.db.{dead_pid()}.partial"
    orphan.write_bytes(b"half")
    real_backup = module._backup

    def interrupted(source: Path, target: Path, *, live: bool) -> None:
        real_backup(source, target, live=live)
        raise KeyboardInterrupt  # Ctrl-C after the partial copy was written

    monkeypatch.setattr(module, "_backup", interrupted)
    with pytest.raises(KeyboardInterrupt):
        keep_template(home, template)
    # ... is removed by the next copy; the interrupted one removed its own.
    assert list(cache.iterdir()) == []
    monkeypatch.setattr(module, "_backup", real_backup)
    orphan.write_bytes(b"half")
    assert keep_template(home, template)
    assert sorted(p.name for p in cache.iterdir()) == ["prefect-x.db"]


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
        assert server.process is not None
        # A process group of its own: the terminal's Ctrl-C does not reach it.
        assert os.getpgid(server.process.pid) == server.process.pid != os.getpgid(0)
        with pytest.raises(ServerExited, match=r"^it exited with code \d+; its output: "):
            server.wait()
    finally:
        server.stop()
    from filelock import FileLock

    with FileLock(tmp_path / "home" / "paperwatch-server-start.lock", timeout=0):
        pass
    assert server.process is None


@pytest.mark.slow
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
    key = setup_key(Path(prefect.__file__).parent)
    assert key is not None and f"prefect-{prefect.__version__}.dist-info" in key.split()
    template = template_path(key)
    assert template is not None
    template = tmp_path / "cache" / "paperwatch" / template.name
    versions = []
    for name in ("first", "second"):
        database = tmp_path / name / "paperwatch.duckdb"
        result = _ingest_seeds(database, tmp_path, env)
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
    # Both homes are marked set up for this Prefect, and so is the template. The first
    # start registered the block types (Prefect memoises that in memo_store.toml); the
    # second, from the template made under the same key, skipped that and the migration
    # check (so Prefect wrote no memo there).
    marker = f"{key}\n{versions[0][0][0]}"
    assert (tmp_path / "first" / ".prefect" / SETUP_MARKER).read_text() == marker
    assert (tmp_path / "second" / ".prefect" / SETUP_MARKER).read_text() == marker
    assert (tmp_path / "first" / ".prefect" / "memo_store.toml").is_file()
    assert not (tmp_path / "second" / ".prefect" / "memo_store.toml").exists()


def test_a_home_counts_as_set_up_only_under_the_same_key_and_migration_head(
    tmp_path: Path,
) -> None:
    """A start skips Prefect's migration check and block registration only in a home whose
    marker holds this installation's key and whose database is still at the revision the
    marker recorded."""
    site = tmp_path / "site"
    (site / "prefect").mkdir(parents=True)
    for name in ("prefect-3.9.1.dist-info", "prefect_dask-0.3.7.dist-info", "polars-1.dist-info"):
        (site / name).mkdir()
    key = setup_key(site / "prefect")
    assert key == "prefect-3.9.1.dist-info prefect_dask-0.3.7.dist-info"
    assert setup_key(tmp_path / "nowhere" / "prefect") is None
    home = tmp_path / "home"
    home.mkdir()
    assert not set_up_for(home, key)  # no marker, no database
    (home / SETUP_MARKER).write_text(f"{key}\n{HEAD}")
    assert not set_up_for(home, key)  # no database
    _database(home / DATABASE_NAME, 1)
    assert set_up_for(home, key)
    (site / "prefect_aws-0.5.0.dist-info").mkdir()  # a collection installed since
    new_key = setup_key(site / "prefect")
    assert new_key is not None and not set_up_for(home, new_key)
    (home / SETUP_MARKER).write_text(key)  # a marker without the revision
    assert not set_up_for(home, key)
    (home / SETUP_MARKER).write_text(f"{key}\n{HEAD}")
    (home / DATABASE_NAME).unlink()
    _database(home / DATABASE_NAME, 1, head="0123456789ab")  # replaced by another revision
    assert not set_up_for(home, key)
    (home / DATABASE_NAME).write_bytes(b"not a database" * 100)
    assert not set_up_for(home, key)


@pytest.mark.server
def test_prepare_template_makes_the_template_a_first_run_starts_from(tmp_path: Path) -> None:
    """``make install``'s step: the template is made once, outside any run (no flow run in
    it); a second call leaves it; the first ingest then starts from a copy of it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PAPERWATCH_"))}
    env |= {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PAPERWATCH_CONFIG": "",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    prepare = [sys.executable, "-m", "paperwatch.prefect_server", "--prepare-template"]
    made = subprocess.run(prepare, env=env, capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stderr[-3000:]
    templates = list((tmp_path / "cache" / "paperwatch").glob("prefect-*.db"))
    assert len(templates) == 1 and made.stdout.strip().endswith("(made)")
    assert usable_template(templates[0]) and migration_version(templates[0]) is not None
    again = subprocess.run(prepare, env=env, capture_output=True, text=True, timeout=900)
    assert again.stdout.strip() == f"Prefect template: {templates[0]} (already made)"
    con = sqlite3.connect(templates[0])
    con.execute("create table paperwatch_test_mark (copied integer)")
    con.commit()
    con.close()
    database = tmp_path / "run" / "paperwatch.duckdb"
    _ingest_seeds(database, tmp_path, env)
    home_db = tmp_path / "run" / ".prefect" / DATABASE_NAME
    con = sqlite3.connect(f"file:{home_db}?mode=ro", uri=True)
    try:
        marked = "select count(*) from sqlite_master where name = 'paperwatch_test_mark'"
        assert con.execute(marked).fetchone() == (1,)
    finally:
        con.close()
