"""The model's rows and arrays, as the optimiser solves them.

Merged commodities with their demand and round trips, and the placement input: capacity, costs, caps, fault
domains, the cache's warm-up nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._process import take_pairs
from placement._types import FloatArray, IntArray, OptionCodes
from placement.economics.cost import HOURS_PER_YEAR, NodeCost
from placement.instance.commodities import ROWS_CHUNK, merge_commodities
from placement.instance.pair_mask import PairMask
from placement.instance.prices import pair_energy_usd_per_h
from placement.optimize.problem import PlacementInput, ResourceCap
from placement.profiles.build import ClassProfile
from placement.rules.faults import FaultDomains
from placement.rules.resources import CapSpec
from placement.scenario.sections import (
    EconomicsSection,
    FaultToleranceSection,
    ServingSection,
    SitesOpenSection,
)


@dataclass(frozen=True)
class ModelRows:
    """Interchangeable commodities merged into the rows of the model.

    Parameters
    ----------
    row_of_commodity : numpy.ndarray of int
        ``(c,)`` row of each commodity (-1: no allowed site).
    modelled : numpy.ndarray of int
        A representative commodity of each row.
    slice_demand_tok_s : numpy.ndarray
        ``(r, T)`` demand of each row per slice. [tokens/s]
    mean_demand_tok_s : numpy.ndarray
        ``(r,)`` daily mean demand of each row. [tokens/s]
    pair_key : numpy.ndarray of int
        ``row x sites + site`` of every allowed (row, site), ascending.
    pair_rtt_ms : numpy.ndarray
        Demand-weighted round trip of each such pair's members (only allowed pairs: a dense ``(rows, sites)``
        table would hold 0.3 GB on 2,000 sites). [ms]
    n_sites : int
        Sites of the model.
    """

    row_of_commodity: IntArray
    modelled: IntArray
    slice_demand_tok_s: FloatArray
    mean_demand_tok_s: FloatArray
    pair_key: IntArray
    pair_rtt_ms: FloatArray
    n_sites: int

    def rtt_ms(self, row: IntArray, site: IntArray) -> FloatArray:
        """The demand-weighted round trip of allowed (row, site) pairs, element-wise. [ms]"""
        at = np.searchsorted(self.pair_key, np.asarray(row, dtype=np.int64) * self.n_sites + np.asarray(site, dtype=np.int64))
        return np.asarray(self.pair_rtt_ms[at])


def model_rows(
    allowed: PairMask,
    commodity_class: IntArray,
    commodity_population: IntArray,
    commodity_slices: FloatArray,
    commodity_mean: FloatArray,
    rtt_ms: FloatArray,
    codes: OptionCodes | None = None,
) -> ModelRows:
    """Merge interchangeable commodities (:func:`merge_commodities`) and sum their demand.

    Parameters
    ----------
    allowed : PairMask
        ``(c, m)`` allowed pairs.
    commodity_class, commodity_population : numpy.ndarray of int
        Class and population of each commodity.
    commodity_slices, commodity_mean : numpy.ndarray
        Demand per slice and daily mean of each commodity. [tokens/s]
    rtt_ms : numpy.ndarray
        ``(n, m)`` population-site round trips. [ms]
    codes : numpy.ndarray of int, optional
        ``(c, m)`` option of each pair (:func:`commodity_options`).

    Returns
    -------
    ModelRows
        The rows.
    """
    row_of_commodity, modelled = merge_commodities(allowed, commodity_class, commodity_slices, codes)
    n_rows = len(modelled)
    members = row_of_commodity >= 0
    rows = row_of_commodity[members]
    slices = np.zeros((n_rows, commodity_slices.shape[1]))
    np.add.at(slices, rows, commodity_slices[members])
    mean = np.bincount(rows, weights=commodity_mean[members], minlength=n_rows).astype(float)
    m = rtt_ms.shape[1]
    pair_row, pair_site = np.nonzero(allowed.rows(modelled))  # row-major: the keys ascend
    key = pair_row.astype(np.int64) * m + pair_site
    weighted = np.zeros(len(key))
    row_start = np.searchsorted(pair_row, np.arange(n_rows))  # each row's first pair
    row_count = np.bincount(pair_row, minlength=n_rows)
    member = np.flatnonzero(members)
    for start in range(0, len(member), ROWS_CHUNK):  # members in order, so the sums are the same as in one go
        chunk = member[start : start + ROWS_CHUNK]
        # a row's members share its allowed sites: each member's entries are its row's pairs, in their order
        row = row_of_commodity[chunk]
        count = row_count[row]
        at = np.arange(int(count.sum())) + np.repeat(row_start[row] - (np.cumsum(count) - count), count)
        rtt = np.asarray(take_pairs(rtt_ms, np.repeat(commodity_population[chunk], count), pair_site[at]), dtype=float)
        np.add.at(weighted, at, rtt * np.repeat(commodity_mean[chunk], count))
    return ModelRows(row_of_commodity, modelled, slices, mean, key, weighted / np.maximum(mean, 1e-12)[pair_row], m)


@dataclass(frozen=True)
class ModelSections:
    """The scenario's sections the model arrays read, as :func:`build_instance` hands them out.

    Parameters
    ----------
    economics : EconomicsSection
        ``economics`` (the sites' default fixed cost).
    serving : ServingSection
        ``serving`` (the idle power share: the rest of a node's power follows its load).
    sites_open : SitesOpenSection
        ``sites_open`` (bounds on the number of open sites).
    fault_tolerance : FaultToleranceSection
        ``fault_tolerance`` (N+1).
    peak_factor : float
        ``demand.peak_factor``: with a single peak slice, energy follows the daily mean, not the peak.
    """

    economics: EconomicsSection
    serving: ServingSection
    sites_open: SitesOpenSection
    fault_tolerance: FaultToleranceSection
    peak_factor: float


def placement_input(
    sites: pd.DataFrame,
    rows: ModelRows,
    pair_allowed: NDArray[np.bool_],
    row_class: IntArray,
    slice_hours: FloatArray,
    profiles: list[ClassProfile],
    node_cost: NodeCost,
    kw: float | FloatArray,
    *,
    price_multiplier: FloatArray,
    sections: ModelSections,
    options: tuple[list[ClassProfile], OptionCodes] | None = None,
    charge_usd_per_mwh: FloatArray | None = None,
    caps: Sequence[CapSpec] = (),
) -> PlacementInput:
    """The model arrays: rows, allowed pairs, capacity and cost per site.

    Parameters
    ----------
    sites : pandas.DataFrame
        The sites.
    rows : ModelRows
        The merged commodities.
    pair_allowed : numpy.ndarray of bool
        ``(r, m)`` allowed pairs of each row.
    row_class : numpy.ndarray of int
        Class of each row.
    slice_hours : numpy.ndarray
        Hours per slice. [h]
    profiles : list of ClassProfile
        Per-node goodput of each class.
    node_cost : NodeCost
        Per-site node cost. [USD/h]
    kw : float or numpy.ndarray
        IT power of one node, or ``(m,)`` each site's where sites run different parts. [kW]
    price_multiplier : numpy.ndarray
        ``(m, T)`` power price multiplier per site and slice (:func:`site_price_multiplier`).
    sections : ModelSections
        The scenario's sections the model reads.
    options : tuple, optional
        ``(profiles of every option, (r, m) option of each row's pairs)`` with ``serving.node_ttft_ladder`` or sites of
        several KV tiers: each pair then uses its own option's goodput.

    Returns
    -------
    PlacementInput
        Arrays for :mod:`placement.optimize`.
    """
    pair_row, pair_site = (a.astype(np.int64) for a in np.nonzero(pair_allowed))
    pair_class, profiles = pair_options(pair_row, pair_site, row_class, profiles, options)
    nodes_per_tok_s = np.array([p.nodes_per_tok_s for p in profiles])
    pair_load = partial(
        pair_energy_usd_per_h, sites, rows.slice_demand_tok_s, slice_hours, pair_row, pair_site, pair_class, profiles,
        kw=kw, price_multiplier=price_multiplier, idle_power_share=sections.serving.idle_power_share,
        peak_factor=sections.peak_factor,
    )  # fmt: skip
    node_mw = kw * sites["pue"].to_numpy(float) / 1000.0
    idle_mw, pue = node_mw * sections.serving.idle_power_share, sites["pue"].to_numpy(float)
    resource_caps = resource_cap_rows(caps, pair_load, idle_mw, pue, slice_hours)
    return PlacementInput(
        slice_demand_tok_s=rows.slice_demand_tok_s,
        slice_hours=slice_hours,
        pair_commodity=pair_row,
        pair_site=pair_site,
        pair_nodes_per_tok_s=nodes_per_tok_s[pair_class],
        pair_rtt_ms=rows.rtt_ms(pair_row, pair_site),
        pair_cost_usd_per_h=pair_load(charge_usd_per_mwh=charge_usd_per_mwh),
        site_fixed_usd_per_h=sites["fixed_cost_usd_per_h"].fillna(sections.economics.site_fixed_cost_usd_per_h).to_numpy(float),
        site_node_usd_per_h=node_cost.total_usd_per_h,
        site_node_mw=node_mw,
        site_mw_available=sites["mw_available"].to_numpy(float),
        site_locked=sites["locked"].to_numpy(bool),
        min_sites_open=sections.sites_open.min,
        max_sites_open=sections.sites_open.max,
        fault_tolerant=sections.fault_tolerance.n_plus_one,
        daily_mean_tok_s=rows.mean_demand_tok_s,
        protect=pair_allowed.sum(axis=1) >= 2,  # N+1 needs a second site in reach
        caps=resource_caps,
    )


def pair_options(
    pair_row: IntArray,
    pair_site: IntArray,
    row_class: IntArray,
    profiles: list[ClassProfile],
    options: tuple[list[ClassProfile], OptionCodes] | None,
) -> tuple[IntArray, list[ClassProfile]]:
    """Each pair's profile, an index into the profiles returned, and those profiles.

    The pair's row's class; with ``options`` (a ladder or several KV tiers) its class's rung there, at its site's tier.
    """
    if options is None:
        return row_class[pair_row], profiles
    every, row_codes = options
    return row_codes[pair_row, pair_site].astype(np.int64), every


def resource_cap_rows(
    caps: Sequence[CapSpec],
    pair_load: Callable[..., FloatArray],
    idle_node_mw: FloatArray,
    pue: FloatArray,
    slice_hours: FloatArray,
) -> tuple[ResourceCap, ...]:
    """The model's rows of the carbon and water caps: what each open node and each pair's load use of the resource.

    Per MWh drawn, PUE included: the pairs' load and the nodes' idle draw, hour-weighted; one coefficient array per
    resource, shared by every cap on it (a per-site limit costs no more memory than its mask).

    Parameters
    ----------
    caps : sequence of CapSpec
        The scenario's caps.
    pair_load : callable
        :func:`pair_energy_usd_per_h` of the model's pairs, taking ``per_mwh``: each pair's load in a unit per MWh.
    idle_node_mw : numpy.ndarray
        ``(m,)`` idle draw of one node at each site, PUE included. [MW]
    pue : numpy.ndarray
        ``(m,)`` each site's PUE.
    slice_hours : numpy.ndarray
        Hours per slice. [h]
    """
    coefficients: dict[int, tuple[FloatArray, FloatArray]] = {}
    for spec in caps:
        if id(spec.per_mwh) not in coefficients:
            idle_per_mwh = spec.per_mwh @ (slice_hours / slice_hours.sum())
            coefficients[id(spec.per_mwh)] = (idle_node_mw * idle_per_mwh, pair_load(per_mwh=pue[:, None] * spec.per_mwh))
    return tuple(
        ResourceCap(
            name=spec.name, unit=spec.unit, site_fixed_per_h=np.zeros(len(pue)),
            site_node_per_h=coefficients[id(spec.per_mwh)][0], pair_per_h=coefficients[id(spec.per_mwh)][1],
            limit_per_h=spec.limit_per_year / HOURS_PER_YEAR, sites=spec.sites,
        )
        for spec in caps
    )  # fmt: skip


def with_cache_warmup(inputs: PlacementInput, node_usd_per_h: FloatArray, nodes: IntArray) -> PlacementInput:
    """The model arrays with ``nodes`` held at every open site: their cost in the site's fixed cost, their power off its MW.

    The miss work of a site peaks at a level of traffic and falls as its shared prefixes get hot
    (:func:`placement.serving.prefix_cache.miss_peak`), so charging the peak to every open site never under-counts
    its nodes, and makes each further site pay for its cold cache: the consolidation the cache rewards.
    """
    if not np.any(nodes > 0):
        return inputs
    fixed: dict[int, FloatArray] = {}  # the warm-up nodes draw their idle power wherever the site is open
    for cap in inputs.caps:
        fixed.setdefault(id(cap.site_fixed_per_h), cap.site_fixed_per_h + nodes * cap.site_node_per_h)
    return replace(
        inputs,
        site_fixed_usd_per_h=inputs.site_fixed_usd_per_h + nodes * node_usd_per_h,
        site_mw_available=np.maximum(inputs.site_mw_available - nodes * inputs.site_node_mw, 0.0),
        caps=tuple(replace(cap, site_fixed_per_h=fixed[id(cap.site_fixed_per_h)]) for cap in inputs.caps),
    )


def failure_domain_sites(domains: FaultDomains | None, sites: pd.DataFrame) -> tuple[tuple[str, ...], tuple[IntArray, ...]]:
    """The domains that fail more than one site (one site alone is already an N+1 loss): names and site indices."""
    if domains is None:
        return (), ()
    index = {str(site): j for j, site in enumerate(sites["id"])}
    kept = [(name, ids) for name, ids in zip(domains.names, domains.site_ids, strict=True) if len(ids) > 1]
    names = tuple(name for name, _ in kept)
    return names, tuple(np.asarray([index[i] for i in ids], dtype=np.int64) for _, ids in kept)


def row_worst(values: FloatArray, row_of_commodity: IntArray, commodity_population: IntArray, n_rows: int) -> FloatArray:
    """``(r, m)`` the largest of each row's members' ``values[population]`` (by chunks of :data:`ROWS_CHUNK`)."""
    out = np.full((n_rows, values.shape[1]), -np.inf)
    members = np.flatnonzero(row_of_commodity >= 0)
    for start in range(0, len(members), ROWS_CHUNK):
        chunk = members[start : start + ROWS_CHUNK]
        np.maximum.at(out, row_of_commodity[chunk], values[commodity_population[chunk]])
    return out


def row_all(mask: NDArray[np.bool_], row_of_commodity: IntArray, n_rows: int) -> NDArray[np.bool_]:
    """``(r, m)`` where every member commodity of the row has ``mask`` (``(c, m)``)."""
    out = np.ones((n_rows, mask.shape[1]), dtype=bool)
    members = np.flatnonzero(row_of_commodity >= 0)
    np.logical_and.at(out, row_of_commodity[members], mask[members])
    return out
