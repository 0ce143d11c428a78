"""A week's rows as the report reads them: dicts made only for the rows it shows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import polars as pl

#: Rows turned into dicts at a time when all of them are iterated.
_CHUNK = 10_000


class FrameRows(Sequence[dict[str, Any]]):
    """The rows of a Polars frame as a read-only sequence of dicts (column name → value,
    as :meth:`polars.DataFrame.to_dicts` gives them: lists for List columns, None for
    null). A row's dict is made when it is read: a report of a 100,000-paper week shows
    a few hundred rows, counts them all and writes them all to its CSV from the frame.
    """

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __len__(self) -> int:
        return self.frame.height

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.frame.height)
            if step == 1:
                return self.frame.slice(start, max(0, stop - start)).to_dicts()
            return [self[i] for i in range(start, stop, step)]
        if not -self.frame.height <= index < self.frame.height:
            raise IndexError(f"row {index} of {self.frame.height}")
        return self.frame.row(index, named=True)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for offset in range(0, self.frame.height, _CHUNK):
            yield from self.frame.slice(offset, _CHUNK).to_dicts()

    def __repr__(self) -> str:
        return f"FrameRows({self.frame.height} rows, columns {self.frame.columns})"


def column_values(rows: Sequence[dict[str, Any]], name: str) -> list[Any]:
    """The values of column ``name`` of ``rows``, in order: read from the frame for
    :class:`FrameRows` (no dict per row), else ``row[name]`` of each row.

    Raises:
        KeyError: a row has no ``name`` (polars' ``ColumnNotFoundError`` for a frame).
    """
    if isinstance(rows, FrameRows):
        return rows.frame.get_column(name).to_list()
    return [row[name] for row in rows]
