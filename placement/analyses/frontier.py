"""The cost-carbon and cost-water frontiers: the cheapest plan under each of a sequence of caps on its yearly use.

An epsilon-constraint sweep (:func:`resource_frontier`): the plan without a cap uses ``U0`` (tCO2e of grid emissions,
or m3 of water); the plan using the least any plan serving as much can reach uses ``U_min`` (the same model with
that use as its cost, :func:`placement.plan.solve.least_use_at_service`); the caps run evenly from ``U0`` down to half
of it, or to ``U_min`` where that is higher, and each is solved as an ordinary plan with
``objective.carbon_cap_t_per_year`` (or ``water_cap_m3_per_year``) at that level. Every point's plan is verified against
its cap like any other constraint. The model's coefficients are built once (one instance, its cap row moved from point
to point).

At equal service (the default) every point serves what the plan without a cap serves: ``U_min`` is the least use of
a plan serving that much (where no plan serves all the demand, the most any plan serves, which the plan without a cap
serves too), and with optional serving each capped point is held to serve it as well (``policy.min_served_share``), so
no point meets its cap by serving less. ``equal_service=False`` is the older frontier: ``U_min`` of a plan serving all
the demand (none where no plan can: the caps then run to half of ``U0``) and each point free to serve less.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from placement.economics.cost import HOURS_PER_YEAR
from placement.instance.build import build_instance
from placement.instance.record import Instance
from placement.plan.record import Plan
from placement.plan.solve import least_use, least_use_at_service, solve_instance
from placement.progress import Progress, quiet
from placement.scenario.load import LoadedScenario

Axis = Literal["carbon", "water"]
"""What a frontier's caps limit."""

CAP_FIELD: dict[str, str] = {"carbon": "carbon_cap_t_per_year", "water": "water_cap_m3_per_year"}
"""The ``objective`` field each axis moves."""

USED_PER_YEAR: dict[str, str] = {"carbon": "tco2e_per_year", "water": "water_m3_per_year"}
"""The plan summary's yearly figure each axis caps."""

UNIT: dict[str, str] = {"carbon": "tCO2e", "water": "m3"}

EQUAL_SERVICE_TOLERANCE = 0.001
"""A point serves as much as the plan without a cap when its goodput is at least this share below it, or closer."""

NO_CAP_PER_YEAR = 1e30
"""The cap the first point's model carries: above anything, so the row is there (its coefficients are built) and
never binds (HiGHS and CBC take bounds this large as infinite)."""

SHARE_OF_UNCAPPED = 0.5
"""The last point's cap as a share of the uncapped plan's emissions (unless no plan can emit that little)."""
MAX_POINTS = 51
"""Most points a frontier takes: its caps then stand 1 % of the uncapped plan's figure apart (closer points differ by
less than the solver's gap, and each is a whole solve)."""


def _check_points(points: int) -> None:
    """Raise ValueError unless a frontier of ``points`` points may be solved (2 to :data:`MAX_POINTS`)."""
    if not 2 <= points <= MAX_POINTS:
        raise ValueError(f"a frontier takes 2 to {MAX_POINTS} points (the plan without a cap and up to {MAX_POINTS - 1} caps)")


@dataclass(frozen=True)
class FrontierPoint:
    """One point of the frontier: its cap and the plan that meets it at least cost.

    Parameters
    ----------
    index : int
        0 for the plan without a cap, then 1, 2, ... as the cap tightens.
    cap_per_year : float or None
        The cap (None: the first point, without one). [tCO2e or m3]
    plan : Plan
        The plan, verified against the cap.
    """

    index: int
    cap_per_year: float | None
    plan: Plan

    @property
    def folder(self) -> str:
        """The results folder's name under the frontier's folder."""
        return point_folder(self.index)


def point_folder(index: int) -> str:
    """The results folder of point ``index`` under the frontier's folder."""
    return f"point_{index:02d}"


