"""The joint calibration: one set of engine floors and GEMM fractions fitted on every model's measured points.

The physics is the prior; measurements are the evidence. The terms fitted are those that mean the same thing for
every model, so that a model measured on a part informs every other model on it:

- per accelerator **family** (one serving software stack): the per-step launch cost ``step_overhead_ms``, the
  per-layer kernel floor ``layer_floor_us`` and the per-running-sequence cost ``sequence_us``;
- per **die** (the catalog's ``die``: ``b200``, ``gb200`` and ``gb200-nvl72`` carry one B200 die) and precision:
  the achieved GEMM fraction ``gemm_efficiency``;
- per family, the latency of one tensor-parallel collective ``allreduce_latency_us`` (prior: the catalog's cited
  figure), which sets what a layer costs a model split over GPUs beyond its bytes, and the attention kernels'
  achieved fraction of peak ``attention_efficiency`` (what a long context costs);
- shared by every family: ``gemm_half_tokens``, the rows at which a GEMM reaches half its large-GEMM efficiency
  (a property of tensor-core tiles: every dense GEMM over a step's tokens, every expert's over its own, and decode
  attention's over the query heads that share one KV head).

Each term has a log-normal prior at its cited value (:data:`PRIOR_SIGMA`) and physical bounds. The loss is the
squared log error of modelled to measured goodput over :data:`POINT_SIGMA`, each configuration's median run weighed
once, plus the priors. It is minimised by Levenberg-Marquardt on the log of each term, the Jacobian by forward
differences of real runs of the serving model (:data:`DIFF_STEP` in log: wide enough that a discrete batch or
parallelism search does not make it noise); terms that touch disjoint points (two families' floors, two dies'
GEMM fractions) are differenced in the same runs.

Cross-validation leaves out one model (every point of it), or one die, refits the rest by one Gauss-Newton step
from the joint fit (the linearised fold), and predicts the left-out points with **real runs** at the refitted terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import (
    CARRIED_ENGINE_TERMS,
    GEMM_HALF_TOKENS_PRIOR,
    LAYER_FLOOR_US_PRIOR,
    SEQUENCE_US_PRIOR,
    STEP_OVERHEAD_MS_PRIOR,
    ServingEfficiency,
)
from placement.serving.hardware import get_accelerator
from placement.serving.measured import MeasuredPoint
from placement.serving.request import serve

__all__ = [
    "DIFF_STEP",
    "POINT_SIGMA",
    "PRIOR_SIGMA",
    "JointFit",
    "Term",
    "die_of",
    "efficiency_for",
    "fit_jointly",
    "fold_predictions",
    "point_goodput",
    "terms_for",
]

PRIOR_SIGMA = 0.5
"""Standard deviation of each term's log-normal prior: a factor e^0.5 = 1.65 is one sigma."""
POINT_SIGMA = 0.15
"""Standard deviation of a configuration's log error: the model's structural error, not the ~3-5 % spread of one
part's systems in a round (a tighter figure would let the points override every prior)."""
DIFF_STEP = 0.12
"""Forward-difference step of the Jacobian in each term's log (12 %)."""
FLOOR_GOODPUT_SHARE = 1e-3
"""A run that meets no objective is scored at this share of the measurement (log error -6.9), not at log 0."""

_ENGINE_TERMS = {
    # parameter: (prior, low, high): the bounds are physical. A step's launch is a host round trip and a graph
    # launch (0.2-5 ms); a layer's ~10-15 kernels take a few µs each however small their work (5-120 µs); a running
    # sequence costs the host its scheduling, sampling and detokenisation (0.5-20 µs: an engine that spent more per
    # sequence could not run the batches of thousands MLPerf submissions run).
    "step_overhead_ms": (STEP_OVERHEAD_MS_PRIOR, 0.2, 5.0),
    "layer_floor_us": (LAYER_FLOOR_US_PRIOR, 5.0, 120.0),
    "sequence_us": (SEQUENCE_US_PRIOR, 0.5, 20.0),
}
_GEMM_BOUNDS = (0.10, 0.90)
_GEMM_HALF_BOUNDS = (4.0, 2048.0)
_COLLECTIVE_BOUNDS = (2.0, 100.0)
_ATTENTION_BOUNDS = (0.05, 0.9)


