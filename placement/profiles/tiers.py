"""The KV cache tier of each site, and the class profiles each tier gives its nodes.

With ``serving.kv_cache`` every site keeps prompt prefixes in the scenario's tier (``kv_cache.tier``) unless its
catalog row says otherwise (``kv_tier``: ``hbm``, ``dram`` or ``nvme``, the site's own hardware). A tier sets how
long a node keeps a prefix (its capacity over the KV the node writes), how long a hit's KV takes to load, what it adds
to a node's hourly cost and how many nodes a site spends on the shared prefixes its cache misses: so the classes'
goodput per node, their node TTFT and the sites' cold-cache nodes are the tier's. Each tier in use gets its own set of
class profiles (and of rungs, with ``serving.node_ttft_ladder``); a pair runs its site's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._types import FloatArray, IntArray
from placement.economics.cost import EconomicsParams, amortised_usd_per_h
from placement.profiles.build import (
    ClassProfile,
    catalog_node_capex_usd,
    class_profiles,
    class_rungs,
    node_kw,
    part_node,
    runs_options,
    served_class_profiles,
)
from placement.scenario.classes import WorkloadClass
from placement.scenario.sections import KvCacheSection, ServingSection
from placement.serving.prefix_cache import TIER_ORDER, load_tiers, tier_stack


@dataclass(frozen=True)
class ProfileSets:
    """The class profiles of every (KV tier, accelerator) in use, and each site's.

    Parameters
    ----------
    names : tuple of str
        The KV tier of each set ('' without ``serving.kv_cache``); the scenario's tier first.
    sets : list of list of list of ClassProfile
        Per set, each class's rungs, loosest first (one rung without a ladder).
    site_set : numpy.ndarray of int or None
        ``(m,)`` each site's set; None when every site has the first.
    parts : tuple of str, optional
        The accelerator of each set (empty: the scenario's for every set); the scenario's part first.
    node_kw : tuple of float, optional
        IT power of one node of each set's part (empty: the scenario's node for every set). [kW]
    node_capex_usd : tuple of float, optional
        The catalog's price of one node of each set's part (empty: as ``node_kw``). [USD]
    serves : numpy.ndarray of bool or None, optional
        ``(sets, classes)`` whether each set's part serves each class inside its objectives (None: every one does);
        a class it cannot serve keeps the scenario part's profile as a stand-in its pairs never use.
    """

    names: tuple[str, ...]
    sets: list[list[list[ClassProfile]]]
    site_set: IntArray | None
    parts: tuple[str, ...] = ()
    node_kw: tuple[float, ...] = ()
    node_capex_usd: tuple[float, ...] = ()
    serves: NDArray[np.bool_] | None = None

    @property
    def profiles(self) -> list[ClassProfile]:
        """The first set's class profiles (each class's loosest rung): the scenario's tier."""
        return [rungs[0] for rungs in self.sets[0]]

    def _group(self, m: int) -> IntArray:
        return np.zeros(m, dtype=np.int64) if self.site_set is None else self.site_set

    def runs_other_parts(self, accelerator: str) -> bool:
        """Whether some sites run another part than ``accelerator`` (the availability rules bar it there)."""
        return any(part != accelerator for part in self.parts)

    def site_parts(self, m: int) -> list[str]:
        """``m`` accelerator ids: the part each site's nodes are (empty strings without ``parts``)."""
        return [self.parts[g] if self.parts else "" for g in self._group(m).tolist()]

    def site_node_kw(self, m: int) -> FloatArray:
        """``(m,)`` IT power of one node at each site: its part's. [kW]"""
        return np.asarray(np.array(self.node_kw, dtype=float)[self._group(m)], dtype=float)

    def site_node_capex_usd(self, m: int) -> FloatArray:
        """``(m,)`` the catalog's price of one node at each site: its part's. [USD]"""
        return np.asarray(np.array(self.node_capex_usd, dtype=float)[self._group(m)], dtype=float)

    def class_site_served(self, m: int) -> NDArray[np.bool_] | None:
        """``(classes, m)`` whether each site's part serves each class (None: every site serves every class)."""
        if self.serves is None:
            return None
        return np.asarray(self.serves[self._group(m)].T, dtype=bool)

    def site_profiles(self, m: int) -> list[list[ClassProfile]]:
        """``m`` lists: each site's class profiles."""
        return [[rungs[0] for rungs in self.sets[int(g)]] for g in self._group(m).tolist()]

    def warmup_nodes(self, m: int) -> IntArray:
        """``(m,)`` whole nodes each open site holds for the shared prefixes its tier's cache misses."""
        per_set = np.array([cache_warmup_nodes(_most_missed(s)) for s in self.sets], dtype=np.int64)
        return per_set[self._group(m)]

    def tier_usd_per_node_h(self, m: int) -> FloatArray:
        """``(m,)`` what each site's tier adds to a node's hourly cost (the stack's ``usd_per_node_h``). [USD/h]"""
        if not self.names or not self.names[0]:
            return np.zeros(m)
        per_set = np.array([tier_usd_per_node_h(name) for name in self.names])
        return np.asarray(per_set[self._group(m)], dtype=float)


