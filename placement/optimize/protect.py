"""N+1 for a plan that cannot serve everything: every served commodity protected, the most served, at least cost.

N+1 is applied, never dropped: a commodity with two sites in reach that the plan serves is protected against
every loss of :meth:`PlacementInput.failure_scenarios` (a site, or a fault domain): its share at the failed
sites moves to surviving sites inside its objective (its allowed pairs), which carry it in their nodes. Where
power is short, less is served rather than served unprotected. Starting from the plan without N+1 that serves
the most (:func:`placement.optimize.shortfall.diagnose_shortfall`), on the pairs it uses:

1. the most goodput served with every loss covered: an LP (its optimum holds with whole nodes, since a site's
   nodes are bounded by a whole number and can be rounded up to it; under a carbon or water cap, which whole
   nodes may break, a MILP);
2. the least cost with at least that much served: a MILP over nodes, standby sites and shares.

A site's nodes must hold its own load in every slice plus what moves in, each moved commodity at its own peak
(at least the load moved in any one slice), so the plan survives each loss in every slice. Commodities with a
single site in reach are served without a backup (the plan's notes name them).

A cross-metro pair (decode at its site, prefill at a second) is lost with either site: when its prefill site
fails its share moves too, onto pairs whose every site survives, and what moves onto a cross-metro pair loads
both its sites. During a loss the surviving site a lost pair still touches (its decode site, when its prefill
site fails) no longer carries its load, and what moves in may use those nodes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from placement._errors import SolverError
from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize import n_plus_one_rows, rows
from placement.optimize.linear import ColumnBlock, LinearModel, new_highs, to_highspy
from placement.optimize.problem import PlacementInput, PlacementSolution, load_entries_of
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, StopReason, relative_gap
from placement.optimize.verify import ABS_TOL, cap_excess_per_h, verify_solution

MILP_MAX_COLUMNS = 50_000
"""Protection models up to this many columns are solved as a MILP; larger ones by rounding their LP (HiGHS
finds no integer answer to the full-resolution world's 290,000 columns in 10 minutes; its LP takes 2 s)."""

NOISE = 1e-12
"""Shares below this are solver noise and read as 0."""

NODE_TOL = 1e-6
"""Node-equivalents within this of a whole number round down."""

IMPROVE_ROUNDS = 2
"""Rounds in which each loss is sized again on the spare the others need (after the first pass)."""

STAY_WEIGHT = 1e-3
"""Price of moving a tok/s off the plan's routing in the most-served LP, against 1 for serving it (a tie-break)."""

CAP_SLACK = 1e-9
"""Relative slack on the goodput of step 1 when step 2 keeps it (solver tolerances)."""


@dataclass(frozen=True)
class Loss:
    """One failure scenario that touches protected load.

    Parameters
    ----------
    key : int
        The scenario's key (:meth:`PlacementInput.failure_scenarios`).
    failed_sites : numpy.ndarray of int
        The sites lost together.
    commodities : numpy.ndarray of int
        Protected commodities served at the failed sites.
    lost_share : numpy.ndarray
        ``(len(commodities),)`` share of each that the failed sites carried.
    backup : numpy.ndarray of int
        Their pairs at the other sites (the re-routes allowed).
    """

    key: int
    failed_sites: IntArray
    commodities: IntArray
    lost_share: FloatArray
    backup: IntArray


def losses(data: PlacementInput, shares: FloatArray) -> list[Loss]:
    """The failure scenarios that take protected load away under these shares.

    Parameters
    ----------
    data : PlacementInput
        The arrays (``fault_tolerant``).
    shares : numpy.ndarray
        ``(p,)`` the plan's shares.

    Returns
    -------
    list of Loss
        One per scenario with protected load at its sites.
    """
    by_site = n_plus_one_rows.pairs_by_site(data.pair_site, data.pair_remote_site, data.n_sites)  # either site
    by_commodity = rows.group_by(data.pair_commodity, data.n_commodities)
    found = []
    for key, failed_sites in data.failure_scenarios():
        failed, backup = n_plus_one_rows.failover_pairs(
            failed_sites, data.pair_commodity, data.pair_site, data.protected, by_site, by_commodity,
            pair_remote_site=data.pair_remote_site,
        )  # fmt: skip
        lost = np.bincount(data.pair_commodity[failed], weights=shares[failed], minlength=data.n_commodities)
        commodities = np.flatnonzero(lost > ABS_TOL)
        if len(commodities) == 0:
            continue
        backup = backup[np.isin(data.pair_commodity[backup], commodities)]
        commodities = np.intersect1d(commodities, data.pair_commodity[backup])  # none in reach outside: exposed
        if len(commodities) == 0:
            continue
        found.append(Loss(key, failed_sites, commodities, np.asarray(lost[commodities], dtype=float), backup))
    return found


def exposed(data: PlacementInput, shares: FloatArray) -> BoolArray:
    """``(c,)`` protected commodities that some loss takes away whole: every site in their reach fails with it.

    A single site in reach is not protected at all (``data.protected``); these have two or more, all in one fault
    domain, so the domain's loss cannot be covered. They are served without a backup against that loss.
    """
    out = np.zeros(data.n_commodities, dtype=bool)
    protected = data.protected
    for _, failed_sites in data.failure_scenarios()[data.n_sites :]:
        inside = data.pairs_touching(failed_sites)
        carried = np.bincount(data.pair_commodity, weights=shares * inside, minlength=data.n_commodities) > ABS_TOL
        outside = np.bincount(data.pair_commodity, weights=(~inside).astype(float), minlength=data.n_commodities) > 0
        out |= carried & ~outside & protected
    return out


@dataclass
class _Blocks:
    model: LinearModel
    nodes: ColumnBlock
    opens: ColumnBlock
    shares: ColumnBlock
    support: IntArray
    moves: list[ColumnBlock]


def protection_model(
    data: PlacementInput,
    base: PlacementSolution,
    scenarios: list[Loss],
    *,
    least_cost: bool,
    min_served_tok_s: float = 0.0,
    integer: bool | None = None,
) -> _Blocks:
    """The LP (most served, every loss covered) or MILP (least cost) of an N+1 plan on the pairs a plan uses.

    Columns: nodes per site (at most the power's), open flags (locked sites open), the share of
    each pair the plan uses, each site's load per slice, and per loss the re-routed share of each backup pair
    and what each receiving site takes at peak. Rows: each commodity served at most once, each site's load
    per slice within its nodes, a site's nodes only if it is open, ``sites_open`` bounds, each carbon or water
    cap (the spare nodes' idle draw counts, a loss's re-routed load does not), per loss the failed shares moved in
    full, and per loss, receiving site and slice its load plus what moves in within its nodes.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    base : PlacementSolution
        The plan without N+1 (its open sites and the pairs it uses).
    scenarios : list of Loss
        :func:`losses` of its shares.
    least_cost : bool
        False: maximise the mean goodput served (continuous nodes). True: minimise the cost of nodes, sites and
        load energy (whole nodes, binary opens) with at least ``min_served_tok_s`` served.
    min_served_tok_s : float, optional
        Mean goodput to serve at least (``least_cost`` only). [tokens/s]
    integer : bool, optional
        Whole nodes and binary opens (default: ``least_cost``); False gives the least-cost LP relaxation.

    Returns
    -------
    _Blocks
        The model and its column blocks.
    """
    m, slices = data.n_sites, len(data.slice_hours)
    labels = [str(j) for j in range(m)]
    whole = least_cost if integer is None else integer
    lm = LinearModel("protect")
    nodes = lm.add_columns(
        "nodes", labels, upper=data.site_max_nodes.astype(float), cost=data.site_node_usd_per_h if least_cost else 0.0,
        integer=whole,
    )  # fmt: skip
    opens = lm.add_columns(
        "open", labels, lower=data.site_locked.astype(float), upper=1.0,
        cost=data.site_fixed_usd_per_h if least_cost else 0.0, integer=whole,
    )  # fmt: skip
    support = np.flatnonzero(base.pair_share > ABS_TOL)
    served_value = data.mean_demand_tok_s[data.pair_commodity[support]]
    shares = lm.add_columns(
        "share", [str(p) for p in support.tolist()], upper=1.0,
        cost=data.pair_cost_usd_per_h[support] if least_cost else -served_value,
    )  # fmt: skip
    commodity = data.pair_commodity[support]
    used = np.unique(commodity)
    lm.add_rows(
        "demand", [str(c) for c in used.tolist()], row=np.searchsorted(used, commodity), col=shares.cols,
        value=np.ones(len(support)), upper=1.0, size=len(used),
    )  # fmt: skip
    load = _site_load_columns(lm, data, support, shares, nodes)
    lm.add_rows(
        "powered", labels, row=np.repeat(np.arange(m), 2), col=np.column_stack([nodes.cols, opens.cols]).ravel(),
        value=np.column_stack([np.ones(m), -data.site_max_nodes.astype(float)]).ravel(), upper=0.0, size=m,
    )  # fmt: skip
    _open_count_rows(lm, data, opens)
    for k, cap in enumerate(data.caps):  # what the plan uses day to day (a loss's re-routed load is not counted)
        weights = (*cap.site_weights(), cap.pair_weights(data.pair_site, support))
        rows.resource_cap_row(lm, k, (opens.cols, nodes.cols, shares.cols), weights, cap.limit_per_h)
    if least_cost and min_served_tok_s > 0:
        lm.add_rows("min_served", None, row=np.zeros(len(support)), col=shares.cols, value=served_value, lower=min_served_tok_s)
    if not least_cost:
        _stay_near_plan(lm, base, support, shares, served_value)
    blocks = _Blocks(lm, nodes, opens, shares, support, [])
    position = np.full(len(data.pair_site), -1, dtype=np.int64)
    position[support] = shares.cols
    for loss in scenarios:
        _add_loss(blocks, data, loss, position, load, slices)
    return blocks


def _open_count_rows(lm: LinearModel, data: PlacementInput, opens: ColumnBlock) -> None:
    """``min_open`` and ``max_open``: the bounds on the number of open sites, those the input sets.

    Parameters
    ----------
    lm : LinearModel
        The protection model.
    data : PlacementInput
        The arrays (``min_sites_open``, ``max_sites_open``).
    opens : ColumnBlock
        ``(m,)`` open columns.
    """
    m = data.n_sites
    if data.min_sites_open is not None:
        lm.add_rows("min_open", None, row=np.zeros(m), col=opens.cols, value=np.ones(m), lower=float(data.min_sites_open))
    if data.max_sites_open is not None:
        lm.add_rows("max_open", None, row=np.zeros(m), col=opens.cols, value=np.ones(m), upper=float(data.max_sites_open))


def _stay_near_plan(
    lm: LinearModel, base: PlacementSolution, support: IntArray, shares: ColumnBlock, served_value: FloatArray
) -> None:
    """Second to serving the most: stay near the plan's routing (it was the cheapest without N+1).

    A ``drop`` column per pair, priced at :data:`STAY_WEIGHT` of its served value, makes up what its share falls
    below the plan's (``stay`` rows).

    Parameters
    ----------
    lm : LinearModel
        The protection model.
    base : PlacementSolution
        The plan without N+1.
    support : numpy.ndarray
        The pairs it uses.
    shares : ColumnBlock
        Their share columns.
    served_value : numpy.ndarray
        Mean demand of each pair's commodity. [tokens/s]
    """
    k = len(support)
    drop = lm.add_columns("drop", [str(p) for p in support.tolist()], cost=STAY_WEIGHT * served_value)
    lm.add_rows(
        "stay", [str(p) for p in support.tolist()], row=np.tile(np.arange(k), 2),
        col=np.concatenate([shares.cols, drop.cols]), value=np.ones(2 * k), lower=base.pair_share[support], size=k,
    )  # fmt: skip


def _site_load_columns(
    lm: LinearModel, data: PlacementInput, support: IntArray, shares: ColumnBlock, nodes: ColumnBlock
) -> IntArray:
    """``load[j, t]`` columns of the sites the plan uses (``-1`` elsewhere), each within the site's nodes."""
    m, slices = data.n_sites, len(data.slice_hours)
    position, entry_site, entry_nodes = load_entries_of(data, support)  # a cross-metro pair loads its second site too
    sites = np.unique(entry_site)
    block = lm.add_columns("load", [f"{j}_{t}" for j in sites.tolist() for t in range(slices)], size=len(sites) * slices)
    load = np.full((m, slices), -1, dtype=np.int64)
    load[sites] = block.cols.reshape(len(sites), slices)
    entry_load = data.slice_demand_tok_s[data.pair_commodity[support[position]]] * entry_nodes[:, None]  # (e, T)
    local = np.searchsorted(sites, entry_site)
    row = (local[:, None] * slices + np.arange(slices)[None, :]).ravel()
    n = len(sites) * slices
    entry_cols = shares.cols[position]
    lm.add_rows(
        "load", None if n == 1 else [str(i) for i in range(n)],
        row=np.concatenate([row, np.arange(n)]), col=np.concatenate([np.repeat(entry_cols, slices), load[sites].ravel()]),
        value=np.concatenate([entry_load.ravel(), -np.ones(n)]), lower=0.0, upper=0.0, size=n,
    )  # fmt: skip
    lm.add_rows(
        "capacity", None if n == 1 else [str(i) for i in range(n)], row=np.repeat(np.arange(n), 2),
        col=np.column_stack([load[sites].ravel(), np.repeat(nodes.cols[sites], slices)]).ravel(),
        value=np.tile([1.0, -1.0], n), upper=0.0, size=n,
    )  # fmt: skip
    return load


def _add_loss(blocks: _Blocks, data: PlacementInput, loss: Loss, position: IntArray, load: IntArray, slices: int) -> None:
    """One loss's columns and rows: the failed shares moved in full; every receiving site within its nodes."""
    lm, f = blocks.model, loss.key
    z = lm.add_columns(f"move_{f}", [str(p) for p in loss.backup.tolist()], upper=1.0, size=len(loss.backup))
    failed = blocks.support[data.pairs_touching(loss.failed_sites)[blocks.support]]  # a lost prefill site too
    failed = failed[np.isin(data.pair_commodity[failed], loss.commodities)]
    n = len(loss.commodities)
    row = np.concatenate([np.searchsorted(loss.commodities, data.pair_commodity[loss.backup]),
                          np.searchsorted(loss.commodities, data.pair_commodity[failed])])  # fmt: skip
    col = np.concatenate([z.cols, position[failed]])
    value = np.concatenate([np.ones(len(loss.backup)), -np.ones(len(failed))])
    lm.add_rows(f"moved_{f}", [str(c) for c in loss.commodities.tolist()], row=row, col=col, value=value,
                lower=0.0, upper=0.0, size=n)  # fmt: skip
    entry, site, entry_nodes = load_entries_of(data, loss.backup)  # a cross-metro backup loads both its sites
    entry_peak = data.peak_demand_tok_s[data.pair_commodity[loss.backup[entry]]] * entry_nodes
    receiving = np.unique(site)
    r = len(receiving)
    taken = lm.add_columns(f"taken_{f}", [str(j) for j in receiving.tolist()], size=r)
    local = np.searchsorted(receiving, site)
    lm.add_rows(
        f"taken_{f}", [str(j) for j in receiving.tolist()], row=np.concatenate([local, np.arange(r)]),
        col=np.concatenate([z.cols[entry], taken.cols]), value=np.concatenate([entry_peak, -np.ones(r)]),
        lower=0.0, upper=0.0, size=r,
    )  # fmt: skip
    freed = _freed_entries(data, loss, blocks.support, position)
    groups_row, groups_col, groups_value, count = [], [], [], 0
    for i, j in enumerate(receiving.tolist()):
        cols = load[j] if load[j, 0] >= 0 else None
        steps = slices if cols is not None else 1
        out = np.flatnonzero(freed[1] == j) if cols is not None else np.zeros(0, dtype=np.int64)
        for t in range(steps):
            entries = [taken.cols[i], blocks.nodes.cols[j]] + ([int(cols[t])] if cols is not None else [])
            values = [1.0, -1.0] + ([1.0] if cols is not None else [])
            entries += freed[0][out].tolist()  # the load of lost pairs at this surviving site is gone
            values += (-freed[2][out, t]).tolist()
            groups_row += [count] * len(entries)
            groups_col += entries
            groups_value += values
            count += 1
    lm.add_rows(f"spare_{f}", None if count == 1 else [str(i) for i in range(count)], row=groups_row, col=groups_col,
                value=groups_value, upper=0.0, size=count)  # fmt: skip
    blocks.moves.append(z)


def _freed_entries(
    data: PlacementInput, loss: Loss, support: IntArray, position: IntArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """The load the loss takes off surviving sites: each lost pair's entry at a site that survives.

    A cross-metro pair whose prefill site fails no longer loads its decode site (nor the other way round).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    loss : Loss
        The loss.
    support : numpy.ndarray
        The pairs the plan uses.
    position : numpy.ndarray
        ``(p,)`` share column of each pair (-1 off the support).

    Returns
    -------
    tuple of numpy.ndarray
        Share column, site and ``(e, T)`` node-equivalents at a share of 1 of each entry. [-, -, nodes]
    """
    lost = support[data.pairs_touching(loss.failed_sites)[support]]
    at, site, nodes = load_entries_of(data, lost)
    keep = ~np.isin(site, loss.failed_sites)
    at, site, nodes = at[keep], site[keep], nodes[keep]
    load = data.slice_demand_tok_s[data.pair_commodity[lost[at]]] * nodes[:, None]
    return position[lost[at]], site, np.asarray(load, dtype=float)


def _run(blocks: _Blocks, options: SolverOptions, *, time_limit_s: float | None) -> tuple[SolverReport, FloatArray]:
    """Solve with HiGHS: the report and the column values (empty without a solution)."""
    import highspy

    h = to_highspy(blocks.model, new_highs(threads=options.threads))
    h.setOptionValue("mip_rel_gap", options.gap)
    if time_limit_s is not None:
        h.setOptionValue("time_limit", max(1.0, time_limit_s))
    start = time.perf_counter()
    h.run()
    runtime = time.perf_counter() - start
    status = h.getModelStatus()
    info = h.getInfo()
    message = h.modelStatusToString(status)
    statuses = highspy.HighsModelStatus
    if info.primal_solution_status != 2:
        kind = SolveStatus.INFEASIBLE if status == statuses.kInfeasible else SolveStatus.NO_SOLUTION
        stop = StopReason.TIME_LIMIT if status == statuses.kTimeLimit else StopReason.OTHER
        return SolverReport("highs", kind, math.nan, math.nan, math.nan, runtime, message, stop), np.zeros(0)
    objective = float(info.objective_function_value) + blocks.model.objective_constant
    integer = any(b.integer for b in blocks.model.columns)
    bound = float(info.mip_dual_bound) if integer else objective
    optimal = status == statuses.kOptimal
    stop = StopReason.GAP if optimal else StopReason.TIME_LIMIT if status == statuses.kTimeLimit else StopReason.OTHER
    report = SolverReport(
        "highs", SolveStatus.OPTIMAL if optimal else SolveStatus.FEASIBLE, objective, bound,
        relative_gap(objective, bound), runtime, message, stop,
    )  # fmt: skip
    return report, np.asarray(h.getSolution().col_value, dtype=float)


def _remaining(options: SolverOptions, start: float) -> float | None:
    """What is left of this step's time limit, and no more than what is left of the whole solve's."""
    limit = options.time_limit_s
    own = None if limit is None else limit - (time.perf_counter() - start)
    whole = options.remaining_s()
    return whole if own is None else own if whole is None else min(own, whole)


def protect_plan(data: PlacementInput, base: PlacementSolution, options: SolverOptions) -> PlacementSolution:
    """Protect a plan without N+1: every served commodity covered on every loss, the most served, at least cost.

    Parameters
    ----------
    data : PlacementInput
        The arrays (``fault_tolerant``).
    base : PlacementSolution
        The plan without N+1 that serves the most (:func:`placement.optimize.priced.solve_priced`).
    options : SolverOptions
        Solver settings; the time limit counts from this call.

    Returns
    -------
    PlacementSolution
        Verified, with ``failover_share`` per loss and ``without_n_plus_one`` the base plan; its bound is the
        base plan's (serving at most as much, without protection), its gap against it. When HiGHS finds no
        protected design in time, the base plan is returned with ``n_plus_one_dropped``.
    """
    start = time.perf_counter()
    scenarios = losses(data, base.pair_share)
    if not scenarios:
        return replace(base, without_n_plus_one=base)
    # Whole nodes draw more than the LP's fractions: under a carbon or water cap the most served is the MILP's
    small = protection_size(data, base, scenarios) <= MILP_MAX_COLUMNS
    most = protection_model(data, base, scenarios, least_cost=False, integer=bool(data.caps) and small)
    lp_report, lp_x = _run(most, options, time_limit_s=_remaining(options, start))
    if not lp_report.status.has_solution:
        return replace(base, n_plus_one_dropped=True)
    served_tok_s = float(lp_x[most.shares.cols] @ data.mean_demand_tok_s[data.pair_commodity[most.support]])
    floor = served_tok_s * (1 - CAP_SLACK) - 1e-6
    if small:
        cheapest = protection_model(data, base, scenarios, least_cost=True, min_served_tok_s=floor)
        report, x = _run(cheapest, options, time_limit_s=_remaining(options, start))
        if not report.status.has_solution:
            return replace(base, n_plus_one_dropped=True)
    else:
        cheapest = most
        answer = _sequential(data, base, scenarios, most, lp_x, options)
        if answer is None:
            return replace(base, n_plus_one_dropped=True)
        report, x = answer
    solution = _extract(data, base, scenarios, cheapest, x)
    cost = solution.objective_usd_per_h
    bound = base.report.best_bound
    message = (
        f"{base.report.message}; then every served commodity protected against {len(scenarios)} losses on its pairs "
        f"({report.message}); the bound is the plan's without N+1"
    )
    gap = relative_gap(cost, bound)
    status = SolveStatus.OPTIMAL if gap <= options.gap + 1e-12 else SolveStatus.FEASIBLE
    total = replace(
        base.report, status=status, objective=cost, best_bound=bound, gap=gap, stopped_by=report.stopped_by,
        runtime_s=base.report.runtime_s + time.perf_counter() - start, message=message,
    )  # fmt: skip
    solution = replace(solution, report=total)
    problems = verify_solution(data, solution, optional=True)
    if problems:
        raise SolverError("the protected plan violates constraints: " + "; ".join(problems))
    return solution


def protection_size(data: PlacementInput, base: PlacementSolution, scenarios: list[Loss]) -> int:
    """Columns of the protection model (the re-routes dominate)."""
    support = int((base.pair_share > ABS_TOL).sum())
    return 2 * data.n_sites + support * (1 + len(data.slice_hours)) + sum(len(loss.backup) for loss in scenarios)


def _scenario_spare(
    data: PlacementInput, loss: Loss, lost: FloatArray, spare: tuple[FloatArray, IntArray, BoolArray], options: SolverOptions
) -> tuple[FloatArray, FloatArray] | None:
    """One loss on its own: the cheapest extra nodes (and standby sites) that take what it moves, by LP.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    loss : Loss
        The loss (its commodities and backup pairs).
    lost : numpy.ndarray
        ``(len(loss.commodities),)`` share of each that the failed sites carry.
    spare : tuple
        ``(busiest, nodes, open)``: each site's busiest-slice load during the loss (what survives it) [nodes], its
        nodes so far, whether it is open.
    options : SolverOptions
        Solver settings.

    Returns
    -------
    tuple of numpy.ndarray or None
        ``(z, extra)``: the re-routed share of each backup pair and the extra node-equivalents per receiving
        site (``np.unique`` of their sites); None when HiGHS reports no optimum.
    """
    busiest, nodes, is_open = spare
    position, site, entry_nodes = load_entries_of(data, loss.backup)  # a cross-metro backup loads both its sites
    receiving = np.unique(site)
    per_node = data.site_node_usd_per_h[receiving] + np.where(
        is_open[receiving], 0.0, data.site_fixed_usd_per_h[receiving] / np.maximum(data.site_max_nodes[receiving], 1)
    )
    lm = LinearModel("spare")
    z = lm.add_columns("move", [str(p) for p in loss.backup.tolist()], upper=1.0, size=len(loss.backup))
    room = np.maximum(data.site_max_nodes[receiving] - nodes[receiving], 0).astype(float)
    extra = lm.add_columns("extra", [str(j) for j in receiving.tolist()], upper=room, cost=per_node)
    n = len(loss.commodities)
    row = np.searchsorted(loss.commodities, data.pair_commodity[loss.backup])
    labels = [str(c) for c in loss.commodities.tolist()]
    lm.add_rows("moved", labels, row=row, col=z.cols, value=np.ones(len(z.cols)), lower=lost, upper=lost, size=n)
    entry_peak = data.peak_demand_tok_s[data.pair_commodity[loss.backup[position]]] * entry_nodes
    r = len(receiving)
    lm.add_rows(
        "fits", [str(j) for j in receiving.tolist()], row=np.concatenate([np.searchsorted(receiving, site), np.arange(r)]),
        col=np.concatenate([z.cols[position], extra.cols]), value=np.concatenate([entry_peak, -np.ones(r)]),
        upper=nodes[receiving] - busiest[receiving], size=r,
    )  # fmt: skip
    h = to_highspy(lm, new_highs(threads=options.threads))
    h.run()
    if h.modelStatusToString(h.getModelStatus()) != "Optimal":
        return None
    x = np.asarray(h.getSolution().col_value, dtype=float)
    return np.clip(x[z.cols], 0.0, 1.0), np.maximum(x[extra.cols], 0.0)


def _sequential(
    data: PlacementInput, base: PlacementSolution, scenarios: list[Loss], blocks: _Blocks, x: FloatArray, options: SolverOptions
) -> tuple[SolverReport, FloatArray] | None:
    """Spare for one loss at a time, largest first: a feasible answer without the least-cost MILP.

    Losses happen one at a time, so each only needs the spare it moves into; spare bought for one is free for
    the next. The plan's own routing is tried first when protection serves as much as the plan without it; if
    some loss cannot be covered on it inside the sites' power, the most-served LP's shares are used, on which
    every loss's LP is feasible (that LP's re-routes fit). Extra nodes are rounded up, so every loss fits in
    the end. Spare sized so may draw past a carbon or water cap: such a routing is not taken. Returns the column
    values in the layout of ``blocks`` (None: no routing is protected within the power and the caps).
    """
    start = time.perf_counter()
    most = np.zeros(len(data.pair_site))
    most[blocks.support] = x[blocks.shares.cols]
    attempts = [most]
    if base.served_mean_tok_s(data) >= float(most @ data.mean_demand_tok_s[data.pair_commodity]) - 1e-6:
        attempts.insert(0, base.pair_share)  # protection serves as much as the plan without it: try its routing
    for shares in attempts:
        answer = spare_one_at_a_time(data, scenarios, blocks.support, shares, options)
        if answer is not None and cap_excess_per_h(data, answer[1], answer[0], shares).any():
            answer = None  # the spare, sized without the caps, draws past one of them: the next routing, or none
        if answer is not None:
            nodes, is_open, moves = answer
            out = x.copy()
            for block, z in zip(blocks.moves, moves, strict=True):
                out[block.cols] = z
            out[blocks.nodes.cols] = nodes
            out[blocks.opens.cols] = is_open.astype(float)
            out[blocks.shares.cols] = shares[blocks.support]
            cost = data.cost_usd_per_h(is_open, nodes, shares)
            routing = "the plan's routing" if shares is base.pair_share else "the most-served LP's routing"
            message = f"spare sized one loss at a time on {routing} ({len(scenarios)} LPs)"
            runtime = time.perf_counter() - start
            return SolverReport("highs", SolveStatus.FEASIBLE, cost, math.nan, math.nan, runtime, message, StopReason.OTHER), out
    return None


def spare_one_at_a_time(
    data: PlacementInput,
    scenarios: list[Loss],
    support: IntArray,
    shares: FloatArray,
    options: SolverOptions,
    *,
    installed: IntArray | None = None,
) -> tuple[IntArray, BoolArray, list[FloatArray]] | None:
    """Nodes, open sites and each loss's re-routes (in its backup order) on these shares; None if a loss cannot fit.

    ``support`` holds the pairs the plan uses; ``installed``, ``(m,)`` nodes already in service at each site (a
    build-out's earlier spares among them), is a floor on every site's nodes and their spare is used first.

    A first pass sizes the losses largest first, each on the spare the earlier ones bought. Then, for
    :data:`IMPROVE_ROUNDS` rounds, each loss is sized again on the spare every *other* loss needs: it can move
    into spare bought after it, and what only it needed is bought again only where still cheapest. A loss's
    previous re-routes stay feasible in its LP, so no step raises its extra cost, and every loss fits at the end.
    """
    m, count = data.n_sites, len(scenarios)
    own = np.ceil(data.site_slice_load(shares).max(axis=1, initial=0.0) - NODE_TOL).clip(min=0).astype(np.int64)
    if installed is not None:
        own = np.maximum(own, installed)
    # each site's busiest slice during each loss, on what survives it (a cross-metro pair is lost with either site)
    kept = [np.where(data.pairs_touching(loss.failed_sites), 0.0, shares) for loss in scenarios]
    busiest = np.array([data.site_slice_load(k).max(axis=1, initial=0.0) for k in kept]).reshape(count, m)
    entry_pair, entry_site, entry_nodes = data.load_entries()  # a cross-metro pair loads both its sites
    entry_peak = data.peak_demand_tok_s[data.pair_commodity[entry_pair]] * entry_nodes
    lost = [_lost_share(data, loss, support, shares) for loss in scenarios]
    need = np.zeros((count, m))  # node-equivalents each loss needs at each site: what it keeps, plus what moves in at peak
    sized = np.zeros(count, dtype=bool)
    moves: list[FloatArray] = [np.zeros(len(loss.backup)) for loss in scenarios]
    order = sorted(range(count), key=lambda i: -float(scenarios[i].lost_share.sum()))
    for _ in range(1 + IMPROVE_ROUNDS):
        for i in order:
            others = need[sized & (np.arange(count) != i)].max(axis=0, initial=0.0)
            nodes = np.maximum(own, np.ceil(others - NODE_TOL)).astype(np.int64)
            is_open = (nodes > 0) | data.site_locked
            loss = scenarios[i]
            allowed = loss
            if data.max_sites_open is not None and int(is_open.sum()) >= data.max_sites_open:
                allowed = replace(loss, backup=loss.backup[is_open[data.pair_site[loss.backup]]])
            answer = _scenario_spare(data, allowed, lost[i], (busiest[i], nodes, is_open), options)
            if answer is None:
                return None
            full = np.zeros(len(data.pair_site))
            full[allowed.backup] = answer[0]
            moves[i] = full[loss.backup]
            need[i] = busiest[i] + np.bincount(entry_site, weights=full[entry_pair] * entry_peak, minlength=m)
            sized[i] = True
    nodes = np.maximum(own, np.ceil(need.max(axis=0, initial=0.0) - NODE_TOL)).astype(np.int64)
    nodes = np.minimum(nodes, data.site_max_nodes)
    return nodes, (nodes > 0) | data.site_locked, moves


def _lost_share(data: PlacementInput, loss: Loss, support: IntArray, shares: FloatArray) -> FloatArray:
    """``(len(loss.commodities),)`` share of each of the loss's commodities on pairs that load a failed site."""
    failed = support[data.pairs_touching(loss.failed_sites)[support]]
    failed = failed[np.isin(data.pair_commodity[failed], loss.commodities)]
    position = np.searchsorted(loss.commodities, data.pair_commodity[failed])
    return np.asarray(np.bincount(position, weights=shares[failed], minlength=len(loss.commodities)), dtype=float)


def _extract(
    data: PlacementInput, base: PlacementSolution, scenarios: list[Loss], blocks: _Blocks, x: FloatArray
) -> PlacementSolution:
    """The plan with the MILP's nodes, sites, shares and re-routes."""
    shares = np.zeros(len(data.pair_site))
    shares[blocks.support] = np.clip(x[blocks.shares.cols], 0.0, 1.0)
    shares[shares < NOISE] = 0.0
    nodes = np.rint(x[blocks.nodes.cols]).astype(np.int64)
    is_open: BoolArray = x[blocks.opens.cols] > 0.5
    moved: dict[int, FloatArray] = {}
    for loss, z in zip(scenarios, blocks.moves, strict=True):
        share = np.zeros(len(data.pair_site))
        share[loss.backup] = np.clip(x[z.cols], 0.0, 1.0)
        share[share < NOISE] = 0.0  # not ABS_TOL: dropping pieces below it left 1e-6 of a loss unmoved
        moved[loss.key] = share
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    unserved = np.clip(1.0 - served, 0.0, 1.0)
    cost = data.cost_usd_per_h(is_open, nodes, shares)
    return replace(
        base, open=is_open, nodes=nodes, pair_share=shares, unserved_share=unserved, objective_usd_per_h=cost,
        failover_share=moved, without_n_plus_one=base,
    )  # fmt: skip


def spare_nodes(base: PlacementSolution, protected: PlacementSolution) -> IntArray:
    """``(m,)`` nodes protection added at each site."""
    return np.asarray(protected.nodes - base.nodes, dtype=np.int64)
