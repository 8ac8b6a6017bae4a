"""What the arrangement is worth: the plan with its serving options against the same world with the fixed arrangement.

The arrangement options a scenario may turn on are ``serving.speculative`` (speculative decoding where it gives
more goodput) and ``serving.disaggregated: auto`` (prefill and decode pools where they give more goodput); the
serving model chooses per class (:mod:`placement.profiles.build`). The fixed arrangement is the bundled default:
aggregated serving with chunked prefill, no speculation. The comparison solves the same scenario (the same
candidate sites, silicon, demand and objectives) again with the options off and sets the two side by side per
class: $/M goodput and goodput per node (the denominator every step of the cost waterfall divides by).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from placement._process import Background, shared_out
from placement.analyses.modes import class_modes, cross_metro_summary, mode_reasons, modes_by_site
from placement.instance.record import Instance
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.profiles.build import ClassProfile
from placement.profiles.cache_hits import class_hit_rates, site_hit_rates
from placement.profiles.tiers import cache_warmup_nodes
from placement.results.summary import ArrangementSummary
from placement.scenario.load import LoadedScenario
from placement.serving.prefix_cache import CacheFigures


def fixed_arrangement(loaded: LoadedScenario) -> LoadedScenario:
    """The scenario with every arrangement option off: aggregated serving, no speculation, fixed hit rates."""
    off = {
        "speculative": None,
        "disaggregated": False,
        "kv_cache": None,
        "node_ttft_ladder": None,
        "pool_nodes": 1,
        "cross_metro_prefill": None,
    }
    serving = loaded.scenario.serving.model_copy(update=off)
    return LoadedScenario(scenario=loaded.scenario.model_copy(update={"serving": serving}), path=loaded.path)


def hit_rates_by_site(plan: Plan) -> dict[str, dict[str, float]]:
    """Open site -> class -> prefix-cache hit rate, for the classes each site serves (:mod:`placement.profiles.cache_hits`)."""
    table = site_hit_rates(plan.instance.profiles, plan.assignments, by_site=plan.instance.profiles_by_site)
    out: dict[str, dict[str, float]] = {}
    for site_id, klass, hit in table[["site_id", "class", "prefix_hit_rate"]].itertuples(index=False):
        out.setdefault(str(site_id), {})[str(klass)] = float(hit)
    return out


def site_columns(plan: Plan) -> pd.DataFrame:
    """The plan's site table with ``serving_mode_<class>`` and ``prefix_hit_rate_<class>`` of the classes each serves."""
    sites = plan.sites.copy()
    by_site, hits = modes_by_site(plan), hits_or_empty(plan)
    ids = sites["site_id"].astype(str).tolist()
    for profile in plan.instance.profiles:
        name = profile.name
        mode = [by_site.get(i, {}).get(name, "") for i in ids]
        sites[f"serving_mode_{name}"] = mode
        sites[f"prefix_hit_rate_{name}"] = [
            hits.get(i, {}).get(name, np.nan) if m != "" else np.nan for i, m in zip(ids, mode, strict=True)
        ]
    return sites


def hits_or_empty(plan: Plan) -> dict[str, dict[str, float]]:
    """:func:`hit_rates_by_site`, or nothing for a plan that serves nothing."""
    return hit_rates_by_site(plan) if len(plan.assignments) else {}


def _class_shares(plan: Plan, column: str, *, key: Callable[[Any], str], by_value: bool) -> dict[str, dict[str, float]]:
    """Class -> each value of an ``assignments.csv`` column -> the share of the class's served goodput it has.

    Values in descending order: of the value itself, or with ``by_value`` of its share. Empty without the column.
    """
    if column not in plan.assignments.columns:
        return {}
    served = plan.assignments[plan.assignments["goodput_tok_s"] > 0]
    out: dict[str, dict[str, float]] = {}
    for name, rows in served.groupby("class"):
        totals = rows.groupby(column)["goodput_tok_s"].sum()
        totals = totals.sort_values(ascending=False) if by_value else totals.sort_index(ascending=False)
        total = float(totals.sum())
        out[str(name)] = {key(v): float(g) / total for v, g in totals.items()} if total > 0 else {}
    return out


