"""Fault injection on the database: truncated, bytes flipped inside a used block, and the
disk filling up during an ingestion. Each ends with one ``error:`` line naming the file and
what to do, no traceback, the documented exit status, and the database as it was.

The full disk is a real one where the test can mount a small tmpfs (a user and mount
namespace: ``unshare --user --map-root-user --mount``, or ``unshare --mount`` as root);
everywhere (CI containers that forbid namespaces included) the same run is also made
under ``RLIMIT_FSIZE`` 0, which makes every write that extends a file fail (``EFBIG``)
exactly where a full disk would (``ENOSPC``).
"""

from __future__ import annotations

import hashlib
import resource
import shlex
import shutil
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import duckdb
import pytest

from paperwatch.exits import EXIT_DAMAGED, EXIT_FAILED

from .conftest import SEEDS
from .test_one_line_errors import assert_one_error_line, paperwatch

pytestmark = pytest.mark.usefixtures("prefect_harness")

AS_OF = "2026-11-26T10:00:00+00:00"


def contents(database: Path) -> dict[str, list[tuple]]:
    """Every table of ``database``, all rows, sorted (opening it is part of the check)."""
    with duckdb.connect(str(database), read_only=True) as con:
        tables = [
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where not internal order by 1"
            ).fetchall()
        ]
        return {t: con.execute(f'select * from "{t}" order by all').fetchall() for t in tables}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def work(seeded_database: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The seeded database and a folder with the seeds and one new listing (work to do)."""
    folder = tmp_path / "listings"
    shutil.copytree(SEEDS, folder)
    seed = (SEEDS / "000_5dc500fada0b6079.txt").read_bytes()
    (folder / "new.txt").write_bytes(seed.replace(b"We ", b"Here we "))
    return seeded_database, folder


def ingest_args(folder: Path, database: Path) -> list[str]:
    return ["ingest", "--folder", str(folder), "--database", str(database), "--as-of", AS_OF]


@pytest.mark.parametrize("how", ["truncated", "flipped"])
def test_a_damaged_database_gets_one_line_exit_4_and_is_left_as_it_was(
    work: tuple[Path, Path], tmp_path: Path, how: str
) -> None:
    database, folder = work
    data = bytearray(database.read_bytes())
    if how == "truncated":
        damaged = bytes(data[: len(data) // 2])
    else:  # one flipped byte in each of the used blocks past the headers (12 KiB)
        for offset in range(12_288 + 1_000, len(data), 262_144):
            data[offset] ^= 0xFF
        damaged = bytes(data)
    database.write_bytes(damaged)
    for args in (
        ingest_args(folder, database),
        ["report", "--week", "2026-W48", "--database", str(database), "--report-dir", "out"],
    ):
        result = paperwatch(tmp_path, *args)
        line = assert_one_error_line(result, EXIT_DAMAGED)
        assert line.startswith(f"error: the database {database} is damaged (")
        assert line.endswith(
            "rebuild it from the listing folder with `paperwatch rebuild` (every listing file "
            "is read again; the damaged file is kept)"
        )
        assert database.read_bytes() == damaged
        assert not database.with_name(database.name + ".wal").exists()


@cache
def _namespace_prefix() -> tuple[str, ...] | None:
    """The ``unshare`` command that lets this process mount a tmpfs, or None."""
    if shutil.which("unshare") is None or sys.platform != "linux":
        return None
    for prefix in (("unshare", "--user", "--map-root-user", "--mount"), ("unshare", "--mount")):
        probe = subprocess.run(
            [*prefix, "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && df /mnt"],
            capture_output=True,
            timeout=60,
        )
        if probe.returncode == 0:
            return prefix
    return None


def _ingest_on_a_full_tmpfs(database: Path, folder: Path, tmp_path: Path) -> Path:
    """Run ``paperwatch ingest`` with the database on a tmpfs with no room left; return the
    folder holding its output and the database file as the run left it."""
    from prefect.settings import PREFECT_API_URL

    prefix = _namespace_prefix()
    assert prefix is not None
    out = tmp_path / "full-run"
    out.mkdir()
    mount = tmp_path / "mnt"
    mount.mkdir()
    kib = database.stat().st_size // 1024 + 256
    on_tmpfs = mount / "paperwatch.duckdb"
    command = shlex.join([sys.executable, "-m", "paperwatch", *ingest_args(folder, on_tmpfs)])
    script = f"""
set -e
mount -t tmpfs -o size={kib}k tmpfs {mount}
cp {database} {on_tmpfs}
dd if=/dev/zero of={mount}/filler bs=4096 2>/dev/null || true
set +e
PREFECT_API_URL={shlex.quote(str(PREFECT_API_URL.value()))} PAPERWATCH_CONFIG= {command} \
    > {out}/stdout 2> {out}/stderr
echo $? > {out}/rc
df -k {mount} | tail -1 > {out}/df
cp {on_tmpfs} {out}/paperwatch.duckdb
if [ -s {on_tmpfs}.wal ]; then cp {on_tmpfs}.wal {out}/paperwatch.duckdb.wal; fi
"""
    setup = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True)
    assert setup.returncode == 0, setup.stderr
    assert (out / "df").read_text().split()[3] == "0"  # no room at all during the run
    return out


def _ingest_without_room_to_grow(database: Path, folder: Path, tmp_path: Path) -> Path:
    """Run ``paperwatch ingest`` under ``RLIMIT_FSIZE`` 0 (every write that extends a file
    fails with ``EFBIG``; ``SIGXFSZ`` ignored so that the write returns the error)."""
    out = tmp_path / "fsize-run"
    out.mkdir()

    def no_room() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))

    import os

    from prefect.settings import PREFECT_API_URL

    environ = {k: v for k, v in os.environ.items() if not k.startswith("PAPERWATCH_")}
    environ.update(PREFECT_API_URL=str(PREFECT_API_URL.value()), PAPERWATCH_CONFIG="")
    result = subprocess.run(
        [sys.executable, "-m", "paperwatch", *ingest_args(folder, database)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        preexec_fn=no_room,
        timeout=600,
    )
    (out / "stdout").write_text(result.stdout)
    (out / "stderr").write_text(result.stderr)
    (out / "rc").write_text(f"{result.returncode}\n")
    shutil.copy(database, out / "paperwatch.duckdb")
    return out


@pytest.mark.parametrize("fill", ["tmpfs", "fsize"])
def test_a_full_disk_during_an_ingestion_gets_one_line_and_changes_nothing(
    work: tuple[Path, Path], tmp_path: Path, fill: str
) -> None:
    database, folder = work
    before = contents(database)
    if fill == "tmpfs":
        if _namespace_prefix() is None:
            pytest.skip(
                "cannot mount a tmpfs here (no unshare, or user and mount namespaces are "
                "forbidden); the fsize variant of this test covers the same path"
            )
        out = _ingest_on_a_full_tmpfs(database, folder, tmp_path)
        expected = "No space left on device"
    else:
        out = _ingest_without_room_to_grow(database, folder, tmp_path)
        expected = "File too large"
    result = subprocess.CompletedProcess(
        [],
        int((out / "rc").read_text()),
        (out / "stdout").read_text(),
        (out / "stderr").read_text(),
    )
    line = assert_one_error_line(result, EXIT_FAILED)
    assert line.startswith("error: the disk holding ")
    assert expected in line
    assert line.endswith("Free some space and run again")
    after = contents(out / "paperwatch.duckdb")  # it opens, and holds what it held
    assert after == before
    assert sum(len(rows) for rows in after.values()) > 0
    assert len(after["papers"]) == 54


def test_an_unwritable_report_folder_gets_one_line_and_changes_nothing(
    seeded_database: Path, tmp_path: Path
) -> None:
    before = contents(seeded_database)
    not_a_folder = tmp_path / "reports.txt"  # a file where the report folder should be
    not_a_folder.write_text("in the way\n", encoding="utf-8")
    result = paperwatch(
        tmp_path,
        "report",
        "--week",
        "2026-W48",
        "--database",
        str(seeded_database),
        "--report-dir",
        str(not_a_folder),
    )
    line = assert_one_error_line(result, EXIT_FAILED)
    assert line.startswith("error: cannot write the report (")
    assert line.endswith(
        f"make the report folder {not_a_folder} writable for this user, or give --report-dir"
    )
    after = contents(seeded_database)
    # The week's trending terms are derived before the files are written; nothing else
    # changed, and no report is recorded as rendered.
    assert {t: r for t, r in after.items() if t != "trending_terms"} == {
        t: r for t, r in before.items() if t != "trending_terms"
    }
    assert after["reports"] == []


def _read_only_run(database: Path, folder: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """``paperwatch ingest`` with the database's folder read-only: by permissions when this
    is not root, else by a read-only bind mount in a mount namespace."""
    import os

    from prefect.settings import PREFECT_API_URL

    args = [sys.executable, "-m", "paperwatch", *ingest_args(folder, database)]
    if os.geteuid() != 0:
        os.chmod(database.parent, 0o555)
        try:
            return paperwatch(tmp_path, *ingest_args(folder, database))
        finally:
            os.chmod(database.parent, 0o755)
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip(
            "running as root without mount namespaces: a folder cannot be made read-only "
            "for this process"
        )
    out = tmp_path / "ro-run"
    out.mkdir()
    script = f"""
set -e
mount --bind {database.parent} {database.parent}
mount -o remount,bind,ro {database.parent}
set +e
PREFECT_API_URL={shlex.quote(str(PREFECT_API_URL.value()))} PAPERWATCH_CONFIG= \
    {shlex.join(args)} > {out}/stdout 2> {out}/stderr
echo $? > {out}/rc
"""
    setup = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True)
    assert setup.returncode == 0, setup.stderr
    return subprocess.CompletedProcess(
        args,
        int((out / "rc").read_text()),
        (out / "stdout").read_text(),
        (out / "stderr").read_text(),
    )


def test_a_read_only_database_folder_gets_one_line_and_changes_nothing(
    work: tuple[Path, Path], tmp_path: Path
) -> None:
    database, folder = work
    before = contents(database)
    result = _read_only_run(database, folder, tmp_path)
    line = assert_one_error_line(result, EXIT_FAILED)
    assert line.startswith(("error: cannot write in the database's folder", "error: cannot write"))
    assert "make the folder writable for this user" in line or "make them writable" in line
    assert contents(database) == before
