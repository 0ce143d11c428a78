"""How fast a dropped file is loaded on a real Prefect server, and how many runs a burst makes.

Starts ``prefect server start`` (temporary PREFECT_HOME, free port), ``paperwatch
serve`` and ``paperwatch watch`` on a temporary folder, like tests/test_server.py,
then prints:

- the server's start-up time (until /api/health answers);
- for one seed file: seconds from the copy to the watcher's event, to the flow
  run's start, and to the run's completion;
- for a burst of N files (default 50): the number of ingestion runs and the
  seconds until all are loaded.

Usage: ``PYTHONPATH=. python bench/serve_latency.py [N]``. Figures, not assertions.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_server import (  # noqa: E402
    SEED,
    SEEDS,
    Server,
    _base_env,
    _free_port,
    _ingest_runs,
    _listing,
    _loaded_files,
    _runs_idle,
    _start,
    _stop,
    _wait_for,
)


def main(burst: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="pw-bench-"))
    home, folder = work / "home", work / "in"
    home.mkdir()
    folder.mkdir()
    database = work / "pw.duckdb"
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = _base_env(home)
    procs = []
    try:
        t0 = time.monotonic()
        procs.append(
            _start(
                [sys.executable, "-m", "prefect", "server", "start", "--port", str(port)],
                env,
                work / "server.log",
                work,
            )
        )
        _wait_for("health", lambda: httpx.get(f"{api}/health", timeout=2).status_code == 200, 90)
        print(f"server start-up: {time.monotonic() - t0:.1f} s")
        server = Server(api, home, dict(env, PREFECT_API_URL=api))
        run_env = dict(
            server.env,
            PAPERWATCH_WATCH_DIR=str(folder),
            PAPERWATCH_DATABASE=str(database),
            PAPERWATCH_REPORT_DIR=str(work / "reports"),
        )
        procs.append(
            _start([sys.executable, "-m", "paperwatch", "serve"], run_env, work / "serve.log", work)
        )
        procs.append(
            _start([sys.executable, "-m", "paperwatch", "watch"], run_env, work / "watch.log", work)
        )
        _wait_for("watcher", lambda: "watching" in (work / "watch.log").read_text(), 60)
        _wait_for(
            "startup runs",
            lambda: (
                len(_ingest_runs(server)) > 0
                and _runs_idle(server, datetime.now().astimezone()) is not None
            ),
            120,
        )
        time.sleep(1)

        before = {r.id for r in _ingest_runs(server)}
        t0 = time.monotonic()
        shutil.copy(SEEDS / SEED, folder / SEED)
        _wait_for("event", lambda: "emitted" in (work / "watch.log").read_text(), 60, 0.05)
        t_event = time.monotonic() - t0
        new_run = _wait_for(
            "run start",
            lambda: next(
                (r for r in _ingest_runs(server) if r.id not in before and r.start_time), None
            ),
            120,
            0.2,
        )
        t_start = time.monotonic() - t0
        _wait_for("loaded", lambda: _loaded_files(database).get(SEED) == 19, 120, 0.2)
        t_loaded = time.monotonic() - t0
        print(
            f"one file: event after {t_event:.1f} s, run {new_run.name} started after "
            f"{t_start:.1f} s, 19 papers loaded after {t_loaded:.1f} s (quiet period 2 s)"
        )

        since = datetime.now().astimezone()
        time.sleep(1)
        names = [f"{100 + i:03d}_{i:016x}.txt" for i in range(burst)]
        t0 = time.monotonic()
        for i, name in enumerate(names):
            (folder / name).write_text(_listing(i), encoding="utf-8")
        _wait_for(
            "burst", lambda: all(_loaded_files(database).get(n) == 2 for n in names), 300, 0.5
        )
        t_burst = time.monotonic() - t0
        runs = _wait_for("idle", lambda: _runs_idle(server, since), 120)
        print(
            f"burst of {burst} files: {len(runs)} ingestion run(s), all loaded after {t_burst:.1f} s"
        )
    finally:
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
