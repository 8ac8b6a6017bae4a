"""Fault domains: sites that fail together (one grid region, one campus, one corridor), from the catalog or a list.

``fault_tolerance.domains`` names a catalog column (sites sharing a non-empty value are one domain) or lists
domains by site id. N+1 then survives the loss of any one domain as well as of any one site. The bundled
catalogs carry three such columns (``grid_region``, ``campus``, ``corridor``; estimates, reasoned in
``data/SOURCES.md``), and ``placement failover --domain NAME`` finds a domain by name in any of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from placement._errors import InputError, Problem
from placement._validate import close_matches
from placement.scenario.sections import FaultToleranceSection

GROUPING_COLUMNS = ("grid_region", "campus", "corridor")
"""The catalog columns that group sites into fault domains, where a catalog has them."""

SHOWN_NAMES = 50
"""Known names listed in an error at most."""

KEY = "fault_tolerance.domains"


@dataclass(frozen=True)
class FaultDomains:
    """Sites that fail together.

    Parameters
    ----------
    grouping : str
        The catalog column the domains come from, or ``listed``.
    names : tuple of str
        Domain names, sorted.
    site_ids : tuple of tuple of str
        The sites of each domain, in catalog order (at least one each).
    """

    grouping: str
    names: tuple[str, ...]
    site_ids: tuple[tuple[str, ...], ...]

    def sites_of(self, name: str) -> tuple[str, ...]:
        """The sites of one domain."""
        return self.site_ids[self.names.index(name)]


def _from_column(sites: pd.DataFrame, column: str) -> FaultDomains:
    values = sites[column].fillna("").astype(str).str.strip()
    ids = sites["id"].astype(str)
    names = sorted({v for v in values if v})
    members = tuple(tuple(ids[values == name]) for name in names)
    return FaultDomains(column, tuple(names), members)


def catalog_domains(sites: pd.DataFrame) -> dict[str, FaultDomains]:
    """The fault domains of every grouping column the catalog has.

    Parameters
    ----------
    sites : pandas.DataFrame
        The site catalog (``id`` and any of :data:`GROUPING_COLUMNS`).

    Returns
    -------
    dict
        ``{column: FaultDomains}`` for each grouping column with a value.
    """
    found = {column: _from_column(sites, column) for column in GROUPING_COLUMNS if column in sites.columns}
    return {column: domains for column, domains in found.items() if domains.names}


def fault_domains(section: FaultToleranceSection, sites: pd.DataFrame, *, source: str) -> FaultDomains | None:
    """The scenario's fault domains, checked against its catalog.

    Parameters
    ----------
    section : FaultToleranceSection
        ``fault_tolerance``.
    sites : pandas.DataFrame
        The site catalog.
    source : str
        The scenario file, for errors.

    Returns
    -------
    FaultDomains or None
        None without ``domains``.

    Raises
    ------
    InputError
        A column the catalog lacks or that groups nothing, or listed site ids the catalog lacks (every one named).
    """
    domains = section.domains
    if domains is None:
        return None
    ids = [str(i) for i in sites["id"]]
    if isinstance(domains, str):
        column = domains.strip()
        if column == "id" or column not in sites.columns:
            present = [c for c in GROUPING_COLUMNS if c in sites.columns]
            fix = f"name a catalog column that groups sites ({', '.join(present) or 'add a grid_region column'})"
            raise InputError(
                [Problem(source, KEY, KEY, f"the catalog has no column {column!r}{close_matches(column, sites.columns)}", fix)]
            )
        found = _from_column(sites, column)
        if not any(len(members) > 1 for members in found.site_ids):
            rule = f"column {column!r} puts no two sites in one domain: each would fail alone, as N+1 already covers"
            raise InputError([Problem(source, KEY, KEY, rule, "give sites that fail together the same value")])
        return found
    known = set(ids)
    problems = [
        Problem(
            source, f"{KEY}.{name}[{k}]", KEY, f"unknown site {site!r}{close_matches(site, known)}", "use an id of the catalog"
        )
        for name, members in domains.items()
        for k, site in enumerate(members)
        if site not in known
    ]
    if problems:
        raise InputError(problems)
    names = tuple(sorted(domains))
    order = {site: k for k, site in enumerate(ids)}
    members = tuple(tuple(sorted(set(domains[name]), key=order.__getitem__)) for name in names)
    return FaultDomains("listed", names, members)


def find_domain(name: str, sites: pd.DataFrame, configured: FaultDomains | None) -> tuple[str, tuple[str, ...]]:
    """A domain by name: the scenario's first, then any grouping column of the catalog (``column:value`` to choose).

    Parameters
    ----------
    name : str
        The domain's name, or ``column:value``.
    sites : pandas.DataFrame
        The site catalog.
    configured : FaultDomains or None
        The scenario's domains.

    Returns
    -------
    tuple
        ``(label, site ids)``.

    Raises
    ------
    InputError
        No domain has that name, or several catalog columns do (the known names listed, at most 50).
    """
    if configured is not None and name in configured.names:
        return name, configured.sites_of(name)
    groups = catalog_domains(sites)
    column, _, value = name.partition(":")
    if value and column in groups and value in groups[column].names:
        return name, groups[column].sites_of(value)
    matches = [(c, g) for c, g in groups.items() if name in g.names]
    if len(matches) == 1:
        column, group = matches[0]
        return f"{column}:{name}", group.sites_of(name)
    if len(matches) > 1:
        options = ", ".join(f"{c}:{name}" for c, _ in matches)
        raise InputError(
            [Problem("--domain", name, "--domain", f"{name!r} is a domain in several columns", f"write one of {options}")]
        )
    names = sorted({*(configured.names if configured else ()), *(f"{c}:{n}" for c, g in groups.items() for n in g.names)})
    listed = ", ".join(names[:SHOWN_NAMES]) + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")
    rule = f"no fault domain {name!r}{close_matches(name, names)}"
    raise InputError(
        [Problem("--domain", name, "--domain", rule, f"use one of {listed}" if names else "the catalog has no domains")]
    )
