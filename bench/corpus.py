"""Deterministic synthetic corpus of listing files for the scale benchmarks.

Writes ``--files`` listing files of ``--entries`` abstracts each, named
``NNN_<16 hex>.txt`` like real listings, into ``--weeks`` sub-folders
``w01/``, ``w02/``, ... (consecutive sequence numbers across weeks) plus a
``corpus.json`` manifest giving each week's folder and the ``--as-of`` date
(the Monday of successive ISO weeks) a pipeline run uses to place it.

The abstracts are built from the seed listings (``seeds/*.txt``):

- *Vocabulary and word order*: a word-bigram chain over the seeds' clean
  abstracts mixed half-and-half with unigram draws (the seeds' word
  frequencies), so word and phrase frequencies look like the seeds'.
- *Sentence shapes*: sentence counts per abstract and words per sentence are
  drawn from the seeds' own (``paperwatch.ingest.sentences.split_sentences``); each
  sentence starts with one of the seeds' sentence openers ("We", "This",
  "Experiments", ...), capitalised, and ends with a full stop.
- *Method names*: 60 % of abstracts introduce a method ("We propose NAME
  (ACR), a ..."), with a generated CamelCase name and acronym.
- *Markup*: ``\\emph{}``, ``\\textbf{}``, ``**bold**``, ``*emphasis*``, inline
  maths (``$O(n \\log n)$``, ``$\\alpha$``, ``$1.38\\times$``), ``\\url{}``
  and bare code URLs (``https://github.com/<org>/<repo>``) in about a third of
  the abstracts; a fifth are hard-wrapped at 78 columns, a tenth of the files
  use CRLF line endings.
- *Planted duplicates*: ``--exact-rate`` of the entries repeat an earlier
  abstract exactly (same file or an earlier one), ``--near-rate`` are near
  copies of an earlier abstract (1-6 words replaced, a sentence appended, or
  numbers changed), both drawn from a window of the last 20,000 abstracts.

Everything derives from ``--seed``: the same arguments give the same bytes.
About 1.4 KB per abstract (1,000 files × 1,000 entries ≈ 1.4 GB). Usage::

    python bench/corpus.py --out /tmp/corpus-100k --files 100 --entries 1000 --weeks 4
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paperwatch.ingest.clean import clean_abstract  # noqa: E402
from paperwatch.ingest.parse import parse_listing  # noqa: E402
from paperwatch.ingest.sentences import split_sentences  # noqa: E402

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORDY = re.compile(r"^[A-Za-z][a-z\-]{3,}$")
_VENUES = ("NeurIPS 2026 论文列表", "ICLR 2026 accepted papers", "ICML 2026", "ACL Findings 2026")
_MATH = (
    "$O(n \\log n)$",
    "$\\alpha$",
    "$1.38\\times$",
    "$k$",
    "$\\mathcal{O}(d^2)$",
    "$\\epsilon = 0.1$",
)
_ORGS = ("lab-ml", "deepgroup", "uni-ai", "opencode", "research-x", "mlsys")
_SYLLABLES = ("Graph", "Flow", "Judge", "Cascade", "Sparse", "Meta", "Diff", "Token", "Fed", "Lo")
_WINDOW = 20_000
_MAX_WORDS = 400


@dataclass(frozen=True)
class Model:
    """What the generator learned from the seeds: vocabulary, bigram chain, sentence shapes."""

    vocab: np.ndarray  # object array of words
    unigram_cdf: np.ndarray
    succ_start: np.ndarray
    succ_count: np.ndarray
    succ_dst: np.ndarray
    sentence_counts: np.ndarray
    sentence_lengths: np.ndarray
    openers: list[str]


def learn(seed_dir: Path) -> Model:
    """Vocabulary, bigram successors and sentence shapes of the seed listings' abstracts."""
    texts = [
        clean_abstract(entry.text).abstract
        for path in sorted(seed_dir.glob("*.txt"))
        for entry in parse_listing(path.read_text(encoding="utf-8")).entries
    ]
    docs = [[w.strip(".,;:()") or w for w in t.split()] for t in texts]
    vocab, codes = np.unique(
        np.array([w for d in docs for w in d], dtype=object), return_inverse=True
    )
    unigram = np.bincount(codes, minlength=len(vocab)).astype(np.float64)
    cdf = np.cumsum(unigram / unigram.sum())
    src_parts, dst_parts, pos = [], [], 0
    for d in docs:
        ids = codes[pos : pos + len(d)]
        src_parts.append(ids[:-1])
        dst_parts.append(ids[1:])
        pos += len(d)
    src, dst = np.concatenate(src_parts), np.concatenate(dst_parts)
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    idx = np.arange(len(vocab))
    start = np.searchsorted(src, idx)
    count = np.searchsorted(src, idx, side="right") - start
    sentences = [split_sentences(t) for t in texts]
    openers = Counter(s.split()[0] for ss in sentences for s in ss if s.split())
    return Model(
        vocab=vocab,
        unigram_cdf=cdf,
        succ_start=start,
        succ_count=count,
        succ_dst=dst,
        sentence_counts=np.array([len(ss) for ss in sentences]),
        sentence_lengths=np.array([len(s.split()) for ss in sentences for s in ss]),
        openers=[w for w, n in openers.most_common() if n >= 2 and w[0].isupper()],
    )


