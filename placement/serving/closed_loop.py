"""A planner's closed-loop benchmark: a concurrency sweep, modelled as the fixed-concurrency loop it ran, and fitted.

What most planners have is a sweep from a serving benchmark tool (vLLM's ``benchmark_serving``, SGLang's
``bench_serving``, genai-perf): at each concurrency ``C``, ``C`` clients each send a request, wait for its last
token and send the next at once. There are no Poisson arrivals and no latency objective the engine held: the sweep
measures what the node does at each load. A sweep file has one row per concurrency (:data:`SWEEP_COLUMNS`).

The loop is modelled from the same step times as the open-loop search (:func:`placement.serving.kernels.decode_step`):

- the node's ``C`` clients spread over its replicas, ``b = C / replicas`` sequences on each busy replica;
- in steady state each sequence cycles through its prompt and ``N_out`` decode steps, so a step carries ``b``
  decoding sequences and, on average, ``b · N_in / N_out`` prompt tokens (chunked prefill): the mean step ``t``
  is the median TPOT (each request's mean time per output token);
- a new prompt waits for the running step to end (``t / 2`` on average, ``t`` at worst) and is then prefilled in
  one step at least as long as the prompt alone: the steady TTFT;
- the **ramp**: at the start all ``C`` prompts arrive at once and a replica prefills its ``b`` prompts one after
  the other, so the ``k``-th waits ``k`` prefills; these first ``C`` of the run's ``requests`` are in the p99 when
  they are more than 1 % of it (``requests`` defaults to ``10 · C``, what sweep scripts commonly run);
- the output throughput is Little's law: ``C · N_out / (TTFT + N_out · t)``.

:func:`fit_sweep` refits, per part and precision, the achieved GEMM fraction and a common scale of the engine's
floors (per step, per layer, per sequence: the figures a concurrency-1 point and a concurrency-256 point pull
apart), on the points' throughput and, where given, median TPOT, over the planner's refit's GEMM grid and with its
priors (:mod:`placement.serving.calibration`); each point is then predicted with both refitted without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import Problem
from placement._validate import Column, missing_columns, numbers, raise_if, read_table, text
from placement.serving.calibration import POINT_SIGMA, PRIOR_SIGMA, REFIT_GEMM, by_part
from placement.serving.efficiency import CALIBRATED, ServingEfficiency, achieved
from placement.serving.hardware import get_accelerator, get_model
from placement.serving.kernels import decode_step, prefill_attention_flops, prefill_ms
from placement.serving.measured import node_problems

__all__ = [
    "FLOOR_SCALES",
    "SWEEP_COLUMNS",
    "LoopPrediction",
    "SweepFit",
    "SweepPoint",
    "closed_loop",
    "fit_sweep",
    "is_sweep",
    "load_sweep",
    "render_sweep_fits",
    "scaled_efficiency",
]

SWEEP_COLUMNS = (
    Column("model", help="model id of data/serving/models.csv"),
    Column("accelerator", help="accelerator id of data/serving/accelerators.csv"),
    Column("gpus", "number", low=1, whole=True, help="accelerators in the node measured"),
    Column("precision", help="weight precision (fp8, fp4, bf16)"),
    Column("concurrency", "number", low=1, whole=True, help="concurrent clients of the run"),
    Column("input_tokens", "number", low=1, help="mean prompt length [tokens]"),
    Column("output_tokens", "number", low=1, help="mean generated tokens per request"),
    Column("output_tok_s", "number", low=0.001, help="output tokens per second the node generated"),
    Column("point_id", required=False, may_be_absent=True),
    Column("tp", "number", required=False, low=1, whole=True, may_be_absent=True, help="tensor-parallel degree used"),
    Column("requests", "number", required=False, low=1, whole=True, may_be_absent=True, help="requests the run sent"),
    Column("ttft_p50_ms", "number", required=False, low=0.0, may_be_absent=True, help="median TTFT [ms]"),
    Column("ttft_p99_ms", "number", required=False, low=0.0, may_be_absent=True, help="p99 TTFT [ms]"),
    Column("tpot_p50_ms", "number", required=False, low=0.0, may_be_absent=True, help="median TPOT [ms]"),
    Column("tpot_p99_ms", "number", required=False, low=0.0, may_be_absent=True, help="p99 TPOT [ms]"),
    Column("source", required=False, may_be_absent=True),
)
"""A sweep file's columns: the first eight are required (``concurrency`` is what marks a file as a sweep)."""
RAMP_REQUESTS_PER_CLIENT = 10
"""Requests per client a run sends when the file does not say (``requests`` blank)."""
FLOOR_SCALES = np.exp(np.linspace(math.log(0.25), math.log(4.0), 17))
"""Scales of the calibrated floors a sweep is fitted over (a quarter to four times)."""


