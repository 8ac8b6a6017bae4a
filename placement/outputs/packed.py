"""A plan's results folder packed as one archive: how a plan solved on a Dask worker travels back to the client."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

from placement.outputs.writer import write_results
from placement.plan.record import Plan


def pack_results(plan: Plan, *, maps: bool) -> bytes:
    """A plan's results folder as a gzipped tar (a point solved on a Dask worker travels back as this)."""
    with tempfile.TemporaryDirectory(prefix="placement-point-") as tmp:
        folder = Path(tmp) / "point"
        write_results(plan, folder, maps=maps)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for path in sorted(folder.iterdir()):
                archive.add(path, arcname=path.name)
        return buffer.getvalue()


def unpack_results(packed: bytes, folder: Path) -> Path:
    """A :func:`pack_results` archive written out as ``folder`` (plain files only)."""
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as archive:
        archive.extractall(folder, filter="data")
    return folder
