"""Check a plan's tail by simulation: every open site's busiest hour, one simulated node per class.

The plan sizes each site so that, in every hour, the node-equivalents its classes use
(class load ÷ per-node goodput) fit in its nodes. In the site's busiest hour each class is given its
share of the nodes (its node-equivalents over the total), so a node of class ``k`` receives the
class's load ÷ those nodes: ``load factor = site peak utilisation × utilisation cap`` of the class's
planned goodput. That node is simulated (:mod:`placement.serving.simulate`) and its p99 TTFT (node
part) and p99 inter-token time (the class's ``itl_metric``: each request's TPOT, or every gap) are compared with
what the objective leaves it: the ITL objective, and for TTFT
the node part the plan assumed plus the smallest TTFT slack of the populations the site serves in
that class.

Classes with a given goodput (no serving model) are not simulated, nor the traffic a site serves with its prefill
pool in another metro (cross-metro prefill: two sites' pools, which one simulated node does not stand for).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement.optimize.problem import PlacementInput
from placement.plan.record import Plan
from placement.profiles.build import part_node, serving_request
from placement.serving.request import ServingRequest, ServingResult, serve
from placement.serving.simulate import TailCheck, simulate_request

COLUMNS = [
    "site_id",
    "name",
    "class",
    "nodes",
    "peak_slice",
    "class_tok_s",
    "class_nodes",
    "load_factor",
    "arrival_rate_per_node_per_s",
    "analytic_node_ttft_ms",
    "simulated_ttft_p99_ms",
    "node_ttft_allowed_ms",
    "analytic_itl_ms",
    "simulated_itl_p99_ms",
    "itl_objective_ms",
    "itl_metric",
    "simulated_tok_s_per_node",
    "exceeds",
]


def site_class_peak(plan: Plan) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Each site's busiest slice, and each class's load and node-equivalents there.

    Parameters
    ----------
    plan : Plan
        A solved plan.

    Returns
    -------
    tuple of numpy.ndarray
        ``(m,)`` busiest slice of each site; ``(m, K)`` load of each class in it [tokens/s]; ``(m, K)``
        node-equivalents of each class in it.
    """
    instance, data = plan.instance, plan.instance.inputs
    pair_class = instance.commodity_class[instance.modelled][data.pair_commodity]
    # a node of one site serving a class whole: cross-metro pairs (pools in two metros) are not simulated
    share = np.where(_single_site(data), plan.solution.pair_share, 0.0)[:, None]
    load = data.slice_demand_tok_s[data.pair_commodity] * share  # (p, T) tok/s
    equiv = load * data.pair_nodes_per_tok_s[:, None]
    m, n_classes, n_slices = data.n_sites, len(instance.profiles), len(data.slice_hours)
    by_class_load = np.zeros((m, n_classes, n_slices))
    by_class_equiv = np.zeros((m, n_classes, n_slices))
    np.add.at(by_class_load, (data.pair_site, pair_class), load)
    np.add.at(by_class_equiv, (data.pair_site, pair_class), equiv)
    peak = by_class_equiv.sum(axis=1).argmax(axis=1)
    sites = np.arange(m)
    return peak, by_class_load[sites, :, peak], by_class_equiv[sites, :, peak]


def _single_site(data: PlacementInput) -> NDArray[np.bool_]:
    """``(p,)`` pairs served whole at one site (not cross-metro prefill)."""
    if data.pair_remote_site is None:
        return np.ones(len(data.pair_site), dtype=bool)
    return np.asarray(data.pair_remote_site < 0)


def _min_slack_ms(plan: Plan) -> pd.Series:
    """Smallest TTFT slack of the populations each (site, class) serves. [ms]"""
    served = plan.assignments[plan.assignments["goodput_tok_s"] > 0]
    return served.groupby(["site_id", "class"])["ttft_slack_ms"].min()


