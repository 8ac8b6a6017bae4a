"""What a plan says to the planner beside its tables.

Diagnoses of unreachable demand, of shortfalls and of protection, and the rules that bind.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from placement._errors import InfeasibleError
from placement._types import IntArray
from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.optimize.protect import exposed
from placement.plan.failover import protection_shares
from placement.profiles.ttft_budget import max_rtt_ms
from placement.results.record import RULES_HEADER
from placement.results.summary import (
    PlanSummary,
)
from placement.results.textfmt import mw_text, share_text, usd_per_m_text
from placement.rules.residency import Regime
from placement.scenario.classes import WorkloadClass


def unreachable_message(instance: Instance, rows: IntArray, *, limit: int = 15) -> list[str]:
    """The populations (and classes) with no site inside their objective, nearest site and why, up to ``limit``."""
    table = instance.populations.table
    lines = []
    for c in rows[:limit].tolist():
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        workload = instance.profiles[k]
        ttft_ms = instance.ttft_ms(c)
        j = int(np.argmin(ttft_ms))
        where = f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {workload.name}"
        inside = np.flatnonzero(instance.within_budget.row(c))
        if len(inside):
            names = ", ".join(str(instance.sites["name"].iat[j]) for j in inside[:6]) + (" ..." if len(inside) > 6 else "")
            unpowered = (instance.sites["mw_available"].to_numpy(float)[inside] <= 0).all()
            why = "have no power (0 MW available)" if unpowered else "are barred by residency rules or have no power"
            regime = instance.regime_of(np.array([c]))[0]
            unfit = [] if instance.part_serves is None else [int(j) for j in inside if not instance.part_serves[k, j]]
            if regime and not unpowered:
                where += f" (its {regime} part, in-bloc sites only)"
                why = f"are outside {regime}'s in-bloc sites or have no power"
            if unfit and not unpowered:  # the availability rules left a part there that cannot serve the class
                at = _parts_at(instance, unfit)
                if len(unfit) == len(inside):
                    why = f"run only parts the availability rules leave there, which serve no {workload.name} ({at})"
                else:
                    why += f", or run a part the availability rules leave there that serves no {workload.name} ({at})"
            lines.append(f"{where}: the sites inside its budget ({names}) {why}")
            continue
        lines.append(
            f"{where}: nearest site {instance.sites['name'].iat[j]} has p99 TTFT {ttft_ms[j]:.1f} ms "
            f"(RTT {instance.rtt_ms[i, j]:.1f} ms) over the {workload.ttft_objective_ms:g} ms objective, "
            f"which allows at most {max_rtt_ms(workload):.1f} ms RTT"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def _parts_at(instance: Instance, sites: list[int]) -> str:
    """``"ascend-910c at Beijing, Shanghai"``: the part each of ``sites`` runs, sites grouped by part."""
    parts = instance.site_accelerator()
    by_part: dict[str, list[str]] = {}
    for j in sites:
        by_part.setdefault(parts[j] or "no part", []).append(str(instance.sites["name"].iat[j]))
    return "; ".join(f"{part} at {', '.join(at[:6])}{' ...' if len(at) > 6 else ''}" for part, at in by_part.items())


def _unprotectable_message(instance: Instance, rows: IntArray, *, limit: int = 15) -> list[str]:
    """One line per commodity that has a single site inside its objective: N+1 cannot hold for it."""
    table = instance.populations.table
    lines = []
    for c in rows[:limit].tolist():
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        j = int(np.flatnonzero(instance.allowed.row(c))[0])
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.classes[k].name}: "
            f"only {instance.sites['name'].iat[j]} is inside its {instance.classes[k].ttft_p99_ms:g} ms objective "
            f"(p99 TTFT {float(instance.ttft_ms(c, j)):.1f} ms)"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def unprotectable_commodities(instance: Instance) -> IntArray:
    """Commodities with demand that N+1 cannot protect: a single site inside their objective.

    Parameters
    ----------
    instance : Instance
        What is solved.

    Returns
    -------
    numpy.ndarray of int
        Commodity indices (empty unless the scenario asks for N+1).
    """
    if not instance.inputs.fault_tolerant:
        return np.zeros(0, dtype=np.int64)
    single = (instance.allowed.count_by_row() == 1) & (instance.commodity_mean_demand_tok_s > 0)
    return np.flatnonzero(single).astype(np.int64)


def shortfall_message(instance: Instance, elastic: PlacementSolution, *, limit: int = 15) -> list[str]:
    """The populations the elastic model leaves short of capacity, and how short, up to ``limit``."""
    data = instance.inputs
    short = np.flatnonzero(elastic.unserved_share > 1e-6)
    table = instance.populations.table
    lines = []
    mean = data.mean_demand_tok_s
    for row in short[np.argsort(-elastic.unserved_share[short] * mean[short])][:limit].tolist():
        c = int(instance.modelled[row])
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        reach = np.flatnonzero(instance.allowed.row(c))
        names = ", ".join(f"{instance.sites['name'].iat[j]} ({instance.sites['mw_available'].iat[j]:g} MW)" for j in reach[:6])
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.classes[k].name}: "
            f"{share_text(float(elastic.unserved_share[row]))} of its {mean[row]:,.0f} tok/s cannot be served; "
            f"sites inside the budget: {names}{' ...' if len(reach) > 6 else ''}: their power is spoken for"
            + (" or N+1 cannot be met" if data.fault_tolerant else "")
        )
    return lines


def power_totals(instance: Instance) -> tuple[float, float, float, float]:
    """MW the sites hold in total, and a lower bound on the MW the demand needs (with its node count and PUE).

    The bound is the busiest slice's node-equivalents at the lowest PUE of any site.
    """
    sites = instance.sites
    nodes_per_tok_s = np.array([p.nodes_per_tok_s for p in instance.profiles])[instance.commodity_class]
    nodes = float((instance.commodity_slice_demand_tok_s * nodes_per_tok_s[:, None]).sum(axis=0).max(initial=0.0))
    pue = float(sites["pue"].min())
    return float(sites["mw_available"].sum()), nodes * instance.node_kw * pue / 1000.0, nodes, pue


def no_power_message(instance: Instance) -> str | None:
    """With no MW at any site every pair is barred: say it is power, not latency."""
    available, needed, nodes, pue = power_totals(instance)
    if available > 0:
        return None
    return (
        f"no power: the {len(instance.sites)} candidate sites hold {mw_text(available)} MW in total "
        f"(sites.mw_multiplier: {instance.facts.mw_multiplier:g}), but serving the demand needs at least "
        f"{mw_text(needed)} MW ({nodes:,.1f} nodes of {instance.node_kw:g} kW at PUE {pue:g} in the busiest slice)"
        f"\nFix: raise sites.mw_multiplier or mw_available in {instance.facts.catalog_name}, or add sites"
    )


def protection_notes(instance: Instance, solution: PlacementSolution, summary: PlanSummary, *, limit: int = 10) -> list[str]:
    """What N+1 protects and what it costs, in words; the populations left unprotected for want of power."""
    data = instance.inputs
    domains = len(data.failure_domains)
    losses = f"any one open site{f' or any one of {domains} fault domains' if domains else ''}"
    protected, unprotectable, unprotected = protection_shares(data, solution)
    lines = [
        f"N+1: {share_text(protected)} of served goodput is re-routed in full inside its objective on the loss of "
        f"{losses} (failover*.csv); {share_text(unprotectable)} has a single site in reach, or all its sites in one fault domain"
        + (f"; {share_text(unprotected)} has no spare power in reach:" if unprotected > 0 else "")
    ]
    if unprotected > 0:
        lines += [f"  - {line}" for line in _unprotected_lines(instance, solution, limit=limit)]
    lines += _domain_exposed_lines(instance, solution, limit=limit)
    cost = summary.n_plus_one_cost
    if cost is not None and cost.get("usd_per_m_with") is not None and cost.get("usd_per_m_without") is not None:
        rise = cost["usd_per_m_with"] / cost["usd_per_m_without"] - 1 if cost["usd_per_m_without"] else float("nan")
        lines.append(
            f"24x7 costs ${usd_per_m_text(cost['usd_per_m_with'])} per million goodput tokens against "
            f"${usd_per_m_text(cost['usd_per_m_without'])} without N+1 ({rise:+.1%}): {cost['extra_nodes']:,} spare nodes, "
            f"{mw_text(cost['extra_mw'])} MW, {cost['standby_sites']} standby sites"
        )
    return lines


def _domain_exposed_lines(instance: Instance, solution: PlacementSolution, *, limit: int) -> list[str]:
    """The population-classes with two or more sites in reach, all inside one fault domain, largest first."""
    data = instance.inputs
    rows = np.flatnonzero(exposed(data, solution.pair_share)) if data.failure_domains else np.zeros(0, dtype=np.int64)
    if not len(rows):
        return []
    row_share = np.bincount(data.pair_commodity, weights=solution.pair_share, minlength=data.n_commodities)
    members = np.flatnonzero(np.isin(instance.row_of_commodity, rows))
    served = row_share[instance.row_of_commodity[members]] * instance.commodity_mean_demand_tok_s[members]
    members = members[np.argsort(-served, kind="stable")]
    table = instance.populations.table
    lines = [
        f"{len(members):,} population-class pairs have every site in reach inside one fault domain, so its loss "
        "cannot be covered; they are served without a backup against it:"
    ]
    for c in members[:limit].tolist():
        i, k, r = int(instance.commodity_population[c]), int(instance.commodity_class[c]), int(instance.row_of_commodity[c])
        reach = set(data.pair_site[data.pair_commodity == r].tolist())
        domain = next(
            name
            for name, sites in zip(instance.failure_domain_names, data.failure_domains, strict=True)
            if reach <= set(np.asarray(sites).tolist())
        )
        who = f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.profiles[k].name}"
        lines.append(f"  - {who}: every site in reach is in {domain}")
    if len(members) > limit:
        lines.append(f"  - ... and {len(members) - limit:,} more")
    return lines


def _unprotected_lines(instance: Instance, solution: PlacementSolution, *, limit: int) -> list[str]:
    """The protected commodities some loss leaves without a backup, largest first."""
    data = instance.inputs
    worst = np.max(list(solution.unprotected_share.values()), axis=0)
    at_risk = worst * data.mean_demand_tok_s
    rows = np.flatnonzero(at_risk > 1e-9)
    rows = rows[np.argsort(-at_risk[rows], kind="stable")]
    table = instance.populations.table
    lines = []
    for r in rows[:limit].tolist():
        c = int(instance.modelled[r])
        i, k = int(instance.commodity_population[c]), int(instance.commodity_class[c])
        sites = data.pair_site[(data.pair_commodity == r)]
        names = ", ".join(str(instance.sites["name"].iat[j]) for j in sites[:4].tolist())
        lines.append(
            f"{table['name'].iat[i]} ({table['country_code'].iat[i]}), class {instance.profiles[k].name}: "
            f"{share_text(float(worst[r]))} of it has no backup when a site it uses is lost; sites in reach: {names}"
        )
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return lines


def rule_notes(instance: Instance, sites: pd.DataFrame) -> list[str]:
    """The rules that shaped the plan, in words: residency and where power binds.

    Parameters
    ----------
    instance : Instance
        The solved instance (its residency rules and the pairs they barred).
    sites : pandas.DataFrame
        The plan's site table (``open``, ``mw_used``, ``mw_available``).

    Returns
    -------
    list of str
        A header and one indented line per rule; empty when nothing shaped the plan.
    """
    residency = instance.facts.residency
    lines = [
        f"residency: populations in {', '.join(rule.populations)} are served only from sites in {', '.join(rule.sites)}"
        for rule in residency.rules
    ]
    if residency.domestic_only_sites:
        lines.append(f"residency: sites in {', '.join(residency.domestic_only_sites)} serve only their own country")
    lines += [regime_note(regime, instance.classes) for regime in instance.regimes]
    demanded = instance.commodity_mean_demand_tok_s > 0
    barred = instance.within_budget.and_not(instance.allowed).and_columns(instance.sites["mw_available"].to_numpy(float) > 0)
    if instance.part_serves is not None:  # the pairs the availability rules bar are theirs, not residency's
        barred = barred.and_row_groups(instance.commodity_class, instance.part_serves)
    if lines:
        lines.append(f"residency barred {barred.count(demanded):,} (population-class, site) pairs inside their TTFT objective")
    open_sites = sites[sites["open"]]
    lines += _availability_notes(instance, open_sites)
    node_mw = instance.inputs.site_node_mw[open_sites.index.to_numpy()]
    full = open_sites[open_sites["mw_available"] - open_sites["mw_used"] < node_mw]
    if len(full):
        names = ", ".join(
            f"{site_id} {mw_text(mw)} MW" for site_id, mw in zip(full["site_id"], full["mw_available"].astype(float), strict=True)
        )
        lines.append(f"power binds at {len(full)} of {len(open_sites)} open sites (no room for one more node): {names}")
    return [RULES_HEADER, *[f"  - {line}" for line in lines]] if lines else []


def regime_note(regime: Regime, classes: list[WorkloadClass]) -> str:
    """One regime in words: whose demand, which share of each class, where, and whether its sites serve others."""
    shares = {f"{share:g}" for share in regime.share_by_class}
    if len(shares) == 1:
        share_text = f"share {shares.pop()} of every class"
    else:
        share_text = ", ".join(f"{c.name} {share:g}" for c, share in zip(classes, regime.share_by_class, strict=True))
    members = ", ".join(sorted(regime.members)) if len(regime.members) <= 6 else f"{len(regime.members)} countries"
    if len(regime.sites) <= 6:
        sites = ", ".join(sorted(regime.sites))
    else:
        sites = (
            f"the {len(regime.sites)} member countries" if regime.sites == regime.members else f"{len(regime.sites)} countries"
        )
    outsiders = "" if regime.serve_outsiders else "; sites there serve no one else"
    estimate = " (shares from the scenario)" if regime.share_from == "scenario" else ""
    return (
        f"residency: {regime.regime_id} ({regime.name}): demand of {members}, {share_text}{estimate}, "
        f"served only at sites in {sites}{outsiders}"
    )


def _availability_notes(instance: Instance, open_sites: pd.DataFrame) -> list[str]:
    """Where a standing rule bars the scenario's part: what each such site runs instead, or that it serves nothing."""
    parts = instance.site_parts
    if parts is None:
        return []
    accelerator = instance.facts.serving.accelerator
    sites = instance.sites
    opened = set(open_sites["site_id"].astype(str))
    groups: dict[tuple[str, str], list[int]] = {}
    for j, (rule, part) in enumerate(zip(parts.barred_by, parts.part, strict=True)):
        if rule:
            groups.setdefault((rule, part), []).append(j)
    notes = []
    for (rule, part), members in groups.items():
        ids = [str(sites["id"].iloc[j]) for j in members]
        countries = ", ".join(sorted({str(sites["country_code"].iloc[j]) for j in members}))
        now_open = [i for i in ids if i in opened]
        open_text = f"{len(now_open)} open: {', '.join(now_open)}" if now_open else "none open"
        if not part:
            notes.append(
                f"availability: {rule} bars {accelerator} in {countries} and the rules permit no catalog part there: "
                f"{len(ids)} site{'' if len(ids) == 1 else 's'} ({', '.join(ids)}) serve nothing"
            )
            continue
        served = instance.part_serves[:, members[0]] if instance.part_serves is not None else None
        missing = [] if served is None else [c.name for c, ok in zip(instance.classes, served, strict=True) if not ok]
        cannot = f"; {part} serves no {', '.join(missing)} inside its objectives there" if missing else ""
        notes.append(
            f"availability: {rule} bars {accelerator} in {countries}: {len(ids)} site{'' if len(ids) == 1 else 's'} "
            f"there run {part} instead, at its own goodput, power and price ({open_text}){cannot}"
        )
    return notes


