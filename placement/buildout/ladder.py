"""The node TTFT ladder in the build-out: each (commodity, site) pair runs its loosest rung inside its objective.

With ``serving.node_ttft_ladder`` a class also runs at tighter node TTFT budgets (:func:`placement.profiles.build.class_rungs`,
the single-year plan's rungs): a tighter rung gives less goodput per node but reaches farther populations. As in the
single-year plan, a pair is allowed where some rung fits its objective and runs the loosest that fits (its cheapest).
The build-out sees a rung as a load factor on its pair: a token/s served at rung ``r`` takes ``g0 / gr`` node-equivalents
of a token/s served at the loosest rung (the accelerator the site may run with the largest such ratio: the pairs suit
every part the site may run, as their node TTFT does). Commodities are merged into rows only where they run the same
rung at every site.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placement._types import FloatArray, IntArray
from placement.buildout.fleet import Fleet, with_accelerator
from placement.buildout.tiers import SiteTiers, node_on_tier
from placement.instance.record import Instance, rung_index
from placement.profiles.build import ClassProfile, class_rungs
from placement.scenario.classes import WorkloadClass
from placement.scenario.horizon import AcceleratorOffer
from placement.scenario.sections import ServingSection


@dataclass(frozen=True)
class GroupRungs:
    """The rungs of the sites on one KV tier that may run the same parts.

    Parameters
    ----------
    columns : numpy.ndarray of int
        The sites.
    rungs : list of list of ClassProfile
        Per class, its rungs loosest first: at each, the slowest node TTFT of the parts the sites may run.
    load : list of numpy.ndarray
        Per class, ``(rungs,)`` node-equivalents of a token/s at each rung per token/s at the loosest (1 at rung 0).
    """

    columns: IntArray
    rungs: list[list[ClassProfile]]
    load: list[FloatArray]

    @property
    def reach(self) -> list[ClassProfile]:
        """Per class, the rung with the least node TTFT: a pair is allowed where it fits."""
        return [min(r, key=lambda p: p.fixed_ttft_ms) for r in self.rungs]

    def at_rung(self, rung: int) -> list[ClassProfile]:
        """Per class, its rung ``rung`` (its tightest where it has fewer)."""
        return [r[min(rung, len(r) - 1)] for r in self.rungs]


def fleet_rungs(
    fleet: Fleet, classes: list[WorkloadClass], serving: ServingSection, offered: list[AcceleratorOffer], *, source: str
) -> list[list[list[ClassProfile]]]:
    """``[a][k]``: each class's rungs on each accelerator of ``fleet``, loosest (the fleet's profile) first.

    ``serving`` is the node the fleet was built on (its KV tier); an accelerator that cannot serve a class keeps its
    stand-in profile alone.
    """
    out = []
    for a, offer in enumerate(offered):
        own = fleet.profiles[a]
        rungs = class_rungs(classes, with_accelerator(serving, offer), own, source=source)
        out.append([r if own[k].goodput_tok_s_per_node > 0 else [own[k]] for k, r in enumerate(rungs)])
    return out


def _goodput(profile: ClassProfile) -> float:
    return profile.goodput_tok_s_per_node * profile.utilisation_cap


def group_rungs(columns: IntArray, parts: NDArray[np.bool_], fleet: Fleet, rungs: list[list[list[ClassProfile]]]) -> GroupRungs:
    """The rungs every part of ``parts`` that serves a class runs, with the slowest node TTFT and largest load of them.

    Parameters
    ----------
    columns : numpy.ndarray of int
        The sites of the group.
    parts : numpy.ndarray of bool
        ``(A,)`` the parts they may run.
    fleet : Fleet
        The fleet on their KV tier.
    rungs : list
        ``[a][k]`` each accelerator's rungs (:func:`fleet_rungs`).
    """
    worst = fleet.worst_profiles(parts)
    per_class, loads = [], []
    for k, own in enumerate(worst):
        serving = [a for a in np.flatnonzero(parts).tolist() if fleet.profiles[a][k].goodput_tok_s_per_node > 0]
        depth = min((len(rungs[a][k]) for a in serving), default=1)
        chosen = [own]
        load = [1.0]
        for r in range(1, depth):
            at = [rungs[a][k][r] for a in serving]
            chosen.append(max(at, key=lambda p: p.fixed_ttft_ms))
            load.append(max(_goodput(rungs[a][k][0]) / max(_goodput(rungs[a][k][r]), 1e-300) for a in serving))
        per_class.append(chosen)
        loads.append(np.array(load))
    return GroupRungs(columns, per_class, loads)


def pair_rungs(instance: Instance, groups: tuple[GroupRungs, ...]) -> IntArray:
    """``(c, M)`` the rung each (commodity, site) pair runs: its loosest inside the objective (0 at no group's site)."""
    c = instance.commodity_class.size
    out = np.zeros((c, len(instance.sites)), dtype=np.int64)
    workload = instance.commodity_class
    for group in groups:
        cols = group.columns
        rtt = instance.rtt_ms[instance.commodity_population][:, cols]
        extra = instance.retrieval_extra_ms[workload][:, cols]
        out[:, cols] = rung_index(group.rungs, workload[:, None], rtt, extra)
    return out


def pair_load(groups: tuple[GroupRungs, ...], commodity_class: IntArray, rungs: IntArray) -> FloatArray:
    """``(c, M)`` node-equivalents of a token/s of each pair at its rung per token/s at its loosest rung."""
    out = np.ones(rungs.shape)
    for group in groups:
        for k, load in enumerate(group.load):
            rows = np.flatnonzero(commodity_class == k)
            if len(load) > 1 and len(rows):
                block = rungs[np.ix_(rows, group.columns)]
                out[np.ix_(rows, group.columns)] = load[np.minimum(block, len(load) - 1)]
    return out


def groups_of(
    tiers: SiteTiers,
    parts: NDArray[np.bool_],
    classes: list[WorkloadClass],
    serving: ServingSection,
    offered: list[AcceleratorOffer],
    *,
    source: str,
) -> tuple[GroupRungs, ...]:
    """The rungs of every group of sites (one KV tier, the same parts): one rung per class without a ladder."""
    ladder = bool(serving.node_ttft_ladder)
    by_tier = [
        fleet_rungs(fleet, classes, node_on_tier(serving, name), offered, source=source)
        if ladder
        else [[[p] for p in per_class] for per_class in fleet.profiles]
        for fleet, name in zip(tiers.fleets, tiers.names, strict=True)
    ]
    out = []
    for columns, key, fleet in tiers.groups(parts):
        g = next(i for i, f in enumerate(tiers.fleets) if f is fleet)
        out.append(group_rungs(columns, key, fleet, by_tier[g]))
    return tuple(out)


def assignment_ttft_ms(instance: Instance, groups: tuple[GroupRungs, ...], commodity: IntArray, site: IntArray) -> FloatArray:
    """p99 TTFT of each (commodity, site) element at its group's rung, as the pairs were allowed. [ms]"""
    ttft = np.zeros(len(commodity))
    workload = instance.commodity_class[commodity]
    for group in groups:
        here = np.flatnonzero(np.isin(site, group.columns))
        if not len(here):
            continue
        c, j = commodity[here], site[here]
        rtt = instance.rtt_ms[instance.commodity_population[c], j]
        rung = rung_index(group.rungs, workload[here], rtt, instance.retrieval_extra_ms[workload[here], j])
        for r in np.unique(rung).tolist():
            at = np.flatnonzero(rung == r)
            ttft[here[at]] = instance.ttft_ms(c[at], j[at], profiles=group.at_rung(r))
    return ttft
