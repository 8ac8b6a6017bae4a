"""Disaggregated serving: separate prefill and decode pools, and the best decode batch at one tensor-parallel degree.

The pools split the node's GPUs in proportion to their loads; the prompt's KV crosses the scale-out NIC (or one
WAN link when the pools are in different metros) and its transfer time is added to the TTFT.
"""

from __future__ import annotations

import math
from dataclasses import replace

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
    pre = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens_max, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    pre_mean = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    if w.kv_link_gbit_s is not None:  # across metros: the whole prompt's KV over one link
        transfer = kv_transfer_ms(w.input_tokens_max, kv_bytes_per_token(model, precision), w.kv_link_gbit_s)
    else:
        per_nic = kv_bytes_per_token(model, precision) * kv_copies(model, tp) / tp
        transfer = kv_transfer_ms(w.input_tokens_max, per_nic, accel.scale_out_gbit_s) if gpus > 1 else 0.0
    best: Candidate | None = None
    for b in batch_grid(b_max):
        i = int(b) - 1
        if not ok[i]:
            continue
        decode_rate = b / (float(step[i]) / 1e3 * w.answer_steps * tp)  # requests/s per decode GPU
        budget = w.ttft_p99_ms - pre - transfer - float(step[i])
        cap, share, servers = float(budget >= 0), 0.0, 1
        prefill_rate = math.inf
        if pre > 0:
            for _ in range(3):  # the pool split sets the server count, which sets the cap
                prefill_rate = 1e3 / (pre_mean * tp)  # requests/s per prefill GPU at full load
                share = (
                    decode_rate / (prefill_rate + decode_rate) if cap == 0 else decode_rate / (cap * prefill_rate + decode_rate)
                )
                servers = max(1, round(share * gpus / tp))
                cap = utilisation_cap(servers, pre_mean, budget, cs2=service_cv2(w, eff))
        if cap <= 0:
            continue
        effective_prefill = cap * prefill_rate
        rate = gpus * decode_rate if pre == 0 else gpus * effective_prefill * decode_rate / (effective_prefill + decode_rate)
        capacity = (
            gpus * w.output_tokens * (decode_rate if pre == 0 else prefill_rate * decode_rate / (prefill_rate + decode_rate))
        )
        good = rate * w.output_tokens
        if best is None or good > best.goodput_tok_s:
            queue = queue_wait_p99_ms(servers, pre_mean, cap, cs2=service_cv2(w, eff)) if pre > 0 else 0.0
            best = Candidate(
                goodput_tok_s=good,
                capacity_tok_s=capacity,
                batch=int(b),
                tp=tp,
                replicas=gpus // tp,
                itl_ms=float(per_token[i]),
                prefill_ms=pre,
                kv_transfer_ms=transfer,
                queue_p99_ms=queue,
                first_decode_ms=float(step[i]),
                utilisation_cap=cap,
                prefill_gpu_share=share,
                chunk_tokens=0,
                mixed_step_share=0.0,
                limit="",
            )
    if best is None:
        return None
    return replace(best, limit=_limit(ok, itl_ok, best.batch, b_max, b_max == eff.max_batch), attention_dp=attention_dp)