@dataclass(frozen=True)
class SweepPoint:
    """One concurrency level of a closed-loop sweep (a row of a sweep file)."""

    point_id: str
    model: str
    accelerator: str
    gpus: int
    precision: str
    concurrency: int
    input_tokens: float
    output_tokens: float
    output_tok_s: float
    tp: int | None = None
    requests: int | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    source: str = ""


@dataclass(frozen=True)
class LoopPrediction:
    """The modelled closed loop at one concurrency.

    Parameters
    ----------
    output_tok_s : float
        Output tokens per second of the node. [tokens/s]
    tpot_ms : float
        Mean step: each request's mean time per output token. [ms]
    ttft_p50_ms, ttft_p99_ms : float
        Median (steady) and p99 (with the ramp where it counts) time to first token. [ms]
    batch : float
        Sequences per busy replica.
    """

    output_tok_s: float
    tpot_ms: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    batch: float


def is_sweep(path: str | Path) -> bool:
    """Whether a measurements file is a closed-loop sweep (its header has ``concurrency``)."""
    with Path(path).open(encoding="utf-8-sig", errors="replace") as stream:
        header = stream.readline()
    return "concurrency" in {cell.strip().lower() for cell in header.split(",")}


def load_sweep(path: str | Path) -> list[SweepPoint]:
    """Read and check a sweep file; every problem gathered (row, field, rule, fix).

    Raises
    ------
    InputError
        Unknown model or accelerator, a precision the part lacks, a node larger than the part's, a tensor-parallel
        degree that does not divide the node, a p99 below its median, a duplicated id.
    """
    path = Path(path)
    source = str(path)
    table = read_table(path, fix="save it as UTF-8 CSV with a header row (the columns of a sweep file)")
    problems = missing_columns(table, SWEEP_COLUMNS)
    raise_if(problems)
    series = {c.name: (numbers(table, c, problems) if c.kind == "number" else text(table, c, problems)) for c in SWEEP_COLUMNS}
    cells = {name: column.tolist() for name, column in series.items()}
    if not len(table.cells):
        problems.append(Problem(source, "", "", "the file has a header and no rows", "give one row per concurrency"))
    for k in range(len(table.cells)):
        where = table.where(k)
        problems.extend(node_problems(cells, k, source, where))
        gpus, tp = cells["gpus"][k], cells["tp"][k]
        if pd.notna(gpus) and pd.notna(tp) and int(gpus) % int(tp):
            problems.append(Problem(source, where, "tp", f"{int(tp)} does not divide {int(gpus)} GPUs", "give a divisor"))
        for low, high in (("ttft_p50_ms", "ttft_p99_ms"), ("tpot_p50_ms", "tpot_p99_ms")):
            a, b = cells[low][k], cells[high][k]
            if pd.notna(a) and pd.notna(b) and b < a:
                problems.append(Problem(source, where, high, f"is below {low}", "give the 99th percentile"))
    ids = [str(cells["point_id"][k]).strip() or f"row {k + 1}" for k in range(len(table.cells))]
    for k, name in enumerate(ids):
        if name in ids[:k]:
            problems.append(Problem(source, table.where(k), "point_id", f"{name!r} appears twice", "give every row its own id"))
    raise_if(problems)

    def number(name: str, k: int) -> float | None:
        value = cells[name][k]
        return None if pd.isna(value) else float(value)

    out = []
    for k, name in enumerate(ids):
        tp, requests = number("tp", k), number("requests", k)
        out.append(
            SweepPoint(
                point_id=name,
                model=str(cells["model"][k]).strip(),
                accelerator=str(cells["accelerator"][k]).strip(),
                gpus=int(cells["gpus"][k]),
                precision=str(cells["precision"][k]).strip(),
                concurrency=int(cells["concurrency"][k]),
                input_tokens=float(cells["input_tokens"][k]),
                output_tokens=float(cells["output_tokens"][k]),
                output_tok_s=float(cells["output_tok_s"][k]),
                tp=None if tp is None else int(tp),
                requests=None if requests is None else int(requests),
                ttft_p50_ms=number("ttft_p50_ms", k),
                ttft_p99_ms=number("ttft_p99_ms", k),
                tpot_p50_ms=number("tpot_p50_ms", k),
                tpot_p99_ms=number("tpot_p99_ms", k),
                source=str(cells["source"][k]).strip(),
            )
        )
    return out


