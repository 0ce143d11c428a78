"""The one settings object of paperwatch.

Values come, highest priority first, from: explicit keyword arguments (CLI
options), environment variables prefixed ``PAPERWATCH_`` (nested fields use
``__``, e.g. ``PAPERWATCH_SMTP__HOST``), a ``.env`` file, a TOML file
(``paperwatch.toml`` in the working directory, or the path in
``PAPERWATCH_CONFIG``), and the defaults below. ``paperwatch.example.toml`` in
the repository lists every field.

Secrets (the SMTP password) are never read from the TOML file: they come from
the environment or from a Prefect Secret block named in ``smtp.password_block``.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)


class DedupSettings(BaseModel):
    """Near-duplicate detection (MinHash LSH over shingles)."""

    threshold: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="Jaccard similarity at or above which two papers are near-duplicates.",
    )
    num_perm: int = Field(default=128, ge=16, le=1024, description="MinHash permutations.")
    word_shingle: int = Field(
        default=3, ge=1, le=10, description="Words per shingle (spaced text)."
    )
    char_shingle: int = Field(
        default=3, ge=1, le=10, description="Characters per shingle (text without spaces)."
    )
    max_pairs_per_paper: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Near-duplicate pairs kept per paper: its most similar earlier papers.",
    )


class TrendingSettings(BaseModel):
    """Trending terms (beta-binomial test per term, Benjamini-Hochberg FDR; docs/terms.md)."""

    baseline_weeks: int = Field(
        default=4, ge=1, le=104, description="Earlier ISO weeks forming the baseline."
    )
    min_support: int = Field(
        default=3, ge=1, description="Papers a term needs this week to be scored."
    )
    top_n: int = Field(
        default=5,
        ge=1,
        le=200,
        description="New, rising and falling terms shown (each; every reported term is "
        "stored in trending_terms). Each shown term with its chart and examples takes about "
        "3 KB of the e-mail's HTML budget.",
    )
    fdr: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="False discovery rate controlled over the terms tested (Benjamini-Hochberg).",
    )
    first_week_terms: int = Field(
        default=10,
        ge=0,
        le=50,
        description="Distinctive terms shown in a week without a baseline.",
    )
    examples_per_term: int = Field(
        default=3, ge=0, le=20, description="Papers listed under each term."
    )


def _clean_phrases(value: list[str], what: str, *, lower: bool, limit: int) -> list[str]:
    """``value`` with white space collapsed (lower-cased when ``lower``), duplicates
    dropped, order kept. Raises ValueError for an empty or over-long item."""
    kept: list[str] = []
    for item in value:
        text = " ".join(str(item).split())
        text = text.lower() if lower else text
        if not text:
            raise ValueError(f"{what} is empty")
        if len(text) > limit:
            raise ValueError(f"{what} {text[:20]!r}… is longer than {limit} characters")
        if text not in kept:
            kept.append(text)
    return kept


class Reader(BaseModel):
    """A reader of the report with interests of their own (``[[smtp.readers]]``).

    Each reader gets a message of their own that starts with the week's papers
    picked for them ("For you": their library, authors and topics, less their
    exclusions; docs/email.md); the rest of it is the week's report. An unknown key
    (a misspelt ``libary``) is refused, as everywhere in the settings.
    """

    model_config = ConfigDict(extra="forbid")

    address: str = Field(description="The reader's mailbox, e.g. ann@example.org.")
    topics: list[str] = Field(
        default_factory=list,
        description='Topics or keywords, e.g. ["diffusion", "federated learning"] '
        "(case does not matter; matched on the paper's terms and its text).",
    )
    library: Path | None = Field(
        default=None,
        description="The reader's own papers: a BibTeX (.bib), CSL-JSON (.json) or RIS (.ris) "
        "export (Zotero, Mendeley), or a list of arXiv ids/DOIs (.txt, one a line). A "
        "relative path is relative to the working directory, like every path of the settings; "
        "~ is the home folder. Each new paper is scored against it (TF-IDF cosine, recent "
        "items weighted higher) and the closest are listed with the library paper they are "
        "close to. A missing or unreadable file fails the reader's message, naming the file.",
    )
    library_picks: int = Field(
        default=10,
        ge=1,
        le=20,
        description="New papers closest to the library listed at most (the top N).",
    )
    authors: list[str] = Field(
        default_factory=list,
        description='Authors to follow, e.g. ["Ann Lee", "José Ñúñez"]: their new papers are '
        "always listed, saying so. Matched on the family name and the first given name, "
        "without regard to case or accents; an initial (A. Lee) matches any given name "
        "starting with it.",
    )
    exclude: list[str] = Field(
        default_factory=list,
        description='Terms never wanted, e.g. ["reinforcement learning"]: a new paper with one '
        "among its terms or in its title (whole words, any case) never appears in this "
        "reader's section.",
    )

    @field_validator("topics")
    @classmethod
    def _clean_topics(cls, value: list[str]) -> list[str]:
        return _clean_phrases(value, "a topic", lower=True, limit=100)

    @field_validator("exclude")
    @classmethod
    def _clean_exclude(cls, value: list[str]) -> list[str]:
        return _clean_phrases(value, "an excluded term", lower=True, limit=100)

    @field_validator("authors")
    @classmethod
    def _clean_authors(cls, value: list[str]) -> list[str]:
        return _clean_phrases(value, "an author", lower=False, limit=200)

    @field_validator("library")
    @classmethod
    def _expand_home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None


class SmtpSettings(BaseModel):
    """Where and how the weekly report is sent."""

    host: str = Field(default="localhost", description="SMTP server host name.")
    port: int = Field(default=587, ge=1, le=65535, description="SMTP server port.")
    security: Literal["starttls", "ssl", "none"] = Field(
        default="starttls", description="STARTTLS (587), implicit TLS (`ssl`, 465) or none."
    )
    username: str | None = Field(default=None, description="SMTP login; unset: no login.")
    password: SecretStr | None = Field(
        default=None,
        description="Only from the environment (PAPERWATCH_SMTP__PASSWORD), never a file.",
    )
    password_block: str | None = Field(
        default=None, description="Name of a Prefect Secret block holding the password."
    )
    sender: str = Field(default="paperwatch@localhost", description="The From address.")
    recipients: list[str] = Field(
        default_factory=list, description="Mailboxes that get the whole report."
    )
    readers: list[Reader] = Field(
        default_factory=list,
        description="Readers with interests of their own (topics, a library, authors, "
        "exclusions: the smtp.readers[] rows): each gets a message of their own.",
    )
    timeout_s: float = Field(default=30.0, gt=0, description="Seconds per SMTP network operation.")
    retries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Extra delivery attempts after a transient failure (connection, 4xx reply).",
    )
    retry_backoff_s: float = Field(
        default=30.0,
        ge=0,
        description="Seconds before the first retry; doubles for each further retry.",
    )
    ca_file: Path | None = Field(
        default=None,
        description=(
            "PEM file of the CA (or the self-signed certificate) the SMTP server's certificate "
            "must chain to; default: the system trust store. Host names are always checked."
        ),
    )


class ScheduleSettings(BaseModel):
    """Deployment schedules."""

    report_cron: str = Field(default="0 8 * * 1", description="Weekly report cron, in `timezone`.")
    ingest_interval_minutes: int = Field(
        default=15, ge=1, description="Safety-net ingestion interval."
    )
    watch_quiet_period_s: float = Field(
        default=2.0,
        ge=0,
        description="A file must keep its size and mtime this long before it is read.",
    )
    writer_lock_timeout_s: float = Field(
        default=3600.0,
        description="How long a run waits for another run writing the database "
        "(the writer lock beside it); negative: forever.",
    )


class Settings(BaseSettings):
    """All of paperwatch's configuration. Build it once per process with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="PAPERWATCH_",
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    watch_dir: Path = Field(
        default=Path("seeds"),
        description="Folder of listing files (.txt, .md, .json, .jsonl, .yaml, .bib, .xml, .atom, .rss).",
    )
    database: Path = Field(default=Path("data/paperwatch.duckdb"), description="The DuckDB file.")
    report_dir: Path = Field(default=Path("reports/out"), description="Where reports are written.")
    snapshot: str | None = Field(
        default=None,
        description="Read-only copy of the database for analysts, republished atomically after "
        "every run that wrote (query it while paperwatch writes: `paperwatch sql`). Unset: "
        "<database name>.read.duckdb beside the database (data/paperwatch.read.duckdb); "
        "empty: no snapshot.",
    )
    log_file: str | None = Field(
        default=None,
        description="Where the command line writes its runs' log records, tracebacks "
        "included (appended). Unset: <database name>.log beside the database "
        "(data/paperwatch.log); empty: none.",
    )
    timezone: str = Field(default="UTC", description="IANA time zone that defines ISO weeks.")
    lock_timeout_s: float = Field(
        default=60.0,
        ge=0,
        description="How long a writer waits for a DuckDB file lock before failing.",
    )
    # Why these batch defaults: docs/design.md, "Batch sizes".
    batch_files: int = Field(
        default=5000,
        ge=1,
        description="At most this many files read, validated and loaded together (in one "
        "transaction).",
    )
    batch_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1,
        description="At most this many bytes of listing files per batch (bounds memory on "
        "large files); a larger file is a batch of its own.",
    )
    prepare_workers: int = Field(
        default=0,
        ge=0,
        description="Processes that read, parse and clean a batch of files in parallel "
        "(0: one per CPU core). Used when more than 8 MiB are pending (else one process, or "
        "the run's own process when prepare_memory_limit_bytes is 0), and as the number of "
        "workers of a temporary Dask cluster.",
    )
    prepare_memory_limit_bytes: int = Field(
        default=4 * 1024 * 1024 * 1024,
        ge=0,
        description="Memory ceiling of each process that prepares files (RLIMIT_DATA, bytes; "
        "0: none): a file whose preparation needs more is quarantined, the rest of its "
        "batch loads. Files are then always prepared in worker processes (one when under "
        "8 MiB are pending); 0 prepares small runs in the run's own process (they start "
        "sooner, but a file that aborts the process ends the run). Also the memory limit "
        "of a temporary Dask cluster's workers.",
    )
    bulk_memory_limit_mb: int = Field(
        default=0,
        ge=0,
        description="DuckDB's memory limit (MB) while a backfill (a run over 8 MiB) keeps "
        "the database open; 0: max(512, 128 x CPU cores). More is faster on a large "
        "database and costs as much more peak memory (figures in docs/design.md, under "
        "DuckDB's memory limit). Every other connection keeps max(1024, 256 x cores).",
    )
    prepare_timeout_s: float = Field(
        default=300.0,
        ge=0,
        description="Most seconds a worker may spend preparing one file (read, parse, clean, "
        "terms); a file that takes longer (it hangs rather than crashes) has its worker "
        "stopped and is quarantined whole as an internal error, the rest of its batch loads "
        "(0: no limit; with prepare_memory_limit_bytes 0 too, small runs prepare in the "
        "run's own process, where neither applies).",
    )
    task_runner: Literal["local", "dask"] = Field(
        default="local",
        description="Where the parse/clean/validate stage runs: 'local' (this process and "
        "its process pool) or 'dask' (prefect-dask: a temporary local Dask cluster, or the "
        "cluster at dask_address).",
    )
    dask_address: str | None = Field(
        default=None,
        description="Scheduler address of a running Dask cluster (tcp://host:8786) for "
        "task_runner = 'dask'; unset: a temporary LocalCluster of prepare_workers workers.",
    )
    dask_processes: bool = Field(
        default=True,
        description="The temporary Dask cluster's workers are processes (True) or threads "
        "of this process (False: no parallel cleaning, for tests).",
    )
    max_file_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="Listing files larger than this are quarantined unread.",
    )
    formats: dict[
        str, Literal["text", "lines", "markdown", "json", "jsonl", "yaml", "bibtex", "feed"]
    ] = Field(
        default_factory=dict,
        description="Pin the format of files by folder or glob, relative to watch_dir "
        '(``{"digests" = "markdown", "exports/*.txt" = "jsonl"}``); the longest matching '
        "pattern wins; files no pattern matches are judged by extension, then content "
        "(docs/formats.md).",
    )

    dedup: DedupSettings = Field(default_factory=DedupSettings)
    trending: TrendingSettings = Field(default_factory=TrendingSettings)
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value

    @property
    def snapshot_path(self) -> Path | None:
        """The analysts' snapshot file (setting ``snapshot``), or None when it is disabled.

        Unset, it is ``<database stem>.read.duckdb`` beside the database, so
        ``data/paperwatch.duckdb`` gives ``data/paperwatch.read.duckdb``.
        """
        if self.snapshot is None:
            return self.database.with_name(f"{self.database.stem}.read.duckdb")
        if not self.snapshot.strip():
            return None
        return Path(self.snapshot)

    @property
    def log_path(self) -> Path | None:
        """The command line's log file (setting ``log_file``), or None when disabled.

        Unset, it is ``<database stem>.log`` beside the database (``data/paperwatch.log``).
        """
        if self.log_file is None:
            return self.database.with_name(f"{self.database.stem}.log")
        if not self.log_file.strip():
            return None
        return Path(self.log_file)

    @property
    def tz(self) -> ZoneInfo:
        """The configured time zone as a :class:`zoneinfo.ZoneInfo`."""
        return ZoneInfo(self.timezone)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, dotenv_settings]
        named = os.environ.get("PAPERWATCH_CONFIG")
        if named == "":  # explicitly no configuration file
            return tuple(sources)
        toml_path = Path(named or "paperwatch.toml")
        if named and not toml_path.is_file():
            raise ValueError(f"PAPERWATCH_CONFIG names {toml_path}, which is not a file")
        if toml_path.is_file():
            sources.append(_TomlWithoutSecrets(settings_cls, toml_file=toml_path))
        return tuple(sources)


