"""A written plan's exposure to losing some of its sites, or a fault domain, now: ``placement failover``.

A results folder is read back (:func:`placement.analyses.explain.rebuild_instance`: its scenario rebuilt, the catalog
checked), its ``sites.csv`` (open, nodes) and ``assignments.csv`` (shares) are mapped onto the instance's model
rows and pairs, and :func:`placement.optimize.reroute.reroute_on_capacity` moves what the failed sites served to
the capacity the other open sites have left, inside every commodity's objectives. The answer is tabulated per
population and class (served at the failed sites, re-routed, unserved, TTFT before and after) and per receiving
site (moved in, peak utilisation after), with a headline.

TTFT figures are goodput-weighted means over a commodity's sites of each site's p99 TTFT (the figure
``assignments.csv`` holds per pair): before, over its sites in the plan; after, over the sites it keeps plus
the ones it moved to. Daily means weight the slices by their hours, as ``assignments.csv``'s ``goodput_tok_s``.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, PlacementError, Problem
from placement._types import FloatArray, IntArray
from placement.analyses.explain import rebuild_instance, refuse_buildout
from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.optimize.reroute import Reroute, reroute_on_capacity
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus
from placement.results.folder import read_results_folder, read_summary
from placement.rules.faults import find_domain

__all__ = [
    "FailoverExposure",
    "exposure_folder_name",
    "exposure_tables",
    "failover_exposure",
    "plan_solution",
    "render_exposure",
    "resolve_sites",
    "worst_ttft_rises",
]

KNOWN_SHOWN = 50
"""Site ids an unknown-site error lists."""
TOP_ROWS = 10
"""Rows of each part of the printed table (and worst TTFT rises in the headline)."""
NOISE_SHARE = 1e-6
"""Below this share of what a commodity was served at the failed sites, a move or a shortfall is the LPs'
tolerance (the round-trip LP holds the moved total to a relative 1e-9), not a figure: it is written as 0."""


@dataclass(frozen=True)
class FailoverExposure:
    """A plan's exposure to the loss of some of its sites.

    Parameters
    ----------
    label : str
        What failed: a site id, ids joined by ``+``, or a domain's label.
    kind : str
        ``"site"`` or ``"domain"``.
    failed_site_ids : tuple of str
        The sites lost.
    closed_site_ids : tuple of str
        Those of them the plan keeps closed (they serve nothing, so their loss moves nothing).
    commodities : pandas.DataFrame
        One row per affected population and class (``failover_exposure.csv``).
    sites : pandas.DataFrame
        One row per surviving site that takes moved load (``failover_exposure_sites.csv``).
    headline : dict
        The figures of ``failover_exposure.json``.
    """

    label: str
    kind: str
    failed_site_ids: tuple[str, ...]
    closed_site_ids: tuple[str, ...]
    commodities: pd.DataFrame
    sites: pd.DataFrame
    headline: dict[str, Any]


# ----------------------------------------------------------------------------- what fails


def resolve_sites(site_ids: Sequence[str], known: Sequence[str]) -> list[int]:
    """Indices of site ids in the plan's sites; every unknown one is reported with the closest known ids.

    Parameters
    ----------
    site_ids : sequence of str
        The ids asked for (``--site``).
    known : sequence of str
        The plan's site ids (``sites.csv``, catalog order).

    Returns
    -------
    list of int
        Their indices, in the order given (duplicates dropped).

    Raises
    ------
    InputError
        One problem per unknown id: what was asked, the closest ids, the plan's ids (the first 50).
    """
    index = {site: k for k, site in enumerate(known)}
    listed = ", ".join(known[:KNOWN_SHOWN]) + (f" ... and {len(known) - KNOWN_SHOWN} more" if len(known) > KNOWN_SHOWN else "")
    problems = []
    for site in site_ids:
        if site in index:
            continue
        close = difflib.get_close_matches(site, list(known), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        problems.append(Problem("--site", "", "", f"unknown site '{site}'{hint}", f"use one of the plan's sites: {listed}"))
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(index[s] for s in site_ids))


def domain_sites(name: str, instance: Instance) -> tuple[str, tuple[str, ...]]:
    """The sites of a fault domain: the scenario's ``fault_tolerance.domains`` first, then the catalog's groupings.

    Parameters
    ----------
    name : str
        ``--domain``: a configured domain's name, a grouping value, or ``column:value`` (e.g. ``campus:Ashburn``).
    instance : Instance
        The rebuilt scenario.

    Returns
    -------
    tuple
        ``(label, site ids)``.

    Raises
    ------
    InputError
        No domain has that name (the known ones listed), or several catalog columns do.
    """
    label, ids = find_domain(name, instance.sites, instance.fault_domains)
    return str(label), tuple(str(s) for s in ids)


def exposure_folder_name(label: str) -> str:
    """The default results folder of a loss, inside the plan's folder: ``failover-<label>`` made file-name safe."""
    return "failover-" + (re.sub(r"[^A-Za-z0-9._+-]+", "_", label).strip("_") or "loss")


