"""A content-addressed cache of the expensive intermediate products a scenario's build repeats from run to run.

A what-if (the same scenario with one price or one SLO changed) rebuilds everything from scratch unless what did not
change is kept: the population clusters and the class profiles (the serving physics' goodput search) are each stored
under a digest of everything that determines them, and read back when a later run asks with the same digest.

A digest covers:

- the inputs the caller names (scenario sections, classes, the scenario file's path for its messages), written as
  canonical JSON (:func:`canonical`): pydantic models by their fields, arrays and tables by their bytes;
- the contents of every file among them (any string that names an existing file, relative to the scenario's
  folder or absolute): a planner's measurements or cities file edited in place is a different input;
- the contents of the package's code and of its bundled data (:func:`build_fingerprint`), so a new version, or an
  edited catalog of accelerators, never reads an older answer.

Entries live in the user's cache folder (``platformdirs.user_cache_dir("placement")``, or ``PLACEMENT_CACHE_DIR``),
one pickle per entry under a folder per kind, written to a temporary file and renamed (a reader never sees half an
entry; an unreadable entry is removed and recomputed). ``PLACEMENT_CACHE=off`` or ``--no-cache`` turns it off, and
``placement cache clear`` empties it. The folder is kept under :data:`MAX_BYTES` by removing the oldest entries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from pydantic import BaseModel

T = TypeVar("T")

FOLDER_ENV = "PLACEMENT_CACHE_DIR"
"""Environment variable: the cache's folder (default: the user's cache folder for ``placement``)."""
SWITCH_ENV = "PLACEMENT_CACHE"
"""Environment variable: ``off`` (or ``0``, ``no``, ``false``) turns the cache off."""
MAX_BYTES = 1_000_000_000
"""The most the cache's folder holds; past it, the entries written longest ago are removed."""
FILE_HASH_MAX_BYTES = 512_000_000
"""Files up to this size are hashed whole; a larger one is known by its size and modification time."""

_enabled = True


def set_enabled(enabled: bool) -> None:
    """Turn the cache on or off for this process."""
    global _enabled
    _enabled = enabled


@contextmanager
def switched(enabled: bool) -> Iterator[None]:
    """The cache on or off inside a ``with`` block (``--no-cache``), as it was after it."""
    before = _enabled
    set_enabled(enabled)
    try:
        yield
    finally:
        set_enabled(before)


def cache_folder() -> Path:
    """Where the cache keeps its entries (``PLACEMENT_CACHE_DIR``, else the user's cache folder)."""
    configured = os.environ.get(FOLDER_ENV)
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("placement"))


def is_enabled() -> bool:
    """Whether lookups and stores happen (not ``--no-cache``, not ``PLACEMENT_CACHE=off``)."""
    return _enabled and os.environ.get(SWITCH_ENV, "on").strip().lower() not in {"off", "0", "no", "false"}


def canonical(value: Any) -> Any:
    """``value`` as JSON-ready data that two equal inputs share and any change alters.

    Pydantic models by their fields, dataclasses by theirs, arrays and tables by a hash of their bytes (with dtype and
    shape, or columns and index), mappings with sorted keys, sets sorted; other objects by their ``repr``.
    """
    if isinstance(value, BaseModel):
        return {"model": type(value).__name__, "fields": canonical(value.model_dump(mode="json"))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"dataclass": type(value).__name__, "fields": fields}
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        digest = hashlib.blake2b(data.tobytes(), digest_size=16).hexdigest()
        return {"array": digest, "dtype": str(data.dtype), "shape": list(data.shape)}
    if isinstance(value, pd.DataFrame):
        rows = pd.util.hash_pandas_object(value, index=True).to_numpy()
        return {"table": canonical(rows), "columns": [str(c) for c in value.columns], "dtypes": [str(d) for d in value.dtypes]}
    if isinstance(value, pd.Series):
        return {"series": canonical(value.to_frame())}
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    return repr(value)


def _strings(value: Any) -> Iterator[str]:
    """Every string inside canonical data."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def file_digest(path: Path) -> str:
    """A file's contents as a digest (its size and modification time when it is very large)."""
    stat = path.stat()
    if stat.st_size > FILE_HASH_MAX_BYTES:
        return f"size {stat.st_size} mtime {stat.st_mtime_ns}"
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def named_files(data: Any, base: Path | None) -> dict[str, str]:
    """The files the strings inside canonical ``data`` name (relative to ``base``, or absolute), with their digests.

    Each is known by its name as written and its contents, not by the folder it is in.
    """
    found: dict[str, str] = {}
    for text in _strings(data):
        if not text or len(text) > 4096 or "\n" in text:
            continue
        candidates = [Path(text)] if Path(text).is_absolute() or base is None else [base / text, Path(text)]
        for candidate in candidates:
            try:
                if candidate.is_file():
                    found.setdefault(text, file_digest(candidate))
                    break
            except OSError:
                continue
    return dict(sorted(found.items()))


