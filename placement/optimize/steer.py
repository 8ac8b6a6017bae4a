"""A design steered inside the near-optimal set: the placement MILP with another objective and its cost held.

Modelling to generate alternatives solves the placement model with the cost as a row (a cap on what the design
costs, :class:`~placement.optimize.problem.ResourceCap` over the model's own cost coefficients) and a *direction* as
its objective: weights on the open flags, the node counts and the pairs' shares (fewest sites, least MW at sites
used before, least emissions, ...). Two stages, as in lexicographic MGA:

1. the direction: ``min w . x`` over designs that cost at most the budget (and, with optional serving, serve at
   least the goodput given);
2. the polish: no site opened beyond stage 1's, ``min cost`` over designs whose direction value is at most stage 1's
   (within :data:`DIRECTION_TOLERANCE`): the nodes and shares (and sites closed) a cost-minded planner would pick on
   that design.

Stage 1 is the solver's own search for half the time limit, then, if that found nothing, a search started from the
design at hand that goes furthest in the direction already (the optimum, or an alternative before it). Every answer
is checked against every constraint, the cost row included (:func:`~placement.optimize.verify.verify_solution`).
The model is the full MILP (no lazy slice rows, no pricing of pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from placement._types import BoolArray, FloatArray
from placement.optimize.highs_direct import solve_linear
from placement.optimize.milp import solution_of, unserved_shares
from placement.optimize.model import PlacementBlocks, placement_blocks, warm_start_values
from placement.optimize.problem import PlacementInput, PlacementSolution, ResourceCap
from placement.optimize.solver import SolverOptions, SolverReport
from placement.optimize.verify import verify_solution

DIRECTION_TOLERANCE = 1e-6
"""The polish keeps the direction's value within this share of stage 1's (or this much, near 0)."""


@dataclass(frozen=True)
class Weights:
    """A direction's objective on the model's columns.

    Parameters
    ----------
    site_fixed : numpy.ndarray
        ``(m,)`` weight of each open flag.
    site_node : numpy.ndarray
        ``(m,)`` weight of each node.
    pair : numpy.ndarray
        ``(p,)`` weight of each pair's share of 1.
    occupied : bool, optional
        Every open site holds at least one node (a direction that rewards open sites would open empty ones).
    """

    site_fixed: FloatArray
    site_node: FloatArray
    pair: FloatArray
    occupied: bool = False

    def value(self, solution: PlacementSolution) -> float:
        """The direction's value of a design."""
        fixed = self.site_fixed[solution.open].sum()
        return float(fixed + (solution.nodes * self.site_node).sum() + (solution.pair_share * self.pair).sum())

    def as_cap(self, limit: float) -> ResourceCap:
        """The direction as a row: its value at most ``limit``."""
        return ResourceCap("direction", "", self.site_fixed, self.site_node, self.pair, limit)


def cost_cap(data: PlacementInput, budget_usd_per_h: float) -> ResourceCap:
    """The model's own cost as a row: a design costs at most ``budget_usd_per_h``. [USD/h]"""
    return ResourceCap(
        "cost within the slack", "USD", data.site_fixed_usd_per_h, data.site_node_usd_per_h, data.pair_cost_usd_per_h,
        budget_usd_per_h,
    )  # fmt: skip


@dataclass(frozen=True)
class Steered:
    """A steered design and what the solver said.

    Parameters
    ----------
    solution : PlacementSolution or None
        The design, verified (its ``objective_usd_per_h`` its cost); None when none was found or it failed a check.
    report : SolverReport
        The direction's solve.
    direction_value : float
        The direction's value of the design (NaN without one).
    problems : list of str
        The checks it failed (empty when verified).
    from_start : bool, optional
        Stage 1 found it from the design at hand (the solver's own search found nothing within its half of the limit).
    """

    solution: PlacementSolution | None
    report: SolverReport
    direction_value: float
    problems: list[str]
    from_start: bool = False


def _blocks(
    data: PlacementInput,
    *,
    optional: bool,
    min_served_tok_s: float,
    occupied: bool,
    avoid: Sequence[BoolArray] = (),
) -> PlacementBlocks:
    """The model (optional serving: unserved shares free, at least ``min_served_tok_s`` served).

    ``avoid`` holds sets of open sites a design may not repeat: for each, a row that some site differs
    (``sum over its sites of (1 - open) + sum over the others of open >= 1``).
    """
    blocks = placement_blocks(data, served_value_usd_per_tok_s=0.0 if optional else None, min_served_tok_s=min_served_tok_s)
    for k, opened in enumerate(avoid):
        values = np.where(opened, -1.0, 1.0)
        blocks.model.add_rows(f"differs_from_{k}", None, row=np.zeros(data.n_sites, dtype=np.int64), col=blocks.open.cols,
                              value=values, lower=1.0 - float(opened.sum()), size=1)  # fmt: skip
    if occupied:
        m = data.n_sites
        local = np.repeat(np.arange(m), 2)
        cols = np.column_stack([blocks.nodes.cols, blocks.open.cols]).ravel()
        values = np.tile([1.0, -1.0], m)
        blocks.model.add_rows("occupied", [str(j) for j in range(m)], row=local, col=cols, value=values, lower=0.0)
    return blocks


