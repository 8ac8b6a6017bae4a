"""The KV cache tier of each site, and the class profiles each tier gives its nodes.

With ``serving.kv_cache`` every site keeps prompt prefixes in the scenario's tier (``kv_cache.tier``) unless its
catalog row says otherwise (``kv_tier``: ``hbm``, ``dram`` or ``nvme``, the site's own hardware). A tier sets how
long a node keeps a prefix (its capacity over the KV the node writes), how long a hit's KV takes to load, what it adds
to a node's hourly cost and how many nodes a site spends on the shared prefixes its cache misses: so the classes'
goodput per node, their node TTFT and the sites' cold-cache nodes are the tier's. Each tier in use gets its own set of
class profiles (and of rungs, with ``serving.node_ttft_ladder``); a pair runs its site's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from placement._types import FloatArray, IntArray
from placement.profiles.build import ClassProfile, class_profiles, class_rungs
from placement.scenario.classes import WorkloadClass
from placement.scenario.sections import KvCacheSection, ServingSection
from placement.serving.prefix_cache import TIER_ORDER, load_tiers, tier_stack


@dataclass(frozen=True)
class ProfileSets:
    """The class profiles of every KV tier in use, and each site's.

    Parameters
    ----------
    names : tuple of str
        The tier of each set ('' without ``serving.kv_cache``); the scenario's tier first.
    sets : list of list of list of ClassProfile
        Per set, each class's rungs, loosest first (one rung without a ladder).
    site_set : numpy.ndarray of int or None
        ``(m,)`` each site's set; None when every site has the first.
    """

    names: tuple[str, ...]
    sets: list[list[list[ClassProfile]]]
    site_set: IntArray | None

    @property
    def profiles(self) -> list[ClassProfile]:
        """The first set's class profiles (each class's loosest rung): the scenario's tier."""
        return [rungs[0] for rungs in self.sets[0]]

    def site_profiles(self, m: int) -> list[list[ClassProfile]]:
        """``m`` lists: each site's class profiles."""
        group = np.zeros(m, dtype=np.int64) if self.site_set is None else self.site_set
        return [[rungs[0] for rungs in self.sets[int(g)]] for g in group.tolist()]

    def warmup_nodes(self, m: int) -> IntArray:
        """``(m,)`` whole nodes each open site holds for the shared prefixes its tier's cache misses."""
        per_set = np.array([cache_warmup_nodes([rungs[0] for rungs in s]) for s in self.sets], dtype=np.int64)
        return per_set[np.zeros(m, dtype=np.int64) if self.site_set is None else self.site_set]

    def tier_usd_per_node_h(self, m: int) -> FloatArray:
        """``(m,)`` what each site's tier adds to a node's hourly cost (the stack's ``usd_per_node_h``). [USD/h]"""
        if not self.names or not self.names[0]:
            return np.zeros(m)
        tiers = load_tiers()
        per_set = np.array([sum(t.usd_per_node_h for t in tier_stack(name, tiers)) for name in self.names])
        return np.asarray(per_set[np.zeros(m, dtype=np.int64) if self.site_set is None else self.site_set], dtype=float)


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


def profile_sets(classes: list[WorkloadClass], serving: ServingSection, sites: pd.DataFrame, *, source: str) -> ProfileSets:
    """The class profiles (and rungs) of every KV tier the sites use: one set, as before, when they all use one.

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

    Returns
    -------
    ProfileSets
        Sets in order: the scenario's tier (when a site uses it) first, then the others as in :data:`TIER_ORDER`.
    """
    tiers = site_tiers(sites, serving)
    ladder = bool(serving.node_ttft_ladder)
    if tiers is None or len(set(tiers)) == 1:
        node = serving if tiers is None else serving.model_copy(update={"kv_cache": KvCacheSection(tier=tiers[0])})
        profiles = class_profiles(classes, node, source=source)
        rungs = class_rungs(classes, node, profiles, source=source) if ladder else [[p] for p in profiles]
        return ProfileSets(("" if tiers is None else tiers[0],), [rungs], None)
    assert serving.kv_cache is not None
    used = sorted(set(tiers), key=lambda t: (t != serving.kv_cache.tier, TIER_ORDER.index(t)))  # type: ignore[union-attr]
    sets = []
    for tier in used:
        node = serving.model_copy(update={"kv_cache": KvCacheSection(tier=tier)})
        profiles = class_profiles(classes, node, source=source)
        sets.append(class_rungs(classes, node, profiles, source=source) if ladder else [[p] for p in profiles])
    return ProfileSets(tuple(used), sets, np.array([used.index(t) for t in tiers], dtype=np.int64))