def scaled_efficiency(accelerator: str, precision: str, gemm: float, floor_scale: float) -> ServingEfficiency:
    """The overrides of a sweep fit: a GEMM fraction and the calibrated floors times ``floor_scale``."""
    ach = achieved(get_accelerator(accelerator), ServingEfficiency(), precision)
    return ServingEfficiency(
        tensor=gemm,
        step_overhead_ms=ach.step_overhead_ms * floor_scale,
        layer_floor_us=ach.layer_floor_us * floor_scale,
        sequence_us=ach.sequence_us * floor_scale,
    )


def closed_loop(point: SweepPoint, eff: ServingEfficiency = CALIBRATED) -> LoopPrediction:
    """The serving model's closed loop at a sweep point's node, lengths and concurrency.

    Parameters
    ----------
    point : SweepPoint
        The node (``tp`` blank: one replica over the node's GPUs), lengths and concurrency.
    eff : ServingEfficiency
        Overrides of the calibrated efficiencies.

    Returns
    -------
    LoopPrediction
        Throughput, mean step (TPOT), and the median and p99 TTFT.
    """
    model, accel = get_model(point.model), get_accelerator(point.accelerator)
    tp = point.tp or point.gpus
    replicas = max(point.gpus // tp, 1)
    busy = min(point.concurrency, replicas)
    batch = point.concurrency / busy
    n_in, n_out = point.input_tokens, point.output_tokens
    prompts_per_step = batch / n_out
    step = decode_step(
        model,
        accel,
        point.precision,
        tp=tp,
        batch=batch,
        context_tokens=n_in + n_out / 2.0,
        prefill_tokens=prompts_per_step * n_in,
        prefill_attention_flop=prompts_per_step * prefill_attention_flops(model, n_in),
        eff=eff,
    ).total_ms
    alone = prefill_ms(model, accel, point.precision, tp=tp, tokens=n_in, eff=eff)
    prefill_step = max(step, alone)
    ttft_p50 = step / 2.0 + prefill_step
    steady_p99 = step + prefill_step
    requests = point.requests or RAMP_REQUESTS_PER_CLIENT * point.concurrency
    tail = 0.01 * requests  # requests above the p99
    ramp_p99 = 0.0
    if point.concurrency > tail:  # the first wave reaches into the p99: its (C - tail)-th slowest prompt
        ramp_p99 = alone * max(1.0, batch * (1.0 - tail / point.concurrency))
    ttft_p99 = max(steady_p99, ramp_p99)
    cycle_ms = ttft_p50 + n_out * step
    return LoopPrediction(
        output_tok_s=point.concurrency * n_out / cycle_ms * 1e3,
        tpot_ms=step,
        ttft_p50_ms=ttft_p50,
        ttft_p99_ms=ttft_p99,
        batch=batch,
    )


@dataclass(frozen=True)
class SweepFit:
    """One part's sweep refitted: a GEMM fraction and a scale of the floors, with per-point held-out predictions.

    Parameters
    ----------
    accelerator, precision : str
        The part and its precision.
    gemm_efficiency, floor_scale : float
        The refitted GEMM fraction and floor scale (1: the calibration's floors).
    prior_gemm : float
        The GEMM fraction in force before.
    points : tuple of SweepPoint
        The part's sweep.
    before, fitted, held_out : tuple of LoopPrediction
        Per point: the model before, at the fit, and refitted without the point (empty with one point).
    """

    accelerator: str
    precision: str
    gemm_efficiency: float
    floor_scale: float
    prior_gemm: float
    points: tuple[SweepPoint, ...]
    before: tuple[LoopPrediction, ...]
    fitted: tuple[LoopPrediction, ...]
    held_out: tuple[LoopPrediction, ...]

    def efficiency(self) -> ServingEfficiency:
        """The overrides this fit puts in force for its part."""
        return scaled_efficiency(self.accelerator, self.precision, self.gemm_efficiency, self.floor_scale)


def _log_terms(point: SweepPoint, prediction: LoopPrediction) -> list[float]:
    """log(model / measured) of each figure the point gives: throughput, and the median TPOT where given."""
    out = [math.log(max(prediction.output_tok_s, 1e-9) / point.output_tok_s)]
    if point.tpot_p50_ms:
        out.append(math.log(max(prediction.tpot_ms, 1e-9) / point.tpot_p50_ms))
    return out


def _grid(points: Sequence[SweepPoint]) -> NDArray[np.float64]:
    """Per grid node (GEMM x floor scale), per point, the sum of squared log errors."""
    out = np.zeros((len(REFIT_GEMM), len(FLOOR_SCALES), len(points)))
    for i, g in enumerate(REFIT_GEMM):
        for j, s in enumerate(FLOOR_SCALES):
            for k, p in enumerate(points):
                logs = _log_terms(p, closed_loop(p, scaled_efficiency(p.accelerator, p.precision, float(g), float(s))))
                out[i, j, k] = sum(e * e for e in logs)
    return out


def _argmin(errors: NDArray[np.float64], prior_gemm: float) -> tuple[float, float]:
    """The grid node that minimises the points' errors plus both priors."""
    g = np.log(REFIT_GEMM / prior_gemm)[:, None] ** 2 / PRIOR_SIGMA**2
    s = np.log(FLOOR_SCALES)[None, :] ** 2 / PRIOR_SIGMA**2
    loss = errors.sum(axis=2) / POINT_SIGMA**2 + g + s
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(REFIT_GEMM[i]), float(FLOOR_SCALES[j])


def fit_sweep(points: Sequence[SweepPoint]) -> list[SweepFit]:
    """Refit each part's GEMM fraction and floor scale on its sweep, with each point held out in turn.

    Parameters
    ----------
    points : sequence of SweepPoint
        A sweep file's rows (:func:`load_sweep`).

    Returns
    -------
    list of SweepFit
        One per (accelerator, precision), in the order first seen.
    """
    out = []
    for (accelerator, precision), members in by_part(points).items():
        prior = achieved(get_accelerator(accelerator), ServingEfficiency(), precision).tensor
        errors = _grid(members)
        gemm, scale = _argmin(errors, prior)
        held = []
        if len(members) > 1:
            for k, p in enumerate(members):
                g, s = _argmin(np.delete(errors, k, axis=2), prior)
                held.append(closed_loop(p, scaled_efficiency(accelerator, precision, g, s)))
        fitted = scaled_efficiency(accelerator, precision, gemm, scale)
        out.append(
            SweepFit(
                accelerator,
                precision,
                gemm,
                scale,
                prior,
                tuple(members),
                tuple(closed_loop(p) for p in members),
                tuple(closed_loop(p, fitted) for p in members),
                tuple(held),
            )
        )
    return out


def render_sweep_fits(fits: Sequence[SweepFit]) -> str:
    """The printed table of :func:`fit_sweep`: per point measured, before, refitted and held out."""
    lines = [
        f"{'point':16s} {'C':>5s} {'measured':>10s} {'before':>8s} {'refit':>8s} {'held out':>8s}"
        f" {'TPOT p50':>9s} {'model':>7s} {'TTFT p99':>9s} {'model':>8s}"
    ]
    thr, held_errors = [], []
    for fit in fits:
        lines.append(
            f"-- {fit.accelerator} {fit.precision}: gemm_efficiency {fit.prior_gemm:.3f} -> {fit.gemm_efficiency:.3f}, "
            f"floors x{fit.floor_scale:.2f}"
        )
        for k, p in enumerate(fit.points):
            b, f = fit.before[k], fit.fitted[k]
            h = f"{fit.held_out[k].output_tok_s / p.output_tok_s - 1:+8.1%}" if fit.held_out else f"{'-':>8s}"
            tpot = f"{p.tpot_p50_ms:9.1f}" if p.tpot_p50_ms else f"{'-':>9s}"
            ttft = f"{p.ttft_p99_ms:9.0f}" if p.ttft_p99_ms else f"{'-':>9s}"
            lines.append(
                f"{p.point_id[:16]:16s} {p.concurrency:5d} {p.output_tok_s:10,.0f} {b.output_tok_s / p.output_tok_s - 1:+8.1%}"
                f" {f.output_tok_s / p.output_tok_s - 1:+8.1%} {h} {tpot} {f.tpot_ms:7.1f} {ttft} {f.ttft_p99_ms:8.0f}"
            )
            thr.append(abs(f.output_tok_s / p.output_tok_s - 1))
            if fit.held_out:
                held_errors.append(abs(fit.held_out[k].output_tok_s / p.output_tok_s - 1))
    tail = f"; held out {np.mean(held_errors):.1%}" if held_errors else "; held out: needs two points of a part"
    lines.append(f"throughput mean |error| refitted {np.mean(thr):.1%}{tail}")
    return "\n".join(lines)
