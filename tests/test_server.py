"""The deployments on a real Prefect server: served, triggered by the watcher, scheduled.

One ``prefect server start`` (SQLite in a temporary PREFECT_HOME, a free localhost
port) for the whole module; ``paperwatch serve`` and ``paperwatch watch`` run as
subprocesses against it on a temporary folder and database. Every process is
started in its own process group and terminated at the end.

Run only these: ``pytest -m server``; skip them: ``pytest -m "not server"``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import duckdb
import httpx
import pytest

from .conftest import ROOT, SEEDS

pytestmark = pytest.mark.server

SERVER_START_BUDGET_S = 60.0
SEED = "000_5dc500fada0b6079.txt"  # 19 abstracts
BERLIN = ZoneInfo("Europe/Berlin")
T = TypeVar("T")


@dataclass
class Server:
    api_url: str
    home: Path
    env: dict[str, str]


@dataclass
class Served:
    server: Server
    folder: Path
    database: Path
    report_dir: Path
    logs: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERWATCH_", "PREFECT_"))}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_ENABLED="false",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        PAPERWATCH_CONFIG="",
    )
    return env


def _start(args: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            args,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: terminated with its children
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def _wait_for(
    what: str, probe: Callable[[], T | None], timeout_s: float, every_s: float = 0.5
) -> T:
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception as exc:  # the server or database may be busy: try again
            last_error = exc
            value = None
        if value is not None and value is not False:
            return value
        time.sleep(every_s)
    raise AssertionError(
        f"timed out after {timeout_s:.0f} s waiting for {what} (last error: {last_error!r})"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real ``prefect server start`` on a free port, SQLite in a temporary PREFECT_HOME."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = _free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = _base_env(home)
    server_env = dict(env, PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS="2")
    proc = _start(
        [
            sys.executable,
            "-m",
            "prefect",
            "server",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        server_env,
        home / "server.log",
        home,
    )
    try:

        def healthy() -> bool:
            if proc.poll() is not None:
                raise RuntimeError((home / "server.log").read_text(errors="replace")[-3000:])
            return httpx.get(f"{api_url}/health", timeout=2).status_code == 200

        _wait_for("the Prefect server's /api/health", healthy, SERVER_START_BUDGET_S)
        yield Server(api_url=api_url, home=home, env=dict(env, PREFECT_API_URL=api_url))
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def served(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``paperwatch serve`` and ``paperwatch watch`` on a temporary folder, Berlin time."""
    work = tmp_path_factory.mktemp("served")
    folder, database, report_dir = work / "listings", work / "db" / "pw.duckdb", work / "reports"
    folder.mkdir()
    env = dict(
        server.env,
        PAPERWATCH_WATCH_DIR=str(folder),
        PAPERWATCH_DATABASE=str(database),
        PAPERWATCH_REPORT_DIR=str(report_dir),
        PAPERWATCH_TIMEZONE="Europe/Berlin",
        PAPERWATCH_SCHEDULE__WATCH_QUIET_PERIOD_S="1",
    )
    paperwatch = [sys.executable, "-m", "paperwatch"]
    serve = _start([*paperwatch, "serve"], env, work / "serve.log", work)
    watch = _start([*paperwatch, "watch", "--max-wait", "10"], env, work / "watch.log", work)
    try:
        _wait_for(
            "both deployments",
            lambda: (
                _deployment("weekly-report/weekly-report", server)
                and _deployment("ingest-listings/ingest-listings", server)
            ),
            60,
        )
        _wait_for("the watcher", lambda: "watching" in (work / "watch.log").read_text(), 30)
        yield Served(server, folder, database, report_dir, work)
    finally:
        _stop(watch)
        _stop(serve)
        for log in ("serve.log", "watch.log"):
            print(f"--- {log} (tail) ---\n" + (work / log).read_text(errors="replace")[-4000:])


