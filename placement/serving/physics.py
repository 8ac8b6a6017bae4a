"""Serving physics per node: goodput (tokens inside the p99 TTFT / ITL objective) of one model on one accelerator.

The model (DESIGN.md section 3):

- **Step** of a tensor-parallel replica of ``tp`` GPUs carrying a decode batch ``B`` (total context ``C``
  tokens of KV) and a prefill chunk of ``K`` prompt tokens (``K = 0``: a pure decode step)::

      step = max(weights / (η_bw · BW), 2 · P_active · (B + K) / (η_c · F))      linear layers
           + max(C · kv_bytes / (η_bw · BW), decode attention / (η_a · F_bf16))  decode attention
           + chunk attention / (η_a · F_bf16)                                   prefill attention
           + t_comm + t_ovh

  The linear layers and attention are separate kernels and run one after the other; ``t_comm`` = two
  all-reduces per layer over the scale-up fabric. Every η, the all-reduce latency and the step overhead
  are columns of the accelerator catalog (``data/serving/accelerators.csv``) with their sources.
- **Prefill** of ``N`` prompt tokens: ``(2 · P_active · N + attention) / (η_c · F)``; a prefix-cache hit
  rate ``h`` removes ``h · N`` tokens.
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

Goodput = utilisation cap × capacity at the best batch and tensor-parallel degree that meet every objective.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import cached_property
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
    bundled_accelerators,
    get_accelerator,
    get_model,
    kv_bytes_per_token,
    weight_bytes,
    weight_bytes_read,
)
from placement.serving.lengths import LengthDistribution
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap

ACTIVATION_BYTES = 2.0  # all-reduce payloads are BF16 activations


@dataclass(frozen=True)
class ServingEfficiency:
    """Overrides of the catalog's achieved efficiencies, and engine settings.

    Every efficiency left at ``None`` takes the accelerator's catalog column (``data/serving/accelerators.csv``,
    each with its source); set one to study a what-if or to fit.

    Parameters
    ----------
    hbm : float, optional
        Achieved fraction of peak HBM bandwidth (η_bw; catalog ``hbm_efficiency``).
    tensor : float, optional
        Achieved fraction of dense tensor throughput in GEMMs (η_c; catalog ``gemm_efficiency``).
    attention : float, optional
        Achieved fraction of dense BF16 throughput in attention kernels (η_a; catalog ``attention_efficiency``).
    step_overhead_ms : float, optional
        Per-step fixed cost: scheduling, sampling, kernel launches (catalog ``step_overhead_ms``). [ms]
    allreduce_latency_us : float, optional
        Fixed latency of one all-reduce on the scale-up fabric (catalog ``allreduce_latency_us``). [µs]
    scale_up_efficiency : float, optional
        Achieved fraction of scale-up bandwidth in all-reduce (catalog ``scale_up_efficiency``).
    activation_reserve : float
        Fraction of HBM kept for activations, workspace and fragmentation.
    max_batch : int
        Largest decode batch an engine runs per replica.
    service_cv2 : float
        Squared coefficient of variation of prefill service time (1: exponential; prompts vary).
    """

    hbm: float | None = None
    tensor: float | None = None
    attention: float | None = None
    step_overhead_ms: float | None = None
    allreduce_latency_us: float | None = None
    scale_up_efficiency: float | None = None
    activation_reserve: float = 0.10
    max_batch: int = 4096
    service_cv2: float = 1.0


#: The catalog's efficiencies as they stand (``benchmarks/validate_serving.py`` prints the fit): η_bw, η_c, η_a,
#: all-reduce latency and bandwidth share are held at cited mid-band values per accelerator family; only the
#: per-step overhead was fitted, on the DESIGN.md rows (MLPerf H100 Server / Interactive, H200 Interactive,
#: TensorRT-LLM v0.13 table), with MLPerf's measured prompt distribution.
CALIBRATED = ServingEfficiency()

#: MLPerf llama2-70b (OpenOrca, 24,576 samples; DESIGN.md section 3): mean prompt. [tokens]
MLPERF_LLAMA2_INPUT_TOKENS = 222
#: Longest prompt of that set (p99 791). [tokens]
MLPERF_LLAMA2_INPUT_TOKENS_MAX = 1021
#: Mean tokens a submission generates per sample (checker bounds 265–324; DESIGN.md: ~290). [tokens]
MLPERF_LLAMA2_OUTPUT_TOKENS = 290
#: Share of steps above which a quantile of the ITL is set by the mixed (chunk-carrying) steps: p99 → 1 %.
MIXED_STEP_TAIL_SHARE = 0.01
#: Standard-normal quantile of the p99: under Poisson arrivals the number of sequences decoding fluctuates
#: (M/G/∞: variance = mean), so the p99 step runs at ``B + z · sqrt(B)`` sequences, not at the mean ``B``.
P99_Z = 2.326
#: Loads the ITL cap is first bracketed on (then bisected).
_ITL_LOAD_GRID = 64
#: Equally likely prompt lengths the chunk-size tail is read from.
LENGTH_POINTS = 256
#: Relative margin below the load a candidate needs to beat the best found so far at which the search probes the
#: queue and the ITL before it bisects for the exact cap: far above the formulas' rounding (~1e-13 relative), so a
#: candidate pruned on a probe could not have beaten the best and the search returns what the full one does.
PRUNE_MARGIN = 1e-9
#: Prefill chunk budgets per step the search tries (tokens per step). [tokens]
CHUNK_TOKENS = (64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384)


@dataclass(frozen=True)
class StepTime:
    """One forward step of a replica, by component. [ms]

    ``memory_ms`` and ``compute_ms`` are the linear layers' weight reads and GEMMs (they overlap);
    ``attention_ms`` is decode attention (KV reads) plus the prefill chunk's attention, run after them.
    """

    memory_ms: float
    compute_ms: float
    attention_ms: float
    comm_ms: float
    overhead_ms: float

    @property
    def total_ms(self) -> float:
        """``max(memory, compute) + attention + comm + overhead``. [ms]"""
        return max(self.memory_ms, self.compute_ms) + self.attention_ms + self.comm_ms + self.overhead_ms


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
        p99 inter-token latency: the mixed (chunk-carrying) step once more than 1 % of steps carry a chunk,
        else the pure decode step. [ms]
    ttft_ms : float
        p99 time to first token of the longest prompt: queue + prefill + KV transfer + the step that emits
        the first token (colocated: the step carrying the prompt's last chunk). [ms]
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
    chunk_tokens : int
        Prefill chunk budget per step (colocated; 0 when disaggregated). [tokens]
    mixed_step_share : float
        Share of steps carrying a prefill chunk at full load (colocated).
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
    chunk_tokens: int
    mixed_step_share: float
    limit: str


# --- formulas -------------------------------------------------------------------------------------


def kv_copies(model: ModelSpec, tp: int) -> float:
    """How many times a replica stores each token's KV: GQA shards heads (replicated beyond kv_heads), MLA replicates."""
    if model.attention == "mla":
        return float(tp)
    return max(1.0, tp / model.kv_heads)


