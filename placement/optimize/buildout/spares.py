"""N+1 in a build-out: each year's spare nodes, sized after the solve, carried into the years after.

A solved build-out (:mod:`placement.optimize.buildout.solve`) is protected year by year, in order, in every demand
scenario, with the single-year machinery (:mod:`placement.optimize.protect`): each year's plan is seen as a
single-year plan (:func:`year_view`: its demand rows the commodities, its routing the shares, its nodes in service the
sites' nodes), every loss of one site or one fault domain that takes protected load away is found
(:func:`~placement.optimize.protect.losses`), and the cheapest spare nodes that take what each loss moves, inside the
moved rows' allowed pairs (their RTT and TTFT budgets), are sized one loss at a time
(:func:`~placement.optimize.protect.spare_one_at_a_time`). The spares are bought in that year; as every node, they serve
for their life, so the years after count them before buying more. The sites' power holds in every year of a spare's
life, and the MW reserved and the open sites follow the nodes. The build-out's costs and caps then count the spares
like any node (capex annuity, idle power and opex); :func:`placement.optimize.buildout.solve.solve_buildout` re-solves
with the caps held lower when the spares' idle draw breaks one.

A site may run several accelerators (a fleet mix). Its spares are bought in one of them (:func:`spare_parts`), and its
capacity is counted in nodes of that part: its own nodes, plus each other part's nodes at the least ratio of their
goodput to its over the classes (:func:`capacity_in_part`). That count never overstates what the site can serve (a
node of another part carries at least that share of a node of the spare part's load, whatever the class mix), so the
spares are enough; at a site running two parts it may buy a little more than the least.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement._errors import SolverError
from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.buildout.input import BuildoutInput, BuildoutSolution, FirstStage, NPlusOne, nodes_in_service
from placement.optimize.buildout.protected import Protection, YearProtection
from placement.optimize.problem import PlacementInput
from placement.optimize.protect import losses, spare_one_at_a_time
from placement.optimize.solver import SolverOptions
from placement.optimize.verify import ABS_TOL

HOURS_PER_DAY = 24.0
"""A single-year plan's slices are hours of the day; the build-out's are shares of it."""

NODE_TOL = 1e-6
"""Node counts within this of a whole number round to it."""


def spare_parts(data: BuildoutInput, nodes: FloatArray, y: int, s: int) -> IntArray:
    """``(M,)`` the accelerator each site's spares are bought in, in year ``y`` and scenario ``s``.

    Among the parts that may be bought there that year: one that serves every class first, then the one the site runs
    most nodes of, then the cheapest per token/s (capex annuity and running cost over its mean goodput). A site where
    none may be bought counts its capacity in the part it runs most of (it gets no spares).

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    nodes : numpy.ndarray
        ``(M, A)`` nodes in service in that year and scenario. [nodes]
    y, s : int
        Year and scenario.

    Returns
    -------
    numpy.ndarray of int
        Accelerator index per site.
    """
    goodput = data.goodput_kays[:, :, y, s]  # (K, A)
    serves_all = np.asarray((goodput > 0).all(axis=0))  # (A,)
    mean_goodput = np.where(goodput > 0, goodput, 0.0).mean(axis=0)
    usd_per_h = data.node_annuity_usd_per_h[:, y][None, :] + data.running_may[:, :, y]  # (M, A)
    per_tok = usd_per_h / np.maximum(mean_goodput, 1e-300)[None, :]
    buyable = data.buyable_at_site[:, :, y]
    out = np.argmax(nodes, axis=1)  # where none may be bought: the part run most
    for j in np.flatnonzero(buyable.any(axis=1)).tolist():
        candidates = np.flatnonzero(buyable[j]).tolist()
        out[j] = max(candidates, key=lambda h: (bool(serves_all[h]), float(nodes[j, h]), -float(per_tok[j, h])))
    return np.asarray(out, dtype=np.int64)


def part_ratio(goodput: FloatArray, part: int) -> FloatArray:
    """``(A,)`` the least ratio over the classes of each accelerator's goodput to ``part``'s (1 for ``part`` itself).

    A node of accelerator ``h`` serves, of any mix of the classes ``part`` serves, at least this share of what a node of
    ``part`` serves; 0 when ``h`` cannot serve one of them.

    Parameters
    ----------
    goodput : numpy.ndarray
        ``(K, A)`` goodput of one node per class. [tokens/s]
    part : int
        The accelerator counted in.
    """
    served = goodput[:, part] > 0
    if not served.any():
        return np.asarray(np.eye(goodput.shape[1])[part])
    ratio = goodput[served] / goodput[served, part][:, None]
    out = ratio.min(axis=0)
    out[part] = 1.0
    return np.asarray(out)


def capacity_in_part(data: BuildoutInput, nodes: FloatArray, part: IntArray, y: int, s: int) -> FloatArray:
    """``(M,)`` each site's nodes counted in nodes of its spare part (:func:`part_ratio` for the other parts). [nodes]"""
    goodput = data.goodput_kays[:, :, y, s]
    ratios = np.array([part_ratio(goodput, int(h)) for h in part.tolist()]).reshape(nodes.shape)
    return np.asarray((nodes * ratios).sum(axis=1))


