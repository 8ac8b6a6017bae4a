"""One point of the node search and the space the points come from.

A :class:`Candidate` is one (batch, tensor-parallel degree, chunk budget) with its figures; the space is the
tensor-parallel degrees a node can run (:func:`tp_options`), the largest batch whose KV fits (:func:`max_batch`)
and the batches evaluated up to it (:func:`batch_grid`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec, kv_bytes_per_token
from placement.serving.kernels import kv_capacity_bytes, kv_copies
from placement.serving.workload import Workload


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One (batch, tensor-parallel degree, chunk budget) the search evaluated, with its figures.

    The fields mean what those of :class:`placement.serving.request.ServingResult` of the same name mean
    (``ttft_ms`` is the sum of ``queue_p99_ms``, ``slot_wait_p99_ms``, ``prefill_ms``, ``kv_transfer_ms`` and
    ``first_decode_ms``); ``limit`` is ``""`` until the search says what stopped the batch growing.
    """

    goodput_tok_s: float
    capacity_tok_s: float
    batch: int
    tp: int
    replicas: int
    itl_ms: float
    prefill_ms: float
    kv_transfer_ms: float
    queue_p99_ms: float
    first_decode_ms: float
    utilisation_cap: float
    prefill_gpu_share: float
    chunk_tokens: int
    mixed_step_share: float
    limit: str
    slot_wait_p99_ms: float = 0.0
    attention_dp: bool = False


def tp_options(accel: AcceleratorSpec, gpus: int) -> list[int]:
    """Tensor-parallel degrees a node can run: powers of two inside one scale-up domain that divide ``gpus``."""
    return [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(gpus, accel.scale_up_gpus) and gpus % t == 0]


def batch_grid(b_max: int) -> NDArray[np.float64]:
    """Batches to evaluate: every batch up to 64, then ~2 % steps, always ending at ``b_max``."""
    grid = np.unique(np.concatenate([np.arange(1, min(b_max, 64) + 1), np.geomspace(1, b_max, 400).round(), [b_max]]))
    return np.asarray(grid[(grid >= 1) & (grid <= b_max)], dtype=float)


def max_batch(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    tp: int,
    workload: Workload,
    eff: ServingEfficiency,
    attention_dp: bool = False,
) -> int:
    """Largest batch whose KV fits: the batch at the mean context plus room for one longest request (paged KV).

    Under data-parallel attention a GPU holds whole sequences: room for the longest one on each GPU.
    """
    w = workload
    per_token = kv_bytes_per_token(model, precision) * kv_copies(model, tp, attention_dp=attention_dp)
    room = max(0.0, w.longest_tokens - w.context_tokens) * (tp if attention_dp else 1)
    free = kv_capacity_bytes(model, accel, precision, tp, eff, attention_dp=attention_dp) - per_token * room
    return max(0, min(int(free // (per_token * w.context_tokens)), eff.max_batch)) if free > 0 else 0
