"""Check a plan's tail by simulation: every open site's busiest hour, one simulated node per class, rung and mode.

The plan sizes each site so that, in every hour, the node-equivalents its classes use (class load ÷ per-node
goodput, and with cross-metro prefill each pool's share at its own site) fit in its nodes. In the site's busiest hour
each class is given its share of the nodes (its node-equivalents over the total), so a node of class ``k`` receives
the class's load ÷ those nodes: ``load factor = site peak utilisation × utilisation cap`` of the class's planned
goodput. That node is simulated as the plan serves the class (``mode``):

- ``colocated``: one node under continuous batching and chunked prefill (:mod:`placement.serving.simulate`);
- ``speculative``: the same node decoding speculatively, each verify step emitting a drawn number of tokens;
- ``disaggregated``: the prefill and decode pools (:mod:`placement.serving.simulate_disaggregated`) of
  ``serving.pool_nodes`` nodes, the prompt's KV crossing the hall's NICs;
- ``cross-metro``: the decode pool at the site and the prefill pool at ``prefill_site_id`` in another metro, the KV
  crossing the WAN and the round trip between the two sites added; its node-equivalents are the decode pool's share of
  the site's nodes and the prefill pool's share of the prefill site's, in the decode site's busiest hour.

With ``serving.node_ttft_ladder`` (or KV tiers by site) each rung a site's pairs run is its own node, searched and
simulated inside its share of the class's node TTFT budget (``node_ttft_share``), with its own share of the nodes.

Its p99 TTFT (node part; cross-metro with the sites' round trip) and p99 inter-token time (the class's
``itl_metric``: each request's TPOT, or every gap) are compared with what the objective leaves it: the ITL objective,
and for TTFT the node part the plan assumed (its rung's; cross-metro: plus the sites' round trip) plus the smallest
TTFT slack of the populations the site serves that way in that class.

Classes with a given goodput (no serving model) are not simulated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement.optimize.problem import PlacementInput
from placement.plan.record import Plan
from placement.profiles.build import ClassProfile, part_node, serving_request
from placement.serving.request import ServingRequest, ServingResult, serve
from placement.serving.simulate import SimResult
from placement.serving.simulate_disaggregated import simulate_serving

COLUMNS = [
    "site_id",
    "name",
    "class",
    "mode",
    "prefill_site_id",
    "node_ttft_share",
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


@dataclass(frozen=True)
class SiteLoad:
    """Every site's busiest slice and the node-equivalents in it.

    Attributes
    ----------
    peak : numpy.ndarray of int
        ``(m,)`` the busiest slice of each site (all its node-equivalents, both pools of cross-metro pairs counted).
    equiv : numpy.ndarray
        ``(m, T)`` node-equivalents of each site in each slice.
    class_load : numpy.ndarray
        ``(m, O)`` load of each option (a class's profile: with ``serving.node_ttft_ladder`` or KV tiers by site, each
        rung at each tier; else one per class) served whole at each site in its busiest slice. [tokens/s]
    class_equiv : numpy.ndarray
        ``(m, O)`` node-equivalents of those loads.
    """

    peak: NDArray[np.int64]
    equiv: NDArray[np.float64]
    class_load: NDArray[np.float64]
    class_equiv: NDArray[np.float64]


def site_load(plan: Plan) -> SiteLoad:
    """Each site's busiest slice, its node-equivalents per slice, and each class's load served whole there.

    Parameters
    ----------
    plan : Plan
        A solved plan.

    Returns
    -------
    SiteLoad
        The busiest slices and the loads in them.
    """
    instance, data = plan.instance, plan.instance.inputs
    pair_option = pair_options(plan)
    load = data.slice_demand_tok_s[data.pair_commodity] * plan.solution.pair_share[:, None]  # (p, T) tok/s
    m, n_options, n_slices = data.n_sites, len(instance.options), len(data.slice_hours)
    equiv = np.zeros((m, n_slices))
    np.add.at(equiv, data.pair_site, load * data.pair_nodes_per_tok_s[:, None])
    remote = _remote_site(data)
    far = remote >= 0
    if far.any():
        assert data.pair_remote_nodes_per_tok_s is not None
        np.add.at(equiv, remote[far], load[far] * data.pair_remote_nodes_per_tok_s[far, None])
    peak = equiv.argmax(axis=1)
    whole = np.where(far[:, None], 0.0, load)
    by_class_load = np.zeros((m, n_options, n_slices))
    by_class_equiv = np.zeros((m, n_options, n_slices))
    np.add.at(by_class_load, (data.pair_site, pair_option), whole)
    np.add.at(by_class_equiv, (data.pair_site, pair_option), whole * data.pair_nodes_per_tok_s[:, None])
    sites = np.arange(m)
    return SiteLoad(peak, equiv, by_class_load[sites, :, peak], by_class_equiv[sites, :, peak])


def pair_options(plan: Plan) -> NDArray[np.int64]:
    """``(p,)`` the option (index into ``Instance.options``) each model pair runs: its class's rung at its site's tier.

    Without a ladder or KV tiers by site the options are the classes.
    """
    instance, data = plan.instance, plan.instance.inputs
    if not instance.varies_by_pair:
        return np.asarray(instance.commodity_class[instance.modelled][data.pair_commodity], dtype=np.int64)
    return np.asarray(instance.option_at(instance.modelled[data.pair_commodity], data.pair_site), dtype=np.int64)


def _remote_site(data: PlacementInput) -> NDArray[np.int64]:
    """``(p,)`` each pair's prefill site in another metro, -1 for the pairs served whole at one site."""
    if data.pair_remote_site is None:
        return np.full(len(data.pair_site), -1, dtype=np.int64)
    return np.asarray(data.pair_remote_site, dtype=np.int64)


