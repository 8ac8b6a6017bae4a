"""The one JSON encoder for every JSON file and ``--json`` print the package writes.

JSON has no NaN or infinity: a figure that is not finite (a cost per token with nothing served,
a gap the solver did not report) is written as ``null``. Numpy scalars and arrays become plain
numbers and lists, tuples become lists. Anything else JSON cannot hold is an error, not a string.

A single figure goes to and from its JSON form through :func:`finite_or_none` (written) and
:func:`optional_float` and :func:`optional_dict` (read back, where a figure may be null or absent).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["dumps", "finite_or_none", "optional_dict", "optional_float", "plain"]


def plain(value: Any) -> Any:
    """A copy of ``value`` that :func:`json.dumps` accepts with ``allow_nan=False``.

    Parameters
    ----------
    value : Any
        Nested dicts, lists, tuples, numpy arrays and scalars, strings, numbers, None.

    Returns
    -------
    Any
        The same structure with non-finite floats as None, numpy values as Python ones and
        tuples and arrays as lists.
    """
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def dumps(value: Any, *, indent: int | None = 2, compact: bool = False, ensure_ascii: bool = True) -> str:
    """JSON text of ``value``, non-finite numbers as ``null``.

    Parameters
    ----------
    value : Any
        What to encode (see :func:`plain`).
    indent : int or None, optional
        Indentation; ignored when ``compact``.
    compact : bool, optional
        No whitespace at all (for data embedded in a page).
    ensure_ascii : bool, optional
        Escape non-ASCII characters.

    Returns
    -------
    str
        JSON text, without a trailing newline.
    """
    if compact:
        return json.dumps(plain(value), separators=(",", ":"), allow_nan=False, ensure_ascii=ensure_ascii)
    return json.dumps(plain(value), indent=indent, allow_nan=False, ensure_ascii=ensure_ascii)


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None when it is missing or not finite (JSON has no NaN)."""
    return None if value is None or not math.isfinite(value) else float(value)


def optional_dict(value: Any) -> dict[str, Any] | None:
    """A JSON object read back as a dict, or None when it is null, absent or not an object."""
    return dict(value) if isinstance(value, Mapping) else None


def optional_float(value: Any) -> float | None:
    """A JSON number read back as a float, or None when it is null or absent."""
    return None if value is None else float(value)
