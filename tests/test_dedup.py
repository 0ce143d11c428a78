"""Near-duplicate detection: shingles, LSH parameters, a labelled set, incremental runs, SQL."""

from __future__ import annotations

import functools
import itertools
import random
import re
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pytest

from paperwatch import db
from paperwatch.analysis.duplicates import (
    METHOD,
    NearDuplicate,
    PaperText,
    abstract_signatures,
    agreement_floor,
    jaccard,
    lsh_params,
    plausible_pairs,
    shingle_hash_sets,
    shingles,
    signature_scheme,
    sketch_papers,
    tokenize,
    word_diff,
)
from paperwatch.db import duplicates as dedup_module
from paperwatch.db.duplicates import update_near_duplicates
from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.parse import parse_listing
from paperwatch.settings import DedupSettings, Settings
from tests.near_duplicates import find_near_duplicates

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
T0 = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
THRESHOLD = DedupSettings().threshold
#: Words that occur in no seed abstract, used to replace words deterministically.
REPLACEMENTS = [
    "zeppelin",
    "marmalade",
    "quokka",
    "tambourine",
    "gondola",
    "pistachio",
    "walrus",
    "lantern",
    "saffron",
    "anvil",
]
#: Chinese characters used to replace characters (none occurs in the Chinese test abstracts).
CJK_REPLACEMENTS = "鲸鹦鹉菠萝琵琶骆驼"


def listing_abstracts(path: Path) -> list[str]:
    """Clean abstracts of a listing file, in entry order."""
    return [clean_abstract(e.text).abstract for e in parse_listing(path.read_text("utf-8")).entries]


SEEDS = {p.name[:3]: listing_abstracts(p) for p in sorted((ROOT / "seeds").glob("*.txt"))}
CHINESE = listing_abstracts(DATA / "chinese_abstracts.txt")


@functools.cache
def cached_shingles(text: str, word_shingle: int, char_shingle: int) -> frozenset[str]:
    return shingles(text, word_shingle, char_shingle)


def exact_jaccard(a: str, b: str, dedup: DedupSettings | None = None) -> Fraction:
    """Exact Jaccard of the string shingle sets, as a fraction."""
    dedup = dedup or DedupSettings()
    sa = cached_shingles(a, dedup.word_shingle, dedup.char_shingle)
    sb = cached_shingles(b, dedup.word_shingle, dedup.char_shingle)
    return Fraction(len(sa & sb), len(sa | sb))


# --- Variants -------------------------------------------------------------------------


def replace_words(text: str, count: int, seed: int) -> str:
    words = text.split()
    rng = random.Random(seed)
    for slot, index in enumerate(sorted(rng.sample(range(len(words)), count))):
        words[index] = REPLACEMENTS[slot % len(REPLACEMENTS)]
    return " ".join(words)


def replace_chars(text: str, count: int, seed: int) -> str:
    chars = list(text)
    han = [i for i, c in enumerate(chars) if "\u4e00" <= c <= "\u9fff"]
    rng = random.Random(seed)
    for slot, index in enumerate(sorted(rng.sample(han, count))):
        chars[index] = CJK_REPLACEMENTS[slot % len(CJK_REPLACEMENTS)]
    return "".join(chars)


def change_numbers(text: str) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group(0)) + 3), text)


def case_and_markup(text: str) -> str:
    """Upper-case every 5th word, wrap every 7th in Markdown/LaTeX emphasis, hyphens → spaces."""
    words = text.replace("-", " ").split()
    for i in range(0, len(words), 5):
        words[i] = words[i].upper()
    for i in range(3, len(words), 7):
        words[i] = f"**{words[i]}**" if i % 2 else f"\\emph{{{words[i]}}}"
    return " ".join(words)


