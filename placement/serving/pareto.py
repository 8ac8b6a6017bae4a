"""The Pareto curve of a node: throughput per GPU against speed per user over batches and tensor-parallel degrees.

Colocated serving with chunked prefill at full load and no queueing tail (:mod:`placement.serving.colocated`);
:func:`placement.outputs.pareto_chart.plot_pareto` draws it. A request with speculative decoding gets two
curves, with and without it (column ``speculative``), so the batch where speculation stops paying shows.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from placement.serving.candidate import batch_grid, max_batch, tp_options
from placement.serving.efficiency import CALIBRATED, ServingEfficiency
from placement.serving.hardware import AcceleratorSpec, ModelSpec
from placement.serving.request import ServingRequest, check_request
from placement.serving.steps import chunked_steps
from placement.serving.workload import Workload


def pareto_curve(request: ServingRequest, *, efficiency: ServingEfficiency = CALIBRATED) -> pd.DataFrame:
    """Throughput per GPU against speed per user over batch sizes and tensor-parallel degrees (colocated, no tail).

    Parameters
    ----------
    request : ServingRequest
        Model, node and workload; the objective is ignored (every batch is drawn). Each batch uses the
        chunk budget with the shortest p99 ITL among those that keep up with the prefill demand.
    efficiency : ServingEfficiency
        Achieved efficiencies.

    Returns
    -------
    pandas.DataFrame
        One row per (speculative, tp, batch): ``speculative`` (the method, ``""`` for plain decoding),
        ``tp``, ``batch``, ``itl_ms`` (per output token), ``tok_s_per_user`` [tokens/s], ``tok_s_per_gpu``
        [tokens/s], ``on_frontier`` (not dominated on both axes within its curve).
    """
    unbounded = replace(request, ttft_p99_ms=math.inf, itl_p99_ms=math.inf, min_tok_s_per_user=0.0)
    m, a = check_request(unbounded)
    speculative = unbounded.workload
    workloads = [replace(speculative, speculation=None)] + ([speculative] if speculative.speculation is not None else [])
    curves = [_curve(m, a, request, w, efficiency) for w in workloads]
    return pd.concat(curves, ignore_index=True)


def _curve(m: ModelSpec, a: AcceleratorSpec, request: ServingRequest, w: Workload, eff: ServingEfficiency) -> pd.DataFrame:
    """One workload's curve over every tensor-parallel degree, its frontier marked."""
    frames = [_pareto_rows(m, a, request.precision, tp, w, eff) for tp in tp_options(a, request.gpus)]
    curve = (
        pd.concat([f for f in frames if f is not None], ignore_index=True)
        if any(f is not None for f in frames)
        else pd.DataFrame(columns=["tp", "batch", "itl_ms", "tok_s_per_user", "tok_s_per_gpu"])
    )
    ordered = curve.sort_values("tok_s_per_user", ascending=False)
    best_gpu = ordered["tok_s_per_gpu"].cummax().shift(fill_value=-np.inf)
    curve["on_frontier"] = (ordered["tok_s_per_gpu"] > best_gpu).reindex(curve.index)
    curve.insert(0, "speculative", "" if w.speculation is None else w.speculation.method)
    return curve


def _pareto_rows(
    m: ModelSpec, a: AcceleratorSpec, precision: str, tp: int, w: Workload, eff: ServingEfficiency
) -> pd.DataFrame | None:
    """Step time and throughput of every batch on the grid at one tensor-parallel degree (None if nothing fits)."""
    b_max = max_batch(m, a, precision, tp=tp, workload=w, eff=eff)
    if b_max < 1:
        return None
    batch = batch_grid(b_max)
    steps = chunked_steps(m, a, precision, tp=tp, batch=batch, workload=w, eff=eff)
    full_load_itl = steps.itl_ms()  # the curve is read at capacity
    itl = np.where(steps.mixed_share <= 1.0, full_load_itl, np.inf)
    pick = np.where(np.isfinite(itl).any(axis=0), np.argmin(itl, axis=0), len(steps.chunk) - 1)
    cols = np.arange(len(batch))
    itl_ms, mean_ms = full_load_itl[pick, cols], steps.mean_ms[pick, cols]
    return pd.DataFrame(
        {
            "tp": tp,
            "batch": batch.astype(int),
            "itl_ms": itl_ms,
            "tok_s_per_user": 1e3 / itl_ms,
            "tok_s_per_gpu": batch * w.tokens_per_step / mean_ms * 1e3 / tp,
        }
    )
