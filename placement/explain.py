"""Why each site is in or out of a plan: marginal values, drop costs, entry prices.

Every re-solve keeps the other sites open or closed as in the plan and re-optimises node counts
(relaxed to continuous) and assignments, an LP, so each figure is that one site's own
contribution. For each open site: the value of one more MW (the dual of its power row in the LP with the open
sites fixed and node counts relaxed), its share of goodput, the populations only it can serve
inside their budget, and the cost of dropping it (a re-solve with the site closed). For each
rejected site: why it cannot serve anyone, or what would bring it in: the cost of forcing it
open and the power price at which that cost is paid back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pulp
from numpy.typing import NDArray

from placement._errors import PlacementError
from placement.instance import Instance, build_instance
from placement.optimize.model import build_model
from placement.optimize.solve import shortfall_penalty_usd_per_tok_s
from placement.optimize.solver import SolverOptions, solve_problem
from placement.scenario import load_scenario


def _fix_open(model: Any, is_open: np.ndarray) -> None:
    # fixed and continuous: an integer column, even a fixed one, makes HiGHS solve a MIP, which has no duals
    for var, value in zip(model.opens, is_open.tolist(), strict=True):
        var.lowBound = var.upBound = 1 if value else 0
        var.cat = pulp.LpContinuous


def _fixed_design_model(instance: Instance, is_open: np.ndarray, unserved: np.ndarray | None) -> Any:
    """The plan's LP: open sites fixed, node counts continuous, and the plan's shortfall (if any) held fixed.

    A plan whose sites lack the power for all demand leaves some unserved; without holding that share
    fixed every re-solve would be infeasible, and with it each answers "at the same service".
    """
    if unserved is None:
        model = build_model(instance.inputs)
    else:
        model = build_model(instance.inputs, unserved_penalty_usd_per_tok_s=0.0)
        assert model.unserved is not None
        for var, share in zip(model.unserved, unserved.tolist(), strict=True):
            var.lowBound = var.upBound = share
    _relax_design(model, is_open)
    return model


def _relax_design(model: Any, is_open: np.ndarray) -> None:
    """Open sites fixed; node counts continuous and bounded by the power row only.

    The MILP's node bound is that row rounded down: left in, the bound, not the row, binds and one more
    MW reads as worth nothing.
    """
    _fix_open(model, is_open)
    for var in model.nodes:
        var.cat = pulp.LpContinuous
        var.upBound = None


def plan_shortfall(instance: Instance, is_open: np.ndarray, options: SolverOptions) -> np.ndarray | None:
    """Each commodity's unserved share when the plan's open sites cannot serve all demand; ``None`` if they can.

    Parameters
    ----------
    instance : Instance
        The scenario's arrays.
    is_open : numpy.ndarray of bool
        The plan's open sites.
    options : SolverOptions
        Solver settings.

    Returns
    -------
    numpy.ndarray or None
        ``(c,)`` shares from the elastic LP with the design fixed (the least that must go unserved).
    """
    model = _fixed_design_model(instance, is_open, None)
    if solve_problem(model.problem, options).status.has_solution:
        return None
    elastic = build_model(instance.inputs, unserved_penalty_usd_per_tok_s=shortfall_penalty_usd_per_tok_s(instance.inputs))
    _relax_design(elastic, is_open)
    if elastic.unserved is None or not solve_problem(elastic.problem, options).status.has_solution:
        return None
    return np.array([min(1.0, max(0.0, var.varValue or 0.0)) for var in elastic.unserved])


def mw_values_usd_per_h(
    instance: Instance, is_open: np.ndarray, options: SolverOptions, unserved: np.ndarray | None = None
) -> np.ndarray:
    """Cost saved per extra MW at each site, from the LP with open sites fixed. [USD/h per MW]

    Parameters
    ----------
    instance : Instance
        The scenario's arrays.
    is_open : numpy.ndarray of bool
        The plan's open sites.
    options : SolverOptions
        Solver settings (HiGHS gives duals through PuLP; CBC's are read the same way).
    unserved : numpy.ndarray, optional
        The plan's shortfall by commodity (:func:`plan_shortfall`), held fixed.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` values; 0 where power does not bind, ``nan`` if the LP fails.
    """
    model = _fixed_design_model(instance, is_open, unserved)
    report = solve_problem(model.problem, SolverOptions(name="highs", time_limit_s=options.time_limit_s, threads=options.threads))
    if not report.status.has_solution:
        return np.full(instance.inputs.n_sites, np.nan)
    rows = [model.problem.get_constraint_by_name(f"power_{j}") for j in range(instance.inputs.n_sites)]
    values = np.array([-(row.pi or 0.0) if row is not None else 0.0 for row in rows])
    return np.where(np.abs(values) < 1e-9, 0.0, values)


def _resolve_with(
    instance: Instance,
    is_open: np.ndarray,
    options: SolverOptions,
    *,
    site: int,
    open_value: int,
    unserved: np.ndarray | None = None,
) -> tuple[float, int]:
    """Cost with one site toggled and every other site as in the plan, and that site's node count.

    The rest of the design stays fixed and node counts are relaxed to continuous (an LP), so the
    difference is the site's own contribution, free of the noise of two MILPs solved to a gap
    and of node rounding.
    """
    toggled = is_open.copy()
    toggled[site] = bool(open_value)
    model = _fixed_design_model(instance, toggled, unserved)
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        return math.inf, 0
    nodes = math.ceil((model.nodes[site].varValue or 0.0) - 1e-9)
    return float(report.objective), int(nodes)


@dataclass(frozen=True)
class _PlanContext:
    """What every site's explanation reads: the plan, the instance's arrays and the base LP cost."""

    instance: Instance
    options: SolverOptions
    is_open: NDArray[np.bool_]
    base_cost_usd_per_h: float
    mw_value_usd_per_h: NDArray[np.float64]
    unserved: NDArray[np.float64] | None
    plan_nodes: NDArray[np.int64]
    plan_share: NDArray[np.float64]

    @property
    def population_names(self) -> NDArray[np.object_]:
        """Population name of each commodity."""
        names = self.instance.populations.table["name"].to_numpy()
        return np.asarray(names[self.instance.commodity_population], dtype=object)


def _default_options(instance: Instance) -> SolverOptions:
    """The scenario's solver, at most 10 s and a tight gap per re-solve."""
    solver = instance.loaded.scenario.solver
    limit = min(solver.time_limit_s or 10.0, 10.0)
    return SolverOptions(name=solver.name, time_limit_s=limit, gap=1e-6, threads=solver.threads)


def _plan_context(instance: Instance, sites: pd.DataFrame, options: SolverOptions) -> _PlanContext:
    is_open = sites["open"].to_numpy(bool)
    unserved = plan_shortfall(instance, is_open, options)
    base_cost, _ = _resolve_with(instance, is_open, options, site=0, open_value=int(is_open[0]), unserved=unserved)
    return _PlanContext(
        instance=instance,
        options=options,
        is_open=is_open,
        base_cost_usd_per_h=base_cost,
        mw_value_usd_per_h=mw_values_usd_per_h(instance, is_open, options, unserved),
        unserved=unserved,
        plan_nodes=sites["nodes"].to_numpy(np.int64),
        plan_share=sites["goodput_share"].to_numpy(float),
    )


def _open_site(ctx: _PlanContext, j: int) -> dict[str, Any]:
    """An open site: its share, the value of one more MW, who only it serves, the cost of dropping it."""
    allowed = ctx.instance.allowed
    open_reach = allowed & ctx.is_open[None, :]
    names = ctx.population_names
    sole_open = np.flatnonzero(open_reach[:, j] & (open_reach.sum(axis=1) == 1))
    sole_any = np.flatnonzero(allowed[:, j] & (allowed.sum(axis=1) == 1))
    dropped, _ = _resolve_with(ctx.instance, ctx.is_open, ctx.options, site=j, open_value=0, unserved=ctx.unserved)
    return {
        "nodes": int(ctx.plan_nodes[j]),
        "goodput_share": float(ctx.plan_share[j]),
        "value_of_one_more_mw_usd_per_h": float(ctx.mw_value_usd_per_h[j]),
        "populations_only_it_serves_among_open_sites": sorted({str(n) for n in names[sole_open]}),
        "populations_only_it_can_serve": sorted({str(n) for n in names[sole_any]}),
        "cost_of_dropping_usd_per_h": None if math.isinf(dropped) else dropped - ctx.base_cost_usd_per_h,
        "droppable": not math.isinf(dropped),
    }


def _entry_price(ctx: _PlanContext, j: int, extra: float, nodes: int) -> dict[str, Any]:
    """A rejected site that costs ``extra`` $/h to open: the power price at which it would enter."""
    price = float(ctx.instance.sites["power_price_usd_per_mwh"].to_numpy(float)[j])
    mw = max(nodes, 1) * float(ctx.instance.inputs.site_node_mw[j])
    entry = price - extra / mw
    why = (
        f"opening it costs ${extra:,.0f}/h more; it would enter at a power price of about ${entry:,.1f}/MWh (now ${price:,.1f})"
        if entry > 0
        else f"opening it costs ${extra:,.0f}/h more, more than its whole power bill: it would not enter even with free power"
    )
    return {
        "extra_cost_if_opened_usd_per_h": extra,
        "nodes_if_opened": nodes,
        "entry_power_price_usd_per_mwh": entry if entry > 0 else None,
        "why": why,
    }


def _closed_site(ctx: _PlanContext, j: int, progress: Callable[[str], None], site_id: str) -> dict[str, Any]:
    """A rejected site: why it cannot serve anyone, or what opening it would cost and when it would pay."""
    instance = ctx.instance
    if not instance.within_budget[:, j].any():
        return {"why": "no population within its latency budget"}
    if not instance.allowed[:, j].any():
        return {"why": "residency rules or missing power bar every population within its budget"}
    progress(f"re-solving with {site_id} forced open")
    forced, nodes = _resolve_with(instance, ctx.is_open, ctx.options, site=j, open_value=1, unserved=ctx.unserved)
    extra = forced - ctx.base_cost_usd_per_h
    if math.isinf(forced):
        return {"why": "forcing it open makes the scenario infeasible"}
    if extra <= 0:
        return {
            "extra_cost_if_opened_usd_per_h": extra,
            "nodes_if_opened": nodes,
            "why": f"adding it to the plan would save ${-extra:,.0f}/h: the plan is within its solver gap",
        }
    return _entry_price(ctx, j, extra, nodes)


def explain(
    instance: Instance,
    sites: pd.DataFrame,
    *,
    only: str | None = None,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """Explain every site of a plan (or one).

    Parameters
    ----------
    instance : Instance
        The scenario's arrays.
    sites : pandas.DataFrame
        The plan's site table (``site_id``, ``open``, ``nodes``, ``goodput_share``).
    only : str, optional
        A site id to explain alone.
    options : SolverOptions, optional
        Solver settings for the re-solves (default: the scenario's, at most 10 s each).
    progress : callable, optional
        Receives one line per re-solve.

    Returns
    -------
    list of dict
        One record per site, JSON-ready.
    """
    ctx = _plan_context(instance, sites, options or _default_options(instance))
    records = []
    for j, row in enumerate(sites.itertuples(index=False)):
        if only is not None and row.site_id != only:
            continue
        record: dict[str, Any] = {"site_id": row.site_id, "name": row.name, "open": bool(row.open)}
        if row.open:
            progress(f"re-solving without {row.site_id}")
            record |= _open_site(ctx, j)
        else:
            record |= _closed_site(ctx, j, progress, str(row.site_id))
        records.append(record)
    return records


@dataclass(frozen=True)
class ResultsFolder:
    """A results folder read back for explaining: its scenario rebuilt and its site table.

    Parameters
    ----------
    folder : Path
        The folder ``solve`` wrote.
    scenario_path : Path
        The scenario solved: the original file if it still exists, else the folder's ``scenario.yaml``.
    instance : Instance
        The scenario's arrays, rebuilt.
    sites : pandas.DataFrame
        The folder's ``sites.csv``.
    """

    folder: Path
    scenario_path: Path
    instance: Instance
    sites: pd.DataFrame


def load_results_folder(folder: str | Path, *, progress: Callable[[str], None] = lambda _: None) -> ResultsFolder:
    """Read a results folder back and rebuild its scenario's instance.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``solve``.
    progress : callable, optional
        Receives one line per step of the rebuild.

    Returns
    -------
    ResultsFolder
        The instance and the plan's site table.

    Raises
    ------
    PlacementError
        The folder holds no ``summary.json``, or its ``sites.csv`` does not match the scenario's catalog.
    """
    folder = Path(folder)
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        raise PlacementError(f"{folder} holds no summary.json: run 'placement solve --out {folder}' first")
    summary = json.loads(summary_path.read_text())
    scenario_path = Path(summary.get("scenario_path", ""))
    if not scenario_path.is_file():
        scenario_path = folder / "scenario.yaml"
    instance = build_instance(load_scenario(scenario_path), progress=progress)
    sites = pd.read_csv(folder / "sites.csv", dtype={"site_id": str})
    if list(sites["site_id"]) != list(instance.sites["id"]):
        raise PlacementError(f"{folder}/sites.csv does not match the catalog of {scenario_path}: solve again")
    return ResultsFolder(folder, scenario_path, instance, sites)


def explain_folder(
    folder: str | Path, *, site: str | None = None, progress: Callable[[str], None] = lambda _: None
) -> list[dict[str, Any]]:
    """Explain the sites of a results folder (or one of them): :func:`load_results_folder`, then :func:`explain`.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``solve``.
    site : str, optional
        A site id to explain alone.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    list of dict
        One record per site, JSON-ready.

    Raises
    ------
    PlacementError
        Not a results folder, a stale one, or an unknown site id (the message lists the plan's sites).
    """
    results = load_results_folder(folder, progress=progress)
    known = list(results.sites["site_id"])
    if site is not None and site not in set(known):
        raise PlacementError(f"unknown site '{site}'; the plan's sites are: {', '.join(known)}")
    return explain(results.instance, results.sites, only=site, progress=progress)


def render_table(records: list[dict[str, Any]]) -> str:
    """A readable table of the explanations.

    Parameters
    ----------
    records : list of dict
        From :func:`explain`.

    Returns
    -------
    str
        Text, one line per site.
    """
    lines = []
    for r in records:
        if r["open"]:
            drop = r["cost_of_dropping_usd_per_h"]
            if drop is None:
                drop_text = "cannot be dropped (others cannot cover)"
            elif drop >= 0:
                drop_text = f"dropping costs ${drop:,.0f}/h"
            else:
                drop_text = f"dropping would save ${-drop:,.0f}/h (the plan is within its solver gap)"
            only = r["populations_only_it_can_serve"]
            lines.append(
                f"OPEN   {r['site_id']:<22} {r['goodput_share']:6.1%} of goodput, {r['nodes']:5d} nodes, "
                f"+1 MW saves ${r['value_of_one_more_mw_usd_per_h']:,.2f}/h, {drop_text}"
                + (
                    f"; sole site for {len(only)} populations ({', '.join(only[:3])}{'...' if len(only) > 3 else ''})"
                    if only
                    else ""
                )
            )
        else:
            lines.append(f"closed {r['site_id']:<22} {r['why']}")
    return "\n".join(lines)
