"""Progress lines: the sink every long step reports to, a silent one, and the commands' printer.

A step takes ``progress: Progress = quiet`` and calls it with one line per stage; the command line
passes a :class:`StderrProgress`, notebooks and tests leave the default.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[str], None]
"""Receives one line per step."""


def quiet(_: str) -> None:
    """Progress sink that prints nothing."""
    return None


class StderrProgress:
    """Prints each line to standard error as it comes, after the seconds since it was made (unless untimed).

    Parameters
    ----------
    show : bool, optional
        Print at all (``--quiet`` turns it off).
    timed : bool, optional
        Start each line with the seconds since this printer was made (``[   1.2 s] ...``).
    """

    def __init__(self, *, show: bool = True, timed: bool = True) -> None:
        self.show = show
        self.timed = timed
        self.start = time.perf_counter()

    def __call__(self, line: str) -> None:
        """Print ``line``."""
        if not self.show:
            return
        print(f"[{time.perf_counter() - self.start:6.1f} s] {line}" if self.timed else line, file=sys.stderr, flush=True)
