"""Preparing listing files where they are read: read, hash, parse, clean, the ``papers``
suite's rows and the terms, with failures contained per file.

This is what a preparation worker process runs (:mod:`paperwatch.batches` sends it
chunks of files), so it imports only what that needs (Polars, the parser, the cleaner,
term extraction): a worker starts in about half the time it would take to import the
whole pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl
from polars.exceptions import PanicException

from paperwatch.ingest import (
    FileReplacedError,
    ListingFileStat,
    PreparedFile,
    entries_frame,
    prepare_file,
    read_listing_file,
)
from paperwatch.terms import abstract_key, extract_terms
from paperwatch.workers import (
    exception_summary,
    file_done,
    file_started,
    inject_fault,
    internal_error_reason,
)

#: Columns of :attr:`PreparedBatch.terms`.
TERMS_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "key": pl.String,
    "term": pl.String,
    "n": pl.Int32,
}


def batch_terms(prepared: Iterable[PreparedFile]) -> pl.DataFrame:
    """Terms of the distinct clean abstracts of ``prepared`` (columns of ``TERMS_SCHEMA``)."""
    texts: dict[str, str] = {}
    for file in prepared:
        for entry in file.entries:
            if entry.clean is not None:
                texts.setdefault(abstract_key(entry.clean.abstract), entry.clean.abstract)
    if not texts:
        return pl.DataFrame(schema=TERMS_SCHEMA)
    papers = pl.DataFrame({"paper_id": list(texts), "abstract": list(texts.values())})
    return extract_terms(papers).rename({"paper_id": "key"})


@dataclass(frozen=True, slots=True)
class PrepareFailure:
    """A file whose preparation raised or killed its worker: ``reason`` is the quarantine
    reason (:func:`paperwatch.workers.internal_error_reason`)."""

    stat: ListingFileStat
    reason: str


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """Files read and prepared, in batch order, with each file's ``papers`` suite rows.

    Attributes:
        prepared: the files that could be read (see :class:`~paperwatch.ingest.PreparedFile`).
        frames: ``entries_frame([f])`` for each of ``prepared`` (same order; empty for a
            file that is not text).
        vanished: ``(rel, reason)`` of files that could not be read now (gone, a folder,
            no permission); they are retried on a later run.
        terms: the terms of every distinct clean abstract of the batch, extracted where
            the files were prepared: columns ``key`` (:func:`abstract_key` of the
            abstract), ``term``, ``n`` — :func:`paperwatch.terms.extract_terms` with
            the key in place of the paper id (a paper's terms depend only on its text).
        failed: files whose preparation raised or killed the worker, with the reason; not
            in ``prepared``. They are quarantined whole.
    """

    prepared: list[PreparedFile] = field(default_factory=list)
    frames: list[pl.DataFrame] = field(default_factory=list)
    vanished: list[tuple[str, str]] = field(default_factory=list)
    terms: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TERMS_SCHEMA))
    failed: list[PrepareFailure] = field(default_factory=list)


def _vanished_reason(stat: ListingFileStat, exc: OSError) -> str:
    if isinstance(exc, FileReplacedError):
        return f"{exc.strerror}: not read; the folder is scanned again on the next run"
    if isinstance(exc, FileNotFoundError):
        return "disappeared between scan and read; it is read when it comes back"
    if isinstance(exc, IsADirectoryError):
        return "became a folder between scan and read"
    return f"cannot be read: {exc.strerror}; it is retried on the next run"


def _failure(stat: ListingFileStat, exc: BaseException) -> PrepareFailure:
    return PrepareFailure(stat, internal_error_reason(exception_summary(exc)))


def _contained_terms(batch: PreparedBatch) -> PreparedBatch:
    """``batch`` with its terms; when extraction raises, each file is tried alone and the
    files whose terms raise move to ``failed``."""
    try:
        return PreparedBatch(
            batch.prepared, batch.frames, batch.vanished, batch_terms(batch.prepared), batch.failed
        )
    except (Exception, PanicException):
        pass
    kept = PreparedBatch(vanished=batch.vanished, failed=list(batch.failed))
    for file, frame in zip(batch.prepared, batch.frames, strict=True):
        try:
            batch_terms([file])
        except (Exception, PanicException) as exc:
            kept.failed.append(_failure(file.stat, exc))
            continue
        kept.prepared.append(file)
        kept.frames.append(frame)
    return PreparedBatch(
        kept.prepared, kept.frames, kept.vanished, batch_terms(kept.prepared), kept.failed
    )


def prepare_files(stats: Sequence[ListingFileStat], max_bytes: int) -> PreparedBatch:
    """Read, hash, parse and clean ``stats`` in this process (see :func:`prepare_batch`).

    An exception (or a Polars panic) while preparing a file, building its suite rows or
    extracting its terms puts that file in :attr:`PreparedBatch.failed` with the reason;
    the other files are prepared. Raises only what reading raises besides a vanished file
    (``OSError``), and ``KeyboardInterrupt``.
    """
    batch = PreparedBatch()
    for stat in stats:
        try:
            data = read_listing_file(stat, max_bytes)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            batch.vanished.append((stat.rel, _vanished_reason(stat, exc)))
            continue
        file_started()  # the run stops a worker that stays on one file too long
        try:
            inject_fault(stat.name)
            prepared = prepare_file(stat, data, max_bytes)
            frame = entries_frame([prepared])
        except (Exception, PanicException) as exc:
            batch.failed.append(_failure(stat, exc))
            continue
        finally:
            file_done()
        batch.prepared.append(prepared)
        batch.frames.append(frame)
    return _contained_terms(batch)


def merge_batches(parts: Iterable[PreparedBatch]) -> PreparedBatch:
    """Concatenate prepared parts in order (e.g. the chunks prepared by several workers);
    an abstract in several parts keeps the terms of its first part."""
    merged = PreparedBatch()
    terms: list[pl.DataFrame] = []
    seen: set[str] = set()
    for part in parts:
        merged.prepared.extend(part.prepared)
        merged.frames.extend(part.frames)
        merged.vanished.extend(part.vanished)
        merged.failed.extend(part.failed)
        keys = set(part.terms["key"].unique().to_list())
        if keys & seen:
            terms.append(part.terms.filter(~pl.col("key").is_in(list(seen))))
        else:
            terms.append(part.terms)
        seen |= keys
    if not terms:
        return merged
    return PreparedBatch(
        merged.prepared,
        merged.frames,
        merged.vanished,
        pl.concat(terms, how="vertical"),
        merged.failed,
    )