def node_budget_shares(plan: Plan) -> dict[str, dict[str, float]]:
    """Class -> node TTFT budget (ms, as text) -> share of the class's served goodput run inside it (a ladder only)."""
    return _class_shares(plan, "node_ttft_budget_ms", key=lambda b: f"{b:g}", by_value=False)


def mode_shares(plan: Plan) -> dict[str, dict[str, float]]:
    """Class -> serving mode -> share of the class's served goodput run in it (each pair's mode, cross-metro apart)."""
    return _class_shares(plan, "serving_mode", key=str, by_value=True)


def cache_value_usd_per_m(profile: ClassProfile, usd_per_m: float | None) -> float | None:
    """What the prefix cache saves a class per million goodput tokens, at the plan's cost per node of the class.

    The class's nodes scale with ``1 / goodput per node``, so without a cache it would cost ``usd_per_m x g / g0``;
    None without the cache model, or when the node serves nothing of the class without a cache (it is needed).
    """
    if profile.cache is None or usd_per_m is None or profile.cache.goodput_no_cache_tok_s_per_node <= 0:
        return None
    return usd_per_m * (profile.goodput_tok_s_per_node / profile.cache.goodput_no_cache_tok_s_per_node - 1.0)


def _class_figures(plan: Plan) -> dict[str, dict[str, float | None]]:
    return {
        c.name: {"usd_per_m": c.cost_per_million_goodput_tokens_usd, "goodput_tok_s_per_node": c.goodput_tok_s_per_node}
        for c in plan.summary.classes
    }


Waterfall = Callable[[Plan], pd.DataFrame]
"""A plan's cost waterfall: one row per class (``class``, a column per step in $/M goodput); the writer's."""


def _steps(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    steps = [c for c in table.columns if c not in ("class", "goodput_tok_s", "total")]
    return {str(r["class"]): {k: float(r[k]) for k in steps} for r in table.to_dict("records")}


@dataclass(frozen=True)
class FixedArrangement:
    """What the comparison reads of the same world solved with the fixed arrangement (small: it pickles).

    Parameters
    ----------
    classes : dict
        Per class: ``usd_per_m`` and ``goodput_tok_s_per_node``.
    hit_rates : dict
        Per class, its prefix-cache hit rate.
    unserved_share : float
        Share of demand left unserved.
    usd_per_m : float or None
        The plan's $/M goodput.
    steps : dict or None
        Per class, its cost waterfall's steps ($/M), when a waterfall was given.
    """

    classes: dict[str, dict[str, float | None]]
    hit_rates: dict[str, float]
    unserved_share: float
    usd_per_m: float | None
    steps: dict[str, dict[str, float]] | None = None
    without: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)


def without_option(loaded: LoadedScenario, option: str) -> LoadedScenario:
    """The scenario with one arrangement option set as the fixed arrangement has it, the others as they are."""
    serving = loaded.scenario.serving.model_copy(update={option: _fixed_arrangement_settings()[option]})
    return LoadedScenario(scenario=loaded.scenario.model_copy(update={"serving": serving}), path=loaded.path)


