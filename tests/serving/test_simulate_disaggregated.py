"""Disaggregated pools simulated event by event: hand figures at low load, queueing with load, the analytic pools' rates."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from placement.serving.efficiency import CALIBRATED
from placement.serving.hardware import get_accelerator, get_model, kv_bytes_per_token
from placement.serving.kernels import kv_copies, mixed_step_ms, prefill_ms
from placement.serving.lengths import LengthDistribution
from placement.serving.request import ServingRequest, serve
from placement.serving.simulate import SimWorkload
from placement.serving.simulate_disaggregated import (
    PoolsConfig,
    pool_replicas,
    prefill_times,
    simulate_disaggregated_request,
    simulate_pools,
    simulate_serving,
)
from placement.serving.steps import speculative_step_ms

#: Llama-3.1-70B FP8 on 8 x H100 in two pools: every prompt 4,000 tokens, 100-token answers.
LONG = ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 4000, 100, 600, 30, disaggregated=True)
#: The same model on 16 GPUs: prompts of mean 2,000 up to 6,000, 200-token answers, three prefill replicas and one decode.
MIXED = ServingRequest("llama-3.1-70b", "h100-sxm", 16, "fp8", 2000, 200, 500, 40, input_tokens_max=6000, disaggregated=True)


def _constant_pools(prefill_replicas: int = 1, rtt_ms: float = 20.0) -> PoolsConfig:
    return PoolsConfig(
        prefill_replicas=prefill_replicas,
        decode_replicas=1,
        decode_max_batch=64,
        kv_capacity_tokens=1_000_000,
        prefill_ms=lambda n: 100.0,
        transfer_ms=lambda n: 5.0,
        step_ms=lambda b, c, k: 10.0,
        network_rtt_ms=rtt_ms,
    )


def test_prefill_queue_is_fcfs_over_its_replicas() -> None:
    arrivals = np.array([0.0, 0.0, 0.0, 50.0])
    start, done = prefill_times(arrivals, np.full(4, 100.0), 2)
    assert start.tolist() == [0.0, 0.0, 100.0, 100.0]
    assert done.tolist() == [100.0, 100.0, 200.0, 200.0]


def test_one_request_ttft_is_queue_prefill_transfer_round_trip_and_one_decode_step() -> None:
    pools = _constant_pools()
    workload = SimWorkload(0.001, LengthDistribution(1000), LengthDistribution(30))  # one every 1,000 s
    result = simulate_pools(pools, workload, requests=100, seed=0)
    assert result.node.ttft_p99_ms == pytest.approx(100.0 + 5.0 + 20.0 + 10.0)
    assert result.node.tpot_p99_ms == pytest.approx(10.0) and result.node.itl_p99_ms == pytest.approx(10.0)
    assert result.pools.prefill_wait_p99_ms == 0.0


def test_two_requests_at_once_queue_for_the_one_prefill_replica_and_join_at_a_step_end() -> None:
    from placement.serving.simulate_disaggregated import _DecodePool

    pools = _constant_pools()
    _, done = prefill_times(np.zeros(2), np.full(2, 100.0), 1)
    ready = done + 5.0 + 20.0  # 125 and 225
    trace = _DecodePool(pools, ready, np.full(2, 1000), np.full(2, 30), np.full(2, 29)).run()
    # the first decodes from 125 in 10 ms steps; the second's KV lands at 225, a step end, and joins the next step
    assert trace.first_token_ms.tolist() == [135.0, 235.0]
    assert trace.last_token_ms.tolist() == [135.0 + 29 * 10.0, 235.0 + 29 * 10.0]
    assert max(trace.step_decoding) == 2


def _hand_ttft_ms(request: ServingRequest, tp: int, *, link_gbit_s: float | None, rtt_ms: float) -> tuple[float, float]:
    """Prefill, KV transfer and round trip, and one decode step at batch 1, from the kernels by hand. [ms]"""
    model, accel = get_model(request.model), get_accelerator(request.accelerator)
    tokens = float(request.input_tokens)
    prefill = prefill_ms(model, accel, request.precision, tp=tp, tokens=tokens)
    kv = kv_bytes_per_token(model, request.precision)
    if link_gbit_s is None:  # each prefill GPU its shard over its own 400G NIC
        transfer = tokens * kv * kv_copies(model, tp) / tp / (accel.scale_out_gbit_s * 1e9 / 8) * 1e3
    else:
        transfer = tokens * kv / (link_gbit_s * 1e9 / 8) * 1e3
    step = mixed_step_ms(
        model, accel, request.precision, tp, decode_batch=1, decode_context_tokens=tokens + 1, prefill_chunk_tokens=0
    )
    return prefill + transfer + rtt_ms + step, step


@pytest.mark.parametrize(("link_gbit_s", "rtt_ms"), [(None, 0.0), (100.0, 12.0)])
def test_at_low_load_ttft_is_prefill_transfer_round_trip_and_a_step_by_hand(link_gbit_s: float | None, rtt_ms: float) -> None:
    request = replace(LONG, kv_link_gbit_s=link_gbit_s)
    analytic = serve(request)
    check = simulate_disaggregated_request(request, load_factor=0.002, requests=300, analytic=analytic, network_rtt_ms=rtt_ms)
    assert check is not None
    hand, step = _hand_ttft_ms(request, analytic.tp, link_gbit_s=link_gbit_s, rtt_ms=rtt_ms)
    sim = check.simulated
    assert sim.ttft_p50_ms == pytest.approx(hand, rel=0.01)
    # at most one decode step more: a request whose KV lands mid-step waits for the step's end
    assert hand * 0.99 <= sim.ttft_p99_ms <= hand + step * 1.1
    assert sim.tpot_p50_ms == pytest.approx(step, rel=0.03), "alone in the decode pool: the batch-1 step"
    if link_gbit_s is not None:  # the whole KV over one 100G link is far slower than eight shards over 400G NICs
        assert check.pool_figures.kv_arrival_p99_ms > check.pool_figures.prefill_mean_ms + rtt_ms + 20


def test_ttft_rises_as_load_approaches_the_pools_capacity() -> None:
    analytic = serve(MIXED)
    ttft = []
    for load in (0.3, 0.7, 1.0, 1.3):
        check = simulate_disaggregated_request(MIXED, load_factor=load, requests=1500, analytic=analytic, seed=1)
        assert check is not None
        ttft.append(check.simulated.ttft_p99_ms)
    assert ttft == sorted(ttft)
    assert ttft[-1] > 2.0 * ttft[0], "past the planned load the prefill queue grows"


def test_each_pool_runs_at_the_analytic_rates_at_a_moderate_load() -> None:
    """At 0.6 x the planned goodput (both pools stable) the pools deliver what the analytic model says.

    Tolerances: 2,000 Poisson arrivals measured over about 1,000 of them count the offered tokens to ~3 % (one
    standard deviation), so the node's tokens/s is held to 6 %; the prefill pool's mean service is the mean over the
    prompt mix (attention grows with the square of the length) where the analytic model prefills the mean prompt:
    10 %; the decode replica's tokens/s is held to 10 % of the analytic step's rate at the simulated mean batch
    (the batch fluctuates, and the step is read at the mean context).
    """
    analytic = serve(MIXED)
    load = 0.6
    check = simulate_disaggregated_request(MIXED, load_factor=load, requests=2000, analytic=analytic)
    assert check is not None
    sim, pools = check.simulated, check.pool_figures
    assert (check.pools.prefill_replicas, check.pools.decode_replicas) == pool_replicas(analytic) == (3, 1)
    assert sim.throughput_tok_s == pytest.approx(load * analytic.goodput_tok_s, rel=0.06)
    model, accel = get_model(MIXED.model), get_accelerator(MIXED.accelerator)
    mean_prefill = prefill_ms(model, accel, MIXED.precision, tp=analytic.tp, tokens=float(MIXED.input_tokens))
    assert pools.prefill_mean_ms == pytest.approx(mean_prefill, rel=0.10)
    offered_per_s = load * analytic.goodput_tok_s / MIXED.output_tokens
    assert pools.prefill_utilisation == pytest.approx(offered_per_s * mean_prefill / 1e3 / 3, rel=0.10)
    batch = sim.mean_batch
    step = speculative_step_ms(
        model,
        accel,
        MIXED.precision,
        analytic.tp,
        batch=np.array([batch]),
        chunk_tokens=np.zeros(1),
        chunk_attention_flop=np.zeros(1),
        workload=MIXED.workload,
        eff=CALIBRATED,
    )[0]
    assert pools.decode_tok_s_per_replica == pytest.approx(batch * 1e3 / step, rel=0.10)
    assert sim.ttft_p99_ms <= analytic.ttft_ms, "inside the analytic p99 at 0.6 of the planned load"


def test_the_integer_split_keeps_most_of_the_tighter_pool() -> None:
    analytic = serve(MIXED)
    assert analytic.prefill_gpu_share == pytest.approx(0.795, abs=0.01)
    assert pool_replicas(analytic) == (3, 1)  # 3.18 and 0.82 replicas fluid: 3 + 1 keeps 94 % and 122 %
    assert pool_replicas(replace(analytic, prefill_gpu_share=0.5)) == (2, 2)
    assert pool_replicas(replace(analytic, gpus=4)) == (1, 1)


def test_simulate_serving_runs_each_mode() -> None:
    pools = simulate_serving(MIXED, load_factor=0.5, requests=300)
    colocated = simulate_serving(replace(MIXED, disaggregated=False), load_factor=0.5, requests=300)
    assert pools is not None and colocated is not None
    assert type(pools).__name__ == "PoolsCheck" and type(colocated).__name__ == "TailCheck"
    first, again, other = (simulate_serving(MIXED, load_factor=0.5, requests=300, seed=s) for s in (4, 4, 5))
    assert first is not None and again is not None and other is not None
    assert first.simulated == again.simulated != other.simulated, "deterministic for a seed"


def test_goodput_simulate_runs_the_pools_per_node(capsys: pytest.CaptureFixture[str]) -> None:
    from placement.cli import main

    args = ["goodput", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--gpus", "8", "--input-tokens", "2000"]
    args += ["--input-tokens-max", "6000", "--output-tokens", "200", "--ttft-p99-ms", "500", "--itl-p99-ms", "40"]
    args += ["--disaggregated", "--pool-nodes", "2", "--simulate", "--sim-requests", "600", "--load-factor", "0.5"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    simulated = report["simulated"]
    assert (simulated["prefill_replicas"], simulated["decode_replicas"]) == (3, 1)
    # the pools span two nodes; the figures are per node, as the analytic goodput
    assert simulated["throughput_tok_s"] == pytest.approx(0.5 * report["goodput_tok_s"], rel=0.08)
    assert main(args) == 0
    assert "3 prefill + 1 decode replicas" in capsys.readouterr().out


def test_a_speculative_decode_pool_emits_the_expected_tokens_per_step() -> None:
    request = replace(MIXED, speculative="eagle3")
    analytic = serve(request)
    assert analytic.disaggregated and analytic.speculative == "eagle3"
    check = simulate_disaggregated_request(request, load_factor=0.6, requests=1000, analytic=analytic)
    assert check is not None and check.pools.speculation is not None
    assert check.simulated.tokens_per_step == pytest.approx(analytic.tokens_per_step, rel=0.03)
    assert check.simulated.throughput_tok_s == pytest.approx(0.6 * analytic.goodput_tok_s, rel=0.06)
