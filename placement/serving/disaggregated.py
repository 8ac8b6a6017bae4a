"""Disaggregated serving: separate prefill and decode pools, and the best decode batch at one tensor-parallel degree.

The pools split the node's GPUs in proportion to their loads; the prompt's KV crosses the scale-out NIC (or one
WAN link when the pools are in different metros) and its transfer time is added to the TTFT.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from placement.serving.candidate import Candidate, batch_grid, max_batch
from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec, kv_bytes_per_token
from placement.serving.kernels import kv_copies, kv_transfer_ms, prefill_ms
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap
from placement.serving.steps import speculative_step_ms
from placement.serving.workload import Workload, service_cv2


def _limit(ok: NDArray[np.bool_], itl_ok: NDArray[np.bool_], batch: int, b_max: int, b_kv_free: bool) -> str:
    if batch >= b_max:
        return "max_batch" if b_kv_free else "kv_capacity"
    if not ok[batch]:  # the next batch (index batch is batch + 1) breaks an objective
        return "itl" if not itl_ok[batch] else "tok_s_per_user"
    return "ttft"


def disaggregated_candidate(
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
    """Separate prefill and decode pools: the best decode batch at this tensor-parallel degree.

    The pools split the node's GPUs in proportion to their loads; the longest prompt's prefill, its KV
    transfer over the scale-out NIC and the first decode step make the TTFT, and the prefill queue's p99
    wait caps the load. Parameters and result as in :func:`~placement.serving.colocated.colocated_candidate`.
    """
    w = workload
    b_max = max_batch(model, accel, precision, tp=tp, workload=w, eff=eff, attention_dp=attention_dp)
    if b_max < 1:
        return None
    step, per_token, itl_ok, ok = _decode_steps(
        model, accel, precision, tp, b_max=b_max, workload=w, eff=eff, attention_dp=attention_dp
    )
    pool = _prefill_pool(model, accel, precision, gpus=gpus, tp=tp, workload=w, eff=eff)
    best: Candidate | None = None
    for b in batch_grid(b_max):
        i = int(b) - 1
        if not ok[i]:
            continue
        found = _pooled_candidate(b, float(step[i]), float(per_token[i]), pool, gpus=gpus, tp=tp, workload=w, eff=eff)
        if found is not None and (best is None or found.goodput_tok_s > best.goodput_tok_s):
            best = found
    if best is None:
        return None
    return replace(best, limit=_limit(ok, itl_ok, best.batch, b_max, b_max == eff.max_batch), attention_dp=attention_dp)


def _decode_steps(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    *,
    b_max: int,
    workload: Workload,
    eff: ServingEfficiency,
    attention_dp: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    """The decode pool's step at every batch from 1 to ``b_max``, and which batches meet the objective.

    Returns
    -------
    step_ms, itl_ms : numpy.ndarray
        The step (no prefill chunk) and the ITL it gives (a step emits ``tokens_per_step`` per sequence). [ms]
    itl_ok, ok : numpy.ndarray of bool
        The ITL meets its objective; the ITL and the speed per user both do.
    """
    w = workload
    batch = np.arange(1, b_max + 1, dtype=float)
    zeros = np.zeros_like(batch)
    step = speculative_step_ms(
        model,
        accel,
        precision,
        tp,
        batch=batch,
        chunk_tokens=zeros,
        chunk_attention_flop=zeros,
        workload=w,
        eff=eff,
        attention_dp=attention_dp,
    )
    per_token = step / w.tokens_per_step  # the ITL: a step emits tokens_per_step per sequence
    itl_ok = per_token <= w.itl_p99_ms
    ok = itl_ok & (1e3 / per_token >= w.min_tok_s_per_user)
    return step, per_token, itl_ok, ok


@dataclass(frozen=True, kw_only=True)
class _PrefillPool:
    """What one prompt asks of a disaggregated node's prefill pool.

    Attributes
    ----------
    longest_ms : float
        The longest prompt's prefill (the TTFT's). [ms]
    mean_ms : float
        The mean prompt's prefill: the pool's service time. [ms]
    transfer_ms : float
        The longest prompt's KV from the prefill pool to the decode pool. [ms]
    """

    longest_ms: float
    mean_ms: float
    transfer_ms: float


def _prefill_pool(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    gpus: int,
    tp: int,
    workload: Workload,
    eff: ServingEfficiency,
) -> _PrefillPool:
    """The prefill of the longest and the mean prompt, and the longest prompt's KV transfer to the decode pool.

    Across metros (``workload.kv_link_gbit_s``) the whole prompt's KV crosses one link; in one hall each prefill
    GPU sends its shard over its own scale-out NIC (nothing to send on a one-GPU node).
    """
    w = workload
    pre = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens_max, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    pre_mean = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    if w.kv_link_gbit_s is not None:  # across metros: the whole prompt's KV over one link
        transfer = kv_transfer_ms(w.input_tokens_max, kv_bytes_per_token(model, precision), w.kv_link_gbit_s)
    else:
        per_nic = kv_bytes_per_token(model, precision) * kv_copies(model, tp) / tp
        transfer = kv_transfer_ms(w.input_tokens_max, per_nic, accel.scale_out_gbit_s) if gpus > 1 else 0.0
    return _PrefillPool(longest_ms=pre, mean_ms=pre_mean, transfer_ms=transfer)


@dataclass(frozen=True, kw_only=True)
class _PoolSplit:
    """How a disaggregated node's GPUs split between the pools at one decode batch.

    Attributes
    ----------
    cap : float
        The utilisation the prefill queue allows inside the TTFT objective.
    share : float
        Share of the GPUs in the prefill pool.
    servers : int
        Prefill replicas (the queue's servers).
    prefill_rate : float
        Requests a prefill GPU finishes per second at full load (infinite when nothing is prefilled). [requests/s]
    """

    cap: float
    share: float
    servers: int
    prefill_rate: float


def _split_pools(
    decode_rate: float,
    budget_ms: float,
    pool: _PrefillPool,
    *,
    gpus: int,
    tp: int,
    workload: Workload,
    eff: ServingEfficiency,
) -> _PoolSplit:
    """Split the GPUs in proportion to the pools' loads at the utilisation the prefill queue's p99 wait allows.

    The split sets the prefill pool's server count, which sets the cap, which sets the split: three rounds.

    Parameters
    ----------
    decode_rate : float
        Requests a decode GPU finishes per second at this batch. [requests/s]
    budget_ms : float
        What the TTFT objective leaves for the prefill queue's p99 wait. [ms]
    pool : _PrefillPool
        What one prompt asks of the prefill pool.
    gpus, tp : int
        GPUs in the node and the tensor-parallel degree of a replica.
    workload, eff
        As in :func:`disaggregated_candidate`.
    """
    cap, share, servers = float(budget_ms >= 0), 0.0, 1
    prefill_rate = math.inf
    if pool.longest_ms > 0:
        for _ in range(3):  # the pool split sets the server count, which sets the cap
            prefill_rate = 1e3 / (pool.mean_ms * tp)  # requests/s per prefill GPU at full load
            share = decode_rate / (prefill_rate + decode_rate) if cap == 0 else decode_rate / (cap * prefill_rate + decode_rate)
            servers = max(1, round(share * gpus / tp))
            cap = utilisation_cap(servers, pool.mean_ms, budget_ms, cs2=service_cv2(workload, eff))
    return _PoolSplit(cap=cap, share=share, servers=servers, prefill_rate=prefill_rate)


def _pooled_candidate(
    b: float,
    step_ms: float,
    itl_ms: float,
    pool: _PrefillPool,
    *,
    gpus: int,
    tp: int,
    workload: Workload,
    eff: ServingEfficiency,
) -> Candidate | None:
    """The pools at one decode batch ``b`` of step ``step_ms``: goodput at the load the prefill queue allows.

    ``None`` when the TTFT objective leaves the prefill queue no load.
    """
    w, pre = workload, pool.longest_ms
    decode_rate = b / (step_ms / 1e3 * w.answer_steps * tp)  # requests/s per decode GPU
    budget = w.ttft_p99_ms - pre - pool.transfer_ms - step_ms
    split = _split_pools(decode_rate, budget, pool, gpus=gpus, tp=tp, workload=w, eff=eff)
    cap, prefill_rate = split.cap, split.prefill_rate
    if cap <= 0:
        return None
    effective_prefill = cap * prefill_rate
    rate = gpus * decode_rate if pre == 0 else gpus * effective_prefill * decode_rate / (effective_prefill + decode_rate)
    capacity = gpus * w.output_tokens * (decode_rate if pre == 0 else prefill_rate * decode_rate / (prefill_rate + decode_rate))
    queue = queue_wait_p99_ms(split.servers, pool.mean_ms, cap, cs2=service_cv2(w, eff)) if pre > 0 else 0.0
    return Candidate(
        goodput_tok_s=rate * w.output_tokens,
        capacity_tok_s=capacity,
        batch=int(b),
        tp=tp,
        replicas=gpus // tp,
        itl_ms=itl_ms,
        prefill_ms=pre,
        kv_transfer_ms=pool.transfer_ms,
        queue_p99_ms=queue,
        first_decode_ms=step_ms,
        utilisation_cap=cap,
        prefill_gpu_share=split.share,
        chunk_tokens=0,
        mixed_step_share=0.0,
        limit="",
    )
