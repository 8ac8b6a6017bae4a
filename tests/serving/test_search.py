"""The node search prunes candidates it can prove cannot win: same answers as the search without the probes.

``serving_reference.json`` holds :func:`serve` results at the catalog's cited efficiencies (no calibration) and the
per-gap ITL, so the reference stays a test of the search, not of the calibration. They were computed before the
probes existed (commit cf4376e) and recomputed when the prompt queue became one per replica (issue 45: a router
binds each prompt to a replica) and when NVSwitch's all-reduce became in-network (each GPU sends the payload once),
each checked against the straightforward search below, which evaluates every
candidate in full (no probe, no floor) and must pick the same (batch, chunk budget) with the same figures.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from placement.serving.candidate import Candidate, batch_grid, max_batch
from placement.serving.colocated import PRUNE_MARGIN, chunked_candidate, colocated_candidate, queue_misses
from placement.serving.efficiency import CALIBRATED, ServingEfficiency
from placement.serving.hardware import get_accelerator, get_model
from placement.serving.queueing import queue_wait_p99_ms, utilisation_cap
from placement.serving.request import ServingRequest, serve
from placement.serving.steps import ChunkedSteps, ChunkSizes, chunked_steps
from placement.serving.workload import P99_Z, Workload

REFERENCE = Path(__file__).parent.parent / "data" / "serving_reference.json"


def _cases() -> list[dict[str, Any]]:
    return list(json.loads(REFERENCE.read_text(encoding="utf-8")))


def _cited(request: ServingRequest) -> ServingEfficiency:
    """The reference's terms: the catalog's figures, no per-layer or per-sequence floor, no expert padding,
    exponential prefill service."""
    accel = get_accelerator(request.accelerator)
    return ServingEfficiency(
        tensor=accel.gemm_efficiency,
        attention=accel.attention_efficiency,
        step_overhead_ms=accel.step_overhead_ms,
        allreduce_latency_us=accel.allreduce_latency_us,
        layer_floor_us=0.0,
        sequence_us=0.0,
        gemm_half_tokens=0.0,
        service_cv2=1.0,
    )


def _reference_request(case: dict[str, Any]) -> ServingRequest:
    return replace(ServingRequest(**case["request"]), itl_metric="step")  # the per-gap ITL it was computed with


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['request']['model']}-{c['request']['ttft_p99_ms']:g}ms")
def test_serve_matches_the_reference_figures(case: dict[str, Any]) -> None:
    request = _reference_request(case)
    eff = _cited(request)
    got = asdict(serve(request, efficiency=eff))
    for key, want in case["result"].items():
        if isinstance(want, float):
            assert got[key] == pytest.approx(want, rel=1e-9, abs=0.0), key
        elif want is None:
            assert got[key] is None or not np.isfinite(got[key]), key
        else:
            assert got[key] == want, key
    if got["chunk_tokens"] > 0 and not got["disaggregated"]:  # colocated: the unpruned search picks the same
        full = _straightforward(request, got["tp"], eff)
        assert full is not None and (full.batch, full.chunk_tokens) == (got["batch"], got["chunk_tokens"])
        assert full.goodput_tok_s == pytest.approx(got["goodput_tok_s"], rel=1e-12)


def _straightforward(request: ServingRequest, tp: int, eff: ServingEfficiency = CALIBRATED) -> Candidate | None:
    """The colocated search with every candidate evaluated in full: capacity order, no floor, no probe."""
    w = request.workload
    m, a = get_model(request.model), get_accelerator(request.accelerator)
    b_max = max_batch(m, a, request.precision, tp=tp, workload=w, eff=eff)
    batch = batch_grid(b_max)
    batch = batch[batch + P99_Z * np.sqrt(batch) <= b_max] if b_max > 1 else batch
    steps = chunked_steps(m, a, request.precision, tp=tp, batch=batch, workload=w, eff=eff)
    itl = steps.pure_p99_ms
    ok = (itl <= w.itl_p99_ms) & (1e3 / itl >= w.min_tok_s_per_user)
    replicas = request.gpus // tp
    capacity = replicas * batch[None, :] / steps.mean_ms * 1e3
    best: Candidate | None = None
    for flat in np.argsort(-np.where(ok, capacity, -1.0), axis=None):
        ki, bi = (int(i) for i in np.unravel_index(flat, capacity.shape))
        if not ok[ki, bi] or (best is not None and capacity[ki, bi] <= best.goodput_tok_s):
            break  # goodput never exceeds capacity
        found = chunked_candidate(
            steps, ki, bi, replicas=replicas, tp=tp, workload=w, eff=eff, capacity_tok_s=float(capacity[ki, bi])
        )
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
    got = colocated_candidate(
        get_model(request_.model),
        get_accelerator(request_.accelerator),
        request_.precision,
        gpus=request_.gpus,
        tp=tp,
        workload=request_.workload,
        eff=CALIBRATED,
    )
    assert want is not None and got is not None
    assert asdict(got) == {**asdict(want), "limit": got.limit}  # byte-identical figures; limit is set after the search


def test_a_probe_that_misses_means_the_bisection_finds_less() -> None:
    """The pruning premise: when the wait a hair below a utilisation misses its budget, the cap is below it."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        servers, service_ms = int(rng.integers(1, 400)), float(rng.uniform(1.0, 500.0))
        budget_ms, needed = float(rng.uniform(0.0, 2000.0)), float(rng.uniform(0.01, 0.999))
        misses = queue_misses(servers, service_ms, budget_ms, needed, cs2=1.0)
        assert misses == (queue_wait_p99_ms(servers, service_ms, needed * (1 - PRUNE_MARGIN)) > budget_ms)
        if misses:
            assert utilisation_cap(servers, service_ms, budget_ms) < needed


@pytest.mark.parametrize("record", [Workload, Candidate, ChunkSizes, ChunkedSteps])
def test_the_search_records_refuse_positional_fields(record: type) -> None:
    """Fifteen positional numbers are easy to swap: every record of the search is built by keyword."""
    with pytest.raises(TypeError, match="positional"):
        record(*range(len(fields(record))))
