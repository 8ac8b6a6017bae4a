"""Serving physics per node: goodput (tokens inside the p99 TTFT / ITL objective) of one model on one accelerator.

The model (DESIGN.md section 3):

- **Decode step** at batch ``B`` on a tensor-parallel replica of ``tp`` GPUs::

      step = max(bytes_read / (η_bw · BW), flops / (η_c · F)) + t_comm + t_ovh

  ``bytes_read`` = weights touched + ``B · ctx · kv_bytes``; ``flops`` = ``2 · P_active`` per token plus
  attention; ``t_comm`` = two all-reduces per layer over the scale-up fabric; ITL = step time.
- **Prefill** of ``N`` prompt tokens: ``(2 · P_active · N + attention) / (η_c · F)``; a prefix-cache hit
  rate ``h`` removes ``h · N`` tokens.
- **Colocated** (chunked prefill fused into decode steps): every step also carries the prefill tokens of
  the requests that replace finished ones (``B · N_in / N_out`` per step), so prefill steals step time.
- **Disaggregated**: prefill and decode pools sized from their loads; the prompt's KV crosses the
  scale-out NIC and its transfer time is added to TTFT.
- **Tail**: prompts queue for prefill (M/G/c, Allen–Cunneen); the highest utilisation whose p99 wait
  fits the TTFT budget caps goodput (:mod:`placement.serving.queueing`).

Goodput = utilisation cap × capacity at the best batch and tensor-parallel degree that meet every objective.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement.economics import cost_per_million_tokens_usd
from placement.economics import tokens_per_s_per_mw as _yield_per_mw
from placement.serving.hardware import (
    AcceleratorSpec,
    ModelSpec,
    get_accelerator,
    get_model,
    kv_bytes_per_token,
    weight_bytes,
    weight_bytes_read,
)
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap

ACTIVATION_BYTES = 2.0  # all-reduce payloads are BF16 activations


@dataclass(frozen=True)
class ServingEfficiency:
    """Achieved fractions of peak and fixed costs; calibrated on two MLPerf rows only.

    Parameters
    ----------
    hbm : float
        Achieved fraction of peak HBM bandwidth (η_bw; 0.83–0.95 measured).
    tensor : float, optional
        Achieved fraction of dense tensor throughput in decode and prefill GEMMs (η_c, MFU); ``None``
        takes the accelerator's catalog ``gemm_efficiency`` (NVIDIA 0.65, the middle of DESIGN.md's band).
    step_overhead_ms : float
        Per-step fixed cost: scheduling, sampling, kernel launches. [ms]
    allreduce_latency_us : float
        Fixed latency of one all-reduce on the scale-up fabric. [µs]
    scale_up_efficiency : float
        Achieved fraction of scale-up bandwidth in all-reduce.
    activation_reserve : float
        Fraction of HBM kept for activations, workspace and fragmentation.
    max_batch : int
        Largest decode batch an engine runs per replica.
    service_cv2 : float
        Squared coefficient of variation of prefill service time (1: exponential; prompts vary).
    """

    hbm: float = 0.90
    tensor: float | None = None
    step_overhead_ms: float = 4.0
    allreduce_latency_us: float = 8.0
    scale_up_efficiency: float = 0.80
    activation_reserve: float = 0.10
    max_batch: int = 4096
    service_cv2: float = 1.0


#: Calibrated on the two DESIGN.md MLPerf rows only (``benchmarks/validate_serving.py --fit``): η_bw 0.90 and
#: η_c 0.65 (NVIDIA) held at the middle of the measured bands; the step overhead (4 ms) was fitted together with
#: the MLPerf mean prompt below. Both rows are compute-bound, so they do not constrain η_bw.
CALIBRATED = ServingEfficiency()

#: Mean prompt over the longest prompt a class sends. ``input_tokens`` is the *longest* prompt (the cap: MLPerf's
#: OpenOrca prompts run "up to ~1K tokens"); with lengths spread evenly below it the mean is half. Throughput, KV
#: occupancy and the queue's mean service time follow the mean; the service-time spread (``service_cv2``) covers
#: the rest. At a 1,024-token *mean* the DGX H100 server row (21,606 tok/s) would need 85 % of dense FP8 peak for
#: the GEMMs alone, more than 100 % with all-reduce, step overhead and headroom: the rows imply a mean near half
#: the cap (a free fit on both rows gives 530 of 1,024). Pass 1.0 when ``input_tokens`` is already the mean.
PROMPT_MEAN_FRACTION = 0.5
#: Longest prompt of the MLPerf llama2-70b set (OpenOrca, capped at 1,024 tokens). [tokens]
MLPERF_LLAMA2_INPUT_TOKENS = 1024
#: Mean answer length of the MLPerf llama2-70b set (reference README: 294.45 tokens per sample; DESIGN.md: ~290).
MLPERF_LLAMA2_OUTPUT_TOKENS = 290


@dataclass(frozen=True)
class StepTime:
    """One forward step of a replica, by component. [ms]"""

    memory_ms: float
    compute_ms: float
    comm_ms: float
    overhead_ms: float

    @property
    def total_ms(self) -> float:
        """Roofline step: ``max(memory, compute) + comm + overhead``. [ms]"""
        return max(self.memory_ms, self.compute_ms) + self.comm_ms + self.overhead_ms


@dataclass(frozen=True)
class ServingResult:
    """Goodput of one node (the ``gpus`` requested) inside the objective, and how it was reached.

    Attributes
    ----------
    goodput_tok_s : float
        Output tokens per second delivered inside p99 TTFT and p99 ITL. [tokens/s]
    capacity_tok_s : float
        Output tokens per second at the chosen batch before tail headroom. [tokens/s]
    batch : int
        Decode sequences per replica.
    tp, replicas : int
        Tensor-parallel degree and number of replicas (decode replicas when disaggregated).
    itl_ms : float
        p99 inter-token latency = decode step time. [ms]
    ttft_ms : float
        p99 time to first token: queue + prefill + KV transfer + first decode step. [ms]
    prefill_ms, kv_transfer_ms, queue_p99_ms, first_decode_ms : float
        Components of ``ttft_ms``. [ms]
    utilisation_cap : float
        Load / capacity that keeps p99 TTFT inside the objective (headroom = 1 − cap).
    prefill_gpu_share : float
        Share of the node's GPUs in the prefill pool (disaggregated), 0 when colocated.
    node_kw : float
        IT power of the node, pro rata to ``gpus``. [kW]
    pue : float
        Facility PUE applied to ``tokens_per_s_per_mw`` (1.0: node-level figure).
    tokens_per_s_per_mw : float
        Goodput per MW of facility power (node kW × PUE). [tokens/s/MW]
    cost_per_million_goodput_tokens_usd : float or None
        With a node cost. [USD/Mtok]
    limit : str
        What stopped the batch growing: ``itl``, ``kv_capacity``, ``tok_s_per_user``, ``ttft``,
        ``max_batch``, or why nothing fits.
    """

    model: str
    accelerator: str
    precision: str
    gpus: int
    disaggregated: bool
    goodput_tok_s: float
    capacity_tok_s: float
    batch: int
    tp: int
    replicas: int
    itl_ms: float
    ttft_ms: float
    prefill_ms: float
    kv_transfer_ms: float
    queue_p99_ms: float
    first_decode_ms: float
    utilisation_cap: float
    prefill_gpu_share: float
    node_kw: float
    pue: float
    tokens_per_s_per_mw: float
    cost_per_million_goodput_tokens_usd: float | None
    limit: str


# --- formulas -------------------------------------------------------------------------------------


def kv_copies(model: ModelSpec, tp: int) -> float:
    """How many times a replica stores each token's KV: GQA shards heads (replicated beyond kv_heads), MLA replicates."""
    if model.attention == "mla":
        return float(tp)
    return max(1.0, tp / model.kv_heads)