def _node_allowance_ms(plan: Plan) -> pd.Series:
    """With ``serving.node_ttft_ladder``: the least node-side TTFT any pair of each (site, class) may spend. [ms]

    A pair on a tighter rung has a smaller node part; the check holds the simulated node to the strictest pair.
    """
    served = plan.assignments[plan.assignments["goodput_tok_s"] > 0]
    node = served["queue_ms"] + served["slot_wait_ms"] + served["prefill_ms"] + served["first_decode_ms"]
    return served.assign(allowed=node + served["ttft_slack_ms"]).groupby(["site_id", "class"])["allowed"].min()


def check_tail(plan: Plan, *, requests: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Simulate every open site's busiest hour, per class, and say where the simulated p99 breaks the objective.

    Parameters
    ----------
    plan : Plan
        A solved plan.
    requests : int
        Requests simulated per distinct (class, load); loads are rounded to 0.01 and simulated once.
    seed : int
        Random seed of every simulation.

    Returns
    -------
    pandas.DataFrame
        One row per (open site, simulated class with load): the columns of :data:`COLUMNS`; ``exceeds``
        names what breaks (``ttft``, ``itl``, ``ttft+itl``) or is empty. Rows that exceed come first.
    """
    instance = plan.instance
    peak, class_load, class_equiv = site_class_peak(plan)
    slack = _min_slack_ms(plan)
    allowance = _node_allowance_ms(plan) if instance.laddered else None
    nodes = plan.sites["nodes"].to_numpy(float)
    cache: dict[tuple[str, int, float], TailCheck | None] = {}
    simulated = [k for k, w in enumerate(plan.classes) if not w.given and w.serving_ttft_budget_ms is not None]
    own = plan.serving.accelerator
    parts = instance.site_accelerator()  # a site the availability rules moved runs its own part's node
    requests_of: dict[tuple[str, int], ServingRequest] = {}
    analytic: dict[tuple[str, int], ServingResult] = {}
    rows = []
    for j in np.flatnonzero(plan.sites["open"].to_numpy(bool) & (nodes > 0)).tolist():
        total = class_equiv[j].sum()
        for k in simulated:
            if class_load[j, k] <= 0 or total <= 0:
                continue
            if (parts[j], k) not in analytic:  # a part's class served somewhere: its node, analytic once
                requests_of[parts[j], k] = serving_request(part_node(plan.serving, parts[j]), plan.classes[k])
                analytic[parts[j], k] = serve(requests_of[parts[j], k])
            result = analytic[parts[j], k]
            profile = instance.profiles[k] if parts[j] == own else instance.profiles_at(j)[k]
            workload = plan.classes[k]
            class_nodes = nodes[j] * class_equiv[j, k] / total
            factor = round(float(class_load[j, k] / class_nodes / result.goodput_tok_s), 2)
            if (parts[j], k, factor) not in cache:
                cache[parts[j], k, factor] = simulate_request(
                    requests_of[parts[j], k], load_factor=factor, requests=requests, seed=seed, analytic=result
                )
            check = cache[parts[j], k, factor]
            if check is None:
                continue
            site_id = str(plan.sites["site_id"].iat[j])
            node_part = profile.node_ttft_ms
            allowed = node_part + float(slack.get((site_id, workload.name), 0.0))
            if allowance is not None:  # the strictest pair's rung
                allowed = float(allowance.get((site_id, workload.name), allowed))
            sim = check.simulated
            sim_itl = sim.itl_p99_as(workload.itl_metric)
            broken = [name for name, bad in (("ttft", sim.ttft_p99_ms > allowed), ("itl", sim_itl > workload.itl_p99_ms)) if bad]
            rows.append(
                [
                    site_id,
                    plan.sites["name"].iat[j],
                    workload.name,
                    int(nodes[j]),
                    int(peak[j]),
                    float(class_load[j, k]),
                    class_nodes,
                    factor,
                    check.arrival_rate_per_s,
                    node_part,
                    sim.ttft_p99_ms,
                    allowed,
                    result.itl_ms,
                    sim_itl,
                    workload.itl_p99_ms,
                    workload.itl_metric,
                    sim.throughput_tok_s,
                    "+".join(broken),
                ]
            )
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["exceeds", "site_id", "class"], ascending=[False, True, True], key=None).reset_index(drop=True)