def _solve(
    data: PlacementInput, blocks: PlacementBlocks, start: PlacementSolution | None, options: SolverOptions
) -> tuple[PlacementSolution | None, SolverReport]:
    """Solve the blocks (from ``start``, if given); the design read back at ``data``'s cost (None without one)."""
    values = None
    if start is not None:
        design = (start.open, start.nodes, start.pair_share)
        values = warm_start_values(blocks, data, design, start.failover_share, unserved=unserved_shares(data, start.pair_share))
    report, values = solve_linear(blocks.model, options, start=values)
    if not report.status.has_solution:
        return None, report
    solution = solution_of(blocks, data, values, report, None)
    return replace(solution, report=replace(report, objective=solution.objective_usd_per_h)), report


def _search(
    data: PlacementInput, blocks: PlacementBlocks, start: PlacementSolution | None, options: SolverOptions
) -> tuple[PlacementSolution | None, SolverReport, bool]:
    """Stage 1: the solver's own search first (half the time limit), then from ``start`` if that found nothing.

    A start the direction has not moved from holds the search near it (the solver's neighbourhood heuristics work
    around its incumbent), while its own heuristics begin from the relaxation, which already leans the direction's
    way; the start is the fallback, so a design is always at hand when the limit comes. The flag says it was used.
    """
    if start is None:  # no design at hand is inside the model: the solver's own search, the whole limit
        return (*_solve(data, blocks, None, options), False)
    limit_s = options.time_limit_s
    half = options if limit_s is None else replace(options, time_limit_s=limit_s / 2)
    found, report = _solve(data, blocks, None, half)
    if found is not None:
        return found, report, False
    return (*_solve(data, blocks, start, half), True)


def solve_steered(
    data: PlacementInput,
    weights: Weights,
    starts: Sequence[PlacementSolution],
    options: SolverOptions,
    *,
    optional: bool,
    min_served_tok_s: float = 0.0,
    avoid: Sequence[BoolArray] = (),
) -> Steered:
    """The design that goes furthest in a direction inside the near-optimal set, then polished for cost.

    Parameters
    ----------
    data : PlacementInput
        The arrays with the cost row among their caps (:func:`cost_cap`).
    weights : Weights
        The direction.
    starts : sequence of PlacementSolution
        Designs inside the set (the optimum, the alternatives before): the one that goes furthest in the direction
        is the warm start (the optimum is the worst start for a direction that avoids its sites).
    options : SolverOptions
        Solver settings; the time limit holds for each stage (stage 1's two searches share it).
    optional : bool
        Serving is optional (``policy.serving: optional``).
    min_served_tok_s : float, optional
        With optional serving, the least mean goodput a design serves. [tokens/s]
    avoid : sequence of numpy.ndarray of bool, optional
        ``(m,)`` sets of open sites the design may not repeat (the designs before it, when the direction led back to
        one of them), each open site holding a node; the starts are then not used (each is one of them).

    Returns
    -------
    Steered
        The verified design, the report and the direction's value.
    """
    steer = replace(data, site_fixed_usd_per_h=weights.site_fixed, site_node_usd_per_h=weights.site_node,
                    pair_cost_usd_per_h=weights.pair)  # fmt: skip
    occupied = weights.occupied or bool(avoid)  # a site opened empty would differ from the designs barred in name only
    blocks = _blocks(steer, optional=optional, min_served_tok_s=min_served_tok_s, occupied=occupied, avoid=avoid)
    start = None if avoid else min(starts, key=weights.value)
    found, report, from_start = _search(data, blocks, start, options)
    if found is None:
        return Steered(None, report, float("nan"), [f"no design found ({report.message})"], from_start)
    value = weights.value(found)
    limit = value + DIRECTION_TOLERANCE * max(1.0, abs(value))
    held = replace(data, caps=(*data.caps, weights.as_cap(limit)))
    polish = _blocks(held, optional=optional, min_served_tok_s=min_served_tok_s, occupied=occupied, avoid=avoid)
    polish.open.upper = np.minimum(polish.open.upper, found.open.astype(float))  # it may close a site, not open one
    polished, _ = _solve(data, polish, found, options)
    if (
        polished is not None
        and polished.objective_usd_per_h < found.objective_usd_per_h
        and not verify_solution(held, polished, optional=optional)
    ):
        found = replace(polished, report=replace(report, objective=polished.objective_usd_per_h))
    problems = verify_solution(data, found, optional=optional)
    if optional and found.served_mean_tok_s(data) < min_served_tok_s * (1 - 1e-9):
        problems.append(f"serves {found.served_mean_tok_s(data):,.6g} tok/s, less than the {min_served_tok_s:,.6g} held")
    return Steered(None if problems else found, report, weights.value(found), problems, from_start)
