"""How long Prefect's temporary API server takes to start, in a fresh and in a used home.

Each start runs in a new process (``python -c``: import Prefect, start
``SubprocessASGIServer`` as paperwatch's commands do, stop it), with ``PREFECT_HOME``
at a new folder ("fresh": the server creates and migrates its SQLite database) or at
the folder of the previous start ("used": the database exists, the migration check
finds nothing to do). ``--repeat`` times each, interleaved; prints the wall seconds of
the import and of the start, and the 1/5/15-minute load average before each. This is
the cost a "one local server started once and reused" design would save per command,
measured against the project-local home paperwatch uses (``paperwatch.flow_runtime.prefect_home``).

``--commands`` times what a user runs instead: ``paperwatch ingest`` of a copy of
``seeds/`` into a new database (a fresh Prefect home), then again after one file changed
(the home used), three ways, interleaved: ``paperwatch`` as shipped with the migrated
template in the cache (``template``), with an empty cache (``cold``: a machine's first
run), and with ``PREFECT_HOME`` set to a new folder (``plain``: paperwatch leaves the
start to Prefect's own temporary server, no early start, no template, no skipped set-up).

Usage::

    python bench/prefect_start.py --repeat 3
    python bench/prefect_start.py --commands --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, time
t0 = time.perf_counter()
from prefect.server.api.server import SubprocessASGIServer
t1 = time.perf_counter()
server = SubprocessASGIServer()
server.start(timeout=600)
t2 = time.perf_counter()
server.stop()
print(json.dumps({"import_s": t1 - t0, "start_s": t2 - t1}))
"""


def start_once(home: Path) -> dict[str, float]:
    """One start in a new process with ``PREFECT_HOME=home``: seconds of import and start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


SEEDS = Path(__file__).resolve().parent.parent / "seeds"
CHANGED_ENTRY = (
    "\n\nWe study how a watched folder of listings is ingested when one file changes, and "
    "measure the start of the server the flow run needs against the work itself.\n"
)


def ingest_seconds(folder: Path, database: Path, env: dict[str, str]) -> float:
    """Wall seconds of ``paperwatch ingest --folder folder -d database`` as a process."""
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "paperwatch",
            "ingest",
            "--folder",
            str(folder),
            "-d",
            str(database),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started


def commands(repeat: int) -> None:
    """The ``--commands`` rounds (see the module's description)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PAPERWATCH_"))}
    base |= {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PAPERWATCH_CONFIG": ""}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm_cache = root / "warm-cache"
        # The template of this installation, written by one first run (not timed).
        ingest_seconds(
            SEEDS, root / "warmup" / "pw.duckdb", base | {"XDG_CACHE_HOME": str(warm_cache)}
        )
        for r in range(repeat):
            for kind in ("template", "cold", "plain"):
                run = root / f"{kind}{r}"
                folder = run / "listings"
                shutil.copytree(SEEDS, folder)
                env = base | {
                    "XDG_CACHE_HOME": str(warm_cache if kind != "cold" else run / "cache")
                }
                if kind == "plain":
                    env["PREFECT_HOME"] = str(run / "prefect-home")
                load = "/".join(f"{x:.2f}" for x in os.getloadavg())
                first = ingest_seconds(folder, run / "pw.duckdb", env)
                listing = sorted(folder.iterdir())[0]
                listing.write_text(
                    listing.read_text(encoding="utf-8") + CHANGED_ENTRY, encoding="utf-8"
                )
                again = ingest_seconds(folder, run / "pw.duckdb", env)
                print(
                    f"{kind:<8} #{r + 1}  fresh home {first:6.2f} s  used home {again:6.2f} s  "
                    f"load before {load}",
                    flush=True,
                )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commands", action="store_true", help="time paperwatch ingest instead")
    args = parser.parse_args(argv)
    if args.commands:
        commands(args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            home = Path(tmp) / f"home{r}"
            for kind in ("fresh", "used"):
                load = "/".join(f"{x:.2f}" for x in os.getloadavg())
                t = start_once(home)
                print(
                    f"{kind:<5} #{r + 1}  import {t['import_s']:5.2f} s  "
                    f"start {t['start_s']:6.2f} s  load before {load}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