@dataclass(frozen=True)
class CrossMetroLoad:
    """The load one (decode site, prefill site, class, profile) of cross-metro pairs puts on both sites.

    Attributes
    ----------
    decode_site, prefill_site, klass, option : int
        The sites, the class and the cross-metro profile (index into ``CrossMetro.options``).
    load_tok_s : float
        Output tokens/s in the decode site's busiest slice. [tokens/s]
    class_nodes : float
        Nodes given to it: the decode pool's share of the decode site's nodes plus the prefill pool's of the
        prefill site's, each its node-equivalents over its site's in that slice.
    rtt_ms : float
        Round trip between the two sites. [ms]
    """

    decode_site: int
    prefill_site: int
    klass: int
    option: int
    load_tok_s: float
    class_nodes: float
    rtt_ms: float


def cross_metro_loads(plan: Plan, found: SiteLoad) -> list[CrossMetroLoad]:
    """Each open decode site's cross-metro traffic in its busiest slice, grouped by prefill site, class and profile.

    Parameters
    ----------
    plan : Plan
        A solved plan.
    found : SiteLoad
        :func:`site_load` of it.

    Returns
    -------
    list of CrossMetroLoad
        One per group with load.
    """
    instance, data = plan.instance, plan.instance.inputs
    cross = instance.cross_metro
    if cross is None or not len(cross.pairs):
        return []
    nodes = plan.sites["nodes"].to_numpy(float)
    q = np.arange(len(cross.pairs))
    pair = cross.pairs.first + q
    decode, prefill = cross.pairs.decode_site, cross.pairs.prefill_site
    load = data.slice_demand_tok_s[data.pair_commodity[pair], found.peak[decode]] * plan.solution.pair_share[pair]
    out = []
    keys = np.stack([decode, prefill, cross.pairs.klass, cross.pairs.option], axis=1)
    for key in np.unique(keys[load > 0], axis=0).tolist():
        j, i, k, o = (int(v) for v in key)
        rows = np.flatnonzero((keys == key).all(axis=1))
        total = float(load[rows].sum())
        slice_ = int(found.peak[j])
        option = cross.options[o]
        decode_equiv = total * option.decode_nodes_per_tok_s
        prefill_equiv = total * option.prefill_nodes_per_tok_s
        given = nodes[j] * decode_equiv / max(found.equiv[j, slice_], 1e-12)
        given += nodes[i] * prefill_equiv / max(found.equiv[i, slice_], 1e-12)
        out.append(CrossMetroLoad(j, i, k, o, total, given, float(cross.site_rtt_ms[j, i])))
    return out


def _served(plan: Plan) -> pd.DataFrame:
    """The assignments with goodput, with ``prefill_site_id`` ('' for the pairs served whole)."""
    served = plan.assignments[plan.assignments["goodput_tok_s"] > 0]
    return served if "prefill_site_id" in served.columns else served.assign(prefill_site_id="")


def _min_slack_ms(plan: Plan) -> pd.Series:
    """Smallest TTFT slack of the populations each (site, class, prefill site, node TTFT budget) serves. [ms]

    The budget (``node_ttft_budget_ms``, rounded to the µs) tells a ladder's rungs apart; 0 without a ladder.
    """
    served = _served(plan)
    budget = served["node_ttft_budget_ms"].round(3) if "node_ttft_budget_ms" in served.columns else 0.0
    keys = ["site_id", "class", "prefill_site_id", "budget"]
    return served.assign(budget=budget).groupby(keys)["ttft_slack_ms"].min()


