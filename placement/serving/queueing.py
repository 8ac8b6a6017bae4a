"""The tail: p99 queue wait of an M/G/c queue and the utilisation cap it implies.

Arrivals are Poisson. The wait of an M/M/c queue is exponential beyond zero with probability
Erlang C: ``P(W > t) = C(c, a) · exp(−(c·μ − λ)·t)``. For general service times the Allen–Cunneen
approximation scales the wait by ``(ca² + cs²) / 2`` (squared coefficients of variation of the
inter-arrival and service times); ``ca² = cs² = 1`` is M/M/c exactly.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray


@lru_cache(maxsize=64)
def _log_factorials(servers: int) -> NDArray[np.float64]:
    """``log k!`` for ``k = 0 … servers`` (the bisection in :func:`utilisation_cap` asks for one ``c`` many times)."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, servers + 1, dtype=float)))))


@lru_cache(maxsize=64)
def _counts(servers: int) -> NDArray[np.float64]:
    """``k = 0 … servers`` as floats (exact: the integers convert without rounding), cached as :func:`_log_factorials`."""
    return np.arange(servers + 1, dtype=float)


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that an arrival waits (Erlang C).

    Parameters
    ----------
    servers : int
        Number of servers ``c`` (>= 1).
    offered_load : float
        ``a = λ / μ``. [Erlang]

    Returns
    -------
    float
        ``C(c, a)``; 1 when ``a >= c`` (unstable queue).
    """
    if offered_load <= 0.0:
        return 0.0
    if offered_load >= servers:
        return 1.0
    # Erlang B = (a^c / c!) / sum_k a^k / k!, summed in log space: one vectorised pass over the decode-slot queue's
    # thousands of servers; a few servers (the prefill queues, asked tens of thousands of times by the bisections
    # of utilisation_cap) in plain floats, where numpy's per-call cost is most of the work
    log_a = math.log(offered_load)
    if servers <= SMALL_QUEUE:
        log_terms = [k * log_a - f for k, f in enumerate(_log_factorial_list(servers))]
        top_small = max(log_terms)
        blocking = math.exp(log_terms[-1] - top_small) / math.fsum(math.exp(t - top_small) for t in log_terms)
    else:
        terms = _counts(servers) * log_a - _log_factorials(servers)
        top = terms.max()
        blocking = float(math.exp(terms[-1] - top) / np.exp(terms - top).sum())
    rho = offered_load / servers
    return blocking / (1.0 - rho * (1.0 - blocking))


SMALL_QUEUE = 64
"""Servers up to which :func:`erlang_c` sums in plain floats (exactly rounded, :func:`math.fsum`) rather than numpy."""


@lru_cache(maxsize=64)
def _log_factorial_list(servers: int) -> tuple[float, ...]:
    """:func:`_log_factorials` as plain floats."""
    return tuple(float(v) for v in _log_factorials(servers))


def queue_wait_p99_ms(
    servers: int,
    service_ms: float,
    utilisation: float,
    *,
    ca2: float = 1.0,
    cs2: float = 1.0,
    quantile: float = 0.99,
) -> float:
    """Quantile of the queue wait (before service starts) of an M/G/c queue.

    Parameters
    ----------
    servers : int
        Number of servers ``c``.
    service_ms : float
        Mean service time ``1/μ``. [ms]
    utilisation : float
        ``ρ = λ / (c·μ)``, in [0, 1).
    ca2, cs2 : float
        Squared coefficients of variation of inter-arrival (1: Poisson) and service times.
    quantile : float
        Quantile of the wait (0.99: p99).

    Returns
    -------
    float
        Wait not exceeded with probability ``quantile``; ``inf`` when ``ρ >= 1``. [ms]
    """
    if utilisation >= 1.0:
        return math.inf
    if utilisation <= 0.0 or service_ms <= 0.0:
        return 0.0
    p_wait = erlang_c(servers, utilisation * servers)
    tail = 1.0 - quantile
    if p_wait <= tail:
        return 0.0
    drain_per_ms = servers * (1.0 - utilisation) / service_ms  # c·μ − λ
    return (ca2 + cs2) / 2.0 * math.log(p_wait / tail) / drain_per_ms


def utilisation_cap(
    servers: int,
    service_ms: float,
    wait_budget_ms: float,
    *,
    ca2: float = 1.0,
    cs2: float = 1.0,
    quantile: float = 0.99,
) -> float:
    """Highest utilisation whose p99 queue wait fits in a budget (the tail headroom is ``1 − cap``).

    Parameters
    ----------
    servers : int
        Number of servers ``c``.
    service_ms : float
        Mean service time. [ms]
    wait_budget_ms : float
        What the TTFT objective leaves for queueing after service and transfers. [ms]
    ca2, cs2, quantile
        As in :func:`queue_wait_p99_ms`.

    Returns
    -------
    float
        Utilisation cap in [0, 1); 0 when the budget is negative.
    """
    if wait_budget_ms < 0.0 or servers < 1:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(40):  # to 1e-12 of utilisation
        mid = 0.5 * (low + high)
        if queue_wait_p99_ms(servers, service_ms, mid, ca2=ca2, cs2=cs2, quantile=quantile) <= wait_budget_ms:
            low = mid
        else:
            high = mid
    return low
