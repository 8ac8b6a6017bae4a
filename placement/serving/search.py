"""The node search: the batch, tensor-parallel degree and prefill chunk budget that give the most goodput.

For one model on one accelerator and a :class:`Workload` (prompt and answer lengths, the p99 objective), every
tensor-parallel degree the node allows is searched, colocated or disaggregated (DESIGN.md section 3):

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
(:func:`best_candidate`); the step times come from :mod:`placement.serving.kernels`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec, kv_bytes_per_token
from placement.serving.kernels import (
    decode_step,
    kv_capacity_bytes,
    kv_copies,
    kv_transfer_ms,
    layouts,
    prefill_attention_flops,
    prefill_ms,
    step_floor_ms,
    step_parts_ms,
)
from placement.serving.lengths import LengthDistribution
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap
from placement.serving.speculative import Speculation

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


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What a node serves and the objective it must meet, in the units the search reads.

    Attributes
    ----------
    input_tokens : float
        Mean prompt. [tokens]
    input_tokens_max : float
        Longest prompt the node must hold and answer inside the TTFT objective. [tokens]
    output_tokens : float
        Mean answer. [tokens]
    ttft_p99_ms, itl_p99_ms : float
        The objective. [ms]
    min_tok_s_per_user : float
        Interactivity floor: decode speed per user. [tokens/s]
    hit_rate : float
        Share of prompt tokens served from the prefix cache.
    speculation : Speculation or None
        Speculative decoding (:mod:`placement.serving.speculative`); None decodes one token per step.
    kv_link_gbit_s : float or None
        Disaggregated pools in different metros: the prompt's KV crosses one link of this rate (the whole KV,
        one copy); None: the pools share a hall and every prefill GPU sends its shard over its own scale-out NIC.
        [Gbit/s]
    itl_metric : {"step", "tpot"}
        What the p99 inter-token objective bounds: ``"tpot"`` (default, the metric the calibration is fitted on),
        each request's mean time per output token (MLPerf's TPOT and every serving benchmark's), so the
        chunk-carrying steps count at their share of its steps; ``"step"``, every single gap between tokens, so
        the p99 is set by the chunk-carrying steps.
    """

    input_tokens: float
    input_tokens_max: float
    output_tokens: float
    ttft_p99_ms: float
    itl_p99_ms: float
    min_tok_s_per_user: float
    hit_rate: float
    speculation: Speculation | None = None
    kv_link_gbit_s: float | None = None
    itl_metric: str = "tpot"

    def p99_batch(self, batch: NDArray[np.float64]) -> NDArray[np.float64]:
        """The batch the p99 inter-token objective is read at, for a mean batch ``batch`` under Poisson arrivals.

        Sequences in flight fluctuate as an M/G/∞ queue (variance = mean). ``"step"`` (every token's gap): the
        99th percentile of the instantaneous batch, ``B + z · sqrt(B)``. ``"tpot"`` (each request's mean time per
        output token, what MLPerf and serving benchmarks report as TPOT): a request averages the batch over its
        own life, and the average of an M/D/∞ count over one service time has variance ``2B / 3``, so
        ``B + z · sqrt(2B / 3)``.
        """
        spread = np.sqrt(batch) if self.itl_metric == "step" else np.sqrt(2.0 * batch / 3.0)
        return np.asarray(batch + P99_Z * spread)

    @property
    def tokens_per_step(self) -> float:
        """Mean tokens a decode step emits per sequence (1 without speculation)."""
        return 1.0 if self.speculation is None else self.speculation.tokens_per_step

    @property
    def verify_tokens(self) -> float:
        """Tokens each decoding sequence carries through a step's GEMMs (1 without speculation)."""
        return 1.0 if self.speculation is None else float(self.speculation.verify_tokens)

    @property
    def step_factor(self) -> float:
        """A decode step with its draft passes over the same step without them (1 without speculation)."""
        return 1.0 if self.speculation is None else self.speculation.step_factor

    @property
    def answer_steps(self) -> float:
        """Decode steps a mean answer takes. [steps]"""
        return self.output_tokens / self.tokens_per_step

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
    def prompt_cv2(self) -> float:
        """Squared coefficient of variation of the prompt tokens to prefill (0: every prompt the mean).

        A prompt holds its replica's chunk pipeline in proportion to its length, so this is the prefill service
        time's variability that the queue's tail reads (Allen-Cunneen).
        """
        lengths = self.new_token_quantiles
        mean = float(lengths.mean())
        return float(lengths.var() / mean**2) if mean > 0 else 0.0

    @property
    def context_tokens(self) -> float:
        """Mean KV length a decoding sequence reads: mean prompt plus half the answer. [tokens]"""
        return self.input_tokens + self.output_tokens / 2.0

    @property
    def longest_tokens(self) -> float:
        """KV of the longest request at its end: longest prompt plus the answer. [tokens]"""
        return self.input_tokens_max + self.output_tokens


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