@dataclass(frozen=True)
class Achieved:
    """The efficiencies in force for one accelerator: catalog columns unless :class:`ServingEfficiency` overrides."""

    hbm: float
    tensor: float
    attention: float
    step_overhead_ms: float
    allreduce_latency_us: float
    scale_up_efficiency: float


def achieved(accel: AcceleratorSpec, eff: ServingEfficiency) -> Achieved:
    """Resolve the efficiencies for ``accel``: each ``None`` in ``eff`` takes the catalog's cited value."""

    def pick(value: float | None, default: float) -> float:
        return default if value is None else value

    return Achieved(
        hbm=pick(eff.hbm, accel.hbm_efficiency),
        tensor=pick(eff.tensor, accel.gemm_efficiency),
        attention=pick(eff.attention, accel.attention_efficiency),
        step_overhead_ms=pick(eff.step_overhead_ms, accel.step_overhead_ms),
        allreduce_latency_us=pick(eff.allreduce_latency_us, accel.allreduce_latency_us),
        scale_up_efficiency=pick(eff.scale_up_efficiency, accel.scale_up_efficiency),
    )


def achieved_tflops(accel: AcceleratorSpec, precision: str, eff: ServingEfficiency) -> float:
    """Achieved GEMM throughput of one GPU: ``η_c · F``. [TFLOP/s]"""
    return achieved(accel, eff).tensor * accel.tflops[precision]


def attention_tflops(accel: AcceleratorSpec, eff: ServingEfficiency) -> float:
    """Achieved attention-kernel throughput of one GPU: ``η_a · F_bf16`` (attention runs in BF16). [TFLOP/s]"""
    return achieved(accel, eff).attention * accel.tflops["bf16"]


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
        Supplies scale-up bandwidth per GPU and the fabric's latency and achieved share.
    tp : int
        Tensor-parallel degree (0 ms at 1).
    tokens : numpy.ndarray
        Tokens in each step.
    hidden : int
        Hidden size; each all-reduce moves ``tokens · hidden`` BF16 values.
    layers : int
        Transformer layers.
    eff : ServingEfficiency
        Overrides of the catalog's latency and achieved bandwidth.

    Returns
    -------
    numpy.ndarray
        Communication time per step. [ms]
    """
    tokens = np.asarray(tokens, dtype=float)
    if tp <= 1:
        return np.zeros_like(tokens)
    ach = achieved(accel, eff)
    payload = tokens * hidden * ACTIVATION_BYTES
    ring_bytes = 2.0 * (tp - 1) / tp * payload
    per_call_s = ach.allreduce_latency_us * 1e-6 + ring_bytes / (ach.scale_up_efficiency * accel.scale_up_gb_s * 1e9)
    return np.asarray(2.0 * layers * per_call_s * 1e3)


def _step_arrays(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    batch: NDArray[np.float64],
    context_total: NDArray[np.float64],
    chunk_tokens: NDArray[np.float64],
    chunk_attention_flop: NDArray[np.float64],
    eff: ServingEfficiency,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Weight-read, GEMM, attention and communication time of steps (vectorised over any broadcastable shape). [ms]"""
    ach = achieved(accel, eff)
    bw = tp * ach.hbm * accel.hbm_tb_s * 1e12  # bytes/s of the replica
    tokens = np.asarray(batch + chunk_tokens, dtype=float)
    memory_ms = weight_bytes_read(model, precision, tokens) / bw * 1e3
    compute_ms = 2.0 * model.params_active_b * 1e9 * tokens / (tp * ach.tensor * accel.tflops[precision] * 1e12) * 1e3
    attn_rate = tp * attention_tflops(accel, eff) * 1e12
    kv_ms = context_total * kv_bytes_per_token(model, precision) * kv_copies(model, tp) / bw * 1e3
    decode_attn_ms = np.maximum(kv_ms, decode_attention_flops(model, 1.0) * context_total / attn_rate * 1e3)
    attention_ms = decode_attn_ms + chunk_attention_flop / attn_rate * 1e3
    comm_ms = allreduce_ms(accel, tp, tokens, model.hidden, model.layers, eff)
    return (
        np.asarray(memory_ms * np.ones_like(tokens)),
        np.asarray(compute_ms),
        np.asarray(attention_ms * np.ones_like(tokens)),
        comm_ms,
    )


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
    """Time of one step of a replica: a decode batch, optionally with a prefill chunk (chunked prefill).

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
        Mean KV length each decoding sequence reads. [tokens]
    prefill_tokens : float
        Prompt tokens prefilled in the same step (the chunk). [tokens]
    prefill_attention_flop : float
        Attention work of those prompt tokens. [FLOP]
    eff : ServingEfficiency
        Overrides of the catalog's efficiencies.

    Returns
    -------
    StepTime
        Components; ``.total_ms`` is the step (the ITL of the sequences in it). [ms]
    """
    memory, compute, attention, comm = _step_arrays(
        model,
        accel,
        precision,
        tp,
        np.array([float(batch)]),
        np.array([float(batch) * context_tokens]),
        np.array([float(prefill_tokens)]),
        np.array([float(prefill_attention_flop)]),
        eff,
    )
    overhead = achieved(accel, eff).step_overhead_ms
    return StepTime(float(memory[0]), float(compute[0]), float(attention[0]), float(comm[0]), overhead)


