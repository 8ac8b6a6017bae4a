"""The p99 time-to-first-token budget of every (population, site) pair, component by component.

``TTFT = round trips x RTT + queue + retrieval + prefill + safety/tokenization + first decode``.
Distance is spent before compute starts: a pair whose TTFT exceeds its class's objective may not
carry that class's traffic, and gets no variable in the model.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from placement.scenario import WorkloadClass

COMPONENTS = (
    "network_ms",
    "queue_ms",
    "retrieval_ms",
    "prefill_ms",
    "safety_tokenization_ms",
    "first_decode_ms",
)
"""TTFT components, in the order they are spent."""


def ttft_components_ms(rtt_ms: NDArray[np.float64], workload: WorkloadClass) -> dict[str, NDArray[np.float64]]:
    """Each TTFT component for every pair.

    Parameters
    ----------
    rtt_ms : numpy.ndarray
        Round trip per pair, access leg included. [ms]
    workload : WorkloadClass
        The class's round-trip count and fixed components.

    Returns
    -------
    dict of str to numpy.ndarray
        One array per name in :data:`COMPONENTS`, in the shape of ``rtt_ms``. [ms]
    """
    fixed = {
        "queue_ms": workload.queue_ms,
        "retrieval_ms": workload.retrieval_ms,
        "prefill_ms": workload.prefill_ms,
        "safety_tokenization_ms": workload.safety_tokenization_ms,
        "first_decode_ms": workload.first_decode_ms,
    }
    parts = {"network_ms": np.asarray(workload.network_round_trips * rtt_ms, dtype=float)}
    parts.update({name: np.full(np.shape(rtt_ms), value, dtype=float) for name, value in fixed.items()})
    return parts


def ttft_p99_ms(rtt_ms: NDArray[np.float64], workload: WorkloadClass) -> NDArray[np.float64]:
    """p99 TTFT for every pair.

    Parameters
    ----------
    rtt_ms : numpy.ndarray
        Round trip per pair, access leg included. [ms]
    workload : WorkloadClass
        The class.

    Returns
    -------
    numpy.ndarray
        TTFT in the shape of ``rtt_ms``. [ms]
    """
    return np.asarray(workload.network_round_trips * np.asarray(rtt_ms, dtype=float) + workload.fixed_ttft_ms)


def max_rtt_ms(workload: WorkloadClass) -> float:
    """Largest round trip that still meets the class's TTFT objective.

    Parameters
    ----------
    workload : WorkloadClass
        The class.

    Returns
    -------
    float
        ``(objective - fixed components) / round trips``. [ms]
    """
    return (workload.ttft_p99_ms - workload.fixed_ttft_ms) / workload.network_round_trips