class _TomlWithoutSecrets(TomlConfigSettingsSource):
    """TOML source that refuses a password: secrets never live in a config file."""

    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        try:
            return super()._read_file(file_path)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{file_path}: not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{file_path}: not UTF-8 text (byte {exc.start}); a settings file is TOML"
            ) from None

    def __call__(self) -> dict[str, object]:
        data = super().__call__()
        unknown = _unknown_keys(data, Settings)
        if unknown:
            raise ValueError(
                f"{self.toml_file_path}: unknown setting(s) {', '.join(sorted(unknown))} "
                "(see paperwatch.example.toml for every setting)"
            )
        smtp = data.get("smtp")
        if isinstance(smtp, dict) and "password" in smtp:
            raise ValueError(
                f"{self.toml_file_path}: smtp.password must not be stored in a file; "
                "set PAPERWATCH_SMTP__PASSWORD or smtp.password_block (a Prefect Secret block)"
            )
        return data


def _unknown_keys(data: dict[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    unknown = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            unknown.append(prefix + key)
            continue
        annotation = field.annotation
        if (
            isinstance(value, dict)
            and isinstance(annotation, type)
            and issubclass(annotation, BaseModel)
        ):
            unknown += _unknown_keys(value, annotation, f"{prefix}{key}.")
    return unknown


#: Variables paperwatch reads that are not settings.
_OTHER_VARIABLES = frozenset(
    {"PAPERWATCH_CONFIG", "PAPERWATCH_HOME", "PAPERWATCH_TEST_PREPARE_FAULT"}
)


def _setting_variables(model: type[BaseModel], prefix: str) -> set[str]:
    names: set[str] = set()
    for name, field in model.model_fields.items():
        variable = f"{prefix}{name.upper()}"
        names.add(variable)
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names |= _setting_variables(kind, f"{variable}__")
    return names


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The ``PAPERWATCH_*`` names of ``environ`` that name no setting (pydantic-settings
    ignores them), sorted, each with the variable of the closest setting (difflib ratio
    0.8 or more, after the prefix) or None. Names are compared in capitals, as the
    settings read them."""
    prefix = "PAPERWATCH_"
    known = {v.removeprefix(prefix) for v in _setting_variables(Settings, prefix)}
    known |= {v.removeprefix(prefix) for v in _OTHER_VARIABLES}
    found = []
    for name in sorted(environ):
        upper = name.upper()
        if upper.startswith(prefix) and upper.removeprefix(prefix) not in known:
            close = difflib.get_close_matches(upper.removeprefix(prefix), known, 1, 0.8)
            found.append((name, prefix + close[0] if close else None))
    return found


def load_settings(**overrides: object) -> Settings:
    """Read the settings once: overrides (e.g. CLI options) > env > .env > TOML > defaults.

    Overrides whose value is ``None`` are ignored, so CLI options left unset fall through.

    Raises:
        pydantic.ValidationError: a value is of the wrong type or out of range.
    """
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except SettingsError as exc:
        raise ValueError(_not_json(os.environ) or str(exc)) from None


def _wants_json(annotation: Any) -> bool:
    """Whether pydantic-settings reads a variable of this type as JSON (lists, tables)."""
    if get_origin(annotation) in (list, dict, tuple, set):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    if get_origin(annotation) in (Union, UnionType):
        return any(_wants_json(a) for a in get_args(annotation) if a is not type(None))
    return False


def _not_json(environ: Mapping[str, str]) -> str | None:
    """What is wrong with the first ``PAPERWATCH_*`` variable of a list or table setting
    whose value is not JSON, or None (pydantic-settings only names the top field)."""
    for name in sorted(environ):
        if not name.upper().startswith("PAPERWATCH_"):
            continue
        path = name.upper().removeprefix("PAPERWATCH_").lower().split("__")
        model: type[BaseModel] = Settings
        annotation: Any = None
        for part in path:
            field = model.model_fields.get(part)
            if field is None:
                annotation = None
                break
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                model = annotation
        if annotation is None or not _wants_json(annotation):
            continue
        try:
            json.loads(environ[name])
        except ValueError:
            example = (
                '{"name": "value"}'
                if get_origin(annotation) is not list
                else '["a@example.org", "b@example.org"]'
                if name.upper().endswith("RECIPIENTS")
                else '["first", "second"]'
            )
            return (
                f"{name} is not JSON: a list or table setting is written as JSON in the "
                f"environment, e.g. {name}='{example}'"
            )
    return None


def settings_reference() -> str:
    """The Markdown table of every setting (dotted name, default, description), generated
    from :class:`Settings`; docs/settings.md holds it between the ``settings:begin`` and
    ``settings:end`` markers (``make docs`` rewrites it, tests/test_docs.py checks it)."""
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            kind = field.annotation
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                walk(kind, f"{prefix}{name}.")
                continue
            if field.is_required():
                shown = "required"
            else:
                default = field.get_default(call_default_factory=True)
                shown = "none" if default is None else f"`{_toml_value(default)}`"
            text = (
                (field.description or "")
                .replace("|", "\\|")
                .replace("<", "&lt;")
                .replace("\n", " ")
            )
            rows.append(f"| `{prefix}{name}` | {shown} | {text} |")
            item = get_args(kind)[0] if get_origin(kind) is list and get_args(kind) else None
            if isinstance(item, type) and issubclass(item, BaseModel):
                walk(item, f"{prefix}{name}[].")  # each item of a list of tables

    walk(Settings, "")
    return "\n".join(rows) + "\n"


def _toml_value(value: object) -> str:
    """``value`` as it is written in paperwatch.toml (booleans lower case, paths as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return str(value)
    return str(value)


def write_settings_reference(path: Path) -> None:
    """Replace the table between the markers of the Markdown file ``path`` by
    :func:`settings_reference`. Raises ValueError when the markers are missing."""
    text = path.read_text(encoding="utf-8")
    begin, end = "<!-- settings:begin -->\n", "<!-- settings:end -->"
    if begin not in text or end not in text:
        raise ValueError(f"{path}: no {begin.strip()} ... {end} markers")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(head + begin + settings_reference() + end + tail, encoding="utf-8")


if __name__ == "__main__":
    import sys

    write_settings_reference(Path(sys.argv[1]))
