"""The process itself: a function run in a forked child while the caller goes on, and freed memory handed back.

**A function in the background**, run in a forked child process while the caller goes on: the second core of a
2-core machine at work.

The child inherits the caller's memory (copy-on-write: nothing is pickled on the way in), runs the function, and
sends its result back pickled through a pipe; :meth:`Background.result` reads it when the caller needs it. Where
a fork is not safe or not available (no ``os.fork``, or other threads running in the process, which a fork does
not copy and whose locks it may leave held) the function runs in the caller at once: the same result, in turn.

**A child on standby** (:class:`Standby`): forked early to prepare (its imports, the files it reads) while the
caller's own work leaves a core idle, it waits for a payload only the caller's work yields and then runs on it.

**Tasks shared out** between the caller and one forked child (:func:`shared_out`): each takes the next task left.

A child freezes what it inherited out of its garbage collector's reach, so that a collection does not copy the
parent's heap page by page into it.

**Freed memory** goes back to the system: large arrays are mapped on their own, not carved from the heap; a table
mapped from a file (the round trips of a catalog world) hands back the pages a pass has read (:func:`release_rows`,
:func:`take_pairs`, :func:`row_minimum`).

glibc's allocator serves a block below its mmap threshold from the heap, and raises that threshold (up to 32 MB)
each time a mapped block is freed. A solve allocates and frees many arrays of one figure per pair (24 MB each on
2,000 sites): once the threshold has risen they come from the heap, whose freed space is kept, not returned.

Measured on ``world_2k`` (``cli.py solve``, ``/usr/bin/time -v``; the same plan every time): glibc's default, 1.84-1.87
GB peak, 4.5 s of system time; threshold fixed at 1 MiB, 1.48 GB but 17 s of system time (HiGHS's own 1-4 MB
vectors are then mapped and faulted in afresh each time); at 4 MiB, 1.50 GB and 11-13 s; at 8 MiB, 1.58 GB.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import mmap
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

T = TypeVar("T")
P = TypeVar("P")


def can_fork() -> bool:
    """Whether a child may be forked safely here: ``os.fork`` exists and this is the process's only thread."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Background(Generic[T]):
    """``function()`` computed in a forked child (or at once, in the caller, where a fork is not safe).

    Parameters
    ----------
    function : callable
        Takes no argument; its result must pickle. An exception it raises is raised again by :meth:`result`
        (pickled when it can be, else as a :class:`RuntimeError` with the child's traceback).
    fork : bool, optional
        False runs it in the caller at once (the caller's own share of work handed out to children).
    """

    def __init__(self, function: Callable[[], T], *, fork: bool = True) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._pid = -1
        self._read = -1
        if not (fork and can_fork()):
            self._run_here(function)
            return
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, leave without running the parent's exit handlers
            _child((read,), partial(_send, function, write))
        os.close(write)
        self._pid, self._read = pid, read

    def __del__(self) -> None:
        """A child never read (the caller failed first) is stopped, so that it does not wait on a full pipe."""
        if self._pid > 0:
            _stop(self._pid)
            with contextlib.suppress(OSError):
                os.close(self._read)
            self._pid = -1

    def _run_here(self, function: Callable[[], T]) -> None:
        try:
            self._value = function()
        except Exception as exc:  # raised again by result(), as the child's would be
            self._error = exc

    @property
    def forked(self) -> bool:
        """Whether the function runs in a child process."""
        return self._pid > 0

    def result(self) -> T:
        """The function's result (waits for the child); raises what the function raised."""
        if self._pid > 0:
            pid, self._pid = self._pid, -1
            try:
                self._value = _result_from(pid, self._read)
            except Exception as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


