"""Finding and preparing listing files: scan the folder, read, parse, clean.

Everything here is a pure function of its inputs except :func:`scan_folder` and
:func:`read_listing_file`, which only read the file system. Loading into DuckDB
is :mod:`paperwatch.db.load`; the Prefect flow in ``flows/ingest.py`` wires both.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat as stat_mod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from paperwatch.ingest.clean import CleanAbstract, clean_abstract
from paperwatch.ingest.parse import (
    Entry,
    Header,
    ListingDecodeError,
    decode_listing,
    sequence_number,
)
from paperwatch.ingest.readers import (
    EXTENSIONS,
    FormatDecision,
    ReaderError,
    decide_format,
    pinned_format,
    read_text,
)
from paperwatch.ingest.shapes import (
    file_format,
    lfs_pointer_detail,
    split_metadata_lines,
)

#: Names that are work in progress of an editor or a download, never listings.
_TEMP_SUFFIXES = (".swp", ".swx", ".tmp", ".part", ".crdownload", ".partial", "~")


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def printable_name(name: str) -> str:
    """A file name or path as paperwatch stores and shows it: always valid UTF-8, one line.

    Bytes that are not UTF-8 (which Python keeps as lone surrogates) are written
    ``\\xff``; control characters (a newline in a name), and bidirectional controls
    (U+202E would show ``gpj.exe`` as ``exe.jpg``) are written ``\\n``, ``\\x1b``,
    ``\\u202e``. Other names are returned unchanged, so a listing's recorded path keeps
    matching the file.
    """
    if name.isprintable() and name.isascii():
        return name
    if any("\udc80" <= c <= "\udcff" for c in name):
        name = os.fsencode(name).decode("utf-8", "backslashreplace")
    return _UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), name)


class FileReplacedError(FileNotFoundError):
    """The path no longer holds the file that was scanned (replaced by a link or another file)."""


@dataclass(frozen=True, slots=True)
class ListingFileStat:
    """A candidate listing file as found by :func:`scan_folder`.

    ``rel`` is the path relative to the watched folder (POSIX separators), made
    printable by :func:`printable_name`; ``path`` the path to open. ``mtime_ns`` is the
    modification time in nanoseconds since the epoch. ``device`` and ``inode`` identify
    the file that was scanned (0 when unknown): the read checks it is still that file.
    ``target`` is the file a symbolic link inside the folder pointed at when scanned.
    ``pinned`` is ``(format, pattern)`` when the ``formats`` setting pins this file's format.
    """

    path: Path
    rel: str
    size: int
    mtime_ns: int
    device: int = 0
    inode: int = 0
    target: Path | None = None
    pinned: tuple[str, str] | None = None

    @property
    def name(self) -> str:
        return printable_name(self.path.name)


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Listing files found (sorted by ``rel``) and paths passed over, with the reason."""

    files: tuple[ListingFileStat, ...]
    ignored: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class PreparedEntry:
    """One parsed entry with its cleaned form (``clean`` is None when nothing is left of it)."""

    position: int
    line: int
    raw_text: str
    clean: CleanAbstract | None
    line_breaks: tuple[int, ...] = ()
    #: The text that was cleaned and judged, when metadata lines above or below the
    #: abstract were split off it (:func:`paperwatch.ingest.shapes.split_metadata_lines`); the
    #: offsets of its line breaks; and the lines split off. None: ``raw_text`` itself.
    body: str | None = None
    body_line_breaks: tuple[int, ...] = ()
    metadata_lines: tuple[str, ...] = ()
    #: What a structured format gives beside the abstract (see :class:`paperwatch.ingest.parse.Entry`).
    title: str | None = None
    authors: tuple[str, ...] = ()
    url: str | None = None
    external_id: str | None = None
    no_abstract: bool = False
    outside_paper: bool = False
    listed_number: int | None = None
    field_faults: tuple[str, ...] = ()
    raw_fields: str | None = None


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A listing file read, hashed, decoded, parsed and cleaned, with the facts the
    ``listing_files`` suite judges.

    ``read_detail`` is set when the file was not read (over ``max_file_bytes``);
    ``nul_detail`` when it holds NUL bytes; ``decode_error`` when it is not UTF-8
    (with the byte offset and line, and a guess at the encoding). ``data`` keeps
    the bytes of a file that is not readable text, for the quarantine; ``text``
    the decoded text of one that is. ``lfs_detail`` is set when the text is a Git
    LFS pointer (what and where the real file is), ``file_format`` when the text is
    written in another format than a plain-text listing (see
    :func:`paperwatch.ingest.shapes.file_format`). ``format`` is the reader that read it
    (:data:`paperwatch.ingest.readers.FORMATS`) and ``format_reason`` why it was chosen;
    ``format_error`` is set when the file could not be read in that format, or its
    format is ambiguous (the quarantine reason, naming the line or the candidates).

    ``entry_count`` is the number of entries parsed; it stays when ``entries`` is dropped
    (:meth:`without_entries`: a prepared batch carries its entries as one frame instead).
    """

    stat: ListingFileStat
    sha256: str
    header: Header | None = None
    entries: tuple[PreparedEntry, ...] = ()
    read_detail: str | None = None
    nul_detail: str | None = None
    decode_error: str | None = None
    error_line: int | None = None
    data: bytes | None = field(default=None, repr=False)
    text: str | None = field(default=None, repr=False)
    lfs_detail: str | None = None
    file_format: str | None = None
    format: str | None = None
    format_reason: str | None = None
    format_error: str | None = None
    entry_count: int = 0

    def without_entries(self) -> PreparedFile:
        """This file without its :class:`PreparedEntry` objects (``entry_count`` kept).

        Their entries travel to the loading process as the rows of
        :attr:`paperwatch.ingest.prepare.PreparedBatch.entries` only (docs/design.md,
        "Batches spooled to files").
        """
        return replace(self, entries=())

    @property
    def sequence_number(self) -> int | None:
        return sequence_number(self.stat.name)

    @property
    def is_text(self) -> bool:
        """True when the bytes were read and decoded as UTF-8 text."""
        return self.read_detail is None and self.nul_detail is None and self.decode_error is None


def name_ignore_reason(name: str) -> str | None:
    """Why a file of this name is not a listing (hidden, temporary, an extension no reader
    takes), or None. Listing extensions: :data:`paperwatch.ingest.readers.EXTENSIONS`."""
    if name.startswith("."):
        return "hidden file"
    if name.startswith("#") or name.endswith(_TEMP_SUFFIXES):
        return "editor or download temporary file"
    if name.startswith(("~$", ".~lock.")):
        return "an office program's lock file"
    if os.path.splitext(name)[1].lower() not in EXTENSIONS:
        return "not a listing file (" + ", ".join(sorted(EXTENSIONS)) + ")"
    return None


def scan_folder(folder: Path, pins: Mapping[str, str] | None = None) -> ScanResult:
    """List the listing files under ``folder`` (recursively), with size and mtime.

    Listing files have an extension some reader takes (``.txt``, ``.md``, ``.json``,
    ``.jsonl``, ``.yaml``, ``.bib``, ``.xml``, ``.atom``, ``.rss``: :data:`paperwatch.ingest.readers.EXTENSIONS`);
    ``pins`` (the ``formats`` setting) is recorded on each file it matches
    (:attr:`ListingFileStat.pinned`). Hidden files and folders, editor/download
    temporary files, files of other extensions, directories named ``*.txt``, broken symbolic links and links that
    loop are passed over and listed in ``ignored`` with the reason. Symbolic
    links to folders are not followed (no loops), and a link to a file is
    followed only when its target lies inside ``folder``: a link must not make
    paperwatch read (and report) files from elsewhere on the machine.

    Raises:
        FileNotFoundError: ``folder`` does not exist.
        NotADirectoryError: ``folder`` is a file.
    """
    if not folder.exists():
        raise FileNotFoundError(f"watched folder {folder} does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"watched folder {folder} is not a folder")
    files: list[ListingFileStat] = []
    ignored: list[tuple[str, str]] = []
    inside = folder.resolve()

    def unlistable(exc: OSError) -> None:  # a folder os.walk cannot list: said, not skipped
        where = Path(os.fsdecode(exc.filename)) if exc.filename else folder
        rel = printable_name(where.relative_to(folder).as_posix()) if where != folder else "."
        ignored.append((rel, f"cannot list this folder: {exc.strerror}"))

    for root, dirs, names in os.walk(folder, followlinks=False, onerror=unlistable):
        root_path = Path(root)
        dirs[:] = _folders_to_walk(root_path, sorted(dirs), folder, ignored)
        for name in sorted(names):
            path = root_path / name
            rel = printable_name(path.relative_to(folder).as_posix())
            reason = name_ignore_reason(name)
            found = _listing_stat(path, rel, inside, pins) if reason is None else reason
            if isinstance(found, ListingFileStat):
                files.append(found)
            elif found != "hidden file":
                ignored.append((rel, found))
    files.sort(key=lambda f: f.rel)
    return ScanResult(files=tuple(files), ignored=tuple(ignored))


def _folders_to_walk(
    root: Path, names: list[str], folder: Path, ignored: list[tuple[str, str]]
) -> list[str]:
    """The sub-folders of ``root`` to walk into: not hidden, not links (those are added to
    ``ignored`` with the reason, as is a folder named like a listing file, still walked)."""
    kept = []
    for d in names:
        rel = printable_name((root / d).relative_to(folder).as_posix())
        if d.startswith("."):
            continue
        try:
            is_link = stat_mod.S_ISLNK((root / d).lstat().st_mode)
        except OSError as exc:  # e.g. a path over the system's limit (ENAMETOOLONG)
            ignored.append((rel, f"cannot read this folder: {exc.strerror}"))
            continue
        if is_link:
            ignored.append((rel, "link to a folder (not followed)"))
            continue
        if os.path.splitext(d)[1].lower() in EXTENSIONS:
            ignored.append((rel, "a folder, not a listing file"))
        kept.append(d)
    return kept


def _listing_stat(
    path: Path, rel: str, inside: Path, pins: Mapping[str, str] | None
) -> ListingFileStat | str:
    """The stat of the listing file at ``path``, or why it is passed over."""
    try:
        if path.is_symlink() and not path.resolve(strict=True).is_relative_to(inside):
            return "link to a file outside the watched folder (not followed)"
        st = path.stat()
    except FileNotFoundError:
        return "broken link or removed while scanning"
    except (OSError, RuntimeError) as exc:  # RuntimeError: a link loop (resolve)
        strerror = exc.strerror if isinstance(exc, OSError) else None
        return f"cannot stat: {strerror or 'symbolic link loop'}"
    if not stat_mod.S_ISREG(st.st_mode):
        return "not a regular file"
    return ListingFileStat(
        path=path,
        rel=rel,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        device=st.st_dev,
        inode=st.st_ino,
        target=path.resolve() if path.is_symlink() else None,
        pinned=pinned_format(rel, pins) if pins else None,
    )


def select_changed(
    files: Iterable[ListingFileStat], known: set[tuple[str, int, int]]
) -> list[ListingFileStat]:
    """The files whose (rel, size, mtime_ns) is not in ``known``: only those are read.

    Args:
        files: the scanned files.
        known: (rel, size, mtime_ns) of files already recorded in ``listing_files``.
    """
    return [f for f in files if (f.rel, f.size, f.mtime_ns) not in known]


def read_listing_file(stat: ListingFileStat, max_bytes: int) -> bytes | None:
    """Read a listing file's bytes, or None when it is larger than ``max_bytes`` (not read).

    The file is opened without following a symbolic link (``O_NOFOLLOW``; a link that
    was inside the watched folder when scanned is opened at the target it had then),
    and the opened file must be the one scanned (same device and inode): a listing
    swapped for a link to ``/etc/passwd`` between the scan and the read is not read.

    Raises:
        FileReplacedError: the path now holds a link or another file than the one scanned.
        FileNotFoundError: it disappeared since the scan.
        IsADirectoryError: it became a folder since the scan.
        OSError: it cannot be read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(stat.target or stat.path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileReplacedError(
                errno.ELOOP, "replaced by a symbolic link between scan and read"
            ) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if stat_mod.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "became a folder between scan and read")
        if not stat_mod.S_ISREG(st.st_mode) or (
            stat.inode and (st.st_dev, st.st_ino) != (stat.device, stat.inode)
        ):
            raise FileReplacedError(errno.ESTALE, "replaced by another file between scan and read")
        if st.st_size > max_bytes:
            return None
        return handle.read()


