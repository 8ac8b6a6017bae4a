"""Water at each site and the plan's carbon and water limits: what a MWh drawn uses, and which caps count which sites.

Water a site consumes per MWh it draws (PUE included) has two parts:

- **on site**, evaporated by its cooling: WUE litres per kWh of IT energy (The Green Grid), so ``WUE / PUE`` per
  kWh drawn. WUE is the catalog's own ``wue_l_per_kwh``, else the figure of ``data/energy/cooling_wue.csv`` for the
  site's ``climate`` and the scenario's ``sites.cooling`` (marked estimates);
- **by the grid**, consumed by the generation that makes the power: the country's mix
  (``data/energy/grid_mix_by_country.csv``) times each source's water per kWh (``data/energy/generation_water.csv``,
  Macknick et al. 2012 medians).

L/kWh is m3/MWh. Water is taken as flat over the day (evaporation follows the heat, a shape left out). A cap is a
figure per MWh drawn at each site in each slice, a yearly limit and the sites it counts; :mod:`placement.instance.build`
turns it into the model's rows (:class:`placement.optimize.problem.ResourceCap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._types import BoolArray, FloatArray
from placement.scenario.sections import ObjectiveSection
from placement.world.bundled import bundled_path

COOLING_WUE_CSV = ("energy", "cooling_wue.csv")
"""Site WUE by cooling design and climate class (estimates between two cited anchors)."""

GENERATION_WATER_CSV = ("energy", "generation_water.csv")
"""Water consumed per kWh generated, by source (Macknick et al. 2012)."""

GRID_MIX_CSV = ("energy", "grid_mix_by_country.csv")
"""Electricity mix shares by country (``scripts/build_grid_mix.py``; codecarbon / OWID / Ember)."""

WATER_STRESS_CSV = ("energy", "water_stress_by_country.csv")
"""Countries in extremely high baseline water stress (WRI Aqueduct 4.0)."""

EMBODIED_CSV = ("energy", "embodied_carbon.csv")
"""Embodied carbon of a server and of a GPU (Luccioni et al. 2023; an A100-era estimate)."""

STRESSED = "extremely-high"
"""The water-stress class ``objective.stressed_site_water_m3_per_year`` limits."""


def bundled_table(parts: tuple[str, str]) -> pd.DataFrame:
    """A bundled CSV with ``#`` comment lines, blank cells read as missing (``NA`` stays a country code)."""
    return pd.read_csv(bundled_path(*parts), comment="#", keep_default_na=False, na_values=[""])


def embodied_kgco2e_per_node(gpus_per_node: int) -> float:
    """Embodied carbon of one serving node: the server's and its GPUs' (``data/energy/embodied_carbon.csv``). [kgCO2e]"""
    figures = bundled_table(EMBODIED_CSV).set_index("part")["kgco2e"]
    return float(figures["server"] + gpus_per_node * figures["gpu"])


def grid_water_l_per_kwh(country_codes: Sequence[str]) -> FloatArray:
    """``(m,)`` water the grid's generation consumes per kWh in each country (NaN: a country the mix table lacks).

    Each source's share of the country's generation times its water per kWh; the rest of the mix (other renewables,
    and rounding) counts as none.
    """
    mix = bundled_table(GRID_MIX_CSV).set_index("country_code")
    factors = bundled_table(GENERATION_WATER_CSV).set_index("source")["l_per_kwh"]
    per_country = pd.Series(0.0, index=mix.index)
    for source in factors.index:
        per_country += mix[f"{source}_share"] * float(factors[source])
    return np.asarray(pd.Series(list(country_codes), dtype=str).map(per_country).to_numpy(float))


def site_wue_l_per_kwh(sites: pd.DataFrame, cooling: str) -> FloatArray:
    """``(m,)`` each site's WUE: its catalog figure, else by its climate and ``cooling`` (NaN: neither known)."""
    table = bundled_table(COOLING_WUE_CSV)
    by_climate = table[table["cooling"] == cooling].set_index("climate")["wue_l_per_kwh"]
    climate = sites["climate"].astype(str) if "climate" in sites.columns else pd.Series([""] * len(sites))
    modelled = climate.map(by_climate).to_numpy(float)
    own = sites["wue_l_per_kwh"].to_numpy(float) if "wue_l_per_kwh" in sites.columns else np.full(len(sites), np.nan)
    return np.asarray(np.where(np.isnan(own), modelled, own))


