"""Failover written down: what each loss of an N+1 plan moves where, slice by slice, so anyone can check it.

From a plan's re-routes per loss (:attr:`placement.optimize.problem.PlacementSolution.failover_share`) three
tables, written as ``failover.csv``, ``failover_sites.csv`` and ``failover_scenarios.csv``:

- ``rows``: per (loss, protected population and class it touches, slice, serving site after the loss and its
  prefill site when that is another metro's) the goodput that site serves of it, what moved there, the goodput
  served before the loss, its p99 TTFT and objective: the goodput of a protected commodity adds up to what it had,
  at sites inside its objective;
- ``sites``: per (loss, surviving site that takes moved load, slice) the nodes its own load and what moved in
  need, beside its nodes;
- ``scenarios``: per loss the goodput served at the failed sites, re-routed, left unprotected, and where it went.

A loss takes every pair that loads a failed site: a cross-metro pair (decode at its serving site, prefill at a
second) is lost with its prefill site too, and what moves onto one loads both its sites.

Plus the figures ``summary.json`` carries: the share of served goodput protected against every loss, the
share that cannot be, and what protection costs (with and without it, per class).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._types import FloatArray, IntArray
from placement.economics.cost import cost_per_million_tokens_usd
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.protect import exposed
from placement.optimize.rows import group_by
from placement.profiles.ttft_budget import COMPONENTS
from placement.results.record import ROW_COLUMNS, SCENARIO_COLUMNS, SITE_COLUMNS, FailoverTables

if TYPE_CHECKING:
    from placement.instance.record import Instance

SHARE_TOL = 1e-9
"""Shares below this are not written (solver noise)."""

NODE_TOL = 1e-6
"""Node-equivalents within this of a whole number round down when counting the nodes needed."""


def loss_label(key: int, site_ids: Sequence[str], domain_names: Sequence[str]) -> tuple[str, str]:
    """``(failed, failed_kind)`` of a loss key: a site's id, or a fault domain's name."""
    n = len(site_ids)
    return (str(site_ids[key]), "site") if key < n else (str(domain_names[key - n]), "domain")


def _commodities_of_rows(instance: Instance) -> list[IntArray]:
    """The commodities each model row stands for (rows merge interchangeable commodities)."""
    row_of = instance.row_of_commodity
    valid = np.flatnonzero(row_of >= 0)
    return [valid[g] for g in group_by(row_of[valid].astype(np.int64), instance.inputs.n_commodities)]


def _after_shares(data: PlacementInput, solution: PlacementSolution, failed_sites: IntArray, moved: FloatArray) -> FloatArray:
    """``(p,)`` shares after the loss: pairs that load a failed site carry nothing, the re-routes are added."""
    after = solution.pair_share.copy()
    after[data.pairs_touching(failed_sites)] = 0.0
    return np.asarray(after + moved)


def _loss_rows(
    instance: Instance, solution: PlacementSolution, key: int, failed_sites: IntArray, members: list[IntArray]
) -> pd.DataFrame | None:
    """``failover.csv`` rows of one loss: the protected commodities it touches, every slice and serving site."""
    data = instance.inputs
    moved = solution.failover_share.get(key)
    if moved is None:
        return None
    at_failed = data.pairs_touching(failed_sites) & data.protected[data.pair_commodity]
    lost = np.bincount(data.pair_commodity[at_failed], weights=solution.pair_share[at_failed], minlength=data.n_commodities)
    touched = lost > SHARE_TOL
    after = _after_shares(data, solution, failed_sites, moved)
    pairs = np.flatnonzero(touched[data.pair_commodity] & (after > SHARE_TOL))
    if len(pairs) == 0:
        return None
    left = solution.unprotected_share.get(key, np.zeros(data.n_commodities))
    rows = data.pair_commodity[pairs]
    counts = np.asarray([len(members[r]) for r in rows.tolist()])
    pair_rep = np.repeat(pairs, counts)
    commodity = np.concatenate([members[r] for r in rows.tolist()]) if len(rows) else np.zeros(0, np.int64)
    slices = len(data.slice_hours)
    pair_rep, commodity = np.repeat(pair_rep, slices), np.repeat(commodity, slices)
    t = np.tile(np.arange(slices), len(pair_rep) // slices)
    demand = instance.commodity_slice_demand_tok_s[commodity, t]
    row = data.pair_commodity[pair_rep]
    served_before = np.bincount(data.pair_commodity, weights=solution.pair_share, minlength=data.n_commodities)[row]
    site = data.pair_site[pair_rep]
    prefill, ttft = _prefill_and_ttft(instance, pair_rep, commodity)
    population = instance.commodity_population[commodity]
    klass = instance.commodity_class[commodity]
    table = instance.populations.table
    failed, kind = loss_label(key, list(instance.sites["id"]), instance.failure_domain_names)
    return pd.DataFrame(
        {
            "failed": failed,
            "failed_kind": kind,
            "population_id": table["population_id"].to_numpy()[population],
            "population": table["name"].to_numpy()[population],
            "country_code": table["country_code"].to_numpy()[population],
            "class": np.asarray([c.name for c in instance.classes], dtype=object)[klass],
            "slice": t,
            "serving_site_id": instance.sites["id"].to_numpy()[site],
            "prefill_site_id": prefill,
            "goodput_tok_s": demand * after[pair_rep],
            "moved_tok_s": demand * moved[pair_rep],
            "demand_tok_s": demand * served_before,
            "protected": left[row] <= SHARE_TOL,
            "ttft_p99_ms": ttft,
            "ttft_objective_ms": np.asarray([p.ttft_objective_ms for p in instance.profiles])[klass],
        },
        columns=ROW_COLUMNS,
    )


def _prefill_and_ttft(instance: Instance, pair: IntArray, commodity: IntArray) -> tuple[NDArray[np.object_], FloatArray]:
    """Each row's prefill site id (``""`` when served whole at its serving site) and its p99 TTFT. [-, ms]"""
    data = instance.inputs
    ids = instance.sites["id"].to_numpy()
    prefill = np.full(len(pair), "", dtype=object)
    ttft = instance.ttft_ms(commodity, data.pair_site[pair])
    remote = data.pair_remote_site
    far = np.flatnonzero(remote[pair] >= 0) if remote is not None else np.zeros(0, dtype=np.int64)
    if len(far):
        assert remote is not None
        prefill[far] = ids[remote[pair[far]]]
        parts = instance.cross_metro_ttft_parts_ms(pair[far], commodity[far])
        ttft[far] = sum(parts[name] for name in COMPONENTS)
    return prefill, ttft


