"""The Prefect side of the operator's faults: a killed command leaves no temporary API server
behind, the UI on another port is documented, and ``prefect.yaml``'s ingestion trigger
matches the deployment's own folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from paperwatch.ingest.workers import start_server_guard

from .conftest import ROOT

#: A stand-in for Prefect's temporary server: its command line carries the mark the guard
#: checks before it kills a pid (so a reused pid is never killed).
_FAKE_SERVER = [
    sys.executable,
    "-c",
    "import time; time.sleep(600)",
    "prefect.server.api.server:create_app",
]


def test_the_temporary_server_is_stopped_when_its_command_is_killed() -> None:
    command = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    server = subprocess.Popen(_FAKE_SERVER)
    try:
        guard = subprocess.Popen(
            [sys.executable, "-m", "paperwatch.ingest.workers", str(command.pid), str(server.pid)]
        )
        os.kill(command.pid, signal.SIGKILL)  # the command dies without any clean-up
        command.wait()
        assert server.wait(timeout=60) == -signal.SIGTERM  # stopped by the guard
        assert guard.wait(timeout=60) == 0
    finally:
        for process in (command, server):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_the_guard_leaves_a_process_that_is_not_the_server_alone() -> None:
    command = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        guard = subprocess.Popen(
            [sys.executable, "-m", "paperwatch.ingest.workers", str(command.pid), str(other.pid)]
        )
        os.kill(command.pid, signal.SIGKILL)
        command.wait()
        assert guard.wait(timeout=60) == 0
        assert psutil.Process(other.pid).status() != psutil.STATUS_ZOMBIE
        assert other.poll() is None
    finally:
        for process in (command, other):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_start_server_guard_runs_in_a_session_of_its_own() -> None:
    server = subprocess.Popen(_FAKE_SERVER)
    guard = start_server_guard(server.pid)
    try:
        assert os.getsid(guard.pid) == guard.pid  # Ctrl-C in the terminal does not reach it
    finally:
        server.kill()
        server.wait()
        assert guard.wait(timeout=60) == 0  # the server went first: the guard just ends


def test_readme_says_how_to_run_the_ui_on_another_port() -> None:
    readme = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert (
        "PREFECT_UI_API_URL=http://127.0.0.1:4300/api .venv/bin/prefect server start --port 4300"
        in readme
    )
    assert "`prefect deploy` replaces deployments of the same names" in readme


def test_prefect_yaml_triggers_ingestion_for_its_own_folder_only() -> None:
    config = yaml.safe_load(Path(ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    (ingest,) = [d for d in config["deployments"] if d["name"] == "ingest-listings"]
    folder = ingest["parameters"]["folder"]
    assert folder == "{{ $PAPERWATCH_HOME }}/seeds"
    resources = [t["match"]["prefect.resource.id"] for t in ingest["triggers"]]
    assert resources == [f"paperwatch.folder.{folder}"]


class _StartedServer:
    """Stands in for :class:`paperwatch.prefect_server.TemporaryServer` once started."""

    def wait(self) -> None:
        return None


def _heartbeat_frequency() -> int | None:
    from prefect.settings import get_current_settings

    frequency: int | None = get_current_settings().flows.heartbeat_frequency
    return frequency


def test_runs_on_the_temporary_server_send_no_heartbeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody reads a temporary server's heartbeats, and waiting for the heartbeat thread
    cost the end of every run; a server of the user's own keeps them."""
    from paperwatch import flow_runtime

    monkeypatch.setattr("paperwatch.prefect_server.warm_imports", lambda modules: None)
    default = _heartbeat_frequency()
    assert default is not None

    monkeypatch.setattr(flow_runtime, "_start_early_server", lambda home: _StartedServer())
    with flow_runtime.server_guard():
        assert _heartbeat_frequency() is None
    assert _heartbeat_frequency() == default

    monkeypatch.setattr(flow_runtime, "_start_early_server", lambda home: None)
    monkeypatch.setattr(flow_runtime, "_start_prefects_server", lambda: True)  # Prefect's own
    with flow_runtime.server_guard():
        assert _heartbeat_frequency() is None

    monkeypatch.setattr(flow_runtime, "_start_prefects_server", lambda: False)  # a chosen server
    with flow_runtime.server_guard():
        assert _heartbeat_frequency() == default
