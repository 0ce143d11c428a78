"""Shared fixtures: the seeds, a fresh database path, and one Prefect test harness per session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
SEED_NAMES = sorted(p.name for p in SEEDS.glob("*.txt"))


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
    monkeypatch.setenv("PAPERWATCH_CONFIG", str(tmp_path / "absent.toml"))
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