def _chain(model: Model, rng: np.random.Generator, rows: int, length: int) -> np.ndarray:
    """``rows`` word-code sequences of ``length`` from the bigram/unigram mixture."""
    n_vocab = len(model.vocab)
    out = np.empty((rows, length), dtype=np.int64)
    draw = lambda: np.minimum(  # noqa: E731
        np.searchsorted(model.unigram_cdf, rng.random(rows)), n_vocab - 1
    )
    out[:, 0] = draw()
    for t in range(1, length):
        prev = out[:, t - 1]
        count = model.succ_count[prev]
        follow = (count > 0) & (rng.random(rows) < 0.5)
        nxt = draw()
        pick = model.succ_start[prev] + (rng.random(rows) * np.maximum(count, 1)).astype(np.int64)
        nxt[follow] = model.succ_dst[np.minimum(pick[follow], len(model.succ_dst) - 1)]
        out[:, t] = nxt
    return out


def _method_name(rng: np.random.Generator) -> tuple[str, str]:
    parts = [str(p) for p in rng.choice(_SYLLABLES, size=int(rng.integers(2, 4)), replace=False)]
    name = "".join(parts) + str(rng.choice(["Net", "Former", "LM", "Rank", ""]))
    acronym = "".join(p[0] for p in parts) + str(rng.choice(["", "-X", "2", "+"]))
    return name, acronym


def _markup(words: list[str], rng: np.random.Generator) -> None:
    """Wrap a few words in emphasis or insert maths, in place."""
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(0, len(words)))
        if not _WORDY.match(words[i]):
            continue
        kind = int(rng.integers(0, 5))
        if kind == 0:
            words[i] = f"\\emph{{{words[i]}}}"
        elif kind == 1:
            words[i] = f"\\textbf{{{words[i]}}}"
        elif kind == 2:
            words[i] = f"**{words[i]}**"
        elif kind == 3:
            words[i] = f"*{words[i]}*"
        else:
            words.insert(i, str(rng.choice(_MATH)))


def _abstract(model: Model, rng: np.random.Generator, codes: np.ndarray, serial: int) -> str:
    n_sent = int(rng.choice(model.sentence_counts))
    lengths = np.maximum(rng.choice(model.sentence_lengths, size=n_sent), 4)
    words = [str(w) for w in model.vocab[codes[: min(int(lengths.sum()), _MAX_WORDS)]]]
    decorated = rng.random() < 0.35
    if decorated:
        _markup(words, rng)
    sentences: list[str] = []
    at = 0
    for k, n in enumerate(lengths.tolist()):
        chunk = words[at : at + n]
        at += n
        if not chunk:
            break
        if k == 1 and rng.random() < 0.6:
            name, acronym = _method_name(rng)
            chunk = ["We", "propose", f"{name}", f"({acronym}),", "a", *chunk[3:]]
        else:
            chunk[0] = str(rng.choice(model.openers))
        sentences.append(" ".join(chunk).rstrip(",;:") + ".")
    if decorated and rng.random() < 0.5:
        repo = f"https://github.com/{rng.choice(_ORGS)}/repo{serial}"
        sentences.append(
            f"Code is available at \\url{{{repo}}}." if rng.random() < 0.5 else f"Code: {repo}"
        )
    return " ".join(sentences)