def hash_listing_files(
    stats: Iterable[ListingFileStat], max_bytes: int
) -> list[tuple[ListingFileStat, str]]:
    """The sha256 (hex) of the bytes of each of ``stats``, read as
    :func:`read_listing_file` reads them (no link followed, the scanned file only).

    A file that cannot be read now (gone, replaced, no permission) or is larger than
    ``max_bytes`` is left out: preparing it says what is wrong with it.

    Returns:
        ``(stat, sha256)`` pairs in the order of ``stats``.
    """
    hashed = []
    for stat in stats:
        try:
            data = read_listing_file(stat, max_bytes)
        except OSError:
            continue
        if data is not None:
            hashed.append((stat, hashlib.sha256(data).hexdigest()))
    return hashed


_MAGIC = (
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"PK\x03\x04", "a ZIP archive (or Office document)"),
    (b"\x1f\x8b", "a gzip archive"),
)
_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")


def _kind_of_binary(data: bytes) -> str | None:
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 text (byte-order mark); save it as UTF-8"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text (byte-order mark); save it as UTF-8"
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return f"{kind}, not a listing"
    return None


def describe_non_utf8(data: bytes, offset: int, reason: str = "") -> str:
    """Guess what a file that is not UTF-8 is, for the quarantine reason.

    In order: a UTF-32 or UTF-16 byte-order mark; magic numbers (PDF, PNG, JPEG, GIF,
    ZIP, gzip); a UTF-8 file cut in the middle of a character (``reason`` is
    Python's "unexpected end of data"); UTF-16 surrogates encoded as UTF-8
    (CESU-8, Java's "modified UTF-8"); text that decodes as Windows-1252, the
    usual encoding of Latin text that is not UTF-8 (with 40 bytes of context
    around ``offset``); otherwise binary data.
    """
    kind = _kind_of_binary(data)
    if kind:
        return kind
    if reason == "unexpected end of data":
        return (
            "the file ends in the middle of a UTF-8 character (cut short, or still being written)"
        )
    if _SURROGATE.match(data, offset):
        return "UTF-16 surrogates encoded as UTF-8 (CESU-8 or Java's modified UTF-8); re-encode it as UTF-8"
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return "binary data or an unknown encoding"
    sample = data[max(0, offset - 20) : offset + 20].decode("cp1252", errors="replace")
    printable = "".join(c if c.isprintable() else " " for c in sample)
    return (
        f"looks like Windows-1252/Latin-1 text (…{' '.join(printable.split())}…); save it as UTF-8"
    )


