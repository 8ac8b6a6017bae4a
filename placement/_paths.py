"""Where a command will write: the nearest part of a destination path that already exists."""

from __future__ import annotations

from pathlib import Path


def nearest_existing(path: Path) -> Path:
    """``path`` itself or its closest ancestor that exists (a file there blocks every folder below it).

    Parameters
    ----------
    path : Path
        A destination, which may not exist yet.

    Returns
    -------
    Path
        The part of it on disk.
    """
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