@contextmanager
def _client(server: Server) -> Iterator[Any]:
    """A synchronous Prefect client on the module's server."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with (
        temporary_settings({PREFECT_API_URL: server.api_url}),
        get_client(sync_client=True) as client,
    ):
        yield client


def _deployment(name: str, server: Server) -> Any:
    from prefect.exceptions import ObjectNotFound

    with _client(server) as client:
        try:
            return client.read_deployment_by_name(name)
        except ObjectNotFound:
            return None


def _ingest_runs(server: Server) -> list[Any]:
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    with _client(server) as client:
        return list(
            client.read_flow_runs(
                deployment_filter=DeploymentFilter(
                    name=DeploymentFilterName(any_=["ingest-listings"])
                ),
                limit=200,
            )
        )


def _runs_idle(server: Server, since: datetime) -> list[Any] | None:
    """The ingestion runs started after ``since`` once none is active or about to start."""
    from prefect.types._datetime import now

    runs = _ingest_runs(server)
    soon = now("UTC").timestamp() + 60
    for run in runs:
        name = run.state.name if run.state else ""
        if run.state and run.state.is_final():
            continue
        due = run.expected_start_time.timestamp() if run.expected_start_time else 0
        if name in ("Running", "Pending", "AwaitingConcurrencySlot") or (
            run.state.is_scheduled() and due < soon
        ):
            return None
    return [r for r in runs if r.start_time and r.start_time >= since]


def _rows(database: Path, sql: str) -> list[tuple[Any, ...]]:
    """Query read-only; a served run holding the write lock is waited for (up to 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            with duckdb.connect(str(database), read_only=True) as con:
                return con.execute(sql).fetchall()
        except duckdb.IOException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _loaded_files(database: Path) -> dict[str, int]:
    rows = _rows(database, "select name, entry_count from listing_files where status = 'loaded'")
    return {name: int(count) for name, count in rows}


def _listing(index: int, entries: int = 2) -> str:
    body = "\n\n".join(
        f"We propose Burst{index}x{e}, a method for streaming ingestion number {index} that "
        f"keeps entry {e} distinct from every other abstract in this synthetic listing file, "
        f"and we evaluate it on {index + e} benchmark tasks with consistent improvements."
        for e in range(entries)
    )
    return f"NeurIPS 2026 论文列表\n\n{body}\n"


def test_a_dropped_seed_file_is_ingested_by_an_event_triggered_run(served: Served) -> None:
    started = datetime.now(tz=BERLIN)
    time.sleep(1.0)  # the server's clock and ours: keep the cut clear
    shutil.copy(SEEDS / SEED, served.folder / SEED)

    def loaded() -> bool:
        return _loaded_files(served.database).get(SEED) == 19

    _wait_for("the seed file in the database", loaded, 120)
    runs = _wait_for("the ingestion runs to finish", lambda: _runs_idle(served.server, started), 60)
    completed = [r for r in runs if r.state and r.state.is_completed()]
    assert completed, [r.state for r in runs]
    assert all(r.state.is_completed() for r in runs), [r.state for r in runs]
    # At least one run was started by the watcher's event (an automation), not the interval.
    assert any(r.created_by and r.created_by.type == "AUTOMATION" for r in completed), [
        r.created_by for r in completed
    ]
    assert _rows(served.database, "select count(*) from papers") == [(19,)]
    assert _rows(served.database, "select count(*) from paper_occurrences") == [(19,)]

    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from paperwatch.report.artifacts import INGEST_ARTIFACT_KEY

    with _client(served.server) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[INGEST_ARTIFACT_KEY]))
        )
    tables = [a.data for a in artifacts if a.type == "table"]
    assert any(SEED in str(t) for t in tables)


def test_weekly_report_deployment_writes_the_report(served: Served) -> None:
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: served.server.api_url}):
        run = run_deployment(
            "weekly-report/weekly-report", parameters={"week": "2026-W48"}, timeout=180
        )
    assert isinstance(run, FlowRun) and run.state is not None
    assert run.state.is_completed(), run.state
    assert (served.report_dir / "2026-W48.html").stat().st_size > 0
    assert (served.report_dir / "2026-W48.txt").exists()


def test_report_schedule_is_monday_0800_berlin_across_daylight_saving(served: Served) -> None:
    from prefect.server.schemas.schedules import CronSchedule

    deployment = _deployment("weekly-report/weekly-report", served.server)
    schedules = [s.schedule for s in deployment.schedules]
    assert [(s.cron, s.timezone) for s in schedules] == [("0 8 * * 1", "Europe/Berlin")]
    assert all(s.active for s in deployment.schedules)

    # The server's own schedule arithmetic, on the cron and zone read back from it:
    # Berlin leaves CET (+01) for CEST (+02) on Sunday 2027-03-28.
    import asyncio

    server_side = CronSchedule(cron=schedules[0].cron, timezone=schedules[0].timezone)
    dates = asyncio.run(server_side.get_dates(n=3, start=datetime(2027, 3, 16, tzinfo=BERLIN)))
    local = [d.astimezone(BERLIN) for d in dates]
    assert [d.strftime("%Y-%m-%d %H:%M %a") for d in local] == [
        "2027-03-22 08:00 Mon",
        "2027-03-29 08:00 Mon",
        "2027-04-05 08:00 Mon",
    ]
    assert [d.utcoffset().total_seconds() / 3600 for d in local] == [1, 2, 2]  # type: ignore[union-attr]
    assert [d.astimezone(ZoneInfo("UTC")).hour for d in local] == [7, 6, 6]

    # And the runs the server's scheduler created: Mondays at 08:00 in Berlin.
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    def scheduled() -> list[Any] | None:
        with _client(served.server) as client:
            runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
            )
        upcoming = [r for r in runs if r.state and r.state.is_scheduled()]
        return upcoming or None

    upcoming = _wait_for("scheduled weekly-report runs", scheduled, 30)
    for run in upcoming:
        start = run.expected_start_time.astimezone(BERLIN)
        assert (start.weekday(), start.hour, start.minute) == (0, 8, 0), start