def _nul_detail(data: bytes) -> str | None:
    """Where the first NUL byte is and what the file probably is (never its content)."""
    offset = data.find(b"\x00")
    if offset < 0:
        return None
    line = data.count(b"\n", 0, offset) + 1
    kind = _kind_of_binary(data)
    if kind is None:
        halves = (data[0::2].count(0), data[1::2].count(0))
        if len(data) >= 4 and max(halves) > len(data) // 4 and min(halves) < len(data) // 16:
            kind = "UTF-16 text without a byte-order mark; save it as UTF-8"
        else:
            try:
                data.decode("utf-8")
                kind = "otherwise UTF-8 text: remove the NUL bytes"
            except UnicodeDecodeError:
                kind = "binary data, not a listing"
    return f"first at byte {offset} (line {line}); {kind}"


def prepare_file(stat: ListingFileStat, data: bytes | None, max_bytes: int = 0) -> PreparedFile:
    """Hash, decode, parse and clean one listing file's bytes. Never raises for bad content.

    Args:
        stat: the file as scanned (its ``rel`` path names it in messages).
        data: its bytes, or None when it was not read (larger than ``max_bytes``).
        max_bytes: the read limit, for the message when ``data`` is None.

    Returns:
        A :class:`PreparedFile`. Files that are not readable UTF-8 text carry the
        reason (with byte offset and line) and keep their bytes; the
        ``listing_files`` suite decides what that means.
    """
    if data is None:
        return PreparedFile(
            stat=stat,
            sha256=_sha256_of_path(stat.path),
            read_detail=f"{stat.size:,} bytes, over the read limit of {max_bytes:,} (setting max_file_bytes)",
        )
    digest = hashlib.sha256(data).hexdigest()
    nul = _nul_detail(data)
    if nul is not None:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        return PreparedFile(stat=stat, sha256=digest, nul_detail=nul, error_line=line, data=data)
    try:
        text = decode_listing(data, stat.rel)
    except ListingDecodeError as exc:
        detail = (
            f"invalid byte at {exc.offset} (line {exc.line}); "
            f"{describe_non_utf8(data, exc.offset, exc.detail)}"
        )
        return PreparedFile(
            stat=stat, sha256=digest, decode_error=detail, error_line=exc.line, data=data
        )
    lfs = lfs_pointer_detail(text)
    pins = {stat.pinned[1]: stat.pinned[0]} if stat.pinned else None
    decision = (
        decide_format(stat.rel, text, pins)
        if lfs is None
        else FormatDecision("text", "a Git LFS pointer: read as text")
    )
    if decision.format is None:
        return PreparedFile(
            stat=stat,
            sha256=digest,
            text=text,
            format_reason=decision.reason,
            format_error=decision.reason,
        )
    try:
        listing = read_text(decision.format, text, stat.rel)
    except ReaderError as exc:
        return PreparedFile(
            stat=stat,
            sha256=digest,
            text=text,
            error_line=exc.line,
            format=decision.format,
            format_reason=decision.reason,
            format_error=str(exc),
        )
    plain = decision.format in ("text", "lines")
    entries = _prepared_entries(listing.entries, plain)
    return PreparedFile(
        stat=stat,
        sha256=digest,
        header=listing.header,
        entries=tuple(entries),
        entry_count=len(entries),
        text=text,
        lfs_detail=lfs,
        file_format=file_format(text) if plain and lfs is None else None,
        format=decision.format,
        format_reason=(
            f"{decision.reason}; {listing.format_note}" if listing.format_note else decision.reason
        ),
    )


