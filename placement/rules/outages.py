"""How often a plan's sites and fault domains fail, and for how long: the outage sources of ``placement adequacy``.

Each source is an alternating renewal process: events arrive at ``events_per_year`` (a Poisson process), each
lasts ``hours`` on average (exponentially distributed), and while one lasts its sites serve nothing. Sources are
independent of each other: a site's own outages, and those of every fault domain it belongs to (its grid region,
campus and corridor, from the catalog's grouping columns, or the scenario's listed domains).

Defaults (every figure overridable: per site in the catalog, per source kind in ``fault_tolerance.outages``):

* **A site's own forced outages, by tier.** The Uptime Institute's Tier Standard: Topology classes a facility's
  design by its expected availability: Tier I 99.671 %, Tier II 99.741 %, Tier III 99.982 %, Tier IV 99.995 %,
  i.e. 28.8, 22.7, 1.6 and 0.4 hours of downtime a year (the figures the Institute quotes with the standard). The
  standard fixes only the annual downtime; the split into events is this module's choice: a Tier I-II site has no
  concurrent maintainability, so its downtime comes as a couple of long events a year (12 h each: 2.4 and 1.9 a
  year); a Tier III-IV site's outages are rare and short (4 h each: 0.4 and 0.1 a year), the typical duration of
  the significant outages Uptime's Annual Outage Analysis counts (most last hours, a minority over a day). A site
  without a tier is taken as Tier III, the class cloud regions and colocation campuses are built to.
* **A grid region's long events.** Utility customers see ~2 hours of interruption a year without major events
  and ~5-8 hours with them (EIA, Annual Electric Power Industry Report, SAIDI/SAIFI, 2013-2022), but a data centre
  rides short grid events on its UPS and generators (24-72 h of fuel on site). Only wide-area events that outlast
  fuel logistics or force curtailment take it down: the 2003 Northeast blackout (~2 days), ERCOT in February 2021
  (~4 days, NERC/FERC report), the Iberian blackout of April 2025 (~10-20 h). Taken as one such event per region
  in 50 years (0.02 a year), 48 h each.
* **A campus's shared substations and fibre**: an estimate of 0.05 events a year (one in 20 years), 12 h each
  (a substation or duct-bank repair).
* **A corridor cut.** The International Cable Protection Committee counts ~150-200 submarine cable faults a
  year worldwide (about 0.3 per cable a year over ~550 systems), most from fishing and anchors, with repairs of
  days to weeks (TeleGeography, ICPC). A corridor's sites have several cables, so a cut of all of them at once
  (the Red Sea in 2024, the Mediterranean in 2008) is rarer: 0.1 events a year, 168 h (a week: a repair ship's
  mobilisation and splice) each.

These are defaults for a planner to replace with their providers' figures; they are the same for every plan, so
plans are compared on the same footing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from placement._types import FloatArray
from placement.economics.cost import HOURS_PER_YEAR
from placement.rules.faults import FaultDomains, catalog_domains
from placement.scenario.sections import OutagesSection

__all__ = [
    "DOMAIN_EVENTS_PER_YEAR",
    "DOMAIN_HOURS",
    "HOURS_PER_YEAR",
    "TIER_DOWNTIME_H_PER_YEAR",
    "TIER_EVENT_HOURS",
    "OutageSource",
    "outage_sources",
    "site_outage_figures",
    "unavailability",
]


TIER_DOWNTIME_H_PER_YEAR = {"i": 28.8, "ii": 22.7, "iii": 1.6, "iv": 0.4}
"""Expected downtime a year by Uptime Institute tier (Tier Standard: Topology; availability 99.671 / 99.741 /
99.982 / 99.995 %). [h/year]"""

TIER_EVENT_HOURS = {"i": 12.0, "ii": 12.0, "iii": 4.0, "iv": 4.0}
"""Mean duration of one forced outage by tier (this module's split of the downtime, see the module docstring). [h]"""

TIER_ALIASES = {"1": "i", "2": "ii", "3": "iii", "4": "iv"}
"""The catalog's ``tier`` may be written as a numeral."""

DEFAULT_TIER = "iii"
"""The tier of a site the catalog gives none."""

DOMAIN_EVENTS_PER_YEAR = {"grid_region": 0.02, "campus": 0.05, "corridor": 0.1, "listed": 0.02}
"""Events a year that take a whole fault domain down, by grouping (module docstring: sources). [1/year]"""

DOMAIN_HOURS = {"grid_region": 48.0, "campus": 12.0, "corridor": 168.0, "listed": 48.0}
"""Mean duration of a fault domain's event, by grouping. [h]"""


@dataclass(frozen=True)
class OutageSource:
    """One independent cause of outages: a site's own, or a fault domain's.

    Parameters
    ----------
    label : str
        ``site:<id>`` or ``<grouping>:<name>`` (e.g. ``grid_region:US-PJM``).
    kind : str
        ``site``, or the domain's grouping (``grid_region``, ``campus``, ``corridor``, ``listed``).
    site_ids : tuple of str
        The sites it takes down (the plan's open ones among them matter).
    events_per_year : float
        Rate of events. [1/year]
    hours : float
        Mean duration of one event. [h]
    """

    label: str
    kind: str
    site_ids: tuple[str, ...]
    events_per_year: float
    hours: float

    @property
    def unavailability(self) -> float:
        """Share of the year the source is down (:func:`unavailability`)."""
        return unavailability(self.events_per_year, self.hours)


def unavailability(events_per_year: float, hours: float) -> float:
    """Share of time at least one event of a source is under way.

    Events arriving as a Poisson process, each lasting ``hours`` on average, overlap as the customers of an
    M/G/infinity queue: the number under way at a random instant is Poisson with mean ``events_per_year x hours /
    8760``, so the source is down with probability ``1 - exp(-events_per_year x hours / 8760)`` (close to
    ``events_per_year x hours / 8760`` for rare events). The year's Monte Carlo, which draws events this way on a
    circular year, has exactly this mean.

    Parameters
    ----------
    events_per_year : float
        [1/year]
    hours : float
        [h]

    Returns
    -------
    float
        In [0, 1).
    """
    return 1.0 - math.exp(-events_per_year * hours / HOURS_PER_YEAR)


def _tier(value: str, default: str = DEFAULT_TIER) -> str:
    """A tier as written (I-IV or 1-4, any case), lower case roman; blank: ``default``."""
    written = str(value).strip().lower()
    return TIER_ALIASES.get(written, written) or default


def site_outage_figures(sites: pd.DataFrame, section: OutagesSection) -> tuple[FloatArray, FloatArray]:
    """Each site's forced outages: events a year and hours each.

    The catalog's ``outage_events_per_year`` and ``outage_hours`` first, then the scenario's
    ``site_events_per_year`` and ``site_hours``, then the site's ``tier`` (blank: the scenario's ``site_tier``).

    Parameters
    ----------
    sites : pandas.DataFrame
        The site catalog (checked: ``tier`` one of I-IV or blank, the figures in range or NaN).
    section : OutagesSection
        ``fault_tolerance.outages``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(events_per_year, hours)`` per site, catalog order.
    """
    n = len(sites)
    tiers = sites["tier"] if "tier" in sites.columns else pd.Series([""] * n, index=sites.index)
    tier = [_tier(t, _tier(section.site_tier)) for t in tiers.fillna("").astype(str)]
    hours = np.array([TIER_EVENT_HOURS[t] for t in tier])
    events = np.array([TIER_DOWNTIME_H_PER_YEAR[t] / TIER_EVENT_HOURS[t] for t in tier])
    if section.site_hours is not None:
        hours = np.full(n, float(section.site_hours))
    if section.site_events_per_year is not None:
        events = np.full(n, float(section.site_events_per_year))
    for column, values in (("outage_events_per_year", events), ("outage_hours", hours)):
        if column in sites.columns:
            written = pd.to_numeric(sites[column], errors="coerce").to_numpy(float)
            values[~np.isnan(written)] = written[~np.isnan(written)]
    return events, hours


def outage_sources(sites: pd.DataFrame, section: OutagesSection, listed: FaultDomains | None = None) -> list[OutageSource]:
    """Every outage source of a catalog: each site's own, then each fault domain's.

    Parameters
    ----------
    sites : pandas.DataFrame
        The site catalog.
    section : OutagesSection
        ``fault_tolerance.outages`` (rates by kind).
    listed : FaultDomains, optional
        The scenario's ``fault_tolerance.domains`` when it lists domains by site id (a catalog column is already
        among the catalog's groupings).

    Returns
    -------
    list of OutageSource
        Sites in catalog order, then domains by grouping and name; sources with no events are left out.
    """
    events, hours = site_outage_figures(sites, section)
    ids = sites["id"].astype(str).tolist()
    sources = [
        OutageSource(f"site:{site}", "site", (site,), float(e), float(h))
        for site, e, h in zip(ids, events.tolist(), hours.tolist(), strict=True)
    ]
    groups = dict(catalog_domains(sites))
    if listed is not None and listed.grouping == "listed":
        groups["listed"] = listed
    rates = {**DOMAIN_EVENTS_PER_YEAR, **{str(k): v for k, v in section.domain_events_per_year.items()}}
    durations = {**DOMAIN_HOURS, **{str(k): v for k, v in section.domain_hours.items()}}
    for grouping, domains in groups.items():
        for name, members in zip(domains.names, domains.site_ids, strict=True):
            sources.append(OutageSource(f"{grouping}:{name}", grouping, members, rates[grouping], durations[grouping]))
    return [s for s in sources if s.events_per_year > 0 and s.hours > 0]