@cache
def build_fingerprint() -> str:
    """A digest of the package's code and its bundled data: a change to either is a different build."""
    package = Path(str(files("placement"))).resolve()
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in package.rglob("*") if p.is_file() and p.suffix not in {".pyc", ".pyo"}):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(package)).encode())
        digest.update(file_digest(path).encode())
    from placement.world.bundled import bundled_path

    data = bundled_path()
    if data.resolve() != package and not str(data.resolve()).startswith(str(package) + os.sep):
        for path in sorted(p for p in data.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(data)).encode())
            digest.update(file_digest(path).encode())
    return digest.hexdigest()


def key_digest(kind: str, inputs: Any, *, base: Path | None = None) -> str:
    """The digest an entry of ``kind`` is stored under: its inputs, the files they name, the build.

    Parameters
    ----------
    kind : str
        What is stored (a folder of the cache): ``populations``, ``class-profile``, ...
    inputs : object
        Everything that determines the entry (:func:`canonical`).
    base : Path, optional
        The folder relative paths among the inputs are read from (the scenario's).

    Returns
    -------
    str
        A hex digest.
    """
    data = canonical(inputs)
    key = {"kind": kind, "build": build_fingerprint(), "inputs": data, "files": named_files(data, base)}
    return hashlib.blake2b(json.dumps(key, sort_keys=True).encode(), digest_size=20).hexdigest()


def _entry(kind: str, digest: str) -> Path:
    return cache_folder() / kind / f"{digest}.pickle"


def load(kind: str, digest: str) -> tuple[bool, Any]:
    """``(True, value)`` for an entry stored under ``digest``, ``(False, None)`` for none (or an unreadable one)."""
    if not is_enabled():
        return False, None
    path = _entry(kind, digest)
    try:
        with path.open("rb") as handle:
            return True, pickle.load(handle)
    except FileNotFoundError:
        return False, None
    except Exception:  # a damaged entry: removed, and computed again
        path.unlink(missing_ok=True)
        return False, None


def store(kind: str, digest: str, value: Any) -> None:
    """Keep ``value`` under ``digest`` (whole or not at all); a cache that cannot be written is skipped silently."""
    if not is_enabled():
        return
    path = _entry(kind, digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".part-", delete=False) as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, path)
        _count(cache_folder(), path.stat().st_size)
    except OSError:
        return


_held_bytes: dict[Path, int] = {}
"""Per cache folder, the bytes this process knows it holds: the folder is read again only when they pass the cap."""


def _count(folder: Path, added_bytes: int) -> None:
    """An entry of ``added_bytes`` written: past :data:`MAX_BYTES`, the oldest entries go (the folder read afresh)."""
    held = _held_bytes.get(folder)
    held = _keep_under(folder, MAX_BYTES) if held is None else held + added_bytes
    _held_bytes[folder] = _keep_under(folder, MAX_BYTES) if held > MAX_BYTES else held


def cached(kind: str, inputs: Any, compute: Callable[[], T], *, base: Path | None = None) -> T:
    """``compute()``, or the value stored for the same ``inputs`` (and files, and build) by an earlier run.

    Parameters
    ----------
    kind : str
        What is stored.
    inputs : object
        Everything that determines the value (:func:`key_digest`).
    compute : callable
        Computes it (its result must pickle); an exception it raises is raised and nothing is stored.
    base : Path, optional
        The folder relative paths among the inputs are read from.

    Returns
    -------
    object
        The value.
    """
    if not is_enabled():
        return compute()
    digest = key_digest(kind, inputs, base=base)
    found, value = load(kind, digest)
    if found:
        return value  # type: ignore[no-any-return]
    value = compute()
    store(kind, digest, value)
    return value


def _entries(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*/*.pickle") if p.is_file()] if folder.is_dir() else []


def _keep_under(folder: Path, max_bytes: int) -> int:
    """Remove the entries written longest ago until the folder holds at most ``max_bytes``: the bytes it then holds."""
    entries = [(p.stat().st_mtime_ns, p.stat().st_size, p) for p in _entries(folder)]
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        path.unlink(missing_ok=True)
        total -= size
    return total


def summary() -> tuple[Path, int, int]:
    """The cache's folder, its entries and their bytes."""
    folder = cache_folder()
    entries = _entries(folder)
    return folder, len(entries), sum(p.stat().st_size for p in entries)


def clear() -> tuple[int, int]:
    """Remove every entry: how many, and their bytes."""
    _held_bytes.pop(cache_folder(), None)
    entries = _entries(cache_folder())
    size = 0
    for path in entries:
        size += path.stat().st_size
        path.unlink(missing_ok=True)
    return len(entries), size
