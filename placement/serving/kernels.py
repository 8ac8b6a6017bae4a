"""Step times of a tensor-parallel replica and their parts: FLOP counts, weight and KV reads, all-reduces, KV moves.

The model (DESIGN.md section 3), in terms that mean the same thing for every model:

- **Step** of a replica of ``g`` GPUs carrying a decode batch ``B`` (total context ``C`` tokens of KV) and a
  prefill chunk of ``K`` prompt tokens (``K = 0``: a pure decode step), ``T = B + K`` tokens::

      step = max(weight reads / (η_bw · BW), GEMMs (rows + m_half) / (η_c · F))   linear layers
           + max(C · kv_bytes / (η_bw · BW), decode attention (r + m_half) / r / (η_a · F_bf16))  decode attention
           + chunk attention / (η_a · F_bf16)                                   prefill attention
           + t_comm                                                             collectives, per layer
           + t_step + L · t_layer + B · t_seq                                   the engine's floors

  The linear layers and attention are separate kernels and run one after the other. ``t_comm``: with tensor
  parallelism two all-reduces per layer of ``T · hidden`` BF16 values (latency + bytes over the scale-up fabric);
  a mixture of experts may instead run **data-parallel attention** (each GPU its own sequences and KV, its own copy
  of the shared weights) with **expert-parallel** experts and two all-to-alls per layer (dispatch and combine).
  Every GEMM runs at the efficiency of a GEMM over its own rows: one over ``m`` tokens takes as long as one over
  ``m + m_half`` at the large-GEMM rate (its tiles are 64-128 rows, filled or not), the dense and shared weights'
  over the step's ``T`` tokens, each routed expert's over the tokens routed to it (:func:`expert_padding_tokens`),
  and decode attention's over its ``r`` rows, the query heads that share one KV head on a GPU
  (:func:`attention_rows`: 8 for Llama-2-70B's GQA groups, 32 for DeepSeek-R1's MLA under TP4, where every head
  reads the one latent; that is what makes MLA under tensor parallelism slow on every part, not a kernel fraction).
  A mixture of experts reads only the experts its tokens route to, and its expert GEMMs run at the busiest GPU's
  load (:func:`expert_imbalance`). The floors are the engine's: a step's launch and scheduling, a kernel floor per
  layer, a cost per running sequence (:mod:`placement.serving.efficiency`); a 32-layer model pays 32 layer
  floors, a 126-layer one 126. Every η, the fabric's latency and share are catalog columns with their sources;
  the GEMM fraction and the floors are calibrated on measured points (``data/serving/calibration.csv``).
- **Prefill** of ``N`` prompt tokens: ``(2 · P_active · N + attention) / (η_c · F)``; a prefix-cache hit
  rate ``h`` removes ``h · N`` tokens.
- **KV transfer** (disaggregated serving): the prompt's KV crosses the scale-out NIC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import CALIBRATED, ServingEfficiency, achieved
from placement.serving.hardware import (
    WEIGHT_BYTES,
    AcceleratorSpec,
    ModelSpec,
    get_accelerator,
    get_model,
    kv_bytes_per_token,
    moe_split_b,
    weight_bytes,
    weight_bytes_read,
)

ACTIVATION_BYTES = 2.0  # all-reduce payloads are BF16 activations


@dataclass(frozen=True, kw_only=True)
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


def kv_copies(model: ModelSpec, tp: int, *, attention_dp: bool = False) -> float:
    """How many times a replica stores each token's KV.

    Tensor-parallel attention: GQA shards heads (replicated beyond kv_heads), MLA's latent is read by every head, so
    every GPU holds it. Data-parallel attention (``attention_dp``): each GPU holds only its own sequences' KV.
    """
    if attention_dp:
        return 1.0
    if model.attention == "mla":
        return float(tp)
    return max(1.0, tp / model.kv_heads)


def layouts(model: ModelSpec, tp: int, *, allow_dp: bool = False) -> tuple[bool, ...]:
    """The attention layouts a replica of ``tp`` GPUs is searched over (``True``: data parallel).

    Tensor-parallel attention always (a mixture of experts then runs its experts expert-parallel, combined by the
    all-reduce); with ``allow_dp`` a mixture of experts on more than one GPU also data-parallel attention with
    all-to-all expert parallelism. That layout is opt-in: no measured point of the calibration ran it (the MLPerf
    DeepSeek-R1 results are met by tensor-parallel attention within ~10 %, and data-parallel attention's modelled
    batch is 2-3x theirs), so its figures carry no fitted evidence.
    """
    return (False, True) if allow_dp and model.experts > 0 and tp > 1 else (False,)


def attention_rows(model: ModelSpec, tp: int, *, attention_dp: bool = False) -> float:
    """Rows of one decode attention GEMM on a GPU: the query heads that share one KV head there.

    Decode attention multiplies the queries of the heads that read one KV head (a GQA group; under MLA every head,
    all reading the one latent) by that head's cached keys and values: its GEMMs have that many rows per token a
    sequence carries. Tensor parallelism splits the heads over the GPUs (a GQA model's KV heads too, replicated
    once there are more GPUs than KV heads); data-parallel attention keeps every head on each GPU.
    """
    gpus = 1 if attention_dp else max(tp, 1)
    heads = model.q_heads / gpus
    if model.attention == "mla":
        return heads
    return heads / max(model.kv_heads / gpus, 1.0)


def expert_imbalance(tokens: NDArray[np.float64], model: ModelSpec, gpus: int) -> NDArray[np.float64]:
    """Work of the busiest GPU's experts over the mean GPU's, when ``tokens`` tokens route over ``gpus`` GPUs.

    Each token picks ``k`` of ``E`` experts; a GPU holding ``E / g`` of them receives a Poisson-like count of mean
    ``μ = tokens · k / g``, and the largest of ``g`` such counts is about ``μ + sqrt(2 · ln g · μ)`` (uniform routing:
    no load balancer's help and no hot experts). 1 for dense models or one GPU.
    """
    tokens = np.asarray(tokens, dtype=float)
    if model.experts == 0 or gpus <= 1:
        return np.ones_like(tokens)
    mean = np.maximum(tokens * model.experts_per_token / gpus, 1e-9)
    return np.asarray(1.0 + np.sqrt(2.0 * math.log(gpus) / mean))


def expert_padding_tokens(tokens: NDArray[np.float64], model: ModelSpec, half_tokens: float) -> NDArray[np.float64]:
    """Rows the expert GEMMs run beyond the routed tokens: each expert a token reaches pads its GEMM by ``m_half``.

    A GEMM over ``m`` tokens takes about as long as one over ``m + m_half`` at the large-GEMM rate (its tiles are
    64-128 rows, filled or not), so an expert that gets ``m`` tokens reaches ``m / (m + m_half)`` of that rate.
    Summed over the ``E · touched`` experts the step's tokens reach. 0 for dense models. [tokens]
    """
    tokens = np.asarray(tokens, dtype=float)
    if model.experts == 0:
        return np.zeros_like(tokens)
    touched = 1.0 - (1.0 - model.experts_per_token / model.experts) ** np.maximum(tokens, 1.0)
    return np.asarray(model.experts * touched * half_tokens)


def all_to_all_ms(
    accel: AcceleratorSpec, gpus: int, tokens: NDArray[np.float64], model: ModelSpec, eff: ServingEfficiency
) -> NDArray[np.float64]:
    """Expert-parallel dispatch and combine of one step: two all-to-alls per layer over the scale-up fabric.

    Each GPU sends its ``tokens / g`` tokens' hidden states to the GPUs of their ``k`` experts (FP8, 1 byte a value)
    and gets the results back (BF16); ``(g - 1) / g`` of it leaves the GPU. Each call costs the fabric's latency plus
    its bytes over the achieved link rate. [ms]
    """
    tokens = np.asarray(tokens, dtype=float)
    if gpus <= 1 or model.experts == 0:
        return np.zeros_like(tokens)
    ach = achieved(accel, eff)
    per_gpu = tokens / gpus * model.experts_per_token * model.hidden * (gpus - 1) / gpus
    rate = ach.scale_up_efficiency * accel.scale_up_gb_s * 1e9
    per_layer_s = 2.0 * ach.allreduce_latency_us * 1e-6 + per_gpu * (1.0 + ACTIVATION_BYTES) / rate
    return np.asarray(model.layers * per_layer_s * 1e3)


def achieved_tflops(accel: AcceleratorSpec, precision: str, eff: ServingEfficiency) -> float:
    """Achieved GEMM throughput of one GPU: ``η_c · F``. [TFLOP/s]"""
    return achieved(accel, eff, precision).tensor * accel.tflops[precision]


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
    """Tensor-parallel all-reduce time of one step: two per layer over the scale-up fabric.

    A ring sends ``2(n − 1)/n`` of the payload over each GPU's links; a switch that reduces in the network (NVLink
    SHARP on NVSwitch) takes the payload from each GPU once and returns the sum once, so each GPU moves the payload
    once (the catalog's ``allreduce``).

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
    sent_bytes = payload if accel.allreduce == "switch" else 2.0 * (tp - 1) / tp * payload
    per_call_s = ach.allreduce_latency_us * 1e-6 + sent_bytes / (ach.scale_up_efficiency * accel.scale_up_gb_s * 1e9)
    return np.asarray(2.0 * layers * per_call_s * 1e3)


def step_parts_ms(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    *,
    batch: NDArray[np.float64],
    context_total: NDArray[np.float64],
    chunk_tokens: NDArray[np.float64],
    chunk_attention_flop: NDArray[np.float64],
    eff: ServingEfficiency,
    verify_tokens: float = 1.0,
    attention_dp: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Weight-read, GEMM, attention and communication time of steps (vectorised over any broadcastable shape).

    The engine's floors are not included (:func:`step_floor_ms`); a step is
    ``max(memory, compute) + attention + comm + floor``.

    Parameters
    ----------
    model, accel, precision, tp
        As in :func:`decode_step`; ``tp`` is the replica's GPUs.
    batch : numpy.ndarray
        Sequences decoding in each step. [sequences]
    context_total : numpy.ndarray
        Tokens of KV the decoding sequences read, summed over the batch. [tokens]
    chunk_tokens : numpy.ndarray
        Prompt tokens prefilled in each step. [tokens]
    chunk_attention_flop : numpy.ndarray
        Attention work of those prompt tokens. [FLOP]
    eff : ServingEfficiency
        Overrides of the catalog's efficiencies.
    verify_tokens : float
        Tokens each decoding sequence carries through the step (speculative decoding: the drafts and the
        next token; 1 without). The weights and each sequence's KV are still read once.
    attention_dp : bool
        A mixture of experts with data-parallel attention (each GPU its own sequences, its own copy of the shared
        weights) and expert-parallel experts (all-to-all dispatch and combine) instead of tensor parallelism
        (all-reduces).

    Returns
    -------
    tuple of numpy.ndarray
        ``(memory_ms, compute_ms, attention_ms, comm_ms)``, broadcast to the steps' shape. [ms]
    """
    ach = achieved(accel, eff, precision)
    gpu_bw = ach.hbm * accel.hbm_tb_s * 1e12  # bytes/s of one GPU
    bw = tp * gpu_bw
    tokens = np.asarray(batch * verify_tokens + chunk_tokens, dtype=float)
    shared_b, expert_b = moe_split_b(model)
    element = WEIGHT_BYTES[precision]
    shared_bytes = shared_b * 1e9 * element
    expert_bytes = np.asarray(weight_bytes_read(model, precision, tokens)) - shared_bytes
    # every GPU reads its own copy of the shared weights under data-parallel attention
    memory_ms = (shared_bytes / (gpu_bw if attention_dp else bw) + expert_bytes / bw) * 1e3
    flops = tp * ach.tensor * accel.tflops[precision] * 1e12
    # every GEMM pads its rows to the tile: the shared weights' over the step's tokens, each routed expert's over its own
    shared_flop = 2.0 * shared_b * 1e9 * (tokens + ach.gemm_half_tokens)
    routed_rows = model.experts_per_token * tokens + expert_padding_tokens(tokens, model, ach.gemm_half_tokens)
    routed_flop = 2.0 * expert_b * 1e9 * routed_rows * expert_imbalance(tokens, model, tp)
    compute_ms = (shared_flop + routed_flop) / flops * 1e3
    attn_rate = tp * attention_tflops(accel, eff) * 1e12
    kv_ms = context_total * kv_bytes_per_token(model, precision) * kv_copies(model, tp, attention_dp=attention_dp) / bw * 1e3
    # decode attention's GEMMs pad their rows to the tile like every GEMM: their rows are the heads sharing a KV head
    rows = attention_rows(model, tp, attention_dp=attention_dp) * verify_tokens
    padded_flop = decode_attention_flops(model, 1.0) * verify_tokens * (rows + ach.gemm_half_tokens) / rows
    decode_attn_ms = np.maximum(kv_ms, padded_flop * context_total / attn_rate * 1e3)
    attention_ms = decode_attn_ms + chunk_attention_flop / attn_rate * 1e3
    if attention_dp:
        comm_ms = all_to_all_ms(accel, tp, tokens, model, eff)
    else:
        comm_ms = allreduce_ms(accel, tp, tokens, model.hidden, model.layers, eff)
    return (
        np.asarray(memory_ms * np.ones_like(tokens)),
        np.asarray(compute_ms * np.ones_like(tokens)),
        np.asarray(attention_ms * np.ones_like(tokens)),
        np.asarray(comm_ms),
    )


def step_floor_ms(
    model: ModelSpec,
    accel: AcceleratorSpec,
    tp: int,
    batch: NDArray[np.float64] | float,
    eff: ServingEfficiency,
    *,
    attention_dp: bool = False,
) -> NDArray[np.float64]:
    """The serving engine's floor of a step: per step, per layer, and per sequence the GPU's scheduler runs.

    Under data-parallel attention each GPU's engine runs its own ``batch / tp`` sequences. [ms]
    """
    sequences = np.asarray(batch, dtype=float) / (tp if attention_dp else 1)
    return achieved(accel, eff).floor_ms(model.layers, sequences)


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
    attention_dp: bool = False,
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
    memory, compute, attention, comm = step_parts_ms(
        model,
        accel,
        precision,
        tp,
        batch=np.array([float(batch)]),
        context_total=np.array([float(batch) * context_tokens]),
        chunk_tokens=np.array([float(prefill_tokens)]),
        chunk_attention_flop=np.array([float(prefill_attention_flop)]),
        eff=eff,
        attention_dp=attention_dp,
    )
    overhead = float(step_floor_ms(model, accel, tp, float(batch), eff, attention_dp=attention_dp))
    return StepTime(
        memory_ms=float(memory[0]),
        compute_ms=float(compute[0]),
        attention_ms=float(attention[0]),
        comm_ms=float(comm[0]),
        overhead_ms=overhead,
    )


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
    attention_dp: bool = False,
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
    memory, compute, attention, comm = step_parts_ms(
        model,
        accel,
        precision,
        tp,
        batch=np.array([float(decode_batch)]),
        context_total=np.array([float(decode_context_tokens)]),
        chunk_tokens=np.array([float(prefill_chunk_tokens)]),
        chunk_attention_flop=np.array([chunk_attention_flops(model, prefill_chunk_tokens, prefill_prefix_tokens)]),
        eff=efficiency,
        attention_dp=attention_dp,
    )
    overhead = float(step_floor_ms(model, accel, tp, float(decode_batch), efficiency, attention_dp=attention_dp))
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
    attention_dp: bool = False,
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
    memory, compute, attention, comm = step_parts_ms(
        model,
        accel,
        precision,
        tp,
        batch=np.zeros(1),
        context_total=np.zeros(1),
        chunk_tokens=np.array([new]),
        chunk_attention_flop=np.array([prefill_attention_flops(model, tokens, cached)]),
        eff=eff,
        attention_dp=attention_dp,
    )
    return float(max(memory[0], compute[0]) + attention[0] + comm[0]) + float(step_floor_ms(model, accel, tp, 1.0, eff))


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


def kv_capacity_bytes(
    model: ModelSpec, accel: AcceleratorSpec, precision: str, tp: int, eff: ServingEfficiency, *, attention_dp: bool = False
) -> float:
    """HBM a replica has for KV after weights and the activation reserve; negative if weights do not fit.

    Under data-parallel attention every GPU holds the shared weights (attention, dense layers, shared experts). [bytes]
    """
    stored = weight_bytes(model, precision)
    if attention_dp:
        stored += (tp - 1) * moe_split_b(model)[0] * 1e9 * WEIGHT_BYTES[precision]
    return tp * accel.hbm_gb * 1e9 * (1.0 - eff.activation_reserve) - stored
