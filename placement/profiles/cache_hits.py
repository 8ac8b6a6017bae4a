"""The prefix-cache hit rate each open site gets for each class, from the share of the class it serves.

With ``serving.kv_cache`` a class with a ``prefix_reuse`` profile hits its cache as often as its site's request rate
allows (:class:`placement.serving.prefix_cache.CacheFigures`); other classes keep their fixed ``prefix_cache_hit_rate``.
A site's request rate is the class's daily mean goodput there over its mean answer length.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from placement.profiles.build import ClassProfile

SiteProfiles = Mapping[str, list[ClassProfile]]
"""Site id -> the class profiles of its node, where sites' KV tiers differ (``Instance.profiles_by_site``)."""


def site_hit_rates(
    profiles: list[ClassProfile], assignments: pd.DataFrame, *, by_site: SiteProfiles | None = None
) -> pd.DataFrame:
    """One row per (site, class) served: ``site_id``, ``class``, ``goodput_tok_s``, ``requests_per_s``, ``prefix_hit_rate``.

    Parameters
    ----------
    profiles : list of ClassProfile
        The classes as the plan was solved.
    assignments : pandas.DataFrame
        The plan's assignments (``site_id``, ``class``, ``goodput_tok_s``).
    by_site : mapping, optional
        Each site's own class profiles (its KV tier's cache) where they differ from ``profiles``.

    Returns
    -------
    pandas.DataFrame
        Sorted by site and class.
    """
    served = assignments[assignments["goodput_tok_s"] > 0]
    table = served.groupby(["site_id", "class"], as_index=False, sort=True)["goodput_tok_s"].sum()
    by_name = {p.name: p for p in profiles}
    at_site = {site: {p.name: p for p in own} for site, own in (by_site or {}).items()}
    rate = np.zeros(len(table))
    hit = np.zeros(len(table))
    sites = table["site_id"].astype(str).tolist()
    for k, (name, goodput) in enumerate(zip(table["class"].astype(str), table["goodput_tok_s"].to_numpy(float), strict=True)):
        profile = at_site.get(sites[k], by_name)[name]
        if profile.cache is None:
            hit[k] = profile.cache_hit_rate
            continue
        rate[k] = goodput * profile.cache.requests_per_tok
        hit[k] = float(profile.cache.hit_rate(rate[k])[0])
    return pd.DataFrame(table.assign(requests_per_s=rate, prefix_hit_rate=hit))


def class_hit_rates(
    profiles: list[ClassProfile], assignments: pd.DataFrame, *, by_site: SiteProfiles | None = None
) -> dict[str, float]:
    """Each class's goodput-weighted hit rate over the sites serving it (its fixed rate where none serves it)."""
    table = site_hit_rates(profiles, assignments, by_site=by_site)
    out = {}
    for profile in profiles:
        rows = table[table["class"] == profile.name]
        weight = rows["goodput_tok_s"].to_numpy(float)
        out[profile.name] = float(rows["prefix_hit_rate"] @ weight / weight.sum()) if weight.sum() > 0 else profile.cache_hit_rate
    return out
