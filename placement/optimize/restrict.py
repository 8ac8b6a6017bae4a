"""The placement problem on fewer pairs (candidate sites, pairs a relaxation singles out) and its answer lifted back."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placement._types import BoolArray, FloatArray, IntArray
from placement.optimize.problem import PlacementInput, PlacementSolution, ResourceCap
from placement.optimize.solver import SolverReport


def restrict_to_sites(data: PlacementInput, keep: BoolArray) -> tuple[PlacementInput, IntArray]:
    """The same problem with only the pairs whose sites are all kept (the others stay closed).

    Returns
    -------
    tuple
        The restricted arrays and, for each of their pairs, its index in ``data``.
    """
    pairs = np.flatnonzero(data.pairs_open(keep)).astype(np.int64)
    return restrict_to_pairs(data, pairs), pairs


def restrict_to_pairs(data: PlacementInput, pairs: IntArray) -> PlacementInput:
    """The same problem with only these pairs (indices into ``data``'s pairs, sorted)."""
    return replace(
        data,
        pair_commodity=data.pair_commodity[pairs],
        pair_site=data.pair_site[pairs],
        pair_nodes_per_tok_s=data.pair_nodes_per_tok_s[pairs],
        pair_rtt_ms=data.pair_rtt_ms[pairs],
        pair_cost_usd_per_h=data.pair_cost_usd_per_h[pairs],
        pair_remote_site=None if data.pair_remote_site is None else data.pair_remote_site[pairs],
        pair_remote_nodes_per_tok_s=None if data.pair_remote_nodes_per_tok_s is None else data.pair_remote_nodes_per_tok_s[pairs],
        caps=_restricted_caps(data.caps, pairs),
    )


def _restricted_caps(caps: tuple[ResourceCap, ...], pairs: IntArray) -> tuple[ResourceCap, ...]:
    """The caps on these pairs; caps that shared one coefficient array (a resource's per-site limits) still do."""
    sliced: dict[int, FloatArray] = {}
    for cap in caps:
        if id(cap.pair_per_h) not in sliced:
            sliced[id(cap.pair_per_h)] = cap.pair_per_h[pairs]
    return tuple(replace(cap, pair_per_h=sliced[id(cap.pair_per_h)]) for cap in caps)


def lift(data: PlacementInput, pairs: IntArray, small: PlacementSolution, report: SolverReport) -> PlacementSolution:
    """A solution of the restricted arrays as a solution of the full ones."""
    shares = np.zeros(len(data.pair_site))
    shares[pairs] = small.pair_share
    failover = {}
    for f, moved in small.failover_share.items():
        full = np.zeros(len(data.pair_site))
        full[pairs] = moved
        failover[f] = full
    return PlacementSolution(
        small.open, small.nodes, shares, small.unserved_share, small.objective_usd_per_h, report, None, failover
    )
