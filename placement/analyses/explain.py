"""Why each site is in or out of a plan, and what would pay: marginal values, drop costs, entry prices.

Every figure comes from the plan's LP with the design fixed: the other sites stay open or closed as in
the plan, node counts are continuous and demand the design cannot serve stays unserved at the least
possible share, so each figure is one site's own contribution at the same service. One LP gives the
value of one more MW at every site (the dual of its power row: "not binding" where it is zero); each
what-if (a site dropped, a site forced open, 10 MW more where a MW is worth most) changes a few bounds and
re-solves from the previous basis, milliseconds each on the array LP
(:class:`placement.optimize.ranging.FixedDesignLP`). A plan with N+1 rows falls back to PuLP re-solves
(:func:`placement.optimize.whatif.fixed_design_lp` picks).

"What would pay" gathers the answers a planner acts on: where more MW saves most, the closed sites
nearest to entering (at what power price, or how many ms too far), and the unserved populations with
the cheapest site that reaches them.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import PlacementError
from placement.analyses.rule_binds import rule_binds
from placement.economics.cost import HOURS_PER_YEAR
from placement.instance.build import build_instance
from placement.instance.record import Instance
from placement.optimize.problem import PlacementInput
from placement.optimize.ranging import Resolve
from placement.optimize.solver import SolverOptions
from placement.optimize.whatif import WhatIfs, fixed_design_lp
from placement.plan.cache_rounds import with_charges
from placement.results.folder import ResultsFolder, read_results_folder, read_summary
from placement.scenario.load import load_scenario

EXTRA_MW = 10.0
"""The block of power the "what would pay" section adds where one more MW is worth most. [MW]"""
TOP = 3
"""Sites listed in each "what would pay" answer."""
UNSERVED_LISTED = 5
"""Unserved (population, class) pairs listed, largest first, of each kind (short of power, out of reach)."""


# ----------------------------------------------------------------------------- explaining sites


@dataclass(frozen=True)
class _PlanContext:
    """What every site's explanation reads: the plan, the instance's arrays and the base LP."""

    instance: Instance
    is_open: NDArray[np.bool_]
    base_cost_usd_per_h: float
    mw_value_usd_per_h: NDArray[np.float64]
    unserved_share: NDArray[np.float64]
    sites: pd.DataFrame

    @property
    def population_names(self) -> NDArray[np.object_]:
        """Population name of each commodity."""
        names = self.instance.populations.table["name"].to_numpy()
        return np.asarray(names[self.instance.commodity_population], dtype=object)

    def mw_used(self, j: int) -> float:
        """MW the plan uses at site ``j`` (its ``sites.csv``; nodes x node MW in an older folder). [MW]"""
        if "mw_used" in self.sites:
            return float(self.sites["mw_used"].iloc[j])
        return float(self.sites["nodes"].iloc[j]) * float(self.instance.inputs.site_node_mw[j])


def _default_options(instance: Instance) -> SolverOptions:
    """The scenario's solver, at most 10 s and a tight gap per re-solve (the PuLP fallback's)."""
    solver = instance.facts.solver
    limit = min(solver.time_limit_s or 10.0, 10.0)
    return SolverOptions(name=solver.name, time_limit_s=limit, gap=1e-6, threads=solver.threads)


def _power(ctx: _PlanContext, j: int) -> dict[str, Any]:
    """Power used / available and, when it binds, what one more MW saves."""
    used, available = ctx.mw_used(j), float(ctx.instance.inputs.site_mw_available[j])
    value = float(ctx.mw_value_usd_per_h[j])
    return {
        "mw_used": used,
        "mw_available": available,
        "power_full": bool(used > available - float(ctx.instance.inputs.site_node_mw[j])),
        "power_binding": bool(value > 0),
        "value_of_one_more_mw_usd_per_h": value,
    }


def _open_site(ctx: _PlanContext, j: int, dropped: Resolve) -> dict[str, Any]:
    """An open site: its share, its power, who only it serves, the cost of dropping it."""
    allowed = ctx.instance.allowed
    open_reach = allowed.and_columns(ctx.is_open)
    names = ctx.population_names
    sole_open = np.flatnonzero(open_reach.column(j) & (open_reach.count_by_row() == 1))
    sole_any = np.flatnonzero(allowed.column(j) & (allowed.count_by_row() == 1))
    droppable = not math.isinf(dropped.cost_usd_per_h)
    return {
        "nodes": int(ctx.sites["nodes"].iloc[j]),
        "goodput_share": float(ctx.sites["goodput_share"].iloc[j]),
        **_power(ctx, j),
        "populations_only_it_serves_among_open_sites": sorted({str(n) for n in names[sole_open]}),
        "populations_only_it_can_serve": sorted({str(n) for n in names[sole_any]}),
        "cost_of_dropping_usd_per_h": dropped.cost_usd_per_h - ctx.base_cost_usd_per_h if droppable else None,
        "droppable": droppable,
    }


NEWTON_STEPS = 12
"""Most re-solves spent on one entry power price (the cost is piecewise linear: a few suffice)."""


def _cost_at_price(ctx: _PlanContext, lp: WhatIfs, j: int, factor: float) -> Resolve:
    """The plan with closed site ``j`` forced open and its power price multiplied by ``factor``."""
    power = float(ctx.instance.node_cost.power_usd_per_h[j])
    node = float(ctx.instance.inputs.site_node_usd_per_h[j]) - power * (1.0 - factor)
    return lp.resolve_open_repriced(j, node_usd_per_h=node, pair_cost_scale=factor)


def entry_power_price_usd_per_mwh(ctx: _PlanContext, lp: WhatIfs, j: int) -> float | None:
    """The power price below which forcing closed site ``j`` open lowers the plan's cost. [USD/MWh]

    The cost of the plan with ``j`` open is a concave, piecewise-linear function of the site's power price
    (idle power in its node cost, load energy on its pairs), whose slope is the site's power bill at that
    price. Newton steps from free power approach the price where it meets the plan's cost from below,
    each a re-solve, exact once on the last linear piece. None when it would not pay even with free power.
    """
    price = float(ctx.instance.sites["power_price_usd_per_mwh"].to_numpy(float)[j])
    power_per_node = float(ctx.instance.node_cost.power_usd_per_h[j])
    factor = 0.0
    for _ in range(NEWTON_STEPS):
        opened = _cost_at_price(ctx, lp, j, factor)
        margin = ctx.base_cost_usd_per_h - opened.cost_usd_per_h
        if factor == 0.0 and margin <= 0:
            return None
        slope = power_per_node * opened.nodes + opened.load_cost_usd_per_h  # d cost / d factor [USD/h]
        if margin < 1e-6 * ctx.base_cost_usd_per_h or slope <= 0:
            break
        factor = min(factor + margin / slope, 1.0)
    return factor * price


def _entry_price(ctx: _PlanContext, lp: WhatIfs, j: int, extra: float, nodes: float) -> dict[str, Any]:
    """A rejected site that costs ``extra`` $/h to open: the power price at which it would enter."""
    price = float(ctx.instance.sites["power_price_usd_per_mwh"].to_numpy(float)[j])
    entry = entry_power_price_usd_per_mwh(ctx, lp, j)
    why = (
        f"opening it costs ${extra:,.0f}/h more; it would enter at a power price below ${entry:,.1f}/MWh (now ${price:,.1f})"
        if entry is not None
        else f"opening it costs ${extra:,.0f}/h more: no traffic would pay its fixed cost even with free power"
    )
    return {
        "extra_cost_if_opened_usd_per_h": extra,
        "nodes_if_opened": math.ceil(nodes - 1e-9),
        "mw_if_opened": nodes * float(ctx.instance.inputs.site_node_mw[j]),
        "power_price_usd_per_mwh": price,
        "entry_power_price_usd_per_mwh": entry,
        "why": why,
    }


def _latency_gap(ctx: _PlanContext, j: int) -> dict[str, Any]:
    """A site no population can use inside its objective: the one it misses by least, and by how much. [ms]"""
    instance = ctx.instance
    objective = np.array([p.ttft_objective_ms for p in instance.profiles])[instance.commodity_class]
    every = np.arange(len(instance.commodity_class))
    over = instance.ttft_ms(every, np.full(len(every), j)) - objective
    c = int(np.argmin(over))
    population = instance.populations.table.iloc[int(instance.commodity_population[c])]
    name, cls = str(population["name"]), instance.profiles[int(instance.commodity_class[c])].name
    return {
        "why": f"no population within its latency budget: the nearest, {name} ({cls}), is {over[c]:.1f} ms over its objective",
        "ms_over_objective": float(over[c]),
        "nearest_population": name,
        "nearest_class": cls,
    }


def _closed_site(ctx: _PlanContext, lp: WhatIfs, j: int, forced: Resolve | None) -> dict[str, Any]:
    """A rejected site: why it cannot serve anyone, or what opening it would cost and when it would pay."""
    instance = ctx.instance
    first_mw = {"value_of_first_mw_usd_per_h": float(ctx.mw_value_usd_per_h[j])}
    if not instance.within_budget.column(j).any():
        return _latency_gap(ctx, j) | first_mw
    if not instance.allowed.column(j).any() or forced is None:
        return {"why": "residency rules or missing power bar every population within its budget"} | first_mw
    if math.isinf(forced.cost_usd_per_h):
        return {"why": "forcing it open makes the scenario infeasible"} | first_mw
    extra = forced.cost_usd_per_h - ctx.base_cost_usd_per_h
    if extra <= 0:
        return {
            "extra_cost_if_opened_usd_per_h": extra,
            "nodes_if_opened": math.ceil(forced.nodes - 1e-9),
            "why": f"adding it to the plan would save ${-extra:,.0f}/h: the plan is within its solver gap",
        } | first_mw
    return _entry_price(ctx, lp, j, extra, forced.nodes) | first_mw


# ----------------------------------------------------------------------------- what would pay


def _more_power(ctx: _PlanContext, lp: WhatIfs, sites: pd.DataFrame) -> list[dict[str, Any]]:
    """The open sites where one more MW saves most, with what :data:`EXTRA_MW` more would save."""
    values = np.where(ctx.is_open, np.nan_to_num(ctx.mw_value_usd_per_h), 0.0)
    picks = [int(j) for j in np.argsort(-values, kind="stable")[:TOP] if values[j] > 0]
    answers = []
    for j in picks:
        saved = ctx.base_cost_usd_per_h - lp.resolve_more_power(j, EXTRA_MW)
        answers.append(
            {
                "site_id": str(sites["site_id"].iloc[j]),
                "name": str(sites["name"].iloc[j]),
                "mw_used": ctx.mw_used(j),
                "mw_available": float(ctx.instance.inputs.site_mw_available[j]),
                "value_of_one_more_mw_usd_per_h": float(values[j]),
                "extra_mw": EXTRA_MW,
                "saving_usd_per_h": saved if math.isfinite(saved) else None,
            }
        )
    return answers


def _nearest_to_entering(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Closed sites by what opening them costs (cheapest first), then those only latency keeps out."""
    closed = [r for r in records if not r["open"]]
    priced = sorted(
        (r for r in closed if "extra_cost_if_opened_usd_per_h" in r), key=lambda r: r["extra_cost_if_opened_usd_per_h"]
    )
    priced.sort(key=lambda r: -(r.get("entry_power_price_usd_per_mwh") or -1.0) / max(r["power_price_usd_per_mwh"], 1e-9))
    far = sorted((r for r in closed if "ms_over_objective" in r), key=lambda r: r["ms_over_objective"])
    keys = (
        "site_id", "name", "extra_cost_if_opened_usd_per_h", "power_price_usd_per_mwh", "entry_power_price_usd_per_mwh",
        "ms_over_objective", "nearest_population", "nearest_class",
    )  # fmt: skip
    return [{k: r[k] for k in keys if k in r} for r in priced[:TOP] + far[:TOP]]