def english_variants(text: str, seed: int) -> dict[str, str]:
    return {
        "1 word": replace_words(text, 1, seed),
        "3 words": replace_words(text, 3, seed + 1),
        "10 words": replace_words(text, 10, seed + 2),
        "sentence added": text + " We release our code and data to support future research.",
        "numbers changed": change_numbers(text),
        "case and markup": case_and_markup(text),
    }


def chinese_variants(text: str, seed: int) -> dict[str, str]:
    return {
        "1 char": replace_chars(text, 1, seed),
        "3 chars": replace_chars(text, 3, seed + 1),
        "10 chars": replace_chars(text, 10, seed + 2),
        "sentence added": text + "我们将公开全部代码与数据，以促进后续研究。",
        "numbers changed": change_numbers(text),
        "case and markup": text.replace("，", ",")
        .replace("LLaMA", "**llama**")
        .replace("。", ". "),
    }


def corpus(originals: list[str], variants: dict[str, dict[str, str]]) -> list[PaperText]:
    """Originals first seen at T0, variants a day later; paper ids from clean_abstract."""
    papers: dict[str, PaperText] = {}
    for text in originals:
        clean = clean_abstract(text)
        papers.setdefault(clean.paper_id, PaperText(clean.paper_id, clean.abstract, T0))
    for per_original in variants.values():
        for raw in per_original.values():
            clean = clean_abstract(raw)
            papers.setdefault(
                clean.paper_id, PaperText(clean.paper_id, clean.abstract, T0 + timedelta(days=1))
            )
    return list(papers.values())


def truth(papers: list[PaperText], floor: float) -> set[frozenset[str]]:
    """All unordered pairs whose exact Jaccard is at least ``floor`` (brute force)."""
    return {
        frozenset((a.paper_id, b.paper_id))
        for a, b in itertools.combinations(papers, 2)
        if float(exact_jaccard(a.abstract, b.abstract)) >= floor
    }


def as_pairs(found: list[NearDuplicate]) -> set[frozenset[str]]:
    return {frozenset((p.paper_id, p.duplicate_of)) for p in found}


# --- Tokens, shingles, Jaccard ---------------------------------------------------------


def test_tokens_ignore_case_punctuation_and_split_unspaced_text() -> None:
    assert tokenize("Judge-Aware **HJA**, 1.38× faster; 论文列表") == [
        "judge",
        "aware",
        "hja",
        "1",
        "38",
        "faster",
        "论",
        "文",
        "列",
        "表",
    ]
    assert tokenize("ＫＶ Cache") == ["kv", "cache"]  # NFKC folds full-width letters
    assert tokenize("Straße") == ["strasse"]  # casefold, not lower


def test_shingles_words_characters_and_mixed_text() -> None:
    assert shingles("We propose HJA ranking") == {"we propose hja", "propose hja ranking"}
    assert shingles("键值缓存") == {"键 值 缓", "值 缓 存"}
    assert shingles("我们在LLaMA上测试 ok") == {
        "我 们 在",
        "们 在 llama",
        "在 llama 上",
        "llama 上 测",
        "上 测 试",
        "测 试 ok",
    }
    assert shingles("two words") == {"two words"}
    assert shingles("") == frozenset()
    assert shingles("a b c d", word_shingle=2) == {"a b", "b c", "c d"}


def test_jaccard_exact_and_empty() -> None:
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == 0.5
    assert jaccard(set(), set()) == 0.0
    assert jaccard(np.array([1, 2, 3], np.uint64), np.array([3, 4], np.uint64)) == 0.25


@pytest.mark.parametrize("sizes", [(3, 3), (3, 2), (2, 4)])
def test_hashed_shingles_match_string_shingles(sizes: tuple[int, int]) -> None:
    texts = [t for abstracts in SEEDS.values() for t in abstracts] + CHINESE + ["", "two words"]
    hashes = shingle_hash_sets(texts, *sizes)
    for i, text in enumerate(texts):
        assert len(hashes.set_of(i)) == len(shingles(text, *sizes))
    a, b = texts[0], replace_words(texts[0], 3, 1)
    pair = shingle_hash_sets([a, b], *sizes)
    assert jaccard(pair.set_of(0), pair.set_of(1)) == float(
        exact_jaccard(a, b, DedupSettings(word_shingle=sizes[0], char_shingle=sizes[1]))
    )


