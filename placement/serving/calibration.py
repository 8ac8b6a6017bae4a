"""Calibrating the serving model on measured points: per family, the GEMM fraction per precision and the overhead.

The physics is the prior; measurements are the evidence. Two figures of the step-time model are fitted, because
measurements show they differ between parts and between software stacks:

- ``gemm_efficiency`` (η_c), the achieved fraction of dense tensor peak, **per precision** and **per part**: FP4
  is its own precision, never assumed to reach FP8's fraction (its scale handling and smaller tiles cost more),
  and a part's sustained clocks under its power cap set how much of its peak it reaches (an MI300X at 750 W and
  an MI325X at 1,000 W share a die); a part of the family without a point gets the family's geometric mean;
- ``step_overhead_ms``, the per-step cost of the family's serving engine (scheduling, sampling, launches),
  shared by the family's parts.

Every other efficiency stays at its cited catalog value. The fit works on **response surfaces**: the serving
model is run once per measured point on a grid of (η_c, overhead) (:data:`GRID_GEMM`, :data:`GRID_OVERHEAD_MS`),
and the log goodput is interpolated between grid nodes, so a fit, and every fold of its cross-validation, is a
search over a fine grid of the interpolated error (no further runs of the model; the search is exhaustive, so
the non-smooth goodput of a discrete batch search cannot trap it). The error is the squared log ratio of model
to measurement, plus a weak prior (log-normal, :data:`PRIOR_SIGMA`) that holds a figure the points cannot
identify near its cited value, inside physical bounds (the grids' ranges).

Cross-validation leaves one accelerator out (every point of it: its scenarios are one system), refits the family
on the rest and predicts the left-out points; and leaves a whole family (a generation) out, predicting it with
another family's figures. The fitted figures are re-checked with real runs of the model, not the interpolation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import ServingEfficiency, achieved
from placement.serving.hardware import get_accelerator
from placement.serving.measured import MeasuredPoint
from placement.serving.request import serve

__all__ = [
    "GRID_GEMM",
    "GRID_OVERHEAD_MS",
    "FamilyFit",
    "PartFit",
    "Surface",
    "bilinear",
    "family_of",
    "fit_family",
    "fit_parts",
    "goodput_tok_s",
    "leave_one_accelerator_out",
    "priors",
    "render_part_fits",
    "surface",
    "surfaces",
    "with_fit",
]

GRID_GEMM = np.round(np.arange(0.15, 0.801, 0.05), 3)
"""GEMM fractions of peak the surfaces are run at: the physical range (a GEMM at 15-80 % of dense peak)."""
GRID_OVERHEAD_MS = np.array([2.0, 5.0, 8.0, 11.0, 14.0, 18.0, 24.0, 30.0])
"""Per-step overheads the surfaces are run at: a CUDA-graph engine (~2 ms) to an eager Python one (~30 ms). [ms]"""
PRIOR_SIGMA = 0.5
"""Standard deviation of the log-normal prior on each fitted figure: a factor e^0.5 = 1.65 is one sigma."""
POINT_SIGMA = 0.05
"""Standard deviation of a point's log error (the spread of one accelerator's systems in a round is ~3-5 %)."""
FINE = 241
"""Points per axis of the fine search over the interpolated error."""


@dataclass(frozen=True)
class Surface:
    """The serving model's log goodput for one measured point over the (η_c, overhead) grid.

    Parameters
    ----------
    point : MeasuredPoint
        The measurement.
    log_goodput : numpy.ndarray
        ``(len(GRID_GEMM), len(GRID_OVERHEAD_MS))`` natural log of modelled goodput. [log tokens/s]
    """

    point: MeasuredPoint
    log_goodput: NDArray[np.float64]

    def at(self, gemm: NDArray[np.float64], overhead_ms: NDArray[np.float64]) -> NDArray[np.float64]:
        """Interpolated log goodput at (η_c, overhead) pairs (broadcast)."""
        g, o = np.broadcast_arrays(np.asarray(gemm, dtype=float), np.asarray(overhead_ms, dtype=float))
        return bilinear(GRID_GEMM, GRID_OVERHEAD_MS, self.log_goodput, g, o)

    def log_error(self, gemm: NDArray[np.float64], overhead_ms: NDArray[np.float64]) -> NDArray[np.float64]:
        """log(model / measured) at (η_c, overhead)."""
        return np.asarray(self.at(gemm, overhead_ms) - np.log(self.point.tok_s), dtype=float)


def bilinear(
    xs: NDArray[np.float64], ys: NDArray[np.float64], values: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Bilinear interpolation of ``values[i, j]`` (on the regular grid ``xs`` x ``ys``) at ``(x, y)``, clipped to it.

    Numpy only: the installed package carries no SciPy.
    """
    x = np.clip(x, xs[0], xs[-1])
    y = np.clip(y, ys[0], ys[-1])
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2)
    j = np.clip(np.searchsorted(ys, y, side="right") - 1, 0, len(ys) - 2)
    tx = (x - xs[i]) / (xs[i + 1] - xs[i])
    ty = (y - ys[j]) / (ys[j + 1] - ys[j])
    low = values[i, j] * (1 - tx) + values[i + 1, j] * tx
    high = values[i, j + 1] * (1 - tx) + values[i + 1, j + 1] * tx
    return np.asarray(low * (1 - ty) + high * ty, dtype=float)


