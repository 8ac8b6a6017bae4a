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

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pulp

from placement.instance import Instance
from placement.optimize.model import build_model
from placement.optimize.solver import SolverOptions, solve_problem


def _fix_open(model: Any, is_open: np.ndarray) -> None:
    for var, value in zip(model.opens, is_open.tolist(), strict=True):
        var.lowBound = var.upBound = 1 if value else 0


def mw_values_usd_per_h(instance: Instance, is_open: np.ndarray, options: SolverOptions) -> np.ndarray:
    """Cost saved per extra MW at each site, from the LP with open sites fixed. [USD/h per MW]

    Parameters
    ----------
    instance : Instance
        The scenario's arrays.
    is_open : numpy.ndarray of bool
        The plan's open sites.
    options : SolverOptions
        Solver settings (HiGHS gives duals through PuLP; CBC's are read the same way).

    Returns
    -------
    numpy.ndarray
        ``(m,)`` values; 0 where power does not bind, ``nan`` if the LP fails.
    """
    model = build_model(instance.inputs)
    _fix_open(model, is_open)
    for var in model.nodes:
        var.cat = pulp.LpContinuous
    report = solve_problem(model.problem, SolverOptions(name="highs", time_limit_s=options.time_limit_s, threads=options.threads))
    if not report.status.has_solution:
        return np.full(instance.inputs.n_sites, np.nan)
    rows = [model.problem.get_constraint_by_name(f"power_{j}") for j in range(instance.inputs.n_sites)]
    values = np.array([-(row.pi or 0.0) if row is not None else 0.0 for row in rows])
    return np.where(np.abs(values) < 1e-9, 0.0, values)


def _resolve_with(
    instance: Instance, is_open: np.ndarray, options: SolverOptions, *, site: int, open_value: int
) -> tuple[float, int]:
    """Cost with one site toggled and every other site as in the plan, and that site's node count.

    The rest of the design stays fixed and node counts are relaxed to continuous (an LP), so the
    difference is the site's own contribution, free of the noise of two MILPs solved to a gap
    and of node rounding.
    """
    model = build_model(instance.inputs)
    toggled = is_open.copy()
    toggled[site] = bool(open_value)
    _fix_open(model, toggled)
    for var in model.nodes:
        var.cat = pulp.LpContinuous
    report = solve_problem(model.problem, options)
    if not report.status.has_solution:
        return math.inf, 0
    nodes = math.ceil((model.nodes[site].varValue or 0.0) - 1e-9)
    return float(report.objective), int(nodes)


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
    scenario = instance.loaded.scenario
    if options is None:
        limit = min(scenario.solver.time_limit_s or 10.0, 10.0)
        options = SolverOptions(name=scenario.solver.name, time_limit_s=limit, gap=1e-6, threads=scenario.solver.threads)
    is_open = sites["open"].to_numpy(bool)
    base_cost, _ = _resolve_with(instance, is_open, options, site=0, open_value=int(is_open[0]))
    mw_value = mw_values_usd_per_h(instance, is_open, options)
    allowed = instance.allowed
    open_reach = allowed & is_open[None, :]
    names = instance.populations.table["name"].to_numpy()
    pops = instance.commodity_population
    price = instance.sites["power_price_usd_per_mwh"].to_numpy(float)
    node_mw = instance.inputs.site_node_mw
    plan_nodes = sites["nodes"].to_numpy(int)
    plan_share = sites["goodput_share"].to_numpy(float)
    records = []
    for j, row in enumerate(sites.itertuples(index=False)):
        if only is not None and row.site_id != only:
            continue
        record: dict[str, Any] = {"site_id": row.site_id, "name": row.name, "open": bool(row.open)}
        if row.open:
            sole_open = np.flatnonzero(open_reach[:, j] & (open_reach.sum(axis=1) == 1))
            sole_any = np.flatnonzero(allowed[:, j] & (allowed.sum(axis=1) == 1))
            progress(f"re-solving without {row.site_id}")
            dropped, _ = _resolve_with(instance, is_open, options, site=j, open_value=0)
            record |= {
                "nodes": int(plan_nodes[j]),
                "goodput_share": float(plan_share[j]),
                "value_of_one_more_mw_usd_per_h": float(mw_value[j]),
                "populations_only_it_serves_among_open_sites": sorted({str(names[pops[c]]) for c in sole_open}),
                "populations_only_it_can_serve": sorted({str(names[pops[c]]) for c in sole_any}),
                "cost_of_dropping_usd_per_h": None if math.isinf(dropped) else dropped - base_cost,
                "droppable": not math.isinf(dropped),
            }
        elif not instance.within_budget[:, j].any():
            record["why"] = "no population within its latency budget"
        elif not allowed[:, j].any():
            record["why"] = "residency rules or missing power bar every population within its budget"
        else:
            progress(f"re-solving with {row.site_id} forced open")
            forced, nodes = _resolve_with(instance, is_open, options, site=j, open_value=1)
            extra = forced - base_cost
            if math.isinf(forced):
                record["why"] = "forcing it open makes the scenario infeasible"
            elif extra <= 0:
                record |= {
                    "extra_cost_if_opened_usd_per_h": extra,
                    "nodes_if_opened": nodes,
                    "why": f"adding it to the plan would save ${-extra:,.0f}/h: the plan is within its solver gap",
                }
            else:
                mw = max(nodes, 1) * float(node_mw[j])
                entry = price[j] - extra / mw
                record |= {
                    "extra_cost_if_opened_usd_per_h": extra,
                    "nodes_if_opened": nodes,
                    "entry_power_price_usd_per_mwh": entry if entry > 0 else None,
                    "why": (
                        f"opening it costs ${extra:,.0f}/h more; it would enter at a power price of about "
                        f"${entry:,.1f}/MWh (now ${price[j]:,.1f})"
                        if entry > 0
                        else f"opening it costs ${extra:,.0f}/h more, more than its whole power bill: "
                        "it would not enter even with free power"
                    ),
                }
        records.append(record)
    return records


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
