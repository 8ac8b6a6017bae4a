"""Simple placements to compare the optimum with: same silicon, different arrangement.

- ``nearest-metro``: every population goes to its nearest site inside its budget.
- ``cheapest-power``: capacity goes to the sites with the cheapest power, filled in price order,
  wherever the users are; traffic that lands outside its objective is not goodput.
- ``single-region``: one site serves everyone; the best such site by $/M goodput.

Each baseline sizes nodes to its peak slice load, within each site's power; what does not fit
is not served. Energy is charged at each site's mean power price (no hourly price profile).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement._types import FloatArray
from placement.economics.cost import cost_per_million_tokens_usd, tokens_per_s_per_mw
from placement.instance.pair_mask import ROWS_CHUNK
from placement.instance.record import Instance


@dataclass(frozen=True)
class Baseline:
    """A placement and its figures.

    Parameters
    ----------
    placement : str
        Its name.
    site_of_commodity : numpy.ndarray
        ``(c,)`` site index serving each commodity (-1: none).
    cost_usd_per_h : float
        Total cost. [USD/h]
    goodput_tok_s : float
        Daily mean tokens delivered inside the SLO. [tokens/s]
    served_share : float
        Share of demand delivered inside its SLO.
    mw_used : float
        Facility power of the nodes. [MW]
    sites_open : int
        Sites with nodes.
    """

    placement: str
    site_of_commodity: NDArray[np.int64]
    cost_usd_per_h: float
    goodput_tok_s: float
    served_share: float
    mw_used: float
    sites_open: int

    def as_dict(self) -> dict[str, float | int | str]:
        """The figures for tables and JSON."""
        return {
            "placement": self.placement,
            "cost_per_million_goodput_tokens_usd": float(cost_per_million_tokens_usd(self.cost_usd_per_h, self.goodput_tok_s)),
            "served_share": self.served_share,
            "tokens_per_s_per_mw": float(tokens_per_s_per_mw(self.goodput_tok_s, self.mw_used)),
            "mw_used": self.mw_used,
            "cost_usd_per_h": self.cost_usd_per_h,
            "goodput_tok_s": self.goodput_tok_s,
            "sites_open": self.sites_open,
        }


def _commodity_arrays(instance: Instance) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Slice demand, node-equivalents per tok/s, daily mean demand and goodput per node of every commodity."""
    goodput = np.array([p.goodput_tok_s_per_node for p in instance.profiles])
    weight = np.array([p.nodes_per_tok_s for p in instance.profiles])
    return (
        instance.commodity_slice_demand_tok_s,
        weight[instance.commodity_class],
        instance.commodity_mean_demand_tok_s,
        goodput[instance.commodity_class],
    )