class Standby(Generic[P, T]):
    """A forked child made ready now that runs ``work(payload)`` when it is handed the payload later.

    The child runs ``prepare()`` at once (its imports, the files it will read) while the caller goes on, then waits
    for the payload: what it must wait for the caller to know (a plan's results). :meth:`send` hands it over
    (pickled, through a pipe) and the child works while the caller goes on; :meth:`result` returns
    ``work(payload)``'s result, raising what it raised (:meth:`run` does both). ``work`` itself is inherited, not
    pickled: a closure serves. Where a fork is not safe, :meth:`result` prepares and works in the caller. A standby
    never used is stopped by :meth:`close` (or when the ``with`` block it opened ends).

    Parameters
    ----------
    prepare : callable
        Takes no argument; what it returns is dropped (it works by its side effects: modules imported, caches filled).
    work : callable
        Takes the payload; its result must pickle.
    """

    def __init__(self, prepare: Callable[[], object], work: Callable[[P], T]) -> None:
        self._prepare, self._work = prepare, work
        self._pid, self._send, self._read = -1, -1, -1
        self._running = -1  # the child's pid once it has the payload
        self._payload: tuple[P] | None = None  # the payload sent, until it is worked on
        if not can_fork():
            return
        to_child, from_caller = os.pipe()
        to_caller, from_child = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child((from_caller, to_caller), partial(self._serve, to_child, from_child))
        os.close(to_child)
        os.close(from_child)
        self._pid, self._send, self._read = pid, from_caller, to_caller

    def _serve(self, receive: int, send: int) -> None:
        """In the child: prepare, wait for the payload (none when the caller closed the pipe), work, send the result."""
        with contextlib.suppress(Exception):  # a failed preparation is met again, and reported, by the work
            self._prepare()
        with os.fdopen(receive, "rb") as pipe:
            message = pipe.read()
        if not message:  # closed without a payload: the caller no longer needs this child
            os.close(send)
            return
        payload = pickle.loads(message)
        _send(lambda: self._work(payload), send)

    @property
    def forked(self) -> bool:
        """Whether a child is waiting (False once it has run, or where a fork was not safe)."""
        return self._pid > 0

    def send(self, payload: P) -> None:
        """Hand the payload over: the child starts on it while the caller goes on (:meth:`result` waits for it).

        A payload that does not pickle is kept here instead, and :meth:`result` works on it in the caller: the same
        result, in turn. Without a child, :meth:`result` prepares and works here.
        """
        self._payload = (payload,)
        if self._pid <= 0:
            return
        try:
            message = pickle.dumps(payload)
        except (pickle.PicklingError, AttributeError, TypeError):  # a closure or a handle in it: worked on here
            self.close()
            return
        send, self._send = self._send, -1  # closed by the write, whatever happens
        try:
            with os.fdopen(send, "wb") as pipe:
                pipe.write(message)
        except BaseException:
            self.close()
            raise
        self._running, self._pid = self._pid, -1

    def result(self) -> T:
        """``work(payload)`` of the payload sent: the child's (waited for) or worked here; raises what it raised."""
        if self._running > 0:
            pid, read, self._running, self._read = self._running, self._read, -1, -1
            value: T = _result_from(pid, read)
            return value
        if self._payload is None:
            raise RuntimeError("no payload was sent to the standby")
        self._prepare()
        return self._work(self._payload[0])

    def run(self, payload: P) -> T:
        """:meth:`send` then :meth:`result`: ``work(payload)``, in the waiting child where there is one."""
        self.send(payload)
        return self.result()

    def close(self) -> None:
        """Stop the child, waiting or working, whose result has not been read (nothing to do otherwise)."""
        for pid in (self._pid, self._running):
            if pid > 0:
                _stop(pid)
        for fd in (self._send, self._read):  # each closed once: a number closed before may name another file now
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._pid = self._running = self._send = self._read = -1

    def __enter__(self) -> Standby[P, T]:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def _child(close: tuple[int, ...], body: Callable[[], None]) -> None:
    """In a forked child: the caller's ends of its pipes closed, its objects frozen, ``body()``, then leave at once.

    Frozen, the objects the child inherited are never walked by its garbage collector, which would write to each
    one's header and so copy every page of the parent's heap into the child. The child leaves by ``os._exit``
    whatever happens (an interrupt too), never returning into the parent's frames or running its exit handlers.
    """
    try:
        for fd in close:
            os.close(fd)
        gc.freeze()
        body()
    finally:
        os._exit(0)


