"""What N+1 added to a build-out: spare nodes, MW and cost, year by year (``summary.json``'s ``n_plus_one``).

The plan with its spares (:mod:`placement.optimize.buildout.spares`) is priced against the same plan before them,
with the build-out's own cost terms (:func:`placement.buildout.evaluate.plan_costs`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.buildout.evaluate import plan_costs
from placement.buildout.solve import StochasticResult
from placement.optimize.buildout.spares import spare_nodes_bought, without_spares
from placement.optimize.protect import exposed


def n_plus_one_summary(result: StochasticResult) -> dict[str, Any] | None:
    """Per year of the base scenario: spare nodes bought and in service, their MW, what they cost; and the NPV added.

    Parameters
    ----------
    result : StochasticResult
        The solved build-out.

    Returns
    -------
    dict or None
        None for a plan without N+1. ``years``: ``year, spare_nodes_bought, spare_nodes_in_service, spare_mw,
        added_usd_per_h, usd_per_h_without, usd_per_h_with``; ``expected_npv_added_usd`` over every scenario; the
        fault domains guarded against (those with a site some demand may reach). [nodes, MW, USD/h, USD]
    """
    plan, b = result.plan, result.buildout
    protection = plan.protection
    if protection is None:
        return None
    data, base = b.data, b.base_index
    spare = spare_nodes_bought(plan)  # (M, A, Y, S)
    in_service = np.asarray(plan.nodes - protection.base_nodes)
    spare_mw = np.einsum("mays,ma->ys", in_service, data.node_mw)
    without, with_spares = plan_costs(data, without_spares(plan)), result.costs
    years = [
        {
            "year": year,
            "spare_nodes_bought": round(float(spare[:, :, y, base].sum())),
            "spare_nodes_in_service": round(float(in_service[:, :, y, base].sum())),
            "spare_mw": float(spare_mw[y, base]),
            "added_usd_per_h": float(with_spares.year_usd_per_h[y, base] - without.year_usd_per_h[y, base]),
            "usd_per_h_without": float(without.year_usd_per_h[y, base]),
            "usd_per_h_with": float(with_spares.year_usd_per_h[y, base]),
        }
        for y, year in enumerate(b.years)
    ]
    in_reach = np.zeros(data.site_mw_available.shape[0], dtype=bool)
    in_reach[data.pair_site] = True  # pairs are at sites with power in some year
    guarded = data.n_plus_one
    domains = (
        [name for name, sites in zip(guarded.domain_names, guarded.domains, strict=True) if in_reach[sites].any()]
        if guarded is not None
        else []
    )
    return {
        "losses": "any one site, or any one fault domain" if domains else "any one site",
        "fault_domains": domains,
        "years_scenario": b.scenario_names[base],
        "years": years,
        "expected_npv_without_usd": without.expected_npv_usd,
        "expected_npv_added_usd": with_spares.expected_npv_usd - without.expected_npv_usd,
        "spare_part_rule": "spares are bought in one part per site; a site's other parts count at their least goodput ratio",
    }


def year_protection(result: StochasticResult, y: int, scenario: int) -> dict[str, Any]:
    """A year's N+1 keys of a single-year ``summary.json``, and the spare nodes in service that year.

    ``n_plus_one_protected_share`` is the share of the goodput served that every loss re-routes in full (each year's
    spares cover every loss of what they protect); ``unprotectable_share`` the rest: rows with one site in reach, or
    every site in reach in one fault domain.

    Parameters
    ----------
    result : StochasticResult
        The solved build-out.
    y, scenario : int
        Year index and demand scenario.

    Returns
    -------
    dict
        ``n_plus_one`` (False alone for a plan without N+1), ``n_plus_one_applied``, the shares and ``spare_nodes``.
    """
    plan = result.plan
    protection = plan.protection
    if protection is None:
        return {"n_plus_one": False}
    year = protection.years[(y, scenario)]
    view = year.view
    shares = plan.pair_share[year.pairs, y, scenario]
    served = np.bincount(view.pair_commodity, weights=shares, minlength=view.n_commodities) * view.mean_demand_tok_s
    total = float(served.sum())
    covered = view.protected & ~exposed(view, shares)
    protected = float(served[covered].sum()) / total if total > 0 else 0.0
    spares = plan.nodes[:, :, y, scenario] - protection.base_nodes[:, :, y, scenario]
    return {
        "n_plus_one": True,
        "n_plus_one_applied": True,
        "n_plus_one_protected_share": protected,
        "unprotectable_share": 1.0 - protected if total > 0 else 0.0,
        "n_plus_one_unprotected_share": 0.0,
        "spare_nodes": round(float(spares.sum())),
    }