def room_nodes(data: BuildoutInput, buy: FloatArray, part: IntArray, y: int, s: int) -> IntArray:
    """``(M,)`` spare-part nodes each site can still add in year ``y``: its power holds in every year of their life.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    buy : numpy.ndarray
        ``(M, A, Y, S)`` purchases so far (spares of earlier years among them). [nodes]
    part : numpy.ndarray of int
        ``(M,)`` spare part per site.
    y, s : int
        Year and scenario.
    """
    drawn_mw = np.einsum("may,ma->my", nodes_in_service(data, buy)[..., s], data.node_mw)  # (M, Y)
    free_mw = (data.site_mw_available - drawn_mw)[:, data.alive[y]].min(axis=1)
    buyable = data.buyable_at_site[np.arange(len(part)), part, y]
    per_node_mw = data.node_mw[np.arange(len(part)), part]
    room = np.floor(np.maximum(free_mw, 0.0) / per_node_mw + 1e-9)
    return np.asarray(np.where(buyable, room, 0.0), dtype=np.int64)


def protectable_rows(data: BuildoutInput, y: int, pairs: IntArray) -> BoolArray:
    """``(R,)`` demand rows with two or more sites in reach (of ``pairs``) that have power in year ``y``.

    N+1 needs a second site: a row with one alone is served without a backup (unprotectable).
    """
    powered = data.site_mw_available[:, y] > 0
    pairs = pairs[powered[data.pair_site[pairs]]]
    distinct = np.unique(np.column_stack([data.pair_row[pairs], data.pair_site[pairs]]), axis=0)
    return (
        np.asarray(np.bincount(distinct[:, 0], minlength=data.row_class.size) >= 2)
        if len(distinct)
        else np.zeros(data.row_class.size, dtype=bool)
    )


def year_view(
    data: BuildoutInput,
    n_plus_one: NPlusOne,
    first: FirstStage,
    y: int,
    s: int,
    part: IntArray,
    max_nodes: IntArray,
    pairs: IntArray,
) -> PlacementInput:
    """Year ``y`` of scenario ``s`` as a single-year plan's arrays, nodes counted in each site's spare part.

    The demand rows are the commodities, the build-out's ``pairs`` the pairs (their load in spare-part nodes per
    token/s), a node of the spare part costs its capex annuity and running cost of that year, and ``max_nodes`` bounds
    each site.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    n_plus_one : NPlusOne
        The fault domains.
    first : FirstStage
        Sites open (they are the year's locked sites).
    y, s : int
        Year and scenario.
    part : numpy.ndarray of int
        ``(M,)`` spare part per site.
    max_nodes : numpy.ndarray of int
        ``(M,)`` most spare-part nodes (those counted in and those that may be added).
    pairs : numpy.ndarray of int
        The build-out's pairs kept (:func:`servable_pairs`), ascending.

    Returns
    -------
    PlacementInput
        ``fault_tolerant``; only ``protect``-ed rows (:func:`protectable_rows`) are held to N+1.
    """
    m = data.node_mw.shape[0]
    goodput = data.goodput_kays[:, :, y, s]  # (K, A)
    row, site = data.pair_row[pairs], data.pair_site[pairs]
    per_tok = 1.0 / goodput[data.row_class[row], part[site]]
    site_mw = data.node_mw[np.arange(m), part]
    return PlacementInput(
        slice_demand_tok_s=data.row_demand_tok_s[:, :, y, s],
        slice_hours=data.slice_weight * HOURS_PER_DAY,
        pair_commodity=row,
        pair_site=site,
        pair_nodes_per_tok_s=np.asarray(per_tok),
        pair_rtt_ms=np.zeros(len(pairs)),
        pair_cost_usd_per_h=np.zeros(len(pairs)),
        site_fixed_usd_per_h=data.site_fixed_usd_per_h,
        site_node_usd_per_h=data.node_annuity_usd_per_h[part, y] + data.running_may[np.arange(m), part, y],
        site_node_mw=site_mw,
        site_mw_available=max_nodes * site_mw,
        site_locked=first.open[:, y],
        fault_tolerant=True,
        daily_mean_tok_s=data.daily_demand_tok_s[:, y, s],
        protect=protectable_rows(data, y, pairs),
        failure_domains=n_plus_one.domains,
    )