def _near_copy(text: str, model: Model, rng: np.random.Generator) -> str:
    tokens = text.split(" ")
    kind = int(rng.integers(0, 3))
    if kind == 0:
        for i in rng.choice(
            len(tokens), size=min(len(tokens), int(rng.integers(1, 7))), replace=False
        ):
            tokens[int(i)] = str(model.vocab[int(rng.integers(0, len(model.vocab)))])
        return " ".join(tokens)
    if kind == 1:
        extra = [str(w) for w in model.vocab[rng.integers(0, len(model.vocab), size=12)]]
        return text + " " + " ".join(extra).capitalize() + "."
    copy = _NUMBER.sub(lambda m: str(int(float(m.group(0))) + 7), text)
    return copy if copy != text else text + " We release the code."


def _wrap(text: str, width: int = 78) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def file_name(seed: int, number: int) -> str:
    """``NNN_<16 hex>.txt`` with a token derived from the seed and the number."""
    token = hashlib.sha256(f"{seed}:{number}".encode()).hexdigest()[:16]
    return f"{number:03d}_{token}.txt"


def generate(
    out: Path,
    files: int,
    entries: int,
    weeks: int,
    seed: int,
    exact_rate: float,
    near_rate: float,
    start: date,
) -> dict[str, object]:
    """Write the corpus and its manifest; return the manifest (also ``out/corpus.json``)."""
    model = learn(ROOT / "seeds")
    rng = np.random.default_rng(seed)
    window: list[str] = []
    weeks = max(1, min(weeks, files))
    per_week = -(-files // weeks)
    monday = start - timedelta(days=start.weekday())
    manifest: dict[str, object] = {
        "seed": seed,
        "files": files,
        "entries_per_file": entries,
        "exact_rate": exact_rate,
        "near_rate": near_rate,
        "weeks": [],
    }
    planted = {"exact": 0, "near": 0}
    total_bytes = 0
    for w in range(weeks):
        folder = out / f"w{w + 1:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        numbers = range(w * per_week, min(files, (w + 1) * per_week))
        manifest["weeks"].append(  # type: ignore[union-attr]
            {
                "folder": folder.name,
                "as_of": (monday + timedelta(weeks=w)).isoformat() + "T09:00:00Z",
                "files": len(numbers),
            }
        )
        for number in numbers:
            codes = _chain(model, rng, entries, _MAX_WORDS)
            texts: list[str] = []
            for i in range(entries):
                roll = rng.random()
                if window and roll < exact_rate:
                    text = window[int(rng.integers(0, len(window)))]
                    planted["exact"] += 1
                elif window and roll < exact_rate + near_rate:
                    text = _near_copy(window[int(rng.integers(0, len(window)))], model, rng)
                    planted["near"] += 1
                else:
                    text = _abstract(model, rng, codes[i], number * entries + i)
                window.append(text)
                texts.append(_wrap(text) if rng.random() < 0.2 else text)
            if len(window) > _WINDOW:
                del window[: len(window) - _WINDOW]
            body = str(rng.choice(_VENUES)) + "\n\n" + "\n\n".join(texts) + "\n"
            if rng.random() < 0.1:
                body = body.replace("\n", "\r\n")
            data = body.encode("utf-8")
            total_bytes += len(data)
            (folder / file_name(seed, number)).write_bytes(data)
    manifest["planted"] = planted
    manifest["bytes"] = total_bytes
    (out / "corpus.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write (created)")
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--entries", type=int, default=1000, help="abstracts per file")
    parser.add_argument("--weeks", type=int, default=1, help="ISO weeks the files are spread over")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--exact-rate", type=float, default=0.02)
    parser.add_argument("--near-rate", type=float, default=0.05)
    parser.add_argument("--start", type=date.fromisoformat, default=date(2026, 10, 5))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    manifest = generate(
        args.out,
        args.files,
        args.entries,
        args.weeks,
        args.seed,
        args.exact_rate,
        args.near_rate,
        args.start,
    )
    print(
        f"wrote {args.files:,} files × {args.entries:,} entries "
        f"({int(manifest['bytes']) / 1e6:,.1f} MB, planted {manifest['planted']}) "  # type: ignore[call-overload]
        f"in {time.perf_counter() - started:.1f} s to {args.out}"
    )


if __name__ == "__main__":
    main()