def fixed_figures(loaded: LoadedScenario, like: Instance, waterfall: Waterfall | None = None) -> FixedArrangement:
    """Solve the same world with the fixed arrangement (reusing ``like``'s round trips) and keep what is compared.

    With more than one option on, the world is solved once more per option with that one off (the others on): what
    each is worth on its own, beside all of them. With one, that is the fixed arrangement itself. The solves are
    independent: shared out between this process and a forked child (:func:`placement._process.shared_out`).
    """
    options = list(loaded.scenario.serving.arrangement_options())
    several = len(options) > 1

    def fixed_part() -> FixedArrangement:
        fixed = run(fixed_arrangement(loaded), like=like)
        return FixedArrangement(
            classes=_class_figures(fixed),
            hit_rates=class_hit_rates(fixed.instance.profiles, fixed.assignments, by_site=fixed.instance.profiles_by_site),
            unserved_share=fixed.summary.unserved_share,
            usd_per_m=fixed.summary.cost_per_million_goodput_tokens_usd,
            steps=None if waterfall is None else _steps(waterfall(fixed)),
        )

    def without(option: str) -> Callable[[], dict[str, float | None]]:
        return lambda: _headline(run(without_option(loaded, option), like=like))

    tasks: list[Callable[[], Any]] = [fixed_part, *(without(option) for option in options if several)]
    results = shared_out(tasks)
    fixed: FixedArrangement = results[0]
    figures = {"usd_per_m": fixed.usd_per_m, "unserved_share": fixed.unserved_share}
    found = dict(zip(options, results[1:], strict=True)) if several else {option: figures for option in options}
    return dataclasses.replace(fixed, without=found)


def _headline(plan: Plan) -> dict[str, float | None]:
    """A plan's $/M goodput and unserved share (what an option's value is read from)."""
    return {"usd_per_m": plan.summary.cost_per_million_goodput_tokens_usd, "unserved_share": plan.summary.unserved_share}


def option_values(total_usd_per_m: float | None, fixed: FixedArrangement) -> dict[str, dict[str, float | None]]:
    """Per option: the plan's $/M and unserved share without it (the others on), and what it is worth ($/M saved)."""
    out: dict[str, dict[str, float | None]] = {}
    for option, figures in fixed.without.items():
        usd = figures["usd_per_m"]
        out[option] = {
            "usd_per_million_goodput_tokens_without": usd,
            "unserved_share_without": figures["unserved_share"],
            "worth_usd_per_million_goodput_tokens": None if usd is None or total_usd_per_m is None else usd - total_usd_per_m,
        }
    return out


def fixed_in_background(
    loaded: LoadedScenario, like: Instance, waterfall: Waterfall | None = None
) -> Background[FixedArrangement]:
    """:func:`fixed_figures` started in a forked child, to run beside the plan's own solve (at once where it cannot)."""
    return Background(lambda: fixed_figures(loaded, like, waterfall))


def waterfall_moves(plan: Plan, theirs: dict[str, dict[str, float]], waterfall: Waterfall) -> dict[str, dict[str, Any]]:
    """Per class, each waterfall step with the arrangement and fixed ($/M), and the step that moved most."""
    mine = _steps(waterfall(plan))
    out: dict[str, dict[str, Any]] = {}
    for name, steps in mine.items():
        other = theirs.get(name, {})
        delta = {k: v - other.get(k, 0.0) for k, v in steps.items()}
        moved = min(delta, key=lambda k: delta[k]) if delta else None
        out[name] = {
            "steps": steps,
            "steps_fixed_arrangement": other,
            "moved_most": moved,
            "moved_most_usd_per_m": delta.get(moved or "", 0.0),
        }
    return out


def _class_headlines(plan: Plan, fixed: FixedArrangement) -> dict[str, dict[str, Any]]:
    """Per class: its serving mode, and its $/M goodput, goodput per node and prefix hit rate both ways."""
    mine, theirs = _class_figures(plan), fixed.classes
    modes, shares = class_modes(plan), mode_shares(plan)
    hits = class_hit_rates(plan.instance.profiles, plan.assignments, by_site=plan.instance.profiles_by_site)
    fixed_hits = fixed.hit_rates
    return {
        name: {
            "serving_mode": modes.get(name, ""),
            "serving_mode_shares": shares.get(name, {}),
            "usd_per_million_goodput_tokens": mine[name]["usd_per_m"],
            "usd_per_million_goodput_tokens_fixed_arrangement": theirs.get(name, {}).get("usd_per_m"),
            "goodput_tok_s_per_node": mine[name]["goodput_tok_s_per_node"],
            "goodput_tok_s_per_node_fixed_arrangement": theirs.get(name, {}).get("goodput_tok_s_per_node"),
            "prefix_hit_rate": hits.get(name),
            "prefix_hit_rate_fixed_arrangement": fixed_hits.get(name),
        }
        for name in mine
    }


