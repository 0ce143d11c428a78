"""Benchmark: each listing reader on N records (default 100,000), in MB/s beside the text reader.

The records are built from the seed abstracts' sentences (5 to 9 drawn at random, seeded),
with a title, two authors and an arXiv id each; the same records are written in every
format (blank-line text, one per line, Markdown digest, JSON, JSON Lines, BibTeX, Atom),
then each file is read once with :func:`paperwatch.ingest.readers.read` (decoding, choosing the
reader and mapping the library's tree to entries; not cleaning). Prints the size, the
wall time, MB/s (10^6 bytes per second) and records per second of each; nothing is
asserted.

    PYTHONPATH=. python bench/readers.py [--records 100000] [--formats text,json]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape

from paperwatch.ingest import readers
from paperwatch.ingest.parse import decode_listing, parse_listing
from paperwatch.ingest.sentences import split_sentences

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def records(n: int, seed: int = 16) -> list[dict[str, str]]:
    """``n`` records: id, title, authors, abstract (sentences of the seed abstracts)."""
    sentences: list[str] = []
    for path in sorted(SEEDS.glob("*.txt")):
        for entry in parse_listing(decode_listing(path.read_bytes())).entries:
            sentences.extend(split_sentences(entry.text))
    rng = random.Random(seed)
    out = []
    for i in range(n):
        abstract = " ".join(rng.sample(sentences, rng.randint(5, 9)))
        words = abstract.split()
        out.append(
            {
                "id": f"26{(i // 100000) % 100:02d}.{i % 100000:05d}",
                "title": " ".join(w.strip(".,;:") for w in words[:8]).title(),
                "authors": f"Author {i % 977} and Writer {i % 389}",
                "abstract": abstract,
            }
        )
    return out


def as_text(rs: list[dict[str, str]]) -> str:
    return "NeurIPS 2026 accepted papers\n\n" + "\n\n".join(r["abstract"] for r in rs) + "\n"


def as_lines(rs: list[dict[str, str]]) -> str:
    return "NeurIPS 2026 accepted papers\n" + "\n".join(r["abstract"] for r in rs) + "\n"


def as_markdown(rs: list[dict[str, str]]) -> str:
    parts = ["# NeurIPS 2026 digest\n"]
    for n, r in enumerate(rs, start=1):
        parts.append(
            f"## [{n}] {r['title']}\n**Authors:** {r['authors'].replace(' and ', ', ')}\n"
            f"**Link:** https://arxiv.org/abs/{r['id']}\n**Abstract:** {r['abstract']}\n\n---\n"
        )
    return "\n".join(parts)


def as_json(rs: list[dict[str, str]]) -> str:
    return json.dumps(
        [
            {
                "id": r["id"],
                "title": r["title"],
                "authors": r["authors"].split(" and "),
                "abstract": r["abstract"],
            }
            for r in rs
        ],
        ensure_ascii=False,
        indent=1,
    )


def as_jsonl(rs: list[dict[str, str]]) -> str:
    return "".join(
        json.dumps(
            {"arxiv_id": r["id"], "title": r["title"], "abstract": r["abstract"]},
            ensure_ascii=False,
        )
        + "\n"
        for r in rs
    )


def _bib_value(text: str) -> str:
    return text.replace("%", "\\%").replace("{", "").replace("}", "")


def as_bibtex(rs: list[dict[str, str]]) -> str:
    return "\n".join(
        f"@inproceedings{{p{n},\n  title = {{{_bib_value(r['title'])}}},\n"
        f"  author = {{{r['authors']}}},\n  eprint = {{{r['id']}}},\n"
        f"  archivePrefix = {{arXiv}},\n  abstract = {{{_bib_value(r['abstract'])}}}\n}}\n"
        for n, r in enumerate(rs)
    )


def as_atom(rs: list[dict[str, str]]) -> str:
    entries = "".join(
        f"<entry><id>http://arxiv.org/abs/{r['id']}v1</id><title>{escape(r['title'])}</title>"
        f"<summary>{escape(r['abstract'])}</summary>"
        + "".join(f"<author><name>{escape(a)}</name></author>" for a in r["authors"].split(" and "))
        + f'<link href="http://arxiv.org/abs/{r["id"]}v1"/></entry>\n'
        for r in rs
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>arXiv query</title>\n{entries}</feed>\n"
    )


WRITERS: dict[str, tuple[str, Callable[[list[dict[str, str]]], str]]] = {
    "text": ("listing.txt", as_text),
    "lines": ("abstracts.txt", as_lines),
    "markdown": ("digest.md", as_markdown),
    "json": ("papers.json", as_json),
    "jsonl": ("papers.jsonl", as_jsonl),
    "bibtex": ("papers.bib", as_bibtex),
    "feed": ("query.atom", as_atom),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--formats", default=",".join(WRITERS))
    args = parser.parse_args(argv)
    rs = records(args.records)
    print(f"{args.records:,} records; paperwatch.ingest.readers.read per format (one run each)")
    print(
        f"{'format':<9} {'file':<14} {'MB':>7} {'records':>9} {'s':>7} {'MB/s':>7} {'records/s':>10}"
    )
    text_rate = None
    for fmt in args.formats.split(","):
        name, write = WRITERS[fmt]
        readers.read(write(rs[:3]).encode("utf-8"), name)  # imports and caches: not timed
        data = write(rs).encode("utf-8")
        start = time.perf_counter()
        listing = readers.read(data, name)
        seconds = time.perf_counter() - start
        assert listing.format == fmt, (listing.format, fmt)
        rate = len(data) / 1e6 / seconds
        text_rate = rate if fmt == "text" else text_rate
        relative = f"  ({rate / text_rate:.2f}x text)" if text_rate and fmt != "text" else ""
        print(
            f"{fmt:<9} {name:<14} {len(data) / 1e6:>7.1f} {len(listing.entries):>9,} "
            f"{seconds:>7.2f} {rate:>7.2f} {len(listing.entries) / seconds:>10,.0f}{relative}"
        )


if __name__ == "__main__":
    main()
