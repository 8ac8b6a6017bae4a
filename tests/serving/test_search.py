"""The node search prunes candidates it can prove cannot win: same answers as the search without the probes.

``serving_reference.json`` holds :func:`serve` results computed before the probes existed (commit cf4376e);
the straightforward search below evaluates every candidate in full (no probe, no floor) and must pick the
same (batch, chunk budget) with byte-identical figures.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from placement.serving import physics
from placement.serving.hardware import get_accelerator, get_model
from placement.serving.physics import CALIBRATED, P99_Z, ServingRequest, serve
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap

REFERENCE = Path(__file__).parent.parent / "data" / "serving_reference.json"


def _cases() -> list[dict[str, Any]]:
    return list(json.loads(REFERENCE.read_text(encoding="utf-8")))


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['request']['model']}-{c['request']['ttft_p99_ms']:g}ms")
def test_serve_matches_the_figures_computed_before_pruning(case: dict[str, Any]) -> None:
    got = asdict(serve(ServingRequest(**case["request"])))
    for key, want in case["result"].items():
        if isinstance(want, float):
            assert got[key] == pytest.approx(want, rel=1e-9, abs=0.0), key
        elif want is None:
            assert got[key] is None or not np.isfinite(got[key]), key
        else:
            assert got[key] == want, key


def _straightforward(request: ServingRequest, tp: int) -> physics._Candidate | None:
    """The colocated search with every candidate evaluated in full: capacity order, no floor, no probe."""
    w = physics._workload(request)
    m, a = get_model(request.model), get_accelerator(request.accelerator)
    b_max = physics._max_batch(m, a, request.precision, tp, w, CALIBRATED)
    batch = physics._batch_grid(b_max)
    batch = batch[batch + P99_Z * np.sqrt(batch) <= b_max] if b_max > 1 else batch
    steps = physics._chunked_steps(m, a, request.precision, tp, batch, w, CALIBRATED)
    itl = steps.pure_p99_ms
    ok = (itl <= w.itl_p99_ms) & (1e3 / itl >= w.min_tok_s_per_user)
    replicas = request.gpus // tp
    capacity = replicas * batch[None, :] / steps.mean_ms * 1e3
    best: physics._Candidate | None = None
    for flat in np.argsort(-np.where(ok, capacity, -1.0), axis=None):
        ki, bi = (int(i) for i in np.unravel_index(flat, capacity.shape))
        if not ok[ki, bi] or (best is not None and capacity[ki, bi] <= best.goodput_tok_s):
            break  # goodput never exceeds capacity
        found = physics._chunked_candidate(steps, ki, bi, batch, replicas, tp, w, CALIBRATED, float(capacity[ki, bi]))
        if found is not None and (best is None or found.goodput_tok_s > best.goodput_tok_s):
            best = found
    return best


@pytest.mark.parametrize(
    ("request_", "tp"),
    [
        (
            ServingRequest(
                "llama-3.1-70b", "h100-sxm", 8, "fp8", 1155, 211, 110.0, 25.0, 0.5, min_tok_s_per_user=40.0, input_tokens_max=4142
            ),
            8,
        ),
        (ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 1155, 211, 170.0, 50.0, 0.5, input_tokens_max=4142), 8),
        (ServingRequest("deepseek-v3", "b200", 8, "fp8", 4000, 600, 1500, 60, 0.3, input_tokens_max=30000), 8),
    ],
    ids=["agent", "chat-tp8", "deepseek"],
)
def test_pruned_search_picks_what_the_full_search_picks(request_: ServingRequest, tp: int) -> None:
    want = _straightforward(request_, tp)
    got = physics._colocated(
        get_model(request_.model),
        get_accelerator(request_.accelerator),
        request_.precision,
        request_.gpus,
        tp,
        physics._workload(request_),
        CALIBRATED,
    )
    assert want is not None and got is not None
    assert asdict(got) == {**asdict(want), "limit": got.limit}  # byte-identical figures; limit is set after the search


def test_a_probe_that_misses_means_the_bisection_finds_less() -> None:
    """The pruning premise: when the wait a hair below a utilisation misses its budget, the cap is below it."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        servers, service_ms = int(rng.integers(1, 400)), float(rng.uniform(1.0, 500.0))
        budget_ms, needed = float(rng.uniform(0.0, 2000.0)), float(rng.uniform(0.01, 0.999))
        misses = physics._queue_misses(servers, service_ms, budget_ms, needed, CALIBRATED)
        assert misses == (queue_wait_p99_ms(servers, service_ms, needed * (1 - physics.PRUNE_MARGIN)) > budget_ms)
        if misses:
            assert utilisation_cap(servers, service_ms, budget_ms) < needed
