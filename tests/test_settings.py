"""Settings: sources in order, and configuration mistakes refused with the file named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from paperwatch.settings import load_settings


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    s = load_settings()
    assert (s.watch_dir, s.database, s.report_dir, s.timezone) == (
        Path("seeds"),
        Path("data/paperwatch.duckdb"),
        Path("reports/out"),
        "UTC",
    )
    assert (s.dedup.threshold, s.trending.baseline_weeks, s.smtp.port) == (0.8, 4, 587)


def test_order_options_env_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = write(
        tmp_path / "pw.toml",
        'timezone = "Europe/Berlin"\nwatch_dir = "inbox"\n[dedup]\nthreshold = 0.9\n',
    )
    monkeypatch.setenv("PAPERWATCH_CONFIG", str(toml))
    monkeypatch.setenv("PAPERWATCH_WATCH_DIR", "from-env")
    monkeypatch.setenv("PAPERWATCH_TRENDING__TOP_N", "7")
    s = load_settings(database=Path("cli.duckdb"), report_dir=None)
    assert (s.timezone, s.watch_dir, s.database, s.dedup.threshold, s.trending.top_n) == (
        "Europe/Berlin",
        Path("from-env"),
        Path("cli.duckdb"),
        0.9,
        7,
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[smtp]\npassword = "hunter2"\n', "smtp.password must not be stored in a file"),
        ('watchdir = "x"\n[smtp]\nhots = "a"\n', "unknown setting(s) smtp.hots, watchdir"),
        ("watch_dir = \n", "not valid TOML"),
    ],
)
def test_toml_mistakes_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    toml = write(tmp_path / "pw.toml", text)
    monkeypatch.setenv("PAPERWATCH_CONFIG", str(toml))
    with pytest.raises((ValueError, ValidationError)) as info:
        load_settings()
    assert str(toml) in str(info.value) and message in str(info.value)


def test_missing_config_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERWATCH_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(
        ValueError, match=r"PAPERWATCH_CONFIG names .*nope\.toml, which is not a file"
    ):
        load_settings()


def test_unknown_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERWATCH_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ValidationError, match="unknown IANA time zone 'Mars/Olympus'"):
        load_settings()


def test_a_misspelt_reader_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``libary`` for ``library`` would silently give a reader no library: refused, named."""
    toml = write(
        tmp_path / "pw.toml",
        '[[smtp.readers]]\naddress = "ann@example.org"\nlibary = "ann.bib"\n',
    )
    monkeypatch.setenv("PAPERWATCH_CONFIG", str(toml))
    with pytest.raises(ValidationError) as caught:
        load_settings()
    (error,) = caught.value.errors()
    assert (error["loc"], error["type"]) == (("smtp", "readers", 0, "libary"), "extra_forbidden")


def test_a_settings_file_that_is_not_text_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = tmp_path / "pw.toml"
    toml.write_bytes(b"\xff\xfetimezone = 1\n")
    monkeypatch.setenv("PAPERWATCH_CONFIG", str(toml))
    with pytest.raises(
        ValueError, match=rf"^{toml}: not UTF-8 text \(byte 0\); a settings file is TOML$"
    ):
        load_settings()
