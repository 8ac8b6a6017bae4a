"""Speculative decoding in the node simulation: verify steps that emit 1 + a truncated-geometric number of drafts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placement.serving.efficiency import CALIBRATED
from placement.serving.hardware import get_accelerator, get_model
from placement.serving.request import ServingRequest, serve
from placement.serving.simulate import (
    LengthDistribution,
    NodeConfig,
    SimWorkload,
    simulate,
    simulate_request,
    speculative_steps,
)
from placement.serving.speculative import Speculation
from placement.serving.steps import speculative_step_ms


def expected_tokens_per_step(acceptance_rate: float, draft_tokens: int) -> float:
    """``(1 - a^(k+1)) / (1 - a)``, written out here rather than read from the module under test."""
    a, k = acceptance_rate, draft_tokens
    return float(sum(a**i for i in range(k + 1)))


def test_no_acceptance_emits_one_token_a_step() -> None:
    tokens = np.array([0, 1, 7, 300])
    steps = speculative_steps(tokens, 4, 0.0, np.random.default_rng(0))
    assert steps.tolist() == tokens.tolist()


@pytest.mark.parametrize(("acceptance_rate", "draft_tokens"), [(0.5, 3), (0.75, 3), (0.9, 3), (0.875, 1), (0.95, 6)])
def test_tokens_per_step_follow_the_truncated_geometric_mean(acceptance_rate: float, draft_tokens: int) -> None:
    # long answers: the last step's overshoot is at most k tokens in thousands
    tokens = np.full(300, 3000)
    steps = speculative_steps(tokens, draft_tokens, acceptance_rate, np.random.default_rng(1))
    measured = tokens.sum() / steps.sum()
    assert measured == pytest.approx(expected_tokens_per_step(acceptance_rate, draft_tokens), rel=0.01)
    assert 1.0 < measured <= draft_tokens + 1


def _spec_node(acceptance_rate: float, draft_tokens: int = 3) -> NodeConfig:
    speculation = Speculation("test", draft_tokens, acceptance_rate, 0.0)
    return NodeConfig(1, 64, 256, 1_000_000, lambda b, c, k: 10.0, speculation)


def test_the_simulated_node_emits_the_expected_tokens_per_step_and_divides_its_itl() -> None:
    workload = SimWorkload(0.5, LengthDistribution(200), LengthDistribution(400))
    seen = []
    for a in (0.0, 0.5, 0.8, 0.95):
        result = simulate(_spec_node(a), workload, requests=300, seed=2)
        seen.append(result.tokens_per_step)
        assert result.tokens_per_step == pytest.approx(expected_tokens_per_step(a, 3), rel=0.03)
        # a constant 10 ms step: each request's time per output token is the step over the tokens it emits
        assert result.tpot_p50_ms == pytest.approx(10.0 / expected_tokens_per_step(a, 3), rel=0.08)
    assert seen[0] == 1.0
    assert seen == sorted(seen) and seen[-1] > 3.5, "toward k + 1 = 4 as acceptance rises"


def test_throughput_counts_every_token_whatever_the_speculation() -> None:
    workload = SimWorkload(2.0, LengthDistribution(200), LengthDistribution(300))
    plain = simulate(_spec_node(0.0), workload, requests=600, seed=4)
    fast = simulate(_spec_node(0.9), workload, requests=600, seed=4)
    for result in (plain, fast):  # the same offered tokens in the same window (load well under capacity)
        assert result.throughput_tok_s == pytest.approx(result.offered_tok_s, rel=0.05)
    assert fast.mean_batch < 0.5 * plain.mean_batch, "answers finish in fewer steps: fewer sequences in flight"


def test_a_speculative_node_is_simulated_at_the_analytic_step_and_tokens_per_step() -> None:
    request = ServingRequest(
        "llama-3.1-70b", "h100-sxm", 8, "fp8", 512, 290, 170, 20, input_tokens_max=1024, speculative="eagle3"
    )
    analytic = serve(request)
    assert analytic.speculative == "eagle3" and analytic.tokens_per_step > 2
    check = simulate_request(request, load_factor=0.8, requests=1200, analytic=analytic)
    assert check is not None and check.node.speculation is not None
    assert check.simulated.tokens_per_step == pytest.approx(analytic.tokens_per_step, rel=0.03)
    # the verify step is the analytic one: the search's speculative step at the planned batch and mean context
    w = request.workload
    batch = float(analytic.batch)
    charged = speculative_step_ms(
        get_model(request.model),
        get_accelerator(request.accelerator),
        request.precision,
        analytic.tp,
        batch=np.array([batch]),
        chunk_tokens=np.zeros(1),
        chunk_attention_flop=np.zeros(1),
        workload=w,
        eff=CALIBRATED,
    )[0]
    assert check.node.step_ms(analytic.batch, batch * w.context_tokens, 0) == pytest.approx(charged, rel=0.01)
    assert check.simulated.tpot_p99_ms <= analytic.itl_ms * 1.05
    plain = simulate_request(replace(request, speculative=None), load_factor=0.8, requests=600)
    assert plain is not None and plain.simulated.tokens_per_step == 1.0 and plain.node.speculation is None
