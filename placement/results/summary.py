"""The headline figures of a plan as typed values, and their ``summary.json`` form.

:class:`PlanSummary` is what :func:`placement.plan.summarise.summarise` returns and what the reports, the
maps, the sweep and the CLI read. Its JSON form (:meth:`PlanSummary.to_json_dict`) is a contract
with users: the keys of ``summary.json`` do not change. :meth:`PlanSummary.from_json_dict` reads
a folder written by this or an older version (figures added later are optional).

Its parts have their own modules: the cost by component (:mod:`placement.results.cost_breakdown`), each
class's figures (:mod:`placement.results.class_summary`) and the single figures a builder computes
(:mod:`placement.results.headline_figures`). The Dinkelbach steps, a rule's price and the arrangement's
comparison are here, as ``summary.json`` holds them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from placement._errors import PlacementError
from placement.economics.cost import HOURS_PER_YEAR
from placement.results.class_summary import ClassSummary
from placement.results.cost_breakdown import CostBreakdown
from placement.results.jsonio import optional_dict, optional_float

__all__ = [
    "ArrangementSummary",
    "DinkelbachStep",
    "PlanSummary",
    "RulePrice",
    "dinkelbach_steps",
]


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
            value_bound_usd_per_h=optional_float(data.get("value_bound_usd_per_h")),
            ratio_bound_usd_per_tok_s=optional_float(data.get("ratio_bound_usd_per_tok_s")),
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


def dinkelbach_steps(records: Iterable[Mapping[str, float]]) -> tuple[DinkelbachStep, ...]:
    """The solver's iteration records as typed steps."""
    return tuple(DinkelbachStep.from_json_dict(r) for r in records)


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
    adequacy : dict or None
        The expected unserved goodput over a year of outages (``placement adequacy``, or a scenario with
        ``fault_tolerance.adequacy``): ``expected_unserved_share``, ``std_error_share``, ``p_year_loss_above_threshold``,
        ``cvar_share`` and the rest of :class:`placement.analyses.adequacy.Adequacy`'s figures; None: not evaluated.
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
    cache_rounds : dict or None
        With ``serving.kv_cache`` miss work: the rounds of the solve to the cache's fixed point
        (:mod:`placement.plan.cache_rounds`): each round's $/h and nodes added, the round kept and the tolerance.
    kv_tier_rounds : dict or None
        With ``serving.kv_cache.tier: auto``: the rounds that chose each free site's tier
        (:mod:`placement.plan.tier_rounds`): each round's $/h and moves, the round kept, each open site's tier.
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
    cache_rounds: dict[str, Any] | None = None
    kv_tier_rounds: dict[str, Any] | None = None
    adequacy: dict[str, Any] | None = None

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
            cost_per_million_goodput_tokens_usd=optional_float(data["cost_per_million_goodput_tokens_usd"]),
            goodput_tok_s=float(data["goodput_tok_s"]),
            demand_tok_s=float(data["demand_tok_s"]),
            tokens_per_s_per_mw=float(data["tokens_per_s_per_mw"]),
            sites_open=int(data["sites_open"]),
            sites_candidate=int(data["sites_candidate"]),
            nodes=int(data["nodes"]),
            mw_used=float(data["mw_used"]),
            p99_ttft_ms_max=optional_float(data["p99_ttft_ms_max"]),
            p99_ttft_ms_mean=optional_float(data["p99_ttft_ms_mean"]),
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
            best_bound_usd_per_h=optional_float(data["best_bound_usd_per_h"]),
            gap=optional_float(data["gap"]),
            runtime_s=float(data["runtime_s"]),
            build_s=float(data["build_s"]),
            cost_breakdown_usd_per_h=None if breakdown is None else CostBreakdown.from_json_dict(breakdown),
            peak_goodput_tok_s=optional_float(data.get("peak_goodput_tok_s")),
            cache_hit_rate=optional_float(data.get("cache_hit_rate")),
            node_kw=optional_float(data.get("node_kw")),
            n_plus_one=bool(data.get("n_plus_one", False)),
            n_plus_one_applied=None if data.get("n_plus_one_applied") is None else bool(data["n_plus_one_applied"]),
            n_plus_one_protected_share=optional_float(data.get("n_plus_one_protected_share")),
            unprotectable_share=optional_float(data.get("unprotectable_share")),
            n_plus_one_unprotected_share=optional_float(data.get("n_plus_one_unprotected_share")),
            fault_domains=optional_dict(data.get("fault_domains")),
            n_plus_one_cost=optional_dict(data.get("n_plus_one_cost")),
            time_slices=int(data.get("time_slices", 1)),
            rtt_quantile=None if data.get("rtt_quantile") is None else str(data["rtt_quantile"]),
            dinkelbach_iterations=tuple(DinkelbachStep.from_json_dict(s) for s in data.get("dinkelbach_iterations") or []),
            stopped_by=None if data.get("stopped_by") is None else str(data["stopped_by"]),
            gap_basis=None if data.get("gap_basis") is None else str(data["gap_basis"]),
            ratio_bound_usd_per_million_tokens=optional_float(data.get("ratio_bound_usd_per_million_tokens")),
            energy_mwh_per_year=optional_float(data.get("energy_mwh_per_year")),
            tco2e_per_year=optional_float(data.get("tco2e_per_year")),
            gco2e_per_million_goodput_tokens=optional_float(data.get("gco2e_per_million_goodput_tokens")),
            carbon_charge_usd_per_h=optional_float(data.get("carbon_charge_usd_per_h")),
            embodied_tco2e_per_year=optional_float(data.get("embodied_tco2e_per_year")),
            water_m3_per_year=optional_float(data.get("water_m3_per_year")),
            water_on_site_m3_per_year=optional_float(data.get("water_on_site_m3_per_year")),
            water_l_per_million_goodput_tokens=optional_float(data.get("water_l_per_million_goodput_tokens")),
            water_charge_usd_per_h=optional_float(data.get("water_charge_usd_per_h")),
            cap_cost=optional_dict(data.get("cap_cost")),
            cache_rounds=optional_dict(data.get("cache_rounds")),
            kv_tier_rounds=optional_dict(data.get("kv_tier_rounds")),
            adequacy=optional_dict(data.get("adequacy")),
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
    "cache_rounds",
    "kv_tier_rounds",
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
    "adequacy",
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
    option_values : dict
        Per option turned on: the plan's $/M and unserved share with that one off (the others on), and what it is
        worth (``worth_usd_per_million_goodput_tokens``: $/M it saves).
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
    option_values: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON block, in field order; ``cross_metro`` and ``kv_tiers_by_site`` only where they apply."""
        optional = ("cross_metro", "kv_tiers_by_site")
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in optional or getattr(self, f.name) is not None
        }


def cap_cost(capped: PlanSummary, uncapped: PlanSummary) -> dict[str, float | None]:
    """What a plan's caps cost against the same model without them: $/M both ways, and $ per tonne and m3 avoided.

    The extra cost a year over the tonnes (cubic metres) avoided; None where the capped plan serves less goodput
    (part of the cut is then demand left unserved, not a dearer way to serve it) or avoids none.
    """
    extra_usd_per_year = (capped.objective_usd_per_h - uncapped.objective_usd_per_h) * HOURS_PER_YEAR
    same_work = capped.goodput_tok_s >= uncapped.goodput_tok_s * (1 - 1e-6)

    def per_avoided(before: float | None, after: float | None) -> float | None:
        avoided = None if before is None or after is None else before - after
        return extra_usd_per_year / avoided if avoided is not None and avoided > 0 and same_work else None

    return {
        "uncapped_usd_per_million_goodput_tokens": uncapped.cost_per_million_goodput_tokens_usd,
        "uncapped_objective_usd_per_h": uncapped.objective_usd_per_h,
        "uncapped_goodput_tok_s": uncapped.goodput_tok_s,
        "uncapped_tco2e_per_year": uncapped.tco2e_per_year,
        "uncapped_water_m3_per_year": uncapped.water_m3_per_year,
        "usd_per_t_avoided": per_avoided(uncapped.tco2e_per_year, capped.tco2e_per_year),
        "usd_per_m3_avoided": per_avoided(uncapped.water_m3_per_year, capped.water_m3_per_year),
    }
