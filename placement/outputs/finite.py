"""Only finite numbers leave the program: a value that is not defined is written as null / empty.

A partial plan has figures that do not exist (the $/M of an open site that serves nothing, the
slack of a pair that carries nothing). They are ``NaN`` or ``inf`` in the tables; GeoJSON (RFC
8259 JSON has no NaN) gets ``null`` and CSV an empty cell, never the text ``nan`` or ``inf``.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import pandas as pd

__all__ = ["null_nonfinite"]

Frame = TypeVar("Frame", bound=pd.DataFrame)


def null_nonfinite(frame: Frame) -> Frame:
    """A copy whose float columns hold a missing value (``pd.NA``) wherever they were not finite.

    Columns with a non-finite value become pandas' nullable ``Float64``: GDAL writes their
    missing values as JSON ``null`` and pandas writes them as empty CSV cells.

    Parameters
    ----------
    frame : pandas.DataFrame
        A table to write (a GeoDataFrame stays one).

    Returns
    -------
    pandas.DataFrame
        The same columns; float columns without a non-finite value are unchanged.
    """
    clean = frame.copy()
    for column in clean.columns:
        if column == "geometry" or not pd.api.types.is_float_dtype(clean[column]):
            continue
        values = clean[column].to_numpy(dtype=float, na_value=np.nan)
        finite = np.isfinite(values)
        if finite.all():
            continue
        column_values = pd.array(np.where(finite, values, 0.0), dtype="Float64")
        column_values[~finite] = pd.NA
        clean[column] = column_values
    return clean
