"""Single headline figures of a plan computed from plain values (arrays, mappings), so a builder can call them in named steps.

The worst and mean p99 TTFT, the fault-domain coverage, the served-weighted cache hit rate, and the
yield figures ($/M goodput, tokens/s per MW, unserved share).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from placement.economics.cost import cost_per_million_tokens_usd, tokens_per_s_per_mw
from placement.results.jsonio import finite_or_none

__all__ = ["fault_domain_coverage", "ttft_headlines_ms", "weighted_hit_rate", "yield_figures"]


def ttft_headlines_ms(ttft_p99_ms: ArrayLike, goodput_tok_s: ArrayLike) -> tuple[float | None, float | None]:
    """Worst and goodput-weighted mean p99 TTFT of a set of assignments.

    Parameters
    ----------
    ttft_p99_ms : array_like
        p99 TTFT of each assignment. [ms]
    goodput_tok_s : array_like
        Goodput each carries (the weights). [tokens/s]

    Returns
    -------
    tuple of float or None
        ``(max, mean)``; None where there is nothing to measure. [ms]
    """
    ttft = np.asarray(ttft_p99_ms, dtype=float)
    weights = np.asarray(goodput_tok_s, dtype=float)
    worst = finite_or_none(float(ttft.max())) if len(ttft) else None
    mean = finite_or_none(float(np.average(ttft, weights=weights))) if weights.sum() > 0 else None
    return worst, mean


def fault_domain_coverage(open_sites_allowed: ArrayLike, demand_tok_s: ArrayLike) -> float:
    """Share of demand that keeps a second open site inside its budget.

    Parameters
    ----------
    open_sites_allowed : array_like of int
        ``(c,)`` open sites each commodity may be served by.
    demand_tok_s : array_like
        ``(c,)`` daily mean demand. [tokens/s]

    Returns
    -------
    float
        Between 0 and 1 (0 without demand).
    """
    demand = np.asarray(demand_tok_s, dtype=float)
    total = float(demand.sum())
    reachable = np.asarray(open_sites_allowed)
    return float(demand[reachable >= 2].sum() / total) if total > 0 else 0.0


def weighted_hit_rate(served_tok_s: Mapping[str, float], hit_rate: Mapping[str, float]) -> float:
    """Prefix-cache hit rate weighted by each class's served goodput.

    Parameters
    ----------
    served_tok_s : mapping of str to float
        Served goodput by class. [tokens/s]
    hit_rate : mapping of str to float
        Hit rate by class.

    Returns
    -------
    float
        0 when nothing is served.
    """
    total = float(sum(served_tok_s.values()))
    return float(sum(hit_rate[name] * value for name, value in served_tok_s.items()) / total) if total > 0 else 0.0


def yield_figures(
    objective_usd_per_h: float, goodput_tok_s: float, demand_tok_s: float, mw_used: float
) -> tuple[float | None, float, float]:
    """Cost per million goodput tokens, tokens/s per MW and unserved share.

    Parameters
    ----------
    objective_usd_per_h : float
        Cost. [USD/h]
    goodput_tok_s, demand_tok_s : float
        Served and demanded daily mean. [tokens/s]
    mw_used : float
        Facility power. [MW]

    Returns
    -------
    tuple
        ``($/M goodput or None, tokens/s per MW, unserved share)``.
    """
    cost = finite_or_none(float(cost_per_million_tokens_usd(objective_usd_per_h, goodput_tok_s)))
    unserved = max(0.0, 1.0 - goodput_tok_s / demand_tok_s) if demand_tok_s > 0 else 0.0
    return cost, float(tokens_per_s_per_mw(goodput_tok_s, mw_used)), unserved
