"""What the runs show in the Prefect UI (Artifacts tab): pure builders, no Prefect calls.

The flows publish them with :func:`prefect.artifacts.create_table_artifact` and
:func:`prefect.artifacts.create_markdown_artifact` under fixed keys, so the UI
keeps one versioned artifact per key. Keys may hold only lowercase letters,
digits and dashes (Prefect rejects others).
"""

from __future__ import annotations

from pathlib import Path

from paperwatch.db.runs import IngestSummary

#: Artifact key of the ingestion run's file table.
INGEST_ARTIFACT_KEY = "ingest-listings-files"
#: Artifact key of the weekly report's link.
REPORT_ARTIFACT_KEY = "weekly-report"


def ingest_table(summary: IngestSummary) -> list[dict[str, str | int]]:
    """One row per file the run handled (loaded, duplicate, quarantined, vanished).

    Columns: ``file`` (path relative to the folder), ``status``, ``entries``,
    ``loaded``, ``quarantined``, ``new_papers``, ``exact_duplicates``, ``reason``
    (empty when none). Unchanged files are not listed (see the description's counts).
    """
    return [
        {
            "file": f.rel,
            "status": f.status,
            "entries": f.entries,
            "loaded": f.entries_loaded,
            "quarantined": f.entries_quarantined,
            "new_papers": f.new_papers,
            "exact_duplicates": f.exact_duplicates,
            "reason": f.reason or "",
        }
        for f in summary.files
    ]


def ingest_description(summary: IngestSummary) -> str:
    """A one-paragraph Markdown summary of the run's counts, for the artifact description."""
    s = summary
    text = (
        f"**{s.files_loaded}** loaded, {s.files_unchanged} unchanged, "
        f"{s.files_duplicate} duplicate copies, {s.files_quarantined} quarantined "
        f"of {s.files_seen} files; **{s.new_papers}** new papers "
        f"({s.entries_loaded} of {s.entries} entries loaded, "
        f"{s.entries_quarantined} quarantined, {s.exact_duplicates} exact duplicates); "
        f"week {s.week}."
    )
    if s.ignored:
        text += (
            f" Passed over {len(s.ignored)} path(s), e.g. `{s.ignored[0][0]}` ({s.ignored[0][1]})."
        )
    return text


def report_markdown(
    week: str, html_path: Path, text_path: Path, new_papers: int, exact_duplicates: int
) -> str:
    """Markdown pointing at the report files (absolute ``file://`` links) with its figures."""
    html = html_path.resolve()
    text = text_path.resolve()
    return (
        f"# Weekly report {week}\n\n"
        f"- HTML: [{html.name}]({html.as_uri()}) (`{html}`)\n"
        f"- plain text: [{text.name}]({text.as_uri()})\n"
        f"- new papers: {new_papers}\n"
        f"- exact duplicates: {exact_duplicates}\n"
    )