def _loss_sites(instance: Instance, solution: PlacementSolution, key: int, failed_sites: IntArray) -> pd.DataFrame | None:
    """``failover_sites.csv`` rows of one loss: each site that takes moved load, in every slice."""
    data = instance.inputs
    moved = solution.failover_share.get(key)
    if moved is None or not (moved > SHARE_TOL).any():
        return None
    after = _after_shares(data, solution, failed_sites, moved)
    load = data.site_slice_load(after)  # (m, T) node-equivalents after the loss
    moved_in = np.zeros_like(load)  # at each site a moved pair loads (a cross-metro pair's prefill site too)
    entry_pair, entry_site, _ = data.load_entries()
    np.add.at(moved_in, entry_site, data.slice_demand_tok_s[data.pair_commodity[entry_pair]] * moved[entry_pair, None])
    receiving = np.flatnonzero(np.bincount(entry_site, weights=moved[entry_pair], minlength=data.n_sites) > SHARE_TOL)
    slices = len(data.slice_hours)
    site, t = np.repeat(receiving, slices), np.tile(np.arange(slices), len(receiving))
    failed, kind = loss_label(key, list(instance.sites["id"]), instance.failure_domain_names)
    return pd.DataFrame(
        {
            "failed": failed,
            "failed_kind": kind,
            "site_id": instance.sites["id"].to_numpy()[site],
            "slice": t,
            "moved_in_tok_s": moved_in[site, t],
            "nodes_needed": np.ceil(load[site, t] - NODE_TOL).clip(min=0).astype(np.int64),
            "nodes": solution.nodes[site],
        },
        columns=SITE_COLUMNS,
    )


def _loss_summary(instance: Instance, solution: PlacementSolution, key: int, failed_sites: IntArray) -> dict[str, Any] | None:
    """``failover_scenarios.csv`` row of one loss (None when its sites serve nothing)."""
    data = instance.inputs
    at_failed = data.pairs_touching(failed_sites)  # served at, or prefilled at, the failed sites
    flow = solution.pair_mean_flow_tok_s(data)
    served = float(flow[at_failed].sum())
    if served <= 0.0:
        return None
    moved = solution.failover_share.get(key, np.zeros(len(data.pair_site)))
    moved_flow = moved * data.mean_demand_tok_s[data.pair_commodity]
    to_site = np.bincount(data.pair_site, weights=moved_flow, minlength=data.n_sites)
    order = np.argsort(-to_site, kind="stable")
    ids = instance.sites["id"].to_numpy()
    to_sites = ";".join(f"{ids[j]}:{to_site[j]:.1f}" for j in order.tolist() if to_site[j] > 1e-6)
    members = instance.row_of_commodity
    moved_rows = np.unique(data.pair_commodity[moved > SHARE_TOL])
    populations = np.unique(instance.commodity_population[np.isin(members, moved_rows)])
    failed, kind = loss_label(key, list(ids), instance.failure_domain_names)
    total_moved = float(moved_flow.sum())
    return {
        "failed": failed,
        "failed_kind": kind,
        "site_ids": ";".join(str(ids[j]) for j in failed_sites.tolist()),
        "served_tok_s": served,
        "moved_tok_s": total_moved,
        "unprotected_tok_s": max(0.0, served - total_moved),
        "populations_moved": len(populations),
        "to_sites": to_sites,
    }