def _attention_per_token(model: ModelSpec, w: Workload) -> float:
    """Mean causal-attention work per prefilled prompt token of the mean prompt. [FLOP/token]"""
    if w.new_tokens <= 0:
        return 0.0
    return prefill_attention_flops(model, w.input_tokens, w.input_tokens - w.new_tokens) / w.new_tokens


@dataclass(frozen=True, kw_only=True)
class ChunkSizes:
    """The chunks a lone prompt puts in steps, per chunk budget: sizes, ascending, and their share of chunk steps.

    A prompt of ``L`` new tokens under a budget ``K`` fills ``floor(L / K)`` steps with ``K`` tokens and one
    with the rest; over the prompt mix that gives the chunk size of a random chunk-carrying step.
    """

    sizes: tuple[NDArray[np.float64], ...]  # per budget: chunk sizes, ascending [tokens]
    upper: tuple[NDArray[np.float64], ...]  # per budget: share of chunk steps whose chunk is at least that size
    steps_per_prompt: NDArray[np.float64]  # per budget: mean chunk steps of one prompt, E[ceil(L / K)]

    @classmethod
    def of(cls, new_tokens: NDArray[np.float64], chunks: NDArray[np.float64]) -> ChunkSizes:
        """The chunk sizes of the prompts ``new_tokens`` (equally likely lengths) under each budget of ``chunks``."""
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
        return cls(sizes=tuple(sizes), upper=tuple(upper), steps_per_prompt=np.asarray(steps))

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