def goodput_tok_s(point: MeasuredPoint, gemm: float | None = None, overhead_ms: float | None = None) -> float:
    """The serving model's goodput for a measured point's node, workload and limits (overrides as given)."""
    eff = ServingEfficiency(tensor=gemm, step_overhead_ms=overhead_ms)
    return float(serve(point.request(), efficiency=eff).goodput_tok_s)


def surface(point: MeasuredPoint) -> Surface:
    """Run the model for one point at every grid node (``len(GRID_GEMM) x len(GRID_OVERHEAD_MS)`` runs)."""
    grid = np.array([[goodput_tok_s(point, float(g), float(o)) for o in GRID_OVERHEAD_MS] for g in GRID_GEMM])
    return Surface(point, np.log(np.maximum(grid, 1e-9)))


def surfaces(
    points: Sequence[MeasuredPoint], *, workers: int = 1, progress: Callable[[str], None] = lambda _: None
) -> list[Surface]:
    """The surfaces of many points, in order (``workers`` processes).

    Parameters
    ----------
    points : sequence of MeasuredPoint
        The measurements.
    workers : int, optional
        Processes to run them in (1: in this one).
    progress : callable, optional
        Receives one line per point done.

    Returns
    -------
    list of Surface
        One per point.
    """
    out: list[Surface] = []
    if workers <= 1:
        for k, p in enumerate(points):
            out.append(surface(p))
            progress(f"surface {k + 1}/{len(points)}: {p.accelerator} {p.precision} {p.scenario or p.point_id}")
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for k, s in enumerate(pool.map(surface, points)):
            out.append(s)
            progress(f"surface {k + 1}/{len(points)}: {s.point.accelerator} {s.point.precision} {s.point.scenario}")
    return out


@dataclass(frozen=True)
class FamilyFit:
    """The fitted figures of one family and how well they fit.

    Parameters
    ----------
    family : str
        The accelerator family.
    precision : str
        The precision the GEMM fractions are for.
    gemm_by_accelerator : dict of str to float
        Fitted η_c of each accelerator measured: the fraction of dense peak a part sustains depends on its clocks
        under its power cap (an MI300X at 750 W and an MI325X at 1,000 W share a die), so each part has its own.
    gemm_efficiency : float
        The family's η_c: the geometric mean of its parts' (what a part of the family without a point gets).
    step_overhead_ms : float
        Fitted per-step overhead, shared by the family (one serving software stack). [ms]
    prior_gemm, prior_overhead_ms : float
        The cited catalog values the prior pulls toward.
    points : tuple of str
        Point ids fitted on.
    log_errors : tuple of float
        Interpolated log(model / measured) of each point at the fit.
    """

    family: str
    precision: str
    gemm_by_accelerator: dict[str, float]
    gemm_efficiency: float
    step_overhead_ms: float
    prior_gemm: float
    prior_overhead_ms: float
    points: tuple[str, ...]
    log_errors: tuple[float, ...]

    def gemm_for(self, accelerator: str) -> float:
        """The η_c in force for an accelerator: its own when measured, else the family's."""
        return self.gemm_by_accelerator.get(accelerator, self.gemm_efficiency)


def _fine_axes() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    gemm = np.linspace(GRID_GEMM[0], GRID_GEMM[-1], FINE)
    overhead = np.linspace(GRID_OVERHEAD_MS[0], GRID_OVERHEAD_MS[-1], FINE)
    return gemm, overhead