def _kv_cache_figures(profile: ClassProfile, cache: CacheFigures, usd_per_m: float | None) -> dict[str, Any]:
    """A class's prefix cache as infrastructure: its tier, reuse, hit rate, size, warm-up and what it is worth."""
    return {
        "tier": cache.tier,
        "reuse_profile": cache.reuse.profile,
        "hit_rate_limit": profile.cache_hit_rate,
        "retention_s": cache.retention_s,
        "cache_gb_per_node": cache.cache_gb_per_node,
        "hit_load_ms": cache.hit_load_ms,
        "warmup_nodes_per_site": cache.warmup_nodes,
        "goodput_tok_s_per_node_without_cache": cache.goodput_no_cache_tok_s_per_node,
        "value_usd_per_million_goodput_tokens": cache_value_usd_per_m(profile, usd_per_m),
    }


def _class_comparison(plan: Plan, fixed: FixedArrangement, waterfall: Waterfall | None) -> dict[str, dict[str, Any]]:
    """``arrangement.classes``: each class's headlines, then its node TTFT budget shares, KV cache and waterfall moves."""
    classes = _class_headlines(plan, fixed)
    for name, shares in node_budget_shares(plan).items():
        if name in classes:
            classes[name]["node_ttft_budget_shares"] = shares
    for profile in plan.instance.profiles:
        if profile.cache is not None and profile.name in classes:
            entry = classes[profile.name]
            entry["kv_cache"] = _kv_cache_figures(profile, profile.cache, entry["usd_per_million_goodput_tokens"])
    if waterfall is not None and fixed.steps is not None:
        for name, moves in waterfall_moves(plan, fixed.steps, waterfall).items():
            if name in classes:
                classes[name]["waterfall"] = moves
    return classes


def _fixed_arrangement_settings() -> dict[str, Any]:
    """What the fixed arrangement is: aggregated, no speculation, no cache model or ladder, one node a pool."""
    return {
        "disaggregated": False,
        "speculative": None,
        "kv_cache": None,
        "node_ttft_ladder": None,
        "pool_nodes": 1,
        "cross_metro_prefill": None,
    }