@dataclass(frozen=True, kw_only=True)
class ChunkedSteps:
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
    sizes: ChunkSizes
    step_at: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]  # (sequences, chunk) -> ms
    tokens_per_step: float = 1.0  # tokens a step emits per sequence (speculative decoding: above 1)
    itl_metric: str = "tpot"  # Workload.itl_metric
    answer_steps: float = 1.0  # Workload.answer_steps: the steps a request's TPOT averages over
    p99_batch: Callable[[NDArray[np.float64]], NDArray[np.float64]] = np.asarray  # Workload.p99_batch

    @cached_property
    def mean_ms(self) -> NDArray[np.float64]:
        """Mean step (work-weighted mix of chunk-carrying and pure steps) of every (K, B); computed once. [ms]"""
        f = np.minimum(self.mixed_share, 1.0)
        return np.asarray(f * self.mixed_ms + (1.0 - f) * self.pure_ms)

    def itl_ms(self, load: float | NDArray[np.float64] = 1.0) -> NDArray[np.float64]:
        """p99 ITL at a share ``load`` of capacity: the step exceeded by 1 % of tokens.

        Every step emits one token per decoding sequence, so the token-weighted p99 is the step-weighted one:
        the pure step at the p99 batch while at most 1 % of steps carry a chunk; above, the chunk step whose
        chunk is exceeded by ``1 % / share`` of chunk steps. Under ``"tpot"`` the p99 request's mean over its own
        steps instead: the steps at the p99 batch, a share of them carrying a full chunk, that share the p99 of
        a binomial count over the answer's steps.
        """
        rows = range(len(self.chunk))
        return np.stack([self.itl_row_ms(ki, slice(None), load) for ki in rows])

    def itl_cell_ms(self, ki: int, bi: int, load: float) -> float:
        """:meth:`itl_ms` of one (chunk budget, batch) pair. [ms]"""
        return float(self.itl_row_ms(ki, slice(bi, bi + 1), load)[0])

    def itl_row_ms(self, ki: int, cols: slice, load: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """:meth:`itl_ms` of the batches ``cols`` under chunk budget ``ki``, at one load or an array of loads. [ms]"""
        batch = self.batch[cols]
        if self.itl_metric == "tpot":  # a request's mean: chunk steps count at their share of the work
            high = self.p99_batch(batch)
            share = np.minimum(self.mixed_share[ki, cols] * load * high / batch, 1.0)
            k = np.full_like(high, self.chunk[ki])
            chunk, pure = self.step_at(high, k), self.step_at(high, np.zeros_like(high))
            # how many of a request's own steps carry a chunk varies from request to request (binomial over its steps)
            seen = np.minimum(share + P99_Z * np.sqrt(share * (1.0 - share) / max(self.answer_steps, 1.0)), 1.0)
            mean = seen * chunk + (1.0 - seen) * pure
            return np.asarray(mean / self.tokens_per_step)
        steps = np.minimum(self.chunk_step_share[ki, cols] * load, 1.0)
        packed = np.minimum(self.mixed_share[ki, cols] * load, 1.0)
        tokens = self.sizes.tail_tokens(ki, MIXED_STEP_TAIL_SHARE / np.maximum(steps, 1e-12), packed)
        mixed = self.step_at(batch + P99_Z * np.sqrt(batch), tokens)
        pure = self.pure_p99_ms[ki, cols]
        step = np.where(steps > MIXED_STEP_TAIL_SHARE, np.maximum(mixed, pure), pure)
        return np.asarray(step / self.tokens_per_step)  # per output token: a step emits tokens_per_step of them


def speculative_step_ms(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    *,
    batch: NDArray[np.float64],
    chunk_tokens: NDArray[np.float64],
    chunk_attention_flop: NDArray[np.float64],
    workload: Workload,
    eff: ServingEfficiency,
    attention_dp: bool = False,
) -> NDArray[np.float64]:
    """Step time of a decode batch (with any prefill chunk), speculative decoding's verify tokens and drafts included. [ms]

    Without speculation it is the plain step. With it each sequence carries its verify tokens through the step,
    and the draft passes add ``step_factor - 1`` of a plain decode step of the same batch (the chunk's prompt
    tokens do not go through them).
    """
    w = workload
    overhead = step_floor_ms(model, accel, tp, batch, eff, attention_dp=attention_dp)

    def plain_ms(chunk: NDArray[np.float64], attention_flop: NDArray[np.float64], verify: float) -> NDArray[np.float64]:
        memory, compute, attention, comm = step_parts_ms(
            model,
            accel,
            precision,
            tp,
            batch=batch,
            context_total=batch * w.context_tokens,
            chunk_tokens=chunk,
            chunk_attention_flop=attention_flop,
            eff=eff,
            verify_tokens=verify,
            attention_dp=attention_dp,
        )
        return np.asarray(np.maximum(memory, compute) + attention + comm + overhead)

    if w.speculation is None:
        return plain_ms(chunk_tokens, chunk_attention_flop, 1.0)
    no_chunk = np.zeros_like(chunk_tokens)
    draft = (w.step_factor - 1.0) * plain_ms(no_chunk, no_chunk, 1.0)
    return np.asarray(plain_ms(chunk_tokens, chunk_attention_flop, w.verify_tokens) + draft)


def chunked_steps(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    *,
    tp: int,
    batch: NDArray[np.float64],
    workload: Workload,
    eff: ServingEfficiency,
    attention_dp: bool = False,
) -> ChunkedSteps:
    """Pure and mixed step times over chunk budgets × batches, and the shares of work and steps carrying a chunk.

    Parameters
    ----------
    model, accel : ModelSpec, AcceleratorSpec
        What runs where.
    precision : str
        Weight precision.
    tp : int
        GPUs in the replica (tensor parallel).
    batch : numpy.ndarray
        Decode batches to evaluate (e.g. :func:`batch_grid`). [sequences]
    workload : Workload
        Prompt and answer lengths.
    eff : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    ChunkedSteps
        Arrays of shape ``(len(CHUNK_TOKENS), len(batch))``.
    """
    w = workload
    chunk = np.array(CHUNK_TOKENS, dtype=float)[:, None]  # a chunk may carry several prompts
    b = batch[None, :]
    shape = (len(chunk), len(batch))
    per_token = _attention_per_token(model, w)

    def step_ms(seqs: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
        return speculative_step_ms(
            model,
            accel,
            precision,
            tp,
            batch=seqs,
            chunk_tokens=k,
            chunk_attention_flop=k * per_token,
            workload=w,
            eff=eff,
            attention_dp=attention_dp,
        )

    def total(seqs: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.broadcast_to(step_ms(seqs, k), shape))

    zero, full = np.zeros_like(chunk), np.broadcast_to(chunk, shape).copy()
    sizes = ChunkSizes.of(w.new_token_quantiles, chunk[:, 0])
    share = b * w.new_tokens / (w.answer_steps * chunk) * np.ones(shape)
    step_share = np.minimum(b / w.answer_steps * sizes.steps_per_prompt[:, None], 1.0) * np.ones(shape)
    return ChunkedSteps(
        chunk=chunk[:, 0],
        batch=batch,
        pure_ms=total(b, zero),
        mixed_ms=total(b, full),
        pure_p99_ms=total(w.p99_batch(b), zero),
        mixed_share=np.asarray(share),
        chunk_step_share=np.asarray(step_share),
        sizes=sizes,
        step_at=step_ms,
        tokens_per_step=w.tokens_per_step,
        itl_metric=w.itl_metric,
        answer_steps=w.answer_steps,
        p99_batch=w.p99_batch,
    )


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
        What runs where, as in :func:`chunked_steps`.
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
        Step times of the replica (:func:`chunked_steps`).
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
    w, capacity = workload, capacity_tok_s
    k, b = float(steps.chunk[ki]), float(steps.batch[bi])
    mixed, mean = float(steps.mixed_ms[ki, bi]), float(steps.mean_ms[ki, bi])
    if w.new_tokens <= 0:
        first = float(steps.pure_ms[ki, bi])
        cap = float(w.ttft_p99_ms - first >= 0)
        return Candidate(
            goodput_tok_s=cap * capacity,
            capacity_tok_s=capacity,
            batch=int(b),
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
    steps_longest = max(1, math.ceil(w.new_tokens_max / k))
    # every chunk of the longest prompt is a mixed step, and the last of them samples the first token:
    # prefill is all of them and no separate decode step precedes the first token
    prefill, first = steps_longest * mixed, 0.0
    service = w.new_tokens / k * mixed  # mean time a prompt holds its replica's chunk pipeline [ms]
    rho_full = b / (w.answer_steps * mean) * service  # that pipeline's utilisation at full batch
    floor_load = floor_tok_s / capacity  # the share of capacity this candidate must serve to beat the best
    chunk_budget_ms = w.ttft_p99_ms - prefill - first
    itl_target_ms = min(w.itl_p99_ms, 1e3 / max(w.min_tok_s_per_user, 1e-9))
    # one probe each of the chunk queue and the ITL at the load needed to beat the best, before either bisection
    cs2 = service_cv2(w, eff)
    # a prompt is routed to one replica on arrival and prefills in that replica's chunk pipeline, one prompt after
    # another: one server per replica, fed every ``replicas``-th arrival (round-robin of a Poisson stream)
    ca2 = 1.0 / replicas
    if rho_full > 0 and queue_misses(1, service, chunk_budget_ms, floor_load * rho_full, ca2=ca2, cs2=cs2):
        return None
    if _itl_misses(steps, ki, bi, floor_load, itl_target_ms):
        return None
    rho = utilisation_cap(1, service, chunk_budget_ms, ca2=ca2, cs2=cs2)
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
    slots, hold_ms = replicas * int(b), service + w.answer_steps * mean
    # from the prompt mix: the prompt varies, the answer's steps do not; an override holds for both queues
    hold_cs2 = cs2 * (service / hold_ms) ** 2 if eff.service_cv2 is None else cs2
    chunk_wait = queue_wait_p99_ms(1, service, cap * rho_full, ca2=ca2, cs2=cs2)
    slot_budget_ms = chunk_budget_ms - chunk_wait
    if queue_misses(slots, hold_ms, slot_budget_ms, floor_load, cs2=hold_cs2):
        return None  # the slot queue caps goodput below the best: the caller would not take it
    cap = min(cap, utilisation_cap(slots, hold_ms, slot_budget_ms, cs2=hold_cs2))
    if cap <= 0:
        return None
    queue = queue_wait_p99_ms(1, service, cap * rho_full, ca2=ca2, cs2=cs2)
    slot_wait = queue_wait_p99_ms(slots, hold_ms, cap, cs2=hold_cs2)
    itl = steps.itl_cell_ms(ki, bi, cap)
    step_share = min(1.0, cap * float(steps.chunk_step_share[ki, bi]))
    return Candidate(
        goodput_tok_s=cap * capacity,
        capacity_tok_s=capacity,
        batch=int(b),
        tp=tp,
        replicas=replicas,
        itl_ms=itl,
        prefill_ms=prefill,
        kv_transfer_ms=0.0,
        queue_p99_ms=queue,
        first_decode_ms=first,
        utilisation_cap=cap,
        prefill_gpu_share=0.0,
        chunk_tokens=int(k),
        mixed_step_share=step_share,
        limit=limit,
        slot_wait_p99_ms=slot_wait,
    )


def service_cv2(workload: Workload, eff: ServingEfficiency) -> float:
    """The prefill service time's squared coefficient of variation: an override, else the prompt mix's."""
    return workload.prompt_cv2 if eff.service_cv2 is None else eff.service_cv2


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
    wait caps the load. Parameters and result as in :func:`colocated_candidate`.
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
        Tensor-parallel degree to use; ``None`` searches every degree of :func:`tp_options`.
    disaggregated : bool
        Separate prefill and decode pools (:func:`disaggregated_candidate`) rather than chunked prefill
        (:func:`colocated_candidate`).
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
