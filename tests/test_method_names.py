"""Method names: every seed abstract against hand labels, and examples of each rule.

Labels: tests/data/method_names/seed_labels.tsv (one row per distinct seed abstract,
with the reason); examples: tests/data/method_names/examples.tsv (written for these
tests, one or more per rule, and texts that introduce no name).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.names import find_method_name, render_tex_name
from paperwatch.ingest.parse import decode_listing, parse_listing

from .conftest import SEEDS

DATA = Path(__file__).parent / "data" / "method_names"


def _rows(name: str) -> list[list[str]]:
    with (DATA / name).open(encoding="utf-8", newline="") as f:
        return [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]


def _label(value: str) -> str | None:
    return None if value == "-" else value


SEED_LABELS = {(r[0], int(r[1])): _label(r[2]) for r in _rows("seed_labels.tsv")}
EXAMPLES = [(r[0], r[1], _label(r[2])) for r in _rows("examples.tsv")]


def _seed_names() -> dict[tuple[str, int], str | None]:
    """Method name of each distinct seed abstract, keyed by its first file and position."""
    found: dict[tuple[str, int], str | None] = {}
    seen: set[str] = set()
    for path in sorted(SEEDS.glob("*.txt")):
        for entry in parse_listing(decode_listing(path.read_bytes())).entries:
            cleaned = clean_abstract(entry.text)
            if cleaned.paper_id not in seen:
                seen.add(cleaned.paper_id)
                found[(path.name, entry.position)] = cleaned.method_name
    return found


def test_every_distinct_seed_abstract_is_labelled() -> None:
    assert sorted(SEED_LABELS) == sorted(_seed_names())
    assert len(SEED_LABELS) == 54
    assert sum(name is None for name in SEED_LABELS.values()) == 3


def test_seed_accuracy_and_nothing_invented() -> None:
    found = _seed_names()
    right = sum(found[key] == name for key, name in SEED_LABELS.items())
    invented = [key for key, name in SEED_LABELS.items() if name is None and found[key]]
    assert right / len(SEED_LABELS) >= 0.95
    assert right == 54
    assert invented == []


@pytest.mark.parametrize(("key", "name"), sorted(SEED_LABELS.items()), ids=str)
def test_seed_method_name(key: tuple[str, int], name: str | None) -> None:
    assert _seed_names()[key] == name


@pytest.mark.parametrize(("kind", "text", "name"), EXAMPLES, ids=lambda v: str(v)[:40])
def test_rule_examples(kind: str, text: str, name: str | None) -> None:
    assert clean_abstract(text).method_name == name, kind


def test_every_rule_has_an_example_and_a_counter_example() -> None:
    kinds = {kind for kind, _, _ in EXAMPLES}
    assert kinds >= {
        "adverb",
        "sentence-start",
        "address-with",
        "acronym",
        "tex",
        "our-algorithm",
        "appositive",
        "macro",
    }
    for kind in kinds - {"named", "none", "tex"}:
        assert any(k == kind and n for k, _, n in EXAMPLES), kind
        assert any(k == kind and n is None for k, _, n in EXAMPLES), kind


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("SP^2ec", "SP²ec"),
        ("SP$^{2}$ec", "SP²ec"),
        ("X^{10}", "X¹⁰"),
        ("H_2O", "H₂O"),
        (r"\mathcal{X}-Net", "X-Net"),
        (r"\mathbf{\mathcal{Z}}oo", "Zoo"),
        ("X^{ab}", "X^ab"),
        ("Plain-Name", "Plain-Name"),
    ],
)
def test_render_tex_name(written: str, shown: str) -> None:
    assert render_tex_name(written) == shown


def test_macro_name_is_never_a_name() -> None:
    assert find_method_name("We present hsco, a benchmark.", {"hsco"}) is None
    assert find_method_name("We present hsco, a benchmark. HSCO-Bench has tasks.", {"hsco"}) == (
        "HSCO-Bench"
    )


def test_migration_0006_reads_the_stored_names_again(tmp_path: Path) -> None:
    """A database loaded under the earlier rules gets the names of these rules."""
    from paperwatch import db
    from paperwatch.ingest.names import reread_method_names

    from .report_weeks import build

    database = build(tmp_path / "old.duckdb", {}, seeds_week="2026-W48")
    earlier = {"HSCO-Bench": "hsco", "SP³": "SP^3", "HALO-VGGT": None, "SPEXT": None}
    with db.writer(database) as con:
        for now, before in earlier.items():
            con.execute("update papers set method_name = ? where method_name = ?", [before, now])
        con.execute("delete from schema_migrations where version = 6")
    with db.writer(database) as con:  # a writer applies the pending migration
        names = {r[0] for r in con.execute("select method_name from papers").fetchall()}
        applied = con.execute("select count(*) from schema_migrations where version = 6")
        assert applied.fetchone() == (1,)
        assert reread_method_names(con) == 0  # nothing left to change
    assert set(earlier) <= names and not {"hsco", "SP^3"} & names
