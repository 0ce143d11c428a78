"""The reference pipeline: what a plain pandas + datasketch + DuckDB script does with a folder.

``bench/cli.py`` runs it as a process beside the ``paperwatch`` commands, on the same
corpus, so that paperwatch's figures have something straightforward to be compared with.
It is written the way a data engineer would write it in an afternoon, with the same
cleaning and the same kind of output:

1. read every ``*.txt`` under ``--corpus`` (recursively, sorted), parse it and clean each
   entry with paperwatch's own rules (:func:`paperwatch.ingest.parse.parse_listing`,
   :func:`paperwatch.ingest.clean.clean_abstract`: the same ``paper_id``, method name, first
   sentence, word count), into one pandas frame;
2. load DuckDB tables ``listing_files``, ``paper_occurrences``, ``papers`` (first
   occurrence of each ``paper_id``);
3. near-duplicates: word 3-shingles (character 3-grams for text without spaces), a
   datasketch ``MinHash`` (``--num-perm`` permutations, seed 1) per new paper, one
   ``MinHashLSH`` at ``--threshold`` (datasketch picks its bands and rows), every
   candidate checked by the exact Jaccard similarity of the shingle sets (kept as sorted
   NumPy arrays of 64-bit hashes, 8 bytes a shingle) → table ``near_duplicates``;
4. terms: word 1- to 3-grams not starting or ending with one of paperwatch's stop words
   (:func:`paperwatch.analysis.terms.stop_words`), counted per paper
   → ``paper_terms``; document frequencies per ISO week → ``term_document_frequencies``;
5. the week's report: counts, the near-duplicate pairs, the 15 most frequent terms and
   the new papers as an HTML page (``DataFrame.to_html``) and a CSV, into ``--out``.

All papers are placed in one ISO week: the week of ``--as-of`` (default: the first
week's ``as_of`` of the corpus manifest ``corpus.json`` written by ``bench/corpus.py``).
It prints one line per stage (seconds) and a summary. Usage::

    python bench/reference.py --corpus /tmp/pw10k --database /tmp/ref.duckdb --out /tmp/ref-out
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from datasketch import MinHash, MinHashLSH

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperwatch.analysis.terms import stop_words  # noqa: E402
from paperwatch.ingest.clean import clean_abstract  # noqa: E402
from paperwatch.ingest.parse import parse_listing  # noqa: E402

_WORD = re.compile(r"\w+")
_TERM_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-]+")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
#: Stop words of the reference terms: paperwatch's own list (``paperwatch/data/stopwords.txt``),
#: so that both sides drop the same words at a term's ends.
STOP = stop_words()


def shingle_hashes(text: str, width: int = 3) -> np.ndarray:
    """Sorted distinct 64-bit hashes (``hash()`` of this process) of the text's shingles:
    lower-case word ``width``-grams, or character ``width``-grams when the text has CJK
    characters and almost no spaces. Returns an ``int64`` array (one shingle when the text
    is shorter than ``width``)."""
    lowered = text.lower()
    if _UNSPACED.search(lowered) and lowered.count(" ") * 10 < len(lowered):
        tokens = [c for c in lowered if not c.isspace()]
    else:
        tokens = _WORD.findall(lowered)
    grams = {" ".join(tokens[i : i + width]) for i in range(max(1, len(tokens) - width + 1))}
    return np.unique(np.fromiter((hash(g) for g in grams), dtype=np.int64, count=len(grams)))


def terms_of(text: str) -> Counter[str]:
    """Word 1- to 3-grams of one abstract (lower case), without a stop word at either end,
    with their counts."""
    words = [w.lower() for w in _TERM_TOKEN.findall(text)]
    counts: Counter[str] = Counter()
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if gram[0] in STOP or gram[-1] in STOP:
                continue
            counts[" ".join(gram)] += 1
    return counts


class Stages:
    """Wall seconds per stage, printed as they end."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.last = self.started
        self.seconds: dict[str, float] = {}

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = now - self.last
        print(f"{name}: {now - self.last:.2f} s", flush=True)
        self.last = now


