"""Benchmark: paperwatch's near-duplicate stage against a datasketch MinHashLSH reference.

Generates ``--n`` synthetic abstracts from the vocabulary of the seed listings
(a word-bigram chain mixed with unigram draws, lengths drawn from the seeds'
word counts), of which ``--dup-rate`` are planted near-duplicates of an earlier
abstract (1-6 words changed, a sentence added, or numbers changed). Then, on the
same data in one run:

- **paperwatch**: :func:`tests.near_duplicates.find_near_duplicates` on the whole
  batch (shingling, MinHash, LSH, exact verification of every candidate);
- **reference**: the straightforward datasketch pipeline: word 3-gram shingles
  in plain Python (``re.findall`` with paperwatch's token pattern, casefolded
  tokens, so the same shingles), one ``datasketch.MinHash`` per abstract
  (``update_batch``), ``MinHashLSH`` insert and query with the same bands and
  rows as paperwatch (so both have the same S-curve), and the same exact Jaccard
  verification of candidates.

Prints papers per second for each, the ratio, and the recall of each on the
planted pairs whose true Jaccard is at or above the threshold. Usage::

    python bench/bench_near_duplicates.py            # 100,000 abstracts
    python bench/bench_near_duplicates.py --n 20000 --skip-reference
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperwatch.analysis.duplicates import (  # noqa: E402
    TOKEN_PATTERN,
    PaperText,
    jaccard,
    lsh_params,
    shingles,
)
from paperwatch.ingest.clean import clean_abstract  # noqa: E402
from paperwatch.ingest.parse import parse_listing  # noqa: E402
from paperwatch.settings import DedupSettings  # noqa: E402
from tests.near_duplicates import find_near_duplicates  # noqa: E402

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_TOKEN = re.compile(TOKEN_PATTERN)


def reference_shingles(text: str, k: int = 3) -> set[str]:
    """Word k-gram shingles in plain Python: what a straightforward pipeline would write."""
    tokens = [t.casefold() for t in _TOKEN.findall(unicodedata.normalize("NFKC", text))]
    if len(tokens) < k:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}


def seed_abstracts() -> list[str]:
    """Clean abstracts of seeds/*.txt, in file order."""
    texts = []
    for path in sorted((ROOT / "seeds").glob("*.txt")):
        for entry in parse_listing(path.read_text(encoding="utf-8")).entries:
            texts.append(clean_abstract(entry.text).abstract)
    return texts


def generate(n: int, dup_rate: float, seed: int) -> tuple[list[str], list[tuple[int, int]]]:
    """``n`` synthetic abstracts and the planted (original index, copy index) pairs."""
    rng = np.random.default_rng(seed)
    seeds = seed_abstracts()
    corpus = [text.split() for text in seeds]
    vocab, codes = np.unique(
        np.array([w for doc in corpus for w in doc], dtype=object), return_inverse=True
    )
    unigram = np.bincount(codes, minlength=len(vocab)).astype(np.float64)
    unigram /= unigram.sum()
    # bigram successors as a flat array with offsets
    pos = 0
    pairs_from, pairs_to = [], []
    for doc in corpus:
        ids = codes[pos : pos + len(doc)]
        pairs_from.append(ids[:-1])
        pairs_to.append(ids[1:])
        pos += len(doc)
    src, dst = np.concatenate(pairs_from), np.concatenate(pairs_to)
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    start = np.searchsorted(src, np.arange(len(vocab)))
    count = np.searchsorted(src, np.arange(len(vocab)), side="right") - start
    lengths = rng.choice([len(doc) for doc in corpus], size=n)
    max_len = int(lengths.max())

    n_dup = int(n * dup_rate)
    n_base = n - n_dup
    words = np.empty((n_base, max_len), dtype=np.int64)
    words[:, 0] = rng.choice(len(vocab), size=n_base, p=unigram)
    for t in range(1, max_len):
        prev = words[:, t - 1]
        has_next = count[prev] > 0
        follow = has_next & (rng.random(n_base) < 0.5)
        nxt = rng.choice(len(vocab), size=n_base, p=unigram)
        pick = start[prev] + (rng.random(n_base) * np.maximum(count[prev], 1)).astype(np.int64)
        nxt[follow] = dst[np.minimum(pick[follow], len(dst) - 1)]
        words[:, t] = nxt
    texts = [" ".join(vocab[row[: lengths[i]]]) for i, row in enumerate(words)]

    planted: list[tuple[int, int]] = []
    originals = rng.integers(0, n_base, size=n_dup)
    kinds = rng.integers(0, 3, size=n_dup)
    for original, kind in zip(originals.tolist(), kinds.tolist(), strict=True):
        tokens = texts[original].split()
        if kind == 0:  # 1-6 words replaced
            for index in rng.choice(len(tokens), size=int(rng.integers(1, 7)), replace=False):
                tokens[index] = str(vocab[rng.choice(len(vocab), p=unigram)])
            copy = " ".join(tokens)
        elif kind == 1:  # one sentence added
            extra = vocab[rng.choice(len(vocab), size=15, p=unigram)]
            copy = " ".join(tokens) + " " + " ".join(extra) + "."
        else:  # numbers changed (or one word appended when there is none)
            copy = _NUMBER.sub(lambda m: str(int(float(m.group(0))) + 7), " ".join(tokens))
            if copy == texts[original]:
                copy += " revised"
        planted.append((original, len(texts)))
        texts.append(copy)
    return texts, planted


def run_paperwatch(texts: list[str], dedup: DedupSettings) -> set[tuple[int, int]]:
    """Pairs (older index, newer index) found by paperwatch's stage."""
    t0 = datetime(2026, 1, 5, tzinfo=UTC)
    papers = [
        PaperText(f"{i:08d}", text, t0 + timedelta(seconds=i)) for i, text in enumerate(texts)
    ]
    found = find_near_duplicates(papers, dedup=dedup)
    return {(int(p.duplicate_of), int(p.paper_id)) for p in found}


def run_reference(texts: list[str], dedup: DedupSettings) -> set[tuple[int, int]]:
    """Pairs found by datasketch MinHash + MinHashLSH (same bands/rows) + exact verification."""
    from datasketch import MinHash, MinHashLSH

    params = lsh_params(dedup.num_perm, dedup.threshold)
    lsh = MinHashLSH(
        threshold=dedup.threshold, num_perm=dedup.num_perm, params=(params.bands, params.rows)
    )
    sets = [reference_shingles(text, dedup.word_shingle) for text in texts]
    sketches = []
    for i, shingle_set in enumerate(sets):
        m = MinHash(num_perm=dedup.num_perm, seed=1)
        m.update_batch([s.encode("utf-8") for s in shingle_set])
        lsh.insert(i, m)
        sketches.append(m)
    found: set[tuple[int, int]] = set()
    for i, m in enumerate(sketches):
        for j in lsh.query(m):
            if j < i and jaccard(sets[i], sets[j]) >= dedup.threshold:
                found.add((j, i))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="abstracts to generate")
    parser.add_argument(
        "--dup-rate", type=float, default=0.1, help="share of planted near-duplicates"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-reference", action="store_true", help="run paperwatch only")
    args = parser.parse_args(argv)
    dedup = DedupSettings()

    started = time.perf_counter()
    texts, planted = generate(args.n, args.dup_rate, args.seed)
    print(
        f"generated {len(texts):,} abstracts, {len(planted):,} planted pairs "
        f"in {time.perf_counter() - started:.1f} s"
    )
    truth = {
        pair
        for pair in planted
        if jaccard(shingles(texts[pair[0]]), shingles(texts[pair[1]])) >= dedup.threshold
    }
    print(f"planted pairs with true Jaccard >= {dedup.threshold}: {len(truth):,}")
    params = lsh_params(dedup.num_perm, dedup.threshold)
    print(f"num_perm={dedup.num_perm} bands={params.bands} rows={params.rows}")

    results = {}
    runners = [("paperwatch", run_paperwatch)]
    if not args.skip_reference:
        runners.append(("datasketch reference", run_reference))
    for name, runner in runners:
        started = time.perf_counter()
        found = runner(texts, dedup)
        seconds = time.perf_counter() - started
        recall = len(found & truth) / len(truth) if truth else 1.0
        results[name] = len(texts) / seconds
        print(
            f"{name:>22}: {seconds:7.2f} s  {len(texts) / seconds:10,.0f} papers/s  "
            f"recall {recall:.4f} ({len(found & truth):,}/{len(truth):,})  "
            f"other verified pairs {len(found - truth):,}"
        )
    if len(results) == 2:
        print(f"{'speed-up':>22}: {results['paperwatch'] / results['datasketch reference']:.1f}x")


if __name__ == "__main__":
    main()