def failover_tables(instance: Instance, solution: PlacementSolution) -> FailoverTables:
    """The three failover tables of a plan (N+1 or not: a plain plan has no re-routes, only exposure).

    Parameters
    ----------
    instance : Instance
        What was solved.
    solution : PlacementSolution
        The answer.

    Returns
    -------
    FailoverTables
        Rows, sites and scenarios, in the order of the losses (sites, then fault domains).
    """
    data = instance.inputs
    losses = [(key, failed_sites) for key, failed_sites in data.failure_scenarios() if key >= data.n_sites or solution.open[key]]
    sites, scenarios, kept = [], [], []
    for key, failed_sites in losses:
        summary = _loss_summary(instance, solution, key, failed_sites)
        if summary is None:
            continue
        scenarios.append(summary)
        kept.append((key, failed_sites))
        loss_sites = _loss_sites(instance, solution, key, failed_sites)
        if loss_sites is not None:
            sites.append(loss_sites)

    def row_chunks() -> Iterator[pd.DataFrame]:
        members = _commodities_of_rows(instance)
        for key, failed_sites in kept:
            chunk = _loss_rows(instance, solution, key, failed_sites, members)
            if chunk is not None:
                yield chunk

    return FailoverTables(
        pd.concat(sites, ignore_index=True) if sites else pd.DataFrame(columns=SITE_COLUMNS),
        pd.DataFrame(scenarios, columns=SCENARIO_COLUMNS),
        row_chunks,
    )


def protection_shares(data: PlacementInput, solution: PlacementSolution) -> tuple[float, float, float]:
    """Shares of served goodput protected against every loss, unprotectable, and unprotected for want of power.

    A commodity with fewer than two sites in reach, or with all of them in one fault domain, is unprotectable;
    of a protected one, the largest share any single loss leaves without a backup counts as unprotected.

    Parameters
    ----------
    data : PlacementInput
        The arrays (``fault_tolerant``).
    solution : PlacementSolution
        The plan.

    Returns
    -------
    tuple of float
        ``(protected, unprotectable, unprotected)``; they add up to 1 (0, 0, 0 when nothing is served).
    """
    mean = data.mean_demand_tok_s
    served = np.bincount(data.pair_commodity, weights=solution.pair_share, minlength=data.n_commodities) * mean
    total = float(served.sum())
    if total <= 0.0:
        return 0.0, 0.0, 0.0
    protected = data.protected & ~exposed(data, solution.pair_share)
    worst = np.max(list(solution.unprotected_share.values()), axis=0) if solution.unprotected_share else np.zeros(len(mean))
    unprotected = float((np.minimum(worst * mean, served) * protected).sum()) / total
    unprotectable = float(served[~protected].sum()) / total
    return max(0.0, 1.0 - unprotected - unprotectable), unprotectable, unprotected


def protection_cost(
    data: PlacementInput,
    solution: PlacementSolution,
    without: PlacementSolution,
    *,
    class_costs: tuple[FloatArray, FloatArray],
    class_names: Sequence[str],
    pair_class: IntArray,
    node_mw: FloatArray,
) -> dict[str, Any]:
    """What protection costs: the plan with and without N+1, in $/h, $/M and per class, and the MW and nodes it adds.

    Parameters
    ----------
    data : PlacementInput
        The arrays.
    solution, without : PlacementSolution
        The N+1 plan and the plan without N+1 it is compared with.
    class_costs : tuple of numpy.ndarray
        ``(with, without)`` each class's cost. [USD/h]
    class_names : sequence of str
        The classes.
    pair_class : numpy.ndarray of int
        ``(p,)`` class of each pair (each plan's $/M is over the goodput it serves of the class).
    node_mw : numpy.ndarray
        ``(m,)`` facility power of one node. [MW]

    Returns
    -------
    dict
        ``summary.json``'s ``n_plus_one_cost``.
    """
    with_usd = solution.objective_usd_per_h
    without_usd = without.objective_usd_per_h
    served_with, served_without = solution.served_mean_tok_s(data), without.served_mean_tok_s(data)
    extra = solution.nodes - without.nodes
    n = len(class_names)
    goodput_with = np.bincount(pair_class, weights=solution.pair_mean_flow_tok_s(data), minlength=n)
    goodput_without = np.bincount(pair_class, weights=without.pair_mean_flow_tok_s(data), minlength=n)
    classes = {
        name: {
            "usd_per_m_with": _usd_per_m(float(class_costs[0][k]), float(goodput_with[k])),
            "usd_per_m_without": _usd_per_m(float(class_costs[1][k]), float(goodput_without[k])),
        }
        for k, name in enumerate(class_names)
    }
    return {
        "usd_per_h_with": with_usd,
        "usd_per_h_without": without_usd,
        "usd_per_m_with": _usd_per_m(with_usd, served_with),
        "usd_per_m_without": _usd_per_m(without_usd, served_without),
        "extra_nodes": int(extra.sum()),
        "extra_mw": float((extra * node_mw).sum()),
        "standby_sites": int((solution.open & ~without.open).sum()),
        "classes": classes,
    }


def _usd_per_m(cost_usd_per_h: float, goodput_tok_s: float) -> float | None:
    value = float(cost_per_million_tokens_usd(cost_usd_per_h, goodput_tok_s))
    return value if np.isfinite(value) else None