def read_corpus(corpus: Path, week: str, moment: datetime) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every listing file under ``corpus``: ``(files, entries)`` frames."""
    files = []
    entries = []
    for file_id, path in enumerate(sorted(corpus.rglob("*.txt")), start=1):
        data = path.read_bytes()
        listing = parse_listing(data.decode("utf-8-sig"))
        files.append(
            (file_id, str(path.relative_to(corpus)), hashlib.sha256(data).hexdigest(), len(data))
        )
        for e in listing.entries:
            entries.append((file_id, e.position, e.line, e.text))
    files_df = pd.DataFrame(files, columns=["file_id", "path", "sha256", "size_bytes"])
    files_df["first_seen"] = moment
    files_df["first_seen_week"] = week
    entries_df = pd.DataFrame(entries, columns=["file_id", "position", "line", "raw_text"])
    return files_df, entries_df


def clean(entries: pd.DataFrame) -> pd.DataFrame:
    """Add the clean columns (paperwatch's cleaning, row by row)."""
    cleaned = entries["raw_text"].apply(clean_abstract)
    entries["abstract"] = cleaned.map(lambda c: c.abstract)
    entries["paper_id"] = cleaned.map(lambda c: c.paper_id)
    entries["method_name"] = cleaned.map(lambda c: c.method_name)
    entries["first_sentence"] = cleaned.map(lambda c: c.first_sentence)
    entries["word_count"] = cleaned.map(lambda c: c.word_count)
    return entries[entries["abstract"].str.len() > 0]


def near_duplicates(papers: pd.DataFrame, threshold: float, num_perm: int) -> pd.DataFrame:
    """Pairs ``(paper_id, duplicate_of, similarity)``: each paper against the ones before it."""
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    kept: dict[str, np.ndarray] = {}
    found = []
    for pid, text in zip(papers["paper_id"], papers["abstract"], strict=True):
        hashes = shingle_hashes(text)
        m = MinHash(num_perm=num_perm, seed=1)
        m.update_batch([h.tobytes() for h in hashes])
        for other in lsh.query(m):
            theirs = kept[other]
            common = np.intersect1d(hashes, theirs, assume_unique=True).size
            similarity = common / (hashes.size + theirs.size - common)
            if similarity >= threshold:
                found.append((pid, other, similarity))
        lsh.insert(pid, m)
        kept[pid] = hashes
    return pd.DataFrame(found, columns=["paper_id", "duplicate_of", "similarity"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--database", type=Path, required=True, help="DuckDB file (replaced)")
    parser.add_argument("--out", type=Path, required=True, help="report folder")
    parser.add_argument("--as-of", default=None, help="ISO date-time (default: corpus.json)")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--num-perm", type=int, default=128)
    args = parser.parse_args(argv)

    as_of = args.as_of
    manifest = args.corpus / "corpus.json"
    if as_of is None and manifest.is_file():
        as_of = json.loads(manifest.read_text(encoding="utf-8"))["weeks"][0]["as_of"]
    moment = datetime.fromisoformat(as_of) if as_of else datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    year, number, _ = moment.isocalendar()
    week = f"{year}-W{number:02d}"

    stages = Stages()
    files, entries = read_corpus(args.corpus, week, moment)
    stages.done("read + parse")
    entries = clean(entries)
    stages.done("clean")
    papers = entries.drop_duplicates("paper_id").copy()
    papers["first_seen_week"] = week
    exact = len(entries) - len(papers)

    args.database.unlink(missing_ok=True)
    args.database.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(args.database))
    con.register("files_df", files)
    con.register("occ_df", entries[["file_id", "position", "line", "paper_id", "raw_text"]])
    con.register(
        "papers_df",
        papers[
            [
                "paper_id",
                "abstract",
                "raw_text",
                "method_name",
                "first_sentence",
                "word_count",
                "file_id",
                "position",
                "first_seen_week",
            ]
        ],
    )
    con.execute("create table listing_files as select * from files_df")
    con.execute("create table paper_occurrences as select * from occ_df")
    con.execute("create table papers as select * from papers_df")
    stages.done("load")

    pairs = near_duplicates(papers, args.threshold, args.num_perm)
    con.register("pairs_df", pairs)
    con.execute("create table near_duplicates as select * from pairs_df")
    stages.done("near-duplicates")

    rows = [
        (pid, term, n)
        for pid, text in zip(papers["paper_id"], papers["abstract"], strict=True)
        for term, n in terms_of(text).items()
    ]
    terms = pd.DataFrame(rows, columns=["paper_id", "term", "n"])
    con.register("terms_df", terms)
    con.execute("create table paper_terms as select * from terms_df")
    con.execute(
        "create table term_document_frequencies as "
        "select p.first_seen_week as week, t.term, count(*) as papers "
        "from paper_terms t join papers p using (paper_id) group by all"
    )
    stages.done("terms")

    args.out.mkdir(parents=True, exist_ok=True)
    top = con.sql(
        "select term, papers from term_document_frequencies where week = ? "
        "order by papers desc, term limit 15",
        params=[week],
    ).df()
    new = con.sql(
        "select paper_id, method_name, first_sentence, word_count from papers "
        "where first_seen_week = ? order by file_id, position",
        params=[week],
    ).df()
    dups = con.sql(
        "select d.paper_id, d.duplicate_of, round(d.similarity, 3) as similarity, "
        "p.first_sentence from near_duplicates d join papers p using (paper_id) "
        "order by d.similarity desc, d.paper_id"
    ).df()
    html = (
        f"<html><head><meta charset='utf-8'><title>Report {week}</title></head><body>"
        f"<h1>Report {week}</h1><p>{len(new):,} new papers, {exact:,} exact duplicates, "
        f"{len(dups):,} near-duplicate pairs</p><h2>Terms</h2>{top.to_html(index=False)}"
        f"<h2>Near-duplicates</h2>{dups.to_html(index=False)}"
        f"<h2>New papers</h2>{new.to_html(index=False)}</body></html>"
    )
    (args.out / f"{week}.html").write_text(html, encoding="utf-8")
    new.to_csv(args.out / f"{week}-new-papers.csv", index=False)
    con.close()
    stages.done("report")
    total = time.perf_counter() - stages.started
    print(
        f"reference: {len(files):,} files, {len(entries):,} entries, {len(papers):,} papers, "
        f"{exact:,} exact duplicates, {len(pairs):,} near-duplicate pairs, "
        f"{len(terms):,} paper-term rows in {total:.2f} s",
        flush=True,
    )


if __name__ == "__main__":
    main()