def servable_pairs(data: BuildoutInput, solution: BuildoutSolution, part: IntArray, y: int, s: int) -> IntArray:
    """The pairs whose class the site's spare part serves (a lost load moves only onto capacity that can serve it).

    Raises
    ------
    SolverError
        When the plan serves a class at a site on a part other than the spare part and the spare part cannot serve it
        (its load cannot be counted in spare-part nodes).
    """
    goodput = data.goodput_kays[:, :, y, s]
    servable = goodput[data.row_class[data.pair_row], part[data.pair_site]] > 0
    used = (solution.pair_share[:, y, s] > ABS_TOL) & ~servable
    if used.any():
        p = int(np.flatnonzero(used)[0])
        raise SolverError(
            f"N+1 in year {y + 1} of the horizon: site index {int(data.pair_site[p])} serves class index "
            f"{int(data.row_class[data.pair_row[p]])} on a part, and the part its spares are bought in cannot serve that "
            "class, so its capacity cannot be counted in one part. Fix: offer there a part that serves every class, or "
            "set fault_tolerance.n_plus_one: false"
        )
    return np.flatnonzero(servable).astype(np.int64)


def _protect_year(
    data: BuildoutInput, solution: BuildoutSolution, buy: FloatArray, y: int, s: int, options: SolverOptions
) -> tuple[IntArray, IntArray, YearProtection]:
    """Spares of one year and scenario: the spare part per site, the nodes bought, what the single-year machinery saw."""
    assert data.n_plus_one is not None
    nodes = nodes_in_service(data, buy)[:, :, y, s]
    part = spare_parts(data, nodes, y, s)
    installed = np.floor(capacity_in_part(data, nodes, part, y, s) + NODE_TOL).astype(np.int64)
    max_nodes = installed + room_nodes(data, buy, part, y, s)
    pairs = servable_pairs(data, solution, part, y, s)
    view = year_view(data, data.n_plus_one, solution.first, y, s, part, max_nodes, pairs)
    shares = solution.pair_share[pairs, y, s]
    found = losses(view, shares)
    if not found:
        return part, np.zeros_like(installed), YearProtection(view, pairs, installed, {})
    support = np.flatnonzero(shares > ABS_TOL)
    answer = spare_one_at_a_time(view, found, support, shares, options, installed=installed)
    if answer is None:
        raise SolverError(
            f"N+1 in year {y + 1} of the horizon: the load of a lost site or fault domain cannot be re-routed inside its "
            "budgets onto the surviving sites' power. Fix: give the sites in reach more power (horizon.power_schedule, "
            "mw_available), allow more sites, or set fault_tolerance.n_plus_one: false"
        )
    spare_nodes, _, moves = answer
    moved: dict[int, FloatArray] = {}
    for loss, z in zip(found, moves, strict=True):
        share = np.zeros(len(pairs))
        share[loss.backup] = z
        moved[loss.key] = share
    extra = np.maximum(spare_nodes - installed, 0)
    return part, extra, YearProtection(view, pairs, np.maximum(spare_nodes, installed), moved)


def follow_nodes(data: BuildoutInput, first: FirstStage, nodes: FloatArray) -> FirstStage:
    """The first stage raised to hold the nodes: MW reserved (never going back) and sites open where nodes run."""
    need = np.einsum("mays,ma->mys", nodes, data.node_mw).max(axis=2)
    reserved = np.maximum.accumulate(np.maximum(first.mw_reserved, need), axis=1)
    reserved = np.minimum(reserved, np.maximum(data.site_mw_available, first.mw_reserved))
    running = nodes.sum(axis=(1, 3)) > NODE_TOL
    opened = np.logical_or.accumulate(first.open | (reserved > 0) | running, axis=1)
    return FirstStage(opened, reserved)