def tier_usd_per_node_h(tier: str) -> float:
    """What a tier adds to a node's hourly cost, up its stack (``kv_tiers.csv`` ``usd_per_node_h``). [USD/h]"""
    return float(sum(t.usd_per_node_h for t in tier_stack(tier, load_tiers())))


def _most_missed(rungs_by_class: list[list[ClassProfile]]) -> list[ClassProfile]:
    """Per class, the option whose cache misses most at their peak: what an open site may need, whichever it runs."""
    return [max(rungs, key=lambda p: p.warmup_nodes) for rungs in rungs_by_class]


AUTO_TIER = "auto"
"""``serving.kv_cache.tier: auto``: each free site's tier is the plan's choice (:mod:`placement.plan.tier_rounds`)."""


def best_tier(classes: list[WorkloadClass], serving: ServingSection, *, source: str) -> str:
    """The tier whose node serves the classes' demand with the most goodput per node (served share first).

    Where ``kv_cache.tier`` is ``auto``: every free site's start in a single-year plan, and the build-out's tier.
    """

    def score(tier: str) -> tuple[float, float]:
        node = serving.model_copy(update={"kv_cache": KvCacheSection(tier=tier)})
        computed = [w for w in classes if not w.given]
        found, _ = served_class_profiles(computed, node, source=source)
        served = [(w.share, p.goodput_tok_s_per_node) for w, p in zip(computed, found, strict=True) if p is not None]
        return (sum(s for s, _ in served), sum(s * g for s, g in served))

    return max(TIER_ORDER, key=score)


def with_start_tier(classes: list[WorkloadClass], serving: ServingSection, *, source: str) -> ServingSection:
    """``serving`` with ``kv_cache.tier: auto`` made its start tier (:func:`best_tier`); ``serving`` otherwise."""
    if serving.kv_cache is None or serving.kv_cache.tier != AUTO_TIER:
        return serving
    tier = best_tier(classes, serving, source=source)
    return serving.model_copy(update={"kv_cache": serving.kv_cache.model_copy(update={"tier": tier})})


def cache_warmup_nodes(profiles: list[ClassProfile]) -> int:
    """Whole nodes an open site holds for the shared prefixes it misses: the classes' peak miss work, rounded up."""
    return int(np.ceil(sum(p.warmup_nodes for p in profiles) - 1e-9))


def site_tiers(sites: pd.DataFrame, serving: ServingSection) -> list[str] | None:
    """Each site's KV cache tier: its catalog ``kv_tier`` (checked when the catalog was read), else the scenario's.

    None without ``serving.kv_cache`` (the tiers then do nothing).
    """
    if serving.kv_cache is None:
        return None
    written = sites["kv_tier"].tolist() if "kv_tier" in sites.columns else [""] * len(sites)
    return [str(tier) if tier else serving.kv_cache.tier for tier in written]


