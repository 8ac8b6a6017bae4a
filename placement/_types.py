"""The array types the package's signatures use, named once."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["BoolArray", "FloatArray", "IntArray"]

FloatArray = NDArray[np.float64]
"""An array of floats (the unit is in the name of what holds it)."""
IntArray = NDArray[np.int64]
"""An array of 64-bit integers (indices, counts)."""
OptionCodes = NDArray[np.int8] | NDArray[np.int16]
"""Each pair's option (an index into the flattened profile sets): a byte where they fit in one."""
BoolArray = NDArray[np.bool_]
"""An array of flags (masks)."""