def _prepared_entries(entries: Iterable[Entry], plain: bool) -> list[PreparedEntry]:
    """Each entry with its cleaned abstract (one cleaning per distinct body); ``plain``
    (the text and lines formats): metadata lines are first set apart from the body."""
    prepared = []
    cleaned_by_text: dict[str, CleanAbstract] = {}  # a file may repeat one entry many times
    for entry in entries:
        if plain:
            body, body_breaks, metadata = split_metadata_lines(entry.text, entry.line_breaks)
        else:  # a structured format's reader has already set the fields apart
            body, body_breaks, metadata = entry.text, entry.line_breaks, ()
        cleaned = None
        if not entry.no_abstract:
            cleaned = cleaned_by_text.get(body)
            if cleaned is None:
                cleaned = cleaned_by_text[body] = clean_abstract(body)
        prepared.append(
            PreparedEntry(
                position=entry.position,
                line=entry.line,
                raw_text=entry.text,
                clean=cleaned if cleaned is not None and cleaned.abstract else None,
                line_breaks=entry.line_breaks,
                body=body if metadata else None,
                body_line_breaks=body_breaks if metadata else (),
                metadata_lines=metadata,
                title=entry.title,
                authors=entry.authors,
                url=entry.url,
                external_id=entry.external_id,
                no_abstract=entry.no_abstract,
                outside_paper=entry.outside_paper,
                listed_number=entry.listed_number,
                field_faults=entry.field_faults,
                raw_fields=entry.raw_fields,
            )
        )
    return prepared


def _sha256_of_path(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