def _budget_key(plan: Plan, k: int, profile: ClassProfile) -> float:
    """The ``budget`` key of :func:`_min_slack_ms` for a rung of class ``k`` (0 without a ladder). [ms]"""
    if not plan.instance.laddered:
        return 0.0
    return round((plan.classes[k].serving_ttft_budget_ms or 0.0) * profile.node_ttft_share, 3)


def class_request(plan: Plan, part: str, k: int, profile: ClassProfile) -> ServingRequest:
    """The serving request of class ``k`` on a node of ``part``, in the mode its profile runs.

    The pools (disaggregated) span ``serving.pool_nodes`` nodes, as the profile was sized; speculation is the method
    the profile kept; a rung of ``serving.node_ttft_ladder`` runs its share of the class's node TTFT budget.
    """
    request = serving_request(part_node(plan.serving, part), plan.classes[k])
    pooled = profile.serving_mode == "disaggregated"
    return replace(
        request,
        ttft_p99_ms=request.ttft_p99_ms * profile.node_ttft_share,
        disaggregated=pooled,
        speculative=profile.speculative or None,
        gpus=request.gpus * (plan.serving.pool_nodes if pooled else 1),
    )


def cross_metro_request(plan: Plan, load: CrossMetroLoad) -> ServingRequest:
    """The serving request of a cross-metro profile: its pools over the WAN, inside the budget less its allowance.

    As :func:`placement.profiles.build.cross_metro_profile` sized it (the round trip it allows and any cache hit's
    load time off the node's TTFT budget).
    """
    cross = plan.instance.cross_metro
    assert cross is not None and cross.spec is not None
    option = cross.options[load.option]
    workload = plan.classes[load.klass]
    assert workload.serving_ttft_budget_ms is not None
    profile = option.profile
    hit_load_ms = 0.0 if profile.cache is None else profile.cache.hit_load_ms
    request = serving_request(plan.serving, workload)
    return replace(
        request,
        prefix_cache_hit_rate=profile.cache_hit_rate,
        ttft_p99_ms=workload.serving_ttft_budget_ms - option.allowance_ms - hit_load_ms,
        disaggregated=True,
        kv_link_gbit_s=cross.spec.wan_gbit_s,
        speculative=profile.speculative or None,
        gpus=request.gpus * plan.serving.pool_nodes,
    )


def _mode(result: ServingResult, *, cross_metro: bool) -> str:
    """``cross-metro``, ``disaggregated``, ``speculative`` or ``colocated``."""
    if cross_metro:
        return "cross-metro"
    if result.disaggregated:
        return "disaggregated"
    return "speculative" if result.speculative else "colocated"


@dataclass(frozen=True)
class _Simulated:
    """One simulated node of the tail check and what it is held to."""

    mode: str
    load_factor: float
    arrival_rate_per_node_per_s: float
    simulated: SimResult
    tok_s_per_node: float
    analytic_itl_ms: float


class _Simulator:
    """Simulates each distinct (request, load) once: loads rounded to 0.01."""

    def __init__(self, requests: int, seed: int) -> None:
        self.requests, self.seed = requests, seed
        self.analytic: dict[ServingRequest, ServingResult] = {}
        self.cache: dict[tuple[ServingRequest, float, float], _Simulated | None] = {}

    def result(self, request: ServingRequest) -> ServingResult:
        """:func:`placement.serving.request.serve` of the request, once."""
        if request not in self.analytic:
            self.analytic[request] = serve(request)
        return self.analytic[request]

    def run(self, request: ServingRequest, factor: float, *, rtt_ms: float = 0.0, nodes: int = 1) -> _Simulated | None:
        """The node (or ``nodes`` nodes' pools) at ``factor`` × its analytic goodput; None when nothing runs."""
        key = (request, factor, rtt_ms)
        if key not in self.cache:
            result = self.result(request)
            check = simulate_serving(
                request, load_factor=factor, requests=self.requests, seed=self.seed, analytic=result, network_rtt_ms=rtt_ms
            )
            self.cache[key] = (
                None
                if check is None
                else _Simulated(
                    _mode(result, cross_metro=request.kv_link_gbit_s is not None),
                    factor,
                    check.arrival_rate_per_s / nodes,
                    check.simulated,
                    check.simulated.throughput_tok_s / nodes,
                    result.itl_ms,
                )
            )
        return self.cache[key]