def frontier_caps(uncapped: float, least: float, points: int, *, share: float = SHARE_OF_UNCAPPED) -> list[float]:
    """The caps after the uncapped point: ``points - 1`` of them evenly down to ``max(share * uncapped, least)``.

    Parameters
    ----------
    uncapped : float
        Use of the plan without a cap. [tCO2e or m3 a year]
    least : float
        The least a plan serving the demand uses (a design found, so a cap there is feasible). [same]
    points : int
        Points of the frontier, the uncapped one included (at least 2).
    share : float, optional
        The tightest cap's share of ``uncapped`` where the least allows it.

    Returns
    -------
    list of float
        The caps, loosest first. [same]
    """
    _check_points(points)
    tightest = max(share * uncapped, least)
    steps = np.linspace(uncapped, tightest, points)[1:]
    return [float(c) for c in steps]


def _with_cap(instance: Instance, name: str, limit_per_year: float) -> Instance:
    """The instance with the whole-plan cap called ``name`` at a new limit (its coefficients as built)."""
    caps = tuple(
        replace(cap, limit_per_h=limit_per_year / HOURS_PER_YEAR) if cap.name == name and cap.sites is None else cap
        for cap in instance.inputs.caps
    )
    return replace(instance, inputs=replace(instance.inputs, caps=caps))


@dataclass(frozen=True)
class FrontierStart:
    """What a frontier's capped points are solved from: the scenario, its uncapped plan and the caps.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario with the axis's whole-plan cap in its model (at :data:`NO_CAP_PER_YEAR`).
    instance : Instance
        Its arrays, built once.
    first : FrontierPoint
        The plan without a cap.
    caps_per_year : list of float
        The caps of the points after it, loosest first. [tCO2e or m3]
    axis : {"carbon", "water"}
        What the caps limit.
    """

    loaded: LoadedScenario
    instance: Instance
    first: FrontierPoint
    caps_per_year: list[float]
    axis: Axis

    def capped(self, limit_per_year: float) -> LoadedScenario:
        """The scenario with the axis's whole-plan cap at ``limit_per_year`` (a point solved on its own)."""
        scenario = self.loaded.scenario
        objective = scenario.objective.model_copy(update={CAP_FIELD[self.axis]: limit_per_year})
        return LoadedScenario(scenario=scenario.model_copy(update={"objective": objective}), path=self.loaded.path)

    def solve(self, index: int, progress: Progress = quiet) -> FrontierPoint:
        """Point ``index`` (1, 2, ...) solved on the instance built once, its cap row moved."""
        limit = self.caps_per_year[index - 1]
        progress(f"frontier point {index}: cap {limit:,.0f} {UNIT[self.axis]} a year")
        return FrontierPoint(
            index, limit, solve_instance(_with_cap(self.instance, self.axis, limit), progress=progress, price_caps=False)
        )