def test_a_burst_of_50_files_loads_each_once_in_few_runs(served: Served) -> None:
    started = datetime.now(tz=BERLIN)
    time.sleep(1.0)
    names = [f"{100 + i:03d}_{i:016x}.txt" for i in range(50)]
    for i, name in enumerate(names):
        (served.folder / name).write_text(_listing(i), encoding="utf-8")

    def all_loaded() -> bool:
        files = _loaded_files(served.database)
        return all(files.get(n) == 2 for n in names)

    _wait_for("50 burst files in the database", all_loaded, 180)
    runs = _wait_for("the ingestion runs to finish", lambda: _runs_idle(served.server, started), 90)
    assert 1 <= len(runs) <= 10, len(runs)
    assert all(r.state.is_completed() for r in runs), [r.state for r in runs]
    per_file = _rows(
        served.database,
        "select f.name, count(distinct f.file_id), count(o.position) "
        "from listing_files f left join paper_occurrences o using (file_id) "
        f"where f.name in ({', '.join(repr(n) for n in names)}) group by f.name",
    )
    assert sorted(per_file) == [(n, 1, 2) for n in names]


def test_a_half_written_file_is_read_only_when_complete(served: Served) -> None:
    name = "200_00000000000000aa.txt"
    text = _listing(200, entries=3).encode()
    with (served.folder / name).open("wb") as f:
        f.write(text[: len(text) // 2])
        f.flush()
        time.sleep(0.6)  # shorter than the 1 s quiet period
        f.write(text[len(text) // 2 :])

    _wait_for(
        "the file in the database", lambda: _loaded_files(served.database).get(name) == 3, 120
    )
    rows = _rows(
        served.database, f"select entry_count, status from listing_files where name = '{name}'"
    )
    assert rows == [(3, "loaded")]  # one version only: never a partial read


def test_prefect_yaml_deploys_both_to_a_process_work_pool(server: Server, served: Served) -> None:
    """`prefect deploy --all` with the repository's prefect.yaml (runs last: it takes the names over)."""
    env = dict(server.env, PAPERWATCH_HOME=str(ROOT))
    prefect = [sys.executable, "-m", "prefect", "--no-prompt"]
    for args in (
        ["work-pool", "create", "paperwatch-pool", "--type", "process"],
        ["deploy", "--all"],
    ):
        done = subprocess.run(
            [*prefect, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    from prefect.client.schemas.objects import ConcurrencyLimitStrategy

    ingest = _deployment("ingest-listings/ingest-listings", server)
    report = _deployment("weekly-report/weekly-report", server)
    for d in (ingest, report):
        assert d.work_pool_name == "paperwatch-pool"
        assert d.global_concurrency_limit is not None and d.global_concurrency_limit.limit == 1
        assert d.concurrency_options.collision_strategy == ConcurrencyLimitStrategy.ENQUEUE
        assert d.pull_steps == [
            {"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}
        ]
    assert ingest.entrypoint == "flows/ingest.py:ingest_listings"
    assert [s.schedule.interval.total_seconds() for s in ingest.schedules] == [900]
    assert [(s.schedule.cron, s.schedule.timezone) for s in report.schedules] == [
        ("0 8 * * 1", "UTC")
    ]
    with _client(server) as client:
        automations = client.read_resource_related_automations(f"prefect.deployment.{ingest.id}")
    expects = [a.trigger.expect for a in automations if a.enabled]
    assert {"paperwatch.listing.arrived"} in expects
    # The trigger matches the deployment's own folder, nothing else.
    assert ingest.parameters["folder"] == f"{ROOT}/seeds"
    matches = [a.trigger.match for a in automations if a.enabled]
    assert [dict(m.root) for m in matches] == [
        {"prefect.resource.id": f"paperwatch.folder.{ROOT}/seeds"}
    ]


def test_watch_local_ingests_in_process_without_a_server(tmp_path: Path) -> None:
    """`paperwatch watch --local`: no PREFECT_API_URL; the flow runs in the watcher's process."""
    folder, database = tmp_path / "in", tmp_path / "pw.duckdb"
    folder.mkdir()
    env = dict(
        _base_env(tmp_path / "prefect-home"),
        PAPERWATCH_WATCH_DIR=str(folder),
        PAPERWATCH_DATABASE=str(database),
    )
    log = tmp_path / "watch.log"
    proc = _start(
        [sys.executable, "-m", "paperwatch", "watch", "--local", "--quiet-period", "0.5"],
        env,
        log,
        tmp_path,
    )
    try:
        _wait_for("the watcher", lambda: "watching" in log.read_text(), 30)
        shutil.copy(SEEDS / SEED, folder / SEED)
        _wait_for("the ingestion summary", lambda: "new papers: 19" in log.read_text(), 120)
    finally:
        _stop(proc)
    assert "1 file(s) settled, e.g. 000_5dc500fada0b6079.txt: ingesting" in log.read_text()
    assert _rows(database, "select count(*) from papers") == [(19,)]
