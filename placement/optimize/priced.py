"""The full model at full resolution: an LP priced over every pair, then a MILP on the pairs it singles out.

1. Least unserved goodput: the LP relaxation with ``objective="unserved"`` (:func:`placement.optimize.pricing.relax`).
   Its bound is a bound of the MILP: above 0, no design serves everything (the sites' power in reach is
   short), and without ``shortfall`` the model is reported infeasible.
2. Least cost, every commodity served (or, with ``shortfall``, at most the least unserved goodput of
   step 1 left unserved): the LP relaxation over every pair and slice, priced and cut until its
   Lagrangian bound is within a quarter of ``options.gap``. That bound is a bound of the full MILP.
3. The LP rounded up (a feasible design in itself) is the answer if it is proven within ``options.gap``;
   otherwise the MILP on the pairs the LPs use plus each commodity's two lowest reduced costs, warm-started
   from it. Its answer is feasible for the full model; the gap is measured against the bound of step 2 (the
   restricted MILP's own bound is not one of the full model, unless it holds every pair). If the gap is above
   ``options.gap``, pricing goes on to tighten the bound.

Every step stops on a count (rounds, nodes) or the gap, so the answer does not depend on the machine
unless the wall-clock safety net is reached.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from placement._errors import SolverError
from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.highs_direct import solve_linear
from placement.optimize.milp import empty, route_on_open_sites, solution_of, unserved_shares, verified
from placement.optimize.model import placement_blocks, warm_start_values
from placement.optimize.pricing import CONVERGED, Relaxation, first_of_each, relax, site_slice_load
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.restrict import lift, restrict_to_pairs
from placement.optimize.restricted_lp import RestrictedLP
from placement.optimize.slope import slope_scaled
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus, StopReason, relative_gap
from placement.optimize.verify import cap_excess_per_h, verify_solution

PRICING_FROM_PAIRS = 30_000
"""Models (without N+1) with more pairs than this are solved by :func:`solve_priced`.

