"""A reader's library, followed authors and exclusions (issue 47): the settings, reading a
library file, the ranking of a hand-built week against a 30-paper BibTeX library (exact ids
and order, each with its reason), followed authors, exclusions, and bad library files."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from paperwatch.settings import Reader, SmtpSettings

# ------------------------------------------------------------ settings


def test_reader_library_authors_and_exclusions_from_toml() -> None:
    toml = """
[[smtp.readers]]
address = "ann@example.org"
library = "libraries/ann.bib"
authors = ["  Ann   Lee ", "J. Núñez", "Ann Lee"]
exclude = ["Reinforcement  Learning", "reinforcement learning"]

[[smtp.readers]]
address = "cy@example.org"
"""
    ann, cy = SmtpSettings(**tomllib.loads(toml)["smtp"]).readers
    assert ann.library == Path("libraries/ann.bib")  # relative to the working directory
    assert ann.authors == ["Ann Lee", "J. Núñez"]
    assert ann.exclude == ["reinforcement learning"]
    assert ann.library_picks == 10
    assert (cy.library, cy.authors, cy.exclude) == (None, [], [])
    home = Reader(address="x@example.org", library="~/lib.bib")  # type: ignore[arg-type]
    assert home.library == Path.home() / "lib.bib"
    with pytest.raises(ValueError, match="an author is empty"):
        Reader(address="x@example.org", authors=[" "])
    with pytest.raises(ValueError, match="an excluded term is empty"):
        Reader(address="x@example.org", exclude=[""])