# ----------------------------------------------------------------------------- the plan as arrays


def assignment_commodities(instance: Instance, assignments: pd.DataFrame, *, source: str) -> tuple[IntArray, IntArray, IntArray]:
    """Commodity, site and prefill site index of every row of ``assignments.csv``.

    Parameters
    ----------
    instance : Instance
        The rebuilt scenario.
    assignments : pandas.DataFrame
        ``assignments.csv``.
    source : str
        The folder, for errors.

    Returns
    -------
    tuple of numpy.ndarray
        ``(commodity, site, prefill)`` per row; ``prefill`` is the cross-metro prefill site, -1 where the row is
        served whole at its site.

    Raises
    ------
    PlacementError
        A row names a population, class or site the scenario does not have: the folder is stale.
    """
    site_index = {s: k for k, s in enumerate(instance.sites["id"].astype(str))}
    pop_index = {p: k for k, p in enumerate(instance.populations.table["population_id"].astype(str))}
    class_index = {c.name: k for k, c in enumerate(instance.classes)}
    pops = assignments["population_id"].astype(str).map(pop_index)
    klass = assignments["class"].astype(str).map(class_index)
    site = assignments["site_id"].astype(str).map(site_index)
    if pops.isna().any() or klass.isna().any() or site.isna().any():
        raise PlacementError(f"{source}/assignments.csv names populations, classes or sites the scenario lacks: solve again")
    written_prefill = assignments.get("prefill_site_id", pd.Series("", index=assignments.index)).fillna("").astype(str)
    prefill = np.array([site_index.get(s, -1) if s else -1 for s in written_prefill], dtype=np.int64)
    n_classes, n_parts = len(instance.classes), len(instance.regimes) + 1
    key = (instance.commodity_population * n_classes + instance.commodity_class) * n_parts + instance.split().regime + 1
    order = np.argsort(key, kind="stable")
    regime_index = {r.regime_id: k for k, r in enumerate(instance.regimes)}
    written = assignments["regime"].fillna("").astype(str) if "regime" in assignments else pd.Series([""] * len(assignments))
    part = written.map(lambda r: regime_index.get(r, -1) if r else -1).to_numpy(np.int64) + 1
    wanted = (pops.to_numpy(np.int64) * n_classes + klass.to_numpy(np.int64)) * n_parts + part
    at = np.clip(np.searchsorted(key[order], wanted), 0, max(len(order) - 1, 0))
    commodity = order[at] if len(order) else np.zeros(0, dtype=np.int64)
    if len(wanted) and (key[commodity] != wanted).any():
        raise PlacementError(f"{source}/assignments.csv names population-classes the scenario lacks: solve again")
    return np.asarray(commodity, dtype=np.int64), np.asarray(site.to_numpy(np.int64), dtype=np.int64), prefill


