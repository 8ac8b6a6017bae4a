"""How each open site serves each class, and why: the serving mode chosen per (site, class) and cross-metro prefill.

Two kinds of choice make a site's mode. Within a site, the serving model runs the class in each mode the scenario
leaves open (aggregated serving with chunked prefill, disaggregated pools, each with and without speculative
decoding) and at each node TTFT budget of the ladder; each pair runs the one with the most goodput per node that
fits its TTFT objective (:func:`placement.profiles.build.class_rungs`): at one site every option costs the same per
node, so the most goodput that fits is the cheapest, and the MILP given every option as a column would choose the
same. A site far from some of its users may so serve a class in two modes. Across sites, cross-metro prefill
(:mod:`placement.instance.cross_metro`) is a column of the MILP beside the pair served whole: the plan says where it
was taken, with which prefill site, and why.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from placement.instance.cross_metro import CrossMetro
from placement.plan.record import Plan
from placement.profiles.build import ClassProfile, CrossMetroProfile, mode_name
from placement.results.textfmt import mw_text


def class_modes(plan: Plan) -> dict[str, str]:
    """The serving mode of each class: ``aggregated`` or ``disaggregated``, ``+method`` with speculation."""
    modes = {}
    for profile in plan.instance.profiles:
        mode = profile.serving_mode if profile.source != "scenario" else "given"
        modes[profile.name] = mode + (f"+{profile.speculative}" if profile.speculative else "")
    return modes


def _served_modes(plan: Plan) -> pd.DataFrame:
    """Goodput by (site, class, mode) of the plan's assignments (a prefill site's pool as ``prefill-pool``)."""
    served = plan.assignments[plan.assignments["goodput_tok_s"] > 0]
    if "serving_mode" in served.columns:
        rows = served[["site_id", "class", "serving_mode", "goodput_tok_s"]].rename(columns={"serving_mode": "mode"})
        if "prefill_site_id" in served.columns:
            far = served[served["prefill_site_id"] != ""]
            pools = pd.DataFrame(
                {"site_id": far["prefill_site_id"], "class": far["class"], "mode": "prefill-pool", "goodput_tok_s": 0.0}
            )
            rows = pd.concat([rows, pools], ignore_index=True)
    else:
        modes = class_modes(plan)
        rows = served[["site_id", "class", "goodput_tok_s"]].assign(mode=served["class"].map(modes))
    return rows.groupby(["site_id", "class", "mode"])["goodput_tok_s"].sum().reset_index()


def modes_by_site(plan: Plan) -> dict[str, dict[str, str]]:
    """Open site -> class -> the mode that serves most of the class there.

    ``cross-metro`` (``+method``): the site holds the decode pool and a partner the prefill pool; ``prefill-pool``:
    the site serves none of the class itself but prefills it for other sites' decode pools.
    """
    out: dict[str, dict[str, str]] = {}
    table = _served_modes(plan).sort_values(["site_id", "class", "goodput_tok_s", "mode"], ascending=[True, True, False, True])
    for (site_id, klass), rows in table.groupby(["site_id", "class"], sort=True):
        out.setdefault(str(site_id), {})[str(klass)] = str(rows["mode"].iat[0])
    return out


def cross_metro_links(plan: Plan) -> pd.DataFrame:
    """One row per (decode site, prefill site, class) the plan uses, with its goodput, KV moved, WAN cost and why.

    Columns ``decode_site_id, prefill_site_id, class, goodput_tok_s, site_rtt_ms, kv_gb_per_h, wan_usd_per_h,
    why``. Empty without cross-metro prefill.
    """
    columns = [
        "decode_site_id",
        "prefill_site_id",
        "class",
        "goodput_tok_s",
        "site_rtt_ms",
        "kv_gb_per_h",
        "wan_usd_per_h",
        "why",
    ]
    a = plan.assignments
    if "prefill_site_id" not in a.columns or not (a["prefill_site_id"] != "").any():
        return pd.DataFrame(columns=columns)
    far = a[a["prefill_site_id"] != ""]
    wan_usd_per_gb = plan.instance.cross_metro.spec.wan_usd_per_gb if plan.instance.cross_metro is not None else 0.0
    links = (
        far.groupby(["site_id", "prefill_site_id", "class"], as_index=False)
        .agg(
            goodput_tok_s=("goodput_tok_s", "sum"),
            site_rtt_ms=("cross_metro_rtt_ms", "max"),
            kv_gb_per_h=("kv_wan_gb_per_h", "sum"),
        )
        .rename(columns={"site_id": "decode_site_id"})
    )
    links["wan_usd_per_h"] = links["kv_gb_per_h"] * wan_usd_per_gb
    links["why"] = [
        _link_why(plan, str(d), str(p), str(k))
        for d, p, k in links[["decode_site_id", "prefill_site_id", "class"]].itertuples(index=False)
    ]
    return links.sort_values("goodput_tok_s", ascending=False, kind="stable").reset_index(drop=True)[columns]


def _link_why(plan: Plan, decode_id: str, prefill_id: str, klass: str) -> str:
    """Why the plan prefills a class of ``decode_id`` at ``prefill_id``: the decode site's power, or the price per token."""
    instance = plan.instance
    cross = instance.cross_metro
    assert cross is not None
    ids = plan.sites["site_id"].astype(str).tolist()
    d, p = ids.index(decode_id), ids.index(prefill_id)
    node_cost = plan.sites["node_cost_usd_per_h"].to_numpy(float)
    used, available = plan.sites["mw_used"].to_numpy(float)[d], plan.sites["mw_available"].to_numpy(float)[d]
    k = [c.name for c in instance.classes].index(klass)
    xm = _link_profile(cross, d, p, k)
    whole = instance.profiles[k].nodes_per_tok_s * node_cost[d]
    split = xm.decode_nodes_per_tok_s * node_cost[d] + xm.prefill_nodes_per_tok_s * node_cost[p]
    split += xm.kv_gb_per_tok * cross.spec.wan_usd_per_gb * 3600.0
    per_m = 1e6 / 3600.0
    prices = f"${split * per_m:.3f}/M split against ${whole * per_m:.3f}/M whole at {decode_id} (nodes and WAN, list prices)"
    if available - used < float(instance.inputs.site_node_mw[d]):
        saved = 1.0 - xm.decode_nodes_per_tok_s / instance.profiles[k].nodes_per_tok_s
        return (
            f"{decode_id}'s power binds ({mw_text(used)} of {mw_text(available)} MW): a decode pool here uses "
            f"{saved:.0%} fewer node-equivalents per token than serving {klass} whole, so its MW serve more users near "
            f"it; {prices}"
        )
    return f"cheaper per token with the prefill at {prefill_id}: {prices}"


