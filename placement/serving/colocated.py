"""Colocated serving with chunked prefill: the best (batch, chunk budget) of a node at one tensor-parallel degree.

Decode and prefill share each replica: a step carries the decoding batch and at most one chunk of ``K`` prompt
tokens (the step times of :mod:`placement.serving.steps`). A candidate's goodput is its capacity at the highest
load at which the replica's chunk pipeline (one queue per replica), the p99 ITL with its chunk-carrying steps,
and the wait for a decode slot all still meet the objective. The search tries candidates in order of capacity
and prunes one as soon as a probe shows it cannot beat the best found so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from placement.serving.candidate import Candidate, batch_grid, max_batch
from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap
from placement.serving.steps import ChunkedSteps, chunked_steps
from placement.serving.workload import P99_Z, Workload, service_cv2

#: Loads the ITL cap is first bracketed on (then bisected).
_ITL_LOAD_GRID = 64
#: Relative margin below the load a candidate needs to beat the best found so far at which the search probes the
#: queue and the ITL before it bisects for the exact cap: far above the formulas' rounding (~1e-13 relative), so a
#: candidate pruned on a probe could not have beaten the best and the search returns what the full one does.
PRUNE_MARGIN = 1e-9


def _grid_limit(
    ok: NDArray[np.bool_],
    itl_ok: NDArray[np.bool_],
    batch: NDArray[np.float64],
    chosen: int,
    b_max: int,
    eff: ServingEfficiency,
) -> str:
    """What stopped the batch at ``chosen`` on a batch grid: the next grid batch breaks ITL or speed, or TTFT."""
    larger = np.nonzero(batch > chosen)[0]
    if larger.size == 0:
        return "max_batch" if b_max == eff.max_batch else "kv_capacity"
    nxt = int(larger[0])
    if not ok[nxt]:
        return "itl" if not itl_ok[nxt] else "tok_s_per_user"
    return "ttft"


def colocated_candidate(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    gpus: int,
    tp: int,
    workload: Workload,
    eff: ServingEfficiency,
    attention_dp: bool = False,
) -> Candidate | None:
    """Aggregated serving with chunked prefill: the best (batch, chunk budget) at this tensor-parallel degree.

    Candidates are tried in order of capacity; one is evaluated in full only when its capacity can beat the
    best found so far, and :func:`chunked_candidate` prunes it as soon as a probe shows it cannot.

    Parameters
    ----------
    model, accel, precision
        What runs where, as in :func:`~placement.serving.steps.chunked_steps`.
    gpus : int
        GPUs in the node (``gpus // tp`` replicas).
    tp : int
        Tensor-parallel degree.
    workload : Workload
        Lengths and objective.
    eff : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    Candidate or None
        The best candidate with what stopped its batch growing; ``None`` when nothing meets the objective.
    """
    w = workload
    b_max = max_batch(model, accel, precision, tp=tp, workload=w, eff=eff, attention_dp=attention_dp)
    if b_max < 1:
        return None
    replicas = gpus // tp
    batch = batch_grid(b_max)
    batch = batch[batch + P99_Z * np.sqrt(batch) <= b_max] if b_max > 1 else batch  # the p99 batch's KV fits too
    if batch.size == 0:
        return None
    steps = chunked_steps(model, accel, precision, tp=tp, batch=batch, workload=w, eff=eff, attention_dp=attention_dp)
    # chunk steps add to the tail with load: capped per candidate; a step emits tokens_per_step per sequence
    mean, itl = steps.mean_ms, steps.pure_p99_ms / w.tokens_per_step
    itl_ok = itl <= w.itl_p99_ms
    ok = itl_ok & (1e3 / itl >= w.min_tok_s_per_user)
    capacity = replicas * batch[None, :] * w.tokens_per_step / mean * 1e3
    best: Candidate | None = None
    for flat in np.argsort(-np.where(ok, capacity, -1.0), axis=None):
        ki, bi = np.unravel_index(flat, capacity.shape)
        if not ok[ki, bi] or (best is not None and capacity[ki, bi] <= best.goodput_tok_s):
            break
        floor = best.goodput_tok_s if best is not None else 0.0
        found = chunked_candidate(
            steps,
            int(ki),
            int(bi),
            replicas=replicas,
            tp=tp,
            workload=w,
            eff=eff,
            capacity_tok_s=float(capacity[ki, bi]),
            floor_tok_s=floor,
        )
        if found is not None and (best is None or found.goodput_tok_s > best.goodput_tok_s):
            best = found
    if best is None:
        return None
    fits, fits_itl = np.asarray(ok.any(axis=0)), np.asarray(itl_ok.any(axis=0))
    limit = best.limit or _grid_limit(fits, fits_itl, batch, best.batch, b_max, eff)
    return replace(best, limit=limit, attention_dp=attention_dp)


def chunked_candidate(
    steps: ChunkedSteps,
    ki: int,
    bi: int,
    *,
    replicas: int,
    tp: int,
    workload: Workload,
    eff: ServingEfficiency,
    capacity_tok_s: float,
    floor_tok_s: float = 0.0,
) -> Candidate | None:
    """Goodput of one (chunk, batch): the load at which the p99 prefill queue still fits the TTFT objective.

    ``None`` when nothing fits, or as soon as a bound shows the goodput cannot exceed ``floor_tok_s`` (the
    best found so far).

    Each replica's chunk pipeline is a server: a mean prompt occupies it ``new / K`` mixed steps; the longest
    prompt takes ``ceil(new_max / K)`` mixed steps, the last of which emits the first token (so prefill is
    every chunk step and ``first_decode_ms`` is 0). A request then also waits for one of the ``replicas x batch``
    decode slots (``slot_wait_p99_ms``). The p99 waits and the longest prompt's prefill are added
    (conservative: tails at once).

    Parameters
    ----------
    steps : ChunkedSteps
        Step times of the replica (:func:`~placement.serving.steps.chunked_steps`).
    ki, bi : int
        Indices of the chunk budget and the batch in ``steps``.
    replicas, tp : int
        Replicas in the node and their tensor-parallel degree.
    workload : Workload
        Lengths and objective.
    eff : ServingEfficiency
        Achieved efficiencies.
    capacity_tok_s : float
        Output tokens per second of the node at this (chunk, batch) before tail headroom. [tokens/s]
    floor_tok_s : float
        Goodput to beat (the best so far); 0 evaluates the candidate in full. [tokens/s]

    Returns
    -------
    Candidate or None
        Its figures, ``limit`` ``"itl"`` when the ITL capped the load, else ``""``.
    """
    w = workload
    if w.new_tokens <= 0:
        return _prompt_free_candidate(steps, ki, bi, replicas=replicas, tp=tp, workload=w, capacity_tok_s=capacity_tok_s)
    cell = _chunked_cell(steps, ki, bi, replicas=replicas, workload=w, eff=eff)
    found = _load_cap(steps, ki, bi, cell, capacity_tok_s=capacity_tok_s, floor_tok_s=floor_tok_s)
    if found is None:
        return None
    cap, limit = found
    return Candidate(
        goodput_tok_s=cap * capacity_tok_s,
        capacity_tok_s=capacity_tok_s,
        batch=int(steps.batch[bi]),
        tp=tp,
        replicas=replicas,
        itl_ms=steps.itl_cell_ms(ki, bi, cap),
        prefill_ms=cell.prefill_ms,
        kv_transfer_ms=0.0,
        queue_p99_ms=cell.chunk.wait_p99_ms(cap * cell.chunk_utilisation),
        first_decode_ms=0.0,
        utilisation_cap=cap,
        prefill_gpu_share=0.0,
        chunk_tokens=int(steps.chunk[ki]),
        mixed_step_share=min(1.0, cap * float(steps.chunk_step_share[ki, bi])),
        limit=limit,
        slot_wait_p99_ms=cell.slots.wait_p99_ms(cap),
    )


@dataclass(frozen=True, kw_only=True)
class _Queue:
    """A queue in front of ``servers`` servers of mean service ``service_ms`` (M/G/c, Allen-Cunneen).

    Attributes
    ----------
    servers : int
        Servers.
    service_ms : float
        Mean service time. [ms]
    cs2, ca2 : float
        Squared coefficients of variation of the service and the inter-arrival times.
    """

    servers: int
    service_ms: float
    cs2: float
    ca2: float = 1.0

    def wait_p99_ms(self, utilisation: float) -> float:
        """The p99 wait at ``utilisation`` (:func:`~placement.serving.queueing.queue_wait_p99_ms`). [ms]"""
        return queue_wait_p99_ms(self.servers, self.service_ms, utilisation, ca2=self.ca2, cs2=self.cs2)

    def utilisation_cap(self, wait_budget_ms: float) -> float:
        """The highest utilisation whose p99 wait fits ``wait_budget_ms``.

        As :func:`~placement.serving.queueing.utilisation_cap`.
        """
        return utilisation_cap(self.servers, self.service_ms, wait_budget_ms, ca2=self.ca2, cs2=self.cs2)

    def misses(self, wait_budget_ms: float, utilisation: float) -> bool:
        """Whether the p99 wait already exceeds ``wait_budget_ms`` a hair below ``utilisation`` (:func:`queue_misses`)."""
        return queue_misses(self.servers, self.service_ms, wait_budget_ms, utilisation, ca2=self.ca2, cs2=self.cs2)


@dataclass(frozen=True, kw_only=True)
class _ChunkedCell:
    """One (chunk budget, batch) of a colocated replica with prompts to prefill, in the terms its load caps read.

    Attributes
    ----------
    prefill_ms : float
        The longest prompt's prefill: every one of its chunk steps. [ms]
    budget_ms : float
        What the TTFT objective leaves after that prefill for the chunk queue's and the slot queue's waits. [ms]
    chunk : _Queue
        The replica's chunk pipeline: one server, fed every ``replicas``-th arrival.
    chunk_utilisation : float
        That pipeline's utilisation at full load (load 1).
    slots : _Queue
        The node's ``replicas x batch`` decode slots, each held for a prompt's chunks and every answer token.
    itl_target_ms : float
        The p99 ITL the load must keep: the objective, or the interactivity floor's if tighter. [ms]
    """

    prefill_ms: float
    budget_ms: float
    chunk: _Queue
    chunk_utilisation: float
    slots: _Queue
    itl_target_ms: float


def _chunked_cell(
    steps: ChunkedSteps, ki: int, bi: int, *, replicas: int, workload: Workload, eff: ServingEfficiency
) -> _ChunkedCell:
    """The prefill, the TTFT budget left, the two queues and the ITL target of one (chunk, batch) with prompts to prefill."""
    w = workload
    k, b = float(steps.chunk[ki]), float(steps.batch[bi])
    mixed, mean = float(steps.mixed_ms[ki, bi]), float(steps.mean_ms[ki, bi])
    steps_longest = max(1, math.ceil(w.new_tokens_max / k))
    # every chunk of the longest prompt is a mixed step, and the last of them samples the first token:
    # prefill is all of them and no separate decode step precedes the first token
    prefill, first = steps_longest * mixed, 0.0
    service = w.new_tokens / k * mixed  # mean time a prompt holds its replica's chunk pipeline [ms]
    cs2 = service_cv2(w, eff)
    # A request also waits for a decode slot: replicas x batch slots, each held for the prompt's chunks and
    # every answer token. At capacity all slots are busy, so the load must stay below it by the margin
    # the p99 slot wait allows inside what the objective leaves (this is what keeps goodput off the knee).
    hold_ms = service + w.answer_steps * mean
    # from the prompt mix: the prompt varies, the answer's steps do not; an override holds for both queues
    hold_cs2 = cs2 * (service / hold_ms) ** 2 if eff.service_cv2 is None else cs2
    return _ChunkedCell(
        prefill_ms=prefill,
        budget_ms=w.ttft_p99_ms - prefill - first,
        # a prompt is routed to one replica on arrival and prefills in that replica's chunk pipeline, one prompt after
        # another: one server per replica, fed every ``replicas``-th arrival (round-robin of a Poisson stream)
        chunk=_Queue(servers=1, service_ms=service, cs2=cs2, ca2=1.0 / replicas),
        chunk_utilisation=b / (w.answer_steps * mean) * service,  # that pipeline's utilisation at full batch
        slots=_Queue(servers=replicas * int(b), service_ms=hold_ms, cs2=hold_cs2),
        itl_target_ms=min(w.itl_p99_ms, 1e3 / max(w.min_tok_s_per_user, 1e-9)),
    )


def _load_cap(
    steps: ChunkedSteps, ki: int, bi: int, cell: _ChunkedCell, *, capacity_tok_s: float, floor_tok_s: float
) -> tuple[float, str] | None:
    """The highest load at which the chunk queue, the p99 ITL and the decode-slot queue all meet the objective.

    Each is first probed at the load needed to beat ``floor_tok_s`` (the best so far) before it is bisected; the
    slot queue waits inside what the chunk queue's p99 wait at the load found leaves of the budget.

    Returns
    -------
    tuple of (float, str) or None
        The load (a share of capacity) and ``"itl"`` when the ITL capped it, else ``""``; ``None`` when nothing
        fits or the goodput cannot exceed ``floor_tok_s``.
    """
    chunk, rho_full = cell.chunk, cell.chunk_utilisation
    floor_load = floor_tok_s / capacity_tok_s  # the share of capacity this candidate must serve to beat the best
    # one probe each of the chunk queue and the ITL at the load needed to beat the best, before either bisection
    if rho_full > 0 and chunk.misses(cell.budget_ms, floor_load * rho_full):
        return None
    if _itl_misses(steps, ki, bi, floor_load, cell.itl_target_ms):
        return None
    rho = chunk.utilisation_cap(cell.budget_ms)
    cap = min(1.0, rho / rho_full) if rho_full > 0 else 1.0
    if cap * capacity_tok_s <= floor_tok_s:
        return None
    itl_cap = _itl_load_cap(steps, ki, bi, cap, cell.itl_target_ms)
    limit = "itl" if itl_cap < cap else ""
    cap = itl_cap
    if cap <= 0 or cap * capacity_tok_s <= floor_tok_s:
        return None
    slot_budget_ms = cell.budget_ms - chunk.wait_p99_ms(cap * rho_full)
    if cell.slots.misses(slot_budget_ms, floor_load):
        return None  # the slot queue caps goodput below the best: the caller would not take it
    cap = min(cap, cell.slots.utilisation_cap(slot_budget_ms))
    if cap <= 0:
        return None
    return cap, limit


def _prompt_free_candidate(
    steps: ChunkedSteps, ki: int, bi: int, *, replicas: int, tp: int, workload: Workload, capacity_tok_s: float
) -> Candidate:
    """A (chunk, batch) whose prompts the prefix cache serves whole: nothing to prefill, nothing to queue for.

    The first token takes one pure decode step; the node runs at its capacity when that step fits the TTFT
    objective, else serves nothing.
    """
    w, capacity = workload, capacity_tok_s
    first = float(steps.pure_ms[ki, bi])
    cap = float(w.ttft_p99_ms - first >= 0)
    return Candidate(
        goodput_tok_s=cap * capacity,
        capacity_tok_s=capacity,
        batch=int(steps.batch[bi]),
        tp=tp,
        replicas=replicas,
        itl_ms=first / w.tokens_per_step,
        prefill_ms=0.0,
        kv_transfer_ms=0.0,
        queue_p99_ms=0.0,
        first_decode_ms=first,
        utilisation_cap=cap,
        prefill_gpu_share=0.0,
        chunk_tokens=0,
        mixed_step_share=0.0,
        limit="",
    )


def queue_misses(
    servers: int, service_ms: float, wait_budget_ms: float, utilisation: float, *, cs2: float, ca2: float = 1.0
) -> bool:
    """Whether the p99 wait already exceeds its budget a hair below ``utilisation``.

    The wait rises with utilisation, so :func:`~placement.serving.queueing.utilisation_cap` (a bisection keeping
    the highest point that fits) then returns less than ``utilisation``: a candidate that needs that much load
    to beat the best found so far cannot, and one evaluation replaces the bisection's forty. The margin
    :data:`PRUNE_MARGIN` keeps the probe clear of rounding. ``False`` when nothing is needed (``utilisation <= 0``).
    """
    if utilisation <= 0.0:
        return False
    probe = utilisation * (1.0 - PRUNE_MARGIN)
    return probe >= 1.0 or queue_wait_p99_ms(servers, service_ms, probe, ca2=ca2, cs2=cs2) > wait_budget_ms


def _itl_misses(steps: ChunkedSteps, ki: int, bi: int, load: float, itl_ms: float) -> bool:
    """Whether the p99 ITL of one (chunk, batch) already misses ``itl_ms`` a hair below ``load``.

    The p99 ITL never falls as load rises, so :func:`_itl_load_cap` then returns less than ``load``; as
    :func:`queue_misses`, with the same margin. ``False`` when ``load <= 0``.
    """
    if load <= 0.0:
        return False
    return bool(steps.itl_row_ms(ki, slice(bi, bi + 1), load * (1.0 - PRUNE_MARGIN))[0] > itl_ms)


def _itl_load_cap(steps: ChunkedSteps, ki: int, bi: int, load: float, itl_ms: float) -> float:
    """The largest load up to ``load`` at which the p99 ITL (chunk steps included) meets ``itl_ms``; 0 if none.

    More load puts a chunk in more steps, and fuller ones, so the p99 ITL never falls as load rises: a grid
    of loads brackets the crossing, then bisection narrows it to ``load / 2**16``.
    """
    cols = slice(bi, bi + 1)
    if steps.itl_row_ms(ki, cols, load)[0] <= itl_ms:
        return load
    grid = load * np.arange(1, _ITL_LOAD_GRID + 1) / _ITL_LOAD_GRID
    fits = steps.itl_row_ms(ki, cols, grid) <= itl_ms
    if fits.all():  # the single check above and the grid disagree only by rounding at ``load`` itself
        return load
    first_miss = int(np.argmin(fits))
    low, high = (float(grid[first_miss - 1]) if first_miss > 0 else 0.0), float(grid[first_miss])
    for _ in range(10):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if steps.itl_row_ms(ki, cols, mid)[0] <= itl_ms else (low, mid)
    return low
