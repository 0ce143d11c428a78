"""Shared fixtures: the seeds, a fresh database path, one Prefect test harness per session,
the seeds ingested once per session, and a real SMTP server (aiosmtpd on a free port)."""

from __future__ import annotations

import email
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.chromium import Chromium, find_chromium

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
SEED_NAMES = sorted(p.name for p in SEEDS.glob("*.txt"))


@pytest.fixture(scope="session", autouse=True)
def _cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The commands the tests run keep their caches (Prefect's migrated-database template,
    :mod:`paperwatch.prefect_server`) in a folder of the session, not in ``~/.cache``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """A temporary Prefect API (SQLite) for the whole session: flows run for real."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's paperwatch.toml, .env or PAPERWATCH_* variables."""
    for key in list(os.environ):
        if key.startswith("PAPERWATCH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PAPERWATCH_CONFIG", "")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def seed_folder(tmp_path: Path) -> Path:
    """A copy of seeds/ in a temporary folder."""
    folder = tmp_path / "listings"
    shutil.copytree(SEEDS, folder)
    return folder


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A path for a fresh DuckDB file."""
    return tmp_path / "db" / "paperwatch.duckdb"


#: The clock of the session's seed ingestion: Wednesday of ISO week 2026-W48.
SEEDS_AS_OF = "2026-11-25T10:00:00+00:00"
SEEDS_WEEK = "2026-W48"


@pytest.fixture(scope="session")
def seeded_database_file(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeds ingested once per session by the real ``ingest-listings`` flow (week 2026-W48).

    Do not write to it: use :func:`seeded_database`, a fresh copy per test.
    """
    from paperwatch.flows.ingest import ingest_listings

    folder = tmp_path_factory.mktemp("seeded")
    listings = folder / "listings"
    shutil.copytree(SEEDS, listings)
    path = folder / "paperwatch.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("PAPERWATCH_"):
                mp.delenv(key)
        mp.setenv("PAPERWATCH_CONFIG", "")
        summary = ingest_listings(str(listings), str(path), SEEDS_AS_OF)
    assert (summary.new_papers, summary.exact_duplicates, summary.week) == (54, 3, SEEDS_WEEK)
    return path


@pytest.fixture
def seeded_database(seeded_database_file: Path, tmp_path: Path) -> Path:
    """A copy of the session's seeded database for one test (it may write to it)."""
    path = tmp_path / "seeded" / "paperwatch.duckdb"
    path.parent.mkdir(parents=True)
    shutil.copy(seeded_database_file, path)
    return path


# ------------------------------------------------------------- SMTP server


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class Handler:
    """aiosmtpd handler that keeps every message and refuses addresses starting 'nobody'."""

    received: list[Received] = field(default_factory=list)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.startswith("nobody"):
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.received.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.content)
        )
        return "250 OK: queued"


def dead_pid() -> int:
    """The process id of a process that ran and exited (a run killed meanwhile)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    controller: Controller
    handler: Handler

    @property
    def port(self) -> int:
        return int(self.controller.port)


@pytest.fixture
def start_server() -> Iterator[Any]:
    """Factory: start an aiosmtpd server on 127.0.0.1 with the given options; all stopped after."""
    started: list[Controller] = []

    def start(**kwargs: Any) -> Server:
        handler = Handler()
        controller = Controller(
            handler, hostname="127.0.0.1", port=free_port(), server_hostname="mail.test", **kwargs
        )
        controller.start()
        started.append(controller)
        return Server(controller, handler)

    yield start
    for controller in started:
        controller.stop()


@pytest.fixture
def smtp_server(start_server: Any) -> Server:
    """A plain SMTP server without TLS or authentication."""
    return start_server()


def tree(part: EmailMessage) -> Any:
    if part.is_multipart():
        return (part.get_content_type(), [tree(p) for p in part.iter_parts()])  # type: ignore[arg-type]
    return part.get_content_type()


def write_revised_seed(seed_folder: Path) -> None:
    """Add ``005_0123456789abcdef.txt``: the first abstract of seed listing 002 with one
    word changed ("route" → "path"), a near-duplicate of it at Jaccard similarity 0.9741."""
    original = (
        (seed_folder / "002_bf103a832150c832.txt").read_text(encoding="utf-8").split("\n\n")[1]
    )
    revised = original.replace("plug-and-play route", "plug-and-play path", 1)
    assert revised != original
    (seed_folder / "005_0123456789abcdef.txt").write_text(
        f"NeurIPS 2026 论文列表\n\n{revised}\n", encoding="utf-8"
    )


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    """Headless Chromium for the report's browser tests, one per test module; the test
    is skipped (saying why) when Chromium is not installed or does not start."""
    executable = find_chromium()
    if executable is None:
        pytest.skip("Chromium is not installed: run `make browser` (apt-get install chromium)")
    browser = Chromium(executable, tmp_path_factory.mktemp("chromium-profile"))
    try:
        browser.__enter__()
    except RuntimeError as exc:
        pytest.skip(f"Chromium could not start: {exc}")
    yield browser
    browser.__exit__(None, None, None)
