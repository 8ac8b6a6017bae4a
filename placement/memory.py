"""How the process hands freed memory back: large arrays are mapped on their own, not carved from the heap.

glibc's allocator serves a block below its mmap threshold from the heap, and raises that threshold (up to 32 MB)
each time a mapped block is freed. A solve allocates and frees many arrays of one figure per pair (24 MB each on
2,000 sites): once the threshold has risen they come from the heap, whose freed space is kept, not returned.

Measured on ``world_2k`` (``cli.py solve``, ``/usr/bin/time -v``; the same plan every time): glibc's default, 1.84-1.87
GB peak, 4.5 s of system time; threshold fixed at 1 MiB, 1.48 GB but 17 s of system time (HiGHS's own 1-4 MB
vectors are then mapped and faulted in afresh each time); at 4 MiB, 1.50 GB and 11-13 s; at 8 MiB, 1.58 GB.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter for the mmap threshold (``malloc.h``)."""

MMAP_THRESHOLD_BYTES = 4 << 20
"""Blocks of this size and more are mapped on their own and unmapped when freed (4 MiB: above HiGHS's usual vectors,
below the per-pair arrays). [bytes]"""


def map_large_blocks(threshold_bytes: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold so that freed large arrays go back to the system at once.

    Parameters
    ----------
    threshold_bytes : int, optional
        Blocks at least this large are mapped on their own. [bytes]

    Returns
    -------
    bool
        Whether the allocator took the setting (False off Linux or without glibc: nothing changes).
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, int(threshold_bytes)))