@dataclass(frozen=True)
class SiteWater:
    """Water each site consumes per MWh it draws (PUE included), by where it is consumed. [m3/MWh]

    Parameters
    ----------
    on_site_m3_per_mwh : numpy.ndarray
        ``(m,)`` evaporated by the site's cooling (WUE / PUE); NaN where unknown.
    grid_m3_per_mwh : numpy.ndarray
        ``(m,)`` consumed by the grid's generation; NaN where unknown.
    """

    on_site_m3_per_mwh: FloatArray
    grid_m3_per_mwh: FloatArray

    @property
    def total_m3_per_mwh(self) -> FloatArray:
        """``(m,)`` both parts. [m3/MWh]"""
        return np.asarray(self.on_site_m3_per_mwh + self.grid_m3_per_mwh)


def site_water(sites: pd.DataFrame, cooling: str) -> SiteWater:
    """Each site's water per MWh drawn (:class:`SiteWater`), from its catalog row and ``sites.cooling``."""
    wue = site_wue_l_per_kwh(sites, cooling)
    countries = sites["country_code"].astype(str).tolist() if "country_code" in sites.columns else [""] * len(sites)
    return SiteWater(np.asarray(wue / sites["pue"].to_numpy(float)), grid_water_l_per_kwh(countries))


def site_water_stress(sites: pd.DataFrame) -> NDArray[np.str_]:
    """``(m,)`` each site's water-stress class: its catalog's, else its country's, else '' (not classed)."""
    table = bundled_table(WATER_STRESS_CSV).set_index("country_code")["water_stress"]
    country = sites["country_code"].astype(str) if "country_code" in sites.columns else pd.Series([""] * len(sites))
    by_country = country.map(table).fillna("").to_numpy(str)
    own = sites["water_stress"].astype(str).to_numpy(str) if "water_stress" in sites.columns else np.full(len(sites), "")
    return np.asarray(np.where(own != "", own, by_country))


@dataclass(frozen=True)
class CapSpec:
    """One cap before the model's coefficients are built.

    Parameters
    ----------
    name : str
        What it caps, in words.
    unit : str
        The unit of a year's use.
    per_mwh : numpy.ndarray
        ``(m, T)`` use per MWh drawn at each site in each slice (PUE included). [unit/MWh]
    limit_per_year : float
        The most a year. [unit]
    sites : numpy.ndarray of bool or None
        ``(m,)`` the sites it counts (None: all).
    """

    name: str
    unit: str
    per_mwh: FloatArray
    limit_per_year: float
    sites: BoolArray | None = None


def water_charge_usd_per_mwh(water: SiteWater, usd_per_m3: float, n_slices: int) -> FloatArray | None:
    """``(m, T)`` what a water price adds to a MWh drawn (None without a price). [USD/MWh]"""
    if usd_per_m3 <= 0:
        return None
    return np.asarray(np.repeat((water.total_m3_per_mwh * usd_per_m3)[:, None], n_slices, axis=1))