def achieved_tflops(accel: AcceleratorSpec, precision: str, eff: ServingEfficiency) -> float:
    """Achieved tensor throughput of one GPU: ``η_c · F``. [TFLOP/s]"""
    share = accel.gemm_efficiency if eff.tensor is None else eff.tensor
    return share * accel.tflops[precision]


def prefill_flops(model: ModelSpec, tokens: float, cached_tokens: float = 0.0) -> float:
    """FLOPs to prefill a prompt, the cached prefix skipped.

    ``2 · P_active · (N − c)`` for the GEMMs plus causal attention ``2 · L · H · d · (N² − c²)``.

    Parameters
    ----------
    model : ModelSpec
        Model shape.
    tokens : float
        Prompt length ``N``. [tokens]
    cached_tokens : float
        Prefix already in the KV cache ``c``. [tokens]

    Returns
    -------
    float
        Work. [FLOP]
    """
    return 2.0 * model.params_active_b * 1e9 * (tokens - cached_tokens) + prefill_attention_flops(model, tokens, cached_tokens)


def prefill_attention_flops(model: ModelSpec, tokens: float, cached_tokens: float = 0.0) -> float:
    """Causal attention FLOPs of the new prompt tokens: ``2 · L · H · d · (N² − c²)``. [FLOP]"""
    return 2.0 * model.layers * model.q_heads * model.attention_dim * (tokens**2 - cached_tokens**2)


