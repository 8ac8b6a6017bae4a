"""What a build-out plan costs, year by year and scenario by scenario, and whether it keeps every rule.

Both work on arrays only (like :mod:`placement.optimize.buildout`), so the cost report can be compared
with the solver's objective and every solve's answer checked against its constraints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement._types import FloatArray
from placement.optimize.buildout.caps import cap_breaches
from placement.optimize.buildout.input import BuildoutInput, BuildoutSolution

TOLERANCE = 1e-6


@dataclass(frozen=True)
class PlanCosts:
    """Costs of a plan.

    Parameters
    ----------
    site_usd_per_h : numpy.ndarray
        ``(M, Y)`` open-site and reserved-MW cost. [USD/h]
    node_capex_usd_per_h : numpy.ndarray
        ``(M, A, Y, S)`` annuities of the purchases in service. [USD/h]
    node_running_usd_per_h : numpy.ndarray
        ``(M, A, Y, S)`` idle power and opex of the nodes in service. [USD/h]
    energy_usd_per_h : numpy.ndarray
        ``(M, A, Y, S)`` load-following power. [USD/h]
    capex_usd : numpy.ndarray
        ``(M, A, Y, S)`` spent on purchases in the year. [USD]
    unserved_usd_per_h : numpy.ndarray
        ``(Y, S)`` penalty of demand not served. [USD/h]
    goodput_tok_s : numpy.ndarray
        ``(Y, S)`` daily mean goodput served. [tokens/s]
    demand_tok_s : numpy.ndarray
        ``(Y, S)`` daily mean demand. [tokens/s]
    year_weight_h : numpy.ndarray
        ``(Y,)`` discounted hours per year. [h]
    probability : numpy.ndarray
        ``(S,)`` scenario probabilities.
    transport_usd_per_h : numpy.ndarray or None
        ``(Y, S)`` WAN transport of the KV of cross-metro prefill (None: none). [USD/h]
    """

    site_usd_per_h: FloatArray
    node_capex_usd_per_h: FloatArray
    node_running_usd_per_h: FloatArray
    energy_usd_per_h: FloatArray
    capex_usd: FloatArray
    unserved_usd_per_h: FloatArray
    goodput_tok_s: FloatArray
    demand_tok_s: FloatArray
    year_weight_h: FloatArray
    probability: FloatArray
    transport_usd_per_h: FloatArray | None = None

    @property
    def site_accelerator_usd_per_h(self) -> FloatArray:
        """``(M, A, Y, S)`` node cost per site and accelerator (site costs not included). [USD/h]"""
        return np.asarray(self.node_capex_usd_per_h + self.node_running_usd_per_h + self.energy_usd_per_h)

    @property
    def year_usd_per_h(self) -> FloatArray:
        """``(Y, S)`` all-in cost of serving in each year (the unserved penalty excluded). [USD/h]"""
        total = self.site_usd_per_h.sum(axis=0)[:, None] + self.site_accelerator_usd_per_h.sum(axis=(0, 1))
        return np.asarray(total if self.transport_usd_per_h is None else total + self.transport_usd_per_h)

    @property
    def scenario_npv_usd(self) -> FloatArray:
        """``(S,)`` NPV of cost in each scenario, the unserved penalty included. [USD]"""
        return np.asarray(np.einsum("ys,y->s", self.year_usd_per_h + self.unserved_usd_per_h, self.year_weight_h))

    @property
    def expected_npv_usd(self) -> float:
        """Probability-weighted NPV. [USD]"""
        return float(self.scenario_npv_usd @ self.probability)

    @property
    def cost_per_million_tokens_usd(self) -> FloatArray:
        """``(Y, S)`` cost per million goodput tokens in each year (nan without goodput). [USD/Mtok]"""
        tok_per_h = self.goodput_tok_s * 3600.0 / 1e6
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(tok_per_h > 0, self.year_usd_per_h / tok_per_h, np.nan))

    @property
    def unserved_share(self) -> FloatArray:
        """``(Y, S)`` share of demand not served."""
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(self.demand_tok_s > 0, 1.0 - self.goodput_tok_s / self.demand_tok_s, 0.0)
        return np.asarray(np.clip(share, 0.0, 1.0))


def plan_costs(data: BuildoutInput, solution: BuildoutSolution) -> PlanCosts:
    """Price a plan with the model's own cost terms.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    solution : BuildoutSolution
        The plan.

    Returns
    -------
    PlanCosts
        By site, accelerator, year and scenario.
    """
    first = solution.first
    site = first.open * data.site_fixed_usd_per_h[:, None] + first.mw_reserved * data.site_usd_per_h_per_mw[:, None]
    annuity = np.einsum("mabs,ab,by->mays", solution.buy, data.node_annuity_usd_per_h, data.alive.astype(float))
    running = solution.nodes * data.running_may[:, :, :, None]
    energy = np.einsum("mkayst,mkays,yst->mays", solution.served_tok_s, data.energy_mkays, data.energy_weight)
    daily_demand = data.daily_demand_tok_s
    unserved = (solution.unserved_share * daily_demand).sum(axis=0) * data.unserved_usd_per_h_per_tok_s
    goodput = site_goodput_tok_s(data, solution).sum(axis=0)
    return PlanCosts(
        site_usd_per_h=np.asarray(site, dtype=float),
        node_capex_usd_per_h=annuity,
        node_running_usd_per_h=running,
        energy_usd_per_h=energy,
        capex_usd=np.asarray(np.maximum(solution.buy, 0.0) * data.node_capex_usd[None, :, :, None]) + 0.0,
        unserved_usd_per_h=np.asarray(unserved),
        goodput_tok_s=goodput,
        demand_tok_s=daily_demand.sum(axis=0),
        year_weight_h=data.year_weight_h,
        probability=data.probability,
        transport_usd_per_h=_transport_usd_per_h(data, solution),
    )


def _transport_usd_per_h(data: BuildoutInput, solution: BuildoutSolution) -> FloatArray | None:
    """``(Y, S)`` the pairs' cost besides their nodes (a cross-metro column's WAN), None where no pair has any."""
    if not np.any(data.pair_usd_per_tok_s):
        return None
    served = solution.pair_share * data.daily_demand_tok_s[data.pair_row]
    return np.asarray(np.einsum("pys,p->ys", served, data.pair_usd_per_tok_s))


def site_goodput_tok_s(data: BuildoutInput, solution: BuildoutSolution) -> FloatArray:
    """``(M, Y, S)`` daily mean goodput served at each site. [tokens/s]"""
    served = solution.pair_share * data.daily_demand_tok_s[data.pair_row]
    total = np.zeros((data.node_mw.shape[0], *served.shape[1:]))
    np.add.at(total, data.pair_site, served)
    return total


def accelerator_goodput_tok_s(data: BuildoutInput, solution: BuildoutSolution) -> FloatArray:
    """``(M, A, Y, S)`` daily mean goodput per site and accelerator (each site's goodput split as its slices' load). [tokens/s]"""
    load = np.einsum("mkayst,t->mays", solution.served_tok_s, data.slice_weight)
    total = load.sum(axis=1, keepdims=True)
    split = np.where(total > 0, load / np.maximum(total, 1e-300), 0.0)
    return np.asarray(split * site_goodput_tok_s(data, solution)[:, None])


def _count(mask: NDArray[np.bool_], what: str) -> list[str]:
    n = int(np.count_nonzero(mask))
    return [f"{n} {what}"] if n else []


def violations(data: BuildoutInput, solution: BuildoutSolution, *, tol: float = TOLERANCE) -> list[str]:
    """Every rule of the model the plan breaks (empty: it keeps them all), its carbon and water caps included.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    solution : BuildoutSolution
        The plan (rounded or not).
    tol : float, optional
        Relative tolerance.

    Returns
    -------
    list of str
        One line per broken rule, with how often it is broken.
    """
    first, nodes = solution.first, solution.nodes
    out: list[str] = []
    out += _count(np.diff(first.open.astype(int), axis=1) < 0, "site-years close a site opened before")
    out += _count(np.diff(first.mw_reserved, axis=1) < -tol, "site-years reserve fewer MW than the year before")
    out += _count(first.mw_reserved > data.site_mw_available * (1 + tol) + tol, "site-years reserve more MW than energized")
    out += _count((first.mw_reserved > tol) & ~first.open, "site-years reserve MW at a closed site")
    out += _count(solution.buy < -tol, "negative purchases")
    out += _count((solution.buy > tol) & ~data.offered[None, :, :, None], "purchases of an accelerator not on offer")
    if data.barred is not None:
        out += _count((solution.buy > tol) & data.barred[:, :, :, None], "purchases of an accelerator barred at the site")
    dark = first.open[:, :, None] & (nodes.sum(axis=1) < 1 - tol)
    out += _count(dark, "site-year-scenarios open with no node running")
    drawn = np.einsum("mays,ma->mys", nodes, data.node_mw)
    out += _count(drawn > first.mw_reserved[:, :, None] * (1 + tol) + tol, "site-year-scenarios draw more MW than reserved")
    total = np.zeros_like(solution.unserved_share)
    np.add.at(total, data.pair_row, solution.pair_share)
    out += _count(np.abs(total + solution.unserved_share - 1.0) > 1e-5, "row-year-scenarios whose shares do not sum to 1")
    closed = ~first.open[data.pair_site] | ((data.remote_site >= 0)[:, None] & ~first.open[np.maximum(data.remote_site, 0)])
    out += _count((solution.pair_share > tol) & closed[:, :, None], "pair-years routed to a closed site")
    goodput = data.goodput_mkays
    per_node = np.where(goodput > 0, 1 / np.maximum(goodput, 1e-300), 0)
    load = np.einsum("mkayst,mkays->mayst", solution.served_tok_s, per_node)
    out += _count(load > nodes[..., None] * (1 + tol) + tol, "site-accelerator-slices loaded beyond their nodes")
    cannot = (solution.served_tok_s > tol) & (goodput <= 0)[..., None]
    out += _count(cannot, "class loads on accelerators that cannot serve them")
    m, k_count = data.node_mw.shape[0], data.goodput_tok_s.shape[0]
    routed = np.zeros((m, k_count, *solution.pair_share.shape[1:], data.slice_weight.size))
    demand = data.row_demand_tok_s[data.pair_row]  # (P, T, Y, S)
    contrib = np.einsum("pys,ptys,p->pyst", solution.pair_share, demand, data.pair_load_factor)
    np.add.at(routed, (data.pair_site, data.row_class[data.pair_row]), contrib)
    second = np.flatnonzero(data.remote_site >= 0)  # a cross-metro column's prefill load at its second site
    remote = np.einsum("pys,ptys,p->pyst", solution.pair_share[second], demand[second], data.remote_load[second])
    np.add.at(routed, (data.remote_site[second], data.row_class[data.pair_row[second]]), remote)
    served = solution.served_tok_s.sum(axis=2)
    scale = np.maximum(routed.max(initial=0.0), 1.0)
    out += _count(np.abs(routed - served) > 1e-5 * scale, "site-class-slices whose routed load differs from the load served")
    return out + cap_breaches(data, solution)
