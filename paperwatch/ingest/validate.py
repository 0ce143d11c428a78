"""Data-quality checks with Great Expectations, from suites stored as JSON in ``expectations/``.

A suite file ``expectations/<table>.json`` is a Great Expectations 1.x
``ExpectationSuite`` (``name``, ``expectations``). Each expectation's ``meta``
carries paperwatch's policy, so that policy lives in the suite file, not in code:

- ``severity``: ``critical`` (the failing rows are not loaded: they are
  quarantined) or ``warning`` (loaded, and reported);
- ``reason``: the plain-language reason written to ``quarantine`` and the report;
- ``detail_column`` (optional): a column of the batch whose value, for a failing
  row, is appended to the reason ("not UTF-8 text: invalid byte at 120, line 3").

Only column-map expectations and compound uniqueness are used, so every failure
maps to rows (``unexpected_index_list``) and a batch spanning several files can be
validated at once and split per file afterwards. A batch is validated in two passes
(:meth:`_GxRunner.run`): the whole suite with Great Expectations' ``BOOLEAN_ONLY`` result
format, then only what did not pass with ``COMPLETE`` (its failing rows), which gives what
one ``COMPLETE`` run gives (docs/design.md, "Great Expectations in two passes").

A broken expectation (e.g. a column that does not exist) does not raise inside
Great Expectations: it returns ``success=False`` with ``raised_exception``. Such a
result has outcome ``error``: it is recorded and reported as a fault of the check,
and quarantines nothing (the data was not judged).

``great_expectations`` is imported lazily, on the first validation.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

import polars as pl

from paperwatch.resources import resource_dir

Severity = Literal["critical", "warning"]
Outcome = Literal["passed", "failed", "error"]

_MAX_EXAMPLES = 5
_GX_LOCK = threading.Lock()


class SuiteError(ValueError):
    """A suite file is missing, not valid JSON, or lacks severity/reason metadata."""


@dataclass(frozen=True, slots=True)
class ExpectationResult:
    """The result of one expectation over one batch.

    ``failed_rows`` are 0-based row indices of the validated frame.
    """

    suite: str
    expectation: str
    severity: Severity
    reason: str
    outcome: Outcome
    element_count: int
    unexpected_count: int
    unexpected_examples: tuple[str, ...]
    failed_rows: tuple[int, ...]
    details: str = ""
    detail_column: str | None = None
    columns: tuple[str, ...] = ()
    #: ``meta.exclusive``: when this fails for a row, its reason is the row's only reason
    #: (a record with no abstract is "no abstract", not also "empty" and "too short").
    exclusive: bool = False

    def restricted(
        self, element_count: int, failed: tuple[int, ...], examples: tuple[str, ...]
    ) -> ExpectationResult:
        """This result over a part of the rows: ``element_count`` rows, of which
        ``failed`` (indices within the part) failed, with ``examples``. An ``error``
        stays an error; otherwise the part failed exactly when some row of it did."""
        outcome: Outcome = (
            self.outcome if self.outcome == "error" else ("failed" if failed else "passed")
        )
        return replace(
            self,
            outcome=outcome,
            element_count=element_count,
            unexpected_count=len(failed),
            unexpected_examples=examples,
            failed_rows=failed,
        )


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """All expectation results of one suite over one batch."""

    suite: str
    results: tuple[ExpectationResult, ...] = field(default_factory=tuple)

    def critical_failures(self) -> dict[int, list[ExpectationResult]]:
        """Row index → the critical expectations that row failed."""
        rows: dict[int, list[ExpectationResult]] = {}
        for result in self.results:
            if result.outcome == "failed" and result.severity == "critical":
                for row in result.failed_rows:
                    rows.setdefault(row, []).append(result)
        return rows

    def for_rows(self, rows: list[int], frame: pl.DataFrame | None = None) -> SuiteResult:
        """The same results restricted to ``rows`` (e.g. the rows of one file); indices renumbered.

        With ``frame`` (the validated batch), the unexpected examples are those of
        these rows only; without it, the batch's examples are kept.
        """
        position = {row: i for i, row in enumerate(rows)}
        restricted = []
        for r in self.results:
            original = [x for x in r.failed_rows if x in position]
            failed = tuple(position[x] for x in original)
            examples = r.unexpected_examples if failed else ()
            if frame is not None and failed:
                examples = unexpected_examples(frame, r.columns, original)
            restricted.append(r.restricted(len(rows), failed, examples))
        return SuiteResult(self.suite, tuple(restricted))


def unexpected_examples(
    frame: pl.DataFrame, columns: tuple[str, ...], rows: list[int]
) -> tuple[str, ...]:
    """Up to five failing values (``null`` for a missing one), a dict of values for several columns."""
    examples = []
    for row in rows[:_MAX_EXAMPLES]:
        values = {c: frame[c][row] for c in columns if c in frame.columns}
        value: Any = values if len(values) > 1 else next(iter(values.values()), None)
        examples.append("null" if value is None else _example(value))
    return tuple(examples)


def failure_reasons(frame: pl.DataFrame, row: int, failed: list[ExpectationResult]) -> list[str]:
    """The plain-language reasons of ``failed`` for one row, with the row's detail appended.

    When an expectation marked ``exclusive`` in its suite is among ``failed``, only the
    exclusive ones give reasons (the others follow from it)."""
    exclusive = [result for result in failed if result.exclusive]
    if exclusive:
        failed = exclusive
    reasons = []
    for result in failed:
        reason = result.reason
        if result.detail_column and result.detail_column in frame.columns:
            value = frame[result.detail_column][row]
            if value is not None and value != "":
                reason = f"{reason}: {value}"
        reasons.append(reason)
    return reasons


@cache
def load_suite(name: str) -> dict[str, Any]:
    """Read ``expectations/<name>.json`` and check every expectation has severity and reason.

    Raises:
        SuiteError: missing file, invalid JSON, or an expectation without a valid ``meta.severity``.
    """
    path = resource_dir("expectations") / f"{name}.json"
    try:
        suite: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SuiteError(f"expectation suite {path} does not exist") from exc
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    for i, expectation in enumerate(suite.get("expectations", [])):
        meta = expectation.get("meta") or {}
        if meta.get("severity") not in ("critical", "warning"):
            raise SuiteError(
                f"{path}: expectation {i} ({expectation.get('type')}) needs meta.severity"
            )
        if not meta.get("reason"):
            raise SuiteError(
                f"{path}: expectation {i} ({expectation.get('type')}) needs meta.reason"
            )
    return suite


def expectation_label(expectation_type: str, kwargs: dict[str, Any]) -> str:
    """A readable id such as ``expect_column_values_to_not_be_null(abstract)``."""
    target = kwargs.get("column") or ",".join(kwargs.get("column_list", []))
    return f"{expectation_type}({target})" if target else expectation_type


def _quiet_gx_logs() -> None:
    """Great Expectations logs every temporary folder it makes at INFO: keep warnings only."""
    for name in ("great_expectations", "great_expectations.data_context.types.base"):
        logging.getLogger(name).setLevel(logging.WARNING)


class _GxRunner:
    """One ephemeral Great Expectations context per process, with one validation per suite."""

    def __init__(self) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.execution_engine import pandas_execution_engine

        _quiet_gx_logs()
        # Frames of HASH_THRESHOLD bytes or more are not fingerprinted (a batch marker
        # paperwatch never reads); the results are the same (docs/design.md,
        # "Great Expectations in two passes").
        pandas_execution_engine.HASH_THRESHOLD = 0
        self._gx = gx
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.datasource = self.context.data_sources.add_pandas("paperwatch")
        self.validations: dict[str, Any] = {}

    def validation(self, suite_name: str) -> Any:
        if suite_name not in self.validations:
            gx = self._gx
            asset = self.datasource.add_dataframe_asset(suite_name)
            batch = asset.add_batch_definition_whole_dataframe(f"{suite_name}-batch")
            suite = self.context.suites.add_or_update(gx.ExpectationSuite(**load_suite(suite_name)))
            self.validations[suite_name] = self.context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=f"{suite_name}-validation", data=batch, suite=suite)
            )
        return self.validations[suite_name]

    def run_once(self, suite_name: str, frame: Any, result_format: str) -> list[Any]:
        """One Great Expectations run of the whole suite over the pandas ``frame`` with
        ``result_format`` (``BOOLEAN_ONLY`` or ``COMPLETE``): its results, in its order."""
        run = self.validation(suite_name).run(
            batch_parameters={"dataframe": frame}, result_format={"result_format": result_format}
        )
        return list(run.results)

    def run(self, suite_name: str, frame: Any) -> list[Any]:
        """The suite's ``ExpectationValidationResult`` objects over the pandas ``frame``, in
        suite order, as one ``COMPLETE`` run gives them, in two passes:

        1. the whole suite with result format ``BOOLEAN_ONLY``: Great Expectations then
           computes each expectation's unexpected count only, not its unexpected values,
           index list and index query (each a metric of its own that filters the frame
           again);
        2. the expectations that failed or raised, again with ``COMPLETE``, one at a time
           (:meth:`great_expectations.validator.v1_validator.Validator.validate_expectation`).

        Why, and why the results are the same: docs/design.md, "Great Expectations in two
        passes" (tests/test_validate.py compares the two forms).
        """
        from great_expectations.validator.v1_validator import Validator

        validation = self.validation(suite_name)
        expectations = list(validation.suite.expectations)
        position = {expectation.id: i for i, expectation in enumerate(expectations)}
        if None in position or len(position) < len(expectations):  # results cannot be placed
            return self.run_once(suite_name, frame, "COMPLETE")
        results: list[Any] = [None] * len(expectations)
        for result in self.run_once(suite_name, frame, "BOOLEAN_ONLY"):
            results[position[result.expectation_config.id]] = result
        again = [
            i
            for i, result in enumerate(results)
            if result is None or not result.success or _raised(result.exception_info)
        ]
        if again:
            validator = Validator(
                batch_definition=validation.batch_definition,
                batch_parameters={"dataframe": frame},
                result_format={"result_format": "COMPLETE"},
            )
            for i in again:
                results[i] = validator.validate_expectation(expectations[i])
        return results


@cache
def _runner() -> _GxRunner:
    return _GxRunner()


def _raised(exception_info: Any) -> str | None:
    """The message of a broken expectation, or None when the check ran."""
    if not isinstance(exception_info, dict):
        return None
    if exception_info.get("raised_exception"):
        return str(exception_info.get("exception_message") or "expectation raised")
    for value in exception_info.values():
        if isinstance(value, dict) and value.get("raised_exception"):
            return str(value.get("exception_message") or "expectation raised")
    return None


def _example(value: Any) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=str)
        if isinstance(value, dict)
        else str(value)
    )
    return text if len(text) <= 200 else text[:199] + "…"


def validate_frame(frame: pl.DataFrame, suite_name: str) -> SuiteResult:
    """Validate a Polars frame against ``expectations/<suite_name>.json`` with Great Expectations.

    Args:
        frame: one row per record; the columns the suite names. Row order defines
            the indices of ``ExpectationResult.failed_rows``.
        suite_name: the suite (and table) name, e.g. ``papers``.

    Returns:
        A :class:`SuiteResult` with one :class:`ExpectationResult` per expectation,
        in suite order. An empty frame passes every expectation without running GX.

    Raises:
        SuiteError: the suite file is invalid.
    """
    suite = load_suite(suite_name)
    specs = suite["expectations"]
    if frame.height == 0:
        return SuiteResult(
            suite_name,
            tuple(
                ExpectationResult(
                    suite=suite_name,
                    expectation=expectation_label(s["type"], s.get("kwargs", {})),
                    severity=s["meta"]["severity"],
                    reason=s["meta"]["reason"],
                    outcome="passed",
                    element_count=0,
                    unexpected_count=0,
                    unexpected_examples=(),
                    failed_rows=(),
                    detail_column=s["meta"].get("detail_column"),
                    exclusive=bool(s["meta"].get("exclusive", False)),
                )
                for s in specs
            ),
        )
    pandas_frame = suite_columns(frame, suite_name).to_pandas()
    with _GX_LOCK:
        run = _runner().run(suite_name, pandas_frame)
    return suite_result(suite_name, run, frame)


def validate_frame_in_one_run(frame: pl.DataFrame, suite_name: str) -> SuiteResult:
    """:func:`validate_frame` as one Great Expectations run of the whole suite with result
    format ``COMPLETE``: the plain form the two passes of :func:`validate_frame` must
    equal (tests/test_validate.py) and are timed against (bench/bench_validation.py).
    Same arguments, result and errors, for a frame with rows."""
    pandas_frame = suite_columns(frame, suite_name).to_pandas()
    with _GX_LOCK:
        run = _runner().run_once(suite_name, pandas_frame, "COMPLETE")
    return suite_result(suite_name, run, frame)


def suite_columns(frame: pl.DataFrame, suite_name: str) -> pl.DataFrame:
    """The columns of ``frame`` that the suite's expectations read, in ``frame``'s order:
    only they travel to pandas (list and long text columns are costly to convert)."""
    specs = load_suite(suite_name)["expectations"]
    used = {s.get("kwargs", {}).get("column") for s in specs}
    used |= {c for s in specs for c in s.get("kwargs", {}).get("column_list", [])}
    return frame.select([c for c in frame.columns if c in used])


def suite_result(suite_name: str, run: list[Any], frame: pl.DataFrame) -> SuiteResult:
    """Great Expectations' results of one run of ``suite_name`` over ``frame`` (one
    ``ExpectationValidationResult`` per expectation, result format ``COMPLETE`` for those
    that did not pass) as a :class:`SuiteResult`, in suite order."""
    specs = load_suite(suite_name)["expectations"]
    order = {expectation_label(s["type"], s.get("kwargs", {})): i for i, s in enumerate(specs)}
    results: list[ExpectationResult] = []
    for r in run:
        config = r.expectation_config
        meta = dict(config.meta or {})
        kwargs = {k: v for k, v in dict(config.kwargs).items() if k != "batch_id"}
        broken = _raised(r.exception_info)
        payload = r.result or {}
        failed = tuple(int(i) for i in payload.get("unexpected_index_list") or [])
        columns = tuple([kwargs["column"]] if "column" in kwargs else kwargs.get("column_list", []))
        outcome: Outcome = "error" if broken else ("passed" if r.success else "failed")
        results.append(
            ExpectationResult(
                suite=suite_name,
                expectation=expectation_label(config.type, kwargs),
                severity=meta.get("severity", "critical"),
                reason=str(meta.get("reason", config.type)),
                outcome=outcome,
                element_count=int(payload.get("element_count") or frame.height),
                unexpected_count=int(payload.get("unexpected_count") or 0),
                unexpected_examples=()
                if broken
                else unexpected_examples(frame, columns, list(failed)),
                failed_rows=() if broken else failed,
                details=broken or "",
                detail_column=meta.get("detail_column"),
                columns=columns,
                exclusive=bool(meta.get("exclusive", False)),
            )
        )
    results.sort(key=lambda result: order.get(result.expectation, len(order)))
    return SuiteResult(suite_name, tuple(results))


def build_data_docs(batches: dict[str, pl.DataFrame], target: Path) -> Path:
    """Validate each ``{suite name: frame}`` and build Great Expectations Data Docs in ``target``.

    Uses a throw-away file-backed Great Expectations project (a temporary
    folder) whose only Data Docs site writes to ``target``. Data Docs load CSS
    and JavaScript from CDNs: they are for reading in a browser, not for mail.

    Returns:
        The path of the site's ``index.html``.

    Raises:
        SuiteError: a suite file is invalid.
    """
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    _quiet_gx_logs()
    target = target.resolve()
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="paperwatch-gx-") as root:
        context = gx.get_context(mode="file", project_root_dir=root)
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        context.add_data_docs_site(
            site_name="paperwatch",
            site_config={
                "class_name": "SiteBuilder",
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": str(target),
                },
            },
        )
        datasource = context.data_sources.add_pandas("paperwatch")
        for suite_name, frame in batches.items():
            batch = datasource.add_dataframe_asset(suite_name).add_batch_definition_whole_dataframe(
                "all"
            )
            suite = context.suites.add(gx.ExpectationSuite(**load_suite(suite_name)))
            validation = context.validation_definitions.add(
                gx.ValidationDefinition(name=suite_name, data=batch, suite=suite)
            )
            checkpoint = context.checkpoints.add(
                gx.Checkpoint(
                    name=f"{suite_name}-docs",
                    validation_definitions=[validation],
                    actions=[
                        gx.checkpoint.UpdateDataDocsAction(name="docs", site_names=["paperwatch"])
                    ],
                )
            )
            checkpoint.run(batch_parameters={"dataframe": frame.to_pandas()})
        context.build_data_docs(site_names=["paperwatch"])
    return target / "index.html"
