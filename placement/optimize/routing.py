"""Routing shares to the nearest open capacity with the design fixed, as one LP on highspy arrays.

The same LP as :func:`placement.optimize.heuristics.route_to_nearest` (least demand-weighted round trip, every
commodity keeping its served share, every site and slice within its nodes, load-dependent cost not above the
design's), written straight into HiGHS: at full resolution the PuLP form of it costs seconds and ~150 MB.
"""

from __future__ import annotations

import numpy as np

from placement.optimize.problem import FloatArray, IntArray, PlacementInput


def route_nearest_arrays(
    data: PlacementInput, is_open: np.ndarray, nodes: IntArray, shares: FloatArray, *, threads: int = 1
) -> FloatArray | None:
    """Shares with the least demand-weighted round trip for a fixed design.

    Parameters
    ----------
    data : PlacementInput
        The arrays (without N+1).
    is_open : numpy.ndarray of bool
        ``(m,)`` open sites.
    nodes : numpy.ndarray of int
        ``(m,)`` node counts.
    shares : numpy.ndarray
        ``(p,)`` the design's shares: each commodity keeps its served total, and the load-dependent cost
        may not rise.
    threads : int, optional
        HiGHS threads.

    Returns
    -------
    numpy.ndarray or None
        ``(p,)`` routed shares, or None when HiGHS does not report an optimum.
    """
    import highspy

    pairs = np.flatnonzero(is_open[data.pair_site])
    k, m = len(pairs), data.n_sites
    commodity, site = data.pair_commodity[pairs], data.pair_site[pairs]
    served = np.bincount(data.pair_commodity, weights=shares, minlength=data.n_commodities)
    slices = len(data.slice_hours)
    # Rows: demand (c), capacity (m x T, site-major), the load-energy budget (1).
    n_demand = data.n_commodities
    load = data.slice_demand_tok_s[commodity] * data.pair_nodes_per_tok_s[pairs, None]  # (k, T)
    row = np.concatenate(
        [commodity, n_demand + (site[:, None] * slices + np.arange(slices)[None, :]).ravel(), np.full(k, n_demand + m * slices)]
    )
    col = np.concatenate([np.arange(k), np.repeat(np.arange(k), slices), np.arange(k)])
    value = np.concatenate([np.ones(k), load.ravel(), data.pair_cost_usd_per_h[pairs]])
    order = np.lexsort((row, col))
    starts = np.searchsorted(col[order], np.arange(k)).astype(np.int32)
    budget = float(shares @ data.pair_cost_usd_per_h)
    lower = np.concatenate([served, np.full(m * slices, -np.inf), [-np.inf]])
    upper = np.concatenate([served, np.repeat(nodes.astype(float), slices), [budget * (1 + 1e-9) + 1e-9]])
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", threads)
    h.setOptionValue("random_seed", 0)
    h.addRows(len(lower), lower, upper, 0, np.zeros(len(lower), dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    cost = data.pair_rtt_ms[pairs] * data.mean_demand_tok_s[commodity]
    h.addCols(k, cost, np.zeros(k), np.ones(k), len(order), starts, row[order].astype(np.int32), value[order])
    h.run()
    if h.modelStatusToString(h.getModelStatus()) != "Optimal":
        return None
    routed = np.zeros(len(data.pair_site))
    routed[pairs] = np.clip(np.asarray(h.getSolution().col_value, dtype=float), 0.0, 1.0)
    return routed