def plan_solution(instance: Instance, sites: pd.DataFrame, assignments: pd.DataFrame, *, source: str) -> PlacementSolution:
    """The folder's plan on the instance's arrays: open sites and nodes from ``sites.csv``, shares per pair.

    Every member of a model row carries the row's share at a site (:func:`placement.plan.tables.commodity_pairs`), so
    a row's share is read from its members' rows of ``assignments.csv``.

    Parameters
    ----------
    instance : Instance
        The rebuilt scenario.
    sites, assignments : pandas.DataFrame
        ``sites.csv`` (catalog order, checked) and ``assignments.csv``.
    source : str
        The folder, for errors.

    Returns
    -------
    PlacementSolution
        ``open``, ``nodes`` and ``pair_share`` as written (no solver report).

    Raises
    ------
    PlacementError
        An assignment names a population, class or pair the scenario does not have: the folder is stale.
    """
    data = instance.inputs
    m = data.n_sites
    commodity, site, prefill = assignment_commodities(instance, assignments, source=source)
    rows = instance.row_of_commodity[commodity]
    remote = data.pair_remote_site if data.pair_remote_site is not None else np.full(len(data.pair_site), -1)
    # a pair is (row, site, prefill site): a row served whole at a site and prefilled elsewhere are two pairs
    pair_key = (data.pair_commodity * m + data.pair_site) * (m + 1) + remote + 1
    pair_order = np.argsort(pair_key, kind="stable")
    asked = (rows * m + site) * (m + 1) + prefill + 1
    found = np.clip(np.searchsorted(pair_key[pair_order], asked), 0, max(len(pair_order) - 1, 0))
    pair = pair_order[found] if len(pair_order) else np.zeros(0, dtype=np.int64)
    if len(asked) and ((rows < 0).any() or (pair_key[pair] != asked).any()):
        raise PlacementError(f"{source}/assignments.csv holds pairs outside the scenario's objectives: solve again")
    shares = np.zeros(len(data.pair_site))
    shares[pair] = assignments["share_of_demand"].to_numpy(float)  # members of a row carry the same share
    report = SolverReport("results folder", SolveStatus.FEASIBLE, math.nan, math.nan, math.nan, 0.0, "read back")
    return PlacementSolution(
        open=sites["open"].to_numpy(bool),
        nodes=sites["nodes"].to_numpy(np.int64),
        pair_share=shares,
        unserved_share=np.zeros(data.n_commodities),
        objective_usd_per_h=math.nan,
        report=report,
    )


# ----------------------------------------------------------------------------- tabulating


def _hour_weighted(values: FloatArray, hours: FloatArray) -> FloatArray:
    """Hour-weighted mean over the last axis."""
    return np.asarray(values @ hours / hours.sum())


def _weighted_ttft(frame: pd.DataFrame) -> pd.Series:
    """Goodput-weighted mean TTFT per commodity of (commodity, goodput, ttft) rows."""
    weighted = frame.assign(w=frame["goodput"] * frame["ttft"]).groupby("commodity")[["w", "goodput"]].sum()
    return (weighted["w"] / weighted["goodput"].where(weighted["goodput"] > 0)).rename("ttft")