def fit_family(family: str, fitted: Sequence[Surface], *, prior_gemm: float, prior_overhead_ms: float) -> FamilyFit:
    """Each part's η_c and the family's overhead that minimise the squared log errors plus the prior.

    Given the overhead, the parts separate: each part's η_c is the best for its own points, so the search is
    exhaustive over a fine grid of overheads, and for each over a fine grid of every part's η_c.

    Parameters
    ----------
    family : str
        The family (for the record).
    fitted : sequence of Surface
        Its points' surfaces, all at one precision.
    prior_gemm, prior_overhead_ms : float
        The cited values the log-normal prior (:data:`PRIOR_SIGMA`) is centred on.

    Returns
    -------
    FamilyFit
        The figures, inside the physical bounds (the grids' ranges).

    Raises
    ------
    ValueError
        No points, or points at more than one precision.
    """
    if not fitted:
        raise ValueError(f"no measured points to fit family {family}")
    precisions = {s.point.precision for s in fitted}
    if len(precisions) > 1:
        raise ValueError(f"family {family}: fit one precision at a time, got {sorted(precisions)}")
    gemm, overhead = _fine_axes()
    g, o = np.meshgrid(gemm, overhead, indexing="ij")
    prior_g = np.log(g / prior_gemm) ** 2 / PRIOR_SIGMA**2
    total = np.log(overhead / prior_overhead_ms) ** 2 / PRIOR_SIGMA**2
    best_gemm_index: dict[str, NDArray[np.int64]] = {}
    for accelerator in sorted({s.point.accelerator for s in fitted}):
        own = [s for s in fitted if s.point.accelerator == accelerator]
        loss = sum((s.log_error(g, o) ** 2 for s in own), start=np.zeros_like(g)) / POINT_SIGMA**2 + prior_g
        best_gemm_index[accelerator] = np.argmin(loss, axis=0)  # per overhead
        total = total + loss.min(axis=0)
    j = int(np.argmin(total))
    best_o = float(overhead[j])
    by_accelerator = {a: round(float(gemm[index[j]]), 4) for a, index in best_gemm_index.items()}
    family_gemm = round(float(np.exp(np.mean(np.log(list(by_accelerator.values()))))), 4)
    errors = tuple(float(s.log_error(np.array(by_accelerator[s.point.accelerator]), np.array(best_o))) for s in fitted)
    ids = tuple(s.point.point_id for s in fitted)
    return FamilyFit(
        family, precisions.pop(), by_accelerator, family_gemm, round(best_o, 3), prior_gemm, prior_overhead_ms, ids, errors
    )


def family_of(point: MeasuredPoint) -> str:
    """The calibration family of a point's accelerator (blank when the catalog gives none)."""
    return get_accelerator(point.accelerator).family


def priors(point: MeasuredPoint) -> tuple[float, float]:
    """The cited catalog η_c and step overhead of a point's accelerator (the prior of its family's fit)."""
    accel = get_accelerator(point.accelerator)
    return accel.gemm_efficiency, accel.step_overhead_ms


def leave_one_accelerator_out(family: str, fitted: Sequence[Surface]) -> list[tuple[str, FamilyFit, list[float]]]:
    """Leave each accelerator of a family out in turn, refit on the rest, and predict the left-out points.

    Parameters
    ----------
    family : str
        The family.
    fitted : sequence of Surface
        Its points.

    Returns
    -------
    list of tuple
        ``(accelerator left out, fit on the others, log errors of its points)``; empty when the family has a
        single accelerator (nothing to fit on).
    """
    accelerators = sorted({s.point.accelerator for s in fitted})
    if len(accelerators) < 2:
        return []
    prior_gemm, prior_overhead = priors(fitted[0].point)
    out = []
    for left in accelerators:
        rest = [s for s in fitted if s.point.accelerator != left]
        held = [s for s in fitted if s.point.accelerator == left]
        fit = fit_family(family, rest, prior_gemm=prior_gemm, prior_overhead_ms=prior_overhead)
        errors = [float(s.log_error(np.array(fit.gemm_for(left)), np.array(fit.step_overhead_ms))) for s in held]
        out.append((left, fit, errors))
    return out


def with_fit(point: MeasuredPoint, fit: FamilyFit) -> float:
    """A real run of the model at a fit's figures (not the interpolation): the check of every fitted residual."""
    return goodput_tok_s(point, fit.gemm_for(point.accelerator), fit.step_overhead_ms)


# ----------------------------------------------------------------------------- a planner's own measurements

REFIT_GEMM = np.round(np.arange(0.15, 0.851, 0.05), 3)
"""GEMM fractions a planner's points are run at (the overhead stays at the calibration in force)."""


@dataclass(frozen=True)
class PartFit:
    """One part's GEMM fraction refitted on a planner's measurements.

    Parameters
    ----------
    accelerator, precision : str
        The part and its precision.
    gemm_efficiency : float
        The refitted η_c.
    prior_gemm : float
        The η_c in force before (the bundled calibration, else the catalog): the prior's centre.
    point_ids : tuple of str
        The planner's points of this part.
    measured_tok_s, before_tok_s, fitted_tok_s : tuple of float
        Per point: the measurement, the model before, and a real run at the refitted figure.
    held_out_tok_s : tuple of float
        Per point, the model refitted without it (real runs); empty with a single point.
    """

    accelerator: str
    precision: str
    gemm_efficiency: float
    prior_gemm: float
    point_ids: tuple[str, ...]
    measured_tok_s: tuple[float, ...]
    before_tok_s: tuple[float, ...]
    fitted_tok_s: tuple[float, ...]
    held_out_tok_s: tuple[float, ...]