def _pair_usd_per_m(data: PlacementInput, pairs: NDArray[np.int64]) -> NDArray[np.float64]:
    """Cost of serving a pair's commodity from its site, nodes sized for its peak. [USD per million tokens]"""
    c = data.pair_commodity[pairs]
    nodes = data.pair_nodes_per_tok_s[pairs] * data.peak_demand_tok_s[c]
    usd_per_h = nodes * data.site_node_usd_per_h[data.pair_site[pairs]] + data.pair_cost_usd_per_h[pairs]
    return np.asarray(usd_per_h / np.maximum(data.mean_demand_tok_s[c], 1e-12) / 3600.0 * 1e6)


def _reach(ctx: _PlanContext, c: int) -> dict[str, Any]:
    """The cheapest site that reaches commodity ``c`` inside its budget, or why none does."""
    instance, data = ctx.instance, ctx.instance.inputs
    row = int(instance.row_of_commodity[c])
    if row < 0:
        barred = instance.within_budget.row(c) & ~instance.allowed.row(c)
        if barred.any():
            names = ", ".join(str(n) for n in instance.sites["name"].to_numpy()[barred][:3])
            return {"cheapest_site": None, "why": f"residency bars the sites inside its budget ({names})"}
        return {"cheapest_site": None, "why": _latency_gap_of(ctx, c)}
    pairs = np.flatnonzero(data.pair_commodity == row)
    cost = _pair_usd_per_m(data, pairs)
    best = int(pairs[int(np.argmin(cost))])
    j = int(data.pair_site[best])
    name = str(instance.sites["name"].iloc[j])
    state = "open, its power spoken for" if ctx.is_open[j] else "closed"
    per_mw = 1.0 / (float(data.site_node_mw[j]) * float(data.pair_nodes_per_tok_s[best]))
    return {
        "cheapest_site": name,
        "cheapest_site_usd_per_million_tokens": float(cost.min()),
        "why": f"{name} ({state}) at about ${cost.min():.3f}/M goodput; each MW there serves about {per_mw:,.0f} tok/s of it",
    }