def decode_attention_flops(model: ModelSpec, context_tokens: float) -> float:
    """Attention FLOPs of one decode token over ``context_tokens`` of KV (QKᵀ and AV). [FLOP]"""
    return 4.0 * model.layers * model.q_heads * model.attention_dim * context_tokens


def allreduce_ms(
    accel: AcceleratorSpec, tp: int, tokens: NDArray[np.float64], hidden: int, layers: int, eff: ServingEfficiency
) -> NDArray[np.float64]:
    """Tensor-parallel all-reduce time of one step: two per layer, ring over the scale-up fabric.

    Parameters
    ----------
    accel : AcceleratorSpec
        Supplies scale-up bandwidth per GPU.
    tp : int
        Tensor-parallel degree (0 ms at 1).
    tokens : numpy.ndarray
        Tokens in each step.
    hidden : int
        Hidden size; each all-reduce moves ``tokens · hidden`` BF16 values.
    layers : int
        Transformer layers.
    eff : ServingEfficiency
        Latency per all-reduce and achieved bandwidth.

    Returns
    -------
    numpy.ndarray
        Communication time per step. [ms]
    """
    tokens = np.asarray(tokens, dtype=float)
    if tp <= 1:
        return np.zeros_like(tokens)
    payload = tokens * hidden * ACTIVATION_BYTES
    ring_bytes = 2.0 * (tp - 1) / tp * payload
    per_call_s = eff.allreduce_latency_us * 1e-6 + ring_bytes / (eff.scale_up_efficiency * accel.scale_up_gb_s * 1e9)
    return np.asarray(2.0 * layers * per_call_s * 1e3)


