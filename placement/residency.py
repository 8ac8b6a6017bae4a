"""Data residency: which sites may serve which populations, by country."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from placement.scenario import ResidencySection


def expand_codes(codes: list[str], groups: dict[str, list[str]]) -> set[str]:
    """Country codes named directly or through groups.

    Parameters
    ----------
    codes : list of str
        ISO alpha-2 codes or group names.
    groups : dict
        Named groups of codes.

    Returns
    -------
    set of str
        ISO alpha-2 codes.
    """
    out: set[str] = set()
    for code in codes:
        out |= set(groups.get(code, [code]))
    return out


def residency_mask(
    population_country: NDArray[np.str_] | list[str],
    site_country: NDArray[np.str_] | list[str],
    residency: ResidencySection,
) -> NDArray[np.bool_]:
    """Pairs that residency rules permit.

    A rule ``{populations: P, sites: S}`` lets populations in P be served only by sites in S;
    ``domestic_only_sites: D`` lets sites in D serve only populations of their own country.

    Parameters
    ----------
    population_country : array_like of str
        ``(n,)`` ISO alpha-2 code of each population.
    site_country : array_like of str
        ``(m,)`` ISO alpha-2 code of each site.
    residency : ResidencySection
        The rules.

    Returns
    -------
    numpy.ndarray of bool
        ``(n, m)`` permitted pairs.
    """
    pops = np.asarray(population_country, dtype=str)
    sites = np.asarray(site_country, dtype=str)
    allowed = np.ones((len(pops), len(sites)), dtype=bool)
    for rule in residency.rules:
        rule_pops = np.isin(pops, sorted(expand_codes(rule.populations, residency.groups)))
        rule_sites = np.isin(sites, sorted(expand_codes(rule.sites, residency.groups)))
        allowed[rule_pops[:, None] & ~rule_sites[None, :]] = False
    domestic = np.isin(sites, sorted(expand_codes(residency.domestic_only_sites, residency.groups)))
    allowed &= ~domestic[None, :] | (pops[:, None] == sites[None, :])
    return allowed
