"""The tail of disaggregated serving by simulation: a prefill pool, the KV's transfer, and a decode pool, event by event.

The analytic disaggregated model (:mod:`placement.serving.disaggregated`) sizes the pools as fluid shares of the
node's GPUs and reads the p99 TTFT off an M/G/c prefill queue. This module runs them:

- **Prefill pool**: ``p`` replicas of ``tp`` GPUs, the integer split of the node's replicas nearest the analytic
  model's fluid share (:func:`pool_replicas`). Requests queue FCFS for the first free replica, which prefills one
  prompt at a time in :func:`placement.serving.kernels.prefill_ms` of its length (the cached prefix skipped).
- **KV transfer**: the prompt's KV then moves to the decode pool, in
  :func:`placement.serving.kernels.kv_transfer_ms` at the rate the analytic model uses: in one hall each prefill GPU
  sends its shard over its own scale-out NIC (nothing to send on a one-GPU node); across metros
  (``kv_link_gbit_s``) the whole KV crosses one WAN link, and the prompt's trip to the prefill metro and the KV's
  back add the round trip between the two metros the plan assumed (``network_rtt_ms``). A transfer is a delay:
  links are not shared (neither does the analytic model share them).
- **Decode pool**: the other replicas. A request whose KV has arrived goes to the replica with the
  fewest sequences (running or waiting) and is admitted FCFS at the next step start while the replica runs fewer than
  its KV-limited batch (:func:`placement.serving.candidate.max_batch`) and its KV fits; the analytic model sizes this
  pool to its load, so its batch floats around the planned one. Each step decodes one token of every running
  sequence in the physics step time at its batch and context (:func:`placement.serving.simulate.physics_step_model`,
  no prefill chunk), and a request's first token comes out of the first decode step it joins (the analytic model's
  ``first_decode_ms``). Speculative decoding runs as in :mod:`placement.serving.simulate`.
- **TTFT** is arrival to that first token: prefill queue + prefill + transfer (+ round trip) + the wait for a step
  start + one decode step. ITL and TPOT are the decode pool's, as the colocated node's.

Arrivals, lengths, warm-up and statistics are those of :func:`placement.serving.simulate.simulate` (seeded; the same
request counts). Pool sizes and the arrival rate come from the analytic result: ``load_factor`` × its goodput over
the mean answer.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placement.serving.candidate import max_batch
from placement.serving.efficiency import CALIBRATED, ServingEfficiency
from placement.serving.hardware import get_accelerator, get_model, kv_bytes_per_token
from placement.serving.kernels import kv_capacity_bytes, kv_copies, kv_transfer_ms, prefill_ms
from placement.serving.request import ServingRequest, ServingResult, serve
from placement.serving.simulate import (
    DecodeBatch,
    DecodeRequests,
    SimResult,
    SimWorkload,
    StepModel,
    TailCheck,
    Trace,
    admit,
    decode_steps_of,
    end_step,
    physics_step_model,
    request_lengths,
    result_speculation,
    simulate_request,
    summarise_trace,
    warmup_requests,
)
from placement.serving.speculative import Speculation

#: ``ms(prompt_tokens)``: a prompt's prefill on one prefill replica, or its KV's transfer to the decode pool. [ms]
PromptTime = Callable[[int], float]


@dataclass(frozen=True)
class PoolsConfig:
    """How a disaggregated node is run: its two pools, the KV's way between them and the decode step.

    Parameters
    ----------
    prefill_replicas, decode_replicas : int
        Replicas (of ``tp`` GPUs) in each pool.
    decode_max_batch : int
        Sequences a decode replica runs at most (the KV-limited batch).
    kv_capacity_tokens : int
        KV cache of one decode replica. [tokens]
    prefill_ms : PromptTime
        A prompt's prefill on one prefill replica, by its length. [ms]
    transfer_ms : PromptTime
        A prompt's KV from the prefill to the decode pool, by its length. [ms]
    step_ms : StepModel
        A decode replica's step (no prefill chunk). [ms]
    network_rtt_ms : float
        Round trip between the pools' metros (cross-metro prefill; 0 in one hall). [ms]
    speculation : Speculation, optional
        Speculative decoding in the decode pool.
    """

    prefill_replicas: int
    decode_replicas: int
    decode_max_batch: int
    kv_capacity_tokens: int
    prefill_ms: PromptTime
    transfer_ms: PromptTime
    step_ms: StepModel
    network_rtt_ms: float = 0.0
    speculation: Speculation | None = None


@dataclass(frozen=True)
class PoolFigures:
    """What each pool did over the measured window.

    Attributes
    ----------
    prefill_utilisation : float
        Busy share of the prefill replicas.
    prefill_wait_p99_ms : float
        p99 wait for a prefill replica (the analytic model's prefill queue). [ms]
    prefill_mean_ms : float
        Mean prefill of a prompt on one replica: the pool's service time. [ms]
    kv_arrival_p99_ms : float
        p99 of arrival to the KV at the decode pool (queue, prefill, transfer and round trip). [ms]
    decode_tok_s_per_replica : float
        Output tokens per second of one decode replica. [tokens/s]
    decode_mean_step_ms : float
        Mean decode step. [ms]
    """

    prefill_utilisation: float
    prefill_wait_p99_ms: float
    prefill_mean_ms: float
    kv_arrival_p99_ms: float
    decode_tok_s_per_replica: float
    decode_mean_step_ms: float


@dataclass(frozen=True)
class PoolsResult:
    """The simulation of both pools: the node's figures and each pool's."""

    node: SimResult
    pools: PoolFigures


@dataclass(frozen=True)
class PoolsCheck:
    """Analytic and simulated figures of disaggregated pools at one load.

    Attributes
    ----------
    analytic : ServingResult
        :func:`placement.serving.request.serve` of the request (disaggregated).
    simulated : SimResult
        The node's simulated figures (throughput over both pools).
    pool_figures : PoolFigures
        Each pool's.
    pools : PoolsConfig
        The pools simulated.
    arrival_rate_per_s : float
        Requests per second offered. [requests/s]
    load_factor : float
        Offered load over the analytic goodput.
    """

    analytic: ServingResult
    simulated: SimResult
    pool_figures: PoolFigures
    pools: PoolsConfig
    arrival_rate_per_s: float
    load_factor: float


def prefill_times(
    arrival_ms: NDArray[np.float64], service_ms: NDArray[np.float64], replicas: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Start and end of each prompt's prefill on ``replicas`` servers fed FCFS from one queue (M/G/c).

    Parameters
    ----------
    arrival_ms : numpy.ndarray
        Arrival times, ascending. [ms]
    service_ms : numpy.ndarray
        Each prompt's prefill. [ms]
    replicas : int
        Prefill replicas.

    Returns
    -------
    tuple of numpy.ndarray
        Start and end of each prefill. [ms]
    """
    free = [0.0] * replicas  # when each replica is next free (a heap)
    start = np.empty(len(arrival_ms))
    for i, (arrive, service) in enumerate(zip(arrival_ms.tolist(), service_ms.tolist(), strict=True)):
        start[i] = max(arrive, free[0])
        heapq.heapreplace(free, start[i] + service)
    return start, start + service_ms


@dataclass
class _DecodeReplica(DecodeBatch):
    """The state of one decode replica between steps."""

    joining: list[int] = field(default_factory=list)  # admitted: their first token is the current step's


class _DecodePool:
    """The decode pool's event loop: KV arrivals and step ends in time order."""

    def __init__(
        self,
        pools: PoolsConfig,
        ready_ms: NDArray[np.float64],
        prompt: NDArray[np.int64],
        output: NDArray[np.int64],
        decode_steps: NDArray[np.int64],
    ) -> None:
        self.pools, self.ready_ms = pools, ready_ms
        self.requests = DecodeRequests.of(prompt, output, decode_steps, prompt + output)
        self.replicas = [_DecodeReplica() for _ in range(pools.decode_replicas)]
        self.ends: list[tuple[float, int]] = []
        self.trace = Trace(np.full(len(ready_ms), np.nan), np.full(len(ready_ms), np.nan))

    def run(self) -> Trace:
        order = np.argsort(self.ready_ms, kind="stable").tolist()
        n, a = len(order), 0
        while a < n or self.ends:
            if a < n and (not self.ends or self.ready_ms[order[a]] <= self.ends[0][0]):
                q = order[a]
                r = min(range(len(self.replicas)), key=lambda i: self.replicas[i].running + len(self.replicas[i].queue))
                self.replicas[r].queue.append(q)
                if not self.replicas[r].busy:
                    self._start(r, float(self.ready_ms[q]))
                a += 1
                continue
            now, r = heapq.heappop(self.ends)
            self._finish(r, now)
            self._start(r, now)
        return self.trace

    def _start(self, r: int, now: float) -> None:
        rep, pools = self.replicas[r], self.pools
        rep.joining += admit(rep, self.requests, pools.decode_max_batch, pools.kv_capacity_tokens)
        self.trace.max_running = max(self.trace.max_running, rep.running)
        batch = rep.decoding + len(rep.joining)
        if batch == 0:
            rep.busy = False
            return
        context = rep.context_sum + float(sum(int(self.requests.prompt[q]) + 1 for q in rep.joining))
        duration = float(pools.step_ms(batch, context, 0))
        rep.busy, rep.started_ms, rep.batch_now, rep.rate_now = True, now, rep.decoding, rep.rate
        heapq.heappush(self.ends, (now + duration, r))

    def _finish(self, r: int, now: float) -> None:
        rep = self.replicas[r]
        end_step(rep, self.trace, rep.joining, now, self.requests)
        rep.joining = []


def simulate_pools(
    pools: PoolsConfig, workload: SimWorkload, *, requests: int = 3000, seed: int = 0, warmup_share: float = 0.1
) -> PoolsResult:
    """Simulate disaggregated pools under Poisson arrivals; deterministic for a seed.

    Parameters
    ----------
    pools : PoolsConfig
        The pools, the transfer and the decode step.
    workload : SimWorkload
        Arrival rate and lengths (``reserve_output_tokens`` is not read: a decode replica reserves each answer).
    requests : int
        Requests to simulate.
    seed : int
        Seed of the random generator (arrivals, lengths, speculation's draws).
    warmup_share : float
        As in :func:`placement.serving.simulate.simulate`.

    Returns
    -------
    PoolsResult
        The node's p50/p99 TTFT and ITL and throughput, and each pool's figures.

    Raises
    ------
    ValueError
        Without a positive rate and two requests, without a replica in a pool, or when a request's KV can never fit
        a decode replica.
    """
    if workload.arrival_rate_per_s <= 0 or requests < 2:
        raise ValueError("simulate_pools needs a positive arrival rate and at least 2 requests")
    if min(pools.prefill_replicas, pools.decode_replicas, pools.decode_max_batch) < 1:
        raise ValueError("each pool needs at least one replica, and a decode replica at least one sequence")
    rng = np.random.default_rng(seed)
    arrival_ms = np.cumsum(rng.exponential(1e3 / workload.arrival_rate_per_s, size=requests))
    prompt = workload.prompt.draw(rng, requests).astype(np.int64)
    output = np.maximum(workload.output.draw(rng, requests).astype(np.int64), 1)
    need = int((prompt + output).max())
    if need > pools.kv_capacity_tokens:
        raise ValueError(
            f"a request needs {need:,} KV tokens but a decode replica holds {pools.kv_capacity_tokens:,}: it could never "
            "be admitted"
        )
    service = np.array([pools.prefill_ms(int(n)) for n in prompt])
    start, done = prefill_times(arrival_ms, service, pools.prefill_replicas)
    transfer = np.array([pools.transfer_ms(int(n)) for n in prompt])
    ready = done + transfer + pools.network_rtt_ms
    steps = decode_steps_of(pools.speculation, output, rng)
    trace = _DecodePool(pools, ready, prompt, output, steps).run()
    first = warmup_requests(trace, arrival_ms, warmup_share)
    node = summarise_trace(trace, arrival_ms, output, first, pools.decode_replicas)
    return PoolsResult(node, _pool_figures(trace, arrival_ms, (start, done, ready), first, pools))


def _pool_figures(
    trace: Trace,
    arrival_ms: NDArray[np.float64],
    prefill: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    first: int,
    pools: PoolsConfig,
) -> PoolFigures:
    """Each pool's figures over the requests after the warm-up and the window up to the last arrival."""
    start, done, ready = prefill
    t0, t1 = float(arrival_ms[first]), float(arrival_ms[-1])
    span_ms = max(t1 - t0, 1e-9)
    busy = np.clip(np.minimum(done, t1) - np.maximum(start, t0), 0.0, None).sum()
    steps_start, steps_ms = np.asarray(trace.step_start_ms), np.asarray(trace.step_ms)
    window = (steps_start >= t0) & (steps_start < t1)
    tokens = float(np.asarray(trace.step_tokens)[window].sum())
    return PoolFigures(
        prefill_utilisation=float(busy / (span_ms * pools.prefill_replicas)),
        prefill_wait_p99_ms=float(np.percentile((start - arrival_ms)[first:], 99)),
        prefill_mean_ms=float((done - start)[first:].mean()),
        kv_arrival_p99_ms=float(np.percentile((ready - arrival_ms)[first:], 99)),
        decode_tok_s_per_replica=tokens / span_ms * 1e3 / pools.decode_replicas,
        decode_mean_step_ms=float(steps_ms[window].mean()) if window.any() else math.nan,
    )


# --- the pools the analytic model plans ------------------------------------------------------------


def pool_replicas(result: ServingResult) -> tuple[int, int]:
    """Prefill and decode replicas of a disaggregated result: the integer split nearest the analytic fluid one.

    The analytic model splits the node's GPUs in shares (``prefill_gpu_share``), whole replicas or not. Of the
    ``R = GPUs / tp`` replicas, ``p`` prefill and ``R - p`` decode, with ``p`` the split whose tighter pool keeps the
    most of its fluid size: the largest ``min(p / (s R), (R - p) / ((1 - s) R))``, the larger ``p`` on a tie (its
    queue sets the TTFT). A node of one replica simulates one of each (twice its GPUs).

    Parameters
    ----------
    result : ServingResult
        A disaggregated result.

    Returns
    -------
    tuple of int
        ``(prefill replicas, decode replicas)``.
    """
    replicas = max(result.gpus // max(result.tp, 1), 1)
    if replicas < 2:
        return 1, 1
    share = min(max(result.prefill_gpu_share, 1e-9), 1.0 - 1e-9)

    def kept(prefill: int) -> float:
        return min(prefill / (share * replicas), (replicas - prefill) / ((1.0 - share) * replicas))

    prefill = max(range(1, replicas), key=lambda p: (kept(p), p))
    return prefill, replicas - prefill


def pools_config(
    request: ServingRequest,
    result: ServingResult,
    *,
    efficiency: ServingEfficiency = CALIBRATED,
    network_rtt_ms: float = 0.0,
) -> PoolsConfig:
    """The pools as the analytic model plans them: its replicas, prefill, KV transfer and decode step.

    Parameters
    ----------
    request : ServingRequest
        What the node serves (``disaggregated``; ``kv_link_gbit_s`` for cross-metro prefill).
    result : ServingResult
        :func:`placement.serving.request.serve` of it (disaggregated, goodput > 0).
    efficiency : ServingEfficiency
        Achieved efficiencies.
    network_rtt_ms : float
        Round trip between the prefill and the decode metro (cross-metro prefill). [ms]

    Returns
    -------
    PoolsConfig
        The pools to simulate.
    """
    model, accel = get_model(request.model), get_accelerator(request.accelerator)
    tp, precision, hit = result.tp, request.precision, request.prefix_cache_hit_rate
    speculation = result_speculation(request, result)
    step = physics_step_model(
        model, request.accelerator, precision, tp=tp, prefill_prefix_tokens=0.0, efficiency=efficiency, speculation=speculation
    )
    kv_b = kv_bytes_per_token(model, precision)
    if request.kv_link_gbit_s is not None:  # across metros: the whole KV over one link
        link_gbit_s, per_token_bytes = request.kv_link_gbit_s, kv_b
    else:  # in one hall: each prefill GPU its shard over its own NIC; nothing to send on one GPU
        link_gbit_s, per_token_bytes = accel.scale_out_gbit_s, kv_b * kv_copies(model, tp) / tp if request.gpus > 1 else 0.0
    prefill_cache: dict[int, float] = {}

    def prefill_of(tokens: int) -> float:
        if tokens not in prefill_cache:
            prefill_cache[tokens] = prefill_ms(
                model, accel, precision, tp=tp, tokens=float(tokens), prefix_cache_hit_rate=hit, eff=efficiency
            )
        return prefill_cache[tokens]

    def transfer_of(tokens: int) -> float:
        return kv_transfer_ms(float(tokens), per_token_bytes, link_gbit_s)

    workload = replace(request.workload, speculation=speculation)
    b_max = max(result.batch, max_batch(model, accel, precision, tp=tp, workload=workload, eff=efficiency))
    per_token = kv_b * kv_copies(model, tp)
    kv_tokens = int(kv_capacity_bytes(model, accel, precision, tp, efficiency) // per_token)
    prefill_replicas, decode_replicas = pool_replicas(result)
    return PoolsConfig(
        prefill_replicas,
        decode_replicas,
        b_max,
        kv_tokens,
        prefill_of,
        transfer_of,
        step,
        network_rtt_ms=network_rtt_ms,
        speculation=speculation,
    )


def simulate_disaggregated_request(
    request: ServingRequest,
    *,
    load_factor: float = 1.0,
    requests: int = 3000,
    seed: int = 0,
    efficiency: ServingEfficiency = CALIBRATED,
    analytic: ServingResult | None = None,
    network_rtt_ms: float = 0.0,
) -> PoolsCheck | None:
    """Simulate the pools the analytic model plans, at ``load_factor`` × its goodput.

    Parameters
    ----------
    request : ServingRequest
        Model, node, workload and objective (``disaggregated``).
    load_factor : float
        Offered output tokens/s over the analytic goodput.
    requests, seed
        As in :func:`simulate_pools`.
    efficiency : ServingEfficiency
        Achieved efficiencies.
    analytic : ServingResult, optional
        ``serve(request)`` when already computed.
    network_rtt_ms : float
        Round trip between the pools' metros (cross-metro prefill). [ms]

    Returns
    -------
    PoolsCheck or None
        None when the analytic model finds no goodput or serves the request colocated.
    """
    result = analytic if analytic is not None else serve(request, efficiency=efficiency)
    if result.goodput_tok_s <= 0 or not result.disaggregated:
        return None
    pools = pools_config(request, result, efficiency=efficiency, network_rtt_ms=network_rtt_ms)
    prompt, output = request_lengths(request)
    rate = load_factor * result.goodput_tok_s / output.mean
    workload = SimWorkload(rate, prompt, output, prefix_cache_hit_rate=request.prefix_cache_hit_rate)
    found = simulate_pools(pools, workload, requests=requests, seed=seed)
    return PoolsCheck(result, found.node, found.pools, pools, rate, load_factor)


def simulate_serving(
    request: ServingRequest,
    *,
    load_factor: float = 1.0,
    requests: int = 3000,
    seed: int = 0,
    efficiency: ServingEfficiency = CALIBRATED,
    analytic: ServingResult | None = None,
    network_rtt_ms: float = 0.0,
) -> TailCheck | PoolsCheck | None:
    """Simulate the node as the analytic model serves it: colocated (speculative or not) or in two pools.

    Parameters and result as in :func:`placement.serving.simulate.simulate_request` and
    :func:`simulate_disaggregated_request` (``network_rtt_ms`` is read by the pools only); None without goodput.
    """
    result = analytic if analytic is not None else serve(request, efficiency=efficiency)
    if result.disaggregated:
        return simulate_disaggregated_request(
            request,
            load_factor=load_factor,
            requests=requests,
            seed=seed,
            efficiency=efficiency,
            analytic=result,
            network_rtt_ms=network_rtt_ms,
        )
    return simulate_request(
        request, load_factor=load_factor, requests=requests, seed=seed, efficiency=efficiency, analytic=result
    )


def pools_report(check: PoolsCheck) -> dict[str, Any]:
    """The ``simulated`` block of ``goodput --json`` for pools: the simulation's figures and the pools it ran.

    Parameters
    ----------
    check : PoolsCheck
        From :func:`simulate_disaggregated_request`.

    Returns
    -------
    dict
        :class:`SimResult` and :class:`PoolFigures` fields plus ``arrival_rate_per_s``, ``load_factor``,
        ``prefill_replicas``, ``decode_replicas``, ``max_batch`` (a decode replica's), ``chunk_tokens`` (0: no chunks),
        ``kv_capacity_tokens`` and ``network_rtt_ms``; floats that are not finite become ``None``.
    """
    pools = check.pools
    report: dict[str, Any] = {
        **asdict(check.simulated),
        **asdict(check.pool_figures),
        "arrival_rate_per_s": check.arrival_rate_per_s,
        "load_factor": check.load_factor,
        "prefill_replicas": pools.prefill_replicas,
        "decode_replicas": pools.decode_replicas,
        "replicas": pools.prefill_replicas + pools.decode_replicas,
        "max_batch": pools.decode_max_batch,
        "chunk_tokens": 0,
        "kv_capacity_tokens": pools.kv_capacity_tokens,
        "network_rtt_ms": pools.network_rtt_ms,
    }
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in report.items()}