def test_lsh_params_default_and_s_curve() -> None:
    params = lsh_params(128, 0.8)
    assert (params.bands, params.rows) == (21, 6)
    assert params.candidate_probability(0.8) == pytest.approx(0.998312, abs=1e-6)
    assert params.candidate_probability(0.85) > 0.9999
    assert params.candidate_probability(0.3) < 0.02
    assert (lsh_params(256, 0.9).bands, lsh_params(256, 0.9).rows) == (18, 14)
    with pytest.raises(ValueError):
        lsh_params(128, 0.0)


# --- Labelled sets ----------------------------------------------------------------------

#: (file, 1-based entry) of the seed abstracts that get variants.
ENGLISH_ORIGINALS = [("000", 1), ("000", 5), ("002", 1), ("002", 6), ("003", 4), ("003", 13)]


def english_set() -> tuple[list[PaperText], dict[str, dict[str, str]]]:
    originals = [SEEDS[f][i - 1] for f, i in ENGLISH_ORIGINALS]
    variants = {o: english_variants(o, seed) for seed, o in enumerate(originals)}
    every_seed = [t for abstracts in SEEDS.values() for t in abstracts]
    return corpus(every_seed, variants), variants


def chinese_set() -> tuple[list[PaperText], dict[str, dict[str, str]]]:
    variants = {o: chinese_variants(o, seed) for seed, o in enumerate(CHINESE)}
    return corpus(CHINESE, variants), variants


def test_english_variant_similarities() -> None:
    hja = SEEDS["000"][0]
    variants = english_variants(hja, 0)
    got = {name: exact_jaccard(hja, clean_abstract(v).abstract) for name, v in variants.items()}
    assert got == {
        "1 word": Fraction(31, 32),
        "3 words": Fraction(10, 11),
        "10 words": Fraction(159, 218),
        "sentence added": Fraction(189, 199),
        "numbers changed": Fraction(1),
        "case and markup": Fraction(1),
    }
    # Upper-casing, emphasis and hyphens change the paper id but not the shingles.
    assert clean_abstract(case_and_markup(hja)).paper_id != clean_abstract(hja).paper_id


def test_english_labelled_set_precision_recall() -> None:
    papers, _ = english_set()
    found = find_near_duplicates(papers)
    flagged = as_pairs(found)
    true_pairs = truth(papers, THRESHOLD)
    strong = truth(papers, 0.85)
    precision = len(flagged & true_pairs) / len(flagged)
    recall = len(flagged & true_pairs) / len(true_pairs)
    recall_strong = len(flagged & strong) / len(strong)
    print(
        f"english: precision {precision:.3f} recall {recall:.3f} "
        f"recall(J>=0.85) {recall_strong:.3f}"
    )
    assert len(papers) == 54 + 6 * 6 - 1  # "numbers changed" of 003#13 has no number: same paper
    assert (len(true_pairs), len(strong), len(flagged)) == (79, 74, 79)
    assert precision == 1.0
    assert recall_strong >= 0.99
    assert flagged == true_pairs
    # Unrelated abstracts on the same topic are far apart and never flagged.
    for file, a, b in [("000", 2, 6), ("003", 4, 7)]:
        left, right = SEEDS[file][a - 1], SEEDS[file][b - 1]
        assert exact_jaccard(left, right) < Fraction(1, 20)
        pair = frozenset((clean_abstract(left).paper_id, clean_abstract(right).paper_id))
        assert pair not in flagged
    seed_ids = {clean_abstract(t).paper_id for abstracts in SEEDS.values() for t in abstracts}
    assert not any(pair <= seed_ids for pair in flagged)