def evaluate(instance: Instance, name: str, preferred_sites: NDArray[np.int64]) -> Baseline:
    """Cost and goodput of sending each commodity to its preferred site, as power allows.

    Parameters
    ----------
    instance : Instance
        The scenario's arrays.
    name : str
        The placement's name.
    preferred_sites : numpy.ndarray
        ``(c,)`` site index per commodity, or -1 for none.

    Returns
    -------
    Baseline
        Nodes sized to the peak slice; commodities that do not fit are not served; goodput
        counts only commodities served inside their objective.
    """
    slices, weight, mean, per_node = _commodity_arrays(instance)
    if instance.varies_by_pair:  # each commodity at its preferred site runs its option there (a rung, the site's KV tier)
        chosen = preferred_sites >= 0
        option = instance.option_at(np.flatnonzero(chosen), preferred_sites[chosen])
        weight, per_node = weight.copy(), per_node.copy()
        weight[chosen] = np.array([p.nodes_per_tok_s for p in instance.options])[option]
        per_node[chosen] = np.array([p.goodput_tok_s_per_node for p in instance.options])[option]
    data = instance.inputs
    m = data.n_sites
    site_load = np.zeros((m, slices.shape[1]))
    site = np.full(len(mean), -1, dtype=np.int64)
    for c in np.argsort(-mean).tolist():
        j = int(preferred_sites[c])
        if j < 0:
            continue
        trial = site_load[j] + slices[c] * weight[c]
        if np.ceil(trial.max() - 1e-9) <= data.site_max_nodes[j]:
            site_load[j] = trial
            site[c] = j
    nodes = np.ceil(site_load.max(axis=1) - 1e-9).clip(min=0)
    is_open = nodes > 0
    inside = (site >= 0) & instance.within_budget.at(np.arange(len(site)), np.maximum(site, 0))
    dynamic = 1.0 - instance.facts.serving.idle_power_share
    energy_mw_per_tok_s = dynamic * instance.node_kw / 1000.0 / per_node
    price = instance.sites["power_price_usd_per_mwh"].to_numpy(float) * instance.sites["pue"].to_numpy(float)
    served = site >= 0
    energy = float((mean[served] * energy_mw_per_tok_s[served] * price[site[served]]).sum())
    cost = float(data.site_fixed_usd_per_h[is_open].sum() + (nodes * data.site_node_usd_per_h).sum() + energy)
    goodput = float(mean[inside].sum())
    return Baseline(
        placement=name,
        site_of_commodity=site,
        cost_usd_per_h=cost,
        goodput_tok_s=goodput,
        served_share=goodput / float(mean.sum()) if mean.sum() > 0 else 0.0,
        mw_used=float((nodes * data.site_node_mw).sum()),
        sites_open=int(is_open.sum()),
    )


def nearest_metro(instance: Instance) -> Baseline:
    """Every population to its nearest site inside its budget (residency respected)."""
    choice = np.full(len(instance.commodity_population), -1, dtype=np.int64)
    for first in range(0, len(choice), ROWS_CHUNK):  # a block of commodities at a time, not a (c, m) table
        block = slice(first, first + ROWS_CHUNK)
        rtt = np.where(instance.allowed.rows(block), instance.rtt_ms[instance.commodity_population[block]], np.inf)
        choice[block] = np.where(np.isfinite(rtt).any(axis=1), rtt.argmin(axis=1), -1)
    return evaluate(instance, "nearest-metro", choice)


def cheapest_power(instance: Instance) -> Baseline:
    """All capacity at the cheapest-power sites, filled in price order, wherever the users are."""
    price = instance.sites["power_price_usd_per_mwh"].to_numpy(float)
    has_power = instance.inputs.site_max_nodes > 0
    order = [j for j in np.argsort(price, kind="stable").tolist() if has_power[j]]
    slices, weight, mean, _ = _commodity_arrays(instance)
    room = instance.inputs.site_max_nodes.astype(float).copy()
    choice = np.full(len(mean), -1, dtype=np.int64)
    for c in np.argsort(-mean).tolist():
        need = float(slices[c].max() * weight[c])
        for j in order:
            if room[j] >= need:
                choice[c] = j
                room[j] -= need
                break
    return evaluate(instance, "cheapest-power", choice)


def single_region(instance: Instance) -> Baseline:
    """The one site that, serving everyone it can hold, gives the lowest $/M goodput."""
    best: Baseline | None = None
    n = len(instance.commodity_population)
    for j in range(instance.inputs.n_sites):
        if instance.inputs.site_max_nodes[j] <= 0:
            continue
        candidate = evaluate(instance, "single-region", np.full(n, j, dtype=np.int64))
        if candidate.goodput_tok_s <= 0:
            continue
        if best is None or candidate.cost_usd_per_h / candidate.goodput_tok_s < best.cost_usd_per_h / best.goodput_tok_s:
            best = candidate
    if best is None:
        return evaluate(instance, "single-region", np.full(n, -1, dtype=np.int64))
    return best


def all_baselines(instance: Instance) -> list[Baseline]:
    """The three baselines, in a fixed order."""
    return [nearest_metro(instance), cheapest_power(instance), single_region(instance)]