def _stop(pid: int) -> None:
    """Kill a child and reap it."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _result_from(pid: int, read: int) -> Any:
    """The pickled ``("ok", value)`` or ``("error", exception)`` a child sends: its value, or its exception raised."""
    with os.fdopen(read, "rb") as pipe:
        payload = pipe.read()
    os.waitpid(pid, 0)
    if not payload:
        raise RuntimeError("the background computation ended without a result")
    kind, value = pickle.loads(payload)
    if kind != "ok":
        raise value
    return value


def shared_out(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Each task's result, in order, with the tasks shared out between the caller and one forked child.

    Each side takes the next task no side has taken yet (a counter in shared memory) until none is left, so a long
    task on one side leaves the other the rest: two cores kept busy without knowing beforehand which tasks are long.
    Each result must pickle (the child's come back through a pipe). Where a fork is not safe, the tasks run in turn.
    """
    if len(tasks) < 2 or not can_fork():
        return [task() for task in tasks]
    import multiprocessing

    taken = multiprocessing.get_context("fork").Value("i", 0)

    def take() -> dict[int, T]:
        done: dict[int, T] = {}
        while True:
            with taken.get_lock():
                k = int(taken.value)
                taken.value = k + 1
            if k >= len(tasks):
                return done
            done[k] = tasks[k]()

    child = Background(take)
    mine = take()
    found = {**mine, **child.result()}
    return [found[k] for k in range(len(tasks))]


def _send(function: Callable[[], object], write: int) -> None:
    """Run ``function`` and write ``("ok", result)`` or ``("error", exception)``, pickled, to the pipe."""
    try:
        payload = pickle.dumps(("ok", function()))
    except Exception as exc:
        try:
            payload = pickle.dumps(("error", exc))
        except Exception:
            payload = pickle.dumps(("error", RuntimeError("in the background computation:\n" + traceback.format_exc())))
    with os.fdopen(write, "wb") as pipe:
        pipe.write(payload)


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


def release_rows(table: NDArray[Any], first: int = 0, last: int | None = None) -> None:
    """Hand back the pages of rows ``first..last-1`` of a table mapped from a file (shared); any other table is left.

    Pages of a file mapping count in the process's resident memory until it ends or lets them go; a pass over a
    0.27 GB round-trip table would keep all of it. Let go, a page is read again from the file (the system's cache,
    which holds what was written to it) if it is needed again: the figures stay as they are.

    Parameters
    ----------
    table : numpy.ndarray
        A 2-D table; only a :class:`numpy.memmap` of a file (``r`` or ``r+``, at offset 0) is released.
    first, last : int, optional
        The rows (default: all).
    """
    mapped = getattr(table, "_mmap", None)
    if not isinstance(table, np.memmap) or mapped is None or table.mode not in ("r", "r+") or table.offset != 0:
        return
    if not hasattr(mapped, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):  # Windows: the system keeps them
        return
    row_bytes = table.strides[0]
    last = table.shape[0] if last is None else min(last, table.shape[0])
    if last <= first:
        return
    start = (first * row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
    stop = min(last * row_bytes, len(mapped))
    mapped.madvise(mmap.MADV_DONTNEED, start, stop - start)


RELEASE_ROWS = 2048
"""Rows of a mapped table read before their pages are let go (16 MB of a 2,000-site float32 table)."""


def take_pairs(table: NDArray[Any], rows: NDArray[np.integer], cols: NDArray[np.integer]) -> NDArray[Any]:
    """``table[rows, cols]``; from a mapped table a block of rows at a time, each block's pages let go after it.

    Parameters
    ----------
    table : numpy.ndarray
        A 2-D table.
    rows, cols : numpy.ndarray
        ``(k,)`` the cells.

    Returns
    -------
    numpy.ndarray
        ``(k,)`` their values, in the table's type.
    """
    if not isinstance(table, np.memmap):
        return np.asarray(table[rows, cols])
    out = np.empty(len(rows), dtype=table.dtype)
    order = np.argsort(rows, kind="stable")
    edges = np.searchsorted(rows[order], np.arange(0, table.shape[0] + RELEASE_ROWS, RELEASE_ROWS))
    for k in range(len(edges) - 1):
        cells = order[edges[k] : edges[k + 1]]
        if len(cells):
            out[cells] = table[rows[cells], cols[cells]]
            release_rows(table, k * RELEASE_ROWS, (k + 1) * RELEASE_ROWS)
    return out


def row_minimum(table: NDArray[Any]) -> NDArray[Any]:
    """``table.min(axis=1)``; of a mapped table a block of rows at a time, each block's pages let go after it.

    Parameters
    ----------
    table : numpy.ndarray
        A 2-D table with at least one column.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` each row's least value.
    """
    if not isinstance(table, np.memmap):
        return np.asarray(table.min(axis=1))
    out = np.empty(table.shape[0], dtype=table.dtype)
    for first in range(0, table.shape[0], RELEASE_ROWS):
        out[first : first + RELEASE_ROWS] = table[first : first + RELEASE_ROWS].min(axis=1)
        release_rows(table, first, first + RELEASE_ROWS)
    return out