def keep_lit(data: BuildoutInput, opened: BoolArray, buy: FloatArray, part: IntArray) -> FloatArray:
    """Purchases with one node added where a site a spare opened would stand dark once that spare retires.

    Sites never close and an open site runs at least one node (the build-out's rule): a site opened for spares keeps
    one node of its spare part in the years after its spares' life, when nothing else runs there.

    Parameters
    ----------
    data : BuildoutInput
        The arrays.
    opened : numpy.ndarray of bool
        ``(M, Y)`` sites the plan opened before the spares (they run nodes of their own).
    buy : numpy.ndarray
        ``(M, A, Y, S)`` purchases with the spares. [nodes]
    part : numpy.ndarray of int
        ``(M, Y, S)`` spare part per site.

    Returns
    -------
    numpy.ndarray
        The purchases, a node added in each year a spare-opened site would first stand dark. [nodes]
    """
    out = buy.copy()
    _, _, _, n_years, n_scen, _ = data.shape
    buyable = data.buyable_at_site
    for s in range(n_scen):
        for y in range(n_years):
            running = nodes_in_service(data, out)[:, :, :, s].sum(axis=1) > NODE_TOL  # (M, Y)
            ever = np.logical_or.accumulate(running | opened, axis=1)
            for j in np.flatnonzero(ever[:, y] & ~running[:, y] & ~opened[:, y]).tolist():
                h = int(part[j, y, s]) if buyable[j, part[j, y, s], y] else int(np.argmax(buyable[j, :, y]))
                out[j, h, y, s] += 1.0  # none buyable there that year: the plan's check names the dark site
    return out


def with_spares(data: BuildoutInput, solution: BuildoutSolution, options: SolverOptions) -> BuildoutSolution:
    """The plan with N+1 spares in every year and scenario (the plan itself when ``data.n_plus_one`` is None).

    Years are walked in order: a year's spares serve in the years after (their life), so those years buy only what
    they still need. Routing and the load served are the plan's; the spares idle until a loss.

    Parameters
    ----------
    data : BuildoutInput
        The arrays (``n_plus_one`` given).
    solution : BuildoutSolution
        A solved plan (rounded, or with whole nodes).
    options : SolverOptions
        Solver settings (the spare LPs' threads).

    Returns
    -------
    BuildoutSolution
        More purchases, MW reserved and open sites; ``protection`` says what was added and how each loss re-routes.

    Raises
    ------
    SolverError
        When a loss cannot be re-routed within the sites' power in some year.
    """
    if data.n_plus_one is None or not solution.report.status.has_solution:
        return solution
    _, _, _, n_years, n_scen, _ = data.shape
    buy = solution.buy.copy()
    part = np.zeros((data.node_mw.shape[0], n_years, n_scen), dtype=np.int64)
    years: dict[tuple[int, int], YearProtection] = {}
    for y in range(n_years):
        for s in range(n_scen):
            part[:, y, s], extra, years[(y, s)] = _protect_year(data, solution, buy, y, s, options)
            buy[np.arange(len(extra)), part[:, y, s], y, s] += extra  # one part per site: no repeated index
    buy = keep_lit(data, solution.first.open, buy, part)
    nodes = nodes_in_service(data, buy)
    first = follow_nodes(data, solution.first, nodes)
    record = Protection(solution.first.open, solution.first.mw_reserved, solution.buy, solution.nodes, part, years)
    return replace(solution, first=first, buy=buy, nodes=nodes, protection=record)


def spare_nodes_bought(solution: BuildoutSolution) -> FloatArray:
    """``(M, A, Y, S)`` nodes N+1 added to the purchases (zeros for a plan without N+1). [nodes]"""
    if solution.protection is None:
        return np.zeros_like(solution.buy)
    return np.asarray(solution.buy - solution.protection.base_buy)


def without_spares(solution: BuildoutSolution) -> BuildoutSolution:
    """The plan before its N+1 spares (the plan itself without N+1)."""
    p = solution.protection
    if p is None:
        return solution
    first = FirstStage(p.base_open, p.base_mw_reserved)
    return replace(solution, first=first, buy=p.base_buy, nodes=p.base_nodes, protection=None)
