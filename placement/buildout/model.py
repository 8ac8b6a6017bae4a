"""The multi-year, two-stage build-out MILP, built from arrays only.

Stage one (shared by every demand scenario): which sites are open in each year and how many MW are
reserved there; both never go back. Stage two (one copy per scenario): nodes bought per site,
accelerator and year (they serve for their economic life), the share of each demand row routed to each
allowed site, the tokens of each class each accelerator serves, and the unserved share (priced, so
every recourse is feasible). The objective is the expected NPV of cost.

The model is assembled in small ``define_*`` steps (PyPSA style) by :func:`create_model`; the
rows are tuple lists handed to :class:`pulp.LpAffineExpression`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pulp
from numpy.typing import NDArray

from placement.optimize.rows import group_by
from placement.optimize.solver import SolverOptions, SolverReport, solve_problem

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class BuildoutInput:
    """Everything the build-out model needs, as arrays.

    Dimensions: ``R`` demand rows, ``P`` allowed (row, site) pairs, ``M`` sites, ``K`` classes,
    ``A`` accelerators, ``Y`` years, ``S`` demand scenarios, ``T`` time slices.

    Parameters
    ----------
    year_weight_h : numpy.ndarray
        ``(Y,)`` discounted hours of each year: ``8760 / (1 + rate) ** (year - first)``. [h]
    slice_weight : numpy.ndarray
        ``(T,)`` share of the day in each slice (sums to 1).
    row_class : numpy.ndarray of int
        ``(R,)`` class of each demand row.
    row_demand_tok_s : numpy.ndarray
        ``(R, T, Y, S)`` demand of each row per slice, year and scenario. [tokens/s]
    pair_row, pair_site : numpy.ndarray of int
        ``(P,)`` row and site of each allowed pair.
    site_fixed_usd_per_h : numpy.ndarray
        ``(M,)`` cost of an open site. [USD/h]
    site_usd_per_h_per_mw : numpy.ndarray
        ``(M,)`` cost of one reserved MW (facility build, amortised). [USD/h/MW]
    site_mw_available : numpy.ndarray
        ``(M, Y)`` MW energized at each site in each year. [MW]
    site_locked : numpy.ndarray of bool
        ``(M,)`` sites open from the first year (an existing fleet, or the catalog's ``locked``).
    goodput_tok_s : numpy.ndarray
        ``(K, A)`` goodput of one node of each accelerator for each class (0: cannot serve it), or
        ``(K, A, Y, S)`` when it changes by year and scenario (a larger model arriving). [tokens/s]
    node_mw : numpy.ndarray
        ``(M, A)`` facility MW of one node (IT power times PUE). [MW]
    node_usd_per_h : numpy.ndarray
        ``(M, A)`` running cost of one node in service (idle power, opex), capex excluded. [USD/h]
    energy_usd_per_h_per_tok_s : numpy.ndarray
        ``(M, K, A)`` load-following power cost of serving 1 token/s for an hour, or ``(M, K, A, Y, S)``.
        [USD/h per token/s]
    offered : numpy.ndarray of bool
        ``(A, Y)`` accelerators that can be bought in each year.
    node_capex_usd : numpy.ndarray
        ``(A, Y)`` price of one node bought in each year. [USD]
    node_annuity_usd_per_h : numpy.ndarray
        ``(A, Y)`` capex of one node bought in each year, annualised over its life. [USD/h]
    life_years : int
        Years a node serves after it is bought (the year of purchase included).
    existing_nodes : numpy.ndarray
        ``(M, A, Y)`` nodes already installed that are still in service. [nodes]
    probability : numpy.ndarray
        ``(S,)`` probability of each scenario.
    unserved_usd_per_million_tokens : float
        Penalty of a goodput token not served. [USD/Mtok]
    integer_nodes : bool
        Integer purchases (else continuous; see :func:`round_up`).
    power_margin_mw : numpy.ndarray or None
        ``(M,)`` MW held back below each site's energized power so that rounding continuous purchases
        up cannot exceed it (None: none).
    row_mean_demand_tok_s : numpy.ndarray or None
        ``(R, Y, S)`` daily mean demand of each row (None: the slice-weighted ``row_demand_tok_s``). Slices
        hold each block's busiest hour for capacity; goodput, energy and the unserved penalty follow the
        mean. [tokens/s]
    """

    year_weight_h: FloatArray
    slice_weight: FloatArray
    row_class: IntArray
    row_demand_tok_s: FloatArray
    pair_row: IntArray
    pair_site: IntArray
    site_fixed_usd_per_h: FloatArray
    site_usd_per_h_per_mw: FloatArray
    site_mw_available: FloatArray
    site_locked: BoolArray
    goodput_tok_s: FloatArray
    node_mw: FloatArray
    node_usd_per_h: FloatArray
    energy_usd_per_h_per_tok_s: FloatArray
    offered: BoolArray
    node_capex_usd: FloatArray
    node_annuity_usd_per_h: FloatArray
    life_years: int
    existing_nodes: FloatArray
    probability: FloatArray
    unserved_usd_per_million_tokens: float
    integer_nodes: bool = False
    power_margin_mw: FloatArray | None = None
    row_mean_demand_tok_s: FloatArray | None = None

    @property
    def shape(self) -> tuple[int, int, int, int, int, int]:
        """``(M, K, A, Y, S, T)``."""
        m, a = self.node_mw.shape
        _, t, y, s = self.row_demand_tok_s.shape
        return m, self.goodput_tok_s.shape[0], a, y, s, t

    @property
    def goodput_kays(self) -> FloatArray:
        """``(K, A, Y, S)`` goodput of one node per class, accelerator, year and scenario. [tokens/s]"""
        k, a = self.goodput_tok_s.shape[:2]
        _, _, y, s = self.row_demand_tok_s.shape
        table = self.goodput_tok_s if self.goodput_tok_s.ndim == 4 else self.goodput_tok_s[:, :, None, None]
        return np.asarray(np.broadcast_to(table, (k, a, y, s)))

    @property
    def energy_mkays(self) -> FloatArray:
        """``(M, K, A, Y, S)`` load-following power cost per token/s served for an hour. [USD/h per token/s]"""
        m, k, a = self.energy_usd_per_h_per_tok_s.shape[:3]
        _, _, y, s = self.row_demand_tok_s.shape
        table = self.energy_usd_per_h_per_tok_s
        table = table if table.ndim == 5 else table[..., None, None]
        return np.asarray(np.broadcast_to(table, (m, k, a, y, s)))

    @property
    def alive(self) -> BoolArray:
        """``(Y, Y)``: ``alive[v, y]`` when a node bought in year ``v`` serves in year ``y``."""
        years = np.arange(self.year_weight_h.size)
        age = years[None, :] - years[:, None]
        return np.asarray((age >= 0) & (age < self.life_years))

    @property
    def unserved_usd_per_h_per_tok_s(self) -> float:
        """Penalty of 1 token/s not served for an hour. [USD/h per token/s]"""
        return self.unserved_usd_per_million_tokens * SECONDS_PER_HOUR / 1e6

    @property
    def daily_demand_tok_s(self) -> FloatArray:
        """``(R, Y, S)`` daily mean demand of each row. [tokens/s]"""
        if self.row_mean_demand_tok_s is not None:
            return self.row_mean_demand_tok_s
        return np.asarray(np.einsum("rtys,t->rys", self.row_demand_tok_s, self.slice_weight))

    @property
    def energy_weight(self) -> FloatArray:
        """``(Y, S, T)`` weight of a slice's load in the day's energy: its share of the day times mean over busiest-hour load."""
        peak = np.einsum("rtys,t->ys", self.row_demand_tok_s, self.slice_weight)
        mean = self.daily_demand_tok_s.sum(axis=0)
        ratio = np.where(peak > 0, mean / np.maximum(peak, 1e-300), 1.0)
        return np.asarray(ratio[:, :, None] * self.slice_weight[None, None, :])

    def scenario(self, s: int) -> BuildoutInput:
        """Scenario ``s`` alone, with probability 1."""
        one = slice(s, s + 1)
        return replace(
            self,
            row_demand_tok_s=self.row_demand_tok_s[..., one],
            row_mean_demand_tok_s=self.daily_demand_tok_s[..., one],
            goodput_tok_s=self.goodput_kays[..., one],
            energy_usd_per_h_per_tok_s=self.energy_mkays[..., one],
            probability=np.ones(1),
        )

    def mean_value(self) -> BuildoutInput:
        """The mean-value problem: one scenario whose demand, goodput and energy are the probability-weighted means."""
        p = self.probability
        return replace(
            self,
            row_demand_tok_s=np.einsum("rtys,s->rty", self.row_demand_tok_s, p)[..., None],
            row_mean_demand_tok_s=np.einsum("rys,s->ry", self.daily_demand_tok_s, p)[..., None],
            goodput_tok_s=np.einsum("kays,s->kay", self.goodput_kays, p)[..., None],
            energy_usd_per_h_per_tok_s=np.einsum("mkays,s->mkay", self.energy_mkays, p)[..., None],
            probability=np.ones(1),
        )


@dataclass(frozen=True)
class FirstStage:
    """The shared decisions: sites open and MW reserved per year.

    Parameters
    ----------
    open : numpy.ndarray of bool
        ``(M, Y)`` open sites.
    mw_reserved : numpy.ndarray
        ``(M, Y)`` MW reserved. [MW]
    """

    open: BoolArray
    mw_reserved: FloatArray


@dataclass(frozen=True)
class BuildoutSolution:
    """A solved build-out.

    Parameters
    ----------
    first : FirstStage
        Sites and MW per year.
    buy : numpy.ndarray
        ``(M, A, Y, S)`` nodes bought. [nodes]
    nodes : numpy.ndarray
        ``(M, A, Y, S)`` nodes in service (existing included). [nodes]
    pair_share : numpy.ndarray
        ``(P, Y, S)`` share of each row's demand served over each pair.
    unserved_share : numpy.ndarray
        ``(R, Y, S)`` share of each row's demand not served.
    served_tok_s : numpy.ndarray
        ``(M, K, A, Y, S, T)`` tokens/s of each class served on each accelerator. [tokens/s]
    report : SolverReport
        What the solver proved (for a rounded solution: the solve before rounding).
    rounded : bool
        Whether continuous purchases were rounded up after the solve.
    """

    first: FirstStage
    buy: FloatArray
    nodes: FloatArray
    pair_share: FloatArray
    unserved_share: FloatArray
    served_tok_s: FloatArray
    report: SolverReport
    rounded: bool = False


@dataclass
class ModelVariables:
    """The PuLP variables of one model, by index."""

    open: dict[tuple[int, int], pulp.LpVariable] = field(default_factory=dict)
    res: dict[tuple[int, int], pulp.LpVariable] = field(default_factory=dict)
    buy: dict[tuple[int, int, int, int], pulp.LpVariable] = field(default_factory=dict)
    x: dict[tuple[int, int, int], pulp.LpVariable] = field(default_factory=dict)
    u: dict[tuple[int, int, int], pulp.LpVariable] = field(default_factory=dict)
    z: dict[tuple[int, int, int, int, int, int], pulp.LpVariable] = field(default_factory=dict)


def _reservable_mw(data: BuildoutInput) -> FloatArray:
    """``(M, Y)`` MW that may be reserved: energized power less the rounding margin."""
    margin = np.zeros(data.node_mw.shape[0]) if data.power_margin_mw is None else data.power_margin_mw
    return np.asarray(np.maximum(data.site_mw_available - margin[:, None], 0.0))


def define_sites(
    problem: pulp.LpProblem,
    data: BuildoutInput,
    v: ModelVariables,
    fixed: FirstStage | None,
    *,
    relax: bool,
    opened: BoolArray | None,
) -> None:
    """Open and reserved-MW variables per site and year; both never go back; locked sites open.

    ``relax`` makes ``open`` continuous (the LP relaxation); ``opened`` fixes which sites are open and
    leaves the MW free; ``fixed`` fixes both.
    """
    m, _, _, n_years, _, _ = data.shape
    cap = _reservable_mw(data)
    for j in range(m):
        for y in range(n_years):
            v.open[j, y] = problem.add_variable(
                f"open_{j}_{y}", lowBound=0, upBound=1, cat=pulp.LpContinuous if relax else pulp.LpBinary
            )
            v.res[j, y] = problem.add_variable(f"mw_{j}_{y}", lowBound=0.0)
            if data.site_locked[j]:
                v.open[j, y].lowBound = 1
            if opened is not None:
                v.open[j, y].lowBound = v.open[j, y].upBound = int(opened[j, y])
            if fixed is not None:
                v.open[j, y].lowBound = v.open[j, y].upBound = int(fixed.open[j, y])
                v.res[j, y].lowBound = v.res[j, y].upBound = float(fixed.mw_reserved[j, y])
                continue
            problem.addConstraint(pulp.LpAffineExpression([(v.res[j, y], 1.0), (v.open[j, y], -float(cap[j, y]))]) <= 0)
            if y > 0:
                problem.addConstraint(pulp.LpAffineExpression([(v.open[j, y], 1.0), (v.open[j, y - 1], -1.0)]) >= 0)
                problem.addConstraint(pulp.LpAffineExpression([(v.res[j, y], 1.0), (v.res[j, y - 1], -1.0)]) >= 0)


def _buyable(data: BuildoutInput) -> BoolArray:
    """``(M, A, Y)`` purchases worth a variable: offered, at a site with power in some later year of the node's life."""
    powered = np.asarray(data.site_mw_available > 0)
    alive = data.alive
    later = np.asarray((alive[None, :, :] & powered[:, None, :]).any(axis=2))  # (M, V)
    return np.asarray(data.offered[None, :, :] & later[:, None, :])


def define_nodes(
    problem: pulp.LpProblem, data: BuildoutInput, v: ModelVariables
) -> dict[tuple[int, int, int, int], pulp.LpAffineExpression]:
    """Nodes bought per site, accelerator, year and scenario; returns nodes in service as expressions."""
    m, _, a, n_years, n_scen, _ = data.shape
    cat = pulp.LpInteger if data.integer_nodes else pulp.LpContinuous
    buyable = _buyable(data)
    for j, h, y in zip(*np.nonzero(buyable), strict=True):
        for s in range(n_scen):
            v.buy[int(j), int(h), int(y), s] = problem.add_variable(f"buy_{j}_{h}_{y}_{s}", lowBound=0.0, cat=cat)
    alive = data.alive
    in_service: dict[tuple[int, int, int, int], pulp.LpAffineExpression] = {}
    for j in range(m):
        for h in range(a):
            for y in range(n_years):
                for s in range(n_scen):
                    terms = [(v.buy[j, h, b, s], 1.0) for b in range(y + 1) if alive[b, y] and (j, h, b, s) in v.buy]
                    in_service[j, h, y, s] = pulp.LpAffineExpression(terms, constant=float(data.existing_nodes[j, h, y]))
    return in_service


def define_power(
    problem: pulp.LpProblem,
    data: BuildoutInput,
    v: ModelVariables,
    in_service: dict[tuple[int, int, int, int], pulp.LpAffineExpression],
) -> None:
    """Nodes in service draw no more than the MW reserved at their site; an open site runs at least one node.

    The second row is what "sites once open stay open" means for a planner: a site is not left dark
    (its MW reserved and paid for, nothing running) when its first nodes retire.
    """
    m, _, a, n_years, n_scen, _ = data.shape
    for j in range(m):
        for y in range(n_years):
            for s in range(n_scen):
                row = pulp.LpAffineExpression([(v.res[j, y], -1.0)])
                running = pulp.LpAffineExpression([(v.open[j, y], -1.0)])
                for h in range(a):
                    row.addInPlace(in_service[j, h, y, s] * float(data.node_mw[j, h]))
                    running.addInPlace(in_service[j, h, y, s])
                if len(row) > 1 or row.constant != 0:
                    problem.addConstraint(row <= 0)
                problem.addConstraint(running >= 0)


def define_routing(problem: pulp.LpProblem, data: BuildoutInput, v: ModelVariables) -> None:
    """Shares of each row served per allowed pair at sites with power, and unserved.

    No ``x <= open`` rows: a route needs load served by nodes, nodes need reserved MW, and MW need an open
    site, so routes only reach open sites. (Those rows, one per pair, year and scenario, made the LP relaxation
    of the bundled build-out several times slower; site costs are small beside node costs, so they added
    little to its bound.)
    """
    _, _, _, n_years, n_scen, _ = data.shape
    pairs_of_row = group_by(data.pair_row, data.row_class.size)
    for y in range(n_years):
        powered = data.site_mw_available[:, y] > 0
        for s in range(n_scen):
            for r, pairs in enumerate(pairs_of_row):
                v.u[r, y, s] = problem.add_variable(f"u_{r}_{y}_{s}", lowBound=0.0, upBound=1.0)
                terms = [(v.u[r, y, s], 1.0)]
                for p in pairs.tolist():
                    j = int(data.pair_site[p])
                    if not powered[j] or data.row_demand_tok_s[r, :, y, s].max() <= 0:
                        continue
                    v.x[p, y, s] = problem.add_variable(f"x_{p}_{y}_{s}", lowBound=0.0, upBound=1.0)
                    terms.append((v.x[p, y, s], 1.0))
                problem.addConstraint(pulp.LpAffineExpression(terms) == 1.0)


def define_serving(
    problem: pulp.LpProblem,
    data: BuildoutInput,
    v: ModelVariables,
    in_service: dict[tuple[int, int, int, int], pulp.LpAffineExpression],
) -> None:
    """Each site's class load is served by its accelerators; each accelerator's load fits its nodes in every slice."""
    m, k_count, a, n_years, n_scen, n_slices = data.shape
    classes = data.row_class[data.pair_row]
    groups = group_by(data.pair_site * k_count + classes, m * k_count)
    goodput = data.goodput_kays
    for y in range(n_years):
        for s in range(n_scen):
            for j in range(m):
                if data.site_mw_available[j, y] <= 0:
                    continue
                usable = [h for h in range(a) if len(in_service[j, h, y, s]) or in_service[j, h, y, s].constant > 0]
                for t in range(n_slices):
                    load: dict[int, list[tuple[pulp.LpVariable, float]]] = {h: [] for h in usable}
                    for k in range(k_count):
                        pairs = [p for p in groups[j * k_count + k].tolist() if (p, y, s) in v.x]
                        if not pairs:
                            continue
                        demand = data.row_demand_tok_s[data.pair_row[pairs], t, y, s]
                        terms = [(v.x[p, y, s], float(d)) for p, d in zip(pairs, demand.tolist(), strict=True)]
                        for h in usable:
                            if goodput[k, h, y, s] > 0:
                                z = problem.add_variable(f"z_{j}_{k}_{h}_{y}_{s}_{t}", lowBound=0.0)
                                v.z[j, k, h, y, s, t] = z
                                terms.append((z, -1.0))
                                load[h].append((z, 1.0 / float(goodput[k, h, y, s])))
                        problem.addConstraint(pulp.LpAffineExpression(terms) == 0)
                    for h, terms in load.items():
                        if terms:
                            problem.addConstraint(pulp.LpAffineExpression(terms) - in_service[j, h, y, s] <= 0)


def define_objective(problem: pulp.LpProblem, data: BuildoutInput, v: ModelVariables) -> None:
    """Expected NPV: sites and MW (shared), node capex annuities while in service, running cost, energy, unserved."""
    weight, prob, alive = data.year_weight_h, data.probability, data.alive
    terms: list[tuple[pulp.LpVariable, float]] = []
    for (j, y), var in v.open.items():
        terms.append((var, float(weight[y] * data.site_fixed_usd_per_h[j])))
    for (j, y), var in v.res.items():
        terms.append((var, float(weight[y] * data.site_usd_per_h_per_mw[j])))
    for (j, h, b, s), var in v.buy.items():
        lifetime_h = float(weight[alive[b]].sum())
        running = float(data.node_annuity_usd_per_h[h, b] + data.node_usd_per_h[j, h])
        terms.append((var, float(prob[s]) * lifetime_h * running))
    energy, per_tok = data.energy_weight, data.energy_mkays
    for (j, k, h, y, s, t), var in v.z.items():
        coef = prob[s] * weight[y] * energy[y, s, t] * per_tok[j, k, h, y, s]
        terms.append((var, float(coef)))
    penalty = data.unserved_usd_per_h_per_tok_s
    daily = data.daily_demand_tok_s
    for (r, y, s), var in v.u.items():
        terms.append((var, float(prob[s] * weight[y] * penalty * daily[r, y, s])))
    existing = float(np.einsum("may,ma,y->", data.existing_nodes, data.node_usd_per_h, weight))
    problem.setObjective(pulp.LpAffineExpression(terms, constant=existing))


def scenario_cost_expressions(data: BuildoutInput, v: ModelVariables) -> list[pulp.LpAffineExpression]:
    """Each scenario's NPV as an expression of one model's variables (the objective's terms with probability 1).

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    v : ModelVariables
        The model's variables.

    Returns
    -------
    list of pulp.LpAffineExpression
        One per scenario. [USD]
    """
    weight, alive = data.year_weight_h, data.alive
    shared = [(var, float(weight[y] * data.site_fixed_usd_per_h[j])) for (j, y), var in v.open.items()]
    shared += [(var, float(weight[y] * data.site_usd_per_h_per_mw[j])) for (j, y), var in v.res.items()]
    terms: list[list[tuple[pulp.LpVariable, float]]] = [list(shared) for _ in range(data.probability.size)]
    for (j, h, b, s), var in v.buy.items():
        running = float(data.node_annuity_usd_per_h[h, b] + data.node_usd_per_h[j, h])
        terms[s].append((var, float(weight[alive[b]].sum()) * running))
    energy, daily, per_tok = data.energy_weight, data.daily_demand_tok_s, data.energy_mkays
    for (j, k, h, y, s, t), var in v.z.items():
        terms[s].append((var, float(weight[y] * energy[y, s, t] * per_tok[j, k, h, y, s])))
    for (r, y, s), var in v.u.items():
        terms[s].append((var, float(weight[y] * data.unserved_usd_per_h_per_tok_s * daily[r, y, s])))
    existing = float(np.einsum("may,ma,y->", data.existing_nodes, data.node_usd_per_h, weight))
    return [pulp.LpAffineExpression(t, constant=existing) for t in terms]


def create_model(
    data: BuildoutInput, *, fixed: FirstStage | None = None, relax: bool = False, opened: BoolArray | None = None
) -> tuple[pulp.LpProblem, ModelVariables]:
    """The whole model, step by step.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    fixed : FirstStage, optional
        Fix the sites and MW (evaluate a plan's first stage in every scenario).
    relax : bool, optional
        Continuous ``open`` (the LP relaxation, a lower bound).
    opened : numpy.ndarray of bool, optional
        ``(M, Y)`` fix which sites are open, MW left free.

    Returns
    -------
    tuple
        The PuLP problem and its variables.
    """
    problem = pulp.LpProblem("buildout", pulp.LpMinimize)
    v = ModelVariables()
    define_sites(problem, data, v, fixed, relax=relax, opened=opened)
    in_service = define_nodes(problem, data, v)
    define_power(problem, data, v, in_service)
    define_routing(problem, data, v)
    define_serving(problem, data, v, in_service)
    define_objective(problem, data, v)
    return problem, v


TINY = 1e-9
"""Solver values below this are read as 0 (a solver's 1e-16 MW is no commitment)."""


def _value(var: pulp.LpVariable) -> float:
    return float(var.varValue) if var.varValue is not None else 0.0


def nodes_in_service(data: BuildoutInput, buy: FloatArray) -> FloatArray:
    """``(M, A, Y, S)`` nodes in service: existing plus purchases still inside their life."""
    bought = np.einsum("mabs,by->mays", buy, data.alive.astype(float))
    return np.asarray(bought + data.existing_nodes[..., None])


def read_solution(data: BuildoutInput, v: ModelVariables, report: SolverReport) -> BuildoutSolution:
    """The variables' values as arrays."""
    m, k_count, a, n_years, n_scen, n_slices = data.shape
    opened = np.zeros((m, n_years), dtype=bool)
    reserved = np.zeros((m, n_years))
    for (j, y), var in v.open.items():
        opened[j, y] = _value(var) > 0.5
        reserved[j, y] = _value(v.res[j, y]) if _value(v.res[j, y]) > TINY else 0.0
    buy = np.zeros((m, a, n_years, n_scen))
    for b_key, var in v.buy.items():
        buy[b_key] = max(_value(var), 0.0)
    share = np.zeros((data.pair_row.size, n_years, n_scen))
    for x_key, var in v.x.items():
        share[x_key] = min(max(_value(var), 0.0), 1.0)
    unserved = np.zeros((data.row_class.size, n_years, n_scen))
    for u_key, var in v.u.items():
        unserved[u_key] = min(max(_value(var), 0.0), 1.0)
    served = np.zeros((m, k_count, a, n_years, n_scen, n_slices))
    for z_key, var in v.z.items():
        served[z_key] = max(_value(var), 0.0)
    return BuildoutSolution(FirstStage(opened, reserved), buy, nodes_in_service(data, buy), share, unserved, served, report)


def _empty(data: BuildoutInput, report: SolverReport) -> BuildoutSolution:
    zeros, empty = np.zeros(data.site_mw_available.shape), np.zeros(0)
    return BuildoutSolution(FirstStage(zeros > 0, zeros), empty, empty, empty, empty, empty, report)


def _solve(data: BuildoutInput, options: SolverOptions, **how: object) -> tuple[BuildoutSolution, SolverReport]:
    problem, v = create_model(data, **how)  # type: ignore[arg-type]
    report = solve_problem(problem, options)
    if not report.status.has_solution:
        return _empty(data, report), report
    return read_solution(data, v, report), report


def sites_of_relaxation(data: BuildoutInput, relaxed: BuildoutSolution) -> BoolArray:
    """``(M, Y)`` sites the LP relaxation uses in any scenario (any share open, any MW, any route), kept open after."""
    used = relaxed.first.mw_reserved > 1e-9
    routed = np.zeros(used.shape, dtype=bool)
    np.logical_or.at(routed, data.pair_site, (relaxed.pair_share > 1e-9).any(axis=2))
    return np.asarray(np.logical_or.accumulate(used | routed | data.site_locked[:, None], axis=1))


def solve_buildout(data: BuildoutInput, options: SolverOptions, *, fixed: FirstStage | None = None) -> BuildoutSolution:
    """Solve the build-out; continuous purchases are rounded up (:func:`round_up`).

    With ``fixed`` sites and MW the model is an LP (integer nodes aside). Otherwise, with continuous
    nodes, the LP relaxation is solved first (its objective is a lower bound), the sites it uses are
    fixed open and the LP is solved again for the MW, nodes and routes: the site costs are small
    beside the nodes', so the gap to the bound is small, and it is reported. With integer nodes the
    MILP is solved as it is.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    options : SolverOptions
        Solver and limits.
    fixed : FirstStage, optional
        Sites and MW to hold fixed.

    Returns
    -------
    BuildoutSolution
        The plan; its report's ``best_bound`` is a proven lower bound (check it with
        :func:`placement.buildout.evaluate.violations`).
    """
    if fixed is not None or data.integer_nodes:
        solution, _ = _solve(data, options, fixed=fixed)
        return solution if data.integer_nodes or not solution.report.status.has_solution else round_up(data, solution)
    relaxed, bound = _solve(data, options, relax=True)
    if not bound.status.has_solution:
        return relaxed
    solution, report = _solve(data, options, opened=sites_of_relaxation(data, relaxed))
    if not report.status.has_solution:
        return solution
    best, lower = solution, bound.objective
    if _gap(report.objective, lower) > options.gap:
        polished = _polish(data, options, solution)
        lower = max(lower, polished.report.best_bound) if np.isfinite(polished.report.best_bound) else lower
        if polished.report.status.has_solution and polished.report.objective < report.objective:
            best, report = polished, polished.report
    proven = replace(report, best_bound=lower, gap=_gap(report.objective, lower))
    return round_up(data, replace(best, report=proven))


def _gap(objective: float, bound: float) -> float:
    return max(objective - bound, 0.0) / max(abs(objective), 1e-9)


def _polish(data: BuildoutInput, options: SolverOptions, start: BuildoutSolution) -> BuildoutSolution:
    """The MILP with binary sites, started from a feasible plan (when relax-and-fix leaves a gap above the target)."""
    problem, v = create_model(data)
    for (j, y), var in v.open.items():
        var.setInitialValue(int(start.first.open[j, y]))
        v.res[j, y].setInitialValue(float(start.first.mw_reserved[j, y]))
    for key, var in v.buy.items():
        var.setInitialValue(float(start.buy[key]))
    for x_key, var in v.x.items():
        var.setInitialValue(float(start.pair_share[x_key]))
    for u_key, var in v.u.items():
        var.setInitialValue(float(start.unserved_share[u_key]))
    for z_key, var in v.z.items():
        var.setInitialValue(float(start.served_tok_s[z_key]))
    report = solve_problem(problem, options, warm_start=True)
    if not report.status.has_solution:
        return _empty(data, report)
    return read_solution(data, v, report)


def round_up(data: BuildoutInput, solution: BuildoutSolution) -> BuildoutSolution:
    """Whole nodes: every purchase rounded up, MW reserved raised (never above energized power) to hold them.

    Parameters
    ----------
    data : BuildoutInput
        The arrays (their ``power_margin_mw`` keeps room for the rounding).
    solution : BuildoutSolution
        A solve with continuous purchases.

    Returns
    -------
    BuildoutSolution
        Integer purchases; MW reserved and open sites made consistent with them.
    """
    buy = np.maximum(np.ceil(solution.buy - 1e-6), 0.0) + 0.0  # + 0.0: no -0.0 in the tables
    nodes = nodes_in_service(data, buy)
    need = np.einsum("mays,ma->mys", nodes, data.node_mw).max(axis=2)
    reserved = np.maximum.accumulate(np.maximum(solution.first.mw_reserved, need), axis=1)
    reserved = np.minimum(reserved, np.maximum(data.site_mw_available, solution.first.mw_reserved))
    opened = np.logical_or.accumulate(solution.first.open | (reserved > 0), axis=1)
    return replace(solution, first=FirstStage(opened, reserved), buy=buy, nodes=nodes, rounded=True)
