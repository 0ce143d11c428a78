"""Reading one digest file of tests/data/ the way ingestion picks its reader."""

from __future__ import annotations

from pathlib import Path

from paperwatch.ingest.parse import Listing
from paperwatch.ingest.readers import decide_format, read_text


def read_digest(path: Path) -> tuple[str, Listing]:
    """The format :func:`decide_format` chooses for ``path`` and the listing it reads.

    Raises:
        AssertionError: no reader takes the file (the message is the decision's reason).
    """
    text = path.read_text(encoding="utf-8")
    decision = decide_format(path.name, text)
    assert decision.format is not None, decision.reason
    return decision.format, read_text(decision.format, text, path.name)