def _latency_gap_of(ctx: _PlanContext, c: int) -> str:
    """Why no site reaches commodity ``c``: its nearest site and how far over the objective it is."""
    instance = ctx.instance
    objective = instance.profiles[int(instance.commodity_class[c])].ttft_objective_ms
    ttft_ms = instance.ttft_ms(c)
    j = int(np.argmin(ttft_ms))
    return (
        f"no candidate site inside its TTFT objective: the nearest, {instance.sites['name'].iloc[j]}, "
        f"is {ttft_ms[j] - objective:.1f} ms over"
    )


def _unserved(ctx: _PlanContext, *, reachable: bool) -> list[dict[str, Any]]:
    """The largest unserved (population, class) pairs and the cheapest site that would reach them.

    ``reachable``: the pairs some site reaches inside their objective (short of power), else those none does.
    """
    instance = ctx.instance
    rows = instance.row_of_commodity
    share = np.where(rows >= 0, ctx.unserved_share[np.maximum(rows, 0)], 1.0)
    unserved = np.where((rows >= 0) == reachable, share * instance.commodity_mean_demand_tok_s, 0.0)
    table = instance.populations.table
    answers = []
    for c in np.argsort(-unserved, kind="stable")[:UNSERVED_LISTED]:
        if unserved[c] <= 1e-6:
            break
        population = table.iloc[int(instance.commodity_population[c])]
        answers.append(
            {
                "population": str(population["name"]),
                "country_code": str(population["country_code"]),
                "class": instance.profiles[int(instance.commodity_class[c])].name,
                "unserved_tok_s": float(unserved[c]),
                "unserved_share": float(share[c]),
                **_reach(ctx, int(c)),
            }
        )
    return answers