def chunk_attention_flops(model: ModelSpec, chunk_tokens: float, prefix_tokens: float = 0.0) -> float:
    """Causal attention FLOPs of a prefill chunk of ``K`` tokens after ``p`` tokens of the same prompt. [FLOP]"""
    return prefill_attention_flops(model, prefix_tokens + chunk_tokens, prefix_tokens)


def mixed_step_ms(
    model: ModelSpec | str,
    accel: AcceleratorSpec | str,
    precision: str,
    tp: int,
    *,
    decode_batch: float,
    decode_context_tokens: float,
    prefill_chunk_tokens: float,
    prefill_prefix_tokens: float = 0.0,
    efficiency: ServingEfficiency = CALIBRATED,
) -> float:
    """Time of one aggregated-serving step: a decode batch plus a chunk of prefill (chunked prefill).

    Weights are read once for ``B + K`` tokens, the decode sequences read their KV, the GEMMs run over
    ``B + K`` tokens, the chunk's causal attention runs after them, then the all-reduces and the step overhead.
    ``prefill_chunk_tokens = 0`` gives the pure decode step; the step never gets shorter as ``K`` grows.

    Parameters
    ----------
    model, accel : ModelSpec or str, AcceleratorSpec or str
        What runs where (catalog entries or their ids).
    precision : str
        Weight precision (``bf16``, ``fp8``, ``fp4``).
    tp : int
        GPUs in the replica (tensor parallel).
    decode_batch : float
        Sequences decoding in the step ``B``. [sequences]
    decode_context_tokens : float
        Total tokens of KV the decode sequences read (sum over the batch). [tokens]
    prefill_chunk_tokens : float
        Prompt tokens prefilled in the step ``K``. [tokens]
    prefill_prefix_tokens : float
        Tokens of the same prompt already prefilled before this chunk (its attention reads them). [tokens]
    efficiency : ServingEfficiency
        Overrides of the catalog's efficiencies.

    Returns
    -------
    float
        Step time. [ms]
    """
    model = get_model(model) if isinstance(model, str) else model
    accel = get_accelerator(accel) if isinstance(accel, str) else accel
    memory, compute, attention, comm = _step_arrays(
        model,
        accel,
        precision,
        tp,
        np.array([float(decode_batch)]),
        np.array([float(decode_context_tokens)]),
        np.array([float(prefill_chunk_tokens)]),
        np.array([chunk_attention_flops(model, prefill_chunk_tokens, prefill_prefix_tokens)]),
        efficiency,
    )
    overhead = achieved(accel, efficiency).step_overhead_ms
    return float(max(memory[0], compute[0]) + attention[0] + comm[0] + overhead)


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

    ``max(2 · P_active · (1 − h) · N / (η_c · F), weights / (η_bw · BW)) + attention / (η_a · F_bf16) + t_comm + t_ovh``.

    Parameters
    ----------
    model, accel, precision, tp
        As in :func:`decode_step`.
    tokens : float
        Prompt length ``N``. [tokens]
    prefix_cache_hit_rate : float
        Share ``h`` of the prompt already cached; ``h · N`` tokens are skipped.
    eff : ServingEfficiency
        Overrides of the catalog's efficiencies.

    Returns
    -------
    float
        Prefill time; 0 when the whole prompt is cached. [ms]
    """
    cached = prefix_cache_hit_rate * tokens
    new = tokens - cached
    if new <= 0:
        return 0.0
    memory, compute, attention, comm = _step_arrays(
        model,
        accel,
        precision,
        tp,
        np.zeros(1),
        np.zeros(1),
        np.array([new]),
        np.array([prefill_attention_flops(model, tokens, cached)]),
        eff,
    )
    return float(max(memory[0], compute[0]) + attention[0] + comm[0]) + achieved(accel, eff).step_overhead_ms


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
    input_tokens: float  # mean prompt
    input_tokens_max: float  # longest prompt the node must hold and answer inside the TTFT objective
    output_tokens: float
    ttft_p99_ms: float
    itl_p99_ms: float
    min_tok_s_per_user: float
    hit_rate: float

    @property
    def new_tokens(self) -> float:
        """Mean prompt tokens to prefill (the cached prefix skipped). [tokens]"""
        return self.input_tokens * (1.0 - self.hit_rate)

    @property
    def new_tokens_max(self) -> float:
        """Prompt tokens of the longest prompt to prefill. [tokens]"""
        return self.input_tokens_max * (1.0 - self.hit_rate)

    @property
    def new_token_quantiles(self) -> NDArray[np.float64]:
        """Equally likely prompt lengths to prefill (clipped lognormal from mean and longest). [tokens]"""
        longest = self.input_tokens_max if self.input_tokens_max > self.input_tokens else None
        prompts = LengthDistribution(self.input_tokens, longest)
        return np.asarray(prompts.quantiles(LENGTH_POINTS) * (1.0 - self.hit_rate))

    @property
    def context_tokens(self) -> float:
        """Mean KV length a decoding sequence reads: mean prompt plus half the answer. [tokens]"""
        return self.input_tokens + self.output_tokens / 2.0

    @property
    def longest_tokens(self) -> float:
        """KV of the longest request at its end: longest prompt plus the answer. [tokens]"""
        return self.input_tokens_max + self.output_tokens


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
    first_decode_ms: float
    utilisation_cap: float
    prefill_gpu_share: float
    chunk_tokens: int
    mixed_step_share: float
    limit: str


def tp_options(accel: AcceleratorSpec, gpus: int) -> list[int]:
    """Tensor-parallel degrees a node can run: powers of two inside one scale-up domain that divide ``gpus``."""
    return [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(gpus, accel.scale_up_gpus) and gpus % t == 0]


def _batch_grid(b_max: int) -> NDArray[np.float64]:
    """Batches to evaluate: every batch up to 64, then ~2 % steps, always ending at ``b_max``."""
    grid = np.unique(np.concatenate([np.arange(1, min(b_max, 64) + 1), np.geomspace(1, b_max, 400).round(), [b_max]]))
    return np.asarray(grid[(grid >= 1) & (grid <= b_max)], dtype=float)


def _max_batch(model: ModelSpec, accel: AcceleratorSpec, precision: str, tp: int, w: _Workload, eff: ServingEfficiency) -> int:
    """Largest batch whose KV fits: the batch at the mean context plus room for one longest request (paged KV)."""
    per_token = kv_bytes_per_token(model, precision) * kv_copies(model, tp)
    free = kv_capacity_bytes(model, accel, precision, tp, eff) - per_token * max(0.0, w.longest_tokens - w.context_tokens)
    return max(0, min(int(free // (per_token * w.context_tokens)), eff.max_batch)) if free > 0 else 0


def _limit(ok: NDArray[np.bool_], itl_ok: NDArray[np.bool_], batch: int, b_max: int, b_kv_free: bool) -> str:
    if batch >= b_max:
        return "max_batch" if b_kv_free else "kv_capacity"
    if not ok[batch]:  # the next batch (index batch is batch + 1) breaks an objective
        return "itl" if not itl_ok[batch] else "tok_s_per_user"
    return "ttft"


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


def _attention_per_token(model: ModelSpec, w: _Workload) -> float:
    """Mean causal-attention work per prefilled prompt token of the mean prompt. [FLOP/token]"""
    if w.new_tokens <= 0:
        return 0.0
    return prefill_attention_flops(model, w.input_tokens, w.input_tokens - w.new_tokens) / w.new_tokens


@dataclass(frozen=True)
class _ChunkSizes:
    """The chunks a lone prompt puts in steps, per chunk budget: sizes, ascending, and their share of chunk steps.

    A prompt of ``L`` new tokens under a budget ``K`` fills ``floor(L / K)`` steps with ``K`` tokens and one
    with the rest; over the prompt mix that gives the chunk size of a random chunk-carrying step.
    """

    sizes: tuple[NDArray[np.float64], ...]  # per budget: chunk sizes, ascending [tokens]
    upper: tuple[NDArray[np.float64], ...]  # per budget: share of chunk steps whose chunk is at least that size
    steps_per_prompt: NDArray[np.float64]  # per budget: mean chunk steps of one prompt, E[ceil(L / K)]

    @classmethod
    def of(cls, new_tokens: NDArray[np.float64], chunks: NDArray[np.float64]) -> _ChunkSizes:
        sizes, upper, steps = [], [], []
        for k in chunks:
            full = np.floor(new_tokens / k)
            rest = new_tokens - full * k
            size = np.concatenate([[k], rest[rest > 0]])
            weight = np.concatenate([[full.sum()], np.ones(int((rest > 0).sum()))])
            order = np.argsort(size)
            size, weight = size[order], weight[order]
            total = weight.sum()
            sizes.append(size)
            upper.append(np.cumsum(weight[::-1])[::-1] / total if total > 0 else np.zeros_like(size))
            steps.append(total / len(new_tokens))
        return cls(tuple(sizes), tuple(upper), np.asarray(steps))

    def tail_tokens(self, ki: int, tail_share: NDArray[np.float64], packed: NDArray[np.float64]) -> NDArray[np.float64]:
        """Chunk size exceeded by a share ``tail_share`` of chunk steps, when a share ``packed`` of them are full.

        A step finds prompt tokens waiting behind the one it serves with probability ``packed`` (the chunk
        pipeline's utilisation) and then carries a full budget ``K``; otherwise it carries a lone prompt's chunk.
        """
        sizes, upper = self.sizes[ki], self.upper[ki]
        k = float(sizes[-1]) if sizes.size else 0.0
        lone = np.clip((tail_share - packed) / np.maximum(1.0 - packed, 1e-12), 0.0, 1.0)
        # the largest size whose upper share still covers the tail: sizes[i] with upper[i] >= lone
        index = np.searchsorted(-upper, -lone, side="right") - 1
        tail = np.where(index >= 0, sizes[np.clip(index, 0, None)], sizes[0] if sizes.size else 0.0)
        return np.asarray(np.where(packed >= tail_share, k, tail), dtype=float)


@dataclass(frozen=True)
class _ChunkedSteps:
    """Step times of every (chunk budget K, batch B) pair of one replica (arrays of shape (len(K), len(B))).

    ``mixed_share`` is the share of *work*: prompt tokens per step over ``K`` (above 1 prefill cannot keep up;
    the mean step, i.e. throughput, follows it). ``chunk_step_share`` is the share of *steps* that carry a
    chunk: a short prompt takes a whole step of its own, so it is at least ``B / N_out`` and sets the ITL tail.
    """

    chunk: NDArray[np.float64]
    batch: NDArray[np.float64]
    pure_ms: NDArray[np.float64]
    mixed_ms: NDArray[np.float64]
    pure_p99_ms: NDArray[np.float64]  # at the p99 batch B + z·sqrt(B)
    mixed_share: NDArray[np.float64]  # prompt tokens per step / K at full load
    chunk_step_share: NDArray[np.float64]  # share of steps carrying a chunk at full load (capped at 1)
    sizes: _ChunkSizes
    step_at: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]  # (sequences, chunk) -> ms

    @cached_property
    def mean_ms(self) -> NDArray[np.float64]:
        """Mean step (work-weighted mix of chunk-carrying and pure steps) of every (K, B); computed once. [ms]"""
        f = np.minimum(self.mixed_share, 1.0)
        return np.asarray(f * self.mixed_ms + (1.0 - f) * self.pure_ms)

    def itl_ms(self, load: float | NDArray[np.float64] = 1.0) -> NDArray[np.float64]:
        """p99 ITL at a share ``load`` of capacity: the step exceeded by 1 % of tokens.

        Every step emits one token per decoding sequence, so the token-weighted p99 is the step-weighted one:
        the pure step at the p99 batch while at most 1 % of steps carry a chunk; above, the chunk step whose
        chunk is exceeded by ``1 % / share`` of chunk steps.
        """
        rows = range(len(self.chunk))
        return np.stack([self.itl_row_ms(ki, slice(None), load) for ki in rows])

    def itl_cell_ms(self, ki: int, bi: int, load: float) -> float:
        """:meth:`itl_ms` of one (chunk budget, batch) pair. [ms]"""
        return float(self.itl_row_ms(ki, slice(bi, bi + 1), load)[0])

    def itl_row_ms(self, ki: int, cols: slice, load: float | NDArray[np.float64]) -> NDArray[np.float64]:
        steps = np.minimum(self.chunk_step_share[ki, cols] * load, 1.0)
        packed = np.minimum(self.mixed_share[ki, cols] * load, 1.0)
        tokens = self.sizes.tail_tokens(ki, MIXED_STEP_TAIL_SHARE / np.maximum(steps, 1e-12), packed)
        batch = self.batch[cols]
        mixed = self.step_at(batch + P99_Z * np.sqrt(batch), tokens)
        pure = self.pure_p99_ms[ki, cols]
        return np.asarray(np.where(steps > MIXED_STEP_TAIL_SHARE, np.maximum(mixed, pure), pure))


def _chunked_steps(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    batch: NDArray[np.float64],
    w: _Workload,
    eff: ServingEfficiency,
) -> _ChunkedSteps:
    """Pure and mixed step times over chunk budgets × batches, and the shares of work and steps carrying a chunk."""
    chunk = np.array(CHUNK_TOKENS, dtype=float)[:, None]  # a chunk may carry several prompts
    b = batch[None, :]
    overhead = achieved(accel, eff).step_overhead_ms
    shape = (len(chunk), len(batch))
    per_token = _attention_per_token(model, w)

    def step_ms(seqs: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
        memory, compute, attention, comm = _step_arrays(
            model, accel, precision, tp, seqs, seqs * w.context_tokens, k, k * per_token, eff
        )
        return np.asarray(np.maximum(memory, compute) + attention + comm + overhead)

    def total(seqs: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.broadcast_to(step_ms(seqs, k), shape))

    zero, full = np.zeros_like(chunk), np.broadcast_to(chunk, shape).copy()
    sizes = _ChunkSizes.of(w.new_token_quantiles, chunk[:, 0])
    share = b * w.new_tokens / (w.output_tokens * chunk) * np.ones(shape)
    step_share = np.minimum(b / w.output_tokens * sizes.steps_per_prompt[:, None], 1.0) * np.ones(shape)
    return _ChunkedSteps(
        chunk[:, 0],
        batch,
        total(b, zero),
        total(b, full),
        total(b + P99_Z * np.sqrt(b), zero),
        np.asarray(share),
        np.asarray(step_share),
        sizes,
        step_ms,
    )


def _colocated(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, gpus: int, tp: int, w: _Workload, eff: ServingEfficiency
) -> _Candidate | None:
    """Aggregated serving with chunked prefill: the best (batch, chunk budget) at this tensor-parallel degree."""
    b_max = _max_batch(model, accel, precision, tp, w, eff)
    if b_max < 1:
        return None
    replicas = gpus // tp
    batch = _batch_grid(b_max)
    batch = batch[batch + P99_Z * np.sqrt(batch) <= b_max] if b_max > 1 else batch  # the p99 batch's KV fits too
    if batch.size == 0:
        return None
    steps = _chunked_steps(model, accel, precision, tp, batch, w, eff)
    mean, itl = steps.mean_ms, steps.pure_p99_ms  # chunk steps add to the tail with load: capped per candidate
    itl_ok = itl <= w.itl_p99_ms
    ok = itl_ok & (1e3 / itl >= w.min_tok_s_per_user)
    capacity = replicas * batch[None, :] / mean * 1e3
    best: _Candidate | None = None
    for flat in np.argsort(-np.where(ok, capacity, -1.0), axis=None):
        ki, bi = np.unravel_index(flat, capacity.shape)
        if not ok[ki, bi] or (best is not None and capacity[ki, bi] <= best.goodput_tok_s):
            break
        floor = best.goodput_tok_s if best is not None else 0.0
        found = _chunked_candidate(steps, int(ki), int(bi), batch, replicas, tp, w, eff, float(capacity[ki, bi]), floor)
        if found is not None and (best is None or found.goodput_tok_s > best.goodput_tok_s):
            best = found
    if best is None:
        return None
    fits, fits_itl = np.asarray(ok.any(axis=0)), np.asarray(itl_ok.any(axis=0))
    return replace(best, limit=best.limit or _grid_limit(fits, fits_itl, batch, best.batch, b_max, eff))


def _chunked_candidate(
    steps: _ChunkedSteps,
    ki: int,
    bi: int,
    batch: NDArray[np.float64],
    replicas: int,
    tp: int,
    w: _Workload,
    eff: ServingEfficiency,
    capacity: float,
    floor_tok_s: float = 0.0,
) -> _Candidate | None:
    """Goodput of one (chunk, batch): the load at which the p99 prefill queue still fits the TTFT objective.

    ``None`` when nothing fits, or as soon as a bound shows the goodput cannot exceed ``floor_tok_s`` (the
    best found so far).

    Each replica's chunk pipeline is a server: a mean prompt occupies it ``new / K`` mixed steps; the longest
    prompt takes ``ceil(new_max / K)`` mixed steps, the last of which emits the first token. The p99 wait and
    the longest prompt's prefill are added (conservative: two tails at once).
    """
    k, b = float(steps.chunk[ki]), float(batch[bi])
    mixed, mean = float(steps.mixed_ms[ki, bi]), float(steps.mean_ms[ki, bi])
    if w.new_tokens <= 0:
        first = float(steps.pure_ms[ki, bi])
        cap = float(w.ttft_p99_ms - first >= 0)
        return _Candidate(cap * capacity, capacity, int(b), tp, replicas, first, 0.0, 0.0, 0.0, first, cap, 0.0, 0, 0.0, "")
    steps_longest = max(1, math.ceil(w.new_tokens_max / k))
    prefill, first = (steps_longest - 1) * mixed, mixed
    service = w.new_tokens / k * mixed  # mean time a prompt holds its replica's chunk pipeline [ms]
    rho_full = b / (w.output_tokens * mean) * service  # that pipeline's utilisation at full batch
    floor_load = floor_tok_s / capacity  # the share of capacity this candidate must serve to beat the best
    chunk_budget_ms = w.ttft_p99_ms - prefill - first
    itl_target_ms = min(w.itl_p99_ms, 1e3 / max(w.min_tok_s_per_user, 1e-9))
    # one probe each of the chunk queue and the ITL at the load needed to beat the best, before either bisection
    if rho_full > 0 and _queue_misses(replicas, service, chunk_budget_ms, floor_load * rho_full, eff):
        return None
    if _itl_misses(steps, ki, bi, floor_load, itl_target_ms):
        return None
    rho = utilisation_cap(replicas, service, chunk_budget_ms, cs2=eff.service_cv2)
    cap = min(1.0, rho / rho_full) if rho_full > 0 else 1.0
    if cap * capacity <= floor_tok_s:
        return None
    itl_cap = _itl_load_cap(steps, ki, bi, cap, itl_target_ms)
    limit = "itl" if itl_cap < cap else ""
    cap = itl_cap
    if cap <= 0 or cap * capacity <= floor_tok_s:
        return None
    # A request also waits for a decode slot: replicas x batch slots, each held for the prompt's chunks and
    # every answer token. At capacity all slots are busy, so the load must stay below it by the margin
    # the p99 slot wait allows inside what the objective leaves (this is what keeps goodput off the knee).
    slots, hold_ms = replicas * int(b), service + w.output_tokens * mean
    chunk_wait = queue_wait_p99_ms(replicas, service, cap * rho_full, cs2=eff.service_cv2)
    slot_budget_ms = chunk_budget_ms - chunk_wait
    if _queue_misses(slots, hold_ms, slot_budget_ms, floor_load, eff):
        return None  # the slot queue caps goodput below the best: the caller would not take it
    cap = min(cap, utilisation_cap(slots, hold_ms, slot_budget_ms, cs2=eff.service_cv2))
    if cap <= 0:
        return None
    queue = queue_wait_p99_ms(replicas, service, cap * rho_full, cs2=eff.service_cv2) + queue_wait_p99_ms(
        slots, hold_ms, cap, cs2=eff.service_cv2
    )
    itl = steps.itl_cell_ms(ki, bi, cap)
    step_share = min(1.0, cap * float(steps.chunk_step_share[ki, bi]))
    return _Candidate(
        cap * capacity, capacity, int(b), tp, replicas, itl, prefill, 0.0, queue, first, cap, 0.0, int(k), step_share, limit
    )


def _queue_misses(servers: int, service_ms: float, wait_budget_ms: float, utilisation: float, eff: ServingEfficiency) -> bool:
    """Whether the p99 wait already exceeds its budget a hair below ``utilisation``.

    The wait rises with utilisation, so :func:`~placement.serving.queueing.utilisation_cap` (a bisection keeping
    the highest point that fits) then returns less than ``utilisation``: a candidate that needs that much load
    to beat the best found so far cannot, and one evaluation replaces the bisection's forty. The margin
    :data:`PRUNE_MARGIN` keeps the probe clear of rounding. ``False`` when nothing is needed (``utilisation <= 0``).
    """
    if utilisation <= 0.0:
        return False
    probe = utilisation * (1.0 - PRUNE_MARGIN)
    return probe >= 1.0 or queue_wait_p99_ms(servers, service_ms, probe, cs2=eff.service_cv2) > wait_budget_ms


def _itl_misses(steps: _ChunkedSteps, ki: int, bi: int, load: float, itl_ms: float) -> bool:
    """Whether the p99 ITL of one (chunk, batch) already misses ``itl_ms`` a hair below ``load``.

    The p99 ITL never falls as load rises, so :func:`_itl_load_cap` then returns less than ``load``; as
    :func:`_queue_misses`, with the same margin. ``False`` when ``load <= 0``.
    """
    if load <= 0.0:
        return False
    return bool(steps.itl_row_ms(ki, slice(bi, bi + 1), load * (1.0 - PRUNE_MARGIN))[0] > itl_ms)


def _itl_load_cap(steps: _ChunkedSteps, ki: int, bi: int, load: float, itl_ms: float) -> float:
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


def _disaggregated(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, gpus: int, tp: int, w: _Workload, eff: ServingEfficiency
) -> _Candidate | None:
    b_max = _max_batch(model, accel, precision, tp, w, eff)
    if b_max < 1:
        return None
    batch = np.arange(1, b_max + 1, dtype=float)
    zeros = np.zeros_like(batch)
    memory, compute, attention, comm = _step_arrays(
        model, accel, precision, tp, batch, batch * w.context_tokens, zeros, zeros, eff
    )
    step = np.maximum(memory, compute) + attention + comm + achieved(accel, eff).step_overhead_ms
    itl_ok = step <= w.itl_p99_ms
    ok = itl_ok & (1e3 / step >= w.min_tok_s_per_user)
    pre = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens_max, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    pre_mean = prefill_ms(model, accel, precision, tp=tp, tokens=w.input_tokens, prefix_cache_hit_rate=w.hit_rate, eff=eff)
    per_nic = kv_bytes_per_token(model, precision) * kv_copies(model, tp) / tp
    transfer = kv_transfer_ms(w.input_tokens_max, per_nic, accel.scale_out_gbit_s) if gpus > 1 else 0.0
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
                prefill_rate = 1e3 / (pre_mean * tp)  # requests/s per prefill GPU at full load
                share = (
                    decode_rate / (prefill_rate + decode_rate) if cap == 0 else decode_rate / (cap * prefill_rate + decode_rate)
                )
                servers = max(1, round(share * gpus / tp))
                cap = utilisation_cap(servers, pre_mean, budget, cs2=eff.service_cv2)
        if cap <= 0:
            continue
        effective_prefill = cap * prefill_rate
        rate = gpus * decode_rate if pre == 0 else gpus * effective_prefill * decode_rate / (effective_prefill + decode_rate)
        capacity = (
            gpus * w.output_tokens * (decode_rate if pre == 0 else prefill_rate * decode_rate / (prefill_rate + decode_rate))
        )
        good = rate * w.output_tokens
        if best is None or good > best.goodput_tok_s:
            queue = queue_wait_p99_ms(servers, pre_mean, cap, cs2=eff.service_cv2) if pre > 0 else 0.0
            best = _Candidate(
                good,
                capacity,
                int(b),
                tp,
                gpus // tp,
                float(step[i]),
                pre,
                transfer,
                queue,
                float(step[i]),
                cap,
                share,
                0,
                0.0,
                "",
            )
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
        Mean prompt and mean answer length per request. [tokens]
    ttft_p99_ms, itl_p99_ms : float
        The objective. [ms]
    prefix_cache_hit_rate : float
        Share of prompt tokens served from the prefix cache.
    disaggregated : bool
        Separate prefill and decode pools (KV crosses the scale-out NIC).
    min_tok_s_per_user : float
        Interactivity floor: decode speed per user. [tokens/s]
    input_tokens_max : int, optional
        Longest prompt (or a high quantile such as p99): the KV cache keeps room for it and the p99 TTFT is
        its prefill. ``None``: every prompt is ``input_tokens`` long. [tokens]
    tp : int, optional
        Tensor-parallel degree to use; ``None`` searches every degree the node allows.
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
    input_tokens_max: int | None = None
    tp: int | None = None
    node_cost_usd_h: float | None = None
    pue: float = 1.0

    @property
    def label(self) -> str:
        """``llama-2-70b on 8 x h200 (fp8)``."""
        return f"{self.model} on {self.gpus} x {self.accelerator} ({self.precision})"


def _workload(request: ServingRequest) -> _Workload:
    """The request's workload: mean prompt and answer, and the longest prompt (the mean when not given)."""
    r = request
    longest = float(r.input_tokens if r.input_tokens_max is None else max(r.input_tokens_max, r.input_tokens))
    return _Workload(
        float(r.input_tokens),
        longest,
        float(r.output_tokens),
        r.ttft_p99_ms,
        r.itl_p99_ms,
        r.min_tok_s_per_user,
        r.prefix_cache_hit_rate,
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
    if (
        r.tp is not None and r.tp not in tp_options(get_accelerator(r.accelerator), r.gpus)
        if r.accelerator in bundled_accelerators()
        else False
    ):
        problems.append(
            Problem(
                "goodput request",
                "",
                "tp",
                f"{r.tp} is not a power of two dividing gpus inside one scale-up domain",
                "pick another tp",
            )
        )
    if r.input_tokens_max is not None and r.input_tokens_max < r.input_tokens:
        problems.append(
            Problem(
                "goodput request",
                "",
                "input_tokens_max",
                f"must be >= input_tokens (the mean, {r.input_tokens}), got {r.input_tokens_max}",
                "give the longest prompt (or its p99) as input_tokens_max and the mean as input_tokens",
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
        c
        for t in tp_options(a, request.gpus)
        if request.tp in (None, t) and (c := search(m, a, request.precision, request.gpus, t, w, eff)) is not None
    ]
    best = max(found, key=lambda c: c.goodput_tok_s, default=None)
    if best is not None and best.goodput_tok_s > 0:
        return best
    reason, one = _why_nothing(m, a, request.precision, request.gpus, w, eff)
    return _Candidate(0.0, 0.0, 0, 0, 0, one, math.nan, math.nan, math.nan, one, 0.0, 0.0, 0, 0.0, reason)


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
        ttft_ms=best.queue_p99_ms + best.prefill_ms + best.kv_transfer_ms + best.first_decode_ms,
        prefill_ms=best.prefill_ms,
        kv_transfer_ms=best.kv_transfer_ms,
        queue_p99_ms=best.queue_p99_ms,
        first_decode_ms=best.first_decode_ms,
        utilisation_cap=best.utilisation_cap,
        prefill_gpu_share=best.prefill_gpu_share,
        node_kw=node_kw,
        pue=request.pue,
        tokens_per_s_per_mw=float(_yield_per_mw(best.goodput_tok_s, node_kw * request.pue / 1e3)),
        cost_per_million_goodput_tokens_usd=cost_per_million,
        chunk_tokens=best.chunk_tokens,
        mixed_step_share=best.mixed_step_share,
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
        Model, node and workload; the objective is ignored (every batch is drawn). Each batch uses the
        chunk budget with the shortest p99 ITL among those that keep up with the prefill demand.
    efficiency : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    pandas.DataFrame
        One row per (tp, batch): ``tp``, ``batch``, ``itl_ms``, ``tok_s_per_user`` [tokens/s],
        ``tok_s_per_gpu`` [tokens/s], ``on_frontier`` (not dominated on both axes).
    """
    w = replace(_workload(request), ttft_p99_ms=math.inf, itl_p99_ms=math.inf, min_tok_s_per_user=0.0)
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
    steps = _chunked_steps(m, a, precision, tp, batch, w, eff)
    full_load_itl = steps.itl_ms()  # the curve is read at capacity
    itl = np.where(steps.mixed_share <= 1.0, full_load_itl, np.inf)
    pick = np.where(np.isfinite(itl).any(axis=0), np.argmin(itl, axis=0), len(steps.chunk) - 1)
    cols = np.arange(len(batch))
    itl_ms, mean_ms = full_load_itl[pick, cols], steps.mean_ms[pick, cols]
    return pd.DataFrame(
        {
            "tp": tp,
            "batch": batch.astype(int),
            "itl_ms": itl_ms,
            "tok_s_per_user": 1e3 / itl_ms,
            "tok_s_per_gpu": batch / mean_ms * 1e3 / tp,
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
