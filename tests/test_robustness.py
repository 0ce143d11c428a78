"""No input crashes a run: short CJK runs, and random Unicode through every pure stage.

The reproducer ``tests/data/mixed_cjk_short_runs.txt`` holds CJK runs of one character
(图, 猫, 狗, 见) between English words; before the fix, term extraction computed
``len_chars - size + 1`` in UInt32 for them and asked Polars for 32 GiB.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest

from paperwatch.analysis.duplicates import shingle_hash_sets, shingles
from paperwatch.analysis.terms import extract_terms
from paperwatch.ingest.files import prepare_file, scan_folder
from paperwatch.ingest.frames import entries_frame

DATA = Path(__file__).resolve().parent / "data"
SHORT_RUNS = DATA / "mixed_cjk_short_runs.txt"
AS_OF = "2026-11-25T10:00:00+00:00"


def _prepared_short_runs() -> pl.DataFrame:
    stat = next(f for f in scan_folder(DATA).files if f.path.name == SHORT_RUNS.name)
    return entries_frame([prepare_file(stat, SHORT_RUNS.read_bytes())])


def test_short_cjk_runs_give_terms_of_every_run_length() -> None:
    entries = _prepared_short_runs()
    assert entries["paper_id"].to_list() == [
        "9be5e607e99cc0fc",
        "937b344142205fb5",
        "e6c6dc05fba57301",
    ]
    terms = extract_terms(entries.select("paper_id", "abstract"))
    by_paper = {
        pid: set(group["term"].to_list())
        for (pid,), group in terms.group_by("paper_id", maintain_order=True)
    }
    first, second, third = (by_paper[p] for p in entries["paper_id"])
    # One-character runs (图, 猫, 狗) give no n-gram; the five-character run gives 4 + 3.
    assert sorted(t for t in first if not t.isascii()) == [
        "图神",
        "图神经",
        "神经",
        "神经网",
        "经网",
        "经网络",
        "网络",
    ]
    assert {"structure", "message passing", "one-character token", "special case"} <= first
    assert {"retrieval", "本文", "数据集", "问答", "基线"} <= second
    assert len(second) == 41
    # 见 alone gives nothing, 附录 (two characters) one bigram.
    assert sorted(t for t in third if not t.isascii()) == ["附录"]
    assert {"vision-language model", "evaluation harness", "robustness"} <= third
    assert len(terms) == 35 + 41 + 12


def test_short_cjk_runs_give_shingles_and_signatures() -> None:
    abstracts = _prepared_short_runs()["abstract"].to_list()
    hashes = shingle_hash_sets(abstracts)
    assert [int(hashes.offsets[i + 1] - hashes.offsets[i]) for i in range(3)] == [49, 62, 32]
    assert [len(shingles(a)) for a in abstracts] == [49, 62, 32]
    assert "见 附 录" in shingles(abstracts[2])
    # One character of an unspaced script, alone or among words: one shingle, never none.
    assert shingles("图") == frozenset({"图"})
    assert shingles("a 图 b") == frozenset({"a 图 b"})


@pytest.mark.usefixtures("prefect_harness")
def test_short_cjk_runs_file_loads_three_entries_with_terms(tmp_path: Path) -> None:
    from paperwatch.flows.ingest import ingest_listings

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SHORT_RUNS, folder / "004_0000000000000004.txt")
    database = tmp_path / "pw.duckdb"
    summary = ingest_listings(str(folder), str(database), AS_OF)
    assert (summary.files_loaded, summary.entries, summary.entries_loaded) == (1, 3, 3)
    assert summary.new_papers == 3
    with duckdb.connect(str(database), read_only=True) as con:
        counts = con.execute(
            "select paper_id, count(*) from paper_terms group by paper_id order by paper_id"
        ).fetchall()
        assert counts == [
            ("937b344142205fb5", 41),
            ("9be5e607e99cc0fc", 35),
            ("e6c6dc05fba57301", 12),
        ]
        assert con.execute("select count(*) from paper_minhash").fetchone() == (3,)
        assert con.execute(
            "select count(*) from paper_terms where term in ('图神经', '附录', '数据集')"
        ).fetchone() == (3,)
