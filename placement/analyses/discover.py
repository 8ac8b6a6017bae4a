"""Where to build next: greenfield sites proposed where the catalog has none in reach of unserved demand.

``placement discover`` (:func:`discover`):

1. the scenario is solved as it is (the **baseline**); its populations with demand left unserved are the targets;
2. **proposals** are GeoNames cities of at least ``sites.discover.min_population`` people, within a first cut of reach
   of some target (great-circle distance at most ``reach_km_per_ms`` times the largest round-trip budget of the
   interactive classes), at least ``spacing_km`` from every catalog site and from each other (each a metro of its
   own), outside the countries under comprehensive US sanctions, at most ``max_candidates``, taken in the order of
   the unserved demand within ``near_km`` of them (then the largest city first);
3. each proposal gets the figures a new campus there would have: the MW and years to energise of its continent
   (``data/sites/discovery_figures.csv``, estimates), the power price of its country (``data/sites/power_prices.csv``;
   else its nearest catalog site's), its country's grid carbon intensity (``data/energy/grid_mix_by_country.csv``;
   else the nearest site's), and PUE, climate and capex of its nearest catalog site (estimates, said in ``source``);
4. the scenario is solved again with the proposals as options beside the catalog (the same model: a proposal opens
   if it serves demand the catalog cannot, or serves it cheaper), and each proposal the plan opens is **ranked**: the
   MW worth building, the goodput it serves and the unserved demand it takes, the populations that gain, its own $/M,
   and its entry price (:func:`entry_price_usd_per_mwh`).

The graph's round trips decide what a proposal reaches; the first cut only keeps the candidate list short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from placement.analyses.candidates import EARTH_RADIUS_KM, LEFT_OUT, spaced_picks
from placement.economics.cost import HOURS_PER_YEAR
from placement.network.countries import continent_of_countries
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.progress import Progress, quiet
from placement.rules.resources import GRID_MIX_CSV, bundled_table
from placement.scenario.load import FILE_KEYS, LoadedScenario, load_scenario
from placement.scenario.sections import DiscoverSection
from placement.world.catalog import load_catalog
from placement.world.cities import load_cities
from placement.world.geodesy import unit_vectors

FIGURES_CSV = ("sites", "discovery_figures.csv")
"""Campus MW and years to energise by continent (estimates)."""

PRICES_CSV = ("sites", "power_prices.csv")
"""Power price by country or state/province (cited or marked estimates, as the site catalog's)."""

UNSERVED_TOL = 1e-6
"""A population counts as a target when more than this share of its demand is unserved."""

ID_PREFIX = "disc-"
"""Ids of proposals: ``disc-<geonameid>``."""


@dataclass(frozen=True)
class Discovery:
    """A discovery run: the baseline plan, the proposals and the plan with them.

    Parameters
    ----------
    baseline : Plan
        The scenario solved on its own catalog.
    plan : Plan
        The scenario solved with the proposals beside the catalog.
    proposals : pandas.DataFrame
        Every proposal, in the catalog's columns (``discovered`` true).
    ranked : pandas.DataFrame
        The proposals the plan opens, ranked (:func:`rank_proposals`).
    catalog : pandas.DataFrame
        The catalog with the proposals, as the plan was solved on it.
    """

    baseline: Plan
    plan: Plan
    proposals: pd.DataFrame
    ranked: pd.DataFrame
    catalog: pd.DataFrame

    def headline(self) -> dict[str, Any]:
        """``discover.json``'s figures: the proposals, and the plan before and after."""
        before, after = self.baseline.summary, self.plan.summary
        return {
            "proposals": len(self.proposals),
            "proposals_opened": len(self.ranked),
            "mw_built": float(self.ranked["mw_built"].sum()) if len(self.ranked) else 0.0,
            "unserved_share_before": before.unserved_share,
            "unserved_share_after": after.unserved_share,
            "goodput_tok_s_before": before.goodput_tok_s,
            "goodput_tok_s_after": after.goodput_tok_s,
            "usd_per_million_goodput_tokens_before": before.cost_per_million_goodput_tokens_usd,
            "usd_per_million_goodput_tokens_after": after.cost_per_million_goodput_tokens_usd,
            "objective_usd_per_h_before": before.objective_usd_per_h,
            "objective_usd_per_h_after": after.objective_usd_per_h,
            "still_unserved": still_unserved(self.plan),
            "notes": list(self.plan.notes),
        }


def _targets(plan: Plan) -> pd.DataFrame:
    """Populations with demand left unserved (``lat``, ``lon``, ``unserved_tok_s``)."""
    pops = plan.populations
    short = pops["unserved_tok_s"] > UNSERVED_TOL * pops["demand_tok_s"].clip(lower=1e-9)
    keep = (short & np.isfinite(pops["lat"]) & np.isfinite(pops["lon"])).to_numpy(bool)
    return pd.DataFrame(pops.loc[keep])


def _largest_budget_ms(plan: Plan) -> float:
    """The largest round-trip budget of the interactive classes' pairs (deadline classes reach far already). [ms]"""
    assignments = plan.assignments
    names = [c.name for c in plan.instance.facts.classes if not c.time_shiftable]
    interactive = assignments[assignments["class"].isin(names)]
    budgets = interactive["rtt_budget_ms"].to_numpy(float)
    budgets = budgets[np.isfinite(budgets)]
    return float(budgets.max()) if len(budgets) else 100.0


def candidate_cities(
    cities: pd.DataFrame, sites: pd.DataFrame, targets: pd.DataFrame, *, spec: DiscoverSection, reach_km: float
) -> pd.DataFrame:
    """The cities proposed as sites (:mod:`module docstring <placement.analyses.discover>`, step 2), largest first.

    Parameters
    ----------
    cities : pandas.DataFrame
        :func:`placement.world.cities.load_cities` (``city_id``, ``name``, ``country_code``, ``lat``, ``lon``, ``population``).
    sites : pandas.DataFrame
        The catalog.
    targets : pandas.DataFrame
        Populations with unserved demand (``lat``, ``lon``).
    spec : DiscoverSection
        The discovery settings.
    reach_km : float
        The first cut of reach. [km]

    Returns
    -------
    pandas.DataFrame
        The chosen rows of ``cities``.
    """
    big = cities[(cities["population"] >= spec.min_population) & ~cities["country_code"].isin(LEFT_OUT)]
    if big.empty or targets.empty:
        return big.iloc[0:0]
    points = unit_vectors(big["lat"].to_numpy(float), big["lon"].to_numpy(float))
    cosines = points @ unit_vectors(targets["lat"].to_numpy(float), targets["lon"].to_numpy(float)).T
    in_reach = cosines.max(axis=1) >= math.cos(min(reach_km / EARTH_RADIUS_KM, math.pi))
    nearby = cosines >= math.cos(min(spec.near_km / EARTH_RADIUS_KM, math.pi))
    unserved_nearby = nearby.astype(float) @ targets["unserved_tok_s"].to_numpy(float)
    ranked = big.assign(_nearby=unserved_nearby, _reach=in_reach)
    order = ranked.sort_values(["_nearby", "population", "city_id"], ascending=[False, False, True], kind="stable")
    in_reach = order["_reach"].to_numpy(bool)
    order = order.drop(columns=["_nearby", "_reach"])
    points = unit_vectors(order["lat"].to_numpy(float), order["lon"].to_numpy(float))
    catalog = unit_vectors(sites["lat"].to_numpy(float), sites["lon"].to_numpy(float))
    spacing = math.cos(spec.spacing_km / EARTH_RADIUS_KM)
    clear = (points @ catalog.T).max(axis=1, initial=-1.0) < spacing
    taken = spaced_picks(points, in_reach & clear, count=spec.max_candidates, near_cos=spacing)
    return order.iloc[taken].reset_index(drop=True)


def proposal_rows(chosen: pd.DataFrame, sites: pd.DataFrame) -> pd.DataFrame:
    """The proposals as catalog rows (:mod:`module docstring <placement.analyses.discover>`, step 3)."""
    if chosen.empty:
        return pd.DataFrame(columns=list(dict.fromkeys([*sites.columns, "discovered", "years_to_energise"])))
    continent_of = continent_of_countries()
    points = unit_vectors(chosen["lat"].to_numpy(float), chosen["lon"].to_numpy(float))
    nearest = sites.iloc[np.argmax(points @ unit_vectors(sites["lat"].to_numpy(float), sites["lon"].to_numpy(float)).T, axis=1)]
    nearest = nearest.reset_index(drop=True)
    codes = chosen["country_code"].astype(str).tolist()
    continents = [continent_of.get(c, str(n)) for c, n in zip(codes, nearest["continent"].astype(str), strict=True)]
    figures = bundled_table(FIGURES_CSV).set_index("continent").to_dict("index")
    prices = bundled_table(PRICES_CSV).set_index("area")["power_price_usd_per_mwh"].to_dict()
    intensities = bundled_table(GRID_MIX_CSV).set_index("country_code")["carbon_intensity_g_per_kwh"].to_dict()
    rows = []
    for k, (city, near) in enumerate(zip(chosen.to_dict("records"), nearest.to_dict("records"), strict=True)):
        code, continent = codes[k], continents[k]
        fig = figures.get(continent) or figures["Asia"]
        priced = code in prices
        price = float(prices[code]) if priced else float(near["power_price_usd_per_mwh"])
        known = code in intensities
        carbon = float(intensities[code]) if known else float(near["carbon_intensity_g_per_kwh"])
        said = [
            "kind: discovered (placement discover)",
            f"coords: GeoNames {city['city_id']} {city['name']}",
            f"mw: {fig['source']} ({continent})",
            f"price: power_prices.csv {code}" if priced else f"price: as the nearest catalog site {near['id']} (estimate)",
            f"carbon: codecarbon {code}" if known else f"carbon: as {near['id']} (estimate)",
            f"pue, climate, capex: as the nearest catalog site {near['id']} (estimates)",
        ]
        rows.append({
            "id": f"{ID_PREFIX}{city['city_id']}", "name": str(city["name"]), "country_code": code,
            "country": code, "continent": continent, "lat": round(float(city["lat"]), 4), "lon": round(float(city["lon"]), 4),
            "mw_available": float(fig["campus_mw"]), "power_price_usd_per_mwh": price, "pue": near["pue"],
            "capex_usd_per_mw": near["capex_usd_per_mw"], "carbon_intensity_g_per_kwh": carbon,
            "climate": near.get("climate", ""), "locked": False, "network": "transit", "discovered": True,
            "years_to_energise": float(fig["years_to_energise"]), "source": "; ".join(said),
        })  # fmt: skip
    return pd.DataFrame(rows)


def with_proposals(sites: pd.DataFrame, proposals: pd.DataFrame) -> pd.DataFrame:
    """The catalog and the proposals in one table of the catalog's columns (``discovered`` false for the catalog)."""
    catalog = sites.assign(discovered=False) if "discovered" not in sites.columns else sites
    columns = list(dict.fromkeys([*catalog.columns, *proposals.columns]))
    both = pd.concat([catalog.reindex(columns=columns), proposals.reindex(columns=columns)], ignore_index=True)
    both["discovered"] = both["discovered"].fillna(False).astype(bool)
    return both


def scenario_with_catalog(loaded: LoadedScenario, catalog: Path, path: Path) -> Path:
    """Write the scenario with ``sites.catalog`` at ``catalog`` and every other file path absolute, as ``path``."""
    raw = yaml.safe_load(loaded.path.read_text(encoding="utf-8"))
    for key in FILE_KEYS:
        section, _, field = key.partition(".")
        value = (raw.get(section) or {}).get(field) if isinstance(raw.get(section), dict) else None
        if isinstance(value, str) and value and not Path(value).is_absolute():
            raw[section][field] = str(loaded.resolve(value))
    raw["sites"]["catalog"] = str(catalog)
    raw["sites"].pop("exclude", None)  # the written catalog is what is left after them
    raw["name"] = f"{raw.get('name', 'scenario')} (with discovered sites)"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def entry_price_usd_per_mwh(sites: pd.DataFrame, usd_per_million: float | None) -> pd.Series:
    """The most a MWh could cost at each open site for its tokens to cost no more than ``usd_per_million``.

    A site's cost is linear in its power price: ``cost(p) = cost - B * price + B * p`` with ``B`` the MWh it draws an
    hour (``energy_mwh_per_year / 8760``, PUE included), so ``p* = (usd_per_million * tokens_m_per_h - cost) / B +
    price``: the entry price of a proposal against the plan's going rate without proposals (``usd_per_million``: the
    baseline's $/M). NaN where the site serves nothing or draws nothing.
    """
    if usd_per_million is None:
        return pd.Series(np.nan, index=sites.index)
    tokens_m_per_h = sites["goodput_tok_s"].astype(float) * 3600.0 / 1e6
    mwh_per_h = sites["energy_mwh_per_year"].astype(float) / HOURS_PER_YEAR
    value = usd_per_million * tokens_m_per_h
    with np.errstate(divide="ignore", invalid="ignore"):
        entry = (value - sites["cost_usd_per_h"].astype(float)) / mwh_per_h + sites["power_price_usd_per_mwh"].astype(float)
    return entry.where((tokens_m_per_h > 0) & (mwh_per_h > 0))


def rank_proposals(discovered_plan: Plan, baseline: Plan) -> pd.DataFrame:
    """The proposals the plan opens, most unserved demand taken first.

    Returns
    -------
    pandas.DataFrame
        ``site_id, name, country_code, lat, lon, mw_built, goodput_tok_s, unserved_taken_tok_s, entry_usd_per_mwh``,
        then ``usd_per_million_goodput_tokens`` (the site's own), ``years_to_energise``, ``power_price_usd_per_mwh``,
        ``populations_gaining`` (how many) and ``largest_gains`` (the five that gain most, ``;``-joined).
    """
    sites = discovered_plan.sites
    opened = sites[sites["discovered"].astype(bool) & sites["open"].astype(bool)] if "discovered" in sites else sites.iloc[0:0]
    before = baseline.populations.set_index("population_id")["unserved_tok_s"]
    assignments = discovered_plan.assignments
    at_proposals = assignments[assignments["site_id"].isin(opened["site_id"])]
    per_pop = at_proposals.groupby(["site_id", "population_id", "population"], as_index=False)["goodput_tok_s"].sum()
    per_pop["taken"] = np.minimum(per_pop["goodput_tok_s"], per_pop["population_id"].map(before).fillna(0.0))
    entry = entry_price_usd_per_mwh(opened, baseline.summary.cost_per_million_goodput_tokens_usd)
    rows = []
    for (_, site), price in zip(opened.iterrows(), entry.tolist(), strict=True):
        gains = per_pop[(per_pop["site_id"] == site["site_id"]) & (per_pop["taken"] > 0)].sort_values("taken", ascending=False)
        rows.append({
            "site_id": site["site_id"], "name": site["name"], "country_code": site["country_code"],
            "lat": site["lat"], "lon": site["lon"], "mw_built": float(site["mw_used"]),
            "goodput_tok_s": float(site["goodput_tok_s"]), "unserved_taken_tok_s": float(gains["taken"].sum()),
            "entry_usd_per_mwh": price,
            "usd_per_million_goodput_tokens": site["cost_per_million_goodput_tokens_usd"],
            "years_to_energise": site.get("years_to_energise", np.nan),
            "power_price_usd_per_mwh": site["power_price_usd_per_mwh"],
            "populations_gaining": len(gains), "largest_gains": ";".join(gains["population"].astype(str).head(5)),
        })  # fmt: skip
    table = pd.DataFrame(rows, columns=list(RANKED_COLUMNS))
    return table.sort_values(["unserved_taken_tok_s", "goodput_tok_s"], ascending=False, kind="stable").reset_index(drop=True)


RANKED_COLUMNS = (
    "site_id", "name", "country_code", "lat", "lon", "mw_built", "goodput_tok_s", "unserved_taken_tok_s",
    "entry_usd_per_mwh", "usd_per_million_goodput_tokens", "years_to_energise", "power_price_usd_per_mwh",
    "populations_gaining", "largest_gains",
)  # fmt: skip
"""``discovered_sites.csv``'s columns."""


def still_unserved(plan: Plan, *, top: int = 15) -> list[dict[str, Any]]:
    """The populations with the most demand still unserved, and why (out of reach, or short of power in reach)."""
    pops = plan.populations
    short = pops[pops["unserved_tok_s"] > UNSERVED_TOL * pops["demand_tok_s"].clip(lower=1e-9)]
    short = short.sort_values("unserved_tok_s", ascending=False).head(top)
    instance = plan.instance
    unreachable = instance.unreachable & (instance.commodity_mean_demand_tok_s > 0)
    class_names = [c.name for c in instance.facts.classes]
    index_of = {pid: k for k, pid in enumerate(pops["population_id"].astype(str))}
    out = []
    for _, row in short.iterrows():
        mine = unreachable & (instance.commodity_population == index_of[str(row["population_id"])])
        classes = sorted({class_names[int(k)] for k in instance.commodity_class[mine]})
        rtt = float(row.get("nearest_site_rtt_ms", np.nan))
        if str(row["country_code"]) in LEFT_OUT:
            why = "no site is proposed in a country under comprehensive US sanctions, and none in reach serves it"
        elif classes:
            why = (
                f"out of reach for {', '.join(classes)}: the nearest site, proposals included, is {rtt:.0f} ms away over "
                "the network, beyond those classes' round-trip budgets (a site nearer on the network: lower "
                "min_population or spacing_km, or raise max_candidates)"
            )
            if int(row.get("n_cities", 1)) > 1:
                why += "; a cluster of cities takes its farthest member's round trip (demand.clusters: null plans each city)"
        else:
            why = "short of power: the sites in reach are full (or barred to it by a residency rule)"
        out.append({
            "population": str(row["name"]), "country_code": str(row["country_code"]),
            "unserved_tok_s": float(row["unserved_tok_s"]),
            "unserved_share": float(row["unserved_tok_s"]) / max(float(row["demand_tok_s"]), 1e-12), "why": why,
        })  # fmt: skip
    return out


def discover(
    loaded: LoadedScenario, *, work: Path, final_folder: Path, spec: DiscoverSection | None = None, progress: Progress = quiet
) -> Discovery:
    """Solve the baseline, propose sites, solve with them and rank what opens.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
    work : Path
        A folder for the scenario and catalog the second solve reads (its files are copied into the results).
    final_folder : Path
        Where the results folder will be: the written scenario names its catalog there, so the plan's folder can be
        rebuilt (``explain``, ``diff``) once it is in place.
    spec : DiscoverSection, optional
        Settings (default: the scenario's ``sites.discover``, else the defaults).
    progress : callable, optional
        Receives a line per step.

    Returns
    -------
    Discovery
        The baseline, the proposals and the plan with them.
    """
    spec = spec or loaded.scenario.sites.discover or DiscoverSection()
    progress("discover: the baseline plan on the catalog as it is")
    baseline = run(loaded, progress=progress)
    targets = _targets(baseline)
    reach_km = spec.reach_km_per_ms * _largest_budget_ms(baseline)
    sites = load_catalog(loaded.catalog_path)
    sites = sites[~sites["id"].isin(loaded.scenario.sites.exclude)].reset_index(drop=True)
    chosen = candidate_cities(load_cities(loaded.cities_path), sites, targets, spec=spec, reach_km=reach_km)
    proposals = proposal_rows(chosen, sites)
    if spec.max_years_to_energise is not None and len(proposals):
        proposals = proposals[proposals["years_to_energise"] <= spec.max_years_to_energise].reset_index(drop=True)
    progress(
        f"discover: {len(targets)} populations with demand unserved; {len(proposals)} cities of at least "
        f"{spec.min_population:,} people within {reach_km:,.0f} km of one, {spec.spacing_km:g} km from every site"
    )
    catalog = with_proposals(sites, proposals)
    work.mkdir(parents=True, exist_ok=True)
    (work / CATALOG_NAME).write_text(catalog.to_csv(index=False, lineterminator="\n"), encoding="utf-8")
    scenario_path = scenario_with_catalog(loaded, final_folder / CATALOG_NAME, work / SCENARIO_NAME)
    # solved from the work copy (the final folder does not exist yet): the same catalog, read from where it is now
    solving = scenario_with_catalog(loaded, work / CATALOG_NAME, work / "scenario_solving.yaml")
    if len(proposals):
        progress("discover: the plan with the proposals beside the catalog")
        plan = run(load_scenario(solving), progress=progress)
    else:  # nothing proposed: the plan with the proposals is the baseline (the same catalog), not solved again
        progress("discover: no city to propose; the plan is the baseline")
        plan = baseline
    plan = _as_written(plan, scenario_path, final_folder / CATALOG_NAME)
    return Discovery(baseline, plan, proposals, rank_proposals(plan, baseline), catalog)


CATALOG_NAME = "sites_discovered.csv"
"""The catalog with the proposals, written in the discovery's folder."""

SCENARIO_NAME = "scenario_discovered.yaml"
"""The scenario that solves it, written in the discovery's folder (the plan's ``scenario.yaml`` is a copy)."""


def _as_written(plan: Plan, scenario_path: Path, catalog: Path) -> Plan:
    """The plan, its scenario the one written for the results folder (naming the catalog where it will be)."""
    facts = replace(plan.instance.facts, path=scenario_path, catalog=str(catalog), catalog_name=catalog.name)
    return replace(plan, instance=replace(plan.instance, facts=facts), results=replace(plan.results, scenario_path=scenario_path))