def test_pairs_are_oriented_older_first_and_once() -> None:
    papers, _ = english_set()
    found = find_near_duplicates(papers)
    by_id = {p.paper_id: p for p in papers}
    assert len({frozenset((p.paper_id, p.duplicate_of)) for p in found}) == len(found)
    for pair in found:
        older, newer = by_id[pair.duplicate_of], by_id[pair.paper_id]
        assert (older.first_seen, older.paper_id) < (newer.first_seen, newer.paper_id)
        assert pair.similarity == float(exact_jaccard(older.abstract, newer.abstract))
    assert found == sorted(found)


def test_chinese_labelled_set_precision_recall() -> None:
    papers, _ = chinese_set()
    found = find_near_duplicates(papers)
    flagged = as_pairs(found)
    true_pairs = truth(papers, THRESHOLD)
    strong = truth(papers, 0.85)
    recall_strong = len(flagged & strong) / len(strong)
    print(
        f"chinese: flagged {len(flagged)} true {len(true_pairs)} "
        f"recall(J>=0.85) {recall_strong:.3f}"
    )
    assert len(papers) == 6 + 6 * 6
    assert (len(true_pairs), len(strong)) == (84, 73)
    assert flagged == true_pairs
    assert recall_strong >= 0.99
    # The two federated continual learning abstracts and the two KV-cache abstracts.
    for a, b in [(0, 1), (2, 3)]:
        assert exact_jaccard(CHINESE[a], CHINESE[b]) < Fraction(1, 20)
        pair = frozenset((clean_abstract(CHINESE[a]).paper_id, clean_abstract(CHINESE[b]).paper_id))
        assert pair not in flagged
    first = CHINESE[0]
    assert exact_jaccard(first, replace_chars(first, 1, 0)) == Fraction(239, 245)


def test_incremental_batches_equal_one_batch_in_memory() -> None:
    papers, _ = english_set()
    rng = random.Random(4)
    shuffled = papers[:]
    rng.shuffle(shuffled)
    first, second = shuffled[:40], shuffled[40:]
    incremental = find_near_duplicates(first) + find_near_duplicates(second, earlier=first)
    assert sorted(incremental) == find_near_duplicates(papers)


# --- DuckDB: incremental == from scratch ----------------------------------------------------


def insert_papers(con: duckdb.DuckDBPyConnection, papers: list[PaperText]) -> None:
    for position, paper in enumerate(papers, start=1):
        con.execute(
            """
            insert into papers (paper_id, abstract, abstract_raw, method_name, first_sentence,
                word_count, code_urls, venue, year, first_file_id, first_position, first_seen,
                first_seen_week)
            values (?, ?, ?, null, ?, ?, [], 'NeurIPS', 2026, 1, ?, ?, ?)
            """,
            [
                paper.paper_id,
                paper.abstract,
                paper.abstract,
                paper.abstract[:40],
                len(paper.abstract.split()),
                position,
                paper.first_seen,
                paper.first_seen.strftime("%G-W%V"),
            ],
        )


def near_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "select paper_id, duplicate_of, similarity, method from near_duplicates order by all"
    ).fetchall()


