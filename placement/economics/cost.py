"""The product's equation: all-in cost per hour over goodput tokens per hour.

``cost per million goodput tokens = all-in $/h / (goodput tok/h / 1e6)``. The numerator is a
facilities decision (capital, power, opex) and differs by site; the denominator counts only
tokens delivered inside the latency objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

HOURS_PER_YEAR = 8760.0
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class EconomicsParams:
    """Cost inputs shared by all sites (site-specific figures come from the catalog).

    Parameters
    ----------
    node_capex_usd : float
        Purchase price of one serving node: accelerators, server, share of fabric. [USD]
    node_life_years : float
        Depreciation life of a node. [years]
    facility_life_years : float
        Depreciation life of the facility build. [years]
    discount_rate : float
        Annual cost of capital used for amortisation. [1/year]
    opex_usd_per_node_h : float
        Staff, spares, maintenance and network per node. [USD/h]
    site_fixed_cost_usd_per_h : float
        Cost of having a site open at all (presence, security, interconnect). [USD/h]
    """

    node_capex_usd: float = 400_000.0
    node_life_years: float = 4.0
    facility_life_years: float = 15.0
    discount_rate: float = 0.08
    opex_usd_per_node_h: float = 3.0
    site_fixed_cost_usd_per_h: float = 250.0


def capital_recovery_factor(rate_per_year: float, life_years: float) -> float:
    """Share of a capital sum paid per year to repay it with interest over its life.

    Parameters
    ----------
    rate_per_year : float
        Discount rate; 0 gives straight-line depreciation. [1/year]
    life_years : float
        Life of the asset. [years]

    Returns
    -------
    float
        Capital recovery factor. [1/year]
    """
    if rate_per_year == 0.0:
        return 1.0 / life_years
    growth = (1.0 + rate_per_year) ** life_years
    return float(rate_per_year * growth / (growth - 1.0))


def amortised_usd_per_h(capex_usd: ArrayLike, rate_per_year: float, life_years: float) -> NDArray[np.float64]:
    """Hourly cost of a capital outlay.

    Parameters
    ----------
    capex_usd : array_like
        Capital outlay. [USD]
    rate_per_year : float
        Discount rate. [1/year]
    life_years : float
        Life of the asset. [years]

    Returns
    -------
    numpy.ndarray
        Amortised cost. [USD/h]
    """
    crf = capital_recovery_factor(rate_per_year, life_years)
    return np.asarray(np.asarray(capex_usd, dtype=float) * crf / HOURS_PER_YEAR)


def power_usd_per_h(node_kw: ArrayLike, pue: ArrayLike, price_usd_per_mwh: ArrayLike) -> NDArray[np.float64]:
    """Electricity cost of one node, cooling and losses included through PUE.

    Parameters
    ----------
    node_kw : float or array_like
        IT power of the node (per site, or one for all). [kW]
    pue : array_like
        Power usage effectiveness of the site.
    price_usd_per_mwh : array_like
        Electricity price at the site. [USD/MWh]

    Returns
    -------
    numpy.ndarray
        Power cost. [USD/h]
    """
    kw = np.asarray(node_kw, dtype=float)
    return np.asarray(kw / 1000.0 * np.asarray(pue, dtype=float) * np.asarray(price_usd_per_mwh, dtype=float))


@dataclass(frozen=True)
class NodeCost:
    """All-in hourly cost of one node at each site, by component. [USD/h]"""

    node_capex_usd_per_h: NDArray[np.float64]
    facility_capex_usd_per_h: NDArray[np.float64]
    power_usd_per_h: NDArray[np.float64]
    opex_usd_per_h: NDArray[np.float64]

    @property
    def total_usd_per_h(self) -> NDArray[np.float64]:
        """Sum of the components. [USD/h]"""
        return np.asarray(self.node_capex_usd_per_h + self.facility_capex_usd_per_h + self.power_usd_per_h + self.opex_usd_per_h)


def node_cost_usd_per_h(
    params: EconomicsParams,
    *,
    node_kw: ArrayLike,
    pue: ArrayLike,
    price_usd_per_mwh: ArrayLike,
    facility_capex_usd_per_mw: ArrayLike,
    idle_power_share: float = 1.0,
) -> NodeCost:
    """All-in hourly cost of one node at each site.

    Parameters
    ----------
    params : EconomicsParams
        Shared cost inputs.
    node_kw : float or array_like
        IT power of one node (per site where sites run different parts). [kW]
    pue : array_like
        PUE per site.
    price_usd_per_mwh : array_like
        Power price per site. [USD/MWh]
    facility_capex_usd_per_mw : array_like
        Facility build cost per MW of IT load, per site. [USD/MW]
    idle_power_share : float, optional
        Share of node power drawn at zero load; only this part is a per-node cost, the rest
        is charged per token served (1: the node always draws full power).

    Returns
    -------
    NodeCost
        Components per site. [USD/h]
    """
    pue_arr = np.asarray(pue, dtype=float)
    ones = np.ones_like(pue_arr)
    node_capex = amortised_usd_per_h(params.node_capex_usd, params.discount_rate, params.node_life_years)
    facility_capex = amortised_usd_per_h(
        np.asarray(facility_capex_usd_per_mw, dtype=float) * np.asarray(node_kw, dtype=float) / 1000.0,
        params.discount_rate,
        params.facility_life_years,
    )
    return NodeCost(
        node_capex_usd_per_h=node_capex * ones,
        facility_capex_usd_per_h=facility_capex * ones,
        power_usd_per_h=power_usd_per_h(np.asarray(node_kw, dtype=float) * idle_power_share, pue_arr, price_usd_per_mwh) * ones,
        opex_usd_per_h=params.opex_usd_per_node_h * ones,
    )


def cost_per_million_tokens_usd(cost_usd_per_h: ArrayLike, goodput_tok_s: ArrayLike) -> NDArray[np.float64]:
    """Cost per million goodput tokens.

    Parameters
    ----------
    cost_usd_per_h : array_like
        All-in cost. [USD/h]
    goodput_tok_s : array_like
        Tokens delivered inside the SLO. [tokens/s]

    Returns
    -------
    numpy.ndarray
        Cost per million goodput tokens; ``inf`` where goodput is zero. [USD/Mtok]
    """
    tok_per_h = np.asarray(goodput_tok_s, dtype=float) * SECONDS_PER_HOUR
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(tok_per_h > 0, np.asarray(cost_usd_per_h, dtype=float) / (tok_per_h / 1e6), np.inf))


def tokens_per_s_per_mw(goodput_tok_s: ArrayLike, facility_mw: ArrayLike) -> NDArray[np.float64]:
    """Facility yield: goodput per MW of facility power (IT power times PUE).

    Parameters
    ----------
    goodput_tok_s : array_like
        Tokens delivered inside the SLO. [tokens/s]
    facility_mw : array_like
        Facility power drawn for them, PUE included. [MW]

    Returns
    -------
    numpy.ndarray
        Yield; 0 where no power is drawn. [tokens/s/MW]
    """
    mw = np.asarray(facility_mw, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(mw > 0, np.asarray(goodput_tok_s, dtype=float) / mw, 0.0))


def load_energy_usd_per_h(
    slice_demand_tok_s: NDArray[np.float64],
    slice_weights: NDArray[np.float64],
    pair_row: NDArray[np.int64],
    pair_site: NDArray[np.int64],
    mw_per_tok_s: ArrayLike,
    site_price_usd_per_mwh: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Load-dependent energy cost of each pair at a share of 1, averaged over the day. [USD/h]

    Parameters
    ----------
    slice_demand_tok_s : numpy.ndarray
        ``(r, T)`` demand of each model row in each slice. [tokens/s]
    slice_weights : numpy.ndarray
        ``(T,)`` share of the day each slice stands for.
    pair_row, pair_site : numpy.ndarray of int
        Row and site of each pair.
    mw_per_tok_s : array_like
        Facility-side dynamic power per tok/s of each pair, before PUE. [MW/(tokens/s)]
    site_price_usd_per_mwh : numpy.ndarray
        ``(m, T)`` power price at each site in each slice, PUE included. [USD/MWh]

    Returns
    -------
    numpy.ndarray
        ``(p,)`` cost. [USD/h]
    """
    energy = np.empty(len(pair_row))
    for start in range(0, len(pair_row), ENERGY_CHUNK_PAIRS):  # a (pairs, T) table a chunk at a time: same sums
        part = slice(start, start + ENERGY_CHUNK_PAIRS)
        priced = slice_demand_tok_s[pair_row[part]] * site_price_usd_per_mwh[pair_site[part]]
        energy[part] = (priced * slice_weights[None, :]).sum(axis=1)
    return np.asarray(np.asarray(mw_per_tok_s) * energy)


ENERGY_CHUNK_PAIRS = 262_144
"""Pairs whose energy is summed at a time: each temporary is ``262,144 x T`` figures (50 MB at 24 slices) rather than
every pair's (0.57 GB on a 2,000-site world's 2.9 million pairs)."""
