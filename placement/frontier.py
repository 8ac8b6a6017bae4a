"""The cost-carbon frontier: the cheapest plan under each of a sequence of caps on its yearly grid emissions.

An epsilon-constraint sweep (:func:`carbon_frontier`): the plan without a cap emits ``E0``; the plan with the least
emissions any plan serving the demand can reach emits ``E_min`` (the same model with emissions as its cost,
:func:`placement.plan.least_emissions`); the caps run evenly from ``E0`` down to half of it, or to ``E_min`` where
that is higher, and each is solved as an ordinary plan with ``objective.carbon_cap_t_per_year`` at that level.
Every point's plan is verified against its cap like any other constraint. The model's coefficients are built once
(one instance, its cap row moved from point to point).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from placement.economics import HOURS_PER_YEAR
from placement.instance import Instance, build_instance
from placement.plan import Plan, least_emissions, solve_instance
from placement.progress import Progress, quiet
from placement.scenario import LoadedScenario

NO_CAP_T_PER_YEAR = 1e30
"""The cap the first point's model carries: above anything, so the row is there (its coefficients are built) and
never binds (HiGHS and CBC take bounds this large as infinite)."""

SHARE_OF_UNCAPPED = 0.5
"""The last point's cap as a share of the uncapped plan's emissions (unless no plan can emit that little)."""


@dataclass(frozen=True)
class FrontierPoint:
    """One point of the frontier: its cap and the plan that meets it at least cost.

    Parameters
    ----------
    index : int
        0 for the plan without a cap, then 1, 2, ... as the cap tightens.
    cap_t_per_year : float or None
        The cap (None: the first point, without one). [tCO2e]
    plan : Plan
        The plan, verified against the cap.
    """

    index: int
    cap_t_per_year: float | None
    plan: Plan

    @property
    def folder(self) -> str:
        """The results folder's name under the frontier's folder."""
        return f"point_{self.index:02d}"


def frontier_caps(uncapped_t: float, least_t: float, points: int, *, share: float = SHARE_OF_UNCAPPED) -> list[float]:
    """The caps after the uncapped point: ``points - 1`` of them evenly down to ``max(share * uncapped, least)``.

    Parameters
    ----------
    uncapped_t : float
        Emissions of the plan without a cap. [tCO2e/year]
    least_t : float
        The least emissions a plan serving the demand reaches (a design found, so a cap there is feasible). [tCO2e/year]
    points : int
        Points of the frontier, the uncapped one included (at least 2).
    share : float, optional
        The tightest cap's share of ``uncapped_t`` where the least allows it.

    Returns
    -------
    list of float
        The caps, loosest first. [tCO2e/year]
    """
    if points < 2:
        raise ValueError("a frontier needs at least 2 points: the plan without a cap and one with")
    tightest = max(share * uncapped_t, least_t)
    steps = np.linspace(uncapped_t, tightest, points)[1:]
    return [float(c) for c in steps]


def _with_cap(instance: Instance, cap_t_per_year: float) -> Instance:
    cap = instance.inputs.emissions_cap
    assert cap is not None
    inputs = replace(instance.inputs, emissions_cap=replace(cap, cap_t_per_h=cap_t_per_year / HOURS_PER_YEAR))
    return replace(instance, inputs=inputs)


def carbon_frontier(loaded: LoadedScenario, *, points: int = 6, progress: Progress = quiet) -> Iterator[FrontierPoint]:
    """Solve the frontier's plans, loosest cap first (a generator: each plan can be written and let go).

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario; any ``objective.carbon_cap_t_per_year`` in it is replaced point by point.
    points : int, optional
        Points, the plan without a cap included.
    progress : callable, optional
        Receives a line per point.

    Yields
    ------
    FrontierPoint
        Each point with its verified plan.
    """
    objective = loaded.scenario.objective.model_copy(update={"carbon_cap_t_per_year": NO_CAP_T_PER_YEAR})
    scenario = loaded.scenario.model_copy(update={"objective": objective})
    why = scenario.carbon_not_modelled()  # model_copy does not validate: a cap where none is modelled is refused here
    if why is not None:
        raise ValueError(why)
    instance = build_instance(LoadedScenario(scenario=scenario, path=loaded.path), progress=progress)
    first = solve_instance(instance, progress=progress)
    uncapped = first.summary.tco2e_per_year
    if uncapped is None:
        raise ValueError("the plan's emissions are unknown (a site without carbon_intensity_g_per_kwh)")
    progress(f"frontier point 0 (no cap): {uncapped:,.0f} tCO2e a year; finding the least any plan can emit")
    yield FrontierPoint(0, None, first)
    least = least_emissions(instance.inputs, scenario.solver.options())
    # a world that cannot serve all its demand has no least-emission plan serving it: the caps go down to the share,
    # and each point leaves unserved what its cap demands (the least it can, then at least cost)
    least_t = least.objective_usd_per_h * HOURS_PER_YEAR * (1 + 1e-9) if least.report.status.has_solution else 0.0
    for index, cap in enumerate(frontier_caps(uncapped, least_t, points), start=1):
        progress(f"frontier point {index}: cap {cap:,.0f} tCO2e a year")
        yield FrontierPoint(index, cap, solve_instance(_with_cap(instance, cap), progress=progress))
