"""A (commodities x sites) yes/no table kept as bits: which pairs are inside the objective, which are allowed.

The plan reads these tables a row, a column or a handful of pairs at a time, and counts over them; it never needs
them as a whole. As bytes they cost one byte a pair (204 MB each on 2,000 sites and 34,000 populations of three
classes); as bits, an eighth of that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from placement._types import BoolArray, IntArray

ROWS_CHUNK = 4096
"""Rows unpacked at a time when counting (a (4096 x sites) byte table: 8 MB on 2,000 sites)."""

_BIT_COUNT = np.array([bin(v).count("1") for v in range(256)], dtype=np.int64)
"""Set bits in each byte value."""


@dataclass(frozen=True)
class PairMask:
    """A boolean ``(rows, columns)`` table stored as bits, eight columns a byte (little bit order).

    Parameters
    ----------
    bits : numpy.ndarray of uint8
        ``(rows, ceil(columns / 8))`` packed rows; the bits past the last column are 0.
    n_columns : int
        Number of columns.
    """

    bits: NDArray[np.uint8]
    n_columns: int

    @classmethod
    def of(cls, table: ArrayLike) -> PairMask:
        """Pack a boolean ``(rows, columns)`` table."""
        dense = np.asarray(table, dtype=bool)
        if dense.ndim != 2:
            raise ValueError(f"a pair mask is a 2-D table, not {dense.ndim}-D")
        return cls(np.packbits(dense, axis=1, bitorder="little"), dense.shape[1])

    @classmethod
    def empty(cls, n_rows: int, n_columns: int) -> PairMask:
        """A table of ``False``."""
        return cls(np.zeros((n_rows, (n_columns + 7) // 8), dtype=np.uint8), n_columns)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``."""
        return (len(self.bits), self.n_columns)

    @property
    def size(self) -> int:
        """Number of cells."""
        return len(self.bits) * self.n_columns

    def rows(self, index: IntArray | slice) -> BoolArray:
        """``(k, columns)`` the rows ``index`` (an int array or a slice of rows), unpacked."""
        packed = np.asarray(self.bits[index], dtype=np.uint8).reshape(-1, self.bits.shape[1])
        return np.asarray(np.unpackbits(packed, axis=1, count=self.n_columns, bitorder="little"), dtype=bool)

    def row(self, i: int) -> BoolArray:
        """``(columns,)`` row ``i``, unpacked."""
        return np.unpackbits(self.bits[i], count=self.n_columns, bitorder="little").astype(bool)

    def column(self, j: int) -> BoolArray:
        """``(rows,)`` column ``j``."""
        return np.asarray((self.bits[:, j >> 3] >> (j & 7)) & 1, dtype=bool)

    def at(self, i: ArrayLike, j: ArrayLike) -> BoolArray:
        """The cells ``(i[k], j[k])``, element-wise (broadcast like numpy indices)."""
        i_arr, j_arr = np.broadcast_arrays(np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64))
        return np.asarray((self.bits[i_arr, j_arr >> 3] >> (j_arr & 7)) & 1, dtype=bool)

    def count_by_row(self) -> IntArray:
        """``(rows,)`` cells set in each row."""
        return np.asarray(_BIT_COUNT[self.bits].sum(axis=1), dtype=np.int64)

    def any_by_row(self) -> BoolArray:
        """``(rows,)`` rows with some cell set."""
        return np.asarray(self.bits.any(axis=1), dtype=bool)

    def any_by_column(self) -> BoolArray:
        """``(columns,)`` columns with some cell set."""
        if len(self.bits) == 0:
            return np.zeros(self.n_columns, dtype=bool)
        union = np.bitwise_or.reduce(self.bits, axis=0)
        return np.unpackbits(union, count=self.n_columns, bitorder="little").astype(bool)

    def count(self, rows: BoolArray | None = None) -> int:
        """Cells set, over every row or the rows ``rows`` marks."""
        counts = self.count_by_row()
        return int(counts.sum() if rows is None else counts[np.asarray(rows, dtype=bool)].sum())

    def and_(self, other: PairMask) -> PairMask:
        """Cells set both here and in ``other`` (of the same shape)."""
        self._same_shape(other)
        return PairMask(self.bits & other.bits, self.n_columns)

    def and_not(self, other: PairMask) -> PairMask:
        """Cells set here and not in ``other`` (of the same shape)."""
        self._same_shape(other)
        return PairMask(self.bits & ~other.bits, self.n_columns)

    def and_columns(self, columns: ArrayLike) -> PairMask:
        """Cells set here in the columns ``columns`` (a ``(columns,)`` boolean) marks."""
        keep = np.packbits(np.asarray(columns, dtype=bool), bitorder="little")
        return PairMask(self.bits & keep[None, :], self.n_columns)

    def and_row_groups(self, group: ArrayLike, columns: ArrayLike) -> PairMask:
        """Cells set here in the columns their row's group marks: row ``i`` keeps ``columns[group[i]]``.

        Parameters
        ----------
        group : array_like of int
            ``(rows,)`` each row's group.
        columns : array_like of bool
            ``(groups, columns)`` the columns each group keeps.
        """
        keep = np.packbits(np.asarray(columns, dtype=bool), axis=1, bitorder="little")
        return PairMask(self.bits & keep[np.asarray(group, dtype=np.int64)], self.n_columns)

    def nonzero(self) -> tuple[IntArray, IntArray]:
        """``(row, column)`` of every set cell, row-major (as ``numpy.nonzero`` of the table)."""
        out_rows, out_cols = [], []
        for first in range(0, len(self.bits), ROWS_CHUNK):
            r, c = np.nonzero(self.rows(slice(first, first + ROWS_CHUNK)))
            out_rows.append(r.astype(np.int64) + first)
            out_cols.append(c.astype(np.int64))
        if not out_rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(out_rows), np.concatenate(out_cols)

    def dense(self) -> BoolArray:
        """The whole table as bytes (for small tables and tests)."""
        return self.rows(slice(None))

    def _same_shape(self, other: PairMask) -> None:
        if self.shape != other.shape:
            raise ValueError(f"pair masks of different shapes: {self.shape} and {other.shape}")