def test_update_near_duplicates_incremental_equals_from_scratch(tmp_path: Path) -> None:
    english, _ = english_set()
    chinese, _ = chinese_set()
    papers = english + chinese
    rng = random.Random(11)
    rng.shuffle(papers)
    first, second = papers[:50], papers[50:]
    settings = Settings()

    with db.writer(tmp_path / "incremental.duckdb") as con:
        insert_papers(con, first)
        n1 = update_near_duplicates(con, settings, T0)
        assert update_near_duplicates(con, settings, T0) == 0  # nothing new: nothing to do
        insert_papers(con, second)
        n2 = update_near_duplicates(con, settings, T0 + timedelta(days=7))
        incremental = near_rows(con)
        signatures = con.execute(
            "select count(*), count(distinct scheme), min(len(signature)) from paper_minhash"
        ).fetchone()
        bands = con.execute("select count(*) from paper_lsh_bands").fetchone()
    with db.writer(tmp_path / "scratch.duckdb") as con:
        insert_papers(con, papers)
        n = update_near_duplicates(con, settings, T0)
        scratch = near_rows(con)

    assert incremental == scratch
    assert n1 + n2 == n == len(scratch) == 79 + 84
    assert signatures == (len(papers), 1, 128)
    assert bands == (len(papers) * 21,)
    assert {row[3] for row in scratch} == {METHOD}
    expected = find_near_duplicates(papers)
    assert [(p.paper_id, p.duplicate_of, p.similarity, METHOD) for p in expected] == scratch


def test_update_near_duplicates_of_given_paper_ids_equals_from_scratch(tmp_path: Path) -> None:
    """A batch's paper ids sketch only those papers; a paper left without a signature
    (a killed run) waits for the sweep without ids, and the pairs end up the same."""
    english, _ = english_set()
    chinese, _ = chinese_set()
    papers = english + chinese
    random.Random(12).shuffle(papers)
    first, left, second = papers[:40], papers[40:60], papers[60:]
    settings = Settings()

    with db.writer(tmp_path / "by_ids.duckdb") as con:
        insert_papers(con, first + left)
        n1 = update_near_duplicates(con, settings, T0, paper_ids=[p.paper_id for p in first])
        sketched = con.execute("select count(*) from paper_minhash").fetchone()
        insert_papers(con, second)
        ids = [p.paper_id for p in second] + [first[0].paper_id]  # one already sketched
        # Signatures computed elsewhere for most of them: their abstracts are not read,
        # except for the papers of candidate pairs.
        signed = second[: len(second) * 2 // 3]
        matrix = abstract_signatures([p.abstract for p in signed], settings.dedup)
        given = {p.paper_id: matrix[i] for i, p in enumerate(signed)}
        n2 = update_near_duplicates(
            con, settings, T0 + timedelta(days=7), signatures=given, paper_ids=ids
        )
        unsketched = con.execute(
            "select count(*) from papers anti join paper_minhash using (paper_id)"
        ).fetchone()
        n3 = update_near_duplicates(con, settings, T0 + timedelta(days=7))
        by_ids = near_rows(con)
        signatures = con.execute(
            "select count(*), count(distinct paper_id) from paper_minhash"
        ).fetchone()
    with db.writer(tmp_path / "scratch.duckdb") as con:
        insert_papers(con, papers)
        update_near_duplicates(con, settings, T0)
        scratch = near_rows(con)

    assert sketched == (len(first),)
    assert unsketched == (len(left),)
    assert signatures == (len(papers), len(papers))  # the sketched one was not sketched twice
    assert by_ids == scratch
    assert n1 + n2 + n3 == len(scratch) == 79 + 84


@pytest.mark.parametrize("backfill_share", [0.0, 2.0], ids=["every-bucket", "touched"])
def test_batches_sketched_then_compared_once_equal_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backfill_share: float
) -> None:
    """An ingestion run sketches each batch (``compare=False``: the papers wait in
    ``paper_lsh_pending``, no pair is recorded) and compares them all at its end: the
    pairs are those of a from-scratch run, and nothing is left pending; whether the
    candidate query ranks every shared bucket or only those the pending papers touch
    (share 0: always the first, 2: always the second)."""
    monkeypatch.setattr(dedup_module, "BACKFILL_SHARE", backfill_share)
    english, _ = english_set()
    chinese, _ = chinese_set()
    papers = english + chinese
    random.Random(13).shuffle(papers)
    batches = [papers[:30], papers[30:70], papers[70:]]
    settings = Settings()

    with db.writer(tmp_path / "deferred.duckdb") as con:
        sketched = []
        for batch in batches:
            insert_papers(con, batch)
            ids = [p.paper_id for p in batch]
            assert update_near_duplicates(con, settings, T0, paper_ids=ids, compare=False) == 0
            sketched.append(con.execute("select count(*) from paper_lsh_pending").fetchone())
        assert near_rows(con) == []
        compared = update_near_duplicates(con, settings, T0)
        deferred = near_rows(con)
        left = con.execute("select count(*) from paper_lsh_pending").fetchone()
        assert update_near_duplicates(con, settings, T0) == 0  # nothing pending: nothing to do
    with db.writer(tmp_path / "scratch.duckdb") as con:
        insert_papers(con, papers)
        update_near_duplicates(con, settings, T0)
        scratch = near_rows(con)

    assert sketched == [(30,), (70,), (len(papers),)]
    assert left == (0,)
    assert deferred == scratch
    assert compared == len(scratch) == 79 + 84


