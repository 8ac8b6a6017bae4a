"""The headline figures of a plan as typed values, and their ``summary.json`` form.

:class:`PlanSummary` is what :func:`placement.plan.solve.summarise` returns and what the reports, the
maps, the sweep and the CLI read. Its JSON form (:meth:`PlanSummary.to_json_dict`) is a contract
with users: the keys of ``summary.json`` do not change. :meth:`PlanSummary.from_json_dict` reads
a folder written by this or an older version (figures added later are optional).

The small functions at the end compute single figures from plain values (arrays, tables), so a
builder can call them in named steps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from placement._errors import PlacementError
from placement.economics.cost import cost_per_million_tokens_usd, tokens_per_s_per_mw
from placement.profiles.build import ClassProfile

__all__ = [
    "ArrangementSummary",
    "ClassSummary",
    "CostBreakdown",
    "DinkelbachStep",
    "PlanSummary",
    "RulePrice",
    "cost_breakdown",
    "cost_breakdown_of_site_table",
    "dinkelbach_steps",
    "fault_domain_coverage",
    "finite_or_none",
    "ttft_headlines_ms",
    "weighted_hit_rate",
    "yield_figures",
]


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None when it is missing or not finite (JSON has no NaN)."""
    return None if value is None or not math.isfinite(value) else float(value)


def _optional_dict(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) else None


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


# ----------------------------------------------------------------------------- cost breakdown


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


# ----------------------------------------------------------------------------- per class, per step


