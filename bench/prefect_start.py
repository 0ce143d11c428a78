"""How long Prefect's temporary API server takes to start, in a fresh and in a used home.

Each start runs in a new process (``python -c``: import Prefect, start
``SubprocessASGIServer`` as paperwatch's commands do, stop it), with ``PREFECT_HOME``
at a new folder ("fresh": the server creates and migrates its SQLite database) or at
the folder of the previous start ("used": the database exists, the migration check
finds nothing to do). ``--repeat`` times each, interleaved; prints the wall seconds of
the import and of the start, and the 1/5/15-minute load average before each. This is
the cost a "one local server started once and reused" design would save per command,
measured against the project-local home paperwatch uses (``paperwatch.flow_runtime.prefect_home``).

Usage::

    python bench/prefect_start.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
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