The bundled world at full resolution has ~15,000 pairs on 74 sites and its MILP closes in seconds; on ~300
sites it has ~190,000 and HiGHS's root LP alone takes minutes on 2 cores.
"""

PRICING_TARGET_SHARE = 0.5
"""Pricing stops once the bound is within this share of ``solver.gap`` of the restricted LP (the MILP's answer,
at least the full LP's optimum, then needs the rest of the gap; pricing resumes if it does not make it)."""

WEAK_TARGET_SHARE = 0.02
"""Pricing the weak formulation on (when the rounded LP is not proven) stops once the bound is within this share
of ``solver.gap`` of the restricted LP, or proves the rounded LP."""

MILP_PAIRS_PER_COMMODITY = 2
"""Pairs each commodity brings to the restricted MILP besides those the LP uses: its lowest reduced costs."""

SHORTFALL_TOL = 1e-9
"""Unserved mean goodput, as a share of demand, below which everything counts as served."""

CAP_MARGIN_ROUNDS = 3
"""Times a large model's LPs are solved again, held further below a carbon or water cap its rounded design broke."""

CAP_MARGIN_GROWTH = 2.0
"""Each time, the LPs are held below a broken cap by this many times what the rounded design broke it by, more.

Rounding up adds about the same use whatever the LP (the idle draw of a fraction of a node at each open site), but an
LP held lower spreads over more sites and rounds up more: on the 2,000-site world 1.5 times took a third round (the
rounding added 0.39 t/h, then 0.75), twice as much the second. A margin costs what its emissions cost to avoid,
0.07 % of that world's cap."""


class _OverCapError(Exception):
    """A large model's rounded LP broke a carbon or water cap: by how much, per cap. [unit/h]"""

    def __init__(self, excess_per_h: FloatArray) -> None:
        super().__init__("over a cap")
        self.excess_per_h = excess_per_h


@dataclass(frozen=True)
class _LastLP:
    """What an attempt's least-cost LP leaves the certification: its pairs, and its bound at the caps themselves.

    ``bound_at_caps`` is None when the LPs were not held below the caps (or the time limit came first);
    ``margins_per_h`` how far below each cap they were held, at the last.
    """

    pairs: IntArray
    bound_at_caps: float | None = None
    margins_per_h: FloatArray | None = None


def _margins(data: PlacementInput) -> FloatArray:
    """How far below each cap the LPs of these arrays are held. [unit/h]"""
    return np.array([c.lp_margin_per_h for c in data.caps])


def _held(data: PlacementInput, margins_per_h: FloatArray) -> PlacementInput:
    """The arrays with the LPs held below each cap by ``margins_per_h``."""
    return replace(data, caps=tuple(replace(c, lp_margin_per_h=m) for c, m in zip(data.caps, margins_per_h, strict=True)))


def _hold_below(
    data: PlacementInput, lp: RestrictedLP, cap: float | None, options: SolverOptions, excess_per_h: FloatArray
) -> tuple[PlacementInput, Relaxation, RestrictedLP, PlacementSolution] | None:
    """The warm least-cost LP held below the caps its rounded design broke, priced on and rounded again.

    Each time the cap rows move down by :data:`CAP_MARGIN_GROWTH` times what the rounding broke them by, and the LP
    prices on from its basis, until its design rounded up keeps every cap: the held arrays, the LP and that design.
    None when it does not within :data:`CAP_MARGIN_ROUNDS`, or the LP cannot serve as much below them with its pairs
    (the caller then starts the LPs afresh, held as far below).
    """
    margins = _margins(data)
    for _ in range(CAP_MARGIN_ROUNDS):
        margins = margins + CAP_MARGIN_GROWTH * excess_per_h
        data = _held(data, margins)
        if options.progress is not None:
            options.progress(
                "the rounded LP broke a carbon or water cap: the LP priced on from where it was, held below it by "
                + ", ".join(f"{m:,.6g} {c.unit}/h" for c, m in zip(data.caps, margins, strict=True))
            )
        lp.hold_caps_at(data)
        try:
            cost, lp = relax(
                data, objective="cost", unserved_cap_tok_s=cap, lp=lp, progress=options.progress,
                deadline=options.deadline, links=False, target=options.gap * PRICING_TARGET_SHARE,
            )  # fmt: skip
        except (TimeoutError, RuntimeError):  # the time limit, or the restricted LP infeasible below the caps
            return None
        rounded, _ = _rounded(data, cost, options)
        if _valid(data, rounded, cap):
            return data, cost, lp, rounded
        excess_per_h = cap_excess_per_h(data, rounded.open, rounded.nodes, rounded.pair_share)
        if not excess_per_h.any():
            return None
    return None


def round_up(data: PlacementInput, relaxation: Relaxation) -> tuple[BoolArray, IntArray, FloatArray, FloatArray]:
    """A feasible design from the LP: its shares, every site they use open, nodes raised to the busiest slice.

    The LP's nodes carry its shares and stay within the sites' power, which allows an integer number of nodes,
    so rounding them up stays within it.
    """
    shares = np.clip(relaxation.shares, 0.0, 1.0)
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    shares = shares / np.maximum(served, 1.0)[data.pair_commodity]
    load = site_slice_load(data, shares).max(axis=1)
    # The LP meets its rows within a tolerance: where that would round up past the power, trim the shares.
    trim = np.where(load > data.site_max_nodes, data.site_max_nodes / np.maximum(load, 1e-300), 1.0)
    pair, site, _ = data.load_entries()  # a cross-metro pair is trimmed by the tighter of its two sites
    factor = np.ones(len(shares))
    np.minimum.at(factor, pair, trim[site])
    shares = shares * factor
    load = load * trim  # never below what the trimmed shares load
    unserved = unserved_shares(data, shares)
    is_open = data.site_locked | (np.bincount(site, weights=shares[pair], minlength=data.n_sites) > 0)
    nodes = np.minimum(np.ceil(load - 1e-9), data.site_max_nodes).astype(np.int64)
    return is_open, np.maximum(nodes, 0), shares, unserved


def single_site_pairs(data: PlacementInput) -> IntArray:
    """Every pair that loads one site: all of them, but the cross-metro columns (which the LP prices in)."""
    if data.pair_remote_site is None:
        return np.arange(len(data.pair_site), dtype=np.int64)
    return np.flatnonzero(data.pair_remote_site < 0).astype(np.int64)


def _milp_pairs(data: PlacementInput, *relaxations: Relaxation, always: IntArray | None = None) -> IntArray:
    """The pairs the restricted MILP may use: ``always``, those the LPs use, and each commodity's lowest reduced costs."""
    keep = np.zeros(len(data.pair_site), dtype=bool)
    if always is not None:
        keep[always] = True
    for relaxation in relaxations:
        keep |= relaxation.shares > 1e-9
    last = relaxations[-1].reduced_cost
    order = np.argsort(last, kind="stable")
    keep[first_of_each(order, data.pair_commodity, MILP_PAIRS_PER_COMMODITY)] = True
    return np.flatnonzero(keep).astype(np.int64)


def _within_cap(data: PlacementInput, solution: PlacementSolution, cap: float | None) -> bool:
    """Whether the unserved mean goodput stays within the cap (all served when None)."""
    left = float((unserved_shares(data, solution.pair_share) * data.mean_demand_tok_s).sum())
    limit = 0.0 if cap is None else cap
    return left <= limit * (1 + 1e-6) + 1e-6 * max(1.0, float(data.mean_demand_tok_s.sum()))


def _valid(data: PlacementInput, solution: PlacementSolution, cap: float | None) -> bool:
    """Whether a design passes every check of the full model and leaves no more unserved than the cap."""
    return not verify_solution(data, solution, optional=cap is not None) and _within_cap(data, solution, cap)


def _no_answer(data: PlacementInput, options: SolverOptions, why: str, start: float) -> PlacementSolution:
    """The time limit came before pricing could say anything: no design, and the report says which phase."""
    report = SolverReport(options.name, SolveStatus.NO_SOLUTION, math.nan, math.nan, math.nan,
                          time.perf_counter() - start, why, StopReason.TIME_LIMIT)  # fmt: skip
    return empty(data, report)


def _infeasible(data: PlacementInput, options: SolverOptions, least: Relaxation, start: float) -> PlacementSolution:
    """No design serves every commodity: the least-unserved LP's bound proves it."""
    total = float(data.mean_demand_tok_s.sum())
    message = (
        f"no design serves every commodity: the LP relaxation leaves at least {least.bound:,.6g} of "
        f"{total:,.6g} mean tok/s unserved (the power of the sites in reach is short)"
    )
    report = SolverReport(options.name, SolveStatus.INFEASIBLE, math.nan, math.nan, math.nan,
                          time.perf_counter() - start, message, StopReason.INFEASIBLE)  # fmt: skip
    return empty(data, report)


Design = tuple[BoolArray, IntArray, FloatArray, FloatArray]
"""Open sites, node counts, shares and unserved shares."""


def _rounded(data: PlacementInput, cost: Relaxation, options: SolverOptions) -> tuple[PlacementSolution, Design]:
    """The least-cost LP rounded up, as a solution (:func:`round_up`) and as a design."""
    is_open, nodes, shares, unserved = round_up(data, cost)
    rounded_cost = data.cost_usd_per_h(is_open, nodes, shares)
    rounded = PlacementSolution(
        is_open, nodes, shares, unserved, rounded_cost,
        SolverReport(options.name, SolveStatus.FEASIBLE, rounded_cost, math.nan, math.nan, 0.0, "LP rounded up"),
    )  # fmt: skip
    return rounded, (is_open, nodes, shares, unserved)


def _least_unserved_whole(data: PlacementInput, least: Relaxation, options: SolverOptions) -> PlacementSolution | None:
    """The design (whole nodes) on the least-unserved LP's pairs that leaves the least unserved; None if unsolved.

    A valid design of the full model in its own right (its cost is not minimised): with an emissions cap it stands
    when the least-cost MILP after it finds nothing in time.
    """
    pairs = _milp_pairs(data, least)
    free = restrict_to_pairs(data, pairs).free_of_cost()
    blocks = placement_blocks(free, served_value_usd_per_tok_s=1.0)
    report, values = solve_linear(blocks.model, replace(options, gap=min(options.gap, 1e-6)))
    if not report.status.has_solution:
        return None
    design = lift(data, pairs, solution_of(blocks, free, values, report, None), report)
    cost = data.cost_usd_per_h(design.open, design.nodes, design.pair_share)
    kept = SolverReport(options.name, SolveStatus.FEASIBLE, cost, math.nan, math.nan, report.runtime_s,
                        "the least-unserved design in whole nodes", report.stopped_by)  # fmt: skip
    return replace(design, objective_usd_per_h=cost, report=kept)


def _restricted_milp(
    data: PlacementInput,
    pairs: IntArray,
    design: Design,
    cap: float | None,
    options: SolverOptions,
    *,
    relax_first: bool = True,
) -> tuple[SolverReport, PlacementSolution | None]:
    """The MILP on the given pairs, warm-started from the rounded LP; its answer lifted to every pair.

    With ``relax_first`` its LP relaxation is solved first and the sites fixed where it leaves them all whole
    (:mod:`placement.optimize.relax_fix`); without, HiGHS searches the MILP at once.
    """
    small = restrict_to_pairs(data, pairs)
    is_open, nodes, shares, unserved = design
    total = float(data.mean_demand_tok_s.sum())
    if cap is None:
        blocks = placement_blocks(small)
    else:
        blocks = placement_blocks(small, served_value_usd_per_tok_s=0.0, min_served_tok_s=total - cap)
    start = warm_start_values(blocks, small, (is_open, nodes, shares[pairs]), unserved=unserved)
    report, values = solve_linear(blocks.model, replace(options, gap=options.gap / 2, relax_first=relax_first), start=start)
    if not report.status.has_solution:
        return report, None
    return report, lift(data, pairs, solution_of(blocks, small, values, report, None), report)


def _every_pair(
    data: PlacementInput,
    best: PlacementSolution,
    bound: float,
    cap: float | None,
    options: SolverOptions,
    *,
    relax_first: bool,
) -> tuple[SolverReport, IntArray, PlacementSolution, float]:
    """The MILP on every pair warm-started from ``best``: its report, the pairs, the better answer, the tighter bound.

    ``relax_first`` as :func:`_restricted_milp`'s. The caller passes False when the relaxation on the LP's pairs left a
    site fractional: every pair's LP has the same optimum (the pricing converged on it), with those fractional
    solutions on its optimal face. On the bundled arrangement world every such relaxation of every pair came out
    fractional as well (5 of 5 in its plan's prefix-cache rounds without the node-TTFT ladder, 5-9 s of interior point
    each on 20,000 columns), and the MILP then ran anyway: the same answers, 39 s less CPU of `placement solve
    world-arrangement`'s 240 s.
    """
    every = np.arange(len(data.pair_site), dtype=np.int64)
    design = (best.open, best.nodes, best.pair_share, best.unserved_share)
    report, lifted = _restricted_milp(data, every, design, cap, options, relax_first=relax_first)
    if report.status.has_solution and math.isfinite(report.best_bound):
        bound = max(bound, report.best_bound)
    if lifted is not None and _valid(data, lifted, cap):
        best = min([best, lifted], key=lambda c: c.objective_usd_per_h)
    return report, every, best, bound


def _stopped_by(closed: bool, report: SolverReport, rounded: PlacementSolution) -> StopReason:
    """What ended the solve: the gap, or what stopped the restricted MILP."""
    # Open with the restricted MILP at its own gap: what is left is the LP bound's distance to integer designs.
    stopped_by = StopReason.GAP if closed else (StopReason.OTHER if report.stopped_by == StopReason.GAP else report.stopped_by)
    if report is not rounded.report and report.stopped_by == StopReason.TIME_LIMIT:
        stopped_by = StopReason.TIME_LIMIT  # the MILP's answer (or its absence) depended on the clock, gap closed or not
    return stopped_by


def _message(
    data: PlacementInput,
    relaxations: tuple[Relaxation, int, float],
    milp: tuple[SolverReport, IntArray],
    rounded: PlacementSolution,
    best: PlacementSolution,
    cap: float | None,
    *,
    whole_nodes: bool = False,
) -> str:
    """What the priced solve did: LP rounds, pairs and rows, the bound, the MILP, the answer kept."""
    cost, rounds, bound = relaxations
    report, pairs = milp
    least = "the least a design on the LP's pairs reaches under the emissions cap" if whole_nodes else "the least possible"
    served = "every commodity served" if cap is None else f"at most {cap:,.6g} mean tok/s unserved ({least})"
    return (
        f"LP priced over all {len(data.pair_site):,} pairs in {rounds} rounds ({int(cost.in_model.sum()):,} pairs, "
        f"{cost.rows:,} rows), bound {bound:,.2f}; "
        + (
            "the rounded LP within the gap, no MILP; "
            if report is rounded.report
            else f"{report.message}, "
            if len(pairs) == 0
            else f"MILP on {len(pairs):,} pairs: {report.message}, "
        )
        + f"{'its answer' if best is not rounded else 'the rounded LP'} kept; {served}"
    )


def _tightened(
    data: PlacementInput,
    best: PlacementSolution,
    bound: float,
    cost: Relaxation,
    cap: float | None,
    lp: RestrictedLP,
    options: SolverOptions,
    *,
    weak: bool = False,
) -> tuple[float, Relaxation, int]:
    """Price on when the answer is not within the gap of the bound: the bound, the last relaxation, extra rounds.

    After the weak formulation (``weak``), pricing goes on with the strong linking rows: they lift the bound by what
    the open sites' fixed costs share out, at the price of larger LPs.
    """
    short = relative_gap(best.objective_usd_per_h, bound) > options.gap
    if not short or (cost.converged and not weak) or options.past_deadline():
        return bound, cost, 0
    # After the weak LP, until the answer is proven (or the strong LP converges): its value already equals its bound,
    # so a target would stop before the first linking rows are in.
    goal = best.objective_usd_per_h - options.gap * abs(best.objective_usd_per_h)
    try:
        cost, lp = relax(
            data, objective="cost", unserved_cap_tok_s=cap, lp=lp, progress=options.progress, deadline=options.deadline,
            target=0.0 if weak else CONVERGED, bound_goal=goal if weak else None,
        )  # fmt: skip
    except TimeoutError:  # the limit came within the first round: the bound stands
        return bound, replace(cost, timed_out=True), 0
    return max(bound, cost.bound), cost, cost.rounds


def _candidates(
    data: PlacementInput, cost: Relaxation, pairs: IntArray, cap: float | None, options: SolverOptions, *, all_pairs: bool
) -> tuple[PlacementSolution, SolverReport, list[PlacementSolution]]:
    """The rounded LP and (unless it is proven within the gap) the restricted MILP's answer: those that pass every check.

    Returns the rounded LP, the last report (the MILP's, or the rounded LP's without a MILP) and the valid answers.
    """
    rounded, design = _rounded(data, cost, options)
    candidates = [rounded]
    report = rounded.report
    rounded_valid = _valid(data, rounded, cap)
    proven = rounded_valid and relative_gap(rounded.objective_usd_per_h, cost.bound) <= options.gap
    if (not proven or all_pairs) and not (rounded_valid and options.past_deadline()):
        # The MILP runs only when the rounded LP is not already proven within the gap: that decision, like every
        # stop below, does not depend on the clock. Its time limit is the scenario's, a safety net of its own.
        report, lifted = _restricted_milp(data, pairs, design, cap, options)
        candidates += [] if lifted is None else [lifted]
    valid = [c for c in candidates if _valid(data, c, cap)]
    return rounded, report, valid


def _scaled_candidates(
    data: PlacementInput, cost: Relaxation, lp: RestrictedLP, cap: float | None, options: SolverOptions
) -> tuple[PlacementSolution, SolverReport, list[PlacementSolution], Relaxation, int, PlacementInput]:
    """Designs of a large model without a MILP: the LP rounded up, slope scaling, and pricing on to prove them.

    1. The least-cost LP rounded up.
    2. If it is not within ``options.gap`` of the bound: pricing goes on (weak formulation) until the bound proves
       it or is within :data:`WEAK_TARGET_SHARE` of the gap of the LP; that LP rounded up is a design as well.
    3. While no design is proven: slope-scaled LPs (:mod:`placement.optimize.slope`) from the last relaxation,
       each rounded up, until one is.
    4. Still none: the weak formulation priced to its optimum (the caller goes on with the strong one).

    When the LP rounded up breaks a carbon or water cap, the warm LP is held below it and priced on
    (:func:`_hold_below`); the arrays from then on hold their LPs that far below the caps.

    Returns the LP rounded up, a report of the heuristic, the valid designs, the last relaxation, the extra
    pricing rounds, and the arrays the LPs were held below the caps with.
    """
    start = time.perf_counter()
    rounded, _ = _rounded(data, cost, options)
    valid = [rounded] if _valid(data, rounded, cap) else []
    excess = cap_excess_per_h(data, rounded.open, rounded.nodes, rounded.pair_share)
    if not valid and excess.any():  # slope scaling's designs, rounded alike, would break it too: the LP held below it
        held = _hold_below(data, lp, cap, options, excess)
        if held is None:
            raise _OverCapError(excess)  # the LPs afresh, held below the caps
        data, cost, lp, rounded = held
        valid = [rounded]

    def short(bound: float) -> bool:
        return not valid or relative_gap(min(c.objective_usd_per_h for c in valid), bound) > options.gap

    more = 0

    def price_on(cost: Relaxation, lp: RestrictedLP, target: float) -> tuple[Relaxation, RestrictedLP]:
        """More rounds of the weak formulation, until the bound proves the best design or is within ``target``."""
        nonlocal more
        best = min(c.objective_usd_per_h for c in valid)
        try:
            cost, lp = relax(
                data, objective="cost", unserved_cap_tok_s=cap, lp=lp, progress=options.progress,
                deadline=options.deadline, links=False, target=target, bound_goal=best - options.gap * abs(best),
            )  # fmt: skip
        except TimeoutError:  # the limit came within the first round: the last relaxation stands
            return replace(cost, timed_out=True), lp
        more += cost.rounds
        design, _ = _rounded(data, cost, options)
        valid.extend([design] if _valid(data, design, cap) else [])
        return cost, lp

    if valid and short(cost.bound) and not options.past_deadline():
        # the bound first: a few more rounds of the weak formulation lift it most of the way to the LP's optimum
        cost, lp = price_on(cost, lp, options.gap * WEAK_TARGET_SHARE)
    scaled = 0
    if short(cost.bound) and not options.past_deadline():
        for relaxation in slope_scaled(data, cost, lp, deadline=options.deadline):
            scaled += 1
            design, _ = _rounded(data, relaxation, options)
            passes = _valid(data, design, cap)
            valid += [design] if passes else []
            if options.progress is not None:
                best = min((c.objective_usd_per_h for c in valid), default=math.nan)
                options.progress(
                    f"slope scaling {scaled}: design {design.objective_usd_per_h:,.6g} ({int(design.open.sum())} sites"
                    + ("" if passes else ", fails a check of the full model")
                    + f"), best {best:,.6g} (gap {relative_gap(best, cost.bound):.2%} to the bound)"
                )
            if not short(cost.bound):
                break
    if valid and short(cost.bound) and not options.past_deadline():
        # the weak formulation to its optimum (each round a few seconds) before the strong one (a minute a round)
        cost, lp = price_on(cost, lp, CONVERGED)
    message = f"the LP rounded up and {scaled} slope-scaled LPs, each rounded up"
    kept = min(valid, key=lambda c: c.objective_usd_per_h) if valid else rounded
    report = SolverReport(options.name, SolveStatus.FEASIBLE, kept.objective_usd_per_h, math.nan, math.nan,
                          time.perf_counter() - start, message, StopReason.OTHER)  # fmt: skip
    return rounded, report, valid, cost, more, data


def _least_unserved(
    data: PlacementInput, options: SolverOptions, pairs: IntArray | None, start: float, *, shortfall: bool, links: bool
) -> PlacementSolution | tuple[Relaxation, RestrictedLP, float | None]:
    """Step 1, the least-unserved LP: the unserved cap it sets, or the answer when it proves there is none.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    options : SolverOptions
        Solver options, the deadline set.
    pairs : numpy.ndarray, optional
        Pairs to start with (default :func:`~placement.optimize.pricing.initial_pairs`).
    start : float
        ``time.perf_counter()`` at the start of the solve.
    shortfall, links : bool
        As :func:`solve_priced` and :func:`~placement.optimize.pricing.relax`.

    Returns
    -------
    PlacementSolution or tuple
        No design (the time limit came first) or an infeasible report; else the relaxation, its restricted LP and
        the unserved mean goodput the least-cost LP may leave (None: every commodity served). [tokens/s]

    Raises
    ------
    SolverError
        Pricing did not decide whether every commodity can be served.
    """
    total = float(data.mean_demand_tok_s.sum())
    try:
        least, lp = relax(
            data, objective="unserved", pairs=pairs, progress=options.progress, deadline=options.deadline, links=links
        )
    except TimeoutError as exc:
        return _no_answer(data, options, str(exc), start)
    tolerance = SHORTFALL_TOL * max(total, 1.0)
    if not shortfall and least.bound > tolerance:
        return _infeasible(data, options, least, start)
    if not shortfall and least.value > tolerance and least.timed_out:
        return _no_answer(data, options, "the time limit stopped pricing before it found pairs that serve every commodity", start)
    if not shortfall and least.value > tolerance:
        raise SolverError(f"pricing did not decide in {least.rounds} rounds whether every commodity can be served")
    cap = max(least.value, 0.0) * (1 + 1e-9) + tolerance if shortfall else None
    return least, lp, cap


def _whole_node_cap(
    data: PlacementInput, least: Relaxation, cap: float | None, options: SolverOptions
) -> tuple[PlacementSolution | None, float | None, bool]:
    """Under a carbon or water cap, the least a design in whole nodes leaves unserved, if more than the LP's.

    Whole nodes emit more than the LP's fractions: under a carbon or water cap the LP's least unserved may be out of
    reach of any design. The least a design on the LP's pairs leaves unserved, if more, is the cap instead (and a
    fresh LP bounds the cost of plans serving that much).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    least : Relaxation
        The least-unserved LP.
    cap : float or None
        The unserved cap it sets (None: every commodity served). [tokens/s]
    options : SolverOptions
        Solver options.

    Returns
    -------
    tuple
        The least-unserved design in whole nodes (None without a cap or a resource cap, or unsolved), the unserved
        cap, and whether the cap is that design's (the least-cost LP then starts afresh).
    """
    if cap is None or not data.caps:
        return None, cap, False
    whole = _least_unserved_whole(data, least, options)
    left = None if whole is None else float((whole.unserved_share * data.mean_demand_tok_s).sum())
    if left is not None and left > cap:
        tolerance = SHORTFALL_TOL * max(float(data.mean_demand_tok_s.sum()), 1.0)
        return whole, left * (1 + 1e-9) + tolerance, True
    return whole, cap, False


def _least_cost(
    data: PlacementInput,
    least: Relaxation,
    lp: RestrictedLP,
    cap: float | None,
    options: SolverOptions,
    *,
    fresh: bool,
    links: bool,
) -> tuple[Relaxation, RestrictedLP]:
    """Step 2, the least-cost LP, priced on from the least-unserved LP (or afresh); its relaxation and restricted LP.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    least : Relaxation
        The least-unserved LP.
    lp : RestrictedLP
        Its restricted LP.
    cap : float or None
        Unserved mean goodput allowed (None: every commodity served). [tokens/s]
    options : SolverOptions
        Solver options, the deadline set.
    fresh : bool
        Start from a new restricted LP, not from ``lp``.
    links : bool
        As :func:`~placement.optimize.pricing.relax`.

    Returns
    -------
    tuple
        The relaxation and its restricted LP; when no least-cost round finished, the least-unserved LP's design,
        bounded below by 0 only, and ``lp``.
    """
    try:
        return relax(
            data,
            objective="cost",
            unserved_cap_tok_s=cap,
            target=options.gap * PRICING_TARGET_SHARE,
            lp=None if fresh else lp,
            progress=options.progress,
            deadline=options.deadline,
            links=links,
        )
    except TimeoutError:  # no least-cost round finished: the least-unserved LP's design, bounded below by 0 only
        return replace(least, bound=0.0, converged=False, timed_out=True), lp


def _designs(
    data: PlacementInput,
    relaxations: tuple[Relaxation, Relaxation],
    lp: RestrictedLP,
    cap: float | None,
    options: SolverOptions,
    *,
    first_pairs: IntArray | None,
    all_pairs: bool,
) -> tuple[PlacementSolution, SolverReport, list[PlacementSolution], Relaxation, IntArray, int, PlacementInput]:
    """Step 3, designs: the LP rounded up and the MILP on every pair (small models), else slope scaling, then the MILP.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    relaxations : tuple of Relaxation
        The least-unserved and the least-cost LPs.
    lp : RestrictedLP
        The least-cost LP's restricted LP.
    cap : float or None
        Unserved mean goodput allowed (None: every commodity served). [tokens/s]
    options : SolverOptions
        Solver options, the deadline set.
    first_pairs : numpy.ndarray, optional
        The pairs the LPs started with (with ``all_pairs``).
    all_pairs : bool
        As :func:`solve_priced`.

    Returns
    -------
    tuple
        The LP rounded up, the last report, the valid designs, the last least-cost relaxation, the pairs the MILP
        had (none without one), the extra pricing rounds, and the arrays (their LPs held below the caps as far as
        slope scaling's rounding needed).
    """
    least, cost = relaxations
    if all_pairs:
        every = np.arange(len(data.pair_site), dtype=np.int64)
        pairs = every if not data.has_remote else _milp_pairs(data, least, cost, always=first_pairs)
        rounded, report, valid = _candidates(data, cost, pairs, cap, options, all_pairs=all_pairs)
        return rounded, report, valid, cost, pairs, 0, data
    rounded, report, valid, cost, more, data = _scaled_candidates(data, cost, lp, cap, options)
    pairs = np.zeros(0, dtype=np.int64)
    if not valid:  # a site-count bound the roundings break: the MILP on the pairs the LPs single out
        pairs = _milp_pairs(data, least, cost)
        rounded, report, valid = _candidates(data, cost, pairs, cap, options, all_pairs=False)
    return rounded, report, valid, cost, pairs, more, data


def _total_report(
    data: PlacementInput,
    options: SolverOptions,
    start: float,
    relaxations: tuple[Relaxation, Relaxation, int, float],
    milp: tuple[SolverReport, IntArray],
    rounded: PlacementSolution,
    best: PlacementSolution,
    cap: float | None,
    *,
    whole_nodes: bool,
) -> SolverReport:
    """The priced solve's report: the answer's cost, the full model's bound and gap, what was done and what stopped it.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    options : SolverOptions
        Solver options, the deadline set.
    start : float
        ``time.perf_counter()`` at the start of the solve.
    relaxations : tuple
        The least-unserved and the last least-cost LPs, the pricing rounds in all and the bound.
    milp : tuple
        The last report (the MILP's, or the rounded LP's) and the pairs the MILP had.
    rounded, best : PlacementSolution
        The LP rounded up, and the answer kept.
    cap : float or None
        Unserved mean goodput allowed (None: every commodity served). [tokens/s]
    whole_nodes : bool
        The cap is the least-unserved design's in whole nodes.

    Returns
    -------
    SolverReport
        Optimal when the gap is within ``options.gap``.
    """
    least, cost, rounds, bound = relaxations
    report, _ = milp
    gap = relative_gap(best.objective_usd_per_h, bound)
    closed = gap <= options.gap + 1e-12
    message = _message(data, (cost, rounds, bound), milp, rounded, best, cap, whole_nodes=whole_nodes)
    stopped_by = _stopped_by(closed, report, rounded)
    if not closed and (least.timed_out or cost.timed_out or options.past_deadline()):
        stopped_by = StopReason.TIME_LIMIT
        limit = "" if options.time_limit_s is None else f" ({options.time_limit_s:g} s)"
        message += f"; the time limit{limit} stopped LP pricing after {rounds} rounds"
    return SolverReport(
        options.name, SolveStatus.OPTIMAL if closed else SolveStatus.FEASIBLE, best.objective_usd_per_h, bound, gap,
        time.perf_counter() - start, message, stopped_by,
    )  # fmt: skip


def solve_priced(
    data: PlacementInput,
    options: SolverOptions,
    *,
    shortfall: bool,
    route_nearest: bool = True,
    all_pairs: bool = False,
) -> PlacementSolution:
    """Solve the full model by an LP priced over every pair, and a MILP on the pairs it singles out.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    options : SolverOptions
        Solver, gap, node and time limits (the time limit applies to the MILP).
    shortfall : bool
        Allow unserved demand: the least there is, at least cost (a diagnosis of a model that cannot serve
        everything). The bound and gap are then of the cost among plans serving as much.
    route_nearest : bool, optional
        Re-route shares to the nearest open capacity once the design is fixed (the cost does not change).
    all_pairs : bool, optional
        Start the LPs with every pair (small models: nothing to price), and give them all to the MILP. Cross-metro
        columns (pairs that load a second site) are the exception: the LPs price them in and the MILP gets those
        the LPs single out beside every other pair.

    Returns
    -------
    PlacementSolution
        Verified against the full model; ``report`` holds the full-model bound and gap.
    """
    start = time.perf_counter()
    options = options.with_deadline(start)
    margins = np.zeros(len(data.caps))
    for attempt in range(CAP_MARGIN_ROUNDS + 1):
        backed = _held(data, margins)
        try:
            solution, last = _solve_priced(
                backed, options, start, shortfall=shortfall, route_nearest=route_nearest, all_pairs=all_pairs
            )
        except _OverCapError as over:
            if attempt == CAP_MARGIN_ROUNDS or options.past_deadline():
                over_by = ", ".join(f"{e:,.6g} {c.unit}/h" for c, e in zip(data.caps, over.excess_per_h, strict=True))
                raise SolverError(
                    f"the LP's designs, rounded up to whole nodes, broke a carbon or water cap {attempt + 1} times "
                    f"(by {over_by} at the last)"
                ) from None
            margins = margins + CAP_MARGIN_GROWTH * over.excess_per_h
            if options.progress is not None:
                options.progress(
                    "the rounded LP broke a carbon or water cap: the LPs again, held below it by "
                    + ", ".join(f"{m:,.6g} {c.unit}/h" for c, m in zip(data.caps, margins, strict=True))
                )
            continue
        if last is not None and last.margins_per_h is not None:
            margins = last.margins_per_h  # as far below as the warm LP was held at the last
        if margins.any():
            solution = _certified(data, solution, margins, options, start, shortfall=shortfall, links=all_pairs, last=last)
        return replace(solution, report=replace(solution.report, runtime_s=time.perf_counter() - start))
    raise AssertionError("unreachable")


def _certified(
    data: PlacementInput,
    solution: PlacementSolution,
    margins_per_h: FloatArray,
    options: SolverOptions,
    start: float,
    *,
    shortfall: bool,
    links: bool,
    last: _LastLP | None,
) -> PlacementSolution:
    """A design found with the LPs held below the caps, its bound and gap those of the LP at the caps themselves.

    The design's bound was of the model with the caps lowered by the margins, which is no bound of the model as
    stated. The LP at the caps, priced from the pairs the design uses (and, with ``shortfall``, leaving at most what
    the design leaves unserved: the bound is of plans serving as much), bounds the model; its Lagrangian bound
    is the answer's bound. When the time limit stops it first, the answer has no bound (gap 100 %).

    ``last.bound_at_caps`` is the bound the design's own least-cost LP reached with its cap rows moved up to the caps
    (:func:`_bound_at_caps`, at the LP's unserved cap, which the design meets): when it proves the design, that is
    the answer's bound, with no LP built afresh; else the fresh LP starts from ``last.pairs``.
    """
    warm = None if last is None else last.bound_at_caps
    if warm is not None and relative_gap(solution.objective_usd_per_h, warm) <= options.gap:
        return _certified_report(data, solution, margins_per_h, options, start, warm, "")
    total = float(data.mean_demand_tok_s.sum())
    left = float((solution.unserved_share * data.mean_demand_tok_s).sum())
    cap = left * (1 + 1e-9) + SHORTFALL_TOL * max(total, 1.0) if shortfall else None
    if options.progress is not None:
        options.progress("the LP at the caps themselves: the bound of the design found below them")
    pairs = np.union1d(np.flatnonzero(solution.pair_share > 0), [] if last is None else last.pairs).astype(np.int64)
    try:
        at_caps, _ = relax(
            data, objective="cost", unserved_cap_tok_s=cap, pairs=pairs, target=options.gap * PRICING_TARGET_SHARE,
            progress=options.progress, deadline=options.deadline, links=links,
        )  # fmt: skip
        bound, note = at_caps.bound, ""
    except TimeoutError:
        return _certified_report(data, solution, margins_per_h, options, start, 0.0, "; the time limit came first")
    if relative_gap(solution.objective_usd_per_h, bound) > options.gap and not options.past_deadline():
        # Coarse rounding (few nodes a site) costs more than the gap: the MILP at the caps on the LP's pairs
        design = (solution.open, solution.nodes, solution.pair_share, solution.unserved_share)
        pairs = _milp_pairs(data, at_caps)
        milp, lifted = _restricted_milp(data, pairs, design, cap, options)
        if lifted is not None and _valid(data, lifted, cap) and lifted.objective_usd_per_h < solution.objective_usd_per_h:
            solution = replace(
                lifted, unserved_share=unserved_shares(data, lifted.pair_share) if shortfall else lifted.unserved_share
            )
            note = f"; the MILP on {len(pairs):,} of its pairs: {milp.message}"
        if len(pairs) == len(data.pair_site) and math.isfinite(milp.best_bound):
            bound = max(bound, milp.best_bound)
    return _certified_report(data, solution, margins_per_h, options, start, bound, note)


def _certified_report(
    data: PlacementInput,
    solution: PlacementSolution,
    margins_per_h: FloatArray,
    options: SolverOptions,
    start: float,
    bound: float,
    note: str,
) -> PlacementSolution:
    """The answer of :func:`_certified` with its report: the bound of the LP at the caps, the gap, how it was found."""
    objective = solution.objective_usd_per_h
    gap = relative_gap(objective, bound)
    closed = gap <= options.gap + 1e-12
    margins = ", ".join(f"{c.name} {m:,.6g} {c.unit}/h" for c, m in zip(data.caps, margins_per_h, strict=True) if m)
    report = replace(
        solution.report,
        status=SolveStatus.OPTIMAL if closed else SolveStatus.FEASIBLE,
        best_bound=bound,
        gap=gap,
        runtime_s=time.perf_counter() - start,
        message=f"{solution.report.message}; the LPs held below the caps by {margins} so that its rounding stays "
        f"within them, the bound that of the LP at the caps{note}",
        objective=objective,
        stopped_by=StopReason.GAP if closed else solution.report.stopped_by,
    )
    return replace(solution, report=report)


def _bound_at_caps(
    data: PlacementInput, lp: RestrictedLP, unserved_cap: float | None, best: float, options: SolverOptions, *, links: bool
) -> float | None:
    """The least-cost LP's bound with its cap rows at the caps themselves, priced on from the LP held below them.

    Pricing goes on until the bound proves ``best`` (the design's cost) within the gap, or the LP converges.
    """
    truth = replace(data, caps=tuple(replace(c, lp_margin_per_h=0.0) for c in data.caps))
    if options.progress is not None:
        options.progress("the LP at the caps themselves: the bound of the design found below them")
    lp.hold_caps_at(truth)
    try:
        at_caps, _ = relax(
            truth, objective="cost", unserved_cap_tok_s=unserved_cap, lp=lp, progress=options.progress,
            deadline=options.deadline, links=links, target=CONVERGED, bound_goal=best - options.gap * abs(best),
        )  # fmt: skip
    except TimeoutError:
        return None
    return at_caps.bound


def _solve_priced(
    data: PlacementInput,
    options: SolverOptions,
    start: float,
    *,
    shortfall: bool,
    route_nearest: bool,
    all_pairs: bool,
) -> tuple[PlacementSolution, _LastLP | None]:
    """:func:`solve_priced` with the LPs held below each cap by its ``lp_margin_per_h``.

    Returns the answer and its last least-cost LP's pairs and, with margins, that LP's bound at the caps themselves
    (its warm LP priced on with the cap rows moved up); None when no least-cost LP led to the answer.

    Raises
    ------
    _OverCapError
        A large model's rounded LP broke a cap: the margins it needs.
    """
    first_pairs = single_site_pairs(data) if all_pairs else None
    links = all_pairs  # a large model prices the weak formulation first: its LPs are far smaller (see relax)
    # (an earlier attempt's pairs are no better a start: half a million columns make each cold LP slower than pricing)
    found = _least_unserved(data, options, first_pairs, start, shortfall=shortfall, links=links)
    if isinstance(found, PlacementSolution):
        return found, None
    least, lp, cap = found
    del found  # the LP is held by ``lp`` alone, so that ``del lp`` below frees it (0.3 GB of HiGHS's on world_2k)
    # A small model's least-unserved design in whole nodes (a MILP); a large one's LPs are held below the caps instead
    whole, cap, whole_nodes = _whole_node_cap(data, least, cap, options) if all_pairs else (None, cap, False)
    cost, lp = _least_cost(data, least, lp, cap, options, fresh=whole_nodes, links=links)
    rounds = least.rounds + cost.rounds
    designs = _designs(data, (least, cost), lp, cap, options, first_pairs=first_pairs, all_pairs=all_pairs)
    rounded, report, valid, cost, pairs, more, data = designs
    rounds += more
    if whole is not None and _valid(data, whole, cap):  # under an emissions cap: a design in hand, whatever the MILP does
        valid = [*valid, whole]
    if not valid and not all_pairs:
        # Neither works (a site-count bound the LP's rounding breaks, and too few pairs for the MILP to meet it):
        # the MILP on every pair, slow on large models but an answer of the full model.
        return solve_priced(data, options, shortfall=shortfall, route_nearest=route_nearest, all_pairs=True), None
    if not valid:
        raise SolverError("neither the MILP nor the rounded LP gave a design that passes every check")
    best = min(valid, key=lambda c: c.objective_usd_per_h)
    bound = cost.bound
    if len(pairs) == len(data.pair_site) and report.status.has_solution and math.isfinite(report.best_bound):
        bound = max(bound, report.best_bound)  # the MILP holds every pair: its bound is the full model's
    bound, cost, more = _tightened(data, best, bound, cost, cap, lp, options, weak=not links)
    rounds += more
    warm = None
    if any(c.lp_margin_per_h for c in data.caps) and not options.past_deadline():  # the warm LP, cap rows moved up
        warm = _bound_at_caps(data, lp, cap, best.objective_usd_per_h, options, links=links)
    last = _LastLP(np.flatnonzero(cost.in_model).astype(np.int64), warm, _margins(data))
    del lp  # the restricted LP is done with: routing and the plan's tables need the room
    short = relative_gap(best.objective_usd_per_h, bound) > options.gap
    if not options.past_deadline() and all_pairs and len(pairs) < len(data.pair_site) and short:
        # a small model whose cross-metro columns the LP left out: the MILP on every pair, from the best answer
        fractional = report.relaxation_whole is False  # the relaxation on the LP's pairs left a site fractional
        report, pairs, best, bound = _every_pair(data, best, bound, cap, options, relax_first=not fractional)
    milp = (report, pairs)
    total = _total_report(data, options, start, (least, cost, rounds, bound), milp, rounded, best, cap, whole_nodes=whole_nodes)
    optional = cap is not None
    unserved = unserved_shares(data, best.pair_share) if optional else best.unserved_share
    solution = replace(best, report=total, unserved_share=unserved)
    if route_nearest:
        solution = route_on_open_sites(data, solution, options)
    return verified(data, solution, optional=optional), last