# ----------------------------------------------------------------------------- the explanation


@dataclass(frozen=True)
class Explanation:
    """Why each site is in or out, what would pay, and how long each phase took.

    Parameters
    ----------
    sites : list of dict
        One record per site explained.
    what_would_pay : dict
        ``more_power``, ``nearest_to_entering``, ``short_of_power`` and ``out_of_reach`` (unserved pairs).
    phases_s : dict
        Seconds per phase. [s]
    rules : list of dict
        Per residency rule, the pairs it bars and the populations it keeps from open sites
        (:func:`placement.analyses.rule_binds.rule_binds`).
    """

    sites: list[dict[str, Any]]
    what_would_pay: dict[str, list[dict[str, Any]]]
    phases_s: dict[str, float]
    rules: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    caps: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """What ``explain.json`` holds: sites, what would pay, whom each rule binds, each cap's worth, seconds."""
        return {
            "sites": self.sites, "what_would_pay": self.what_would_pay, "rules": self.rules, "caps": self.caps,
            "phases_s": self.phases_s,
        }  # fmt: skip


def _context(instance: Instance, sites: pd.DataFrame, lp: WhatIfs, is_open: NDArray[np.bool_]) -> _PlanContext:
    return _PlanContext(
        instance=instance,
        is_open=is_open,
        base_cost_usd_per_h=lp.cost_usd_per_h(),
        mw_value_usd_per_h=lp.mw_value_usd_per_h(),
        unserved_share=lp.unserved_share,
        sites=sites,
    )


