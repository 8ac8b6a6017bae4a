"""Step times of one replica as the node search reads them: decode steps with any prefill chunk, per budget × batch.

:func:`speculative_step_ms` adds speculative decoding's verify tokens and draft passes to the step of
:mod:`placement.serving.kernels`; :func:`chunked_steps` evaluates it over the chunk budgets :data:`CHUNK_TOKENS`
and a grid of batches, with the shares of work and of steps that carry a chunk (:class:`ChunkSizes` reads the
chunk sizes off the prompt mix); :class:`ChunkedSteps` turns them into the p99 ITL at a share of capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec
from placement.serving.kernels import prefill_attention_flops, step_floor_ms, step_parts_ms
from placement.serving.workload import P99_Z, Workload

#: Share of steps above which a quantile of the ITL is set by the mixed (chunk-carrying) steps: p99 → 1 %.
MIXED_STEP_TAIL_SHARE = 0.01
#: Prefill chunk budgets per step the search tries (tokens per step). [tokens]
CHUNK_TOKENS = (64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384)


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
        Decode batches to evaluate (e.g. :func:`~placement.serving.candidate.batch_grid`). [sequences]
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
