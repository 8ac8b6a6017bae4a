"""The discrete-event node simulation: hand-checkable cases, the KV limit, seeds, and agreement with the analytic model."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from placement.analyses.tail import COLUMNS, check_tail
from placement.cli import main
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from placement.serving.request import ServingRequest, serve
from placement.serving.simulate import (
    LengthDistribution,
    NodeConfig,
    SimWorkload,
    node_config,
    run_node,
    simulate,
    simulate_request,
    weighted_quantile,
)
from placement.serving.simulate_disaggregated import simulate_serving
from tests.conftest import write_scenario


def constant(ms: float) -> NodeConfig:
    """One replica, a step of ``ms`` whatever it carries, 256 prompt tokens per step, room for everything."""
    return NodeConfig(replicas=1, max_batch=64, chunk_tokens=256, kv_capacity_tokens=1_000_000, step_ms=lambda b, c, k: ms)


@pytest.mark.parametrize("prompt", [1, 255, 256, 257, 1000, 2048])
def test_one_request_at_a_time_ttft_is_whole_chunks_and_itl_the_step(prompt: int) -> None:
    arrivals = np.arange(5, dtype=float) * 10_000.0  # far apart: each request runs alone
    trace = run_node(constant(10.0), arrivals, np.full(5, prompt), np.full(5, 7))
    steps_to_first = math.ceil(prompt / 256)
    assert trace.first_token_ms - arrivals == pytest.approx(np.full(5, 10.0 * steps_to_first))
    # after its prefill a request decodes its 6 further tokens in 6 steps of exactly 10 ms
    assert len(trace.step_ms) == 5 * (steps_to_first + 6)
    assert set(trace.step_ms) == {10.0}
    assert sum(trace.step_decoding) == 5 * 6
    assert sum(trace.step_tokens) == 5 * 7


def test_replicas_share_one_queue() -> None:
    """Two requests at once: two replicas prefill one each; one replica shares its 256-token chunk between them."""
    arrivals, prompts, outputs = np.zeros(2), np.full(2, 512), np.full(2, 3)
    two = run_node(NodeConfig(2, 64, 256, 1_000_000, lambda b, c, k: 10.0), arrivals, prompts, outputs)
    assert two.first_token_ms.tolist() == [20.0, 20.0]
    one = run_node(constant(10.0), arrivals, prompts, outputs)
    assert one.first_token_ms.tolist() == [20.0, 40.0]  # FCFS: the first prompt takes the first two chunks
    assert max(one.step_decoding) == 1 and sum(one.step_tokens) == 6


def test_simulate_at_low_load_reports_the_hand_figures() -> None:
    workload = SimWorkload(0.001, LengthDistribution(1000), LengthDistribution(20))  # 1 every 1,000 s; each takes 230 ms
    result = simulate(constant(10.0), workload, requests=200, seed=3)
    assert result.ttft_p99_ms == pytest.approx(40.0)
    assert result.ttft_p50_ms == pytest.approx(40.0)
    assert result.itl_p99_ms == pytest.approx(10.0)
    assert result.max_running == 1
    assert result.throughput_tok_s == pytest.approx(result.offered_tok_s, rel=0.05)


def test_prefix_cache_skips_the_cached_share_of_the_prompt() -> None:
    trace = run_node(constant(10.0), np.array([0.0]), np.array([1024]), np.array([2]), prefix_cache_hit_rate=0.5)
    assert trace.first_token_ms[0] == pytest.approx(20.0)  # 512 new tokens: two chunks of 256


def test_kv_limit_never_runs_more_than_fit() -> None:
    seen: list[int] = []

    def step(decode_batch: int, context: float, chunk: int) -> float:
        seen.append(decode_batch)
        return 10.0

    node = NodeConfig(1, max_batch=100, chunk_tokens=4096, kv_capacity_tokens=2 * (500 + 50), step_ms=step)
    workload = SimWorkload(50.0, LengthDistribution(500), LengthDistribution(50))  # far more than 2 at a time
    result = simulate(node, workload, requests=300, seed=1)
    assert result.max_running == 2
    assert max(seen) == 2
    # a third request waits for a whole answer: TTFT grows far beyond one step
    assert result.ttft_p99_ms > 1_000.0


def test_a_request_that_can_never_fit_is_refused_with_the_numbers() -> None:
    node = NodeConfig(1, max_batch=8, chunk_tokens=256, kv_capacity_tokens=1000, step_ms=lambda b, c, k: 1.0)
    with pytest.raises(ValueError, match="1,100 KV tokens"):
        run_node(node, np.array([0.0]), np.array([1000]), np.array([100]))


def test_max_batch_caps_the_running_sequences() -> None:
    node = NodeConfig(2, max_batch=3, chunk_tokens=4096, kv_capacity_tokens=1_000_000, step_ms=lambda b, c, k: 10.0)
    result = simulate(node, SimWorkload(100.0, LengthDistribution(100), LengthDistribution(40)), requests=400, seed=0)
    assert result.max_running == 3


def test_deterministic_for_a_seed() -> None:
    node = NodeConfig(2, 16, 512, 200_000, lambda b, c, k: 5.0 + 0.1 * b + 0.01 * k + 1e-4 * c)
    workload = SimWorkload(20.0, LengthDistribution(400, 2000), LengthDistribution(100, 400))
    first, again = simulate(node, workload, requests=500, seed=7), simulate(node, workload, requests=500, seed=7)
    assert first == again
    assert simulate(node, workload, requests=500, seed=8) != first


def test_clipped_lognormal_keeps_the_mean_and_the_cap() -> None:
    lengths = LengthDistribution(222, 1021)  # the MLPerf Llama-2-70B prompts (DESIGN.md section 3)
    drawn = lengths.draw(np.random.default_rng(0), 100_000)
    assert drawn.mean() == pytest.approx(222, rel=0.01)
    assert drawn.max() == 1021
    assert 140 <= np.median(drawn) <= 180  # measured median 152
    assert LengthDistribution(290).draw(np.random.default_rng(0), 3).tolist() == [290, 290, 290]
    sample = LengthDistribution(0, samples=np.array([10, 20]))
    assert set(sample.draw(np.random.default_rng(0), 100).tolist()) == {10, 20}


def test_weighted_quantile_counts_each_value_by_its_weight() -> None:
    assert weighted_quantile(np.array([1.0, 100.0]), np.array([99.0, 1.0]), 0.99) == 1.0
    assert weighted_quantile(np.array([1.0, 100.0]), np.array([98.0, 2.0]), 0.99) == 100.0


CHAT = ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 512, 290, 170, 50, prefix_cache_hit_rate=0.2, input_tokens_max=1024)


@pytest.mark.parametrize(
    ("load_factor", "ttft_low", "ttft_high", "tpot_low"),
    [(0.5, 0.4, 0.7, 0.45), (1.0, 0.6, 1.0, 0.75)],
)
def test_analytic_and_simulated_agree_on_the_chat_node(
    load_factor: float, ttft_low: float, ttft_high: float, tpot_low: float
) -> None:
    """Llama-3.1-70B FP8 on 8 x H100, prompts of mean 512 up to 1,024, at half and at the planned goodput.

    Both route each prompt to a replica in turn and prefill it in that replica's chunk pipeline. Agreement
    reached (3,000 requests; seeds 0-4): at half load the simulated p99 node TTFT is 0.47-0.48 x the analytic one
    and the p99 TPOT 0.49-0.50 x (the batch is a quarter of the planned one, and the step's floors are a small part
    of it); at the planned goodput TTFT 0.70-0.76 x and TPOT 0.78-0.83 x: the analytic tails (Allen-Cunneen's GI/G/1 for a replica's prompts, the p99 batch and chunk
    count held together) are above the simulated ones, never below.
    """
    analytic = serve(CHAT)
    check = simulate_request(CHAT, load_factor=load_factor, analytic=analytic)
    assert check is not None
    sim = check.simulated
    assert ttft_low * analytic.ttft_ms <= sim.ttft_p99_ms <= ttft_high * analytic.ttft_ms
    assert tpot_low * analytic.itl_ms <= sim.tpot_p99_ms <= 1.02 * analytic.itl_ms
    assert sim.itl_p99_as(CHAT.itl_metric) == sim.tpot_p99_ms
    assert sim.throughput_tok_s == pytest.approx(sim.offered_tok_s, rel=0.05)
    assert sim.mean_batch <= analytic.batch


#: Agent-like: long prompts, short answers, a tight ITL: chunk steps are few but long, so they set the ITL tail.
AGENT_NODE = ServingRequest(
    "llama-3.1-70b",
    "h100-sxm",
    8,
    "fp8",
    1155,
    211,
    110,
    25,
    prefix_cache_hit_rate=0.5,
    input_tokens_max=4142,
    itl_metric="step",
)


@pytest.mark.parametrize("load_factor", [0.5, 1.0])
def test_analytic_itl_counts_the_steps_short_prompts_take_alone(load_factor: float) -> None:
    """Every prompt takes at least one step of its own: at the planned goodput the simulated p99 gap between
    tokens stays inside the analytic one, which meets the objective (before, the analytic model counted prefill
    work, not steps, and read 17.4 ms where the simulated node ran 26.9 ms against a 25 ms objective). The
    per-gap objective (``itl_metric`` step) is the one this holds for.

    Agreement reached (4,000 requests, seed 0): at the planned goodput the simulated p99 ITL is 0.96 x the analytic
    one; at half of it 0.67 x (the tail has fallen back to the pure step).
    """
    analytic = serve(AGENT_NODE)
    assert analytic.itl_ms <= AGENT_NODE.itl_p99_ms
    check = simulate_request(AGENT_NODE, load_factor=load_factor, analytic=analytic, requests=4000)
    assert check is not None
    assert 0.5 * analytic.itl_ms <= check.simulated.itl_p99_ms <= 1.03 * AGENT_NODE.itl_p99_ms


def test_the_itl_chunk_policy_fills_the_step_up_to_the_objective() -> None:
    chat = replace(CHAT, itl_metric="step")  # every gap inside the objective: no step may exceed it
    analytic = serve(chat)
    own, filled = node_config(chat, analytic), node_config(chat, analytic, chunk="itl")
    # the serving model's own chunk, unless the analytic per-step prefill needs more
    assert own.chunk_tokens == max(analytic.chunk_tokens, math.ceil(analytic.batch * 512 * 0.8 / 290))
    assert filled.chunk_tokens >= own.chunk_tokens
    context = analytic.batch * (512 + 290 / 2)  # summed over the batch
    pure = own.step_ms(analytic.batch, context, 0)
    assert pure < own.step_ms(analytic.batch, context, own.chunk_tokens) <= analytic.itl_ms * 1.01
    assert filled.step_ms(analytic.batch, context, filled.chunk_tokens) <= chat.itl_p99_ms


def test_the_tail_rises_with_load() -> None:
    analytic = serve(CHAT)
    checks = [simulate_request(CHAT, load_factor=f, analytic=analytic, requests=2000) for f in (0.5, 1.0, 1.6)]
    ttft = [c.simulated.ttft_p99_ms for c in checks if c is not None]
    itl = [c.simulated.itl_p99_ms for c in checks if c is not None]
    assert ttft == sorted(ttft) and ttft[-1] > 1.5 * ttft[0]
    assert itl == sorted(itl)


def test_nothing_to_simulate_without_goodput() -> None:
    impossible = ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 1024, 290, 170, 1.0)
    assert simulate_request(impossible) is None


# --- the command line and the plan's tail check ----------------------------------------------------


def test_goodput_simulate_prints_simulated_beside_analytic(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["goodput", "--model", "llama-3.1-70b", "--accelerator", "h100-sxm", "--input-tokens", "1024"]
    args += ["--output-tokens", "290", "--ttft-p99-ms", "170", "--itl-p99-ms", "50", "--sim-requests", "800"]
    assert main([*args, "--simulate"]) == 0
    text = capsys.readouterr().out
    assert "analytic  simulated" in text
    for label in ("p99 TTFT at the node [ms]", "p99 TPOT, per request [ms]", "p99 ITL, every gap [ms]", "tokens/s"):
        assert label in text
    assert main([*args, "--simulate", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    simulated = report["simulated"]
    assert simulated["load_factor"] == 1.0 and simulated["replicas"] == report["replicas"]
    # the objective bounds each request's mean time per token (the default itl_metric, tpot)
    assert 0 < simulated["tpot_p99_ms"] <= report["itl_ms"] and simulated["ttft_p99_ms"] > 0
    assert simulated["itl_p99_ms"] >= simulated["tpot_p99_ms"], "the gaps' tail is above the requests' means"
    assert main([*args, "--json"]) == 0
    assert "simulated" not in json.loads(capsys.readouterr().out)


def _serving_class(name: str, ttft_p99_ms: float, budget_ms: float, itl_ms: float, tokens: tuple[int, int], **extra: Any) -> dict:
    return {
        "name": name,
        "share": 1.0,
        "ttft_p99_ms": ttft_p99_ms,
        "itl_p99_ms": itl_ms,
        "serving_ttft_budget_ms": budget_ms,
        "retrieval_ms": 20,
        "safety_tokenization_ms": 10,
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        **extra,
    }


def _plan(folder: Path, workload: dict, adoption: float) -> Plan:
    path = write_scenario(
        folder,
        classes=[workload],
        serving={"model": "llama-3.1-70b", "accelerator": "h100-sxm", "gpus_per_node": 8, "precision": "fp8"},
        demand={"adoption": adoption},
        policy={"unreachable": "report"},
    )
    return run(load_scenario(path))


def test_check_tail_lists_nothing_at_low_load(tmp_path: Path) -> None:
    # 150 ms more objective than the node budget leaves the populations slack for the step a new request waits
    # out (the analytic TTFT leaves it out: simulated ~200 ms against 170 ms at 20 % load, issue 11's open point);
    # 100 ms did until the small catalog's sites went on transit (issue 23: longer round trips, less slack)
    plan = _plan(tmp_path, _serving_class("chat", 450, 170, 50, (1024, 290), prefix_cache_hit_rate=0.2), 0.0002)
    table = check_tail(plan, requests=800)
    assert list(table.columns) == COLUMNS
    assert len(table) == int(plan.sites["open"].sum()) >= 1
    assert (table["exceeds"] == "").all()
    assert (table["load_factor"] < 0.5).all()


AGENT = {"prefix_cache_hit_rate": 0.5, "min_tok_s_per_user": 40}


def _overloaded(monkeypatch: pytest.MonkeyPatch, factor: float) -> None:
    """Every simulated node runs ``factor`` x the load the plan gave it (a forecast that came in low)."""
    import placement.analyses.tail

    def heavier(request: ServingRequest, *, load_factor: float = 1.0, **kw: Any) -> Any:
        return simulate_serving(request, load_factor=load_factor * factor, **kw)

    monkeypatch.setattr(placement.analyses.tail, "simulate_serving", heavier)


def test_check_tail_flags_the_sites_whose_node_breaks_the_objective(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Agent lengths (prompts up to 2,048, 25 ms ITL), 25 ms left for the network.

    At the planned load every simulated node meets what the objective leaves it (the analytic tails are above the
    simulated ones); run 1.5 x past it, the prompt queues grow and every loaded site is flagged for TTFT.
    """
    tight = _plan(tmp_path, _serving_class("agent", 110 + 30 + 25, 110, 25, (2048, 400), **AGENT), 0.05)
    planned = check_tail(tight)
    assert len(planned) >= 2 and (planned["exceeds"] == "").all()
    assert (planned["simulated_ttft_p99_ms"] <= planned["node_ttft_allowed_ms"]).all()
    _overloaded(monkeypatch, 1.5)
    table = check_tail(tight)
    assert len(table) == len(planned) and table["exceeds"].str.contains("ttft").all()
    assert (table["simulated_ttft_p99_ms"] > table["node_ttft_allowed_ms"]).all()
    assert (table["itl_metric"] == "tpot").all()


def test_solve_check_tail_writes_and_prints_the_flagged_sites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_scenario(
        tmp_path,
        classes=[_serving_class("agent", 110 + 30 + 25, 110, 25, (2048, 400), **AGENT)],
        serving={"model": "llama-3.1-70b", "accelerator": "h100-sxm", "gpus_per_node": 8, "precision": "fp8"},
        policy={"unreachable": "report"},
    )
    _overloaded(monkeypatch, 1.5)
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet", "--check-tail"]) == 0
    text = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "out" / "tail_check.csv", keep_default_na=False)
    flagged = table[table["exceeds"] != ""]
    assert f"{len(flagged)} exceed an objective (tail_check.csv)" in text
    assert len(flagged) >= 1
    for row in flagged.to_dict("records"):
        assert f"{row['name']} ({row['site_id']}), agent: p99 TTFT" in text