def check_tail(plan: Plan, *, requests: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Simulate every open site's busiest hour, per class and mode, and say where the simulated p99 breaks the objective.

    Parameters
    ----------
    plan : Plan
        A solved plan.
    requests : int
        Requests simulated per distinct (class, mode, load); loads are rounded to 0.01 and simulated once.
    seed : int
        Random seed of every simulation.

    Returns
    -------
    pandas.DataFrame
        One row per (open site, simulated class with load, and for cross-metro prefill site): the columns of
        :data:`COLUMNS`; ``exceeds`` names what breaks (``ttft``, ``itl``, ``ttft+itl``) or is empty. Rows that exceed
        come first.
    """
    instance = plan.instance
    found = site_load(plan)
    slack = _min_slack_ms(plan)
    nodes = plan.sites["nodes"].to_numpy(float)
    site_ids = plan.sites["site_id"].astype(str).tolist()
    computed = [not w.given and w.serving_ttft_budget_ms is not None for w in plan.classes]
    option_class = instance.option_class.tolist()
    own = plan.serving.accelerator
    parts = instance.site_accelerator()  # a site the availability rules moved runs its own part's node
    pool = plan.serving.pool_nodes
    sim = _Simulator(requests, seed)
    rows = []
    for j in np.flatnonzero(plan.sites["open"].to_numpy(bool) & (nodes > 0)).tolist():
        for o in np.flatnonzero(found.class_load[j] > 0).tolist():
            k = int(option_class[o])
            if not computed[k]:
                continue
            if instance.varies_by_pair:  # the rung (at the site's tier) its pairs run
                profile = instance.options[o]
            else:
                profile = instance.profiles[k] if parts[j] == own else instance.profiles_at(j)[k]
            request = class_request(plan, parts[j], k, profile)
            per = pool if request.disaggregated else 1
            class_nodes = nodes[j] * found.class_equiv[j, o] / found.equiv[j, found.peak[j]]
            factor = round(float(found.class_load[j, o] / class_nodes / (sim.result(request).goodput_tok_s / per)), 2)
            node = sim.run(request, factor, nodes=per)
            if node is None:
                continue
            key = (site_ids[j], plan.classes[k].name, "", _budget_key(plan, k, profile))
            allowed = profile.node_ttft_ms + float(slack.get(key, 0.0))
            figures = (float(found.class_load[j, o]), class_nodes, int(found.peak[j]))
            rows.append(_row(plan, j, k, "", node, figures, profile, allowed))
    far_slack = slack.groupby(level=[0, 1, 2]).min()  # cross-metro rows: whatever budget the table says
    for load in cross_metro_loads(plan, found):
        cross = instance.cross_metro
        assert cross is not None
        profile = cross.options[load.option].profile
        request = cross_metro_request(plan, load)
        factor = round(load.load_tok_s / load.class_nodes / (sim.result(request).goodput_tok_s / pool), 2)
        node = sim.run(request, factor, rtt_ms=load.rtt_ms, nodes=pool)
        if node is None:
            continue
        names = (site_ids[load.decode_site], plan.classes[load.klass].name, site_ids[load.prefill_site])
        allowed = profile.node_ttft_ms + load.rtt_ms + float(far_slack.get(names, 0.0))
        figures = (load.load_tok_s, load.class_nodes, int(found.peak[load.decode_site]))
        rows.append(_row(plan, load.decode_site, load.klass, names[2], node, figures, profile, allowed, rtt_ms=load.rtt_ms))
    table = pd.DataFrame(rows, columns=COLUMNS)
    order = ["exceeds", "site_id", "class", "mode", "prefill_site_id", "node_ttft_share"]
    return table.sort_values(order, ascending=[False, True, True, True, True, False]).reset_index(drop=True)


def _row(
    plan: Plan,
    j: int,
    k: int,
    prefill_site_id: str,
    node: _Simulated,
    load: tuple[float, float, int],
    profile: ClassProfile,
    allowed_ms: float,
    *,
    rtt_ms: float = 0.0,
) -> list[object]:
    """One row of the table: ``load`` is the class's tokens/s, the nodes it is given and the busiest slice."""
    workload = plan.classes[k]
    sim = node.simulated
    sim_itl = sim.itl_p99_as(workload.itl_metric)
    broken = [name for name, bad in (("ttft", sim.ttft_p99_ms > allowed_ms), ("itl", sim_itl > workload.itl_p99_ms)) if bad]
    return [
        str(plan.sites["site_id"].iat[j]),
        plan.sites["name"].iat[j],
        workload.name,
        node.mode,
        prefill_site_id,
        profile.node_ttft_share,
        int(plan.sites["nodes"].to_numpy(float)[j]),
        load[2],
        load[0],
        load[1],
        node.load_factor,
        node.arrival_rate_per_node_per_s,
        profile.node_ttft_ms + rtt_ms,
        sim.ttft_p99_ms,
        allowed_ms,
        node.analytic_itl_ms,
        sim_itl,
        workload.itl_p99_ms,
        workload.itl_metric,
        node.tok_s_per_node,
        "+".join(broken),
    ]
