"""The p99 time-to-first-token budget of every (population, site) pair, component by component.

``TTFT = round trips x RTT + queue + decode-slot wait + retrieval + prefill + safety/tokenization + first decode``,
where retrieval adds the round trip from the serving site to a remote retrieval store when the
class has one. Distance is spent before compute starts: a pair whose TTFT exceeds its class's
objective may not carry that class's traffic, and gets no variable in the model.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from placement.profiles.build import ClassProfile

COMPONENTS = (
    "network_ms",
    "queue_ms",
    "slot_wait_ms",
    "retrieval_ms",
    "prefill_ms",
    "safety_tokenization_ms",
    "first_decode_ms",
)
"""TTFT components, in the order they are spent."""


def ttft_components_ms(
    rtt_ms: NDArray[np.float64], profile: ClassProfile, *, retrieval_extra_ms: ArrayLike = 0.0
) -> dict[str, NDArray[np.float64]]:
    """Each TTFT component for every pair.

    Parameters
    ----------
    rtt_ms : numpy.ndarray
        Round trip per pair, access leg included. [ms]
    profile : ClassProfile
        The class's round-trip count and node-side components.
    retrieval_extra_ms : array_like, optional
        Round trip from the serving site to a remote retrieval store, broadcast against
        ``rtt_ms``. [ms]

    Returns
    -------
    dict of str to numpy.ndarray
        One array per name in :data:`COMPONENTS`, in the shape of ``rtt_ms``. [ms]
    """
    shape = np.shape(rtt_ms)
    fixed = {
        "queue_ms": profile.queue_ms,
        "slot_wait_ms": profile.slot_wait_ms,
        "prefill_ms": profile.prefill_ms,
        "safety_tokenization_ms": profile.safety_tokenization_ms,
        "first_decode_ms": profile.first_decode_ms,
    }
    parts = {"network_ms": np.asarray(profile.round_trips * np.asarray(rtt_ms, dtype=float))}
    retrieval = profile.retrieval_ms + np.asarray(retrieval_extra_ms, dtype=float)
    parts["retrieval_ms"] = np.broadcast_to(retrieval, shape).astype(float)
    parts.update({name: np.full(shape, value, dtype=float) for name, value in fixed.items()})
    return {name: parts[name] for name in COMPONENTS}


def ttft_p99_ms(
    rtt_ms: NDArray[np.float64], profile: ClassProfile, *, retrieval_extra_ms: ArrayLike = 0.0
) -> NDArray[np.float64]:
    """p99 TTFT for every pair.

    Parameters
    ----------
    rtt_ms : numpy.ndarray
        Round trip per pair, access leg included. [ms]
    profile : ClassProfile
        The class.
    retrieval_extra_ms : array_like, optional
        Remote retrieval round trip per site, broadcast against ``rtt_ms``. [ms]

    Returns
    -------
    numpy.ndarray
        TTFT in the shape of ``rtt_ms``. [ms]
    """
    extra = np.asarray(retrieval_extra_ms, dtype=float)
    return np.asarray(profile.round_trips * np.asarray(rtt_ms, dtype=float) + profile.fixed_ttft_ms + extra)


def max_rtt_ms(profile: ClassProfile) -> float:
    """Largest round trip that still meets the class's TTFT objective (local retrieval).

    Parameters
    ----------
    profile : ClassProfile
        The class.

    Returns
    -------
    float
        ``(objective - fixed components) / round trips``. [ms]
    """
    return (profile.ttft_objective_ms - profile.fixed_ttft_ms) / profile.round_trips
