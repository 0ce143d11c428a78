"""The e-mail size budget: how many rows each list of the report shows."""

from __future__ import annotations

from collections.abc import Callable

#: Rows listed per list (new papers, repeated papers) before "and N more". The rest are
#: in the attached CSV and in the database.
MAX_LISTED = 100

#: Largest HTML (UTF-8 bytes, after CSS inlining) :func:`render_report` produces when it
#: can by listing fewer rows. 10 % under :data:`~paperwatch.report.email_safety.MAX_HTML_BYTES`
#: (Gmail clips at about 102 KB), a margin for the CRLF line ends the part travels with.
HTML_BUDGET_BYTES = 90_000

#: Rows each list shows whatever their size (when it has that many): titles and first
#: sentences are cut for display, so these always fit the mail; the budget only ever
#: trims the rows after them.
MIN_LISTED = 10


def largest_fitting(
    size_of: Callable[[int], int], high: int, budget: int, *, high_size: int | None = None
) -> int:
    """The largest row count in ``[0, high)`` whose size is at most ``budget``.

    Interpolation search (Perl, Itai & Avni 1978, "Interpolation search—a log log N
    search", CACM 21(7):550-553) with a neighbour probe and a bisection when a step does
    not halve the bracket (docs/design.md, "Where the report and the mail live"). For any non-decreasing
    ``size_of`` it gives the same answer as a binary search.

    Args:
        size_of: rows → size (bytes; any int unit), non-decreasing in rows.
        high: rows known not to fit (> 0): the answer is below it.
        budget: the size allowed.
        high_size: ``size_of(high)`` when already measured (> ``budget``); else it is
            measured.

    Returns:
        The largest ``rows`` in ``[0, high)`` with ``size_of(rows) <= budget``; 0 when even
        0 rows do not fit (check ``size_of(0)`` then: 0 is returned either way).

    Raises:
        ValueError: ``high`` < 1, or ``size_of(high)`` fits the budget.
    """
    if high < 1:
        raise ValueError(f"high must be at least 1, got {high}")
    top = size_of(high) if high_size is None else high_size
    if top <= budget:
        raise ValueError(f"{high} rows fit the budget ({top} <= {budget}): nothing to search")
    low, low_size = 0, size_of(0)
    if low_size > budget:
        return 0
    # Invariant: size_of(low) <= budget < size_of(high).
    bisect = False
    while high - low > 1:
        width = high - low
        if bisect:  # the last guess did not halve the bracket: halve it
            guess = (low + high) // 2
        else:
            guess = low + (budget - low_size) * width // max(top - low_size, 1)
            guess = min(max(guess, low + 1), high - 1)
        size = size_of(guess)
        if size <= budget:
            low, low_size = guess, size
            # The line's guess is often the answer or one short of it: measure the next.
            if not bisect and guess + 1 < high:
                after = size_of(guess + 1)
                if after > budget:
                    return guess
                low, low_size = guess + 1, after
        else:
            high, top = guess, size
            if not bisect and guess - 1 > low:
                before = size_of(guess - 1)
                if before <= budget:
                    return guess - 1
                high, top = guess - 1, before
        bisect = high - low > width // 2
    return low


def fit_rows(
    size_of: Callable[[int], int], rows: int, budget: int, *, min_rows: int = MIN_LISTED
) -> int:
    """The rows each list shows: ``rows`` when ``size_of(rows) <= budget`` (or ``rows`` is
    0), else :func:`largest_fitting` below it, but never fewer than ``min(min_rows, rows)``.

    ``size_of`` is called with ``rows`` first, then with fewer rows; it has been called
    with the returned count.
    """
    full = size_of(rows)
    if full <= budget or rows == 0:
        return rows
    fitting = largest_fitting(size_of, rows, budget, high_size=full)
    floor = min(min_rows, rows)
    if fitting < floor:
        size_of(floor)
        return floor
    return fitting
