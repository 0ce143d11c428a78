"""Start-up: commands import only what they need, and the report renders without Prefect.

The commands run as processes (``python -X importtime -m paperwatch ...``): the modules a
command imported are read from its import log, so a lazy import that turned eager is
caught wherever it comes from.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import SEEDS_AS_OF, SEEDS_WEEK

HEAVY = ("prefect", "great_expectations")


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a user with no paperwatch and no Prefect settings, ``HOME`` at
    ``home`` (so no ``~/.prefect`` of the developer is read)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PAPERWATCH_", "PREFECT_")) and k != "HOME"
    }
    env["HOME"] = str(home)
    env["PAPERWATCH_CONFIG"] = ""
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    return env


def run_command(
    args: list[str], cwd: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``paperwatch <args>`` as a process; the result and the top-level packages it
    imported (from ``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "paperwatch", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    imported = set()
    kept = []
    for line in done.stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", line)
        if found:
            imported.add(found.group(1).split(".")[0])
        elif not line.startswith("import time:"):
            kept.append(line)
    done.stderr = "\n".join(kept)
    return done, imported


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_help_imports_neither_prefect_nor_great_expectations(tmp_path: Path) -> None:
    done, imported = run_command(["--help"], tmp_path, clean_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "quarantine" in done.stdout
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert "duckdb" not in imported and "polars" not in imported


def test_read_only_commands_and_a_nothing_new_ingest_do_not_import_prefect(
    seeded_database: Path, tmp_path: Path
) -> None:
    env = clean_env(tmp_path)
    folder = tmp_path / "listings"
    import shutil

    from tests.conftest import SEEDS

    shutil.copytree(SEEDS, folder)
    database = str(seeded_database)
    # The session's seeded database recorded the seeds from another folder: ingest them
    # once here so that this folder's files are the recorded ones.
    from paperwatch.flows.ingest import ingest_listings

    ingest_listings(str(folder), database, SEEDS_AS_OF)
    snapshot = seeded_database.with_name("paperwatch.read.duckdb")
    assert snapshot.is_file()

    listed, imported = run_command(["quarantine", "list", "--database", database], tmp_path, env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "the quarantine is empty (or all released; see --all)\n"
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))

    again, imported = run_command(
        ["ingest", "--folder", str(folder), "--database", database, "--as-of", SEEDS_AS_OF],
        tmp_path,
        env,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "files: 3 seen, 0 loaded, 3 unchanged, 0 duplicate copies, 0 quarantined",
        "entries: 0 read, 0 loaded, 0 quarantined; new papers: 0; exact duplicates: 0",
        f"nothing new: {database} is up to date",
    ]
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))

    queried, imported = run_command(
        ["sql", "--database", database, "-csv", "-c", "select count(*) as n from papers"],
        tmp_path,
        env,
    )
    assert queried.returncode == 0, queried.stderr
    assert queried.stdout.split() == ["n", "54"]
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_docs_imports_great_expectations_but_not_prefect(tmp_path: Path) -> None:
    from tests.conftest import SEEDS

    done, imported = run_command(
        ["docs", "--folder", str(SEEDS), "--report-dir", str(tmp_path / "out")],
        tmp_path,
        clean_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Data Docs for 3 files, 57 entries: ")
    assert "great_expectations" in imported
    assert "prefect" not in imported


@pytest.mark.usefixtures("prefect_harness")
def test_report_renders_without_prefect_the_same_bytes_as_the_flow(
    seeded_database: Path, tmp_path: Path
) -> None:
    from paperwatch.flows.report import weekly_report

    by_flow = tmp_path / "by-flow"
    outcome = weekly_report(
        week=SEEDS_WEEK,
        as_of=SEEDS_AS_OF,
        database=str(seeded_database),
        report_dir=str(by_flow),
        last_completed_week=False,
    )
    assert outcome.new_papers == 54

    by_command = tmp_path / "by-command"
    done, imported = run_command(
        [
            "report",
            "--week",
            SEEDS_WEEK,
            "--as-of",
            SEEDS_AS_OF,
            "--database",
            str(seeded_database),
            "--report-dir",
            str(by_command),
        ],
        tmp_path,
        clean_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"report of {SEEDS_WEEK}: {by_command / (SEEDS_WEEK + '.html')} "
        f"(plain text: {by_command / (SEEDS_WEEK + '.txt')})\n"
    )
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    names = [
        f"{SEEDS_WEEK}.html",
        f"{SEEDS_WEEK}.txt",
        f"{SEEDS_WEEK}-new-papers.csv",
        "index.html",  # the archive page
    ]
    assert sorted(p.name for p in by_command.iterdir()) == sorted(names)
    for name in names:
        assert sha(by_command / name) == sha(by_flow / name), name
    with duckdb.connect(str(seeded_database), read_only=True) as con:
        rendered = con.execute(
            "select path from reports where week = ? and kind = 'rendered' order by happened_at",
            [SEEDS_WEEK],
        ).fetchall()
    assert [Path(p).parent.name for (p,) in rendered][-2:] == ["by-flow", "by-command"]
    # ...and the analysts' snapshot was republished with it.
    snapshot = seeded_database.with_name("paperwatch.read.duckdb")
    with duckdb.connect(str(snapshot), read_only=True) as con:
        (shown,) = con.execute(
            "select count(*) from reports where week = ? and kind = 'rendered'", [SEEDS_WEEK]
        ).fetchone()  # type: ignore[misc]
    assert shown == len(rendered)


def test_report_of_a_missing_database_is_refused_before_anything_starts(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "paperwatch.duckdb"
    done, imported = run_command(
        ["report", "--database", str(missing)], tmp_path, clean_env(tmp_path)
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: database {missing} does not exist: nothing was ingested there "
        "(run `paperwatch ingest`, or check --database)"
    )
    assert not missing.parent.exists()
    assert "prefect" not in imported


# ---------------------------------------------------------------- Prefect's home


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code`` in ``env``; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def home_chosen(tmp_path: Path, env: dict[str, str]) -> str:
    """What :func:`paperwatch.flow_runtime.prefect_home` decides in a fresh process for a database
    at ``tmp_path/data/paperwatch.duckdb``: the home it set, or ``None``; then the
    ``PREFECT_PROFILES_PATH`` it left."""
    code = (
        "import os; from pathlib import Path; from paperwatch.cli import prefect_home; "
        f"print(prefect_home(Path({str(tmp_path / 'data' / 'paperwatch.duckdb')!r}))); "
        "print(os.environ.get('PREFECT_PROFILES_PATH'))"
    )
    done = _python(code, env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_prefect_gets_a_home_beside_the_database_unless_the_user_chose(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    local = tmp_path / "data" / ".prefect"
    assert home_chosen(tmp_path, env) == f"{local}\nNone\n"

    profiles = tmp_path / ".prefect" / "profiles.toml"
    profiles.parent.mkdir()
    profiles.write_text(
        'active = "local"\n\n[profiles.local]\nPREFECT_LOGGING_LEVEL = "INFO"\n',
        encoding="utf-8",
    )
    assert home_chosen(tmp_path, env) == f"{local}\n{profiles}\n"

    profiles.write_text(
        'active = "local"\n\n[profiles.local]\nPREFECT_API_URL = "http://127.0.0.1:4200/api"\n',
        encoding="utf-8",
    )
    assert home_chosen(tmp_path, env) == "None\nNone\n"
    assert home_chosen(tmp_path, {**env, "PREFECT_PROFILE": "other"}) == f"{local}\n{profiles}\n"

    assert home_chosen(tmp_path, {**env, "PREFECT_HOME": str(tmp_path / "mine")}) == (
        "None\nNone\n"
    )
    assert home_chosen(tmp_path, {**env, "PREFECT_API_URL": "http://127.0.0.1:1/api"}) == (
        "None\nNone\n"
    )

    # Settings files of the working directory (the subprocess runs in tmp_path): only a
    # home or a server set there is the user's choice.
    profiles.unlink()
    settings = tmp_path / "prefect.toml"
    settings.write_text('[logging]\nlevel = "INFO"\n', encoding="utf-8")
    assert home_chosen(tmp_path, env) == f"{local}\nNone\n"
    settings.write_text(f'home = "{tmp_path / "mine"}"\n', encoding="utf-8")
    assert home_chosen(tmp_path, env) == "None\nNone\n"
    settings.write_text('[api]\nurl = "http://127.0.0.1:1/api"\n', encoding="utf-8")
    assert home_chosen(tmp_path, env) == "None\nNone\n"
    settings.unlink()
    dotenv = tmp_path / ".env"
    dotenv.write_text("PREFECT_LOGGING_LEVEL=INFO\n", encoding="utf-8")
    assert home_chosen(tmp_path, env) == f"{local}\nNone\n"
    dotenv.write_text("export PREFECT_HOME=/srv/prefect\n", encoding="utf-8")
    assert home_chosen(tmp_path, env) == "None\nNone\n"
    dotenv.unlink()
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.prefect.api]\nurl = "http://127.0.0.1:1/api"\n', encoding="utf-8")
    assert home_chosen(tmp_path, env) == "None\nNone\n"


def test_prefect_home_exists_before_prefect_is_imported_in_a_fresh_clone(
    tmp_path: Path,
) -> None:
    # A fresh clone has no data/: Prefect's own mkdir of its home failed with a
    # "Failed to create the Prefect home directory" warning on the first `make run`.
    database = tmp_path / "data" / "paperwatch.duckdb"
    code = (
        "from pathlib import Path; from paperwatch.cli import prefect_home; "
        f"print(prefect_home(Path({str(database)!r}))); import prefect.context"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    assert done.stdout == f"{tmp_path / 'data' / '.prefect'}\n"
    assert "Failed to create the Prefect home directory" not in done.stderr
    assert (tmp_path / "data" / ".prefect").is_dir()


# ------------------------------------------- Prefect's temporary server (marker server)


def project(tmp_path: Path, name: str) -> Path:
    """A fresh folder laid out like a new clone: ``seeds/`` and nothing else."""
    import shutil

    from tests.conftest import SEEDS

    folder = tmp_path / name
    shutil.copytree(SEEDS, folder / "seeds")
    return folder


def start_run(folder: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``paperwatch run`` of the seeds (week 2026-W48) in ``folder``, as a new user runs it."""
    return subprocess.Popen(
        [sys.executable, "-m", "paperwatch", "run", "--as-of", SEEDS_AS_OF],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def servers_of(home: Path) -> list[int]:
    """Processes (pids) whose ``PREFECT_HOME`` is ``home``: Prefect's temporary servers."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("PREFECT_HOME") == str(home):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


def wait_until_no_server(home: Path) -> list[int]:
    """Poll until no process of ``home`` is left (the server stops as the command exits;
    the guard stops it within a second of noticing), for at most two minutes."""
    import time

    deadline = time.monotonic() + 120
    left = servers_of(home)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = servers_of(home)
    return left


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=1200)
    return process.returncode, out, err


@pytest.mark.slow
@pytest.mark.server
def test_two_first_runs_at_once_in_a_fresh_clone_both_succeed(tmp_path: Path) -> None:
    folder = project(tmp_path, "clone")
    env = clean_env(tmp_path / "user")
    runs = [start_run(folder, env) for _ in range(2)]
    results = [finished(p) for p in runs]
    for code, out, err in results:
        assert code == 0, out + err
        assert "Timed out" not in err
        assert f"report of {SEEDS_WEEK}: reports/out/{SEEDS_WEEK}.html" in out.splitlines()
    summaries = sorted(
        line for _, out, _ in results for line in out.splitlines() if line.startswith("entries: ")
    )
    assert summaries == [
        "entries: 0 read, 0 loaded, 0 quarantined; new papers: 0; exact duplicates: 0",
        "entries: 57 read, 57 loaded, 0 quarantined; new papers: 54; exact duplicates: 3",
    ]
    with duckdb.connect(str(folder / "data" / "paperwatch.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from papers").fetchone() == (54,)
    home = folder / "data" / ".prefect"
    assert (home / "prefect.db").is_file()
    assert not (tmp_path / "user" / ".prefect" / "prefect.db").exists()
    assert wait_until_no_server(home) == []


@pytest.mark.slow
@pytest.mark.server
def test_a_first_run_on_a_loaded_machine_succeeds(tmp_path: Path) -> None:
    folder = project(tmp_path, "clone")
    env = clean_env(tmp_path / "user")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    try:
        code, out, err = finished(start_run(folder, env))
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert code == 0, out + err
    assert (
        "entries: 57 read, 57 loaded, 0 quarantined; new papers: 54; exact duplicates: 3"
        in out.splitlines()
    )
    assert f"report of {SEEDS_WEEK}: reports/out/{SEEDS_WEEK}.html" in out.splitlines()
    assert wait_until_no_server(folder / "data" / ".prefect") == []


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_a_chosen_server_that_does_not_answer_is_one_clear_error(tmp_path: Path) -> None:
    """PREFECT_API_URL of the user's (environment, profile or prefect.toml) naming a server
    that is down: exit 1 with one line naming the URL and where it was set, nothing
    loaded, no temporary server started."""
    from tests.conftest import SEEDS

    url = f"http://127.0.0.1:{closed_port()}/api"
    profiles = tmp_path / "user" / ".prefect" / "profiles.toml"
    profiles.parent.mkdir(parents=True)
    profiles.write_text(f'active = "mine"\n\n[profiles.mine]\nPREFECT_API_URL = "{url}"\n')
    cases = {
        "environment": ({"PREFECT_API_URL": url}, "set in the environment"),
        "profile": ({"HOME": str(tmp_path / "user")}, f"set by the profile 'mine' of {profiles}"),
        "prefect.toml": ({}, "set in prefect.toml"),
    }
    (tmp_path / "nobody").mkdir()
    for name, (extra, source) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        if name == "prefect.toml":
            (folder / "prefect.toml").write_text(f'[api]\nurl = "{url}"\n', encoding="utf-8")
        env = clean_env(tmp_path / "nobody") | extra
        done, _ = run_command(["ingest", "--folder", str(SEEDS)], folder, env)
        assert done.returncode == 1, (name, done.stdout, done.stderr)
        assert done.stdout == ""
        assert done.stderr.strip() == (
            f"error: the Prefect server at {url} ({source}) cannot be used: Failed to reach "
            f"API at {url}/. Start it (`prefect server start`), or remove PREFECT_API_URL "
            "there and paperwatch starts a temporary server of its own"
        ), name
        assert not (folder / "data" / ".prefect").exists()  # no temporary server's home
        assert not (folder / "data" / "paperwatch.duckdb").exists()  # checked before loading


def test_without_a_home_directory_prefect_still_gets_the_databases_home(tmp_path: Path) -> None:
    """HOME unset and the user's uid not in the password database (a container's user):
    no profiles file to read and no cache folder, instead of Path.expanduser's KeyError."""
    database = tmp_path / "data" / "paperwatch.duckdb"
    code = (
        "import pwd\n"
        "def unknown(uid): raise KeyError(f'getpwuid(): uid not found: {uid}')\n"
        "pwd.getpwuid = unknown\n"
        "from pathlib import Path\n"
        "from paperwatch.cli import prefect_home\n"
        "from paperwatch.prefect_server import template_path\n"
        f"print(prefect_home(Path({str(database)!r})))\n"
        "print(template_path('3.9.1'))\n"
    )
    env = clean_env(tmp_path)
    del env["HOME"]
    env.pop("XDG_CACHE_HOME", None)
    done = _python(code, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{tmp_path / 'data' / '.prefect'}\nNone\n"


@pytest.mark.slow
@pytest.mark.server
def test_ctrl_c_in_the_terminal_during_the_flow_ends_the_run_cleanly(tmp_path: Path) -> None:
    """Ctrl-C sends SIGINT to the terminal's whole process group: the command stops its
    run (exit 130) and then its server, which must not have died first (the run's last
    API calls then failed with "unexpected ConnectError ... please report it")."""
    import signal

    folder = project(tmp_path, "clone")
    process = subprocess.Popen(
        [sys.executable, "-m", "paperwatch", "run", "--as-of", SEEDS_AS_OF],
        cwd=folder,
        env=clean_env(tmp_path / "user"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the group a terminal would signal
    )
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # the runs' progress lines go to stderr
        seen.append(line)
        if "Beginning flow run" in line:  # the flow runs: the server answered
            os.killpg(process.pid, signal.SIGINT)
            break
    out, err = process.communicate(timeout=1200)
    assert process.returncode == 130, "".join(seen) + out + err
    assert "error: stopped by Ctrl-C before it finished" in err, err
    assert "unexpected" not in err and "ConnectError" not in err, err
    home = folder / "data" / ".prefect"
    assert wait_until_no_server(home) == []
    from filelock import FileLock

    with FileLock(home / "paperwatch-server-start.lock", timeout=0):
        pass