def _link_profile(cross: CrossMetro, decode: int, prefill: int, k: int) -> CrossMetroProfile:
    """The profile the columns of (decode site, prefill site, class) run: their sites' allowance."""
    pairs = cross.pairs
    at = np.flatnonzero((pairs.decode_site == decode) & (pairs.prefill_site == prefill) & (pairs.klass == k))
    return cross.options[int(pairs.option[at[0]])]


def cross_metro_summary(plan: Plan) -> dict[str, Any] | None:
    """``summary.json``'s ``arrangement.cross_metro``: settings, per class what the mode does and how much of it runs.

    None without ``serving.cross_metro_prefill``.
    """
    instance = plan.instance
    cross = instance.cross_metro
    if cross is None:
        return None
    links = cross_metro_links(plan)
    a = plan.assignments
    classes: dict[str, Any] = {}
    for k, profile in enumerate(instance.profiles):
        steps = cross.steps(k)
        served = float(a.loc[a["class"] == profile.name, "goodput_tok_s"].sum())
        far = float(links.loc[links["class"] == profile.name, "goodput_tok_s"].sum())
        entry: dict[str, Any] = {"columns": cross.reach[k].columns, "why_none": cross.why_none(k)}
        if steps:
            entry.update(
                {
                    "whole_nodes_per_1000_tok_s": profile.nodes_per_tok_s * 1e3,
                    "by_site_rtt_ms": {f"{xm.allowance_ms:g}": _step_figures(xm, cross.spec.wan_usd_per_gb) for xm in steps},
                    "kv_gb_per_million_tokens": steps[0].kv_gb_per_tok * 1e6,
                    "wan_usd_per_million_tokens": steps[0].kv_gb_per_tok * 1e6 * cross.spec.wan_usd_per_gb,
                    "candidates": {
                        "pairs": cross.reach[k].local_pairs,
                        "dominated": cross.reach[k].dominated,
                        "no_partner": cross.reach[k].no_partner,
                        "barred": cross.reach[k].barred,
                        "over_budget": cross.reach[k].over_budget,
                    },
                }
            )
        entry["goodput_tok_s"] = far
        entry["share_of_class"] = far / served if served > 0 else 0.0
        classes[profile.name] = entry
    return {
        "options": cross.spec.model_dump(),
        "classes": classes,
        "links": [
            {key: (float(v) if isinstance(v, (float, np.floating)) else str(v)) for key, v in row.items()}
            for row in links.to_dict("records")
        ],
        "kv_gb_per_h": float(links["kv_gb_per_h"].sum()) if len(links) else 0.0,
        "wan_usd_per_h": float(links["wan_usd_per_h"].sum()) if len(links) else 0.0,
    }