def free_tier_sites(sites: pd.DataFrame, serving: ServingSection) -> NDArray[np.bool_]:
    """``(m,)`` the sites whose tier the plan chooses: ``kv_cache.tier: auto`` and a blank catalog ``kv_tier``."""
    if serving.kv_cache is None or serving.kv_cache.tier != AUTO_TIER:
        return np.zeros(len(sites), dtype=bool)
    written = sites["kv_tier"].fillna("").astype(str) if "kv_tier" in sites.columns else pd.Series([""] * len(sites))
    return np.asarray(written.to_numpy() == "", dtype=bool)


def with_site_tiers(sites: pd.DataFrame, chosen: Mapping[str, str]) -> pd.DataFrame:
    """The catalog with the tiers a plan chose at some sites (site id -> tier) written in its ``kv_tier``."""
    if not chosen:
        return sites
    written = sites["kv_tier"].fillna("").astype(str) if "kv_tier" in sites.columns else pd.Series([""] * len(sites))
    tiers = [chosen.get(str(site), str(tier)) for site, tier in zip(sites["id"], written, strict=True)]
    return sites.assign(kv_tier=tiers)


def profile_sets(
    classes: list[WorkloadClass],
    serving: ServingSection,
    sites: pd.DataFrame,
    *,
    source: str,
    parts: Sequence[str] | None = None,
) -> ProfileSets:
    """The class profiles (and rungs) of every KV tier and accelerator the sites use: one set when they all use one.

    Parameters
    ----------
    classes : list of WorkloadClass
        The scenario's classes.
    serving : ServingSection
        The node (``kv_cache``, ``node_ttft_ladder``).
    sites : pandas.DataFrame
        The catalog (``kv_tier`` where it has the column).
    source : str
        The scenario file, for error messages.
    parts : sequence of str, optional
        The accelerator each site runs (:func:`placement.rules.availability.site_parts`; ``''``: none, the site is
        then given the scenario's node and kept out of the plan by the caller). None: the scenario's everywhere.

    Returns
    -------
    ProfileSets
        Sets in order: the scenario's part before substitutes, and within a part the scenario's tier (when a site
        uses it) first, then the others as in :data:`TIER_ORDER`.
    """
    m = len(sites)
    tiers = site_tiers(sites, serving)
    site_tier = tiers if tiers is not None else [""] * m
    site_part = [p or serving.accelerator for p in parts] if parts is not None else [serving.accelerator] * m
    keys = list(zip(site_tier, site_part, strict=True))
    scenario_tier = serving.kv_cache.tier if serving.kv_cache is not None else ""
    used = sorted(
        set(keys),
        key=lambda k: (k[1] != serving.accelerator, k[0] != scenario_tier, TIER_ORDER.index(k[0]) if k[0] else -1, k[1]),
    )
    ladder = runs_options(serving)
    sets, node_kws, capexes, serves = [], [], [], []
    own: dict[str, list[list[ClassProfile]]] = {}  # the scenario's part at each tier: stand-ins for classes a part cannot serve
    for tier, part in used:
        node = part_node(serving, part)
        if tier:
            node = node.model_copy(update={"kv_cache": KvCacheSection(tier=tier)})
        if part == serving.accelerator:
            rungs = _rungs(classes, node, class_profiles(classes, node, source=source), ladder=ladder, source=source)
            own[tier] = rungs
            ok = [True] * len(classes)
        else:
            if tier not in own:
                scenario_node = serving if not tier else serving.model_copy(update={"kv_cache": KvCacheSection(tier=tier)})
                own[tier] = _rungs(classes, scenario_node, class_profiles(classes, scenario_node, source=source),
                                   ladder=ladder, source=source)  # fmt: skip
            rungs, ok = _substitute_rungs(classes, node, own[tier], ladder=ladder, source=source)
        sets.append(rungs)
        serves.append(ok)
        node_kws.append(node_kw(node))
        capexes.append(catalog_node_capex_usd(node))
    site_set = None if len(used) == 1 else np.array([used.index(k) for k in keys], dtype=np.int64)
    return ProfileSets(
        tuple(t for t, _ in used), sets, site_set, tuple(p for _, p in used), tuple(node_kws), tuple(capexes),
        serves=np.array(serves, dtype=bool) if not all(map(all, serves)) else None,
    )  # fmt: skip


