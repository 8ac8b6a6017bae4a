"""The tail by simulation: a discrete-event model of one node under continuous batching and chunked prefill.

The analytic model (:mod:`placement.serving.request`) reads p99 TTFT off an M/G/c approximation at the
mean prompt and takes p99 ITL to be the step time at the planned batch. This module checks both by
running the node:

- **Replicas** of ``tp`` GPUs behind a router: each arrival goes to the next replica in turn (round-robin) and
  waits in that replica's FCFS queue, as the analytic model's chunk queue assumes (one server per replica fed
  every ``replicas``-th arrival). Each replica runs iteration-level scheduling: a step decodes one token of every
  running sequence and carries up to ``chunk_tokens`` prompt tokens of admitted, not yet prefilled requests,
  oldest first.
- **Admission** at each step start, oldest first: a request joins while fewer than ``max_batch``
  sequences run and its prompt plus reserved answer fits in the replica's free KV capacity (tokens).
  The head of the queue that does not fit blocks the rest (FCFS).
- **TTFT** of a request is the end of the step that completes its prefill (its first token) minus its
  arrival: queue + chunked prefill; no network and no other component. Every later token comes out at
  the end of one step, so each step of duration ``d`` carrying ``B`` decoding sequences contributes
  ``B`` inter-token gaps of ``d``: p99 ITL is the ``B``-weighted 99th percentile of step durations.
- **Speculative decoding** (:mod:`placement.serving.speculative`): each decode step verifies ``k`` draft tokens of
  every sequence and emits ``1 +`` a truncated-geometric number of accepted ones (acceptance ``a``, at most ``k``;
  mean ``(1 - a^(k+1)) / (1 - a)``), so a request takes as many verify steps as its draws need to reach its answer
  (drawn per request, seeded). The step time is the analytic model's (:func:`physics_step_model` with the
  speculation: ``k + 1`` tokens per sequence through the GEMMs plus the draft passes). A step's gap per token is its
  duration over the tokens it emits per sequence, weighted by the tokens.
- **Arrivals** are Poisson; lengths are drawn from :class:`LengthDistribution` (clipped lognormal
  from a mean and a maximum, or an empirical sample).

Statistics skip a warm-up share of the requests and the drain after the last arrival. The step time is
injected (``step_ms(decode_batch, decode_context_tokens, prefill_chunk_tokens)``, the context being the
KV tokens the decoding sequences read in total); :func:`physics_step_model` builds it from the step-time kernels.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import CALIBRATED, ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec, get_accelerator, get_model, kv_bytes_per_token
from placement.serving.kernels import (
    chunk_attention_flops,
    kv_capacity_bytes,
    kv_copies,
    mixed_step_ms,
    step_floor_ms,
    step_parts_ms,
)
from placement.serving.lengths import LengthDistribution
from placement.serving.request import ServingRequest, ServingResult, serve
from placement.serving.speculative import Speculation, speculation_for

#: ``step_ms(decode_batch, decode_context_tokens, prefill_chunk_tokens) -> ms``: one step of a replica;
#: ``decode_context_tokens`` is the KV the decoding sequences read, summed over the batch (as ``mixed_step_ms``). [ms]
StepModel = Callable[[int, float, int], float]
#: How the simulated engine's prompt chunk per step is set (see :func:`node_config`), or the chunk itself. [tokens]
ChunkPolicy = Literal["itl", "analytic"] | int

#: Largest prompt chunk per step the adapter configures (vLLM's ``max_num_batched_tokens`` range). [tokens]
MAX_CHUNK_TOKENS = 8192


@dataclass(frozen=True)
class NodeConfig:
    """How one node is run: replicas, the engine's limits and its step time.

    Parameters
    ----------
    replicas : int
        Tensor-parallel replicas sharing the node's queue.
    max_batch : int
        Sequences running per replica (prefilling or decoding; an engine's ``max_num_seqs``).
    chunk_tokens : int
        Prompt tokens a step may carry (``max_num_batched_tokens`` less the decode tokens). [tokens]
    kv_capacity_tokens : int
        KV cache of one replica. [tokens]
    step_ms : StepModel
        Duration of one step (with speculation: the draft passes and the verify step). [ms]
    speculation : Speculation, optional
        Speculative decoding: each decode step emits a random number of tokens per sequence; None: one.
    """

    replicas: int
    max_batch: int
    chunk_tokens: int
    kv_capacity_tokens: int
    step_ms: StepModel
    speculation: Speculation | None = None


@dataclass(frozen=True)
class SimWorkload:
    """What arrives at the node.

    Parameters
    ----------
    arrival_rate_per_s : float
        Poisson arrival rate at the node (all replicas). [requests/s]
    prompt, output : LengthDistribution
        Prompt and answer lengths; the answer counts the first token. [tokens]
    prefix_cache_hit_rate : float
        Share of each prompt already cached: only the rest is prefilled (all of it takes KV).
    reserve_output_tokens : int, optional
        KV reserved for the answer at admission (a request's ``max_tokens``); ``None`` reserves each
        request's own answer length. [tokens]
    """

    arrival_rate_per_s: float
    prompt: LengthDistribution
    output: LengthDistribution
    prefix_cache_hit_rate: float = 0.0
    reserve_output_tokens: int | None = None


@dataclass(frozen=True)
class SimResult:
    """What the simulated node did (statistics after the warm-up, before the drain).

    Attributes
    ----------
    requests : int
        Requests measured.
    ttft_p50_ms, ttft_p99_ms : float
        Time to first token at the node: queue + chunked prefill. [ms]
    itl_p50_ms, itl_p99_ms : float
        Gaps between consecutive tokens of a request, over all tokens. [ms]
    tpot_p50_ms, tpot_p99_ms : float
        Each request's mean time per output token after its first (last token - first token over answer - 1),
        over the requests with more than one token: MLPerf's and serving benchmarks' TPOT. [ms]
    throughput_tok_s : float
        Output tokens per second of the node. [tokens/s]
    tokens_per_step : float
        Tokens a decode step emitted per decoding sequence, on average (1 without speculative decoding).
    offered_tok_s : float
        Output tokens per second of the requests that arrived in the same window. [tokens/s]
    mean_batch : float
        Time-averaged decoding sequences per replica (idle time counts as 0).
    max_running : int
        Most sequences that ran at once on any replica.
    simulated_s : float
        Simulated time, drain included. [s]
    """

    requests: int
    ttft_p50_ms: float
    ttft_p99_ms: float
    itl_p50_ms: float
    itl_p99_ms: float
    tpot_p50_ms: float
    tpot_p99_ms: float
    throughput_tok_s: float
    offered_tok_s: float
    mean_batch: float
    max_running: int
    simulated_s: float
    tokens_per_step: float = 1.0

    def itl_p99_as(self, metric: str) -> float:
        """The p99 the inter-token objective reads: ``"tpot"`` each request's mean, ``"step"`` every gap. [ms]"""
        return self.tpot_p99_ms if metric == "tpot" else self.itl_p99_ms


@dataclass
class DecodeBatch:
    """What a replica's decode batch holds between steps: a colocated node's and a decode pool's alike."""

    step: int = 0
    busy: bool = False
    running: int = 0
    kv_used: int = 0
    decoding: int = 0
    context_sum: float = 0.0
    rate: float = 0.0  # tokens a step emits over the decoding sequences (their mean per step, summed)
    rate_now: float = 0.0
    finishing: dict[int, list[int]] = field(default_factory=dict)  # step -> requests whose last token it makes
    queue: deque[int] = field(default_factory=deque)  # routed here, not yet admitted (FCFS)
    started_ms: float = 0.0
    batch_now: int = 0


@dataclass
class _Replica(DecodeBatch):
    """The state of one colocated replica between steps."""

    prefilling: deque[list[int]] = field(default_factory=deque)  # [request, prefill tokens left]
    completing: list[int] = field(default_factory=list)  # requests whose prefill the current step completes


@dataclass(frozen=True)
class DecodeRequests:
    """What each request brings to a decode batch.

    Parameters
    ----------
    prompt, output : numpy.ndarray of int
        Prompt and answer tokens. [tokens]
    decode_steps : numpy.ndarray of int
        Decode steps after the first token. [steps]
    kv_tokens : numpy.ndarray of int
        Tokens of KV cache the request holds while it runs. [tokens]
    per_step : numpy.ndarray
        Tokens per step after its first: 1 without speculation, exact over its life with it.
    """

    prompt: NDArray[np.int64]
    output: NDArray[np.int64]
    decode_steps: NDArray[np.int64]
    kv_tokens: NDArray[np.int64]
    per_step: NDArray[np.float64]

    @classmethod
    def of(
        cls, prompt: NDArray[np.int64], output: NDArray[np.int64], decode_steps: NDArray[np.int64], kv_tokens: NDArray[np.int64]
    ) -> DecodeRequests:
        """The requests, their tokens per step computed once."""
        per_step = np.asarray((output - 1) / np.maximum(decode_steps, 1), dtype=float)
        return cls(prompt, output, decode_steps, kv_tokens, per_step)


def admit(rep: DecodeBatch, requests: DecodeRequests, max_batch: int, kv_capacity_tokens: int) -> list[int]:
    """Admit queued requests first come, first served while the batch and the KV cache have room: those admitted."""
    admitted = []
    while rep.queue and rep.running < max_batch:
        q = rep.queue[0]
        need = int(requests.kv_tokens[q])
        if rep.kv_used + need > kv_capacity_tokens:
            break
        rep.queue.popleft()
        rep.running += 1
        rep.kv_used += need
        admitted.append(q)
    return admitted


def _release(rep: DecodeBatch, trace: Trace, requests: DecodeRequests, q: int, now: float) -> None:
    """A request's last token at ``now``: its slot and its KV freed."""
    trace.last_token_ms[q] = now
    rep.running -= 1
    rep.kv_used -= int(requests.kv_tokens[q])


def end_step(rep: DecodeBatch, trace: Trace, first: list[int], now: float, requests: DecodeRequests) -> None:
    """Record a decode step that ended at ``now``, retire what it finished, and join ``first`` to the batch.

    ``first``: the requests whose first token the step made (a prefill completed, or KV that arrived).
    """
    trace.step_start_ms.append(rep.started_ms)
    trace.step_ms.append(now - rep.started_ms)
    trace.step_decoding.append(rep.batch_now)
    trace.step_tokens.append(rep.rate_now + len(first))
    trace.step_decode_tokens.append(rep.rate_now)
    rep.context_sum += rep.rate_now
    for q in rep.finishing.pop(rep.step, []):
        _release(rep, trace, requests, q, now)
        rep.decoding -= 1
        rep.rate -= float(requests.per_step[q])
        rep.context_sum -= float(requests.prompt[q] + requests.output[q])
    for q in first:
        trace.first_token_ms[q] = now
        if requests.output[q] <= 1:
            _release(rep, trace, requests, q, now)
            continue
        rep.decoding += 1
        rep.rate += float(requests.per_step[q])
        rep.context_sum += float(requests.prompt[q] + 1)
        rep.finishing.setdefault(rep.step + int(requests.decode_steps[q]), []).append(q)
    rep.step += 1


@dataclass
class Trace:
    """Everything recorded while running: per request and per step."""

    first_token_ms: NDArray[np.float64]
    last_token_ms: NDArray[np.float64]
    step_start_ms: list[float] = field(default_factory=list)
    step_ms: list[float] = field(default_factory=list)
    step_decoding: list[int] = field(default_factory=list)
    step_tokens: list[float] = field(default_factory=list)
    step_decode_tokens: list[float] = field(default_factory=list)
    max_running: int = 0


class _Engine:
    """The event loop: arrivals and step ends in time order; steps start when the previous one ends."""

    def __init__(
        self,
        node: NodeConfig,
        arrival_ms: NDArray[np.float64],
        prompt: NDArray[np.int64],
        output: NDArray[np.int64],
        new_tokens: NDArray[np.int64],
        reserve: NDArray[np.int64],
        decode_steps: NDArray[np.int64],
    ) -> None:
        self.node, self.arrival_ms, self.new_tokens = node, arrival_ms, new_tokens
        self.requests = DecodeRequests.of(prompt, output, decode_steps, prompt + reserve)
        self.replicas = [_Replica() for _ in range(node.replicas)]
        self.ends: list[tuple[float, int]] = []
        self.trace = Trace(np.full(len(arrival_ms), np.nan), np.full(len(arrival_ms), np.nan))

    def run(self) -> Trace:
        n, a = len(self.arrival_ms), 0
        while a < n or self.ends:
            if a < n and (not self.ends or self.arrival_ms[a] <= self.ends[0][0]):
                r = a % len(self.replicas)  # the router's turn
                self.replicas[r].queue.append(a)
                if not self.replicas[r].busy:
                    self._start(r, float(self.arrival_ms[a]))
                a += 1
                continue
            now, r = heapq.heappop(self.ends)
            self._finish(r, now)
            self._start(r, now)
        return self.trace

    def _admit(self, rep: _Replica) -> None:
        for q in admit(rep, self.requests, self.node.max_batch, self.node.kv_capacity_tokens):
            rep.prefilling.append([q, int(self.new_tokens[q])])
        self.trace.max_running = max(self.trace.max_running, rep.running)

    def _start(self, r: int, now: float) -> None:
        rep = self.replicas[r]
        self._admit(rep)
        budget, chunk = self.node.chunk_tokens, 0
        rep.completing = []
        for entry in rep.prefilling:
            if budget <= 0:
                break
            take = min(entry[1], budget)
            entry[1] -= take
            budget -= take
            chunk += take
            if entry[1] == 0:
                rep.completing.append(entry[0])
        for _ in rep.completing:
            rep.prefilling.popleft()
        if rep.decoding == 0 and not rep.completing and chunk == 0:
            rep.busy = False
            return
        duration = float(self.node.step_ms(rep.decoding, rep.context_sum, chunk))
        rep.busy, rep.started_ms, rep.batch_now, rep.rate_now = True, now, rep.decoding, rep.rate
        heapq.heappush(self.ends, (now + duration, r))

    def _finish(self, r: int, now: float) -> None:
        rep = self.replicas[r]
        end_step(rep, self.trace, rep.completing, now, self.requests)
        rep.completing = []


def run_node(
    node: NodeConfig,
    arrival_ms: NDArray[np.float64],
    prompt_tokens: NDArray[np.int64],
    output_tokens: NDArray[np.int64],
    *,
    prefix_cache_hit_rate: float = 0.0,
    reserve_output_tokens: int | None = None,
    decode_steps: NDArray[np.int64] | None = None,
) -> Trace:
    """Run the node on given requests until every one has finished (the engine behind :func:`simulate`).

    Parameters
    ----------
    node : NodeConfig
        Replicas, limits and step time.
    arrival_ms : numpy.ndarray
        Arrival times, ascending. [ms]
    prompt_tokens, output_tokens : numpy.ndarray of int
        Lengths of each request (the answer counts the first token, >= 1). [tokens]
    prefix_cache_hit_rate : float
        Share of each prompt not prefilled.
    reserve_output_tokens : int, optional
        KV reserved for each answer (default: its own length). [tokens]
    decode_steps : numpy.ndarray of int, optional
        Decode steps each request takes after its first token (:func:`speculative_steps`); default one per token.

    Returns
    -------
    Trace
        First-token time of each request and every step's start, duration, decoding batch and tokens.

    Raises
    ------
    ValueError
        When a request can never be admitted (its prompt and reserved answer exceed a replica's KV).
    """
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.maximum(np.asarray(output_tokens, dtype=np.int64), 1)
    reserve = output if reserve_output_tokens is None else np.full_like(output, reserve_output_tokens)
    need = int((prompt + reserve).max(initial=0))
    if need > node.kv_capacity_tokens:
        raise ValueError(
            f"a request needs {need:,} KV tokens (prompt + reserved answer) but a replica holds "
            f"{node.kv_capacity_tokens:,}: it could never be admitted; shorten the lengths or use a larger replica"
        )
    if node.chunk_tokens < 1 or node.max_batch < 1 or node.replicas < 1:
        raise ValueError("chunk_tokens, max_batch and replicas must each be at least 1")
    new = np.maximum(np.rint(prompt * (1.0 - prefix_cache_hit_rate)).astype(np.int64), 1)
    steps = output - 1 if decode_steps is None else np.asarray(decode_steps, dtype=np.int64)
    return _Engine(node, np.asarray(arrival_ms, dtype=float), prompt, output, new, reserve, steps).run()


def speculative_steps(
    tokens: NDArray[np.int64], draft_tokens: int, acceptance_rate: float, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Verify steps each request takes to emit ``tokens`` tokens when a step emits 1 + the accepted drafts.

    A step accepts each of its ``k`` draft tokens with probability ``a`` given the ones before it, and stops at the
    first rejection: ``min(Geometric, k)`` accepted, plus the target's own token, so ``(1 - a^(k+1)) / (1 - a)`` on
    average (:attr:`~placement.serving.speculative.Speculation.tokens_per_step`). The last step may emit more than
    the answer needs.

    Parameters
    ----------
    tokens : numpy.ndarray of int
        Tokens each request still has to emit (its answer after the first token). [tokens]
    draft_tokens : int
        Drafts verified per step (``k``).
    acceptance_rate : float
        Per-token acceptance ``a`` (0 <= a < 1).
    rng : numpy.random.Generator
        Random draws.

    Returns
    -------
    numpy.ndarray of int
        Steps of each request (0 for nothing to emit). [steps]
    """
    left = np.asarray(tokens, dtype=np.int64).copy()
    steps = np.zeros_like(left)
    active = np.flatnonzero(left > 0)
    while len(active):
        uniform = rng.random(len(active))
        accepted = (
            np.minimum(np.floor(np.log1p(-uniform) / math.log(acceptance_rate)), draft_tokens)
            if acceptance_rate > 0
            else np.zeros(len(active))
        )
        left[active] -= 1 + accepted.astype(np.int64)
        steps[active] += 1
        active = active[left[active] > 0]
    return steps


def weighted_quantile(values: NDArray[np.float64], weights: NDArray[np.float64], q: float) -> float:
    """Quantile of ``values`` where each counts ``weights`` times (NaN with no weight)."""
    order = np.argsort(values)
    cumulative = np.cumsum(np.asarray(weights, dtype=float)[order])
    if len(cumulative) == 0 or cumulative[-1] <= 0:
        return math.nan
    return float(np.asarray(values)[order][np.searchsorted(cumulative, q * cumulative[-1], side="left")])


def warmup_requests(trace: Trace, arrival_ms: NDArray[np.float64], share: float) -> int:
    """First request measured: after ``share`` of them and two lifetimes of the first (the batch fills), at most half."""
    n = len(arrival_ms)
    fill_ms = arrival_ms[0] + 2.0 * (trace.last_token_ms[0] - arrival_ms[0])
    first = max(int(share * n), int(np.searchsorted(arrival_ms, fill_ms)))
    return min(first, n // 2)


def summarise_trace(
    trace: Trace, arrival_ms: NDArray[np.float64], output: NDArray[np.int64], warmup: int, replicas: int
) -> SimResult:
    """Statistics of the requests after the warm-up and the steps between the first measured and the last arrival."""
    t0, t1 = float(arrival_ms[warmup]), float(arrival_ms[-1])
    ttft = (trace.first_token_ms - arrival_ms)[warmup:]
    start = np.asarray(trace.step_start_ms)
    dur = np.asarray(trace.step_ms)
    batch = np.asarray(trace.step_decoding, dtype=float)
    tokens = np.asarray(trace.step_tokens, dtype=float)
    emitted = np.asarray(trace.step_decode_tokens, dtype=float)  # decode tokens of each step
    # a step's gap per token: its duration over the tokens it emits per sequence (the duration without speculation)
    per_token_ms = np.where(emitted > 0, dur * (batch / np.where(emitted > 0, emitted, 1.0)), dur)
    window = (start >= t0) & (start < t1)
    span_ms = max(t1 - t0, 1e-9)
    answers = output[warmup:]
    several = answers > 1
    tpot = ((trace.last_token_ms - trace.first_token_ms)[warmup:][several]) / (answers[several] - 1)
    return SimResult(
        requests=len(ttft),
        ttft_p50_ms=float(np.percentile(ttft, 50)),
        ttft_p99_ms=float(np.percentile(ttft, 99)),
        itl_p50_ms=weighted_quantile(per_token_ms[window], emitted[window], 0.50),
        itl_p99_ms=weighted_quantile(per_token_ms[window], emitted[window], 0.99),
        tpot_p50_ms=float(np.percentile(tpot, 50)) if len(tpot) else math.nan,
        tpot_p99_ms=float(np.percentile(tpot, 99)) if len(tpot) else math.nan,
        throughput_tok_s=float(tokens[window].sum()) / span_ms * 1e3,
        offered_tok_s=float(output[warmup:-1].sum()) / span_ms * 1e3,
        mean_batch=float((batch[window] * dur[window]).sum()) / span_ms / replicas,
        max_running=trace.max_running,
        simulated_s=float(start[-1] + dur[-1]) / 1e3 if len(start) else 0.0,
        tokens_per_step=float(emitted[window].sum() / batch[window].sum()) if batch[window].sum() > 0 else math.nan,
    )


def simulate(
    node: NodeConfig, workload: SimWorkload, *, requests: int = 3000, seed: int = 0, warmup_share: float = 0.1
) -> SimResult:
    """Simulate one node under Poisson arrivals; deterministic for a seed.

    Parameters
    ----------
    node : NodeConfig
        Replicas, limits and step time.
    workload : SimWorkload
        Arrival rate and length distributions.
    requests : int
        Requests to simulate (cost is about linear in ``requests × mean output``).
    seed : int
        Seed of the random generator (arrivals and lengths).
    warmup_share : float
        Leading share of requests left out of the statistics; the warm-up also lasts two lifetimes of the
        first request (while the batch fills), and never more than half the requests.

    Returns
    -------
    SimResult
        p50/p99 TTFT and ITL, throughput and mean batch.
    """
    if workload.arrival_rate_per_s <= 0 or requests < 2:
        raise ValueError("simulate needs a positive arrival rate and at least 2 requests")
    rng = np.random.default_rng(seed)
    arrival_ms = np.cumsum(rng.exponential(1e3 / workload.arrival_rate_per_s, size=requests))
    prompt = workload.prompt.draw(rng, requests)
    output = workload.output.draw(rng, requests)
    trace = run_node(
        node,
        arrival_ms,
        prompt,
        output,
        prefix_cache_hit_rate=workload.prefix_cache_hit_rate,
        reserve_output_tokens=workload.reserve_output_tokens,
        decode_steps=decode_steps_of(node.speculation, output, rng),
    )
    return summarise_trace(trace, arrival_ms, output, warmup_requests(trace, arrival_ms, warmup_share), node.replicas)


def decode_steps_of(speculation: Speculation | None, output: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
    """Decode steps of each answer after its first token: one per token, or the verify steps speculation draws. [steps]"""
    after_first = np.maximum(np.asarray(output, dtype=np.int64), 1) - 1
    if speculation is None:
        return after_first
    return speculative_steps(after_first, speculation.draft_tokens, speculation.acceptance_rate, rng)


# --- the adapter to the step-time kernels ----------------------------------------------------------


def physics_step_model(
    model: ModelSpec,
    accelerator: str,
    precision: str,
    *,
    tp: int,
    prefill_prefix_tokens: float,
    efficiency: ServingEfficiency = CALIBRATED,
    speculation: Speculation | None = None,
) -> StepModel:
    """A step time from :func:`placement.serving.kernels.mixed_step_ms`, the analytic model's own step.

    Parameters
    ----------
    model : ModelSpec
        Model shape.
    accelerator, precision : str
        Catalog id and precision.
    tp : int
        GPUs per replica.
    prefill_prefix_tokens : float
        Tokens of a prompt already in KV when a chunk of it is prefilled, on average (the cached prefix plus
        half the new tokens); the chunk's attention reads them. [tokens]
    efficiency : ServingEfficiency
        Achieved efficiencies.
    speculation : Speculation, optional
        Speculative decoding: the step as :func:`placement.serving.steps.speculative_step_ms` charges it
        (:func:`speculative_mixed_step_ms`); None: the plain step.

    Returns
    -------
    StepModel
        ``step_ms(decode_batch, decode context summed over the batch, prefill chunk)``, memoised on the mean
        context per sequence in 16-token bins. [ms]
    """
    accel = get_accelerator(accelerator)
    cache: dict[tuple[int, int, int], float] = {}

    def step_ms(decode_batch: int, decode_context_tokens: float, prefill_chunk_tokens: int) -> float:
        mean_context = decode_context_tokens / decode_batch if decode_batch else 0.0
        key = (decode_batch, int(mean_context) >> 4, prefill_chunk_tokens)
        if key not in cache:
            context = decode_batch * ((key[1] << 4) + 8)
            prefix = prefill_prefix_tokens if prefill_chunk_tokens else 0.0
            cache[key] = (
                mixed_step_ms(
                    model,
                    accel,
                    precision,
                    tp,
                    decode_batch=decode_batch,
                    decode_context_tokens=context,
                    prefill_chunk_tokens=prefill_chunk_tokens,
                    prefill_prefix_tokens=prefix,
                    efficiency=efficiency,
                )
                if speculation is None
                else speculative_mixed_step_ms(
                    model, accel, precision, tp, (decode_batch, context, prefill_chunk_tokens, prefix), efficiency, speculation
                )
            )
        return cache[key]

    return step_ms


def speculative_mixed_step_ms(
    model: ModelSpec,
    accel: AcceleratorSpec,
    precision: str,
    tp: int,
    step: tuple[float, float, float, float],
    efficiency: ServingEfficiency,
    speculation: Speculation,
) -> float:
    """One step of a speculative replica, as :func:`placement.serving.steps.speculative_step_ms` charges it. [ms]

    Every decoding sequence carries its ``k`` drafts and the next token through the GEMMs (weights and KV read once),
    the chunk's prompt tokens go through once, and the draft passes add ``k x draft_cost_share`` of the plain decode
    step of the same batch.

    Parameters
    ----------
    model, accel, precision, tp
        As in :func:`placement.serving.kernels.mixed_step_ms`.
    step : tuple of float
        ``(decode batch, decode context summed over the batch [tokens], prefill chunk [tokens], tokens of the chunk's
        prompt before it [tokens])``.
    efficiency : ServingEfficiency
        Achieved efficiencies.
    speculation : Speculation
        The method (drafts, acceptance, draft cost).

    Returns
    -------
    float
        Step time. [ms]
    """
    batch, context, chunk, prefix = step
    floor = float(step_floor_ms(model, accel, tp, float(batch), efficiency))

    def plain_ms(chunk_tokens: float, attention_flop: float, verify: float) -> float:
        memory, compute, attention, comm = step_parts_ms(
            model,
            accel,
            precision,
            tp,
            batch=np.array([float(batch)]),
            context_total=np.array([float(context)]),
            chunk_tokens=np.array([float(chunk_tokens)]),
            chunk_attention_flop=np.array([attention_flop]),
            eff=efficiency,
            verify_tokens=verify,
        )
        return float(max(memory[0], compute[0]) + attention[0] + comm[0]) + floor

    verify = plain_ms(chunk, chunk_attention_flops(model, chunk, prefix), float(speculation.verify_tokens))
    return verify + (speculation.step_factor - 1.0) * plain_ms(0.0, 0.0, 1.0)


def request_lengths(request: ServingRequest) -> tuple[LengthDistribution, LengthDistribution]:
    """Prompt and answer distributions of a request: prompts of mean ``input_tokens`` up to ``input_tokens_max``.

    The one place that reads lengths off a :class:`ServingRequest`; answers are fixed at their mean.
    """
    longest = float(request.input_tokens_max) if request.input_tokens_max is not None else None
    if longest is not None and longest <= request.input_tokens:
        longest = None
    return LengthDistribution(float(request.input_tokens), longest), LengthDistribution(float(request.output_tokens))


def _chunk_tokens(
    step: StepModel, request: ServingRequest, result: ServingResult, new_tokens: float, context: float, *, analytic: bool
) -> int:
    """The serving model's chunk budget (at least ``batch · new / output``), or the largest inside the ITL objective."""
    floor = max(1, math.ceil(result.batch * new_tokens / request.output_tokens))
    if analytic:
        return max(floor, int(result.chunk_tokens))
    grid = np.unique(np.geomspace(floor, MAX_CHUNK_TOKENS, 60).astype(int))
    fits = [int(k) for k in grid if step(result.batch, result.batch * context, int(k)) <= request.itl_p99_ms]
    return max(fits, default=floor)


def node_config(
    request: ServingRequest,
    result: ServingResult,
    *,
    efficiency: ServingEfficiency = CALIBRATED,
    chunk: ChunkPolicy = "analytic",
) -> NodeConfig:
    """The node as the analytic model plans it: its tensor-parallel degree, replicas and batch.

    The chunk budget (prompt tokens per step): ``"analytic"`` (default), the analytic model's own per-step prefill
    at its planned batch (``batch · new prompt tokens / output tokens``), so the simulation runs the engine the
    analytic figures describe; ``"itl"``, the largest chunk (up to :data:`MAX_CHUNK_TOKENS`, at least the
    analytic one) whose step at the planned batch and mean context stays inside the ITL objective, the setting
    that trades ITL for TTFT; or a number. KV capacity is the replica's HBM after weights and activation reserve.

    Parameters
    ----------
    request : ServingRequest
        What the node serves.
    result : ServingResult
        :func:`placement.serving.request.serve` of it (goodput > 0).
    efficiency : ServingEfficiency
        Achieved efficiencies.
    chunk : {"itl", "analytic"} or int
        How the chunk budget is set, or the budget itself. [tokens]

    Returns
    -------
    NodeConfig
        The node to simulate.
    """
    model = get_model(request.model)
    accel = get_accelerator(request.accelerator)
    prompt, output = request_lengths(request)
    new = prompt.mean * (1.0 - request.prefix_cache_hit_rate)
    speculation = result_speculation(request, result)
    step = physics_step_model(
        model,
        request.accelerator,
        request.precision,
        tp=result.tp,
        prefill_prefix_tokens=prompt.mean - new / 2.0,
        efficiency=efficiency,
        speculation=speculation,
    )
    if not isinstance(chunk, int):
        chunk = _chunk_tokens(step, request, result, new, prompt.mean + output.mean / 2.0, analytic=chunk == "analytic")
    per_token = kv_bytes_per_token(model, request.precision) * kv_copies(model, result.tp)
    kv_tokens = int(kv_capacity_bytes(model, accel, request.precision, result.tp, efficiency) // per_token)
    return NodeConfig(result.replicas, max(1, result.batch), chunk, kv_tokens, step, speculation)


def result_speculation(request: ServingRequest, result: ServingResult) -> Speculation | None:
    """The speculation the analytic result runs (``auto`` resolved to the method it kept), or None."""
    return speculation_for(request.model, result.speculative) if result.speculative else None


@dataclass(frozen=True)
class TailCheck:
    """Analytic and simulated figures of one node at one load.

    Attributes
    ----------
    analytic : ServingResult
        :func:`placement.serving.request.serve` of the request.
    simulated : SimResult
        The simulation at ``arrival_rate_per_s``.
    node : NodeConfig
        The node simulated.
    arrival_rate_per_s : float
        Requests per second offered to the node. [requests/s]
    load_factor : float
        Offered load over the analytic goodput.
    """

    analytic: ServingResult
    simulated: SimResult
    node: NodeConfig
    arrival_rate_per_s: float
    load_factor: float


def simulate_request(
    request: ServingRequest,
    *,
    load_factor: float = 1.0,
    requests: int = 3000,
    seed: int = 0,
    efficiency: ServingEfficiency = CALIBRATED,
    analytic: ServingResult | None = None,
    chunk: ChunkPolicy = "analytic",
) -> TailCheck | None:
    """Simulate the node the analytic model plans, at ``load_factor`` × its goodput.

    Parameters
    ----------
    request : ServingRequest
        Model, node, workload and objective.
    load_factor : float
        Offered output tokens/s over the analytic goodput (1: the planned utilisation).
    requests : int
        Requests to simulate.
    seed : int
        Random seed.
    efficiency : ServingEfficiency
        Achieved efficiencies.
    analytic : ServingResult, optional
        ``serve(request)`` when already computed.
    chunk : {"itl", "analytic"} or int
        Chunk budget policy of :func:`node_config`.

    Returns
    -------
    TailCheck or None
        None when the analytic model finds no goodput, or serves disaggregated (its pools:
        :func:`placement.serving.simulate_disaggregated.simulate_serving`).
    """
    result = analytic if analytic is not None else serve(request, efficiency=efficiency)
    if result.goodput_tok_s <= 0 or result.disaggregated:
        return None  # one colocated node; the pools are placement.serving.simulate_disaggregated's
    node = node_config(request, result, efficiency=efficiency, chunk=chunk)
    prompt, output = request_lengths(request)
    rate = load_factor * result.goodput_tok_s / output.mean
    workload = SimWorkload(rate, prompt, output, prefix_cache_hit_rate=request.prefix_cache_hit_rate)
    return TailCheck(result, simulate(node, workload, requests=requests, seed=seed), node, rate, load_factor)


def simulation_report(check: TailCheck) -> dict[str, Any]:
    """The ``simulated`` block of the CLI's ``goodput --json``: the simulation's figures and the node it ran.

    Parameters
    ----------
    check : TailCheck
        From :func:`simulate_request`.

    Returns
    -------
    dict
        :class:`SimResult` fields plus ``arrival_rate_per_s``, ``load_factor``, ``replicas``, ``max_batch``,
        ``chunk_tokens`` and ``kv_capacity_tokens``; floats that are not finite become ``None``.
    """
    node = check.node
    report: dict[str, Any] = {
        **asdict(check.simulated),
        "arrival_rate_per_s": check.arrival_rate_per_s,
        "load_factor": check.load_factor,
        "replicas": node.replicas,
        "max_batch": node.max_batch,
        "chunk_tokens": node.chunk_tokens,
        "kv_capacity_tokens": node.kv_capacity_tokens,
    }
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in report.items()}