@dataclass(frozen=True, kw_only=True)
class ClassSummary:
    """The figures of one workload class (one entry of ``summary.json``'s ``classes``).

    Parameters
    ----------
    name : str
        The class (JSON key ``class``).
    goodput_tok_s : float
        Daily mean goodput served inside the SLO. [tokens/s]
    cost_usd_per_h : float or None
        Its share of the cost: site costs split by node-equivalent usage, plus its own energy. [USD/h]
    cost_per_million_goodput_tokens_usd : float or None
        [USD/Mtok]; None when nothing is served.
    ttft_objective_ms, itl_objective_ms : float or None
        Its p99 objectives. [ms]
    p99_ttft_ms_max : float or None
        Worst p99 TTFT of its assignments. [ms]
    p99_itl_ms : float or None
        p99 inter-token latency a node achieves for it. [ms]
    goodput_tok_s_per_node : float or None
        Per-node goodput inside the objectives. [tokens/s]
    utilisation_cap : float or None
        Share of a node's goodput the plan may use.
    node_queue_ms, node_slot_wait_ms, node_prefill_ms, node_first_decode_ms : float or None
        The node's part of the p99 TTFT (JSON ``node_ttft_ms``: ``queue, slot_wait, prefill, first_decode``). [ms]
    cache_hit_rate : float or None
        Prefix-cache hit rate.
    goodput_from : str or None
        Where the per-node goodput comes from (``scenario`` or ``serving model``).
    serving_load_share : float or None
        Serving-model classes: the share of the node's capacity its goodput uses (1 - tail headroom).
    speculative : str or None
        Serving-model classes: the speculative-decoding method its nodes run (``""``: none).
    gco2e_per_million_goodput_tokens, water_l_per_million_goodput_tokens : float or None
        Its share of the plan's grid emissions and water (each site's split by the node-equivalents each class uses
        there, as its cost is) per million of its goodput tokens; None where unknown or in older folders.
    """

    name: str
    goodput_tok_s: float
    cost_usd_per_h: float | None = None
    cost_per_million_goodput_tokens_usd: float | None = None
    ttft_objective_ms: float | None = None
    p99_ttft_ms_max: float | None = None
    itl_objective_ms: float | None = None
    p99_itl_ms: float | None = None
    goodput_tok_s_per_node: float | None = None
    utilisation_cap: float | None = None
    node_queue_ms: float | None = None
    node_slot_wait_ms: float | None = None
    node_prefill_ms: float | None = None
    node_first_decode_ms: float | None = None
    cache_hit_rate: float | None = None
    goodput_from: str | None = None
    serving_load_share: float | None = None
    speculative: str | None = None
    gco2e_per_million_goodput_tokens: float | None = None
    water_l_per_million_goodput_tokens: float | None = None

    @classmethod
    def of_profile(
        cls, profile: ClassProfile, *, goodput_tok_s: float, cost_usd_per_h: float, p99_ttft_ms_max: float | None
    ) -> ClassSummary:
        """A class's figures from its serving profile and what the plan serves of it.

        Parameters
        ----------
        profile : ClassProfile
            The class's objectives and per-node serving figures.
        goodput_tok_s : float
            Served goodput. [tokens/s]
        cost_usd_per_h : float
            Its share of the cost. [USD/h]
        p99_ttft_ms_max : float or None
            Worst p99 TTFT of its assignments (None without any). [ms]

        Returns
        -------
        ClassSummary
        """
        return cls(
            name=profile.name,
            goodput_tok_s=goodput_tok_s,
            cost_usd_per_h=cost_usd_per_h,
            cost_per_million_goodput_tokens_usd=finite_or_none(float(cost_per_million_tokens_usd(cost_usd_per_h, goodput_tok_s))),
            ttft_objective_ms=profile.ttft_objective_ms,
            p99_ttft_ms_max=p99_ttft_ms_max,
            itl_objective_ms=profile.itl_objective_ms,
            p99_itl_ms=profile.itl_ms,
            goodput_tok_s_per_node=profile.goodput_tok_s_per_node,
            utilisation_cap=profile.utilisation_cap,
            node_queue_ms=profile.queue_ms,
            node_slot_wait_ms=profile.slot_wait_ms,
            node_prefill_ms=profile.prefill_ms,
            node_first_decode_ms=profile.first_decode_ms,
            cache_hit_rate=profile.cache_hit_rate,
            goodput_from=profile.source,
            serving_load_share=profile.serving_load_share,
            speculative=profile.speculative if profile.source != "scenario" else None,
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The ``summary.json`` form (keys as they have always been)."""
        return {
            "class": self.name,
            "goodput_tok_s": self.goodput_tok_s,
            "cost_usd_per_h": self.cost_usd_per_h,
            "cost_per_million_goodput_tokens_usd": self.cost_per_million_goodput_tokens_usd,
            "ttft_objective_ms": self.ttft_objective_ms,
            "p99_ttft_ms_max": self.p99_ttft_ms_max,
            "itl_objective_ms": self.itl_objective_ms,
            "p99_itl_ms": self.p99_itl_ms,
            "goodput_tok_s_per_node": self.goodput_tok_s_per_node,
            "utilisation_cap": self.utilisation_cap,
            "node_ttft_ms": {
                "queue": self.node_queue_ms,
                "slot_wait": self.node_slot_wait_ms,
                "prefill": self.node_prefill_ms,
                "first_decode": self.node_first_decode_ms,
            },
            "cache_hit_rate": self.cache_hit_rate,
            "goodput_from": self.goodput_from,
            "serving_load_share": self.serving_load_share,
            "speculative": self.speculative,
            "gco2e_per_million_goodput_tokens": self.gco2e_per_million_goodput_tokens,
            "water_l_per_million_goodput_tokens": self.water_l_per_million_goodput_tokens,
        }

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> ClassSummary:
        """Read :meth:`to_json_dict`'s form back; figures added after the first version are optional."""
        node = data.get("node_ttft_ms") or {}
        goodput_from = data.get("goodput_from")
        return cls(
            name=str(data["class"]),
            goodput_tok_s=float(data["goodput_tok_s"]),
            cost_usd_per_h=_optional_float(data.get("cost_usd_per_h")),
            cost_per_million_goodput_tokens_usd=_optional_float(data.get("cost_per_million_goodput_tokens_usd")),
            ttft_objective_ms=_optional_float(data.get("ttft_objective_ms")),
            p99_ttft_ms_max=_optional_float(data.get("p99_ttft_ms_max")),
            itl_objective_ms=_optional_float(data.get("itl_objective_ms")),
            p99_itl_ms=_optional_float(data.get("p99_itl_ms")),
            goodput_tok_s_per_node=_optional_float(data.get("goodput_tok_s_per_node")),
            utilisation_cap=_optional_float(data.get("utilisation_cap")),
            node_queue_ms=_optional_float(node.get("queue")),
            node_slot_wait_ms=_optional_float(node.get("slot_wait")),
            node_prefill_ms=_optional_float(node.get("prefill")),
            node_first_decode_ms=_optional_float(node.get("first_decode")),
            cache_hit_rate=_optional_float(data.get("cache_hit_rate")),
            goodput_from=None if goodput_from is None else str(goodput_from),
            serving_load_share=_optional_float(data.get("serving_load_share")),
            speculative=None if data.get("speculative") is None else str(data.get("speculative")),
            gco2e_per_million_goodput_tokens=_optional_float(data.get("gco2e_per_million_goodput_tokens")),
            water_l_per_million_goodput_tokens=_optional_float(data.get("water_l_per_million_goodput_tokens")),
        )


@dataclass(frozen=True)
class DinkelbachStep:
    """One Dinkelbach iteration of an optional-serving plan (``minimise cost - lambda x goodput``).

    Parameters
    ----------
    lambda_usd_per_tok_s : float
        The ratio tried: value of one mean tok/s served. [USD/h per tokens/s]
    cost_usd_per_h : float
        Cost of the design found. [USD/h]
    goodput_tok_s : float
        Goodput it serves. [tokens/s]
    value_usd_per_h : float
        ``cost - lambda x goodput``; zero at the optimal ratio. [USD/h]
    rejected : bool
        The step's design was discarded (a solver failure; the previous design was kept).
    value_bound_usd_per_h : float or None
        The MILP's proven bound on ``cost - lambda x goodput`` (None in folders written before it). [USD/h]
    ratio_bound_usd_per_tok_s : float or None
        Lower bound of the least cost per goodput proven so far (None in folders written before it).
        [USD/h per tokens/s]
    """

    lambda_usd_per_tok_s: float
    cost_usd_per_h: float
    goodput_tok_s: float
    value_usd_per_h: float
    rejected: bool = False
    value_bound_usd_per_h: float | None = None
    ratio_bound_usd_per_tok_s: float | None = None

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> DinkelbachStep:
        """One entry of ``dinkelbach_iterations`` (also the solver's own records)."""
        return cls(
            lambda_usd_per_tok_s=float(data["lambda_usd_per_tok_s"]),
            cost_usd_per_h=float(data["cost_usd_per_h"]),
            goodput_tok_s=float(data["goodput_tok_s"]),
            value_usd_per_h=float(data["value_usd_per_h"]),
            rejected=bool(data.get("rejected", False)),
            value_bound_usd_per_h=_optional_float(data.get("value_bound_usd_per_h")),
            ratio_bound_usd_per_tok_s=_optional_float(data.get("ratio_bound_usd_per_tok_s")),
        )

    def to_json_dict(self) -> dict[str, float]:
        """The ``summary.json`` form; ``rejected: 1.0`` only on a rejected step, as the solver records it."""
        record = {
            "lambda_usd_per_tok_s": self.lambda_usd_per_tok_s,
            "cost_usd_per_h": self.cost_usd_per_h,
            "goodput_tok_s": self.goodput_tok_s,
            "value_usd_per_h": self.value_usd_per_h,
        }
        bounds = {
            "value_bound_usd_per_h": self.value_bound_usd_per_h,
            "ratio_bound_usd_per_tok_s": self.ratio_bound_usd_per_tok_s,
        }
        record |= {key: value for key, value in bounds.items() if value is not None and math.isfinite(value)}
        return record | {"rejected": 1.0} if self.rejected else record


# ----------------------------------------------------------------------------- the plan


@dataclass(frozen=True, kw_only=True)
class PlanSummary:
    """Headline figures of a plan.

    Every field is a ``summary.json`` key of the same name, with the same value.

    Parameters
    ----------
    scenario : str
        Scenario name.
    status : str
        ``optimal``, ``feasible`` (time limit, gap stated) or ``partial`` (some demand unserved).
    objective_usd_per_h : float
        Cost of the design (the MILP's cost terms; see :class:`CostBreakdown`). [USD/h]
    cost_per_million_goodput_tokens_usd : float or None
        The product's number; None when nothing is served. [USD/Mtok]
    goodput_tok_s : float
        Daily mean goodput served inside the SLO. [tokens/s]
    demand_tok_s : float
        Daily mean demand. [tokens/s]
    tokens_per_s_per_mw : float
        Facility yield. [tokens/s/MW]
    sites_open, sites_candidate, nodes : int
        Counts.
    mw_used : float
        Facility power of the nodes, PUE included. [MW]
    p99_ttft_ms_max, p99_ttft_ms_mean : float or None
        Worst and demand-weighted mean p99 TTFT of interactive assignments. [ms]
    p99_itl_ms : float
        p99 inter-token latency of the slowest interactive class. [ms]
    fault_domain_coverage : float
        Share of demand with a second open site inside its budget.
    unserved_share : float
        Share of demand not served.
    populations, cities, feasible_pairs : int
        Size of the instance.
    classes : tuple of ClassSummary
        Per workload class.
    solver, solver_status, solver_message : str
        The (last) MILP solve.
    best_bound_usd_per_h, gap : float or None
        The proven lower bound [USD/h] and relative gap, of the model ``gap_basis`` names. With demand left
        unserved (``partial``): the bound of the cost among plans serving as much. With optional serving: the
        ratio bound times the plan's goodput (no plan serving as much costs less), and the ratio's gap.
    stopped_by : str or None
        Which limit ended the solve: ``gap``, ``node_limit`` or ``iteration_limit`` (reached after the same work
        on any machine), ``time_limit`` (the wall-clock safety net: the answer may depend on the machine),
        ``infeasible`` or ``other``; None in folders written before it was recorded.
    runtime_s, build_s : float
        Solve and instance-building time. [s]
    cost_breakdown_usd_per_h : CostBreakdown or None
        Cost by component, adding up to ``objective_usd_per_h`` (None in folders written before it).
    peak_goodput_tok_s : float or None
        Sum over assignments of their peak-slice goodput. [tokens/s]
    cache_hit_rate : float or None
        Prefix-cache hit rate weighted by served goodput; None: not modelled.
    node_kw : float or None
        IT power of one node. [kW]
    n_plus_one : bool
        Whether N+1 fault tolerance was required.
    n_plus_one_applied : bool or None
        Whether the plan keeps it: False when the scenario asked for N+1 and no protected design was found in
        the time limit; None in folders written before it was recorded.
    n_plus_one_protected_share : float or None
        N+1 plans: share of served goodput re-routed in full inside its objective on every loss.
    unprotectable_share : float or None
        N+1 plans: share of served goodput with a single site in reach, or all its sites in one fault domain (some
        loss of it cannot be covered).
    n_plus_one_unprotected_share : float or None
        N+1 plans: share of served goodput some loss leaves without a backup for want of spare power in reach.
    fault_domains : dict or None
        N+1 plans with ``fault_tolerance.domains``: ``{"grouping": str, "domains": {name: [site ids]}}``.
    n_plus_one_cost : dict or None
        N+1 plans: the plan with and without N+1 (``usd_per_h_with``, ``usd_per_m_with``, ``..._without``,
        ``extra_nodes``, ``extra_mw``, ``standby_sites``, ``classes: {name: {usd_per_m_with, usd_per_m_without}}``).
    time_slices : int
        Number of time slices.
    rtt_quantile : str or None
        The round trip the TTFT budgets used (``latency.quantile``: ``p50`` or ``p90``; the great-circle
        model's two are equal); None in folders written before it was recorded.
    dinkelbach_iterations : tuple of DinkelbachStep
        Optional serving only.
    gap_basis : str or None
        The model the bound and gap are of: ``full_resolution`` (every city its own population, every pair and
        slice) or ``aggregated`` (the clustered populations, each taking its worst member's round trip); None in
        folders written before it.
    ratio_bound_usd_per_million_tokens : float or None
        Optional serving: the proven lower bound of the cost per million goodput tokens (None otherwise).
    energy_mwh_per_year, tco2e_per_year : float or None
        Electricity the open sites draw in a year, PUE included [MWh], and the grid emissions it causes [tCO2e]
        (:mod:`placement.economics.footprint`); None in folders written before they were recorded.
    gco2e_per_million_goodput_tokens : float or None
        Emissions per million goodput tokens [gCO2e] (None without goodput, or in older folders).
    carbon_charge_usd_per_h : float or None
        With ``objective.carbon_usd_per_t``: what the carbon price adds to the cost (inside idle power and load
        energy: it is a charge on each MWh by the hour's intensity) [USD/h]; None without a price.
    embodied_tco2e_per_year : float or None
        Embodied carbon of the plan's nodes (serving and cache warm-up), amortised over ``economics.node_life_years``
        (an A100-era estimate per server and GPU, ``data/energy/embodied_carbon.csv``); not in ``tco2e_per_year`` (grid
        emissions), nor in the carbon price and caps [tCO2e]; None in older folders.
    water_m3_per_year : float or None
        Water the plan consumes in a year, on site (cooling) and by the grid's generation [m3]
        (:mod:`placement.rules.resources`); None where an open site's water is unknown, or in older folders.
    water_on_site_m3_per_year : float or None
        Of it, what the sites' cooling evaporates [m3].
    water_l_per_million_goodput_tokens : float or None
        Water per million goodput tokens [L].
    water_charge_usd_per_h : float or None
        With ``objective.water_usd_per_m3``: what the water price adds to the cost [USD/h]; None without a price.
    cap_cost : dict or None
        With carbon or water caps: the same model solved without them (``uncapped_*``: $/M, $/h, goodput, tCO2e, m3)
        and ``usd_per_t_avoided``, ``usd_per_m3_avoided`` (:func:`placement.plan.solve.cap_cost`); None without caps.
    """

    scenario: str
    status: str
    objective_usd_per_h: float
    cost_per_million_goodput_tokens_usd: float | None
    goodput_tok_s: float
    demand_tok_s: float
    tokens_per_s_per_mw: float
    sites_open: int
    sites_candidate: int
    nodes: int
    mw_used: float
    p99_ttft_ms_max: float | None
    p99_ttft_ms_mean: float | None
    p99_itl_ms: float
    fault_domain_coverage: float
    unserved_share: float
    populations: int
    cities: int
    feasible_pairs: int
    classes: tuple[ClassSummary, ...]
    solver: str
    solver_status: str
    solver_message: str
    best_bound_usd_per_h: float | None
    gap: float | None
    runtime_s: float
    build_s: float
    cost_breakdown_usd_per_h: CostBreakdown | None = None
    peak_goodput_tok_s: float | None = None
    cache_hit_rate: float | None = None
    node_kw: float | None = None
    n_plus_one: bool = False
    n_plus_one_applied: bool | None = None
    n_plus_one_protected_share: float | None = None
    unprotectable_share: float | None = None
    n_plus_one_unprotected_share: float | None = None
    fault_domains: dict[str, Any] | None = None
    n_plus_one_cost: dict[str, Any] | None = None
    time_slices: int = 1
    rtt_quantile: str | None = None
    dinkelbach_iterations: tuple[DinkelbachStep, ...] = field(default_factory=tuple)
    stopped_by: str | None = None
    gap_basis: str | None = None
    ratio_bound_usd_per_million_tokens: float | None = None
    energy_mwh_per_year: float | None = None
    tco2e_per_year: float | None = None
    gco2e_per_million_goodput_tokens: float | None = None
    carbon_charge_usd_per_h: float | None = None
    embodied_tco2e_per_year: float | None = None
    water_m3_per_year: float | None = None
    water_on_site_m3_per_year: float | None = None
    water_l_per_million_goodput_tokens: float | None = None
    water_charge_usd_per_h: float | None = None
    cap_cost: dict[str, Any] | None = None

    def class_named(self, name: str) -> ClassSummary:
        """The figures of one class, by name."""
        for klass in self.classes:
            if klass.name == name:
                return klass
        raise KeyError(f"no class '{name}' in the plan; its classes are {', '.join(c.name for c in self.classes)}")

    def to_json_dict(self) -> dict[str, Any]:
        """The ``summary.json`` figures (``notes`` and ``scenario_path`` are the writer's)."""
        values = {name: getattr(self, name) for name in JSON_ORDER}
        breakdown = self.cost_breakdown_usd_per_h
        values["cost_breakdown_usd_per_h"] = None if breakdown is None else breakdown.to_json_dict()
        values["classes"] = [c.to_json_dict() for c in self.classes]
        values["dinkelbach_iterations"] = [step.to_json_dict() for step in self.dinkelbach_iterations]
        return values

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> PlanSummary:
        """Read a ``summary.json``, also one written before the newer figures existed.

        Parameters
        ----------
        data : mapping
            The parsed file (extra keys such as ``notes`` are ignored).

        Returns
        -------
        PlanSummary

        Raises
        ------
        PlacementError
            If a figure every version has written is missing.
        """
        missing = [name for name in REQUIRED_KEYS if name not in data]
        if missing:
            raise PlacementError(f"summary.json lacks {', '.join(missing)}: it was not written by 'cli.py solve'; solve again")
        breakdown = data.get("cost_breakdown_usd_per_h")
        return cls(
            scenario=str(data["scenario"]),
            status=str(data["status"]),
            objective_usd_per_h=float(data["objective_usd_per_h"]),
            cost_per_million_goodput_tokens_usd=_optional_float(data["cost_per_million_goodput_tokens_usd"]),
            goodput_tok_s=float(data["goodput_tok_s"]),
            demand_tok_s=float(data["demand_tok_s"]),
            tokens_per_s_per_mw=float(data["tokens_per_s_per_mw"]),
            sites_open=int(data["sites_open"]),
            sites_candidate=int(data["sites_candidate"]),
            nodes=int(data["nodes"]),
            mw_used=float(data["mw_used"]),
            p99_ttft_ms_max=_optional_float(data["p99_ttft_ms_max"]),
            p99_ttft_ms_mean=_optional_float(data["p99_ttft_ms_mean"]),
            p99_itl_ms=float(data["p99_itl_ms"]),
            fault_domain_coverage=float(data["fault_domain_coverage"]),
            unserved_share=float(data["unserved_share"]),
            populations=int(data["populations"]),
            cities=int(data["cities"]),
            feasible_pairs=int(data["feasible_pairs"]),
            classes=tuple(ClassSummary.from_json_dict(c) for c in data["classes"]),
            solver=str(data["solver"]),
            solver_status=str(data["solver_status"]),
            solver_message=str(data["solver_message"]),
            best_bound_usd_per_h=_optional_float(data["best_bound_usd_per_h"]),
            gap=_optional_float(data["gap"]),
            runtime_s=float(data["runtime_s"]),
            build_s=float(data["build_s"]),
            cost_breakdown_usd_per_h=None if breakdown is None else CostBreakdown.from_json_dict(breakdown),
            peak_goodput_tok_s=_optional_float(data.get("peak_goodput_tok_s")),
            cache_hit_rate=_optional_float(data.get("cache_hit_rate")),
            node_kw=_optional_float(data.get("node_kw")),
            n_plus_one=bool(data.get("n_plus_one", False)),
            n_plus_one_applied=None if data.get("n_plus_one_applied") is None else bool(data["n_plus_one_applied"]),
            n_plus_one_protected_share=_optional_float(data.get("n_plus_one_protected_share")),
            unprotectable_share=_optional_float(data.get("unprotectable_share")),
            n_plus_one_unprotected_share=_optional_float(data.get("n_plus_one_unprotected_share")),
            fault_domains=_optional_dict(data.get("fault_domains")),
            n_plus_one_cost=_optional_dict(data.get("n_plus_one_cost")),
            time_slices=int(data.get("time_slices", 1)),
            rtt_quantile=None if data.get("rtt_quantile") is None else str(data["rtt_quantile"]),
            dinkelbach_iterations=tuple(DinkelbachStep.from_json_dict(s) for s in data.get("dinkelbach_iterations") or []),
            stopped_by=None if data.get("stopped_by") is None else str(data["stopped_by"]),
            gap_basis=None if data.get("gap_basis") is None else str(data["gap_basis"]),
            ratio_bound_usd_per_million_tokens=_optional_float(data.get("ratio_bound_usd_per_million_tokens")),
            energy_mwh_per_year=_optional_float(data.get("energy_mwh_per_year")),
            tco2e_per_year=_optional_float(data.get("tco2e_per_year")),
            gco2e_per_million_goodput_tokens=_optional_float(data.get("gco2e_per_million_goodput_tokens")),
            carbon_charge_usd_per_h=_optional_float(data.get("carbon_charge_usd_per_h")),
            embodied_tco2e_per_year=_optional_float(data.get("embodied_tco2e_per_year")),
            water_m3_per_year=_optional_float(data.get("water_m3_per_year")),
            water_on_site_m3_per_year=_optional_float(data.get("water_on_site_m3_per_year")),
            water_l_per_million_goodput_tokens=_optional_float(data.get("water_l_per_million_goodput_tokens")),
            water_charge_usd_per_h=_optional_float(data.get("water_charge_usd_per_h")),
            cap_cost=_optional_dict(data.get("cap_cost")),
        )


JSON_ORDER = (
    "scenario",
    "status",
    "objective_usd_per_h",
    "cost_breakdown_usd_per_h",
    "cost_per_million_goodput_tokens_usd",
    "goodput_tok_s",
    "peak_goodput_tok_s",
    "demand_tok_s",
    "tokens_per_s_per_mw",
    "energy_mwh_per_year",
    "tco2e_per_year",
    "gco2e_per_million_goodput_tokens",
    "carbon_charge_usd_per_h",
    "embodied_tco2e_per_year",
    "water_m3_per_year",
    "water_on_site_m3_per_year",
    "water_l_per_million_goodput_tokens",
    "water_charge_usd_per_h",
    "cap_cost",
    "sites_open",
    "sites_candidate",
    "nodes",
    "mw_used",
    "p99_ttft_ms_max",
    "p99_ttft_ms_mean",
    "p99_itl_ms",
    "cache_hit_rate",
    "node_kw",
    "fault_domain_coverage",
    "n_plus_one",
    "n_plus_one_applied",
    "n_plus_one_protected_share",
    "unprotectable_share",
    "n_plus_one_unprotected_share",
    "fault_domains",
    "n_plus_one_cost",
    "unserved_share",
    "time_slices",
    "rtt_quantile",
    "populations",
    "cities",
    "feasible_pairs",
    "classes",
    "dinkelbach_iterations",
    "solver",
    "solver_status",
    "solver_message",
    "best_bound_usd_per_h",
    "gap",
    "gap_basis",
    "ratio_bound_usd_per_million_tokens",
    "stopped_by",
    "runtime_s",
    "build_s",
)
"""The keys of ``summary.json``'s figures, in the order they are written."""

REQUIRED_KEYS = tuple(f.name for f in fields(PlanSummary) if f.default is MISSING and f.default_factory is MISSING)
"""Keys every version of ``summary.json`` has held; the others were added later."""


# ----------------------------------------------------------------------------- single figures


def ttft_headlines_ms(ttft_p99_ms: ArrayLike, goodput_tok_s: ArrayLike) -> tuple[float | None, float | None]:
    """Worst and goodput-weighted mean p99 TTFT of a set of assignments.

    Parameters
    ----------
    ttft_p99_ms : array_like
        p99 TTFT of each assignment. [ms]
    goodput_tok_s : array_like
        Goodput each carries (the weights). [tokens/s]

    Returns
    -------
    tuple of float or None
        ``(max, mean)``; None where there is nothing to measure. [ms]
    """
    ttft = np.asarray(ttft_p99_ms, dtype=float)
    weights = np.asarray(goodput_tok_s, dtype=float)
    worst = finite_or_none(float(ttft.max())) if len(ttft) else None
    mean = finite_or_none(float(np.average(ttft, weights=weights))) if weights.sum() > 0 else None
    return worst, mean


def fault_domain_coverage(open_sites_allowed: ArrayLike, demand_tok_s: ArrayLike) -> float:
    """Share of demand that keeps a second open site inside its budget.

    Parameters
    ----------
    open_sites_allowed : array_like of int
        ``(c,)`` open sites each commodity may be served by.
    demand_tok_s : array_like
        ``(c,)`` daily mean demand. [tokens/s]

    Returns
    -------
    float
        Between 0 and 1 (0 without demand).
    """
    demand = np.asarray(demand_tok_s, dtype=float)
    total = float(demand.sum())
    reachable = np.asarray(open_sites_allowed)
    return float(demand[reachable >= 2].sum() / total) if total > 0 else 0.0


def weighted_hit_rate(served_tok_s: Mapping[str, float], hit_rate: Mapping[str, float]) -> float:
    """Prefix-cache hit rate weighted by each class's served goodput.

    Parameters
    ----------
    served_tok_s : mapping of str to float
        Served goodput by class. [tokens/s]
    hit_rate : mapping of str to float
        Hit rate by class.

    Returns
    -------
    float
        0 when nothing is served.
    """
    total = float(sum(served_tok_s.values()))
    return float(sum(hit_rate[name] * value for name, value in served_tok_s.items()) / total) if total > 0 else 0.0


def yield_figures(
    objective_usd_per_h: float, goodput_tok_s: float, demand_tok_s: float, mw_used: float
) -> tuple[float | None, float, float]:
    """Cost per million goodput tokens, tokens/s per MW and unserved share.

    Parameters
    ----------
    objective_usd_per_h : float
        Cost. [USD/h]
    goodput_tok_s, demand_tok_s : float
        Served and demanded daily mean. [tokens/s]
    mw_used : float
        Facility power. [MW]

    Returns
    -------
    tuple
        ``($/M goodput or None, tokens/s per MW, unserved share)``.
    """
    cost = finite_or_none(float(cost_per_million_tokens_usd(objective_usd_per_h, goodput_tok_s)))
    unserved = max(0.0, 1.0 - goodput_tok_s / demand_tok_s) if demand_tok_s > 0 else 0.0
    return cost, float(tokens_per_s_per_mw(goodput_tok_s, mw_used)), unserved


def dinkelbach_steps(records: Iterable[Mapping[str, float]]) -> tuple[DinkelbachStep, ...]:
    """The solver's iteration records as typed steps."""
    return tuple(DinkelbachStep.from_json_dict(r) for r in records)


@dataclass(frozen=True, kw_only=True)
class RulePrice:
    """What one residency rule costs the whole plan: the plan with it against the plan solved without it.

    Parameters
    ----------
    rule_id, text : str
        The rule and its wording.
    usd_per_m_with, usd_per_m_without : float or None
        $/M goodput with the rule and without it (None: no goodput served). [USD per million tokens]
    mw_with, mw_without : float
        MW used. [MW]
    sites_open_with, sites_open_without : int
        Sites open.
    unserved_share_with, unserved_share_without : float
        Share of demand left unserved.
    """

    rule_id: str
    text: str
    usd_per_m_with: float | None
    usd_per_m_without: float | None
    mw_with: float
    mw_without: float
    sites_open_with: int
    sites_open_without: int
    unserved_share_with: float
    unserved_share_without: float

    def to_json_dict(self) -> dict[str, Any]:
        """``summary.json``'s entry under ``rule_prices``: the fields in order."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class ArrangementSummary:
    """The plan against the same world solved with the fixed arrangement: ``summary.json``'s ``arrangement``.

    Parameters
    ----------
    options : dict
        The arrangement options the scenario turns on.
    fixed_arrangement : dict
        What the fixed arrangement is (aggregated, no speculation, the HBM tier, one node a pool).
    unserved_share, unserved_share_fixed_arrangement : float
        Share of demand unserved in the plan and in the fixed arrangement's.
    usd_per_million_goodput_tokens, usd_per_million_goodput_tokens_fixed_arrangement : float or None
        $/M goodput of both (None: nothing served). [USD per million tokens]
    classes : dict
        Per class: its mode, goodput per node and $/M both ways, cache and budget figures, waterfall steps.
    modes_by_site, mode_reasons : dict
        Each open site's mode per class, and why.
    cross_metro : dict or None
        Cross-metro prefill's figures, when a pair uses it.
    hit_rates_by_site : dict
        Each open site's prefix-cache hit rate per class.
    cache_warmup_nodes_per_site : int or dict
        Cold-cache nodes per open site (one figure when every site's tier holds the same).
    kv_tiers_by_site : dict or None
        Each open site's KV tier, when sites differ.
    """

    options: dict[str, Any]
    fixed_arrangement: dict[str, Any]
    unserved_share: float
    unserved_share_fixed_arrangement: float
    usd_per_million_goodput_tokens: float | None
    usd_per_million_goodput_tokens_fixed_arrangement: float | None
    classes: dict[str, dict[str, Any]]
    modes_by_site: dict[str, Any]
    mode_reasons: dict[str, Any]
    cross_metro: dict[str, Any] | None = None
    hit_rates_by_site: dict[str, Any]
    cache_warmup_nodes_per_site: int | dict[str, int]
    kv_tiers_by_site: dict[str, str] | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON block, in field order; ``cross_metro`` and ``kv_tiers_by_site`` only where they apply."""
        optional = ("cross_metro", "kv_tiers_by_site")
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in optional or getattr(self, f.name) is not None
        }