def test_update_near_duplicates_rebuilds_when_settings_change(tmp_path: Path) -> None:
    papers, _ = english_set()
    looser = Settings(dedup=DedupSettings(threshold=0.6))
    assert signature_scheme(looser.dedup) != signature_scheme(Settings().dedup)
    with db.writer(tmp_path / "a.duckdb") as con:
        insert_papers(con, papers)
        update_near_duplicates(con, Settings(), T0)
        kept = dict(
            con.execute(
                "select (paper_id, duplicate_of), detected_at from near_duplicates"
            ).fetchall()
        )
        added = update_near_duplicates(con, looser, T0 + timedelta(days=1))
        changed = near_rows(con)
        times = dict(
            con.execute(
                "select (paper_id, duplicate_of), detected_at from near_duplicates"
            ).fetchall()
        )
        back = update_near_duplicates(con, Settings(), T0 + timedelta(days=2))
        restored = near_rows(con)
    with db.writer(tmp_path / "b.duckdb") as con:
        insert_papers(con, papers)
        update_near_duplicates(con, looser, T0)
        assert changed == near_rows(con)
    assert added == len(changed) - len(kept) > 0
    assert all(times[key] == when for key, when in kept.items())  # earlier rows keep detected_at
    assert back == 0 and len(restored) == len(kept)


def test_update_near_duplicates_requires_aware_time(tmp_path: Path) -> None:
    with db.writer(tmp_path / "a.duckdb") as con, pytest.raises(ValueError):
        update_near_duplicates(con, Settings(), datetime(2026, 1, 1))


# --- Word diff ------------------------------------------------------------------------


def test_word_diff_marks_changes_and_elides_long_equal_runs() -> None:
    old = "a b c d e f g h i j k l m n o p q r s t"
    new = "a b c d e f g h i j X l m n o p q r s t u"
    assert word_diff(old, new, context=3) == [
        ("equal", "… h i j"),
        ("delete", "k"),
        ("insert", "X"),
        ("equal", "l m n … r s t"),
        ("insert", "u"),
    ]
    assert word_diff("same text", "same text") == [("equal", "same text")]
    assert word_diff("one two", "one three two", context=1) == [
        ("equal", "one"),
        ("insert", "three"),
        ("equal", "two"),
    ]


# --- SQL: duplicates_by_week and report_duplicates ------------------------------------------