def _rungs(
    classes: list[WorkloadClass], node: ServingSection, profiles: list[ClassProfile], *, ladder: bool, source: str
) -> list[list[ClassProfile]]:
    return class_rungs(classes, node, profiles, source=source) if ladder else [[p] for p in profiles]


def _substitute_rungs(
    classes: list[WorkloadClass], node: ServingSection, stand_in: list[list[ClassProfile]], *, ladder: bool, source: str
) -> tuple[list[list[ClassProfile]], list[bool]]:
    """Each class's rungs on a substitute part's node, and whether the part serves it inside its objectives.

    A class the part cannot serve (no goodput inside its objectives, or given goodput, which describes the scenario's
    own node) keeps the scenario part's rungs as a stand-in its pairs never use: the caller bars them.
    """
    computed = [k for k, w in enumerate(classes) if not w.given]
    found, _ = served_class_profiles([classes[k] for k in computed], node, source=source)
    profile_of = {k: p for k, p in zip(computed, found, strict=True) if p is not None}
    served = sorted(profile_of)
    own = _rungs([classes[k] for k in served], node, [profile_of[k] for k in served], ladder=ladder, source=source)
    rungs_of = dict(zip(served, own, strict=True))
    return [rungs_of.get(k, stand_in[k]) for k in range(len(classes))], [k in rungs_of for k in range(len(classes))]


def cheapest_part(
    candidates: list[str],
    classes: list[WorkloadClass],
    serving: ServingSection,
    params: EconomicsParams,
    *,
    price_usd_per_mwh: float,
    pue: float,
    source: str,
) -> str:
    """Of the parts the availability rules permit at a site, the one that serves the classes' demand cheapest.

    The part that serves the largest share of the demand inside its objectives wins; among those, the least cost per
    token of that demand: a node-hour (its catalog price amortised as ``params`` says, its opex and its full power at
    ``price_usd_per_mwh`` and ``pue``) times the node-hours a token/s of the served mix takes (``share / goodput`` summed).

    Parameters
    ----------
    candidates : list of str
        Accelerator ids, in catalog order (ties keep the first).
    classes : list of WorkloadClass
        The scenario's classes (their ``share`` of demand).
    serving : ServingSection
        The scenario's node (each candidate runs the catalog's node of its part, :func:`part_node`).
    params : EconomicsParams
        The scenario's economics (the node price is each candidate's catalog price).
    price_usd_per_mwh, pue : float
        The power price and PUE the candidates are compared at (the sites' means). [USD/MWh], [-]
    source : str
        The scenario file, for error messages.

    Returns
    -------
    str
        The part chosen.
    """

    def rank(part: str) -> tuple[float, float]:
        node = part_node(serving, part)
        computed = [w for w in classes if not w.given]
        found, _ = served_class_profiles(computed, node, source=source)
        served = [(w.share, p.goodput_tok_s_per_node * p.utilisation_cap) for w, p in zip(computed, found, strict=True) if p]
        share = sum(s for s, _ in served)
        if not share:
            return (0.0, 0.0)
        node_h = float(
            amortised_usd_per_h(catalog_node_capex_usd(node), params.discount_rate, params.node_life_years)
            + params.opex_usd_per_node_h
            + node_kw(node) / 1000.0 * pue * price_usd_per_mwh
        )
        return (share, -node_h * sum(s / g for s, g in served) / share)

    ranks = [rank(part) for part in candidates]
    return candidates[max(range(len(candidates)), key=lambda i: (ranks[i], -i))]
