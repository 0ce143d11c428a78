"""The front door and the generated docs stay true: README length, working links, and the
settings table equal to the settings object."""

from __future__ import annotations

import re
from pathlib import Path

from paperwatch.settings import settings_reference

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def test_settings_table_is_generated_from_the_settings_object() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    table = text.split("<!-- settings:begin -->\n", 1)[1].split("<!-- settings:end -->", 1)[0]
    assert table == settings_reference(), "run `make docs` after changing paperwatch/settings.py"


def test_every_setting_has_a_description() -> None:
    rows = settings_reference().splitlines()[2:]
    assert len(rows) == 52
    assert [row for row in rows if row.endswith("|  |")] == []


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    assert "make run" in "\n".join(lines) and "make test" in "\n".join(lines)


def test_relative_links_of_readme_and_docs_resolve() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(CODE.sub("", page.read_text(encoding="utf-8"))):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