def cap_specs(
    objective: ObjectiveSection,
    sites: pd.DataFrame,
    intensity_g_per_kwh: FloatArray,
    water: SiteWater,
    *,
    source: str,
    catalog: str,
) -> list[CapSpec]:
    """The scenario's carbon and water caps, whole plan, per region and per stressed site.

    Parameters
    ----------
    objective : ObjectiveSection
        ``carbon_cap_t_per_year``, ``water_cap_m3_per_year``, ``regional_caps`` and
        ``stressed_site_water_m3_per_year``.
    sites : pandas.DataFrame
        The sites (``continent``, ``country_code``, ``grid_region`` name the regions).
    intensity_g_per_kwh : numpy.ndarray
        ``(m, T)`` grid carbon intensity (NaN: unknown).
    water : SiteWater
        Water per MWh drawn.
    source, catalog : str
        The scenario file and the site catalog, for errors.

    Returns
    -------
    list of CapSpec
        The caps; one per-MWh array per resource, shared by every cap on it.

    Raises
    ------
    InputError
        A region that names no site, or a cap over a site whose figure is unknown: every problem together.
    """
    n_slices = intensity_g_per_kwh.shape[1]
    carbon = np.asarray(intensity_g_per_kwh / 1000.0)  # g/kWh = kg/MWh: t/MWh
    total_water = np.repeat(water.total_m3_per_mwh[:, None], n_slices, axis=1)
    specs: list[CapSpec] = []
    if objective.carbon_cap_t_per_year is not None:
        specs.append(CapSpec("carbon", "tCO2e", carbon, objective.carbon_cap_t_per_year))
    if objective.water_cap_m3_per_year is not None:
        specs.append(CapSpec("water", "m3", total_water, objective.water_cap_m3_per_year))
    problems: list[Problem] = []
    for k, regional in enumerate(objective.regional_caps):
        where = region_sites(sites, regional.region)
        if not where.any():
            problems.append(
                Problem(
                    source, f"objective.regional_caps[{k}]", "region",
                    f"{regional.region!r} names no site (not a continent, country code or grid_region of the catalog)",
                    "write a continent, an ISO alpha-2 country code or a grid_region the catalog uses",
                )
            )  # fmt: skip
            continue
        if regional.carbon_t_per_year is not None:
            specs.append(CapSpec(f"carbon in {regional.region}", "tCO2e", carbon, regional.carbon_t_per_year, where))
        if regional.water_m3_per_year is not None:
            specs.append(CapSpec(f"water in {regional.region}", "m3", total_water, regional.water_m3_per_year, where))
    if objective.stressed_site_water_m3_per_year is not None:
        on_site = np.repeat(water.on_site_m3_per_mwh[:, None], n_slices, axis=1)
        ids = sites["id"].astype(str).tolist()
        for j in np.flatnonzero(site_water_stress(sites) == STRESSED).tolist():
            alone = np.zeros(len(sites), dtype=bool)
            alone[j] = True
            specs.append(CapSpec(f"on-site water at {ids[j]}", "m3", on_site, objective.stressed_site_water_m3_per_year, alone))
    problems += _unknown_figures(specs, sites, catalog)
    if problems:
        raise InputError(problems)
    return specs


def region_sites(sites: pd.DataFrame, region: str) -> BoolArray:
    """``(m,)`` the sites in a region: its continent, ISO alpha-2 country code or grid region (case-insensitive)."""
    wanted = region.strip().lower()
    where = np.zeros(len(sites), dtype=bool)
    for column in ("continent", "country_code", "grid_region"):
        if column in sites.columns:
            where |= (sites[column].astype(str).str.strip().str.lower() == wanted).to_numpy()
    return where


def _unknown_figures(specs: list[CapSpec], sites: pd.DataFrame, source: str) -> list[Problem]:
    """A problem for each site a cap counts whose figure is unknown (a cap cannot count what it cannot measure)."""
    problems = []
    ids = sites["id"].astype(str).to_numpy()
    named: set[tuple[str, str]] = set()
    for spec in specs:
        counted = np.ones(len(sites), dtype=bool) if spec.sites is None else spec.sites
        unknown = counted & np.isnan(spec.per_mwh).any(axis=1)
        field = "carbon_intensity_g_per_kwh" if spec.unit == "tCO2e" else "climate"
        fix = (
            "give it a carbon_intensity_g_per_kwh (gCO2e/kWh) in the catalog, or drop the cap"
            if spec.unit == "tCO2e"
            else "give it a climate (cool, temperate, hot-humid, hot-dry) or its own wue_l_per_kwh, and a country_code "
            "the grid mix table knows, or drop the cap"
        )
        for site in ids[unknown].tolist():
            if (site, field) not in named:
                named.add((site, field))
                problems.append(Problem(source, f"site '{site}'", field, f"the {spec.name} cap needs this site's figure", fix))
    return problems
