"""Each site's KV cache tier in the build-out: the fleet on every tier in use, as the single-year plan's profile sets.

With ``serving.kv_cache`` a site keeps prompt prefixes in its catalog ``kv_tier`` (else the scenario's tier,
:func:`placement.profiles.tiers.site_tiers`). The tier sets a node's goodput and node TTFT for each class (its cache
hit rate, the time to load a hit's KV), what it adds to a node's hourly cost, and the nodes an open site spends on the
shared prefixes its cold cache misses (:func:`placement.profiles.tiers.cache_warmup_nodes`). The build-out sees them as
it sees a single-year plan's: each tier's fleet (every accelerator on offer, built by
:func:`placement.buildout.fleet.build_fleet` on that tier's node) gives the pairs a site allows and its goodput per node;
the tier's cost joins a node's running cost; the cold cache is charged to every open site, every year it is open.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._types import FloatArray, IntArray
from placement.buildout.fleet import Fleet, build_fleet
from placement.optimize.buildout.input import BuildoutInput
from placement.profiles.tiers import cache_warmup_nodes, site_tiers
from placement.scenario.classes import WorkloadClass
from placement.scenario.horizon import HorizonSection
from placement.scenario.sections import KvCacheSection, ServingSection
from placement.serving.prefix_cache import TIER_ORDER, load_tiers, tier_stack


@dataclass(frozen=True)
class SiteTiers:
    """The fleet on each KV tier in use, and each site's tier.

    Parameters
    ----------
    names : tuple of str
        The tier of each fleet ('' without ``serving.kv_cache``); the scenario's tier first.
    fleets : tuple of Fleet
        The fleet on each tier: the same accelerators in the same order, each with that tier's class profiles.
    site_tier : numpy.ndarray of int
        ``(M,)`` each site's tier (an index of ``names``).
    """

    names: tuple[str, ...]
    fleets: tuple[Fleet, ...]
    site_tier: IntArray

    @property
    def base(self) -> Fleet:
        """The fleet on the scenario's tier (the build-out's ``goodput_tok_s``)."""
        return self.fleets[0]

    @property
    def cached(self) -> bool:
        """Whether the scenario models the KV cache (``serving.kv_cache``)."""
        return bool(self.names[0])

    def groups(self, parts: NDArray[np.bool_]) -> list[tuple[IntArray, NDArray[np.bool_], Fleet]]:
        """Sites on one tier that may run the same parts: ``(site indices, (A,) parts, the tier's fleet)`` per group.

        Parameters
        ----------
        parts : numpy.ndarray of bool
            ``(M, A)`` the parts each site may ever run (:func:`placement.buildout.arrays.site_parts`); a site that may
            run none serves nobody and is left out.
        """
        out = []
        for g, fleet in enumerate(self.fleets):
            on_tier = self.site_tier == g
            for key in np.unique(parts[on_tier], axis=0):
                if key.any():
                    columns = np.flatnonzero(on_tier & (parts == key).all(axis=1))
                    out.append((columns, np.asarray(key, dtype=bool), fleet))
        return out

    def goodput_factor(self) -> FloatArray | None:
        """``(M, K, A)`` each site's goodput per node over the scenario tier's (0 where that is 0); None: one tier."""
        if len(self.fleets) == 1:
            return None
        base = self.base.goodput_tok_s
        ratio = np.stack([np.where(base > 0, f.goodput_tok_s / np.maximum(base, 1e-300), 0.0) for f in self.fleets])
        return np.asarray(ratio[self.site_tier], dtype=float)

    def warmup_nodes(self) -> IntArray:
        """``(M,)`` whole nodes (of the first accelerator on offer) each open site holds for its cold cache's misses."""
        per_tier = np.array([cache_warmup_nodes(fleet.profiles[0]) for fleet in self.fleets], dtype=np.int64)
        return np.asarray(per_tier[self.site_tier], dtype=np.int64)

    def tier_usd_per_node_h(self) -> FloatArray:
        """``(M,)`` what each site's tier adds to a node's hourly cost (the tier stack's ``usd_per_node_h``). [USD/h]"""
        if not self.cached:
            return np.zeros(self.site_tier.size)
        tiers = load_tiers()
        per_tier = np.array([sum(t.usd_per_node_h for t in tier_stack(name, tiers)) for name in self.names])
        return np.asarray(per_tier[self.site_tier], dtype=float)


def node_on_tier(serving: ServingSection, tier: str) -> ServingSection:
    """The node keeping its prefixes in ``tier`` (``serving`` itself for '', no cache model)."""
    return serving.model_copy(update={"kv_cache": KvCacheSection(tier=tier)}) if tier else serving


def build_site_tiers(
    classes: list[WorkloadClass],
    serving: ServingSection,
    horizon: HorizonSection | None,
    sites: pd.DataFrame,
    years: list[int],
    base: Fleet,
    *,
    source: str,
) -> SiteTiers:
    """The fleet on every KV tier the sites use (``base``, built on ``serving``, is the scenario tier's).

    Parameters
    ----------
    classes : list of WorkloadClass
        The scenario's classes.
    serving : ServingSection
        The scenario's node (``kv_cache``).
    horizon : HorizonSection or None
        The scenario's horizon (its accelerators on offer).
    sites : pandas.DataFrame
        The candidate sites (``kv_tier`` where the catalog has the column).
    years : list of int
        The planning years.
    base : Fleet
        The fleet built on ``serving`` (:func:`placement.buildout.fleet.build_fleet`).
    source : str
        The scenario file, for error messages.

    Returns
    -------
    SiteTiers
        One tier, ``base``, without ``serving.kv_cache`` or when every site uses the scenario's tier.

    Raises
    ------
    InputError
        A class no accelerator of the fleet can serve on some site's tier.
    """
    tiers = site_tiers(sites, serving)
    if tiers is None or serving.kv_cache is None:
        return SiteTiers(("",), (base,), np.zeros(len(sites), dtype=np.int64))
    own = serving.kv_cache.tier
    used = sorted(set(tiers) | {own}, key=lambda t: (t != own, TIER_ORDER.index(t)))
    fleets = [base if t == own else build_fleet(classes, node_on_tier(serving, t), horizon, years, source=source) for t in used]
    return SiteTiers(tuple(used), tuple(fleets), np.array([used.index(t) for t in tiers], dtype=np.int64))


def with_site_tiers(data: BuildoutInput, tiers: SiteTiers, energy_price_usd_per_mwh: FloatArray) -> BuildoutInput:
    """The build-out's arrays with each site's KV tier: its goodput, its cost per node-hour and its cold cache.

    As the single-year plan (:func:`placement.instance.rows.with_cache_warmup`), an open site holds its warm-up
    nodes whatever it serves: their MW come off the site's energized power, and their hourly cost (a node of the
    first accelerator on offer bought in its first year on offer: capex annuity, running cost and full power, the
    facility's MW, the tier's cost) joins the site's fixed cost, paid every year the site is open; their full power
    counts in the site's energy and the caps (``site_open_mw``).

    Parameters
    ----------
    data : BuildoutInput
        The arrays on the scenario's tier.
    tiers : SiteTiers
        Each site's tier and the fleet on it.
    energy_price_usd_per_mwh : numpy.ndarray
        ``(M, Y)`` what a MWh drawn at each site costs (power, carbon and water charges). [USD/MWh]

    Returns
    -------
    BuildoutInput
        ``data`` itself without ``serving.kv_cache``.
    """
    if not tiers.cached:
        return data
    tier_usd = tiers.tier_usd_per_node_h()
    extra = tier_usd[:, None] if data.node_usd_per_h.ndim == 2 else tier_usd[:, None, None]
    factor = tiers.goodput_factor()
    energy = data.energy_usd_per_h_per_tok_s
    if factor is not None:  # a token/s takes 1 / factor of the scenario tier's node-hours at the site
        scale = factor if energy.ndim == 3 else factor[:, :, :, None, None]
        energy = np.where(scale > 0, energy / np.maximum(scale, 1e-300), 0.0)
    data = replace(
        data,
        node_usd_per_h=np.asarray(data.node_usd_per_h + extra),
        energy_usd_per_h_per_tok_s=np.asarray(energy),
        site_goodput_factor=factor,
    )
    warm = tiers.warmup_nodes().astype(float)
    if not warm.any():
        return data
    first = int(np.flatnonzero(data.offered[0])[0])
    load_mw = data.node_mw[:, 0] if data.node_load_mw is None else data.node_load_mw[:, 0]
    node_usd_per_h = (
        data.node_annuity_usd_per_h[0, first]
        + data.running_may[:, 0, first]
        + load_mw * energy_price_usd_per_mwh[:, first]
        + data.node_mw[:, 0] * data.site_usd_per_h_per_mw
    )
    return replace(
        data,
        site_fixed_usd_per_h=np.asarray(data.site_fixed_usd_per_h + warm * node_usd_per_h),
        site_mw_available=np.asarray(np.maximum(data.site_mw_available - (warm * data.node_mw[:, 0])[:, None], 0.0)),
        site_open_mw=np.asarray(warm * data.node_mw[:, 0]),
    )


def tier_site_columns(tiers: SiteTiers | None, open_sites: NDArray[np.bool_], node_mw: FloatArray) -> dict[str, NDArray[Any]]:
    """A year's ``sites.csv`` columns of the KV tiers, as a single-year plan writes them (empty without the cache model).

    Parameters
    ----------
    tiers : SiteTiers or None
        Each site's tier.
    open_sites : numpy.ndarray of bool
        ``(M,)`` the sites open that year.
    node_mw : numpy.ndarray
        ``(M,)`` facility MW of one warm-up node at each site. [MW]

    Returns
    -------
    dict
        ``kv_tier``, ``cache_warmup_nodes`` (0 at a closed site) and ``cache_warmup_mw``.
    """
    if tiers is None or not tiers.cached:
        return {}
    warm = np.where(open_sites, tiers.warmup_nodes(), 0)
    return {
        "kv_tier": np.array(tiers.names)[tiers.site_tier],
        "cache_warmup_nodes": warm,
        "cache_warmup_mw": warm * node_mw,
    }