def frontier_start(
    loaded: LoadedScenario,
    *,
    axis: Axis = "carbon",
    points: int = 6,
    equal_service: bool = True,
    progress: Progress = quiet,
) -> FrontierStart:
    """Solve the plan without a cap and the least any plan can use, and lay out the caps between them.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario; its whole-plan cap on ``axis`` (``objective.carbon_cap_t_per_year`` or
        ``water_cap_m3_per_year``) is replaced point by point; its other caps stay.
    axis : {"carbon", "water"}, optional
        What the caps limit: the plan's grid emissions, or the water it consumes on site and by the grid.
    points : int, optional
        Points, the plan without a cap included.
    equal_service : bool, optional
        Run the caps down to the least use of a plan serving what the plan without a cap serves, and hold each point
        to serve that much; False: to the least use of a plan serving all the demand, each point free to serve less.
    progress : callable, optional
        Receives a line per step.

    Returns
    -------
    FrontierStart
        The uncapped point and the caps of the others.

    Raises
    ------
    ValueError
        A build-out scenario, fewer than 2 points, or the plan's figure unknown.
    """
    objective = loaded.scenario.objective.model_copy(update={CAP_FIELD[axis]: NO_CAP_PER_YEAR})
    scenario = loaded.scenario.model_copy(update={"objective": objective})
    if scenario.is_buildout:  # the frontier's points are single-year plans
        raise ValueError(
            "the cost-carbon and cost-water frontier is drawn for a single-year plan: remove horizon and "
            "serving.accelerators, or solve the build-out with its caps (objective.carbon_cap_t_per_year, "
            "objective.water_cap_m3_per_year), which it holds in every year and demand scenario"
        )
    _check_points(points)
    start = LoadedScenario(scenario=scenario, path=loaded.path)
    instance = build_instance(start, progress=progress)
    unit = UNIT[axis]
    first = solve_instance(instance, progress=progress, price_caps=False)
    uncapped = getattr(first.summary, USED_PER_YEAR[axis])
    if uncapped is None:
        known = "carbon_intensity_g_per_kwh" if axis == "carbon" else "climate (or wue_l_per_kwh) and country_code"
        raise ValueError(f"the plan's {axis} figure is unknown (an open site without {known})")
    progress(f"frontier point 0 (no cap): {uncapped:,.0f} {unit} a year; finding the least any plan can use")
    cap = next(c for c in instance.inputs.caps if c.name == axis and c.sites is None)
    options = scenario.solver.options()
    if not equal_service:
        least = least_use(instance.inputs, cap, options)
    elif scenario.policy.serving == "optional":  # each point serves what the plan without a cap serves
        served_tok_s = first.summary.goodput_tok_s * (1 - EQUAL_SERVICE_TOLERANCE / 2)
        start, instance = _held_to_serve(start, instance, served_tok_s)
        least = least_use_at_service(instance.inputs, cap, options, min_served_tok_s=served_tok_s)
    else:  # every reachable token, or the most any plan serves (which the elastic solve of each point serves first)
        least = least_use_at_service(instance.inputs, cap, options)
    # no least-use plan (a world that cannot serve all its demand, without equal service): the caps go down to the
    # share, and each point leaves unserved what its cap demands (the least it can, then at least cost)
    least_per_year = least.objective_usd_per_h * HOURS_PER_YEAR * (1 + 1e-9) if least.report.status.has_solution else 0.0
    caps = frontier_caps(uncapped, least_per_year, points)
    return FrontierStart(start, instance, FrontierPoint(0, None, first), caps, axis)


def _held_to_serve(loaded: LoadedScenario, instance: Instance, served_tok_s: float) -> tuple[LoadedScenario, Instance]:
    """The scenario and instance with optional serving held to serve at least ``served_tok_s`` mean goodput."""
    total_tok_s = float(instance.inputs.mean_demand_tok_s.sum())
    share = min(1.0, max(loaded.scenario.policy.min_served_share, served_tok_s / total_tok_s))
    policy = loaded.scenario.policy.model_copy(update={"min_served_share": share})
    held = LoadedScenario(scenario=loaded.scenario.model_copy(update={"policy": policy}), path=loaded.path)
    return held, replace(instance, facts=replace(instance.facts, policy=policy))


def resource_frontier(
    loaded: LoadedScenario,
    *,
    axis: Axis = "carbon",
    points: int = 6,
    equal_service: bool = True,
    progress: Progress = quiet,
) -> Iterator[FrontierPoint]:
    """Solve the frontier's plans one after another, loosest cap first (each can be written and let go).

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario (:func:`frontier_start`).
    axis : {"carbon", "water"}, optional
        What the caps limit.
    points : int, optional
        Points, the plan without a cap included.
    equal_service : bool, optional
        Each point at the service of the plan without a cap (:func:`frontier_start`).
    progress : callable, optional
        Receives a line per point.

    Yields
    ------
    FrontierPoint
        Each point with its verified plan.
    """
    start = frontier_start(loaded, axis=axis, points=points, equal_service=equal_service, progress=progress)
    yield start.first
    for index in range(1, len(start.caps_per_year) + 1):
        yield start.solve(index, progress)
