"""Preparing listing files where they are read: read, hash, parse, clean, the ``papers``
suite's rows and the terms, with failures contained per file.

This is what a preparation worker process runs (:mod:`paperwatch.db.batches` sends it
chunks of files), so it imports only what that needs (Polars, the parser, the cleaner,
term extraction): a worker starts in about half the time it would take to import the
whole pipeline.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from polars.exceptions import PanicException

from paperwatch.analysis.terms import abstract_key, extract_terms
from paperwatch.ingest.files import (
    FileReplacedError,
    ListingFileStat,
    PreparedFile,
    prepare_file,
    read_listing_file,
)
from paperwatch.ingest.frames import ENTRY_SCHEMA, entries_frame
from paperwatch.ingest.workers import (
    exception_summary,
    file_done,
    file_started,
    inject_fault,
    internal_error_reason,
)

if TYPE_CHECKING:
    from paperwatch.settings import DedupSettings

#: Columns of :attr:`PreparedBatch.terms`.
TERMS_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "key": pl.UInt64,
    "term": pl.String,
    "n": pl.Int32,
}


#: Columns of :attr:`PreparedBatch.signatures` when it has no rows (with rows,
#: ``signature`` is an ``Array(UInt32, num_perm)``).
SIGNATURES_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "key": pl.String,
    "signature": pl.List(pl.UInt32),
}


def batch_texts(prepared: Iterable[PreparedFile]) -> dict[str, str]:
    """The distinct clean abstracts of ``prepared`` by :func:`abstract_key`, first seen first."""
    texts: dict[str, str] = {}
    for file in prepared:
        for entry in file.entries:
            if entry.clean is not None:
                texts.setdefault(abstract_key(entry.clean.abstract), entry.clean.abstract)
    return texts


def batch_terms(prepared: Iterable[PreparedFile]) -> pl.DataFrame:
    """Terms of the distinct clean abstracts of ``prepared`` (columns of ``TERMS_SCHEMA``):
    :func:`~paperwatch.analysis.terms.extract_terms` with :func:`~paperwatch.analysis.terms.abstract_key` in
    place of the paper id, as the number its 16 hex digits spell (:func:`key_numbers`)."""
    texts = batch_texts(prepared)
    if not texts:
        return pl.DataFrame(schema=TERMS_SCHEMA)
    # Keyed by number from the start: the 16 hex digits of 23,000 abstracts are parsed
    # once each, not once for each of their 3.8 million term rows.
    papers = pl.DataFrame({"paper_id": key_numbers(list(texts)), "abstract": list(texts.values())})
    return extract_terms(papers).select(key="paper_id", term="term", n="n")


def key_numbers(keys: pl.Series | list[str]) -> pl.Series:
    """:func:`~paperwatch.analysis.terms.abstract_key` values (16 hex digits each) as the UInt64
    numbers they spell, in order (same order: the keys have one length); why numbers:
    docs/design.md, "Terms keyed by number".

    Raises:
        polars.exceptions.InvalidOperationError: a key is not hexadecimal."""
    return pl.Series("key", keys, dtype=pl.String).str.to_integer(base=16, dtype=pl.UInt64)


def batch_signatures(texts: dict[str, str], dedup: DedupSettings) -> pl.DataFrame:
    """MinHash signatures of ``texts`` (``{abstract_key: clean abstract}``, from
    :func:`batch_texts`): columns ``key`` and ``signature`` (``Array(UInt32,
    dedup.num_perm)``: :func:`paperwatch.analysis.duplicates.abstract_signatures`), one row per text."""
    from paperwatch.analysis.duplicates import (
        abstract_signatures,  # numpy, rensa: only where sketching
    )

    if not texts:
        return pl.DataFrame(schema=SIGNATURES_SCHEMA)
    matrix = abstract_signatures(list(texts.values()), dedup)
    return pl.DataFrame(
        {
            "key": list(texts),
            "signature": pl.Series(matrix, dtype=pl.Array(pl.UInt32, dedup.num_perm)),
        }
    )


@dataclass(frozen=True, slots=True)
class PrepareFailure:
    """A file whose preparation raised or killed its worker: ``reason`` is the quarantine
    reason (:func:`paperwatch.ingest.workers.internal_error_reason`)."""

    stat: ListingFileStat
    reason: str


def _no_entries() -> pl.DataFrame:
    return pl.DataFrame(schema=ENTRY_SCHEMA)


class PreparedBatch:
    """Files read and prepared, in batch order, with the rows of the ``papers`` suite.

    Not a dataclass on purpose: Prefect walks the dataclasses, lists and tuples among a
    task's parameters down to their leaves (``prefect.utilities.collections.
    visit_collection``, twice per task run), and a batch of 20,000 one-entry files holds
    some 400,000 such objects (files, entries, cleaned abstracts): about two minutes of a
    20,000-file ingest went there. A plain object is one leaf.

    Attributes:
        prepared: the files that could be read (see :class:`~paperwatch.ingest.files.PreparedFile`).
        entries: ``entries_frame(prepared)``: one frame of every entry of ``prepared``
            (columns of :data:`~paperwatch.ingest.frames.ENTRY_SCHEMA`, in file then position
            order; the ``file`` column is the file's ``rel``; no rows for a file that is
            not text). One frame per worker chunk rather than one per file: 20,000
            one-entry files are a few frames to build, pickle and concatenate, not 20,000.
        vanished: ``(rel, reason)`` of files that could not be read now (gone, a folder,
            no permission); they are retried on a later run.
        terms: the terms of every distinct clean abstract of the batch, extracted where
            the files were prepared: columns ``key`` (:func:`abstract_key` of the
            abstract, as a UInt64: :func:`key_numbers`), ``term``, ``n`` —
            :func:`paperwatch.analysis.terms.extract_terms` with the key in place of the paper id
            (a paper's terms depend only on its text).
        failed: files whose preparation raised or killed the worker, with the reason; not
            in ``prepared``. They are quarantined whole.
        signatures: MinHash signatures of the distinct clean abstracts, computed where
            the files were prepared when asked (:func:`batch_signatures`; no rows
            otherwise, or when computing them raised): columns ``key`` and
            ``signature``. A cache for :func:`paperwatch.db.duplicates.update_near_duplicates`,
            which sketches any paper without one itself.
    """

    __slots__ = ("entries", "failed", "prepared", "signatures", "terms", "vanished")

    def __init__(
        self,
        prepared: list[PreparedFile] | None = None,
        entries: pl.DataFrame | None = None,
        vanished: list[tuple[str, str]] | None = None,
        terms: pl.DataFrame | None = None,
        failed: list[PrepareFailure] | None = None,
        signatures: pl.DataFrame | None = None,
    ) -> None:
        self.prepared: list[PreparedFile] = [] if prepared is None else prepared
        self.entries: pl.DataFrame = _no_entries() if entries is None else entries
        self.vanished: list[tuple[str, str]] = [] if vanished is None else vanished
        self.terms: pl.DataFrame = pl.DataFrame(schema=TERMS_SCHEMA) if terms is None else terms
        self.failed: list[PrepareFailure] = [] if failed is None else failed
        self.signatures: pl.DataFrame = (
            pl.DataFrame(schema=SIGNATURES_SCHEMA) if signatures is None else signatures
        )

    def __repr__(self) -> str:
        return (
            f"PreparedBatch({len(self.prepared)} prepared, {self.entries.height} entries, "
            f"{len(self.vanished)} vanished, {len(self.failed)} failed)"
        )

    @property
    def frames(self) -> list[pl.DataFrame]:
        """``entries_frame([f])`` for each of :attr:`prepared` (same order; empty for a
        file that is not text): :attr:`entries` split by file, in one pass."""
        parts = entries_by_file(self.entries)
        return [parts.get(f.stat.rel, self.entries.clear()) for f in self.prepared]


def entries_by_file(entries: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """``entries`` (an :func:`~paperwatch.ingest.frames.entries_frame`) split by its ``file``
    column in one pass (``partition_by``): ``{rel: that file's rows}``, rows in order."""
    if entries.is_empty():
        return {}
    parts = entries.partition_by("file", maintain_order=True, as_dict=True)
    return {str(key[0]): frame for key, frame in parts.items()}


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
            batch.prepared, batch.entries, batch.vanished, batch_terms(batch.prepared), batch.failed
        )
    except (Exception, PanicException):
        pass
    kept = PreparedBatch(vanished=batch.vanished, failed=list(batch.failed))
    for file in batch.prepared:
        try:
            batch_terms([file])
        except (Exception, PanicException) as exc:
            kept.failed.append(_failure(file.stat, exc))
            continue
        kept.prepared.append(file)
    entries = batch.entries
    if len(kept.prepared) < len(batch.prepared):
        rels = [f.stat.rel for f in kept.prepared]
        entries = entries.filter(pl.col("file").is_in(rels))
    return PreparedBatch(
        kept.prepared, entries, kept.vanished, batch_terms(kept.prepared), kept.failed
    )


def _entries_of(
    prepared: list[tuple[int, PreparedFile]],
) -> tuple[pl.DataFrame, list[tuple[int, PrepareFailure]]]:
    """The entries frame of ``prepared`` (``(index in the chunk, file)``) built in one go;
    when that raises, each file's rows are built alone and the files whose rows raise are
    returned as failures (with their index), the others' rows concatenated."""
    try:
        return entries_frame(file for _, file in prepared), []
    except (Exception, PanicException):
        pass
    frames: list[pl.DataFrame] = []
    failed: list[tuple[int, PrepareFailure]] = []
    for index, file in prepared:
        try:
            frames.append(entries_frame([file]))
        except (Exception, PanicException) as exc:
            failed.append((index, _failure(file.stat, exc)))
    return (pl.concat(frames, how="vertical") if frames else _no_entries()), failed


def prepare_files(
    stats: Sequence[ListingFileStat], max_bytes: int, dedup: DedupSettings | None = None
) -> PreparedBatch:
    """Read, hash, parse and clean ``stats`` in this process (see :func:`prepare_batch`).

    The ``papers`` suite's rows of all the files are built at the end as one frame
    (:attr:`PreparedBatch.entries`): per file, only reading, parsing and cleaning. With
    ``dedup`` (``Settings.dedup``), the MinHash signatures of the abstracts are computed
    too (:attr:`PreparedBatch.signatures`), so the process that loads the batch does not.

    The files are returned :meth:`~paperwatch.ingest.files.PreparedFile.without_entries`: their
    entries are the rows of :attr:`PreparedBatch.entries` (``entry_count`` says how many).

    An exception (or a Polars panic) while preparing a file, building its suite rows or
    extracting its terms puts that file in :attr:`PreparedBatch.failed` with the reason;
    the other files are prepared. One while computing signatures leaves the batch without
    them (they are computed when the papers are sketched). Raises only what reading
    raises besides a vanished file (``OSError``), and ``KeyboardInterrupt``.
    """
    prepared: list[tuple[int, PreparedFile]] = []
    failed: list[tuple[int, PrepareFailure]] = []
    vanished: list[tuple[str, str]] = []
    for index, stat in enumerate(stats):
        try:
            data = read_listing_file(stat, max_bytes)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            vanished.append((stat.rel, _vanished_reason(stat, exc)))
            continue
        file_started()  # the run stops a worker that stays on one file too long
        try:
            inject_fault(stat.name)
            prepared.append((index, prepare_file(stat, data, max_bytes)))
        except (Exception, PanicException) as exc:
            failed.append((index, _failure(stat, exc)))
        finally:
            file_done()
    entries, unbuilt = _entries_of(prepared)
    if unbuilt:
        dropped = {index for index, _ in unbuilt}
        prepared = [(i, f) for i, f in prepared if i not in dropped]
        failed = sorted(failed + unbuilt, key=lambda item: item[0])
    batch = _contained_terms(
        PreparedBatch([f for _, f in prepared], entries, vanished, failed=[f for _, f in failed])
    )
    if dedup is not None:
        # A cache: when it cannot be computed, the papers are sketched where they are loaded.
        with suppress(Exception, PanicException):
            batch.signatures = batch_signatures(batch_texts(batch.prepared), dedup)
    # Their rows are in batch.entries: the objects would be pickled a second time.
    batch.prepared = [file.without_entries() for file in batch.prepared]
    return batch


#: The frames of a :class:`PreparedBatch` that :func:`spool_batch` writes to files.
SPOOLED_FRAMES = ("entries", "terms", "signatures")


@dataclass(frozen=True, slots=True)
class SpooledBatch:
    """A :class:`PreparedBatch` whose frames wait in Arrow IPC files (:func:`spool_batch`):
    ``batch`` without them, ``files`` the frame name and file of each; :meth:`load` reads
    them back and deletes the files."""

    batch: PreparedBatch
    files: tuple[tuple[str, Path], ...]

    def load(self) -> PreparedBatch:
        """The batch with its frames read back (the same rows, columns and types); the
        files are deleted, also when reading one raises.

        Each file is opened and deleted before it is read: Polars maps an uncompressed
        IPC file into memory, and a file cut short by another process while mapped would
        end this one with SIGBUS; once deleted, its name reaches it no more.

        Raises:
            OSError: a file cannot be read (e.g. deleted meanwhile).
            polars.exceptions.ComputeError: a file is not a complete IPC file.
        """
        try:
            for name, path in self.files:
                with path.open("rb") as handle:
                    path.unlink()
                    setattr(self.batch, name, pl.read_ipc(handle))
        finally:
            for _, path in self.files:
                with suppress(OSError):
                    path.unlink()
        return self.batch


def spool_batch(batch: PreparedBatch, folder: Path) -> SpooledBatch | PreparedBatch:
    """Write the frames of ``batch`` that have rows to Arrow IPC files in ``folder`` (files
    of unique names, uncompressed, strings as string views) and return it without them.

    From a file the loading process reads a batch once, not twice as through a pipe
    (docs/design.md, "Batches spooled to files").

    Returns:
        A :class:`SpooledBatch`; or ``batch`` itself (frames kept, to be pickled) when a
        file cannot be written (``folder`` gone, disk full): what was written is deleted.
    """
    files: list[tuple[str, Path]] = []
    try:
        for name in SPOOLED_FRAMES:
            frame: pl.DataFrame = getattr(batch, name)
            if frame.height == 0:
                continue
            path = folder / f"{os.getpid()}-{uuid.uuid4().hex}-{name}.arrow"
            files.append((name, path))
            frame.write_ipc(path, compression="uncompressed", compat_level=pl.CompatLevel.newest())
    except (Exception, PanicException):  # OSError, or Polars' own error for one
        for _, path in files:
            with suppress(OSError):
                path.unlink()
        return batch
    written = {name for name, _ in files}
    kept = {name: None if name in written else getattr(batch, name) for name in SPOOLED_FRAMES}
    spooled = PreparedBatch(
        batch.prepared,
        kept["entries"],
        batch.vanished,
        kept["terms"],
        batch.failed,
        kept["signatures"],
    )
    return SpooledBatch(spooled, tuple(files))


def prepare_files_spooled(
    stats: Sequence[ListingFileStat],
    max_bytes: int,
    dedup: DedupSettings | None,
    folder: Path,
) -> SpooledBatch | PreparedBatch:
    """:func:`prepare_files`, the result's frames written to ``folder``
    (:func:`spool_batch`): what a preparation worker of a pool runs."""
    return spool_batch(prepare_files(stats, max_bytes, dedup), folder)


def unspooled(part: SpooledBatch | PreparedBatch) -> PreparedBatch:
    """``part`` as a :class:`PreparedBatch`: a :class:`SpooledBatch` is loaded
    (:meth:`SpooledBatch.load`, which may raise), a batch returned as it is."""
    return part.load() if isinstance(part, SpooledBatch) else part


def merge_batches(parts: Iterable[PreparedBatch]) -> PreparedBatch:
    """Concatenate prepared parts in order (e.g. the chunks prepared by several workers);
    an abstract in several parts keeps the terms of its first part."""
    merged = PreparedBatch()
    entries: list[pl.DataFrame] = []
    terms: list[pl.DataFrame] = []
    signatures: list[pl.DataFrame] = []
    seen: set[int] = set()
    for part in parts:
        merged.prepared.extend(part.prepared)
        if part.entries.height:
            entries.append(part.entries)
        if part.signatures.height:
            signatures.append(part.signatures)
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
        pl.concat(entries, how="vertical") if entries else _no_entries(),
        merged.vanished,
        pl.concat(terms, how="vertical"),
        merged.failed,
        _merged_signatures(signatures),
    )


def _merged_signatures(parts: list[pl.DataFrame]) -> pl.DataFrame | None:
    """The parts' signatures, each key once (parts computed with other settings, which
    cannot happen within a run, are left out rather than mixed)."""
    if not parts:
        return None
    width = parts[0].schema["signature"]
    kept = [part for part in parts if part.schema["signature"] == width]
    return pl.concat(kept, how="vertical").unique("key", keep="first", maintain_order=True)