def compare_arrangement(
    loaded: LoadedScenario,
    plan: Plan,
    *,
    progress: Callable[[str], None] = lambda _: None,
    waterfall: Waterfall | None = None,
    fixed: FixedArrangement | None = None,
) -> ArrangementSummary:
    """``summary.json``'s ``arrangement``: the plan against the same scenario with the fixed arrangement.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario the plan was solved from (with arrangement options on).
    plan : Plan
        Its plan.
    progress : callable, optional
        Receives a line for the second solve.
    waterfall : callable, optional
        The cost waterfall of a plan (:func:`placement.outputs.cost_waterfall.cost_waterfall` on its tables):
        each class then also gets its ``waterfall`` steps both ways and the step that moved most.
    fixed : FixedArrangement, optional
        The fixed arrangement's figures, already solved (:func:`fixed_in_background`, with the same waterfall);
        default: solved here.

    Returns
    -------
    ArrangementSummary
        ``options`` (what was on), ``classes`` (per class: ``serving_mode``,
        ``usd_per_million_goodput_tokens``, ``usd_per_million_goodput_tokens_fixed_arrangement``,
        ``goodput_tok_s_per_node`` and ``goodput_tok_s_per_node_fixed_arrangement``), the whole plan's
        ``usd_per_million_goodput_tokens`` and ``..._fixed_arrangement``, and ``modes_by_site``.
    """
    if fixed is None:
        progress("arrangement: solving the same world with the fixed arrangement (aggregated, no speculation)")
        fixed = fixed_figures(loaded, plan.instance, waterfall)  # the same world: its round trips are reused
    classes = _class_comparison(plan, fixed, waterfall)
    return ArrangementSummary(
        options=loaded.scenario.serving.arrangement_options(),
        fixed_arrangement=_fixed_arrangement_settings(),
        unserved_share=plan.summary.unserved_share,
        unserved_share_fixed_arrangement=fixed.unserved_share,
        usd_per_million_goodput_tokens=plan.summary.cost_per_million_goodput_tokens_usd,
        usd_per_million_goodput_tokens_fixed_arrangement=fixed.usd_per_m,
        classes=classes,
        modes_by_site=modes_by_site(plan),
        mode_reasons=mode_reasons(plan) if len(plan.assignments) else {},
        cross_metro=cross_metro_summary(plan),
        hit_rates_by_site=hits_or_empty(plan),
        cache_warmup_nodes_per_site=_warmup_nodes(plan),
        kv_tiers_by_site=_tiers_by_site(plan) if plan.instance.site_set is not None else None,
        option_values=option_values(plan.summary.cost_per_million_goodput_tokens_usd, fixed),
    )


def _warmup_nodes(plan: Plan) -> int | dict[str, int]:
    """The most a site's cache misses take, in whole nodes: one figure where every site's tier holds the same.

    Else by open site. It is what the first round of the solve charges each open site (:mod:`placement.plan.cache_rounds`).
    """
    m = len(plan.sites)
    nodes = np.array([cache_warmup_nodes(plan.instance.profiles_at(j)) for j in range(m)], dtype=np.int64)
    if len(set(nodes.tolist())) <= 1:
        return int(nodes[0]) if len(nodes) else 0
    opened = plan.sites["open"].to_numpy(bool)
    return {str(s): int(n) for s, n, o in zip(plan.sites["site_id"], nodes.tolist(), opened, strict=True) if o}


def _tiers_by_site(plan: Plan) -> dict[str, str]:
    """Open site -> its KV cache tier (sites of several tiers)."""
    opened = np.flatnonzero(plan.sites["open"].to_numpy(bool)).tolist()
    return {str(plan.sites["site_id"].iat[j]): plan.instance.site_tier(j) for j in opened}


def arrangement_lines(arrangement: ArrangementSummary) -> list[str]:
    """The comparison in words, one line per class, for the plan's notes (and so the report)."""
    lines = ["What the arrangement is worth (the same world solved again with the fixed arrangement):"]
    for name, c in arrangement.classes.items():
        with_m, fixed_m = c["usd_per_million_goodput_tokens"], c["usd_per_million_goodput_tokens_fixed_arrangement"]
        if with_m is None or fixed_m is None:
            lines.append(f"  - {name} ({c['serving_mode']}): no goodput served in one of the plans")
            continue
        moved = c.get("waterfall", {})
        step = (
            f"; the step that moved most: {moved['moved_most']} {moved['moved_most_usd_per_m']:+.3f} $/M"
            if moved.get("moved_most") and abs(moved["moved_most_usd_per_m"]) > 5e-4
            else ""
        )
        lines.append(
            f"  - {name} ({c['serving_mode']}): ${with_m:.3f}/M against ${fixed_m:.3f}/M fixed ({with_m / fixed_m - 1:+.1%}); "
            f"{c['goodput_tok_s_per_node']:,.0f} tok/s per node against "
            f"{c['goodput_tok_s_per_node_fixed_arrangement']:,.0f}{step}{_hit_text(c)}{_budget_text(c)}"
        )
    lines += _cross_metro_lines(arrangement.cross_metro)
    total, fixed_total = (
        arrangement.usd_per_million_goodput_tokens,
        arrangement.usd_per_million_goodput_tokens_fixed_arrangement,
    )
    if total is not None and fixed_total is not None:
        lines.append(
            f"  - the plan: ${total:.3f}/M against ${fixed_total:.3f}/M fixed ({total / fixed_total - 1:+.1%}); "
            f"unserved {arrangement.unserved_share:.2%} against {arrangement.unserved_share_fixed_arrangement:.2%}"
        )
    lines += _option_lines(total, arrangement.option_values)
    return lines


