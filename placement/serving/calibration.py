"""A planner's own measurements: each measured part's GEMM fraction refitted, with held-out errors.

The bundled calibration (``data/serving/calibration.csv``, fitted jointly on every published model by
:mod:`placement.serving.joint`) is the prior. A planner's few points of a part (``serving.measurements``,
``placement calibrate FILE``) move that part's achieved GEMM fraction as far as they agree on; the engine's floors
stay in force. Each point is run at every fraction of :data:`REFIT_GEMM`, the log goodput interpolated between
them, and the fraction that minimises the points' squared log error plus the prior's is kept; each point is then
predicted with the fraction refitted without it (real runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from placement.serving.efficiency import ServingEfficiency, achieved
from placement.serving.hardware import get_accelerator
from placement.serving.measured import MeasuredPoint
from placement.serving.request import serve

__all__ = ["POINT_SIGMA", "PRIOR_SIGMA", "REFIT_GEMM", "PartFit", "fit_parts", "goodput_tok_s", "render_part_fits"]

PRIOR_SIGMA = 0.5
"""Standard deviation of the log-normal prior on the refitted fraction: a factor e^0.5 = 1.65 is one sigma."""
POINT_SIGMA = 0.05
"""Standard deviation of a point's log error (the spread of one accelerator's systems in a round is ~3-5 %)."""
FINE = 241
"""Points of the fine search over the interpolated error."""


def goodput_tok_s(point: MeasuredPoint, gemm: float | None = None) -> float:
    """The serving model's goodput for a measured point's node, workload and limits (a GEMM fraction as given)."""
    return float(serve(point.request(), efficiency=ServingEfficiency(tensor=gemm)).goodput_tok_s)


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

    def efficiency(self) -> ServingEfficiency:
        """The overrides this fit puts in force for its part: the refitted GEMM fraction."""
        return ServingEfficiency(tensor=self.gemm_efficiency)


def _refit(curves: NDArray[np.float64], measured: NDArray[np.float64], prior: float) -> float:
    """The η_c minimising the points' squared log errors (interpolated on the curves) plus the prior."""
    fine = np.linspace(REFIT_GEMM[0], REFIT_GEMM[-1], FINE)
    modelled = np.stack([np.interp(fine, REFIT_GEMM, c) for c in curves])
    loss = ((modelled - np.log(measured)[:, None]) ** 2).sum(axis=0) / POINT_SIGMA**2
    loss = loss + np.log(fine / prior) ** 2 / PRIOR_SIGMA**2
    return round(float(fine[int(np.argmin(loss))]), 4)


class _OnPart(Protocol):
    """A measurement of one part at one precision (a point or a sweep row)."""

    @property
    def accelerator(self) -> str: ...

    @property
    def precision(self) -> str: ...


PointT = TypeVar("PointT", bound=_OnPart)


def by_part(points: Sequence[PointT]) -> dict[tuple[str, str], list[PointT]]:
    """Points grouped by (accelerator, precision), in the order first seen: what a refit fits one figure on."""
    groups: dict[tuple[str, str], list[PointT]] = {}
    for p in points:
        groups.setdefault((p.accelerator, p.precision), []).append(p)
    return groups


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
    out = []
    for (accelerator, precision), members in by_part(points).items():
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
