"""Rebuilding the database from the listing folder (``paperwatch rebuild``).

Everything paperwatch derives from listings (files, papers, occurrences, quarantine,
validation results, sketches, pairs, terms) is re-made by ingesting every listing file
of the folder again, into a new file beside the database (:func:`rebuild_path`). What
the folder cannot give back is carried over from the old file, table by table, when
it can still be read (:func:`read_carryover`, :func:`apply_carryover`):

- quarantine releases: who released which entry, when and why (the entry is released
  again in the new file, at its original release time);
- ``ignored_paths``: the paths passed over, with when they were first seen;
- ``reports``: the history of rendered, dry-run, sent and failed reports (so a week
  already sent is not sent twice).

Only a rebuild that completed is swapped in (:func:`swap_into_place`): the old file is
hard-linked to ``<database>.damaged-<UTC timestamp>`` (or ``.previous-…`` when it read
without error) and the new file is renamed over the database path in one
:func:`os.replace`, so the path always names a whole database, old or new. The old
file is never deleted.

The rebuilt papers are first seen at the rebuild's clock (``--as-of``): the week in
which each was first seen before is not in the folder.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from paperwatch import db
from paperwatch.clock import iso_week
from paperwatch.db.quarantine import QuarantineError, release_entry


def rebuild_path(database: Path) -> Path:
    """The file a rebuild writes before it is swapped in: ``<database>.rebuilding`` in the
    same folder (the same file system, so the swap is one rename)."""
    return database.with_name(database.name + ".rebuilding")


def aside_path(database: Path, at: datetime, damaged: bool) -> Path:
    """Where the old database is kept: ``<database>.damaged-<UTC yyyymmddThhmmssZ>`` when it
    was damaged, else ``<database>.previous-<…>``; ``-2``, ``-3``… when taken.

    Args:
        at: an aware datetime (converted to UTC).
    """
    stamp = at.astimezone(ZoneInfo("UTC")).strftime("%Y%m%dT%H%M%SZ")
    base = database.with_name(f"{database.name}.{'damaged' if damaged else 'previous'}-{stamp}")
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def remove_partial(path: Path) -> None:
    """Remove a rebuild file left by an earlier rebuild that did not complete (and its
    write-ahead log and spill folder)."""
    for extra in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            extra.unlink()


#: What is carried over, by table: the rows read from the old file.
CARRIED = ("quarantine releases", "ignored paths", "report history")

_RELEASES = (
    "select quarantine_id, path, position, raw_text, released_at, released_by, release_note "
    "from quarantine where kind = 'entry' and released_at is not null order by released_at, "
    "quarantine_id"
)
_IGNORED = "select path, reason, first_seen, run_id from ignored_paths order by path"
_REPORTS_COLUMNS = (
    "week, kind, path, sha256, message_sha256, recipients, message_id, transport, attempts, "
    "resend, error, started_at, happened_at"
)
_REPORTS = f"select {_REPORTS_COLUMNS} from reports order by report_id"


@dataclass
class Carryover:
    """What was read from the old database.

    Attributes:
        rows: per item of :data:`CARRIED`, the rows read (tuples in the column order of
            the queries above); an item that could not be read is missing.
        unreadable: per item of :data:`CARRIED` that could not be read, why (one line).
        damage: what was found damaged in the old file (one line each); empty when every
            table read without error.
        existed: whether there was an old file at all.
        loaded_paths: see below.
    """

    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    damage: list[str] = field(default_factory=list)
    existed: bool = True
    #: Paths of the old database's loaded listing files (relative to the folder they were
    #: ingested from), to tell what the rebuild did not find; None when unreadable.
    loaded_paths: set[str] | None = None

    @property
    def damaged(self) -> bool:
        """True when the old file could not be read whole."""
        return bool(self.damage)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_carryover(database: Path) -> Carryover:
    """Read what a rebuild keeps from the old ``database``, table by table, and check that
    every table of it reads whole (all columns of every row: DuckDB verifies each block's
    checksum as it reads it).

    Never raises for a damaged or unreadable file: what could not be read is in
    :attr:`Carryover.unreadable` and :attr:`Carryover.damage`. Opens the file read-only,
    without the integrity check of :func:`paperwatch.db.reader` (a truncated file may
    still hold readable tables).

    Raises:
        paperwatch.db.DatabaseLockedError: another process holds the file.
    """
    found = Carryover()
    if not database.exists():
        found.existed = False
        return found
    try:
        con = duckdb.connect(
            str(database),
            read_only=True,
            config={
                "autoinstall_known_extensions": False,
                "autoload_known_extensions": False,
                "memory_limit": db.memory_limit(),
            },
        )
    except duckdb.Error as exc:
        if "lock" in str(exc).lower() and not db.is_damage(exc):
            raise db.DatabaseLockedError(
                f"{database} is held open by another program ({_first_line(exc)}); close it "
                "and run `paperwatch rebuild` again"
            ) from exc
        reason = f"the file cannot be opened: {_first_line(exc)}"
        found.damage.append(reason)
        found.unreadable = dict.fromkeys(CARRIED, reason)
        return found
    try:
        try:
            db.check_intact(con, database)
        except db.DatabaseDamagedError as exc:
            found.damage.append(str(exc).split("(", 1)[-1].split(")", 1)[0])
        for item, sql in zip(CARRIED, (_RELEASES, _IGNORED, _REPORTS), strict=True):
            try:
                found.rows[item] = con.execute(sql).fetchall()
            except duckdb.Error as exc:
                found.unreadable[item] = _first_line(exc)
        try:
            found.loaded_paths = {
                str(r[0])
                for r in con.execute(
                    "select distinct path from listing_files where status = 'loaded'"
                ).fetchall()
            }
        except duckdb.Error:
            found.loaded_paths = None
        tables = [
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where not internal order by 1"
            ).fetchall()
        ]
        for table in tables:
            try:
                con.execute(f'select count(*), bit_xor(hash(columns(*))) from "{table}"').fetchall()
            except duckdb.Error as exc:
                found.damage.append(f"table {table}: {_first_line(exc)}")
    finally:
        con.close()
    return found


@dataclass(frozen=True, slots=True)
class CarryoverResult:
    """What :func:`apply_carryover` put into the new database.

    Attributes:
        carried: per item of :data:`CARRIED`, the rows carried over.
        not_carried: one line per item or row that could not be carried over, saying why.
    """

    carried: dict[str, int]
    not_carried: list[str]


def apply_carryover(
    con: duckdb.DuckDBPyConnection, found: Carryover, tz: ZoneInfo
) -> CarryoverResult:
    """Put what :func:`read_carryover` read into the rebuilt database (``con``, read-write,
    after the re-ingestion).

    - each release is made again with :func:`paperwatch.db.quarantine.release_entry` on the
      quarantined entry of the same path, position and text, by the same person, with the
      same note, at the same time (its ISO week in ``tz``); an entry no longer quarantined
      (its file is gone or changed) is reported;
    - ``ignored_paths`` rows replace the ones of the re-ingestion for the same path (the
      original first sighting), and paths no longer in the folder are kept;
    - ``reports`` rows are inserted in their original order (new ``report_id`` values,
      in the same order);
    - listing files loaded into the old database whose path the rebuild did not find (a
      file removed, or ingested from another folder) are reported.
    """
    carried = dict.fromkeys(CARRIED, 0)
    missing = [f"{item}: {why}" for item, why in found.unreadable.items()]
    if found.loaded_paths:
        now = {r[0] for r in con.execute("select distinct path from listing_files").fetchall()}
        gone = sorted(found.loaded_paths - now)
        if gone:
            shown = ", ".join(gone[:5]) + (f" and {len(gone) - 5:,} more" if len(gone) > 5 else "")
            missing.append(
                f"listing files: {len(gone):,} loaded into the old database are not in the "
                f"folder ({shown}); their papers are not in the rebuilt one (ingest their "
                "folder into it to add them)"
            )
    for qid, path, position, raw_text, at, by, note in found.rows.get(CARRIED[0], []):
        row = con.execute(
            "select quarantine_id from quarantine where kind = 'entry' and path = ? and "
            "position = ? and raw_text is not distinct from ? and released_at is null "
            "order by quarantine_id limit 1",
            [path, position, raw_text],
        ).fetchone()
        if row is None:
            missing.append(
                f"release of #{qid} ({path}, entry {position}, by {by}): that entry is not "
                "quarantined in the folder's files now"
            )
            continue
        try:
            release_entry(con, int(row[0]), by=by, note=note, at=at, week=iso_week(at, tz))
        except QuarantineError as exc:
            missing.append(f"release of #{qid} ({path}, entry {position}, by {by}): {exc}")
            continue
        carried[CARRIED[0]] += 1
    ignored = found.rows.get(CARRIED[1], [])
    if ignored:
        with db.transaction(con):
            con.executemany(
                "insert or replace into ignored_paths (path, reason, first_seen, run_id) "
                "values (?, ?, ?, ?)",
                ignored,
            )
        carried[CARRIED[1]] = len(ignored)
    reports = found.rows.get(CARRIED[2], [])
    if reports:
        marks = ", ".join("?" * len(_REPORTS_COLUMNS.split(",")))
        with db.transaction(con):
            con.executemany(
                f"insert into reports ({_REPORTS_COLUMNS}) values ({marks})",
                reports,
            )
        carried[CARRIED[2]] = len(reports)
    return CarryoverResult(carried, missing)


def swap_into_place(new: Path, database: Path, at: datetime, damaged: bool) -> Path | None:
    """Put the completed rebuild ``new`` at ``database`` in one step, keeping the old file.

    The old file gets a second name (a hard link, :func:`aside_path`; its write-ahead log,
    if any, is moved beside it), then ``new`` is renamed over ``database``
    (:func:`os.replace`) and the folder is ``fsync``-ed: at every moment ``database``
    names a whole database. Call it while holding the writer lock, with ``new`` closed
    and checkpointed (no ``.wal``).

    Returns:
        Where the old database now is; None when there was none.

    Raises:
        OSError: the link or the rename failed (then ``database`` is as it was).
    """
    aside: Path | None = None
    if database.exists():
        aside = aside_path(database, at, damaged)
        try:
            os.link(database, aside)
        except OSError:  # no hard links on this file system: a rename keeps it too
            os.rename(database, aside)
        wal = database.with_name(database.name + ".wal")
        if wal.exists():
            os.rename(wal, aside.with_name(aside.name + ".wal"))
    os.replace(new, database)
    fd = os.open(database.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return aside