def test_duplicates_by_week_and_report_query(tmp_path: Path) -> None:
    hja, hestia, other = SEEDS["000"][0], SEEDS["000"][4], SEEDS["000"][2]
    revised = replace_words(hja, 1, 0)
    ids = {
        name: clean_abstract(t).paper_id
        for name, t in {"hja": hja, "hestia": hestia, "other": other, "revised": revised}.items()
    }
    w1, w2 = T0, T0 + timedelta(days=7)
    with db.writer(tmp_path / "w.duckdb") as con:
        files = [  # file_id, path, sha, first_seen, supersedes
            (1, "000_a.txt", "s1", w1, None),
            (2, "002_b.txt", "s2", w2, None),
            (3, "000_a.txt", "s3", w2, 1),  # a new version of file 1
        ]
        for file_id, path, sha, seen, supersedes in files:
            con.execute(
                """
                insert into listing_files (file_id, sha256, path, name, size_bytes, mtime_ns,
                    status, supersedes, first_seen, first_seen_week, run_id)
                values (?, ?, ?, ?, 1, 1, 'loaded', ?, ?, ?, 'r')
                """,
                [file_id, sha, path, path, supersedes, seen, seen.strftime("%G-W%V")],
            )
        occurrences = [  # file_id, position, paper
            (1, 1, "hja"),
            (1, 2, "hestia"),
            (1, 3, "other"),
            (2, 1, "hestia"),  # exact duplicate across files in week 2
            (3, 1, "revised"),
            (3, 2, "hestia"),
            (3, 3, "other"),  # carried over: not new
        ]
        for file_id, position, name in occurrences:
            con.execute(
                "insert into paper_occurrences (file_id, position, line, paper_id, raw_text, run_id) values (?, ?, ?, ?, 'raw', 'r')",
                [file_id, position, position * 2, ids[name]],
            )
        texts = {
            "hja": (hja, w1, 1, 1),
            "hestia": (hestia, w1, 1, 2),
            "other": (other, w1, 1, 3),
            "revised": (revised, w2, 3, 1),
        }
        for name, (text, seen, file_id, position) in texts.items():
            con.execute(
                """
                insert into papers (paper_id, abstract, abstract_raw, method_name, first_sentence,
                    word_count, code_urls, first_file_id, first_position, first_seen,
                    first_seen_week)
                values (?, ?, ?, ?, 'x', 1, [], ?, ?, ?, ?)
                """,
                [
                    ids[name],
                    clean_abstract(text).abstract,
                    text,
                    name,
                    file_id,
                    position,
                    seen,
                    seen.strftime("%G-W%V"),
                ],
            )
        assert update_near_duplicates(con, Settings(), w2) == 1
        rows = con.execute(
            """
            select kind, week, paper_id, duplicate_of, similarity, file_name, position,
                original_file_name, original_position, is_revision
            from duplicates_by_week order by all
            """
        ).fetchall()
        report = db.query(con, "report_duplicates", week="2026-W49")
        assert db.query(con, "report_duplicates", week="2026-W48") == []

    similarity = float(Fraction(31, 32))
    assert rows == [
        (
            "exact",
            "2026-W49",
            ids["hestia"],
            ids["hestia"],
            1.0,
            "002_b.txt",
            1,
            "000_a.txt",
            2,
            False,
        ),
        (
            "near",
            "2026-W49",
            ids["revised"],
            ids["hja"],
            similarity,
            "000_a.txt",
            1,
            "000_a.txt",
            1,
            True,  # file 3 is a new version of file 1, which held the original
        ),
    ]
    assert [
        (r["kind"], r["paper_id"], r["method_name"], r["similarity"], r["is_revision"])
        for r in report
    ] == [
        ("exact", ids["hestia"], "hestia", 1.0, False),
        ("near", ids["revised"], "revised", similarity, True),
    ]
    exact, near = report
    assert [(o["file_id"], o["file"], o["position"]) for o in exact["occurrences"]] == [
        (1, "000_a.txt", 2),
        (3, "000_a.txt", 2),
        (2, "002_b.txt", 1),
    ]
    assert exact["duplicate_of"] is None and exact["original_abstract"] is None
    assert near["duplicate_of"] == ids["hja"]
    assert near["original_method_name"] == "hja"
    assert [(o["file"], o["position"]) for o in near["original_occurrences"]] == [("000_a.txt", 1)]
    diff = word_diff(near["original_abstract"], near["abstract"])
    assert [op for op, _ in diff] == ["equal", "delete", "insert", "equal"]


