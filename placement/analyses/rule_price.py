"""What each rule of a scenario costs: the plan re-solved without it, continent by continent.

For each rule of :func:`placement.analyses.rule_binds.scenario_rules`, the scenario is solved again with that rule
alone dropped (the others kept), and the two plans are compared: $/M goodput, $/h, MW, sites, unserved
share, and per continent of the sites the MW, $/h and goodput they serve. One solve per rule: about as
long as the plan itself each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from placement.analyses.rule_binds import scenario_rules
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.results.record import RULES_HEADER
from placement.results.summary import RulePrice
from placement.scenario.load import LoadedScenario


def _by_continent(plan: Plan) -> pd.DataFrame:
    """Per continent of the sites: MW used, $/h and goodput served (open sites)."""
    sites = plan.sites[plan.sites["open"]]
    grouped = sites.groupby(sites["continent"].fillna("").astype(str), sort=True)
    return grouped[["mw_used", "cost_usd_per_h", "goodput_tok_s"]].sum()


def _usd_per_m(cost_usd_per_h: float, goodput_tok_s: float) -> float | None:
    return cost_usd_per_h / (goodput_tok_s * 3600.0) * 1e6 if goodput_tok_s > 0 else None


def _totals(plan: Plan) -> dict[str, float]:
    """The whole plan's figures, named as :func:`_by_continent`'s columns."""
    s = plan.summary
    return {"mw_used": s.mw_used, "cost_usd_per_h": s.objective_usd_per_h, "goodput_tok_s": s.goodput_tok_s}


def _row(rule_id: str, region: str, with_rule: Mapping[Any, Any], without: Mapping[Any, Any]) -> dict[str, Any]:
    """One row of ``rule_prices.csv``: a region's figures with the rule and without it."""
    row: dict[str, Any] = {"rule_id": rule_id, "region": region}
    for side, figures in (("with", with_rule), ("without", without)):
        row[f"usd_per_m_{side}"] = _usd_per_m(float(figures["cost_usd_per_h"]), float(figures["goodput_tok_s"]))
    for name, column in (("cost_usd_per_h", "cost_usd_per_h"), ("mw", "mw_used"), ("goodput_tok_s", "goodput_tok_s")):
        row[f"{name}_with"], row[f"{name}_without"] = float(with_rule[column]), float(without[column])
    return row


def price_rules(
    loaded: LoadedScenario, plan: Plan, *, progress: Callable[[str], None] = lambda _: None
) -> tuple[pd.DataFrame, list[RulePrice]]:
    """Re-solve without each rule in turn: the table (per rule and continent) and a headline per rule.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario the plan was solved from.
    plan : Plan
        The plan with every rule.
    progress : callable, optional
        Receives a line per re-solve.

    Returns
    -------
    tuple
        ``rule_prices.csv``'s table (``rule_id, region`` (``all`` or a continent), ``usd_per_m_with``,
        ``usd_per_m_without``, ``cost_usd_per_h_with``/``_without``, ``mw_with``/``_without``,
        ``goodput_tok_s_with``/``_without``) and, per rule, its :class:`~placement.results.summary.RulePrice`.
    """
    rows: list[dict[str, Any]] = []
    headlines: list[RulePrice] = []
    with_rules = _by_continent(plan)
    for rule in scenario_rules(plan.instance):
        progress(f"pricing rule {rule.rule_id}: solving without it")
        free = run(LoadedScenario(scenario=rule.dropped_from(loaded.scenario), path=loaded.path))
        a, b = plan.summary, free.summary
        headlines.append(
            RulePrice(
                rule_id=rule.rule_id,
                text=rule.text,
                usd_per_m_with=a.cost_per_million_goodput_tokens_usd,
                usd_per_m_without=b.cost_per_million_goodput_tokens_usd,
                mw_with=a.mw_used,
                mw_without=b.mw_used,
                sites_open_with=a.sites_open,
                sites_open_without=b.sites_open,
                unserved_share_with=a.unserved_share,
                unserved_share_without=b.unserved_share,
            )
        )
        rows.append(_row(rule.rule_id, "all", _totals(plan), _totals(free)))
        without = _by_continent(free)
        for region in sorted(set(with_rules.index) | set(without.index)):
            w = with_rules.loc[region] if region in with_rules.index else pd.Series(0.0, index=with_rules.columns)
            o = without.loc[region] if region in without.index else pd.Series(0.0, index=without.columns)
            rows.append(_row(rule.rule_id, region or "unknown", w.to_dict(), o.to_dict()))
    return pd.DataFrame(rows), headlines


def price_lines(headlines: Sequence[RulePrice]) -> list[str]:
    """One line per rule for the plan's rules block: what the plan pays for it."""
    lines = []
    for h in headlines:
        with_m, without_m = h.usd_per_m_with, h.usd_per_m_without
        if with_m is None or without_m is None:
            cost = "no goodput served with or without it"
        else:
            cost = f"${with_m:.3f}/M goodput with it, ${without_m:.3f}/M without ({(with_m / without_m - 1):+.1%})"
        lines.append(
            f"price of {h.rule_id}: {cost}; {h.mw_with:,.1f} MW against {h.mw_without:,.1f}, "
            f"{h.sites_open_with} sites against {h.sites_open_without}, unserved {h.unserved_share_with:.2%} "
            f"against {h.unserved_share_without:.2%} (rule_prices.csv: per continent)"
        )
    return lines


def with_price_lines(notes: list[str], lines: list[str]) -> list[str]:
    """The plan's notes with the price lines appended to its rules block (the block opened when there is none)."""
    if not lines:
        return list(notes)
    priced = [f"  - {line}" for line in lines]
    if RULES_HEADER not in notes:
        return [*notes, RULES_HEADER, *priced]
    at = notes.index(RULES_HEADER) + 1
    while at < len(notes) and notes[at].startswith("  - "):
        at += 1
    return [*notes[:at], *priced, *notes[at:]]
