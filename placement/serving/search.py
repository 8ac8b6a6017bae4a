"""The node search: the batch, tensor-parallel degree and prefill chunk budget that give the most goodput.

For one model on one accelerator and a :class:`~placement.serving.workload.Workload` (prompt and answer lengths,
the p99 objective), every tensor-parallel degree the node allows is searched, colocated or disaggregated
(DESIGN.md section 3):

- **Colocated** (chunked prefill): the prompts of the requests that replace finished ones need
  ``B · N_in / N_out`` prefill tokens per step on average; a step carries a chunk of at most ``K`` of them,
  so a share ``f = B · N_in / (N_out · K)`` of the work is chunk work and the mean step (throughput) is
  ``f · mixed + (1 − f) · pure``. The ITL tail counts *steps*, not work: a prompt of ``L`` new tokens fills
  ``ceil(L / K)`` steps (a short one takes a step of its own), so ``B / N_out · E[ceil(L / K)]`` of the steps
  carry a chunk, of the sizes the prompt mix (a clipped lognormal, :mod:`placement.serving.lengths`) gives.
  The p99 ITL is the pure step at the p99 batch while at most 1 % of steps carry a chunk, and above it the
  chunk step whose chunk 1 % of all steps exceed; it rises with load, and goodput is capped at the load where
  it meets the objective. The longest prompt takes ``ceil(L_max / K)`` steps (TTFT), so ``K`` trades TTFT
  against ITL and is chosen with the batch to maximise goodput.
- **Disaggregated**: prefill and decode pools sized from their loads; the prompt's KV crosses the
  scale-out NIC and its transfer time is added to TTFT.
- **Tail**: prompts queue for prefill (M/G/c, Allen–Cunneen); the highest utilisation whose p99 wait
  fits the TTFT budget caps goodput (:mod:`placement.serving.queueing`).

Goodput = utilisation cap × capacity at the best batch and tensor-parallel degree that meet every objective
(:func:`best_candidate`). Each mode has its module, :mod:`placement.serving.colocated` and
:mod:`placement.serving.disaggregated`; their step times come from :mod:`placement.serving.steps` over the kernels
of :mod:`placement.serving.kernels`, and a :class:`~placement.serving.candidate.Candidate` is what each returns.
"""

from __future__ import annotations

import math

import numpy as np

from placement.serving.candidate import Candidate, max_batch, tp_options
from placement.serving.colocated import colocated_candidate
from placement.serving.disaggregated import disaggregated_candidate
from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec
from placement.serving.kernels import decode_step, layouts, prefill_ms
from placement.serving.workload import Workload


def _why_nothing(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, gpus: int, w: Workload, eff: ServingEfficiency
) -> tuple[str, float]:
    """Why no batch meets the objective, and the batch-1 ITL of the fastest replica. [ms]"""
    fits = [t for t in tp_options(accel, gpus) if max_batch(model, accel, precision, tp=t, workload=w, eff=eff) >= 1]
    if not fits:
        return "weights and one sequence's KV do not fit in the HBM of a scale-up domain", math.nan
    one = min(
        decode_step(model, accel, precision, tp=t, batch=1, context_tokens=w.context_tokens, eff=eff).total_ms for t in fits
    )
    if one > w.itl_p99_ms:
        return "itl objective is below the batch-1 step time", one
    if 1e3 / one < w.min_tok_s_per_user:
        return "tok/s per user objective is above batch-1 speed", one
    alone = min(
        prefill_ms(model, accel, precision, tp=t, tokens=w.input_tokens_max, prefix_cache_hit_rate=w.hit_rate, eff=eff)
        for t in fits
    )
    if alone + one > w.ttft_p99_ms:
        return "ttft objective cannot be met (prefill, transfer and first step exceed it)", one
    # the step fits alone, and so does the prompt: what fails is the step at the batch Poisson arrivals reach
    # around one sequence, or with a prompt's chunk in it
    high = float(w.p99_batch(np.array([1.0]))[0])
    return (
        f"itl objective is below the step time at the p99 batch around one sequence ({high:.1f} sequences) or with "
        "a prompt's chunk in the step",
        one,
    )


def best_candidate(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    gpus: int,
    tp: int | None,
    disaggregated: bool,
    workload: Workload,
    eff: ServingEfficiency,
    allow_dp: bool = False,
) -> Candidate:
    """The best batch and tensor-parallel degree of a node; a zero-goodput candidate saying why when nothing fits.

    Parameters
    ----------
    model, accel : ModelSpec, AcceleratorSpec
        What runs where.
    precision : str
        Weight precision.
    gpus : int
        GPUs in the node.
    tp : int, optional
        Tensor-parallel degree to use; ``None`` searches every degree of :func:`~placement.serving.candidate.tp_options`.
    disaggregated : bool
        Separate prefill and decode pools (:func:`~placement.serving.disaggregated.disaggregated_candidate`) rather than
        chunked prefill (:func:`~placement.serving.colocated.colocated_candidate`).
    workload : Workload
        Lengths and objective.
    eff : ServingEfficiency
        Achieved efficiencies.
    allow_dp : bool
        Also search data-parallel attention for a mixture of experts (:func:`~placement.serving.kernels.layouts`).

    Returns
    -------
    Candidate
        The candidate with the most goodput; goodput 0 with ``limit`` saying why when nothing meets the objective.
    """
    search = disaggregated_candidate if disaggregated else colocated_candidate
    found = [
        c
        for t in tp_options(accel, gpus)
        if tp in (None, t)
        for dp in layouts(model, t, allow_dp=allow_dp)
        if (c := search(model, accel, precision, gpus=gpus, tp=t, workload=workload, eff=eff, attention_dp=dp)) is not None
    ]
    best = max(found, key=lambda c: c.goodput_tok_s, default=None)
    if best is not None and best.goodput_tok_s > 0:
        return best
    reason, one = _why_nothing(model, accel, precision, gpus, workload, eff)
    return Candidate(
        goodput_tok_s=0.0,
        capacity_tok_s=0.0,
        batch=0,
        tp=0,
        replicas=0,
        itl_ms=one,
        prefill_ms=math.nan,
        kv_transfer_ms=math.nan,
        queue_p99_ms=math.nan,
        first_decode_ms=one,
        utilisation_cap=0.0,
        prefill_gpu_share=0.0,
        chunk_tokens=0,
        mixed_step_share=0.0,
        limit=reason,
        slot_wait_p99_ms=math.nan,
    )