def test_given_signatures_make_the_same_tables_as_sketching_here(tmp_path: Path) -> None:
    """Signatures computed elsewhere (the preparation workers) for some papers: the stored
    signatures, band keys and pairs are those of sketching every paper here."""
    english, _ = english_set()
    chinese, _ = chinese_set()
    papers = english + chinese
    settings = Settings()
    given_to = papers[::2]  # half the papers come with a signature
    computed = abstract_signatures([p.abstract for p in given_to], settings.dedup)
    assert computed.shape == (len(given_to), 128) and computed.dtype == np.uint32
    given = {p.paper_id: computed[i] for i, p in enumerate(given_to)}

    def tables(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple[object, ...]], ...]:
        return (
            near_rows(con),
            con.execute("select paper_id, signature from paper_minhash order by 1").fetchall(),
            con.execute(
                "select band, band_key, paper_id from paper_lsh_bands order by all"
            ).fetchall(),
        )

    with db.writer(tmp_path / "given.duckdb") as con:
        insert_papers(con, papers)
        n_given = update_near_duplicates(con, settings, T0, given)
        with_given = tables(con)
    with db.writer(tmp_path / "here.duckdb") as con:
        insert_papers(con, papers)
        n_here = update_near_duplicates(con, settings, T0)
        here = tables(con)
    assert n_given == n_here == 79 + 84
    assert with_given == here
    assert len(here[1]) == len(papers) and len(here[2]) == len(papers) * 21


def test_sketch_with_given_signatures_shingles_only_the_others() -> None:
    papers, _ = english_set()
    dedup = DedupSettings()
    whole = sketch_papers(papers, dedup)
    given = {papers[0].paper_id: whole.signatures[0], papers[2].paper_id: whole.signatures[2]}
    partial = sketch_papers(papers, dedup, given)
    assert np.array_equal(partial.signatures, whole.signatures)
    assert np.array_equal(partial.band_keys, whole.band_keys)
    assert partial.shingled == [p.paper_id for i, p in enumerate(papers) if i not in (0, 2)]
    pairs = [(papers[0].paper_id, papers[1].paper_id)]
    assert list(partial.shingle_sets(pairs)) == [papers[1].paper_id]
    assert list(whole.shingle_sets(pairs)) == sorted([papers[0].paper_id, papers[1].paper_id])
    with pytest.raises(ValueError, match="shape"):
        sketch_papers(papers, dedup, {papers[0].paper_id: whole.signatures[0][:64]})


def test_the_agreement_floor_is_eight_standard_deviations_below_the_threshold() -> None:
    assert agreement_floor(128, 0.8) == pytest.approx(0.8 - 8 * (0.8 * 0.2 / 128) ** 0.5)
    assert round(agreement_floor(128, 0.8), 4) == 0.5172


def test_plausible_pairs_drop_candidates_whose_signatures_agree_too_little() -> None:
    floor = agreement_floor(128, 0.8)  # 66.2 of 128 positions
    base = np.arange(128, dtype=np.uint32)

    def agreeing(n: int) -> np.ndarray:
        other = base.copy()
        other[n:] += 1000  # the first n positions agree
        return other

    ids = ["a", "b", "c", "d"]
    signatures = np.stack([base, agreeing(67), agreeing(66), agreeing(128)])
    pairs = [("a", "b"), ("a", "c"), ("a", "d"), ("a", "unsigned"), ("b", "c")]
    assert plausible_pairs(pairs, ids, signatures, floor) == [
        ("a", "b"),  # 67 of 128 agree: verified
        ("a", "d"),
        ("a", "unsigned"),  # no signature to judge by: verified
        ("b", "c"),  # 127 of 128 agree (only position 66 differs)
    ]
    assert plausible_pairs([], ids, signatures, floor) == []
