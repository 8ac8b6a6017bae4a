"""Designs by slope scaling: LPs whose nodes carry their site's fixed cost, shared over the nodes the site ran.

The LP relaxation of the weak formulation (no ``share <= open`` rows) charges a site's fixed cost per node, as
if every site ran full: it spreads load thinly over many sites, and rounding it up opens each at its whole fixed
cost (1 % above the bound on a 2,000-site world). Dynamic slope scaling (Kim and Pardalos, "A solution approach
to the fixed charge network flow problem using a dynamic slope scaling procedure", Oper. Res. Letters 24, 1999)
re-solves the LP with each site's node cost raised by its fixed cost over the nodes it ran in the last LP, so a
site that carries little looks as dear as it is, and the load gathers on fewer sites. Each LP, rounded up, is a
design; the caller keeps the cheapest that passes every check.

The LPs are the priced LP itself (its pairs and slice rows, its basis a warm start), with a slice row added
wherever the shares overload one: a heuristic, whose designs are checked against the full model; the bound stays the
relaxation's. The caller's next pricing round puts the LP's own costs back (``RestrictedLP.set_objective``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from placement._types import FloatArray
from placement.optimize.pricing import Relaxation, site_slice_load
from placement.optimize.problem import PlacementInput
from placement.optimize.restricted_lp import RestrictedLP

ITERATIONS = 8
"""LPs solved at most (each one's design is offered; the caller stops once one is within the gap)."""

SLICE_ROUNDS = 6
"""LP solves per iteration at most, each adding the slice rows the last one overloaded."""


def fixed_per_node_usd_per_h(data: PlacementInput, nodes: FloatArray) -> FloatArray:
    """``(m,)`` each site's fixed cost over the nodes it ran; a site that ran none is charged as the median one that did.

    Never above the whole fixed cost (a site that ran less than a node pays it once, not more).

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    nodes : numpy.ndarray
        ``(m,)`` nodes each site ran in the last LP.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` USD/h per node. [USD/h]
    """
    fixed = data.site_fixed_usd_per_h
    used = nodes > 1e-6
    typical = float(np.median(nodes[used])) if used.any() else 1.0
    ran = np.where(used, nodes, np.minimum(typical, data.site_max_nodes.astype(float)))
    return np.asarray(np.minimum(fixed / np.maximum(ran, 1e-6), fixed))


def slope_scaled(
    data: PlacementInput,
    relaxation: Relaxation,
    lp: RestrictedLP,
    *,
    iterations: int = ITERATIONS,
    deadline: float | None = None,
) -> Iterator[Relaxation]:
    """LPs of the weak formulation with slope-scaled node costs, one per iteration, as relaxations to round up.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    relaxation : Relaxation
        The least-cost LP relaxation (its nodes set the first slopes).
    lp : RestrictedLP
        Its restricted LP (least cost), re-solved here with other node and open costs: price it again
        (:func:`~placement.optimize.pricing.relax`) before reading a bound from it. Its unserved columns stay as they
        are (with every commodity served, priced artificial columns: a design that uses one fails the caller's checks).
    iterations : int, optional
        LPs solved at most.
    deadline : float, optional
        ``time.perf_counter()`` after which no LP starts, and by which a running one stops (it then yields nothing).

    Yields
    ------
    Relaxation
        ``relaxation`` with the LP's shares, opens, nodes and unserved shares (its bound and reduced costs unchanged).
    """
    m = data.n_sites
    nodes = relaxation.nodes
    per_node = fixed_per_node_usd_per_h(data, nodes)
    columns = np.concatenate([lp.open.cols, lp.nodes.cols]).astype(np.int32)
    for _ in range(iterations):
        # a site the last LP used is charged its fixed cost over the nodes it ran; one it left keeps its slope
        # (charged as the median site at first), or the load would swing back to it and forth
        used = nodes > 1e-6
        per_node = np.where(used, fixed_per_node_usd_per_h(data, nodes), per_node)
        node_cost = data.site_node_usd_per_h + per_node
        lp.objective[:m], lp.objective[m : 2 * m] = 0.0, node_cost  # the fixed cost rides on the nodes
        lp.h.changeColsCost(len(columns), columns, lp.objective[: 2 * m].astype(np.float64))
        for _ in range(SLICE_ROUNDS):
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return
            solved = lp.solve(left)
            if solved is None:
                return
            col, _, _ = solved
            shares = np.zeros(len(data.pair_site))
            active = lp.pair_col >= 0
            shares[active] = col[lp.pair_col[active]]
            nodes = col[lp.nodes.cols]
            over = (site_slice_load(data, shares) > nodes[:, None] * (1 + 1e-9) + 1e-6) & (lp.slice_row < 0)
            if not over.any():
                break
            lp.add_slices(*(a.astype(np.int64) for a in np.nonzero(over)))
        yield replace(relaxation, shares=shares, open=col[lp.open.cols], nodes=nodes, unserved=col[lp.unserved.cols])
