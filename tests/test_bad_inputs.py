"""Bad inputs: each is loaded, quarantined or passed over with a clear reason; nothing is lost."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from paperwatch.flows.ingest import ingest_listings, read_listing_files
from paperwatch.ingest.files import ListingFileStat

from .conftest import SEEDS

AS_OF = "2026-11-25T10:00:00+00:00"
HEADER = "ICLR 2025 accepted papers"
SEED_TEXT = (SEEDS / "002_bf103a832150c832.txt").read_text(encoding="utf-8")
ABSTRACTS = SEED_TEXT.rstrip("\n").split("\n\n")[1:]
GOOD = ABSTRACTS[0]

pytestmark = pytest.mark.usefixtures("prefect_harness")


def rows(database: Path, sql: str, params: list[object] | None = None) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def listing(*entries: str, header: str | None = HEADER) -> str:
    return "\n\n".join(([header] if header else []) + list(entries)) + "\n"


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    w = lambda name, data: (folder / name).write_bytes(data)  # noqa: E731
    w("010_0000000000000001.txt", listing("Un modèle é " + GOOD).encode("cp1252"))
    w("011_0000000000000002.txt", listing(GOOD).encode("utf-16"))
    w("012_0000000000000003.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    w(
        "013_0000000000000004.txt",
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << /Type /Catalog >> endobj\n",
    )
    w("014_0000000000000005.txt", b"")
    w("015_0000000000000006.txt", listing().encode())
    w(
        "016_0000000000000007.txt",
        listing(GOOD, "word " * 20000, "Three words only.", ABSTRACTS[1]).encode(),
    )
    w("017_0000000000000008.txt", listing(*([ABSTRACTS[2]] * 5)).encode())
    mojibake = ABSTRACTS[3].replace("’", "â€™").replace("é", "Ã©") + " Itâ€™s cafÃ© time."
    w("018_0000000000000009.txt", listing(mojibake, ABSTRACTS[4]).encode())
    html = (
        "We propose TabNet <table><tr><td>cell</td></tr></table> and <script>alert(1)</script> "
        + ABSTRACTS[5]
    )
    w("019_000000000000000a.txt", listing(html).encode())
    w("020_000000000000000b.txt", listing(ABSTRACTS[6]).encode() + b"\x00\x00trailing")
    w("NeurIPS 2026 论文 列表.txt", listing(ABSTRACTS[7], header="NeurIPS 2026 论文列表").encode())
    (folder / "x.txt").mkdir()
    (folder / "notes.pdf").write_bytes(b"%PDF-1.4 not a listing")
    (folder / ".hidden.txt").write_text("ignored silently")
    (folder / "draft.txt~").write_text("editor backup")
    os.symlink("loop.txt", folder / "loop.txt")
    outside = folder.parent / "outside-secret.txt"
    outside.write_text(listing(GOOD.replace("SPIRIT", "SECRET")), encoding="utf-8")
    os.symlink(outside, folder / "022_000000000000000d.txt")
    os.symlink("/proc/self/environ", folder / "023_000000000000000e.txt")
    # A 50 MB listing: many entries, all the same abstract.
    big = listing(*([ABSTRACTS[8]] * (50 * 1024 * 1024 // (len(ABSTRACTS[8]) + 2) + 1)))
    w("021_000000000000000c.txt", big.encode())
    return folder


@pytest.fixture(scope="module")
def ingested(bad_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    database = tmp_path_factory.mktemp("db") / "pw.duckdb"
    summary = ingest_listings(str(bad_folder), str(database), AS_OF)
    return database, summary


def status(database: Path, name: str) -> tuple:
    found = rows(database, "select status, reason from listing_files where name = ?", [name])
    assert len(found) == 1, found
    return found[0]


def test_latin1_file_is_quarantined_with_offset_and_guess(ingested: tuple[Path, object]) -> None:
    database, _ = ingested
    state, reason = status(database, "010_0000000000000001.txt")
    offset = len(f"{HEADER}\n\nUn mod".encode())
    assert state == "quarantined"
    assert reason == (
        f"not UTF-8 text: invalid byte at {offset} (line 3); looks like Windows-1252/Latin-1 text "
        "(…epted papers Un modèle é Self-speculati…); save it as UTF-8"
    )


def test_utf16_file_is_quarantined(ingested: tuple[Path, object]) -> None:
    state, reason = status(ingested[0], "011_0000000000000002.txt")
    assert state == "quarantined"
    assert reason == (
        "contains NUL bytes (a binary file, or UTF-16 text): first at byte 3 (line 1); "
        "UTF-16 text (byte-order mark); save it as UTF-8"
    )


@pytest.mark.parametrize(
    ("encoding", "kind"), [("utf-32", "UTF-32"), ("utf-16", "UTF-16"), ("utf-16-be", None)]
)
def test_a_text_in_utf16_or_utf32_is_named_by_its_encoding(
    tmp_path: Path, encoding: str, kind: str | None
) -> None:
    from paperwatch.ingest.files import prepare_file, scan_folder

    path = tmp_path / "wide.txt"
    path.write_bytes(listing(GOOD).encode(encoding))
    (stat,) = scan_folder(tmp_path).files
    detail = prepare_file(stat, path.read_bytes()).nul_detail
    expected = f"{kind} text (byte-order mark)" if kind else "UTF-16 text without a byte-order mark"
    assert detail is not None and detail.endswith(f"{expected}; save it as UTF-8")


def test_binary_files_are_quarantined(ingested: tuple[Path, object]) -> None:
    assert status(ingested[0], "012_0000000000000003.txt") == (
        "quarantined",
        "contains NUL bytes (a binary file, or UTF-16 text): first at byte 8 (line 3); a PNG image, not a listing",
    )
    assert status(ingested[0], "013_0000000000000004.txt") == (
        "quarantined",
        "not UTF-8 text: invalid byte at 10 (line 2); a PDF document, not a listing",
    )


def test_empty_and_header_only_files_are_quarantined(ingested: tuple[Path, object]) -> None:
    reason = "no entries: the file is empty or holds only a header"
    assert status(ingested[0], "014_0000000000000005.txt") == ("quarantined", reason)
    assert status(ingested[0], "015_0000000000000006.txt") == ("quarantined", reason)


def test_entries_too_long_or_too_short_are_quarantined(ingested: tuple[Path, object]) -> None:
    database, _ = ingested
    assert status(database, "016_0000000000000007.txt") == ("loaded", None)
    q = rows(
        database,
        "select position, line, reasons from quarantine q join listing_files f using (file_id) "
        "where f.name = '016_0000000000000007.txt' order by position",
    )
    assert q == [
        (
            2,
            5,
            [
                "the abstract is shorter than 80 or longer than 5,000 characters: 99999",
                "the abstract has fewer than 15 or more than 1,000 words: 20000",
            ],
        ),
        (
            3,
            7,
            [
                "the abstract is shorter than 80 or longer than 5,000 characters: 17",
                "the abstract has fewer than 15 or more than 1,000 words: 3",
            ],
        ),
    ]
    assert rows(
        database,
        "select entry_count, entries_loaded, entries_quarantined from listing_files where name = '016_0000000000000007.txt'",
    ) == [(4, 2, 2)]


def test_file_of_identical_entries_loads_one_paper_with_a_warning(
    ingested: tuple[Path, object],
) -> None:
    database, _ = ingested
    assert rows(
        database,
        "select count(*), count(distinct paper_id) from paper_occurrences o join listing_files f using (file_id) "
        "where f.name = '017_0000000000000008.txt'",
    ) == [(5, 1)]
    assert rows(
        database,
        "select v.severity, v.unexpected_count from validation_results v join listing_files f using (file_id) "
        "where f.name = '017_0000000000000008.txt' and v.outcome = 'failed'",
    ) == [("warning", 5)]


def test_mojibake_entry_is_quarantined(ingested: tuple[Path, object]) -> None:
    q = rows(
        ingested[0],
        "select position, reasons from quarantine q join listing_files f using (file_id) "
        "where f.name = '018_0000000000000009.txt'",
    )
    assert [(p, len(r)) for p, r in q] == [(1, 1)]
    assert q[0][1][0].startswith("mojibake: UTF-8 text that was decoded as Latin-1")


def test_html_in_an_entry_is_loaded_with_a_warning(ingested: tuple[Path, object]) -> None:
    database, _ = ingested
    assert status(database, "019_000000000000000a.txt") == ("loaded", None)
    warned = rows(
        database,
        "select v.expectation from validation_results v join listing_files f using (file_id) "
        "where f.name = '019_000000000000000a.txt' and v.outcome = 'failed' order by 1",
    )
    assert warned == [("expect_column_values_to_not_match_regex(abstract)",)]


def test_nul_bytes_quarantine_the_file(ingested: tuple[Path, object]) -> None:
    state, reason = status(ingested[0], "020_000000000000000b.txt")
    assert state == "quarantined" and reason.startswith("contains NUL bytes")


def test_name_with_spaces_and_non_ascii_is_loaded(ingested: tuple[Path, object]) -> None:
    database, _ = ingested
    assert status(database, "NeurIPS 2026 论文 列表.txt") == ("loaded", None)
    assert rows(
        database,
        "select sequence_number, venue from listing_files where name = 'NeurIPS 2026 论文 列表.txt'",
    ) == [(None, "NeurIPS")]


def test_50_mb_file_loads_with_a_size_warning(ingested: tuple[Path, object]) -> None:
    database, _ = ingested
    ((size, state, entries, loaded),) = rows(
        database,
        "select size_bytes, status, entry_count, entries_loaded from listing_files where name = '021_000000000000000c.txt'",
    )
    assert size > 50 * 1024 * 1024 and state == "loaded" and entries == loaded
    warned = rows(
        database,
        "select v.suite, v.expectation from validation_results v join listing_files f using (file_id) "
        "where f.name = '021_000000000000000c.txt' and v.outcome = 'failed' order by 1, 2",
    )
    assert warned == [
        ("listing_files", "expect_column_values_to_be_between(size_bytes)"),
        ("papers", "expect_compound_columns_to_be_unique(file,paper_id)"),
    ]


def test_passed_over_paths_are_mentioned_once(
    bad_folder: Path, ingested: tuple[Path, object]
) -> None:
    database, summary = ingested
    assert sorted(summary.ignored) == [  # type: ignore[attr-defined]
        ("022_000000000000000d.txt", "link to a file outside the watched folder (not followed)"),
        ("023_000000000000000e.txt", "link to a file outside the watched folder (not followed)"),
        ("draft.txt~", "editor or download temporary file"),
        ("loop.txt", "cannot stat: symbolic link loop"),
        (
            "notes.pdf",
            "not a listing file (.atom, .bib, .json, .jsonl, .markdown, .md, .ndjson, .rss, "
            ".txt, .xml, .yaml, .yml)",
        ),
        ("x.txt", "a folder, not a listing file"),
    ]
    again = ingest_listings(str(bad_folder), str(database), AS_OF)
    assert again.ignored == [] and again.files_loaded == 0


def test_accounting_invariant(ingested: tuple[Path, object]) -> None:
    database, summary = ingested
    broken = rows(
        database,
        """
        select f.name, f.entry_count, f.entries_loaded, f.entries_quarantined,
               (select count(*) from paper_occurrences o where o.file_id = f.file_id) as occurrences,
               (select count(*) from quarantine q where q.file_id = f.file_id and q.kind = 'entry') as quarantined
        from listing_files f
        where f.status = 'loaded' and not (
            f.entries_loaded + f.entries_quarantined = f.entry_count
            and f.entries_loaded = (select count(*) from paper_occurrences o where o.file_id = f.file_id)
            and f.entries_quarantined = (select count(*) from quarantine q where q.file_id = f.file_id and q.kind = 'entry')
        )
        """,
    )
    assert broken == []
    assert rows(
        database,
        "select count(*) from listing_files where status not in ('loaded', 'quarantined', 'duplicate')",
    ) == [(0,)]
    quarantined_files = rows(
        database,
        "select count(*) from listing_files f where status = 'quarantined' "
        "and not exists (select 1 from quarantine q where q.file_id = f.file_id and q.kind = 'file')",
    )
    assert quarantined_files == [(0,)]
    assert summary.files_seen == 13  # the two links out of the folder are not read  # type: ignore[attr-defined]
    assert (summary.files_loaded, summary.files_quarantined) == (6, 7)  # type: ignore[attr-defined]


def test_file_that_vanishes_between_scan_and_read(tmp_path: Path) -> None:
    gone = ListingFileStat(path=tmp_path / "gone.txt", rel="gone.txt", size=10, mtime_ns=0)
    read = read_listing_files.fn([gone], 1024)
    assert read.prepared == []
    assert read.vanished == [
        ("gone.txt", "disappeared between scan and read; it is read when it comes back")
    ]


def test_examples_are_those_of_the_file(ingested: tuple[Path, object]) -> None:
    examples = rows(
        ingested[0],
        "select v.expectation, v.unexpected_examples from validation_results v join listing_files f using (file_id) "
        "where f.name = '016_0000000000000007.txt' and v.outcome = 'failed' order by 1",
    )
    assert examples == [
        # The length check bounds char_count (a CJK character counts as two).
        ("expect_column_values_to_be_between(char_count)", ["99999", "17"]),
        ("expect_column_values_to_be_between(word_count)", ["20000", "3"]),
    ]