def _site_record(ctx: _PlanContext, lp: WhatIfs, j: int, progress: Callable[[str], None]) -> dict[str, Any]:
    site_id = str(ctx.sites["site_id"].iloc[j])
    record: dict[str, Any] = {"site_id": site_id, "name": str(ctx.sites["name"].iloc[j]), "open": bool(ctx.is_open[j])}
    if ctx.is_open[j]:
        progress(f"re-solving without {site_id}")
        return record | _open_site(ctx, j, lp.resolve_toggled(j))
    reachable = ctx.instance.within_budget.column(j).any() and ctx.instance.allowed.column(j).any()
    if reachable:
        progress(f"re-solving with {site_id} forced open")
    return record | _closed_site(ctx, lp, j, lp.resolve_toggled(j) if reachable else None)


def explain(
    instance: Instance,
    sites: pd.DataFrame,
    *,
    only: str | None = None,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Explanation:
    """Explain every site of a plan (or one), and what would pay.

    Parameters
    ----------
    instance : Instance
        The scenario's arrays.
    sites : pandas.DataFrame
        The plan's site table (``site_id``, ``name``, ``open``, ``nodes``, ``goodput_share``; ``mw_used``).
    only : str, optional
        A site id to explain alone (the "what would pay" section is computed all the same).
    options : SolverOptions, optional
        Solver settings (default: the scenario's, at most 10 s per PuLP re-solve).
    progress : callable, optional
        Receives one line per phase.

    Returns
    -------
    Explanation
        Site records, "what would pay" and the seconds per phase.
    """
    phases: dict[str, float] = {}
    clock = time.perf_counter()
    is_open = sites["open"].astype(str).str.lower().isin(["true", "1"]).to_numpy()
    progress("solving the plan's LP with the design fixed")
    lp = fixed_design_lp(instance.inputs, is_open, options or _default_options(instance))
    ctx = _context(instance, sites, lp, is_open)
    caps = _caps(instance.inputs, lp, ctx.base_cost_usd_per_h)
    phases["base_lp_s"], clock = time.perf_counter() - clock, time.perf_counter()
    picked = [j for j in range(len(sites)) if only is None or sites["site_id"].iloc[j] == only]
    records = [_site_record(ctx, lp, j, progress) for j in picked]
    phases["sites_s"], clock = time.perf_counter() - clock, time.perf_counter()
    progress(f"what would pay: {EXTRA_MW:g} MW more where a MW is worth most")
    everyone = records if only is None else [_site_record(ctx, lp, j, lambda _: None) for j in range(len(sites))]
    pay = {
        "more_power": _more_power(ctx, lp, sites),
        "nearest_to_entering": _nearest_to_entering(everyone),
        "short_of_power": _unserved(ctx, reachable=True),
        "out_of_reach": _unserved(ctx, reachable=False),
    }
    phases["what_would_pay_s"] = time.perf_counter() - clock
    return Explanation(records, pay, phases, rule_binds(instance, is_open), caps)


CAP_STEP = 0.1
"""Explain moves each carbon or water cap by this share of its limit, up and down, with the design fixed."""


def _caps(data: PlacementInput, lp: WhatIfs, base_usd_per_h: float) -> list[dict[str, Any]]:
    """Each cap's value: its dual, and what moving its limit by :data:`CAP_STEP` saves or costs, the design fixed.

    The dual is what one more unit of it is worth (USD a tonne, a m3), the what-ifs what a tenth of the limit is
    worth at the plan's open sites and service: a cap that does not bind is worth 0; null where the design cannot
    meet the tighter cap at the same service.
    """
    values = lp.cap_value_usd_per_h()  # read before the what-ifs re-solve
    records = []
    for k, cap in enumerate(data.caps):
        looser, tighter = lp.resolve_cap_scaled(k, 1 + CAP_STEP), lp.resolve_cap_scaled(k, 1 - CAP_STEP)
        records.append(
            {
                "cap": cap.name,
                "unit": cap.unit,
                "limit_per_year": cap.limit_per_h * HOURS_PER_YEAR,
                "value_usd_per_unit": float(values[k]),
                "looser_saves_usd_per_h": base_usd_per_h - looser if math.isfinite(looser) else None,
                "tighter_costs_usd_per_h": tighter - base_usd_per_h if math.isfinite(tighter) else None,
                "step_share": CAP_STEP,
            }
        )
    return records


@dataclass(frozen=True)
class RebuiltPlan:
    """A results folder read back for explaining, with its scenario rebuilt.

    Parameters
    ----------
    results : ResultsFolder
        The folder's summary and tables (:func:`placement.results.folder.read_results_folder`).
    instance : Instance
        The scenario's arrays, rebuilt from :attr:`ResultsFolder.scenario_path`.
    """

    results: ResultsFolder
    instance: Instance

    @property
    def sites(self) -> pd.DataFrame:
        """The folder's ``sites.csv``."""
        return self.results.sites


def refuse_buildout(folder: Path, summary: dict[str, Any], *, command: str = "explain") -> None:
    """A build-out folder, or one of its years, holds no scenario a command can rebuild: say what to do instead.

    Parameters
    ----------
    folder : Path
        The folder given.
    summary : dict
        Its ``summary.json``.
    command : str, optional
        The command refusing it, named in the message (``explain``, ``failover``).

    Raises
    ------
    PlacementError
        The folder is a build-out or one of its years.
    """
    if summary.get("kind") == "buildout":
        years = summary.get("years") or [{"year": "?"}]
        raise PlacementError(
            f"{folder} is a build-out (years {years[0].get('year')}-{years[-1].get('year')}): "
            f"{command} reads one year's plan with its scenario; the years/<year>/ folders hold the plans, for "
            f"'placement diff'. To {command} one year, solve it on its own (e.g. 'placement solve' on a scenario "
            "without horizon)"
        )
    if "year" in summary and "demand_scenario" in summary:
        raise PlacementError(
            f"{folder} is year {summary['year']} of a build-out ({summary['demand_scenario']} demand): it holds the "
            f"plan's tables for 'placement diff', not a scenario {command} can rebuild; {command} a single-year plan"
        )


def rebuild_plan(
    folder: str | Path, *, progress: Callable[[str], None] = lambda _: None, command: str = "explain"
) -> RebuiltPlan:
    """Read a results folder back and rebuild its scenario's instance.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``solve``.
    progress : callable, optional
        Receives one line per step of the rebuild.
    command : str, optional
        The command asking, for the message that refuses a build-out.

    Returns
    -------
    RebuiltPlan
        The folder's tables and the instance.

    Raises
    ------
    InputError
        The folder is not a results folder (a file missing: :func:`placement.results.folder.read_results_folder`).
    PlacementError
        The folder is a build-out or one of its years, or its ``sites.csv`` does not match the scenario's catalog.
    """
    folder = Path(folder)
    refuse_buildout(folder, read_summary(folder), command=command)
    return rebuild_instance(read_results_folder(folder), progress=progress)


def rebuild_instance(results: ResultsFolder, *, progress: Callable[[str], None] = lambda _: None) -> RebuiltPlan:
    """Rebuild the instance of a results folder already read (:func:`rebuild_plan` without reading it again).

    Parameters
    ----------
    results : ResultsFolder
        The folder read (not a build-out: :func:`refuse_buildout` first).
    progress : callable, optional
        Receives one line per step of the rebuild.

    Returns
    -------
    RebuiltPlan
        The folder's tables and the instance.

    Raises
    ------
    PlacementError
        Its ``sites.csv`` does not match the scenario's catalog.
    """
    scenario_path = results.scenario_path
    loaded = load_scenario(scenario_path)
    chosen = None  # kv_cache.tier auto: the tiers the plan chose at its free sites, from its sites.csv
    if loaded.scenario.serving.kv_cache is not None and "kv_tier" in results.sites.columns:
        chosen = dict(zip(results.sites["site_id"].astype(str), results.sites["kv_tier"].fillna("").astype(str), strict=True))
    instance = build_instance(loaded, progress=progress, site_kv_tiers=chosen)
    if list(results.sites["site_id"]) != list(instance.sites["id"]):
        raise PlacementError(f"{results.folder}/sites.csv does not match the catalog of {scenario_path}: solve again")
    rounds = results.summary.get("cache_rounds") or {}
    return RebuiltPlan(results, with_charges(instance, rounds.get("charges_nodes_per_tok_s") or {}))


def explain_folder(
    folder: str | Path, *, site: str | None = None, progress: Callable[[str], None] = lambda _: None
) -> Explanation:
    """Explain the sites of a results folder (or one of them): :func:`rebuild_plan`, then :func:`explain`.

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
    Explanation
        Site records, "what would pay" and the seconds per phase (``load_s``: rebuilding the scenario).

    Raises
    ------
    PlacementError
        Not a results folder, a stale one, or an unknown site id (the message lists the plan's sites).
    """
    clock = time.perf_counter()
    results = rebuild_plan(folder, progress=progress)
    known = list(results.sites["site_id"])
    if site is not None and site not in set(known):
        raise PlacementError(f"unknown site '{site}'; the plan's sites are: {', '.join(known)}")
    load_s = time.perf_counter() - clock
    explained = explain(results.instance, results.sites, only=site, progress=progress)
    return dataclasses.replace(explained, phases_s={"load_s": load_s, **explained.phases_s})


def _drop_text(drop: float | None) -> str:
    if drop is None:
        return "cannot be dropped (the others cannot serve as much)"
    if drop >= 0:
        return f"dropping costs ${drop:,.0f}/h"
    return f"dropping would save ${-drop:,.0f}/h (the plan is within its solver gap)"


def _power_text(r: dict[str, Any]) -> str:
    used = f"{r['mw_used']:.1f}/{r['mw_available']:.1f} MW"
    if r["power_binding"]:
        return f"power {used}, binding: +1 MW saves ${r['value_of_one_more_mw_usd_per_h']:,.2f}/h"
    if r["power_full"]:
        return f"power {used}, full but not binding (one more MW saves nothing at the same service)"
    return f"power {used}, not binding"


def _site_line(r: dict[str, Any]) -> str:
    if not r["open"]:
        return f"closed {r['site_id']:<22} {r['why']}"
    only = r["populations_only_it_can_serve"]
    plural, more = ("s" if len(only) != 1 else ""), ("..." if len(only) > 3 else "")
    sole = f"; sole site for {len(only)} population{plural} ({', '.join(only[:3])}{more})" if only else ""
    return (
        f"OPEN   {r['site_id']:<22} {r['goodput_share']:6.1%} of goodput, {r['nodes']:6,d} nodes, "
        f"{_power_text(r)}; {_drop_text(r['cost_of_dropping_usd_per_h'])}{sole}"
    )


def _pay_lines(pay: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = ["", "What would pay"]
    if pay["more_power"]:
        lines.append("  more power, where a MW is worth most:")
    for r in pay["more_power"]:
        saving = "n/a" if r["saving_usd_per_h"] is None else f"${r['saving_usd_per_h']:,.0f}/h"
        lines.append(
            f"    {r['name']} ({r['mw_used']:.1f}/{r['mw_available']:.1f} MW): the next MW saves "
            f"${r['value_of_one_more_mw_usd_per_h']:,.2f}/h; {r['extra_mw']:.1f} MW more saves {saving}"
        )
    if not pay["more_power"]:
        lines.append("  more power: not binding anywhere it would save money")
    lines.append("  closed sites nearest to entering:")
    for r in pay["nearest_to_entering"]:
        if "extra_cost_if_opened_usd_per_h" in r:
            price = r.get("entry_power_price_usd_per_mwh")
            at = (
                f"enters below ${price:,.1f}/MWh (now ${r['power_price_usd_per_mwh']:,.1f})"
                if price is not None
                else "would not enter even with free power"
            )
            lines.append(f"    {r['name']}: opening costs ${r['extra_cost_if_opened_usd_per_h']:,.0f}/h; {at}")
        else:
            lines.append(
                f"    {r['name']}: {r['ms_over_objective']:.1f} ms too far for {r['nearest_population']} ({r['nearest_class']})"
            )
    for key, title in (
        ("short_of_power", "unserved for want of power (largest first), and the cheapest site that would reach them:"),
        ("out_of_reach", "unserved because no site is inside their objective (largest first):"),
    ):
        lines.append(f"  {title}")
        for r in pay[key]:
            lines.append(
                f"    {r['population']} ({r['country_code']}), {r['class']}: {r['unserved_tok_s']:,.0f} tok/s "
                f"({r['unserved_share']:.1%}) unserved; {r['why']}"
            )
        if not pay[key]:
            lines.append("    none")
    return lines


def render_table(explanation: Explanation) -> str:
    """A readable table of the explanations: one line per site, then "what would pay".

    Parameters
    ----------
    explanation : Explanation
        From :func:`explain`.

    Returns
    -------
    str
        Text (MW to 0.1, ms to 0.1).
    """
    return "\n".join(
        [_site_line(r) for r in explanation.sites]
        + _pay_lines(explanation.what_would_pay)
        + _rule_lines(explanation.rules)
        + _cap_lines(explanation.caps)
    )


def _cap_lines(caps: list[dict[str, Any]]) -> list[str]:
    """What each carbon or water cap is worth, the design fixed."""
    if not caps:
        return []
    lines = ["what the caps are worth (the plan's open sites, the same service):"]
    for c in caps:
        step = f"{c['step_share']:.0%}"
        looser = "n/a" if c["looser_saves_usd_per_h"] is None else f"${c['looser_saves_usd_per_h']:,.2f}/h"
        tighter = "not met" if c["tighter_costs_usd_per_h"] is None else f"${c['tighter_costs_usd_per_h']:,.2f}/h"
        lines.append(
            f"  {c['cap']} cap of {c['limit_per_year']:,.0f} {c['unit']} a year: ${c['value_usd_per_unit']:,.2f} per "
            f"{c['unit']}; {step} looser saves {looser}, {step} tighter costs {tighter}"
        )
    return lines


def _rule_lines(rules: list[dict[str, Any]]) -> list[str]:
    """Whom each residency rule binds: its barred pairs, and the largest populations it keeps from open sites."""
    if not rules:
        return []
    lines = ["whom the rules bind:"]
    for r in rules:
        lines.append(
            f"  {r['rule_id']} ({r['text']}): bars {r['pairs_barred']:,} (population-class, site) pairs inside their "
            f"objective: {r['populations_barred']:,} populations, {r['sites_barred']:,} sites"
        )
        for b in r["binds_at_open_sites"]:
            lines.append(
                f"    {b['population']} ({b['country_code']}) {b['class']}, {b['demand_tok_s']:,.0f} tok/s: kept from open "
                f"{', '.join(b['open_sites_barred'])}"
            )
    return lines