def _refit(curves: NDArray[np.float64], measured: NDArray[np.float64], prior: float) -> float:
    """The η_c minimising the points' squared log errors (interpolated on the curves) plus the prior."""
    fine = np.linspace(REFIT_GEMM[0], REFIT_GEMM[-1], FINE)
    modelled = np.stack([np.interp(fine, REFIT_GEMM, c) for c in curves])
    loss = ((modelled - np.log(measured)[:, None]) ** 2).sum(axis=0) / POINT_SIGMA**2
    loss = loss + np.log(fine / prior) ** 2 / PRIOR_SIGMA**2
    return round(float(fine[int(np.argmin(loss))]), 4)


def fit_parts(points: Sequence[MeasuredPoint], *, progress: Callable[[str], None] = lambda _: None) -> list[PartFit]:
    """Refit each measured part's GEMM fraction on a planner's points, with held-out errors.

    The bundled calibration is the prior (its overhead stays in force): a planner's few points move the part's
    figure only as far as they agree on. Each point costs ``len(REFIT_GEMM)`` runs of the model, plus one real
    run at the fit and one per held-out fold.

    Parameters
    ----------
    points : sequence of MeasuredPoint
        The planner's measurements (:func:`placement.serving.measured.load_measured`).
    progress : callable, optional
        Receives one line per point run.

    Returns
    -------
    list of PartFit
        One per (accelerator, precision), in the order first seen.
    """
    groups: dict[tuple[str, str], list[MeasuredPoint]] = {}
    for p in points:
        groups.setdefault((p.accelerator, p.precision), []).append(p)
    out = []
    for (accelerator, precision), members in groups.items():
        accel = get_accelerator(accelerator)
        prior = achieved(accel, ServingEfficiency(), precision).tensor
        curves = []
        for p in members:
            curves.append(np.log(np.maximum([goodput_tok_s(p, float(g)) for g in REFIT_GEMM], 1e-9)))
            progress(f"{accelerator} {precision}: point {p.point_id} run at {len(REFIT_GEMM)} GEMM fractions")
        grid, measured = np.array(curves), np.array([p.tok_s for p in members])
        gemm = _refit(grid, measured, prior)
        held = []
        if len(members) > 1:
            for k, p in enumerate(members):
                keep = np.arange(len(members)) != k
                held.append(goodput_tok_s(p, _refit(grid[keep], measured[keep], prior)))
        out.append(
            PartFit(
                accelerator,
                precision,
                gemm,
                prior,
                tuple(p.point_id for p in members),
                tuple(float(m) for m in measured),
                tuple(goodput_tok_s(p) for p in members),
                tuple(goodput_tok_s(p, gemm) for p in members),
                tuple(held),
            )
        )
    return out


def render_part_fits(fits: Sequence[PartFit]) -> str:
    """The printed table of :func:`fit_parts`: per point measured, before, refitted and held out."""
    err = f"{'err':>7s}"
    lines = [f"{'point':28s} {'measured':>10s} {'before':>10s} {err} {'refit':>10s} {err} {'held out':>10s} {err}"]
    for fit in fits:
        lines.append(f"-- {fit.accelerator} {fit.precision}: gemm_efficiency {fit.prior_gemm:.3f} -> {fit.gemm_efficiency:.3f}")
        for k, pid in enumerate(fit.point_ids):
            m, b, f = fit.measured_tok_s[k], fit.before_tok_s[k], fit.fitted_tok_s[k]
            cell = f"{'-':>10s}"
            if fit.held_out_tok_s:
                cell = f"{fit.held_out_tok_s[k]:10,.0f} {fit.held_out_tok_s[k] / m - 1:+7.1%}"
            lines.append(f"{pid[:28]:28s} {m:10,.0f} {b:10,.0f} {b / m - 1:+7.1%} {f:10,.0f} {f / m - 1:+7.1%} {cell}")
    errors = [f / m - 1 for fit in fits for f, m in zip(fit.fitted_tok_s, fit.measured_tok_s, strict=True)]
    held_errors = [
        h / m - 1 for fit in fits if fit.held_out_tok_s for h, m in zip(fit.held_out_tok_s, fit.measured_tok_s, strict=True)
    ]
    tail = f"; held out {np.mean(np.abs(held_errors)):.1%}" if held_errors else "; held out: needs two points of a part"
    lines.append(f"mean |error| refitted {np.mean(np.abs(errors)):.1%}{tail}")
    return "\n".join(lines)