def _step_figures(xm: CrossMetroProfile, wan_usd_per_gb: float) -> dict[str, Any]:
    """One allowance's pools: goodput per node-equivalent, the split of the nodes, the KV transfer, speculation."""
    return {
        "goodput_tok_s_per_node": xm.profile.goodput_tok_s_per_node,
        "prefill_share_of_nodes": xm.prefill_share,
        "decode_nodes_per_1000_tok_s": xm.decode_nodes_per_tok_s * 1e3,
        "prefill_nodes_per_1000_tok_s": xm.prefill_nodes_per_tok_s * 1e3,
        "kv_transfer_ms": xm.kv_transfer_ms,
        "node_ttft_ms": xm.profile.node_ttft_ms,
        "speculative": xm.profile.speculative,
    }


def mode_reasons(plan: Plan) -> dict[str, dict[str, str]]:
    """Open site -> class -> why it is served that way, for the classes each site serves or prefills."""
    instance = plan.instance
    cross = instance.cross_metro
    links = cross_metro_links(plan)
    reasons: dict[str, dict[str, str]] = {}
    for site_id, by_class in modes_by_site(plan).items():
        for klass, mode in by_class.items():
            k = [c.name for c in instance.classes].index(klass)
            if mode.startswith("cross-metro"):
                mine = links[(links["decode_site_id"] == site_id) & (links["class"] == klass)]
                top = mine.iloc[0]
                text = f"prefill at {top['prefill_site_id']} ({top['site_rtt_ms']:.1f} ms away): {top['why']}"
            elif mode == "prefill-pool":
                fed = links[(links["prefill_site_id"] == site_id) & (links["class"] == klass)]["decode_site_id"]
                text = f"prefills {klass} for the decode pools of {', '.join(sorted(set(fed.astype(str))))}"
            elif mode != mode_name(instance.profiles[k]) and instance.profiles[k].source != "scenario":
                text = _farther_why(instance.profiles[k], mode)
            else:
                text = _whole_why(instance.profiles[k])
                if cross is not None and cross.why_none(k):
                    text += f"; no cross-metro prefill: {cross.why_none(k)}"
            reasons.setdefault(site_id, {})[klass] = text
    return reasons


def _farther_why(profile: ClassProfile, mode: str) -> str:
    """Why most of a class runs at a site in another mode than the class's own: its users are too far for that one."""
    return (
        f"{mode}: most of its users here are too far for {mode_name(profile)} (the most goodput per node, "
        f"{profile.goodput_tok_s_per_node:,.0f} tok/s, but {profile.node_ttft_ms:,.0f} ms of node TTFT)"
    )


def _whole_why(profile: ClassProfile) -> str:
    """Why a class is served whole in its mode: the goodput per node of each mode the search compared."""
    if profile.source == "scenario":
        return "its goodput per node is given"
    if len(profile.mode_goodput) < 2:
        return f"{profile.serving_mode}: the scenario's only mode ({profile.goodput_tok_s_per_node:,.0f} tok/s per node)"
    ranked = sorted(profile.mode_goodput, key=lambda m: -m[1])
    return "most goodput per node of the modes compared: " + ", ".join(f"{mode} {g:,.0f} tok/s" for mode, g in ranked)
