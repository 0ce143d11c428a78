"""Expectation suites: severity and reasons from the suite files, broken checks told apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paperwatch.ingest import validate
from paperwatch.ingest.validate import SuiteError, failure_reasons, load_suite, validate_frame


def test_every_expectation_has_severity_and_reason() -> None:
    for name in ("listing_files", "papers"):
        suite = load_suite(name)
        assert suite["name"] == name
        assert all(e["meta"]["severity"] in ("critical", "warning") for e in suite["expectations"])


def _three_entries() -> pl.DataFrame:
    """Rows of the ``papers`` suite: row 1 too short (critical), row 2 unbalanced markup."""
    return pl.DataFrame(
        {
            "file": ["a.txt", "a.txt", "b.txt"],
            "position": [1, 2, 1],
            "line": [3, 5, 3],
            "abstract": ["x " * 60, "too short", "y " * 60],
            "abstract_raw": ["x " * 60, "too short", "y " * 60],
            "word_count": [60, 2, 60],
            "char_count": [120, 9, 120],
            "paper_id": ["p1", "p2", "p3"],
            "is_header_line": [False, False, False],
            "unbalanced_markup": [False, False, True],
            "latin_or_cjk_share": [1.0, 1.0, 1.0],
            "looks_like": pl.Series([None, None, None], dtype=pl.String),
            "format_note": pl.Series([None, None, None], dtype=pl.String),
            "ligature_damage": pl.Series([None, None, None], dtype=pl.String),
            "field_faults": pl.Series([None, None, None], dtype=pl.String),
            "removed_chars": [0, 0, 0],
            "no_abstract": [False, False, False],
            "outside_paper": [False, False, False],
        }
    )


def test_failures_map_to_rows_with_detailed_reasons() -> None:
    frame = _three_entries()
    result = validate_frame(frame, "papers")
    assert [r.outcome for r in result.results].count("error") == 0
    failures = result.critical_failures()
    assert sorted(failures) == [1]
    assert failure_reasons(frame, 1, failures[1]) == [
        "the abstract is shorter than 80 or longer than 5,000 characters: 9",
        "the abstract has fewer than 15 or more than 1,000 words: 2",
    ]
    warned = [r for r in result.results if r.outcome == "failed" and r.severity == "warning"]
    assert [(r.expectation, r.failed_rows) for r in warned] == [
        ("expect_column_values_to_be_in_set(unbalanced_markup)", (2,))
    ]
    per_file = result.for_rows([2])
    assert [r.unexpected_count for r in per_file.results if r.outcome == "failed"] == [1]


def test_frames_are_validated_without_the_batch_fingerprint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Great Expectations' md5 fingerprint of each frame (a batch marker nothing reads) is
    not computed; the results are those of the test above."""
    validate_frame(_three_entries(), "papers")  # the context exists, as in a run
    from great_expectations.execution_engine import pandas_execution_engine

    def refused(df: object) -> str:
        raise AssertionError("the frame was fingerprinted")

    monkeypatch.setattr(pandas_execution_engine, "hash_pandas_dataframe", refused)
    result = validate_frame(_three_entries(), "papers")
    assert [r.outcome for r in result.results].count("error") == 0
    assert sorted(result.critical_failures()) == [1]


def test_broken_expectation_is_an_error_not_a_data_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = tmp_path / "expectations"
    suites.mkdir()
    (suites / "broken.json").write_text(
        json.dumps(
            {
                "name": "broken",
                "expectations": [
                    {
                        "type": "expect_column_values_to_not_be_null",
                        "kwargs": {"column": "no_such_column"},
                        "meta": {"severity": "critical", "reason": "never judged"},
                    },
                    {
                        "type": "expect_column_values_to_not_be_null",
                        "kwargs": {"column": "abstract"},
                        "meta": {"severity": "critical", "reason": "empty"},
                    },
                ],
            }
        )
    )
    monkeypatch.setattr(validate, "resource_dir", lambda name: tmp_path / name)
    validate.load_suite.cache_clear()
    try:
        result = validate_frame(pl.DataFrame({"abstract": ["a", None]}), "broken")
    finally:
        validate.load_suite.cache_clear()
    broken, real = result.results
    assert (broken.outcome, broken.failed_rows) == ("error", ())
    assert 'The column "no_such_column" in BatchData does not exist' in broken.details
    assert (real.outcome, real.failed_rows) == ("failed", (1,))
    assert sorted(result.critical_failures()) == [1]


def test_suite_without_severity_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "expectations").mkdir()
    (tmp_path / "expectations" / "bad.json").write_text(
        json.dumps(
            {
                "name": "bad",
                "expectations": [{"type": "expect_column_to_exist", "kwargs": {"column": "x"}}],
            }
        )
    )
    monkeypatch.setattr(validate, "resource_dir", lambda name: tmp_path / name)
    validate.load_suite.cache_clear()
    try:
        with pytest.raises(SuiteError, match=r"needs meta\.severity"):
            load_suite("bad")
    finally:
        validate.load_suite.cache_clear()