def unprotectable_notes(instance: Instance, policy: str) -> list[str]:
    """List the populations N+1 cannot protect, or stop on them when the policy says so."""
    single = unprotectable_commodities(instance)
    if len(single) == 0:
        return []
    lines = _unprotectable_message(instance, single)
    header = f"{len(single)} population-class pairs have a single site inside their TTFT objective, so N+1 cannot protect them"
    if policy == "stop":
        raise InfeasibleError(
            "\n  - ".join([header + " (policy.unreachable: stop):", *lines])
            + "\nFix: add candidate sites near them, relax the objective, set fault_tolerance.n_plus_one: false, "
            "or set policy.unreachable: report"
        )
    return [header + "; they are served by that site without a backup:"] + [f"  - {line}" for line in lines]


def n_plus_one_dropped_note(instance: Instance) -> str:
    """Said first when N+1 was asked for and the plan could not keep it: never a silent drop."""
    return (
        "N+1 NOT APPLIED: fault_tolerance.n_plus_one is set, but no protected design was found within the time limit "
        f"({len(instance.inputs.pair_site):,} pairs); this plan keeps no spare capacity for the loss of a site "
        "(summary.json: n_plus_one_applied false). Fix: raise solver.time_limit_s, or set fault_tolerance.n_plus_one: false"
    )