def _option_lines(total: float | None, values: dict[str, dict[str, float | None]]) -> list[str]:
    """Each option on its own: the plan without it (the others on), when more than one is on."""
    if len(values) < 2 or total is None:
        return []
    parts = []
    for option, v in values.items():
        usd, unserved = v["usd_per_million_goodput_tokens_without"], v["unserved_share_without"]
        if usd is None:
            parts.append(f"without {option}: nothing served")
            continue
        parts.append(f"without {option} ${usd:.3f}/M ({usd / total - 1:+.1%}, unserved {unserved or 0.0:.2%})")
    return ["  - each option on its own (the others on): " + "; ".join(parts)]


def _cross_metro_lines(cross: dict[str, Any] | None) -> list[str]:
    """Per class, what cross-metro prefill carried (share, links, WAN) or why it has no column."""
    if cross is None:
        return []
    lines = []
    for name, c in cross["classes"].items():
        if c["why_none"]:
            lines.append(f"  - {name}: no cross-metro prefill: {c['why_none']}")
            continue
        links = [link for link in cross["links"] if link["class"] == name]
        wan = sum(link["wan_usd_per_h"] for link in links)
        lines.append(
            f"  - {name}: cross-metro prefill carries {c['share_of_class']:.1%} of its goodput over {len(links)} links "
            f"(${wan:,.0f}/h of WAN; {c['columns']:,} columns offered)"
            if links
            else f"  - {name}: cross-metro prefill offered on {c['columns']:,} columns, none taken: serving it whole is cheaper"
        )
    return lines


def _hit_text(c: dict[str, Any]) -> str:
    """``; prefix hits 54 % (fixed 50 %), worth $1.234/M`` for a class with the cache model."""
    cache = c.get("kv_cache")
    if cache is None or c.get("prefix_hit_rate") is None:
        return ""
    value = cache["value_usd_per_million_goodput_tokens"]
    worth = f", worth ${value:.3f}/M" if value is not None else ", without which the node cannot meet its TTFT"
    fixed = c.get("prefix_hit_rate_fixed_arrangement")
    return (
        f"; prefix hits {c['prefix_hit_rate']:.1%} ({cache['tier']} tier"
        + (f"; fixed {fixed:.0%})" if fixed is not None else ")")
        + worth
    )


def _budget_text(c: dict[str, Any]) -> str:
    """``; node TTFT budgets 170 ms 93.0 %, 136 ms 7.0 %`` for a class that runs more than one."""
    shares = c.get("node_ttft_budget_shares") or {}
    if len(shares) < 2:
        return ""
    return "; node TTFT budgets " + ", ".join(f"{b} ms {v:.1%}" for b, v in shares.items())


def with_arrangement(
    loaded: LoadedScenario,
    plan: Plan,
    *,
    progress: Callable[[str], None] = lambda _: None,
    waterfall: Waterfall | None = None,
    fixed: FixedArrangement | None = None,
) -> Plan:
    """The plan with its arrangement compared (``summary.json`` ``arrangement``, the notes) and the sites' mode columns."""
    arrangement = compare_arrangement(loaded, plan, progress=progress, waterfall=waterfall, fixed=fixed)
    return plan.with_results(
        sites=site_columns(plan), notes=[*plan.notes, *arrangement_lines(arrangement)], arrangement=arrangement
    )
