"""The lines commands print on the terminal about what a run did (stdout, stderr for warnings)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from paperwatch.db.runs import IngestSummary
    from paperwatch.flows.rebuild import RebuildOutcome
    from paperwatch.flows.report import ReportOutcome


def print_ingest(summary: IngestSummary, database: Path) -> None:
    """Counts of files and entries, the quarantined or vanished files, and "nothing new"."""
    s = summary
    typer.echo(
        f"files: {s.files_seen} seen, {s.files_loaded} loaded, {s.files_unchanged} unchanged, "
        f"{s.files_duplicate} duplicate copies, {s.files_quarantined} quarantined"
        + (f", {s.files_vanished} vanished" if s.files_vanished else "")
    )
    typer.echo(
        f"entries: {s.entries} read, {s.entries_loaded} loaded, {s.entries_quarantined} quarantined; "
        f"new papers: {s.new_papers}; exact duplicates: {s.exact_duplicates}"
    )
    if s.ignored:
        typer.echo(
            f"passed over: {len(s.ignored)} path(s), e.g. {s.ignored[0][0]} ({s.ignored[0][1]})"
        )
    for outcome in s.files:
        if outcome.status in ("quarantined", "vanished"):
            typer.echo(f"  {outcome.rel}: {outcome.status}: {outcome.reason}")
    if not s.changed_anything:
        typer.echo(f"nothing new: {database} is up to date")


def print_email(outcome: ReportOutcome) -> None:
    """What the report flow sent, re-sent, skipped as sent before, or wrote as a dry run."""
    for earlier in outcome.pending_sent:
        typer.echo(
            f"sent the report of {earlier.week}, whose earlier send had failed, to "
            f"{', '.join(earlier.recipients)}"
        )
    for week in outcome.pending_failed:
        typer.echo(f"the report of {week} is still not sent (its send failed again)")
    for reader in outcome.already_sent:
        who = reader or "the recipients"
        typer.echo(f"{who}: the report of {outcome.week} was sent before; not sent again")
    for email in (outcome.email, *outcome.reader_emails):
        if email is not None:
            _print_send(email)


def _print_send(email: Any) -> None:
    if email.status == "dry_run":
        size = email.path.stat().st_size if email.path else 0
        typer.echo(
            f"dry run: message for {', '.join(email.recipients)} written to {email.path} "
            f"({size:,} bytes); nothing was sent"
        )
        return
    again = " again" if email.previously_sent_at else ""
    typer.echo(
        f"sent{again} the report of {email.week} to {', '.join(email.recipients)} via "
        f"{email.transport} (Message-ID {email.message_id})"
    )
    for address, reply in email.refused.items():
        typer.echo(f"  refused by the server: {address}: {reply}")


def print_rebuild(outcome: RebuildOutcome, path: Path, folder: Path) -> None:
    """The rebuilt database, where the old one is kept, and what was carried over."""
    print_ingest(outcome.summary, path)
    if outcome.aside is not None:
        state = "damaged" if outcome.damage else "readable"
        typer.echo(f"rebuilt {path}; the old database ({state}) is kept as {outcome.aside}")
    else:
        typer.echo(f"built {path} from {folder} (there was no database)")
    carried = "; ".join(
        f"{item}: {n:,} row{'' if n == 1 else 's'}" for item, n in outcome.carried.carried.items()
    )
    typer.echo(f"carried over from the old database ({carried})")
    for line in outcome.carried.not_carried:
        typer.secho(f"not carried over: {line}", fg=typer.colors.YELLOW, err=True)


def print_quarantine(items: Sequence[Mapping[str, Any]], include_released: bool) -> None:
    """Quarantine rows (:func:`paperwatch.db.quarantine.list_quarantine`), each with its
    reasons and a preview; quarantined text is shown inert (control characters → �)."""
    if not items:
        typer.echo(
            "the quarantine is empty"
            + ("" if include_released else " (or all released; see --all)")
        )
        return
    from paperwatch.report.render import printable

    for item in items:
        where = printable(item["path"]) + (f":{item['line']}" if item["line"] else "")
        what = "file" if item["kind"] == "file" else f"entry {item['position']}"
        typer.echo(f"#{item['quarantine_id']}  {where}  ({what}, {item['week']})")
        for reason in item["reasons"]:
            typer.echo(f"    reason: {printable(reason)}")
        if item["preview"]:
            typer.echo(f"    text:   {printable(' '.join(item['preview'].split())[:120])}")
        elif item["raw_bytes"]:
            typer.echo(f"    bytes:  {item['raw_bytes']:,} kept")
        if item["released_at"]:
            note = f": {item['release_note']}" if item["release_note"] else ""
            typer.echo(
                f"    released by {item['released_by']} on {item['released_at']:%Y-%m-%d %H:%M}{note}"
            )
