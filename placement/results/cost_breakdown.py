"""The cost of a design by component (node capex, facility capex, idle power, load energy, opex, site fixed, WAN).

The components add up to the plan's objective; :func:`cost_breakdown` adds them up over a design's
sites, :func:`cost_breakdown_of_site_table` over a written ``sites.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["CostBreakdown", "cost_breakdown", "cost_breakdown_of_site_table"]


@dataclass(frozen=True, kw_only=True)
class CostBreakdown:
    """The cost of a design by component; the components add up to the plan's objective. [USD/h]

    The MILP minimises ``site fixed x open + node $/h x nodes + pair energy x share``; the node
    $/h is itself node capex + facility capex + idle power + opex. The objective reported
    (``objective_usd_per_h``) is that cost of the design. The other terms a MILP may carry are not
    costs anyone pays and are not components: with optional serving each Dinkelbach step subtracts
    ``lambda x goodput`` (the ratio is reported as $/M goodput instead), and the elastic diagnosis
    of an infeasible scenario prices unserved demand only to find it (reported as the unserved
    share).

    Parameters
    ----------
    node_capex_usd_per_h : float
        Amortised purchase of the nodes. [USD/h]
    facility_capex_usd_per_h : float
        Amortised facility build for the nodes' power. [USD/h]
    idle_power_usd_per_h : float
        Power the nodes draw at zero load, PUE included. [USD/h]
    load_energy_usd_per_h : float
        Power that follows the load served (the share-dependent term), daily mean. [USD/h]
    opex_usd_per_h : float
        Staff, spares, maintenance and network. [USD/h]
    site_fixed_usd_per_h : float
        Cost of having the open sites open. [USD/h]
    wan_transport_usd_per_h : float, optional
        KV moved between metros by cross-metro prefill (``serving.cross_metro_prefill``); a component only when
        it is not 0. [USD/h]
    """

    node_capex_usd_per_h: float
    facility_capex_usd_per_h: float
    idle_power_usd_per_h: float
    load_energy_usd_per_h: float
    opex_usd_per_h: float
    site_fixed_usd_per_h: float
    wan_transport_usd_per_h: float = 0.0

    @property
    def total_usd_per_h(self) -> float:
        """Sum of the components. [USD/h]"""
        return sum(value for _, value in self.lines())

    def lines(self) -> list[tuple[str, float]]:
        """``(JSON key, USD/h)`` of each component, in report order, total excluded."""
        lines = [(f.name.removesuffix("_usd_per_h"), float(getattr(self, f.name))) for f in fields(self)]
        return [(k, v) for k, v in lines if k != "wan_transport" or v != 0.0]

    def to_json_dict(self) -> dict[str, float]:
        """``node_capex, facility_capex, idle_power, load_energy, opex, site_fixed, total``. [USD/h]"""
        return {**dict(self.lines()), "total": self.total_usd_per_h}

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> CostBreakdown:
        """Read :meth:`to_json_dict`'s form back (``total`` is recomputed)."""
        return cls(**{f.name: float(data.get(f.name.removesuffix("_usd_per_h")) or 0.0) for f in fields(cls)})


def cost_breakdown(
    nodes: ArrayLike,
    is_open: ArrayLike,
    *,
    node_capex_usd_per_h: ArrayLike,
    facility_capex_usd_per_h: ArrayLike,
    idle_power_usd_per_h: ArrayLike,
    opex_usd_per_h: ArrayLike,
    site_fixed_usd_per_h: ArrayLike,
    load_energy_usd_per_h: ArrayLike,
    wan_usd_per_h: ArrayLike = 0.0,
) -> CostBreakdown:
    """Add up a design's cost by component over its sites.

    Parameters
    ----------
    nodes : array_like of int
        ``(m,)`` nodes at each site.
    is_open : array_like of bool
        ``(m,)`` open sites.
    node_capex_usd_per_h, facility_capex_usd_per_h, idle_power_usd_per_h, opex_usd_per_h : array_like
        ``(m,)`` or scalar: the parts of one node's hourly cost at each site. [USD/h]
    site_fixed_usd_per_h : array_like
        ``(m,)`` cost of an open site. [USD/h]
    load_energy_usd_per_h : array_like
        ``(m,)`` load-dependent energy of the shares each site carries. [USD/h]
    wan_usd_per_h : array_like, optional
        ``(m,)`` KV transport each decode site buys (cross-metro prefill). [USD/h]

    Returns
    -------
    CostBreakdown
        The components. [USD/h]
    """
    count = np.asarray(nodes, dtype=float)

    def per_node(cost: ArrayLike) -> float:
        return float((count * np.asarray(cost, dtype=float)).sum())

    return CostBreakdown(
        node_capex_usd_per_h=per_node(node_capex_usd_per_h),
        facility_capex_usd_per_h=per_node(facility_capex_usd_per_h),
        idle_power_usd_per_h=per_node(idle_power_usd_per_h),
        load_energy_usd_per_h=float(np.asarray(load_energy_usd_per_h, dtype=float).sum()),
        opex_usd_per_h=per_node(opex_usd_per_h),
        site_fixed_usd_per_h=float(np.where(np.asarray(is_open, dtype=bool), np.asarray(site_fixed_usd_per_h, float), 0.0).sum()),
        wan_transport_usd_per_h=float(np.asarray(wan_usd_per_h, dtype=float).sum()),
    )


def cost_breakdown_of_site_table(sites: pd.DataFrame) -> CostBreakdown:
    """The cost breakdown from a plan's site table (``sites.csv``).

    For results folders whose ``summary.json`` predates ``cost_breakdown_usd_per_h``; a
    table without ``load_energy_usd_per_h`` has no load-dependent energy.

    Parameters
    ----------
    sites : pandas.DataFrame
        Columns ``nodes, open, node_capex_usd_per_h, facility_capex_usd_per_h, power_usd_per_h,
        opex_usd_per_h, fixed_cost_usd_per_h`` and optionally ``load_energy_usd_per_h``.

    Returns
    -------
    CostBreakdown
        The components. [USD/h]
    """
    energy = sites.get("load_energy_usd_per_h", 0.0)  # older tables have no load-dependent energy
    wan = sites.get("wan_usd_per_h", 0.0)  # only plans with cross-metro prefill have it
    return cost_breakdown(
        sites["nodes"].to_numpy(float),
        sites["open"].astype(bool).to_numpy(),
        node_capex_usd_per_h=sites["node_capex_usd_per_h"],
        facility_capex_usd_per_h=sites["facility_capex_usd_per_h"],
        idle_power_usd_per_h=sites["power_usd_per_h"],
        opex_usd_per_h=sites["opex_usd_per_h"],
        site_fixed_usd_per_h=sites["fixed_cost_usd_per_h"],
        load_energy_usd_per_h=energy,
        wan_usd_per_h=wan,
    )