def die_of(accelerator: str) -> str:
    """The die a part carries (catalog ``die``): the parts that carry one share its GEMM fraction.

    The HGX B200, the GB200 tray and the GB200 NVL72 rack run one B200 die at their own clocks and peaks; the
    fraction of its own peak each reaches is the die's kernels', so their points inform one figure (and a part
    without points of its own, the HGX B300, takes the figure its die's GB300 points fit).
    """
    return get_accelerator(accelerator).silicon


@dataclass(frozen=True)
class Term:
    """One fitted figure of the joint calibration.

    Parameters
    ----------
    parameter : str
        A calibrated parameter of ``data/serving/calibration.csv``.
    family : str
        The accelerator family it is for (blank: every family).
    die : str
        The die a GEMM fraction is for (blank: the family's engine terms).
    precision : str
        The precision a GEMM fraction is for (blank otherwise).
    prior, low, high : float
        Prior centre and physical bounds.
    """

    parameter: str
    family: str
    die: str
    precision: str
    prior: float
    low: float
    high: float

    def touches(self, point: MeasuredPoint) -> bool:
        """Whether the term moves this point's goodput."""
        if self.parameter == "gemm_half_tokens":
            return True
        if get_accelerator(point.accelerator).family != self.family:
            return False
        return self.parameter != "gemm_efficiency" or (die_of(point.accelerator), point.precision) == (
            self.die,
            self.precision,
        )

    @property
    def label(self) -> str:
        """A short name for tables."""
        where = " ".join(w for w in (self.family, self.die, self.precision) if w)
        return f"{self.parameter} {where}".strip()


def terms_for(points: Sequence[MeasuredPoint]) -> list[Term]:
    """The terms the points can inform: every measured family's floors, every measured die's GEMM fraction.

    Parameters
    ----------
    points : sequence of MeasuredPoint
        The measurements (each of a part with a catalog family).

    Returns
    -------
    list of Term
        Engine terms per family, GEMM fractions per (die, precision), and the GEMMs' tile padding (shared by every point).
    """
    terms: list[Term] = []
    families = sorted({get_accelerator(p.accelerator).family for p in points} - {""})
    for family in families:
        for parameter, (prior, low, high) in _ENGINE_TERMS.items():
            terms.append(Term(parameter, family, "", "", prior, low, high))
        mine = [get_accelerator(p.accelerator) for p in points if get_accelerator(p.accelerator).family == family]
        collective, attention = min(a.allreduce_latency_us for a in mine), min(a.attention_efficiency for a in mine)
        terms.append(Term("allreduce_latency_us", family, "", "", collective, *_COLLECTIVE_BOUNDS))
        terms.append(Term("attention_efficiency", family, "", "", attention, *_ATTENTION_BOUNDS))
    dies = sorted({(get_accelerator(p.accelerator).family, die_of(p.accelerator), p.precision) for p in points})
    for family, die, precision in dies:
        if family:
            prior = get_accelerator(die).gemm_efficiency
            terms.append(Term("gemm_efficiency", family, die, precision, prior, *_GEMM_BOUNDS))
    if points:
        terms.append(Term("gemm_half_tokens", "", "", "", GEMM_HALF_TOKENS_PRIOR, *_GEMM_HALF_BOUNDS))
    return terms