# The papers suite spells its patterns so that pandas matches them with pyarrow (RE2) over
# a whole column instead of Python's ``re`` row by row: ``\s`` written out as the 29
# characters Python's ``\s`` matches (RE2's ``\s`` is only ASCII ``[\t\n\f\r ]``), ``\u``
# escapes as ``\x`` ones, ``$`` as ``\Z``. These are the patterns they must equal.
_PYTHON_SPELLINGS = {
    "the entry is blank": r"^\s*$",
    "mojibake": "Ã[\\u0080-\\u00bf]|â€|Â[\\u00a0-\\u00bf]|Ã¢â‚¬",
    "HTML tags": r"</?\s*[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>",
}
_WHITESPACE = "".join(chr(c) for c in range(0x110000) if re.match(r"\s", chr(c)))
_TRICKY = _WHITESPACE + "aZ09<>/=\"'\n Ã¢â€Â‚¬\x80\xbf\xc0\xa0\x9f\u200b\ufeff\u00e9图😀"


def _regex_expectations() -> dict[str, str]:
    found = {}
    for spec in load_suite("papers")["expectations"]:
        if "regex" in spec["kwargs"]:
            (key,) = [k for k in _PYTHON_SPELLINGS if spec["meta"]["reason"].startswith(k)]
            found[key] = spec["kwargs"]["regex"]
    return found


def test_suite_patterns_run_on_pyarrow_not_row_by_row() -> None:
    import pandas as pd

    patterns = _regex_expectations()
    assert sorted(patterns) == sorted(_PYTHON_SPELLINGS)
    column = pl.DataFrame({"abstract": ["x"]}).to_pandas()["abstract"]
    assert str(column.dtype) == "str" or isinstance(column.dtype, pd.StringDtype)
    for key, pattern in patterns.items():
        assert not column.array._needs_python_regex(pattern), key
        assert column.array._needs_python_regex(_PYTHON_SPELLINGS[key]), key  # why respelled


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.text(alphabet=_TRICKY, max_size=12), min_size=1, max_size=40))
def test_suite_patterns_match_what_their_python_spellings_match(texts: list[str]) -> None:
    column = pl.DataFrame({"abstract": texts}).to_pandas()["abstract"]
    for key, pattern in _regex_expectations().items():
        expected = [re.search(_PYTHON_SPELLINGS[key], text) is not None for text in texts]
        assert [re.search(pattern, text) is not None for text in texts] == expected, key
        assert column.str.contains(pattern).tolist() == expected, key


def test_suite_patterns_on_edge_cases() -> None:
    texts = ["", "\n", " \u3000\x0b\x1c", "a\n", "word", "<b>", "< b >", "<b\x0bx>", "</i>",
             "<3", "a < b > c", "Ã\x80", "Ã\xc0", "Â\xa0", "â€™", "Ã¢â‚¬"]  # fmt: skip
    column = pl.DataFrame({"abstract": texts}).to_pandas()["abstract"]
    for key, pattern in _regex_expectations().items():
        expected = [re.search(_PYTHON_SPELLINGS[key], text) is not None for text in texts]
        assert column.str.contains(pattern).tolist() == expected, key
    blank = _regex_expectations()["the entry is blank"]
    assert column.str.contains(blank).tolist() == [True, True, True] + [False] * 13


def _listing_batches() -> list[tuple[str, pl.DataFrame]]:
    """``papers`` and ``listing_files`` frames of real and hostile listings: the seeds, the
    input-robustness cases, every format of tests/data/formats, and lookalikes."""
    from paperwatch.db.batches import files_frame
    from paperwatch.ingest.files import scan_folder
    from paperwatch.ingest.prepare import prepare_files
    from paperwatch.settings import load_settings

    settings = load_settings()
    root = Path(__file__).parent
    folders = [
        root.parent / "seeds",
        root / "data" / "input-robustness",
        root / "data" / "formats",
        root / "data" / "lookalikes",
    ]
    frames = []
    for folder in folders:
        files = sorted(scan_folder(folder, settings.formats).files, key=lambda f: f.rel)
        batch = prepare_files(files, settings.max_file_bytes)
        frames.append(("papers", batch.entries))
        frames.append(("listing_files", files_frame(batch.prepared, [2, 3], ())))
    return frames


def test_two_passes_give_what_one_complete_run_gives() -> None:
    """validate_frame runs the suite with BOOLEAN_ONLY and only what did not pass again with
    COMPLETE: every result (outcome, counts, failed rows, examples, order) equals one
    COMPLETE run's, on frames where many expectations fail and where all pass."""
    batches = [*_listing_batches(), ("papers", _three_entries())]
    failing = 0
    for suite_name, frame in batches:
        assert frame.height
        two_passes = validate_frame(frame, suite_name)
        assert two_passes == validate.validate_frame_in_one_run(frame, suite_name), suite_name
        failing += sum(r.outcome == "failed" for r in two_passes.results)
    passing = _three_entries().filter(pl.col("paper_id") == "p1")
    result = validate_frame(passing, "papers")
    assert {r.outcome for r in result.results} == {"passed"}
    assert result == validate.validate_frame_in_one_run(passing, "papers")
    assert failing >= 20  # the listings exercise many failing expectations, not one