def _step_arrays(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    batch: NDArray[np.float64],
    context_tokens: float,
    prefill_tokens: NDArray[np.float64],
    prefill_attention_flop: NDArray[np.float64],
    eff: ServingEfficiency,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Memory, compute and communication time of steps at each batch (vectorised). [ms]"""
    tokens = batch + prefill_tokens
    kv_read = batch * context_tokens * kv_bytes_per_token(model, precision) * kv_copies(model, tp)
    memory_ms = (weight_bytes_read(model, precision, tokens) + kv_read) / tp / (eff.hbm * accel.hbm_tb_s * 1e12) * 1e3
    flops = 2.0 * model.params_active_b * 1e9 * tokens + batch * decode_attention_flops(model, context_tokens)
    compute_ms = (flops + prefill_attention_flop) / (tp * achieved_tflops(accel, precision, eff) * 1e12) * 1e3
    comm_ms = allreduce_ms(accel, tp, tokens, model.hidden, model.layers, eff)
    return np.asarray(memory_ms), np.asarray(compute_ms), comm_ms


def decode_step(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    tp: int,
    batch: float,
    context_tokens: float,
    prefill_tokens: float = 0.0,
    prefill_attention_flop: float = 0.0,
    eff: ServingEfficiency = CALIBRATED,
) -> StepTime:
    """Time of one decode step of a replica, optionally with fused (chunked) prefill tokens.

    Parameters
    ----------
    model, accel : ModelSpec, AcceleratorSpec
        What runs where.
    precision : str
        Weight precision (``bf16``, ``fp8``, ``fp4``); KV follows it (FP8 for FP4).
    tp : int
        GPUs in the replica (tensor parallel).
    batch : float
        Sequences decoding. [sequences]
    context_tokens : float
        Mean KV length each sequence reads. [tokens]
    prefill_tokens : float
        Prompt tokens prefilled in the same step (colocated). [tokens]
    prefill_attention_flop : float
        Attention work of those prompt tokens. [FLOP]
    eff : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    StepTime
        Components; ``.total_ms`` is the ITL. [ms]
    """
    memory, compute, comm = _step_arrays(
        model,
        accel,
        precision,
        tp,
        np.array([float(batch)]),
        context_tokens,
        np.array([float(prefill_tokens)]),
        np.array([float(prefill_attention_flop)]),
        eff,
    )
    return StepTime(float(memory[0]), float(compute[0]), float(comm[0]), eff.step_overhead_ms)


def prefill_ms(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    tp: int,
    tokens: float,
    prefix_cache_hit_rate: float = 0.0,
    eff: ServingEfficiency = CALIBRATED,
) -> float:
    """Time to prefill one prompt alone on a replica (disaggregated prefill, or an idle node).

    ``max((2 · P_active · (1 − h) · N + attention) / (η_c · F), weights / (η_bw · BW)) + t_comm + t_ovh``.

    Parameters
    ----------
    model, accel, precision, tp
        As in :func:`decode_step`.
    tokens : float
        Prompt length ``N``. [tokens]
    prefix_cache_hit_rate : float
        Share ``h`` of the prompt already cached; ``h · N`` tokens are skipped.
    eff : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    float
        Prefill time; 0 when the whole prompt is cached. [ms]
    """
    cached = prefix_cache_hit_rate * tokens
    new = tokens - cached
    if new <= 0:
        return 0.0
    compute = prefill_flops(model, tokens, cached) / (tp * achieved_tflops(accel, precision, eff) * 1e12) * 1e3
    memory = float(weight_bytes_read(model, precision, np.array([new]))[0]) / tp / (eff.hbm * accel.hbm_tb_s * 1e12) * 1e3
    comm = float(allreduce_ms(accel, tp, np.array([new]), model.hidden, model.layers, eff)[0])
    return max(compute, memory) + comm + eff.step_overhead_ms


def kv_transfer_ms(tokens: float, kv_bytes_per_token: float, nic_gbit_s: float, *, nics: int = 1) -> float:
    """Time to move a prompt's KV cache from the prefill pool to the decode pool over the scale-out NIC.

    Parameters
    ----------
    tokens : float
        Prompt tokens whose KV moves. [tokens]
    kv_bytes_per_token : float
        KV per token, all layers. [bytes]
    nic_gbit_s : float
        NIC line rate per GPU (400 or 800). [Gbit/s]
    nics : int
        NICs sending shards in parallel (the prefill replica's GPUs).

    Returns
    -------
    float
        Transfer time. [ms]
    """
    return tokens * kv_bytes_per_token / (nics * nic_gbit_s * 1e9 / 8.0) * 1e3


def kv_capacity_bytes(model: ModelSpec, accel: AcceleratorSpec, precision: str, tp: int, eff: ServingEfficiency) -> float:
    """HBM a replica has for KV after weights and the activation reserve; negative if weights do not fit. [bytes]"""
    return tp * accel.hbm_gb * 1e9 * (1.0 - eff.activation_reserve) - weight_bytes(model, precision)


# --- node search ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Workload:
    input_tokens: float
    output_tokens: float
    ttft_p99_ms: float
    itl_p99_ms: float
    min_tok_s_per_user: float
    hit_rate: float

    @property
    def new_tokens(self) -> float:
        return self.input_tokens * (1.0 - self.hit_rate)

    @property
    def context_tokens(self) -> float:
        """Mean KV length a decoding sequence reads: prompt plus half the answer. [tokens]"""
        return self.input_tokens + self.output_tokens / 2.0


@dataclass(frozen=True)
class _Candidate:
    goodput_tok_s: float
    capacity_tok_s: float
    batch: int
    tp: int
    replicas: int
    itl_ms: float
    prefill_ms: float
    kv_transfer_ms: float
    queue_p99_ms: float
    utilisation_cap: float
    prefill_gpu_share: float
    limit: str


def tp_options(accel: AcceleratorSpec, gpus: int) -> list[int]:
    """Tensor-parallel degrees a node can run: powers of two inside one scale-up domain that divide ``gpus``."""
    return [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(gpus, accel.scale_up_gpus) and gpus % t == 0]


def _batch_grid(b_max: int) -> NDArray[np.float64]:
    """Batches to evaluate: every batch up to 64, then ~2 % steps, always ending at ``b_max``."""
    grid = np.unique(np.concatenate([np.arange(1, min(b_max, 64) + 1), np.geomspace(1, b_max, 400).round(), [b_max]]))
    return np.asarray(grid[(grid >= 1) & (grid <= b_max)], dtype=float)


def _max_batch(model: ModelSpec, accel: AcceleratorSpec, precision: str, tp: int, w: _Workload, eff: ServingEfficiency) -> int:
    per_seq = kv_bytes_per_token(model, precision) * kv_copies(model, tp) * w.context_tokens
    free = kv_capacity_bytes(model, accel, precision, tp, eff)
    return max(0, min(int(free // per_seq), eff.max_batch)) if free > 0 else 0


def _limit(ok: NDArray[np.bool_], itl_ok: NDArray[np.bool_], batch: int, b_max: int, b_kv_free: bool) -> str:
    if batch >= b_max:
        return "max_batch" if b_kv_free else "kv_capacity"
    if not ok[batch]:  # the next batch (index batch is batch + 1) breaks an objective
        return "itl" if not itl_ok[batch] else "tok_s_per_user"
    return "ttft"


def _colocated(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, gpus: int, tp: int, w: _Workload, eff: ServingEfficiency
) -> _Candidate | None:
    b_max = _max_batch(model, accel, precision, tp, w, eff)
    if b_max < 1:
        return None
    replicas = gpus // tp
    batch = np.arange(1, b_max + 1, dtype=float)
    prefill_tok = batch * w.new_tokens / w.output_tokens
    attn = batch / w.output_tokens * prefill_attention_flops(model, w.input_tokens, w.input_tokens - w.new_tokens)
    memory, compute, comm = _step_arrays(model, accel, precision, tp, batch, w.context_tokens, prefill_tok, attn, eff)
    step = np.maximum(memory, compute) + comm + eff.step_overhead_ms
    itl_ok = step <= w.itl_p99_ms
    ok = itl_ok & (1e3 / step >= w.min_tok_s_per_user)
    best: _Candidate | None = None
    for b in _batch_grid(b_max):
        i = int(b) - 1
        if not ok[i]:
            continue
        # A prompt gets the step's prefill budget (B·N_new/N_out tokens); several prompts share a step when B > N_out.
        service = float(step[i]) * max(1.0, w.output_tokens / b)
        servers = replicas * max(1, int(b // w.output_tokens))
        pre = service if w.new_tokens > 0 else 0.0
        budget = w.ttft_p99_ms - pre - float(step[i])
        cap = utilisation_cap(servers, service, budget, cs2=eff.service_cv2) if w.new_tokens > 0 else float(budget >= 0)
        capacity = replicas * b / float(step[i]) * 1e3
        if best is None or cap * capacity > best.goodput_tok_s:
            queue = queue_wait_p99_ms(servers, service, cap, cs2=eff.service_cv2) if cap > 0 else math.inf
            best = _Candidate(cap * capacity, capacity, int(b), tp, replicas, float(step[i]), pre, 0.0, queue, cap, 0.0, "")
    if best is None:
        return None
    return replace(best, limit=_limit(ok, itl_ok, best.batch, b_max, b_max == eff.max_batch))


def _disaggregated(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, gpus: int, tp: int, w: _Workload, eff: ServingEfficiency
) -> _Candidate | None:
    b_max = _max_batch(model, accel, precision, tp, w, eff)
    if b_max < 1:
        return None
    batch = np.arange(1, b_max + 1, dtype=float)
    zeros = np.zeros_like(batch)
    memory, compute, comm = _step_arrays(model, accel, precision, tp, batch, w.context_tokens, zeros, zeros, eff)
    step = np.maximum(memory, compute) + comm + eff.step_overhead_ms
    itl_ok = step <= w.itl_p99_ms
    ok = itl_ok & (1e3 / step >= w.min_tok_s_per_user)
    pre = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    per_nic = kv_bytes_per_token(model, precision) * kv_copies(model, tp) / tp
    transfer = kv_transfer_ms(w.input_tokens, per_nic, accel.scale_out_gbit_s) if gpus > 1 else 0.0
    best: _Candidate | None = None
    for b in _batch_grid(b_max):
        i = int(b) - 1
        if not ok[i]:
            continue
        decode_rate = b / (float(step[i]) / 1e3 * w.output_tokens * tp)  # requests/s per decode GPU
        budget = w.ttft_p99_ms - pre - transfer - float(step[i])
        cap, share, servers = float(budget >= 0), 0.0, 1
        prefill_rate = math.inf
        if pre > 0:
            for _ in range(3):  # the pool split sets the server count, which sets the cap
                prefill_rate = 1e3 / (pre * tp)  # requests/s per prefill GPU at full load
                share = (
                    decode_rate / (prefill_rate + decode_rate) if cap == 0 else decode_rate / (cap * prefill_rate + decode_rate)
                )
                servers = max(1, round(share * gpus / tp))
                cap = utilisation_cap(servers, pre, budget, cs2=eff.service_cv2)
        if cap <= 0:
            continue
        effective_prefill = cap * prefill_rate
        rate = gpus * decode_rate if pre == 0 else gpus * effective_prefill * decode_rate / (effective_prefill + decode_rate)
        capacity = (
            gpus * w.output_tokens * (decode_rate if pre == 0 else prefill_rate * decode_rate / (prefill_rate + decode_rate))
        )
        good = rate * w.output_tokens
        if best is None or good > best.goodput_tok_s:
            queue = queue_wait_p99_ms(servers, pre, cap, cs2=eff.service_cv2) if pre > 0 else 0.0
            best = _Candidate(good, capacity, int(b), tp, gpus // tp, float(step[i]), pre, transfer, queue, cap, share, "")
    if best is None:
        return None
    return replace(best, limit=_limit(ok, itl_ok, best.batch, b_max, b_max == eff.max_batch))


def _why_nothing(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, gpus: int, w: _Workload, eff: ServingEfficiency
) -> tuple[str, float]:
    """Why no batch meets the objective, and the batch-1 ITL of the fastest replica. [ms]"""
    fits = [t for t in tp_options(accel, gpus) if _max_batch(model, accel, precision, t, w, eff) >= 1]
    if not fits:
        return "weights and one sequence's KV do not fit in the HBM of a scale-up domain", math.nan
    one = min(
        decode_step(model, accel, precision, tp=t, batch=1, context_tokens=w.context_tokens, eff=eff).total_ms for t in fits
    )
    if one > w.itl_p99_ms:
        return "itl objective is below the batch-1 step time", one
    if 1e3 / one < w.min_tok_s_per_user:
        return "tok/s per user objective is above batch-1 speed", one
    return "ttft objective cannot be met (prefill, transfer and first step exceed it)", one


# --- public entry points --------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingRequest:
    """What one node serves and the objective it must meet: the inputs of :func:`serve`.

    Parameters
    ----------
    model, accelerator : str
        Catalog ids (``data/serving/models.csv``, ``accelerators.csv``).
    gpus : int
        GPUs in the node (tensor parallelism stays inside one scale-up domain; the rest are replicas).
    precision : str
        Weight precision: ``bf16``, ``fp8`` or ``fp4`` (KV cache BF16, FP8, FP8).
    input_tokens, output_tokens : int
        Longest prompt and mean answer length per request. [tokens]
    ttft_p99_ms, itl_p99_ms : float
        The objective. [ms]
    prefix_cache_hit_rate : float
        Share of prompt tokens served from the prefix cache.
    disaggregated : bool
        Separate prefill and decode pools (KV crosses the scale-out NIC).
    min_tok_s_per_user : float
        Interactivity floor: decode speed per user. [tokens/s]
    prompt_mean_fraction : float
        Mean prompt over ``input_tokens`` (see :data:`PROMPT_MEAN_FRACTION`); 1.0 when it is the mean.
    node_cost_usd_h : float, optional
        All-in cost of the node; gives ``cost_per_million_goodput_tokens_usd``. [USD/h]
    pue : float
        Facility PUE for ``tokens_per_s_per_mw``; 1.0 gives the node-level (IT power) figure.
    """

    model: str
    accelerator: str
    gpus: int
    precision: str
    input_tokens: int
    output_tokens: int
    ttft_p99_ms: float
    itl_p99_ms: float
    prefix_cache_hit_rate: float = 0.0
    disaggregated: bool = False
    min_tok_s_per_user: float = 0.0
    prompt_mean_fraction: float = PROMPT_MEAN_FRACTION
    node_cost_usd_h: float | None = None
    pue: float = 1.0

    @property
    def label(self) -> str:
        """``llama-2-70b on 8 x h200 (fp8)``."""
        return f"{self.model} on {self.gpus} x {self.accelerator} ({self.precision})"


def _workload(request: ServingRequest) -> _Workload:
    """The request's mean workload: the mean prompt is ``prompt_mean_fraction`` of the longest."""
    mean_input = max(1.0, float(request.input_tokens) * request.prompt_mean_fraction)
    r = request
    return _Workload(
        mean_input, float(r.output_tokens), r.ttft_p99_ms, r.itl_p99_ms, r.min_tok_s_per_user, r.prefix_cache_hit_rate
    )


def _precision_problems(request: ServingRequest, m: ModelSpec | None, a: AcceleratorSpec | None) -> list[Problem]:
    source, precision = "goodput request", request.precision
    problems = []
    if m is not None and precision not in m.precisions:
        problems.append(
            Problem(source, m.id, "precision", f"{precision!r} not offered for this model", f"use one of {list(m.precisions)}")
        )
    if a is not None and precision not in a.tflops:
        problems.append(
            Problem(source, a.id, "precision", f"{precision!r} not supported by the silicon", f"use one of {list(a.tflops)}")
        )
    return problems


def _number_problems(request: ServingRequest, w: _Workload) -> list[Problem]:
    r = request
    checks = [
        ("gpus", r.gpus >= 1 and float(r.gpus).is_integer(), f"must be a whole number >= 1, got {r.gpus}"),
        ("input_tokens", w.input_tokens >= 1, f"must be >= 1, got {w.input_tokens:g}"),
        ("output_tokens", w.output_tokens >= 1, f"must be >= 1, got {w.output_tokens:g}"),
        ("ttft_p99_ms", w.ttft_p99_ms > 0, f"must be > 0, got {w.ttft_p99_ms:g}"),
        ("itl_p99_ms", w.itl_p99_ms > 0, f"must be > 0, got {w.itl_p99_ms:g}"),
        ("prefix_cache_hit_rate", 0.0 <= w.hit_rate <= 1.0, f"must be between 0 and 1, got {w.hit_rate:g}"),
        ("min_tok_s_per_user", w.min_tok_s_per_user >= 0, f"must be >= 0, got {w.min_tok_s_per_user:g}"),
        ("node_cost_usd_h", r.node_cost_usd_h is None or r.node_cost_usd_h >= 0, f"must be >= 0, got {r.node_cost_usd_h}"),
        ("pue", r.pue >= 1.0, f"must be >= 1, got {r.pue:g}"),
    ]
    problems = [Problem("goodput request", "", field, rule, "give a valid value") for field, good, rule in checks if not good]
    if not 0.0 < r.prompt_mean_fraction <= 1.0:
        problems.append(
            Problem(
                "goodput request",
                "",
                "prompt_mean_fraction",
                f"must be in (0, 1], got {r.prompt_mean_fraction:g}",
                "use 0.5 for prompts spread up to input_tokens, 1.0 for a fixed length",
            )
        )
    return problems


def _check_request(request: ServingRequest, w: _Workload) -> tuple[ModelSpec, AcceleratorSpec]:
    """The catalog entries of the request; every problem with it reported together."""
    problems: list[Problem] = []
    m = a = None
    try:
        m = get_model(request.model)
    except InputError as exc:
        problems += exc.problems
    try:
        a = get_accelerator(request.accelerator)
    except InputError as exc:
        problems += exc.problems
    problems += _precision_problems(request, m, a) + _number_problems(request, w)
    if problems:
        raise InputError(problems)
    assert m is not None and a is not None
    return m, a


def _best_candidate(
    m: ModelSpec, a: AcceleratorSpec, request: ServingRequest, w: _Workload, eff: ServingEfficiency
) -> _Candidate:
    """The best batch and tensor-parallel degree; a zero-goodput candidate saying why when nothing fits."""
    search = _disaggregated if request.disaggregated else _colocated
    found = [
        c for t in tp_options(a, request.gpus) if (c := search(m, a, request.precision, request.gpus, t, w, eff)) is not None
    ]
    best = max(found, key=lambda c: c.goodput_tok_s, default=None)
    if best is not None and best.goodput_tok_s > 0:
        return best
    reason, one = _why_nothing(m, a, request.precision, request.gpus, w, eff)
    return _Candidate(0.0, 0.0, 0, 0, 0, one, math.nan, math.nan, math.nan, 0.0, 0.0, reason)


def _result(request: ServingRequest, a: AcceleratorSpec, best: _Candidate) -> ServingResult:
    """The node's figures: TTFT from its parts, power, yield per MW and, with a node cost, $/M goodput."""
    node_kw = a.node_kw * request.gpus / a.gpus_per_node
    cost = request.node_cost_usd_h
    cost_per_million = None if cost is None else float(cost_per_million_tokens_usd(cost, best.goodput_tok_s))
    return ServingResult(
        model=request.model,
        accelerator=request.accelerator,
        precision=request.precision,
        gpus=request.gpus,
        disaggregated=request.disaggregated,
        goodput_tok_s=best.goodput_tok_s,
        capacity_tok_s=best.capacity_tok_s,
        batch=best.batch,
        tp=best.tp,
        replicas=best.replicas,
        itl_ms=best.itl_ms,
        ttft_ms=best.queue_p99_ms + best.prefill_ms + best.kv_transfer_ms + best.itl_ms,
        prefill_ms=best.prefill_ms,
        kv_transfer_ms=best.kv_transfer_ms,
        queue_p99_ms=best.queue_p99_ms,
        first_decode_ms=best.itl_ms,
        utilisation_cap=best.utilisation_cap,
        prefill_gpu_share=best.prefill_gpu_share,
        node_kw=node_kw,
        pue=request.pue,
        tokens_per_s_per_mw=float(_yield_per_mw(best.goodput_tok_s, node_kw * request.pue / 1e3)),
        cost_per_million_goodput_tokens_usd=cost_per_million,
        limit=best.limit,
    )


def serve(request: ServingRequest, *, efficiency: ServingEfficiency = CALIBRATED) -> ServingResult:
    """Goodput of one node inside a p99 TTFT / p99 ITL objective, at the best batch and tensor-parallel degree.

    Parameters
    ----------
    request : ServingRequest
        Model, node, workload and objective.
    efficiency : ServingEfficiency
        Achieved efficiencies; defaults to the calibrated set.

    Returns
    -------
    ServingResult
        Goodput and its components; goodput 0 (with ``limit`` saying why) when nothing meets the objective.

    Raises
    ------
    InputError
        Unknown model or accelerator (with the known ids), unsupported precision, or a bad number.
    """
    w = _workload(request)
    m, a = _check_request(request, w)
    return _result(request, a, _best_candidate(m, a, request, w, efficiency))


def goodput_report(request: ServingRequest) -> dict[str, Any]:
    """The CLI's ``goodput`` report: :func:`serve` as a JSON-ready dict.

    Keys are the fields of :class:`ServingResult` (``goodput_tok_s`` per node, ``batch``, ``itl_ms``,
    ``ttft_ms`` and its components, ``node_kw``, ``tokens_per_s_per_mw``, ...);
    ``cost_per_million_goodput_tokens_usd`` only when the request has a node cost.

    Parameters
    ----------
    request : ServingRequest
        As in :func:`serve`.

    Returns
    -------
    dict
        The report; floats that are not finite become ``None``.
    """
    result = serve(request)
    report = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(result).items()}
    if request.node_cost_usd_h is None:
        report.pop("cost_per_million_goodput_tokens_usd")
    return report


def pareto_curve(request: ServingRequest, *, efficiency: ServingEfficiency = CALIBRATED) -> pd.DataFrame:
    """Throughput per GPU against speed per user over batch sizes and tensor-parallel degrees (colocated, no tail).

    Parameters
    ----------
    request : ServingRequest
        Model, node and workload; the objective is ignored (every batch is drawn) and
        ``input_tokens`` is taken as the prompt of every request.
    efficiency : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    pandas.DataFrame
        One row per (tp, batch): ``tp``, ``batch``, ``itl_ms``, ``tok_s_per_user`` [tokens/s],
        ``tok_s_per_gpu`` [tokens/s], ``on_frontier`` (not dominated on both axes).
    """
    w = _Workload(
        float(request.input_tokens), float(request.output_tokens), math.inf, math.inf, 0.0, request.prefix_cache_hit_rate
    )
    m, a = _check_request(replace(request, ttft_p99_ms=math.inf, itl_p99_ms=math.inf), w)
    frames = [_pareto_rows(m, a, request.precision, tp, w, efficiency) for tp in tp_options(a, request.gpus)]
    curve = (
        pd.concat([f for f in frames if f is not None], ignore_index=True)
        if any(f is not None for f in frames)
        else pd.DataFrame(columns=["tp", "batch", "itl_ms", "tok_s_per_user", "tok_s_per_gpu"])
    )
    ordered = curve.sort_values("tok_s_per_user", ascending=False)
    best_gpu = ordered["tok_s_per_gpu"].cummax().shift(fill_value=-np.inf)
    curve["on_frontier"] = (ordered["tok_s_per_gpu"] > best_gpu).reindex(curve.index)
    return curve


def _pareto_rows(
    m: ModelSpec, a: AcceleratorSpec, precision: str, tp: int, w: _Workload, eff: ServingEfficiency
) -> pd.DataFrame | None:
    """Step time and throughput of every batch on the grid at one tensor-parallel degree (None if nothing fits)."""
    b_max = _max_batch(m, a, precision, tp, w, eff)
    if b_max < 1:
        return None
    batch = _batch_grid(b_max)
    attn = batch / w.output_tokens * prefill_attention_flops(m, w.input_tokens, w.input_tokens - w.new_tokens)
    memory, compute, comm = _step_arrays(
        m, a, precision, tp, batch, w.context_tokens, batch * w.new_tokens / w.output_tokens, attn, eff
    )
    step = np.maximum(memory, compute) + comm + eff.step_overhead_ms
    return pd.DataFrame(
        {
            "tp": tp,
            "batch": batch.astype(int),
            "itl_ms": step,
            "tok_s_per_user": 1e3 / step,
            "tok_s_per_gpu": batch / step * 1e3 / tp,
        }
    )


def plot_pareto(curve: pd.DataFrame, path: str | Path, *, title: str | None = None, itl_p99_ms: float | None = None) -> Path:
    """Write the Pareto curve as a PNG (matplotlib, Agg backend).

    Parameters
    ----------
    curve : pandas.DataFrame
        Output of :func:`pareto_curve`.
    path : str or Path
        PNG to write.
    title : str, optional
        Figure title.
    itl_p99_ms : float, optional
        Draws the speed-per-user floor ``1000 / itl_p99_ms`` of an ITL objective. [ms]

    Returns
    -------
    Path
        The file written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for tp, group in curve.groupby("tp"):
        ax.plot(group["tok_s_per_user"], group["tok_s_per_gpu"], lw=1, alpha=0.6, label=f"TP{tp}")
    front = curve[curve["on_frontier"].astype(bool)].sort_values("tok_s_per_user")
    ax.plot(front["tok_s_per_user"], front["tok_s_per_gpu"], "k-", lw=2, label="frontier")
    if itl_p99_ms:
        ax.axvline(1e3 / itl_p99_ms, color="grey", ls="--", label=f"ITL {itl_p99_ms:g} ms")
    ax.set_xscale("log")
    ax.set_xlabel("tokens/s per user")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(title or "throughput per GPU vs interactivity")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    out = Path(path)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