def _commodity_table(
    instance: Instance, assignments: pd.DataFrame, reroute: Reroute, is_failed: NDArray[np.bool_], *, source: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per affected commodity: served at the failed sites, moved, unserved, TTFT; and every (commodity, site) move."""
    data = instance.inputs
    hours = data.slice_hours
    commodity, site, prefill = assignment_commodities(instance, assignments, source=source)
    goodput = assignments["share_of_demand"].to_numpy(float) * instance.commodity_mean_demand_tok_s[commodity]
    pairs = pd.DataFrame({"commodity": commodity, "site": site, "goodput": goodput})
    pairs["ttft"] = instance.ttft_ms(commodity, site) if len(pairs) else np.zeros(0)
    far = prefill >= 0
    if far.any():  # prefilled at a second site: its own TTFT (the sites' round trip in it), lost with either site
        pairs.loc[far, "ttft"] = assignments["ttft_p99_ms"].to_numpy(float)[far]
    failed = is_failed[site] | (far & is_failed[np.maximum(prefill, 0)])
    served_there = pairs[failed].groupby("commodity")["goodput"].sum()
    served_there = served_there[served_there > 0]
    affected = served_there.index.to_numpy(np.int64)
    rows = instance.row_of_commodity[affected]
    lost_mean = _hour_weighted(reroute.lost_tok_s, hours)  # (rows,) daily mean lost per model row
    # Each row's daily-mean move to each site, as a share of what the row lost; every member moves the same share.
    row_moves = (
        pd.DataFrame(
            {
                "row": reroute.move_commodity,
                "site": reroute.move_site,
                "mean": reroute.move_tok_s * hours[reroute.move_slice] / hours.sum(),
            }
        )
        .groupby(["row", "site"], as_index=False)["mean"]
        .sum()
    )
    row_moves["ratio"] = row_moves["mean"] / np.where(lost_mean > 0, lost_mean, 1.0)[row_moves["row"].to_numpy(np.int64)]
    served = served_there.to_numpy(float)
    members = pd.DataFrame({"a": np.arange(len(affected)), "commodity": affected, "row": rows, "served": served})
    moves = members.merge(row_moves[["row", "site", "ratio"]], on="row")
    moves["goodput"] = moves["served"] * moves["ratio"]
    moves = moves[moves["goodput"] > NOISE_SHARE * moves["served"]].reset_index(drop=True)
    moves["ttft"] = (
        instance.ttft_ms(moves["commodity"].to_numpy(np.int64), moves["site"].to_numpy(np.int64)) if len(moves) else np.zeros(0)
    )
    moved_total = np.bincount(moves["a"].to_numpy(np.int64), weights=moves["goodput"].to_numpy(float), minlength=len(affected))
    before = _weighted_ttft(pairs[pairs["commodity"].isin(affected)])
    after = _weighted_ttft(
        pd.concat([pairs[~failed & pairs["commodity"].isin(affected)], moves[list(pairs.columns)]], ignore_index=True)
    )
    table = instance.populations.table
    pop = instance.commodity_population[affected]
    short = served - moved_total
    unserved = np.where(short > NOISE_SHARE * served, short, 0.0)
    frame = pd.DataFrame(
        {
            "population_id": table["population_id"].to_numpy()[pop],
            "population": table["name"].to_numpy()[pop],
            "country_code": table["country_code"].to_numpy()[pop],
            "class": [instance.classes[k].name for k in instance.commodity_class[affected].tolist()],
            "served_there_tok_s": served,
            "rerouted_tok_s": served - unserved,
            "unserved_tok_s": unserved,
            "ttft_p99_before_ms": before.reindex(affected).to_numpy(float),
            "ttft_p99_after_ms": after.reindex(affected).to_numpy(float),
            "ttft_objective_ms": [instance.classes[k].ttft_p99_ms for k in instance.commodity_class[affected].tolist()],
            "to_sites": _to_sites(moves, instance.sites["id"].to_numpy(), len(affected)),
        }
    )
    frame["ttft_rise_ms"] = frame["ttft_p99_after_ms"] - frame["ttft_p99_before_ms"]
    frame = frame.sort_values(["served_there_tok_s", "population_id", "class"], ascending=[False, True, True])
    return frame.reset_index(drop=True), moves


def _to_sites(moves: pd.DataFrame, site_ids: NDArray[np.object_], n_affected: int) -> list[str]:
    """``site:tok_s`` of each affected commodity's moves, largest first, joined by ``;``."""
    ordered = moves.sort_values(["a", "goodput", "site"], ascending=[True, False, True])
    text = [f"{site_ids[j]}:{g:.6g}" for j, g in zip(ordered["site"].tolist(), ordered["goodput"].tolist(), strict=True)]
    joined = pd.Series(text, index=ordered["a"].to_numpy(), dtype=object).groupby(level=0).agg(";".join)
    return [str(joined.get(a, "")) for a in range(n_affected)]


def _site_table(instance: Instance, solution: PlacementSolution, reroute: Reroute, moves: pd.DataFrame) -> pd.DataFrame:
    """Per surviving site that takes load: moved in (daily mean and peak slice), nodes, utilisation."""
    data = instance.inputs
    moved_in = reroute.moved_in_tok_s  # (m, T)
    receiving = np.flatnonzero(moved_in.max(axis=1) > 0) if moved_in.size else np.zeros(0, dtype=np.int64)
    before = data.site_slice_load(solution.pair_share)
    nodes = reroute.site_nodes[receiving].astype(float)
    daily = moves.groupby("site")["goodput"].sum().reindex(receiving, fill_value=0.0).to_numpy(float)
    frame = pd.DataFrame(
        {
            "site_id": instance.sites["id"].to_numpy()[receiving],
            "site": instance.sites["name"].to_numpy()[receiving],
            "moved_in_tok_s": daily,
            "peak_moved_in_tok_s": moved_in[receiving].max(axis=1) if len(receiving) else np.zeros(0),
            "nodes": reroute.site_nodes[receiving],
            "peak_nodes_used": reroute.site_load_nodes[receiving].max(axis=1) if len(receiving) else np.zeros(0),
            "peak_utilisation_before": before[receiving].max(axis=1) / np.maximum(nodes, 1.0) if len(receiving) else [],
            "peak_utilisation_after": reroute.site_load_nodes[receiving].max(axis=1) / np.maximum(nodes, 1.0)
            if len(receiving)
            else [],
        }
    )
    return frame.sort_values(["moved_in_tok_s", "site_id"], ascending=[False, True]).reset_index(drop=True)


def worst_ttft_rises(commodities: pd.DataFrame) -> pd.DataFrame:
    """Commodities whose TTFT rises, the largest rise against their objective first.

    Against the objective, so that a batch class's milliseconds on a budget of an hour do not crowd out a chat
    class's on a budget of 300 ms.

    Parameters
    ----------
    commodities : pandas.DataFrame
        :attr:`FailoverExposure.commodities`.

    Returns
    -------
    pandas.DataFrame
        The rows with a rise, sorted.
    """
    rising = commodities[commodities["ttft_rise_ms"] > 0]
    order = rising.assign(_against=rising["ttft_rise_ms"] / rising["ttft_objective_ms"]).sort_values(
        ["_against", "population_id", "class"], ascending=[False, True, True]
    )
    return order.drop(columns="_against")


def exposure_tables(
    instance: Instance, assignments: pd.DataFrame, solution: PlacementSolution, reroute: Reroute, *, source: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables of a loss: per affected population and class, and per receiving site.

    Parameters
    ----------
    instance : Instance
        The rebuilt scenario.
    assignments : pandas.DataFrame
        The folder's ``assignments.csv``.
    solution : PlacementSolution
        The plan on the instance's arrays (:func:`plan_solution`).
    reroute : Reroute
        The re-routing of the loss.
    source : str
        The folder, for errors.

    Returns
    -------
    tuple of pandas.DataFrame
        ``failover_exposure.csv`` and ``failover_exposure_sites.csv``.
    """
    is_failed = np.zeros(instance.inputs.n_sites, dtype=bool)
    is_failed[reroute.failed_sites] = True
    commodities, moves = _commodity_table(instance, assignments, reroute, is_failed, source=source)
    return commodities, _site_table(instance, solution, reroute, moves)


def _headline(
    label: str, kind: str, failed_ids: tuple[str, ...], closed: tuple[str, ...], commodities: pd.DataFrame, sites: pd.DataFrame
) -> dict[str, Any]:
    served = float(commodities["served_there_tok_s"].sum())
    moved = float(commodities["rerouted_tok_s"].sum())
    unserved = float(commodities["unserved_tok_s"].sum())
    rises = worst_ttft_rises(commodities)
    return {
        "failed": label,
        "failed_kind": kind,
        "failed_site_ids": list(failed_ids),
        "closed_site_ids": list(closed),
        "served_there_tok_s": served,
        "rerouted_tok_s": moved,
        "rerouted_share": moved / served if served > 0 else None,
        "unserved_tok_s": unserved,
        "unserved_share": unserved / served if served > 0 else None,
        "populations_affected": len(commodities),
        "populations_unserved": int((commodities["unserved_tok_s"] > 0).sum()),
        "receiving_sites": len(sites),
        "peak_utilisation_after": float(sites["peak_utilisation_after"].max()) if len(sites) else None,
        "worst_ttft_rises": [
            {
                "population_id": r.population_id,
                "population": r.population,
                "class": r["class"],
                "ttft_p99_before_ms": float(r.ttft_p99_before_ms),
                "ttft_p99_after_ms": float(r.ttft_p99_after_ms),
                "ttft_rise_ms": float(r.ttft_rise_ms),
                "ttft_objective_ms": float(r.ttft_objective_ms),
            }
            for _, r in rises.head(TOP_ROWS).iterrows()
        ],
    }


def failover_exposure(
    folder: str | Path,
    *,
    site_ids: Sequence[str] = (),
    domain: str | None = None,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> FailoverExposure:
    """Lose sites (or a fault domain) of a written plan now and re-route on the capacity left.

    Parameters
    ----------
    folder : str or Path
        A results folder written by ``solve`` (not a build-out).
    site_ids : sequence of str, optional
        Sites lost (``--site``).
    domain : str, optional
        A fault domain lost (``--domain``): the scenario's configured domains, or a catalog grouping value.
    options : SolverOptions, optional
        For the re-routing LPs (default: one thread).
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    FailoverExposure
        Per commodity and per receiving site, with the headline.

    Raises
    ------
    InputError
        Neither sites nor a domain, an unknown site id or domain, or not a results folder (a whole build-out too).
    PlacementError
        A build-out year's folder, or a folder that no longer matches its scenario.
    """
    if not site_ids and domain is None:
        raise InputError([Problem("placement failover", "", "", "nothing fails", "give --site ID (repeatable) or --domain NAME")])
    refuse_buildout(Path(folder), read_summary(folder), command="failover")
    written = read_results_folder(folder)
    known = list(written.sites["site_id"].astype(str))
    indices = resolve_sites(site_ids, known)  # fail fast, before the rebuild
    rebuilt = rebuild_instance(written, progress=progress)
    instance, sites, source = rebuilt.instance, rebuilt.sites, str(folder)
    label, kind = "+".join(dict.fromkeys(site_ids)), "site"
    if domain is not None:
        domain_label, domain_ids = domain_sites(domain, instance)
        indices = list(dict.fromkeys([*indices, *resolve_sites(domain_ids, known)]))
        label, kind = (domain_label if not site_ids else f"{label}+{domain_label}"), "domain"
    solution = plan_solution(instance, sites, rebuilt.results.assignments, source=source)
    failed = np.array(indices, dtype=np.int64)
    progress(f"re-routing the load of {len(failed)} site(s) over {len(instance.inputs.slice_hours)} slice(s)")
    reroute = reroute_on_capacity(instance.inputs, solution, failed, options=options or SolverOptions())
    commodities, site_table = exposure_tables(instance, rebuilt.results.assignments, solution, reroute, source=source)
    failed_ids = tuple(known[j] for j in indices)
    closed = tuple(known[j] for j in indices if not solution.open[j])
    headline = _headline(label, kind, failed_ids, closed, commodities, site_table)
    return FailoverExposure(label, kind, failed_ids, closed, commodities, site_table, headline)


# ----------------------------------------------------------------------------- the printed table


def _tok(value: float) -> str:
    return f"{value:,.0f} tok/s"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render_exposure(exposure: FailoverExposure) -> str:
    """The printed table: headline, worst TTFT rises, what goes unserved, receiving sites.

    Parameters
    ----------
    exposure : FailoverExposure
        From :func:`failover_exposure`.

    Returns
    -------
    str
        Lines of text.
    """
    h = exposure.headline
    ids = ", ".join(exposure.failed_site_ids)
    what = exposure.label if ids == exposure.label else f"{exposure.label} ({ids})"
    lines = [f"if {exposure.kind} {what} is lost now:"]
    if exposure.closed_site_ids:
        closed = ", ".join(exposure.closed_site_ids)
        lines.append(f"  closed in this plan (they serve nothing, so losing them moves nothing): {closed}")
    if h["served_there_tok_s"] <= 0:
        lines.append("  the exposure is zero: the plan serves nothing there")
        return "\n".join(lines)
    lines += [
        f"  served there {_tok(h['served_there_tok_s'])} (daily mean) for {h['populations_affected']:,} population-classes",
        f"  re-routed inside the objectives {_tok(h['rerouted_tok_s'])} ({_share(h['rerouted_share'])})",
        f"  unserved {_tok(h['unserved_tok_s'])} ({_share(h['unserved_share'])}) for {h['populations_unserved']:,}"
        " population-classes",
    ]
    rises = worst_ttft_rises(exposure.commodities)
    if len(rises):
        lines.append("TTFT p99 rises most against the objective (goodput-weighted over their sites):")
        for _, r in rises.head(TOP_ROWS).iterrows():
            lines.append(
                f"  {r.population} ({r.country_code}), {r['class']}: {r.ttft_p99_before_ms:.1f} -> {r.ttft_p99_after_ms:.1f} ms"
                f" (+{r.ttft_rise_ms:.1f} ms, {100 * r.ttft_rise_ms / r.ttft_objective_ms:.1f}% of {r.ttft_objective_ms:g} ms)"
            )
    unserved = exposure.commodities[exposure.commodities["unserved_tok_s"] > 0]
    if len(unserved):
        lines.append(f"unserved ({len(unserved):,} population-classes, largest first):")
        for _, r in unserved.sort_values("unserved_tok_s", ascending=False).head(TOP_ROWS).iterrows():
            lines.append(
                f"  {r.population} ({r.country_code}), {r['class']}: {_tok(r.unserved_tok_s)} of {_tok(r.served_there_tok_s)}"
            )
        if len(unserved) > TOP_ROWS:
            lines.append(f"  ... and {len(unserved) - TOP_ROWS:,} more (failover_exposure.csv)")
    if len(exposure.sites):
        lines.append("receiving sites (moved in, daily mean; peak utilisation before -> after):")
        for _, s in exposure.sites.head(TOP_ROWS).iterrows():
            lines.append(
                f"  {s.site_id}: {_tok(s.moved_in_tok_s)} (peak slice {_tok(s.peak_moved_in_tok_s)}), "
                f"{100 * s.peak_utilisation_before:.1f}% -> {100 * s.peak_utilisation_after:.1f}% of {s.nodes:,} nodes"
            )
        if len(exposure.sites) > TOP_ROWS:
            lines.append(f"  ... and {len(exposure.sites) - TOP_ROWS} more (failover_exposure_sites.csv)")
    else:
        lines.append("no surviving site takes any of it")
    return "\n".join(lines)