def values_of(terms: Sequence[Term], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The terms' figures at scaled coordinates ``x`` (``log(value / prior) / PRIOR_SIGMA``), inside bounds."""
    raw = np.array([t.prior for t in terms]) * np.exp(PRIOR_SIGMA * np.asarray(x, dtype=float))
    return np.asarray(np.clip(raw, [t.low for t in terms], [t.high for t in terms]), dtype=float)


def coordinates_of(terms: Sequence[Term], values: Iterable[float]) -> NDArray[np.float64]:
    """Inverse of :func:`values_of`."""
    return np.array([math.log(v / t.prior) / PRIOR_SIGMA for t, v in zip(terms, values, strict=True)])


def efficiency_for(point: MeasuredPoint, terms: Sequence[Term], values: Sequence[float]) -> ServingEfficiency:
    """The overrides a point runs at: the terms that touch it, the prompt mix's prefill variability."""
    chosen = {t.parameter: float(v) for t, v in zip(terms, values, strict=True) if t.touches(point)}
    return ServingEfficiency(
        tensor=chosen.get("gemm_efficiency"),
        step_overhead_ms=chosen.get("step_overhead_ms"),
        layer_floor_us=chosen.get("layer_floor_us"),
        sequence_us=chosen.get("sequence_us"),
        gemm_half_tokens=chosen.get("gemm_half_tokens"),
        allreduce_latency_us=chosen.get("allreduce_latency_us"),
        attention=chosen.get("attention_efficiency"),
        service_cv2=None,
    )


def point_goodput(job: tuple[MeasuredPoint, ServingEfficiency]) -> float:
    """A real run of the serving model at a point's node, workload and limits (TPOT objective). [tok/s]"""
    point, eff = job
    return serve(replace(point.request(), itl_metric="tpot"), efficiency=eff).goodput_tok_s


def _log_errors(points: Sequence[MeasuredPoint], goodput: Sequence[float]) -> NDArray[np.float64]:
    return np.array([math.log(max(g, FLOOR_GOODPUT_SHARE * p.tok_s) / p.tok_s) for p, g in zip(points, goodput, strict=True)])


@dataclass(frozen=True)
class JointFit:
    """The joint calibration's result.

    Parameters
    ----------
    terms : list of Term
        What was fitted.
    values : numpy.ndarray
        The fitted figures, one per term.
    points : list of MeasuredPoint
        What it was fitted on.
    log_errors : numpy.ndarray
        Per point, log(modelled / measured) at the fit (real runs).
    jacobian : numpy.ndarray
        ``d log goodput / d x`` at the fit (points × terms, scaled coordinates).
    history : list of str
        One line per iteration.
    point_sigma : float
        The points' log error the fit weighed them with.
    """

    terms: list[Term]
    values: NDArray[np.float64]
    points: list[MeasuredPoint]
    log_errors: NDArray[np.float64]
    jacobian: NDArray[np.float64]
    history: list[str]
    point_sigma: float = POINT_SIGMA

    @property
    def x(self) -> NDArray[np.float64]:
        """The fit in scaled coordinates."""
        return coordinates_of(self.terms, self.values)

    def value(self, parameter: str, family: str = "", die: str = "", precision: str = "") -> float | None:
        """A fitted figure, or None."""
        for t, v in zip(self.terms, self.values, strict=True):
            if (t.parameter, t.family, t.die, t.precision) == (parameter, family, die, precision):
                return float(v)
        return None


def _colour(touch: NDArray[np.bool_]) -> list[list[int]]:
    """Groups of terms whose points do not overlap (differenced together in the same runs)."""
    groups: list[list[int]] = []
    rows: list[NDArray[np.bool_]] = []
    for j in range(touch.shape[1]):
        for g, used in zip(groups, rows, strict=True):
            if not (used & touch[:, j]).any():
                g.append(j)
                used |= touch[:, j]
                break
        else:
            groups.append([j])
            rows.append(touch[:, j].copy())
    return groups


class _Runner:
    """Runs points at terms' values through an executor, remembering every run."""

    def __init__(self, points: Sequence[MeasuredPoint], terms: Sequence[Term], pool: Executor | None) -> None:
        self.points, self.terms, self.pool = list(points), list(terms), pool
        self.touch = np.array([[t.touches(p) for t in terms] for p in points])
        self.memo: dict[tuple[int, tuple[float, ...]], float] = {}
        self.runs = 0

    def goodput(self, requests: list[tuple[int, NDArray[np.float64]]]) -> list[float]:
        """Goodput of point ``i`` at the values ``v`` for each ``(i, v)``."""
        keys = [(i, tuple(np.round(v[self.touch[i]], 9))) for i, v in requests]
        todo = [(k, (i, v)) for k, (i, v) in zip(keys, requests, strict=True) if k not in self.memo]
        unique = dict(todo)
        jobs = [(self.points[i], efficiency_for(self.points[i], self.terms, list(v))) for i, v in unique.values()]
        results = list(self.pool.map(point_goodput, jobs)) if self.pool is not None else [point_goodput(j) for j in jobs]
        self.runs += len(jobs)
        self.memo.update(zip(unique, results, strict=True))
        return [self.memo[k] for k in keys]

    def log_errors(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        v = values_of(self.terms, x)
        return _log_errors(self.points, self.goodput([(i, v) for i in range(len(self.points))]))

    def probe(self, x: NDArray[np.float64], base: NDArray[np.float64], sign: float) -> NDArray[np.float64]:
        """Each point's log error with the one term touching it in each group shifted by ``sign · DIFF_STEP``.

        Returns ``(points, terms)``: entry ``(i, j)`` is point ``i``'s log error with term ``j`` shifted (its base
        error where ``j`` does not touch it).
        """
        moved_all = np.repeat(base[:, None], len(self.terms), axis=1)
        shift = sign * DIFF_STEP / PRIOR_SIGMA
        for group in _colour(self.touch):
            shifted = x.copy()
            shifted[group] += shift
            v = values_of(self.terms, shifted)
            rows = [i for i in range(len(self.points)) if self.touch[i, group].any()]
            moved = _log_errors([self.points[i] for i in rows], self.goodput([(i, v) for i in rows]))
            for k, i in enumerate(rows):
                moved_all[i, next(j for j in group if self.touch[i, j])] = moved[k]
        return moved_all


def _jacobian(moved: NDArray[np.float64], base: NDArray[np.float64]) -> NDArray[np.float64]:
    """Forward differences of :meth:`_Runner.probe` at ``+DIFF_STEP``, per scaled coordinate."""
    return np.asarray((moved - base[:, None]) / (DIFF_STEP / PRIOR_SIGMA))


def _coordinate_move(
    moves: dict[float, NDArray[np.float64]],
    r: NDArray[np.float64],
    x: NDArray[np.float64],
    touch: NDArray[np.bool_],
    sigma: float,
) -> NDArray[np.float64] | None:
    """The best move of single terms by ``±DIFF_STEP`` when the Gauss-Newton direction fails (a non-smooth loss).

    Terms of one colour group touch disjoint points, so their cost changes add exactly: the move shifts every term
    of the best group whose shift lowers the cost. None when no shift does.
    """
    h = DIFF_STEP / PRIOR_SIGMA
    best_gain, best = 0.0, None
    change = {
        sign: ((moved**2 - r[:, None] ** 2) * touch).sum(axis=0) / sigma**2 + (x + sign * h) ** 2 - x**2
        for sign, moved in moves.items()
    }
    for group in _colour(touch):
        step = np.zeros_like(x)
        gain = 0.0
        for j in group:
            sign = min(change, key=lambda s: change[s][j])
            if change[sign][j] < 0:
                step[j], gain = sign * h, gain + float(change[sign][j])
        if gain < best_gain:
            best_gain, best = gain, step
    return None if best is None else x + best


def _cost(r: NDArray[np.float64], x: NDArray[np.float64], sigma: float) -> float:
    return float(np.sum((r / sigma) ** 2) + np.sum(x**2))


def _step(
    jac: NDArray[np.float64], r: NDArray[np.float64], x: NDArray[np.float64], damping: float, sigma: float
) -> NDArray[np.float64]:
    """The Levenberg-Marquardt step of the data (``r / sigma``) and the priors (``x``)."""
    a = jac / sigma
    normal = a.T @ a + np.eye(len(x))
    gradient = a.T @ (r / sigma) + x
    return np.asarray(-np.linalg.solve(normal + damping * np.diag(np.diag(normal)), gradient))


def fit_jointly(
    points: Sequence[MeasuredPoint],
    *,
    pool: Executor | None = None,
    start: Sequence[float] | None = None,
    iterations: int = 8,
    point_sigma: float = POINT_SIGMA,
    progress: Callable[[str], None] = lambda _: None,
    checkpoint: Callable[[Sequence[Term], NDArray[np.float64]], None] | None = None,
) -> JointFit:
    """Fit every term of :func:`terms_for` on the points at once.

    Parameters
    ----------
    points : sequence of MeasuredPoint
        One per configuration (:func:`placement.serving.measured.median_points`).
    pool : Executor, optional
        Runs the serving model in parallel.
    start : sequence of float, optional
        Starting figures (default: the priors).
    iterations : int
        Levenberg-Marquardt iterations at most.
    point_sigma : float
        Standard deviation of a point's log error: how far the points may pull the terms from their priors.
    progress : callable, optional
        Receives one line per iteration.
    checkpoint : callable, optional
        Receives the terms and their figures after each iteration (a long fit can be resumed from them).

    Returns
    -------
    JointFit
        The figures, the residuals and Jacobian at them.
    """
    terms = terms_for(points)
    runner = _Runner(points, terms, pool)
    x = np.zeros(len(terms)) if start is None else coordinates_of(terms, start)
    r = runner.log_errors(x)
    damping, history = 1e-2, []
    up = runner.probe(x, r, 1.0)
    for it in range(iterations):
        cost = _cost(r, x, point_sigma)
        accepted = False
        for _ in range(4):
            trial = np.clip(x + _step(_jacobian(up, r), r, x, damping, point_sigma), -6.0, 6.0)
            trial_r = runner.log_errors(trial)
            if _cost(trial_r, trial, point_sigma) < cost:
                x, r, damping, accepted = trial, trial_r, damping / 3.0, True
                break
            damping *= 8.0
        if not accepted:  # the direction is noise here: move single terms where a shift is known to help
            moved = _coordinate_move({1.0: up, -1.0: runner.probe(x, r, -1.0)}, r, x, runner.touch, point_sigma)
            if moved is not None:
                x, r, accepted = moved, runner.log_errors(moved), True
        rms = float(np.sqrt(np.mean(r**2)))
        after = _cost(r, x, point_sigma)
        line = f"iteration {it + 1}: cost {cost:.2f} -> {after:.2f}, rms log error {rms:.3f} ({runner.runs} runs)"
        history.append(line)
        progress(line)
        if checkpoint is not None:
            checkpoint(terms, values_of(terms, x))
        if not accepted or cost - after < 1e-4 * cost:
            break
        up = runner.probe(x, r, 1.0)
    return JointFit(terms, values_of(terms, x), list(points), r, _jacobian(up, r), history, point_sigma)


def fold_predictions(
    fit: JointFit, held_out: Callable[[MeasuredPoint], bool], *, pool: Executor | None = None
) -> tuple[NDArray[np.float64], dict[int, float]]:
    """Refit without the held-out points and predict them by real runs, as the product would predict them.

    The refit is one damped Gauss-Newton step from the joint fit (damping 1: the Jacobian of a discrete search is
    noisy, and an undamped step overshoots). A term no kept point touches is predicted as the product predicts a
    part without points: a die's GEMM fraction is the geometric mean of its family's other dies at that precision
    (their prior when there are none), a family's engine floor the geometric mean of the other families'
    (:data:`~placement.serving.efficiency.CARRIED_ENGINE_TERMS`), the collective's latency and the attention
    fraction their cited prior.

    Parameters
    ----------
    fit : JointFit
        The joint fit (its Jacobian linearises the refit).
    held_out : callable
        True for a point the fold leaves out.
    pool : Executor, optional
        Runs the serving model in parallel.

    Returns
    -------
    tuple
        The fold's figures, and ``{point index: log error predicted}`` for the held-out points.
    """
    keep = np.array([not held_out(p) for p in fit.points])
    x = fit.x
    runner = _Runner(fit.points, fit.terms, pool)
    informed = runner.touch[keep].any(axis=0)
    a = fit.jacobian[keep] / fit.point_sigma
    normal = a.T @ a + np.eye(len(x))
    gradient = a.T @ (fit.log_errors[keep] / fit.point_sigma) + x
    x_fold = np.clip(x - np.linalg.solve(normal + np.diag(np.diag(normal)), gradient), -6.0, 6.0)
    x_fold[~informed] = 0.0
    values = values_of(fit.terms, x_fold)
    for j, term in enumerate(fit.terms):
        if informed[j] or term.parameter not in ("gemm_efficiency", *CARRIED_ENGINE_TERMS):
            continue
        # a die takes its family's other dies at its precision; a family's floor the other families'
        same = ("parameter", "family", "precision") if term.parameter == "gemm_efficiency" else ("parameter",)
        siblings = [
            values[k]
            for k, other in enumerate(fit.terms)
            if informed[k] and all(getattr(other, a) == getattr(term, a) for a in same)
        ]
        if siblings:
            values[j] = float(np.exp(np.mean(np.log(siblings))))
    out = [i for i in range(len(fit.points)) if not keep[i]]
    goodput = runner.goodput([(i, values) for i in out])
    errors = _log_errors([fit.points[i] for i in out], goodput)
    return values, dict(zip(out, (float(e) for e in errors), strict=True))
