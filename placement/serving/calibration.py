"""A planner's own measurements: each measured part's GEMM fraction refitted, with held-out errors.

The bundled calibration (``data/serving/calibration.csv``, fitted jointly on every published model by
:mod:`placement.serving.joint`) is the prior. A planner's few points of a part (``serving.measurements``,
``placement calibrate FILE``) move that part's achieved GEMM fraction as far as they agree on; the engine's floors
stay in force. Each point is run at every fraction of :data:`POINT_GEMM`, the log goodput interpolated between
them, and the fraction that minimises the points' squared log error plus the prior's is kept; each point is then
predicted with the fraction refitted without it (real runs).

The work is per distinct configuration (model, part, node, lengths and limits: the request the model serves), not
per row: rows that repeat a configuration (a benchmark run many times) are fitted once, at the geometric mean of
their measurements, weighted by their count, and held out together. A file of more than
:data:`MAX_CONFIGURATIONS` distinct configurations is refused at once, with the limit and why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement.serving.efficiency import ServingEfficiency, achieved
from placement.serving.hardware import get_accelerator
from placement.serving.measured import MeasuredPoint
from placement.serving.request import ServingRequest, serve

__all__ = [
    "MAX_CONFIGURATIONS",
    "POINT_GEMM",
    "POINT_SIGMA",
    "PRIOR_SIGMA",
    "REFIT_GEMM",
    "PartFit",
    "fit_parts",
    "goodput_tok_s",
    "render_part_fits",
]

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
"""GEMM fractions a closed-loop sweep is run at (its fit takes the grid's best; the overhead stays in force)."""
POINT_GEMM = REFIT_GEMM[::2]
"""GEMM fractions a point inside latency limits is run at (0.15 to 0.85 by 0.1): its log goodput is smooth in the
fraction and interpolated between them (:data:`FINE`), so a finer grid would only cost runs."""
MAX_CONFIGURATIONS = 24
"""Distinct configurations a refit takes: each costs ``len(POINT_GEMM) + 3`` runs of the serving model (0.1-3 s
each), so 24 take from half a minute to six minutes on two cores; more is a file to split by part or to merge."""


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
        Per distinct configuration of this part, the id of its first row.
    measured_tok_s, before_tok_s, fitted_tok_s : tuple of float
        Per configuration: the measurement (the geometric mean of its rows), the model before, and a real run at the
        refitted figure.
    held_out_tok_s : tuple of float
        Per configuration, the model refitted without it (real runs); empty with a single configuration.
    rows : tuple of int
        Per configuration, the rows that measured it (its weight in the fit).
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
    rows: tuple[int, ...] = ()

    def efficiency(self) -> ServingEfficiency:
        """The overrides this fit puts in force for its part: the refitted GEMM fraction."""
        return ServingEfficiency(tensor=self.gemm_efficiency)


def _refit(curves: NDArray[np.float64], measured: NDArray[np.float64], prior: float, rows: NDArray[np.float64]) -> float:
    """The η_c minimising the configurations' squared log errors (interpolated, weighted by rows) plus the prior."""
    fine = np.linspace(POINT_GEMM[0], POINT_GEMM[-1], FINE)
    modelled = np.stack([np.interp(fine, POINT_GEMM, c) for c in curves])
    loss = (rows[:, None] * (modelled - np.log(measured)[:, None]) ** 2).sum(axis=0) / POINT_SIGMA**2
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


def configurations(points: Sequence[MeasuredPoint]) -> dict[ServingRequest, list[MeasuredPoint]]:
    """Points grouped by what the serving model is asked (the request), in the order first seen."""
    groups: dict[ServingRequest, list[MeasuredPoint]] = {}
    for p in points:
        groups.setdefault(p.request(), []).append(p)
    return groups


def check_configurations(points: Sequence[MeasuredPoint], source: str) -> int:
    """Refuse at once a file of more distinct configurations than :data:`MAX_CONFIGURATIONS`; else their count.

    Raises
    ------
    InputError
        Naming the file, the count, the limit and why.
    """
    count = len(configurations(points))
    if count > MAX_CONFIGURATIONS:
        rule = (
            f"{count:,} distinct configurations ({len(points):,} rows); a refit takes at most {MAX_CONFIGURATIONS}: each "
            f"runs the serving model {len(POINT_GEMM) + 3} times (0.1-3 s a run)"
        )
        fix = "split the file by accelerator, or keep the configurations you deploy (repeated rows of one are merged)"
        raise InputError([Problem(source, "", "", rule, fix)])
    return count


def _run(job: tuple[MeasuredPoint, float | None]) -> float:
    return goodput_tok_s(*job)


def fit_parts(
    points: Sequence[MeasuredPoint],
    *,
    source: str = "the measurements",
    progress: Callable[[str], None] = lambda _: None,
    pool: Executor | None = None,
) -> list[PartFit]:
    """Refit each measured part's GEMM fraction on a planner's points, with held-out errors.

    The bundled calibration is the prior (its overhead stays in force): a planner's few configurations move the
    part's figure only as far as they agree on. Each distinct configuration costs ``len(POINT_GEMM)`` runs of the
    model, plus one before, one at the fit and one per held-out fold; repeated rows of one configuration cost
    nothing more (their geometric mean is fitted, weighted by their count).

    Parameters
    ----------
    points : sequence of MeasuredPoint
        The planner's measurements (:func:`placement.serving.measured.load_measured`).
    source : str, optional
        The file, for the error when it holds more than :data:`MAX_CONFIGURATIONS` configurations.
    progress : callable, optional
        Receives one line per configuration run, with the time left once the first has run.
    pool : concurrent.futures.Executor, optional
        Runs the model's runs in parallel (the command line: one process per core); None: here, one by one.

    Returns
    -------
    list of PartFit
        One per (accelerator, precision), in the order first seen.

    Raises
    ------
    InputError
        More distinct configurations than :data:`MAX_CONFIGURATIONS`.
    """
    total, done, start = check_configurations(points, source), 0, time.perf_counter()
    runs = map if pool is None else pool.map
    out = []
    for (accelerator, precision), members in by_part(points).items():
        accel = get_accelerator(accelerator)
        prior = achieved(accel, ServingEfficiency(), precision).tensor
        groups = list(configurations(members).values())
        results = iter(runs(_run, [(rows[0], float(g)) for rows in groups for g in POINT_GEMM]))
        curves = []
        for rows in groups:
            p = rows[0]
            curves.append(np.log(np.maximum([next(results) for _ in POINT_GEMM], 1e-9)))
            done += 1
            left = (time.perf_counter() - start) / done * (total - done)
            repeats = f" ({len(rows):,} rows)" if len(rows) > 1 else ""
            progress(
                f"{accelerator} {precision}: configuration {done} of {total}, point {p.point_id}{repeats}, run at "
                f"{len(POINT_GEMM)} GEMM fractions" + (f"; about {left:.0f} s of runs left" if done < total else "")
            )
        grid = np.array(curves)
        measured = np.array([np.exp(np.mean(np.log([p.tok_s for p in rows]))) for rows in groups])
        weight = np.array([float(len(rows)) for rows in groups])
        gemm = _refit(grid, measured, prior, weight)
        n = len(groups)
        folds = [np.arange(n) != k for k in range(n)] if n > 1 else []  # each configuration held out in turn
        held_gemm = [_refit(grid[keep], measured[keep], prior, weight[keep]) for keep in folds]
        jobs = [(rows[0], g) for g in (None, gemm) for rows in groups]
        jobs += [(rows[0], g) for rows, g in zip(groups, held_gemm, strict=False)]
        ran = list(runs(_run, jobs))
        out.append(
            PartFit(
                accelerator,
                precision,
                gemm,
                prior,
                tuple(rows[0].point_id for rows in groups),
                tuple(float(m) for m in measured),
                tuple(ran[:n]),
                tuple(ran[n : 2 * n]),
                tuple(ran[2 * n :]),
                tuple(len(rows) for rows in groups),
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
            rows = fit.rows[k] if fit.rows else 1
            label = pid if rows == 1 else f"{pid} x{rows:,}"
            lines.append(f"{label[:28]:28s} {m:10,.0f} {b:10,.0f} {b / m - 1:+7.1%} {f:10,.0f} {f / m - 1:+7.1%} {cell}")
    errors = [f / m - 1 for fit in fits for f, m in zip(fit.fitted_tok_s, fit.measured_tok_s, strict=True)]
    held_errors = [
        h / m - 1 for fit in fits if fit.held_out_tok_s for h, m in zip(fit.held_out_tok_s, fit.measured_tok_s, strict=True)
    ]
    if not errors:
        return "\n".join([*lines, "no configuration fitted"])
    tail = f"; held out {np.mean(np.abs(held_errors)):.1%}" if held_errors else "; held out: needs two configurations of a part"
    lines.append(f"mean |error| refitted {np.mean(np.abs(errors)):.1%}{tail}")
    return "\n".join(lines)
