"""The LP relaxation of the full placement model by column generation: pairs priced in, slices cut, a bound every round.

At full resolution most (commodity, site) pairs can never pay: a commodity is served from one or two of the
dozens of sites in its reach. So the LP relaxation (strong linking rows ``share[p] <= open[j]`` included) is
solved on a few pairs per commodity and a few time slices per site, and grows:

- *pricing*: a pair left out is added when its reduced cost under the current duals is negative;
- *slice cuts*: a site's node-capacity row of a slice is added when the current shares overload it.

Every round also yields a Lagrangian bound: with the current duals (clipped to their valid signs; left-out
rows have dual 0), ``min`` of the Lagrangian over a box that contains every feasible point (each commodity's
shares and unserved share on their simplex, opens and nodes in their bounds) is a lower bound of the *full*
model over every pair and slice, its MILP included. When no pair prices out and no slice is overloaded, the
bound equals the LP optimum of the full model.

Two objectives share the machinery: ``"unserved"`` (least unserved mean goodput: what the sites' power can
carry at most) and ``"cost"`` (least cost, with unserved goodput capped). The restricted LP
(:mod:`placement.optimize.restricted_lp`) grows in place, kept in step with HiGHS, which keeps its basis between
rounds; the bound and the reduced costs that price pairs out are :mod:`placement.optimize.lagrangian`'s. This
module holds the rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import sparse

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.lagrangian import lagrangian_bound
from placement.optimize.problem import PlacementInput
from placement.optimize.restricted_lp import RestrictedLP, peak_site_cost

INITIAL_PAIRS_PER_COMMODITY = 10
"""Pairs each commodity starts with: its cheapest by node, energy and fixed cost at its peak."""

INITIAL_SLICES_PER_SITE = 2
"""Node-capacity rows each site starts with: its busiest slices if it served every pair it may serve."""

PRICED_PER_COMMODITY = 4
"""Pairs with negative reduced cost added per commodity and round (the most negative)."""

WEAK_PRICED_PER_COMMODITY = 8
"""As :data:`PRICED_PER_COMMODITY`, for the weak formulation (``links=False``): its LPs stay small as they grow, so
fewer, larger rounds pay (on a 2,000-site world 6 rounds to within 0.1 % of the LP instead of 10, 26 s against 39)."""

MAX_ROUNDS = 60
"""Rounds after which pricing stops (deterministic); the bound of the best round stands."""

CONVERGED = 1e-7
"""Relative distance of the bound to the restricted LP at which the rounds stop."""


@dataclass(frozen=True)
class Relaxation:
    """The LP relaxation of the full model and what it proved.

    Parameters
    ----------
    bound : float
        Lower bound on the objective of the full model (every pair, every slice), MILP included.
    value : float
        Optimum of the last restricted LP (an upper bound of the full LP's optimum).
    shares : numpy.ndarray
        ``(p,)`` LP shares on every pair (0 off the pairs in the model).
    open, nodes : numpy.ndarray
        ``(m,)`` LP open values and node counts.
    unserved : numpy.ndarray
        ``(c,)`` LP unserved shares.
    reduced_cost : numpy.ndarray
        ``(p,)`` reduced cost of every pair under the duals of the last round.
    in_model : numpy.ndarray of bool
        ``(p,)`` pairs in the restricted LP.
    rounds : int
        LP solves.
    converged : bool
        No pair priced out and no slice was overloaded in the last round.
    rows : int
        Rows of the last restricted LP.
    history : list of dict
        Per round: restricted LP value, its Lagrangian bound, LP seconds, pairs and rows in the model.
    timed_out : bool
        The deadline stopped the rounds (the figures are the last round's that finished).
    """

    bound: float
    value: float
    shares: FloatArray
    open: FloatArray
    nodes: FloatArray
    unserved: FloatArray
    reduced_cost: FloatArray
    in_model: BoolArray
    rounds: int
    converged: bool
    rows: int
    history: list[dict[str, float]] = field(default_factory=list)
    timed_out: bool = False


def site_slice_load(data: PlacementInput, shares: FloatArray) -> FloatArray:
    """``(m, T)`` node-equivalents each site carries in each slice (as ``PlacementInput.site_slice_load``, by one product).

    The product is sparse: a dense (sites x commodities) weight table is 400 MB at 2,000 sites and 25,000 rows,
    and most of it zero once the shares are a design's.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    shares : numpy.ndarray
        ``(p,)`` share of each pair.

    Returns
    -------
    numpy.ndarray
        ``(m, T)`` load. [nodes]
    """
    m, c = data.n_sites, data.n_commodities
    pair, site, nodes = data.load_entries()  # a cross-metro pair loads its second site too
    weight = shares[pair] * nodes
    used = np.flatnonzero(weight)
    table = sparse.csr_array((weight[used], (site[used], data.pair_commodity[pair[used]])), shape=(m, c))
    return np.asarray(table @ data.slice_demand_tok_s, dtype=float)


def _peak_cost(data: PlacementInput) -> FloatArray:
    """A pair's cost at a share of 1 if its site's nodes carried it at its peak: a ranking, not a bound."""
    return np.asarray(data.pair_cost_usd_per_h + peak_site_cost(data, data.site_node_usd_per_h, data.peak_demand_tok_s))


def first_of_each(order: IntArray, group: IntArray, count: int) -> IntArray:
    """The first ``count`` entries of ``order`` for each value of ``group[order]`` (in the order given).

    Parameters
    ----------
    order : numpy.ndarray
        Indices, best first.
    group : numpy.ndarray
        Group of every index.
    count : int
        Entries kept per group.

    Returns
    -------
    numpy.ndarray
        The kept indices, grouped.
    """
    ranked = order[np.argsort(group[order], kind="stable")]
    keys = group[ranked]
    starts = np.searchsorted(keys, keys, side="left")
    rank = np.arange(len(ranked)) - starts
    return np.asarray(ranked[rank < count])


def initial_pairs(data: PlacementInput, count: int | None = None) -> IntArray:
    """Each commodity's ``count`` cheapest pairs by :func:`_peak_cost`, and under a carbon or water cap its cleanest.

    Under a cap the cheapest pairs are often the ones it limits: without each commodity's pair that uses least of
    what is capped, the first LPs leave much unserved and pricing brings in most of the model at once (on a 2,000-site
    world, 90,000 pairs in one round and a minute per LP).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    count : int, optional
        Pairs per commodity (default :data:`INITIAL_PAIRS_PER_COMMODITY`).

    Returns
    -------
    numpy.ndarray
        Sorted pair indices.
    """
    order = np.argsort(_peak_cost(data), kind="stable")
    keep = INITIAL_PAIRS_PER_COMMODITY if count is None else count
    picked = [first_of_each(order, data.pair_commodity, keep)]
    for use in {id(cap.pair_per_h): cap.pair_per_h for cap in data.caps}.values():  # caps on one resource share it
        picked.append(first_of_each(np.argsort(use, kind="stable"), data.pair_commodity, 1))
    return np.unique(np.concatenate(picked)).astype(np.int64)


def _round_line(objective: str, step: dict[str, float], rounds: int, best: float) -> str:
    """One pricing round in words: the LP's value, the best bound, their gap, the model's size and what was added."""
    value = step["value"]
    gap = abs(value - best) / max(abs(value), 1e-9) if np.isfinite(best) else float("inf")
    return (
        f"LP round {rounds} ({'least unserved' if objective == 'unserved' else 'least cost'}): value {value:,.6g}, "
        f"bound {best:,.6g} (gap {gap:.2%}), {int(step['pairs']):,} pairs, {int(step['rows']):,} rows; "
        f"+{int(step['priced']):,} priced, +{int(step['slice_cuts']):,} slice and +{int(step['link_cuts']):,} link cuts; "
        f"{step['lp_s']:.1f} s"
    )


def _remote_unlinked(
    data: PlacementInput, lp: RestrictedLP, active: BoolArray, shares: FloatArray, opens: FloatArray
) -> IntArray:
    """Cross-metro pairs in the model whose share exceeds their second site's open value and has no linking row yet."""
    far = data.remote_pairs
    if len(far) == 0:
        return far
    assert data.pair_remote_site is not None
    cut = active[far] & (lp.remote_link_row[far] < 0) & (shares[far] > opens[data.pair_remote_site[far]] + 1e-7)
    return far[cut]


@dataclass(frozen=True)
class _Round:
    """A round's restricted LP, solved: its primal values and value, the shares on every pair, every reduced cost.

    Parameters
    ----------
    col : numpy.ndarray
        Primal value of every column of the restricted LP.
    value : float
        Its optimum.
    shares : numpy.ndarray
        ``(p,)`` share on every pair (0 off the pairs in the model).
    rc_pair : numpy.ndarray
        ``(p,)`` reduced cost of every pair under the round's duals.
    """

    col: FloatArray
    value: float
    shares: FloatArray
    rc_pair: FloatArray


@dataclass(frozen=True)
class _Cuts:
    """What a round adds to the restricted LP, and the load its slice cuts come from.

    Parameters
    ----------
    load : numpy.ndarray
        ``(m, T)`` node-equivalents each site carries in each slice at the round's shares. [nodes]
    over : numpy.ndarray of bool
        ``(m, T)`` slices whose load exceeds the site's nodes and whose row is not in the LP.
    unlinked, remote_unlinked : numpy.ndarray
        Pairs whose share exceeds the open value of their site (of their second site) without a linking row.
    priced : numpy.ndarray
        Pairs left out that price out (each commodity's most negative reduced costs).
    """

    load: FloatArray
    over: BoolArray
    unlinked: IntArray
    remote_unlinked: IntArray
    priced: IntArray

    @property
    def done(self) -> bool:
        """Nothing to price or cut: the restricted LP is the LP of the full model."""
        return not self.over.any() and len(self.priced) == 0 and len(self.unlinked) == 0 and len(self.remote_unlinked) == 0

    def add_to(self, lp: RestrictedLP) -> None:
        """Add the slice rows, the linking rows and the priced pairs to the restricted LP."""
        lp.add_slices(*(a.astype(np.int64) for a in np.nonzero(self.over)))
        lp.add_links(self.unlinked)
        lp.add_remote_links(self.remote_unlinked)
        lp.add_pairs(self.priced)


def _least_unserved_lp(
    data: PlacementInput,
    unserved_cap_tok_s: float | None,
    *,
    pairs: IntArray | None,
    progress: Callable[[str], None] | None,
    deadline: float | None,
    links: bool,
) -> RestrictedLP:
    """The least-unserved LP a least-cost LP from scratch starts from, with pairs that meet the unserved cap.

    A few pairs per commodity may not carry the demand: the least-unserved LP first finds pairs that do.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    unserved_cap_tok_s : float or None
        Unserved mean goodput allowed in all (None: every commodity served in full). [tokens/s]
    pairs, progress, deadline, links
        As :func:`relax`.

    Returns
    -------
    RestrictedLP
        The restricted LP of the least-unserved relaxation.

    Raises
    ------
    TimeoutError
        The deadline stopped pricing before it found pairs that meet the cap.
    ValueError
        No design meets the cap.
    """
    least, lp = relax(data, objective="unserved", pairs=pairs, progress=progress, deadline=deadline, links=links)
    cap = 0.0 if unserved_cap_tok_s is None else unserved_cap_tok_s
    short = least.value > cap * (1 + 1e-9) + 1e-9 * max(float(data.mean_demand_tok_s.sum()), 1.0)
    if short and least.timed_out:
        raise TimeoutError("the time limit stopped pricing before it found pairs that meet the unserved cap")
    if short:
        raise ValueError(f"no design found that leaves at most {cap:,.6g} tok/s unserved: the least is {least.bound:,.6g}")
    return lp


def _new_lp(data: PlacementInput, objective: Literal["cost", "unserved"], pairs: IntArray | None) -> RestrictedLP:
    """A restricted LP from scratch: the given pairs (or :func:`initial_pairs`), each site's busiest slices.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    objective : {"cost", "unserved"}
        Its objective.
    pairs : numpy.ndarray, optional
        Pairs to start with.

    Returns
    -------
    RestrictedLP
        The LP, its slices those each site would carry most if it served every pair it may serve.
    """
    lp = RestrictedLP(data)
    lp.set_objective(objective)
    lp.add_pairs(initial_pairs(data) if pairs is None else pairs)
    potential = site_slice_load(data, np.ones(len(data.pair_site)))
    top = np.argsort(-potential, axis=1, kind="stable")[:, :INITIAL_SLICES_PER_SITE]
    lp.add_slices(np.repeat(np.arange(data.n_sites), top.shape[1]), top.ravel())
    return lp


def _set_unserved_cap(lp: RestrictedLP, objective: Literal["cost", "unserved"], unserved_cap_tok_s: float | None) -> None:
    """Unserved shares in the model (least unserved, or least cost under a cap, its row added once) or artificial.

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP.
    objective : {"cost", "unserved"}
        Its objective.
    unserved_cap_tok_s : float or None
        With ``"cost"``: unserved mean goodput allowed in all (None: every commodity served). [tokens/s]

    Raises
    ------
    ValueError
        The LP already holds another cap.
    """
    if objective == "cost":
        lp.set_unserved(in_model=unserved_cap_tok_s is not None)
        if unserved_cap_tok_s is not None and lp.cap_row < 0:
            lp.add_cap_row(unserved_cap_tok_s)
        elif unserved_cap_tok_s is not None and lp.cap_rhs != unserved_cap_tok_s:
            raise ValueError("the restricted LP holds another unserved cap")
    else:
        lp.set_unserved(in_model=True)


def _solve_within(lp: RestrictedLP, deadline: float | None, *, first: bool) -> tuple[FloatArray, FloatArray, float, float] | None:
    """One solve of the restricted LP in the time left: primal values, duals, value and LP seconds.

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP.
    deadline : float or None
        ``time.perf_counter()`` by which the rounds must end.
    first : bool
        The first round (it runs at least a second whatever is left).

    Returns
    -------
    tuple or None
        None when the deadline has passed (after the first round) or stopped the LP.

    Raises
    ------
    TimeoutError
        The deadline stopped the first round's LP.
    """
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0 and not first:
        return None
    tic = time.perf_counter()
    solved = lp.solve(None if left is None else max(left, 1.0))
    lp_s = time.perf_counter() - tic
    if solved is None and first:
        raise TimeoutError(f"the time limit came before the first LP of pricing finished ({lp_s:.1f} s)")
    if solved is None:
        return None
    col, dual, value = solved
    return col, dual, value, lp_s


def _shares_of(lp: RestrictedLP, col: FloatArray) -> FloatArray:
    """``(p,)`` the share on every pair from the restricted LP's primal values (0 off the pairs in the model)."""
    shares = np.zeros(len(lp.data.pair_site))
    active = lp.pair_col >= 0
    shares[active] = col[lp.pair_col[active]]
    return shares


def _priced_pairs(lp: RestrictedLP, solved: _Round, *, links: bool) -> IntArray:
    """Pairs left out whose reduced cost is negative: each commodity's most negative (a few more without links).

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP.
    solved : _Round
        The round.
    links : bool
        The strong formulation (:data:`PRICED_PER_COMMODITY`), or the weak (:data:`WEAK_PRICED_PER_COMMODITY`).

    Returns
    -------
    numpy.ndarray
        The pairs, grouped by commodity.
    """
    scale = max(abs(solved.value), 1.0)
    priced = np.flatnonzero(~(lp.pair_col >= 0) & (solved.rc_pair < -1e-9 * scale))
    if len(priced):
        order = priced[np.argsort(solved.rc_pair[priced], kind="stable")]
        priced = first_of_each(order, lp.data.pair_commodity, PRICED_PER_COMMODITY if links else WEAK_PRICED_PER_COMMODITY)
    return priced


def _cuts(lp: RestrictedLP, solved: _Round, *, links: bool) -> _Cuts:
    """The slices a round overloads, the linking rows its shares break (with ``links``) and the pairs it prices in.

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP.
    solved : _Round
        The round.
    links : bool
        Cut with the strong linking rows.

    Returns
    -------
    _Cuts
        What to add.
    """
    data = lp.data
    active = lp.pair_col >= 0
    nodes = solved.col[lp.nodes.cols]
    load = site_slice_load(data, solved.shares)
    over = (load > nodes[:, None] * (1 + 1e-9) + 1e-6) & (lp.slice_row < 0)
    opens = solved.col[lp.open.cols]
    unlinked = np.flatnonzero(active & (lp.link_row < 0) & (solved.shares > opens[data.pair_site] + 1e-7))
    remote_unlinked = _remote_unlinked(data, lp, active, solved.shares, opens)
    if not links:
        unlinked, remote_unlinked = unlinked[:0], remote_unlinked[:0]
    return _Cuts(load, over, unlinked, remote_unlinked, _priced_pairs(lp, solved, links=links))


def _closed(lp: RestrictedLP, solved: _Round, cuts: _Cuts, best: float, *, target: float, bound_goal: float | None) -> bool:
    """Whether the bound is close enough to the restricted LP (``target``) or reaches ``bound_goal``.

    With rows still to add the restricted LP is no upper bound of the full LP, so this is a heuristic stop
    (the caller certifies its answer against the bound, and prices on if that falls short); a value
    below the bound says the missing rows matter, and the rounds go on. No slice may be overloaded beyond
    its site's power: the LP's shares are then a design once the nodes are rounded up.

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP.
    solved : _Round
        The round.
    cuts : _Cuts
        What the round would add.
    best : float
        The best bound so far.
    target, bound_goal
        As :func:`relax`.

    Returns
    -------
    bool
        The rounds may stop.
    """
    scale = max(abs(solved.value), 1.0)
    unserved = solved.col[lp.unserved.cols]
    artificial = not lp.unserved_in_model and bool((unserved > 1e-9).any())
    # Overloads the site's power can carry do not stop it: rounding the nodes up to the busiest slice mends them.
    overloaded = cuts.over.any(axis=1)
    beyond_power = bool((cuts.load[overloaded].max(axis=1) > lp.data.site_max_nodes[overloaded] * (1 - 1e-9)).any())
    closed = target > 0 and not beyond_power and not artificial and abs(solved.value - best) <= target * scale
    return closed or (bound_goal is not None and best >= bound_goal)


def _step(lp: RestrictedLP, solved: _Round, cuts: _Cuts, bound: float, lp_s: float) -> dict[str, float]:
    """A round's line of :attr:`Relaxation.history`: value, bound, LP seconds, the model's size, what is added."""
    return {
        "value": solved.value, "bound": bound, "lp_s": lp_s, "pairs": int((lp.pair_col >= 0).sum()), "rows": lp.n_rows,
        "slice_cuts": int(cuts.over.sum()), "link_cuts": len(cuts.unlinked) + len(cuts.remote_unlinked),
        "priced": len(cuts.priced),
    }  # fmt: skip


def _rounds(
    lp: RestrictedLP,
    objective: Literal["cost", "unserved"],
    *,
    max_rounds: int,
    target: float,
    progress: Callable[[str], None] | None,
    deadline: float | None,
    links: bool,
    bound_goal: float | None,
) -> Relaxation:
    """Price pairs and cut slices (and links) round by round until nothing is left, the bound closes, or a limit stops them.

    Parameters
    ----------
    lp : RestrictedLP
        The restricted LP, its objective and unserved shares set.
    objective : {"cost", "unserved"}
        Its objective (for the progress lines).
    max_rounds, target, progress, deadline, links, bound_goal
        As :func:`relax`.

    Returns
    -------
    Relaxation
        The last round that finished, and the best bound of every round (the LP's best bound, kept in it).
    """
    best = -np.inf if lp.best_bound is None else lp.best_bound
    history: list[dict[str, float]] = []
    solved: _Round | None = None
    converged = timed_out = False
    while True:
        step = _solve_within(lp, deadline, first=solved is None)
        if step is None:
            timed_out = True
            break
        col, dual, value, lp_s = step
        bound, rc_pair = lagrangian_bound(lp, dual)
        best = max(best, bound)
        solved = _Round(col, value, _shares_of(lp, col), rc_pair)
        cuts = _cuts(lp, solved, links=links)
        closed = _closed(lp, solved, cuts, best, target=target, bound_goal=bound_goal)
        history.append(_step(lp, solved, cuts, bound, lp_s))
        if progress is not None:
            progress(_round_line(objective, history[-1], len(history), best))
        if cuts.done or closed or len(history) >= max_rounds:
            converged = cuts.done
            break
        cuts.add_to(lp)
    assert solved is not None  # the first round finishes or raises
    lp.best_bound = float(best)
    return Relaxation(
        bound=float(best),
        value=solved.value,
        shares=solved.shares,
        open=solved.col[lp.open.cols],
        nodes=solved.col[lp.nodes.cols],
        unserved=solved.col[lp.unserved.cols],
        reduced_cost=solved.rc_pair,
        in_model=lp.pair_col >= 0,
        rounds=len(history),
        converged=converged,
        rows=lp.n_rows,
        history=history,
        timed_out=timed_out,
    )


def relax(
    data: PlacementInput,
    *,
    objective: Literal["cost", "unserved"],
    unserved_cap_tok_s: float | None = None,
    pairs: IntArray | None = None,
    max_rounds: int = MAX_ROUNDS,
    target: float = CONVERGED,
    lp: RestrictedLP | None = None,
    progress: Callable[[str], None] | None = None,
    deadline: float | None = None,
    links: bool = True,
    bound_goal: float | None = None,
) -> tuple[Relaxation, RestrictedLP]:
    """Solve the LP relaxation of the full model by pricing pairs and cutting slices.

    Parameters
    ----------
    data : PlacementInput
        The arrays (N+1 rows are not modelled: call it without ``fault_tolerant``).
    objective : {"cost", "unserved"}
        Least cost, or least unserved mean goodput (everything else free).
    unserved_cap_tok_s : float, optional
        With ``"cost"``: unserved mean goodput allowed in all (None: every commodity served in full). [tokens/s]
    pairs : numpy.ndarray, optional
        Pairs to start with (default :func:`initial_pairs`).
    max_rounds : int, optional
        LP solves after which the rounds stop.
    target : float, optional
        Stop once the bound is within this share of the restricted LP's value and no slice is overloaded
        beyond its site's power (0: only when nothing is left to price or cut).
    lp : optional
        A restricted LP from an earlier call on the same data, kept with its pairs, slices and (same
        objective and cap) best bound.
    progress : callable, optional
        Receives a line per round: the restricted LP's value, the bound, their gap, what was priced and cut.
    deadline : float, optional
        ``time.perf_counter()`` by which the rounds must end: the LP of a round gets what is left, and one it stops
        (or a round that would start after it) ends the rounds with the last round that finished.
    links : bool, optional
        Cut with the strong linking rows ``share[p] <= open[j]`` a round's shares break (default). False leaves
        them out: the relaxation of the weak formulation, whose bound is lower by at most what the open sites'
        fixed costs share out (0.3 % on a 1,000-site world) and whose LPs are far smaller (1 s a round there,
        against 25 s with the thousands of linking rows a round adds); linking rows already in the LP stay.
    bound_goal : float, optional
        Stop as well once the bound reaches this (what proves a design in hand within its gap).

    Returns
    -------
    tuple
        The :class:`Relaxation` and the restricted LP (to continue from).

    Raises
    ------
    TimeoutError
        The deadline came before the first round's LP finished (there is no bound to hand back).
    ValueError
        With ``"cost"`` from scratch, when no design meets the unserved cap (the least-unserved LP, run
        first to find pairs that carry the demand, proves it).
    """
    if lp is None and objective == "cost":
        lp = _least_unserved_lp(data, unserved_cap_tok_s, pairs=pairs, progress=progress, deadline=deadline, links=links)
        pairs = None
    if lp is None:
        lp = _new_lp(data, objective, pairs)
    else:
        lp.set_objective(objective)
        if pairs is not None:
            lp.add_pairs(pairs)
    _set_unserved_cap(lp, objective, unserved_cap_tok_s)
    relaxation = _rounds(
        lp, objective, max_rounds=max_rounds, target=target, progress=progress, deadline=deadline, links=links,
        bound_goal=bound_goal,
    )  # fmt: skip
    return relaxation, lp
