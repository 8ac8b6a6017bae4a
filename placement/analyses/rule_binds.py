"""Which populations and sites each rule of a scenario binds, without solving again.

A scenario's rules are its residency regimes (``residency.regimes``, each on its own), its whole-country
residency rules (``residency.rules``, each, and ``domestic_only_sites``) and the availability rules that move a
site off the scenario's accelerator (each, by its id). A rule binds the pairs inside their TTFT objective (at a
site with power) that it alone bars (an availability rule: the classes the part it leaves cannot serve); of
those, the ones at sites the plan opened are where it shapes the plan. :mod:`placement.analyses.rule_price`
re-solves without each rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from placement.instance.record import Instance
from placement.rules.residency import FREE, CommoditySplit, regime_mask, residency_mask
from placement.scenario.document import Scenario
from placement.scenario.sections import ResidencySection

LISTED = 5
"""Populations and sites named per rule (largest demand first)."""


@dataclass(frozen=True)
class ScenarioRule:
    """One rule of a scenario that can be dropped on its own.

    Parameters
    ----------
    rule_id : str
        A regime's id, ``residency.rules[k]``, ``domestic_only_sites`` or an availability rule's id.
    text : str
        What it says, in words.
    kind : {"regime", "rule", "domestic", "availability"}
        A regime of ``residency.regimes``, an entry of ``residency.rules``, ``domestic_only_sites`` or an
        availability rule (dropped through ``availability.waive``).
    index : int
        Its position: in the instance's regimes, or in ``residency.rules`` (0 for ``domestic``).
    """

    rule_id: str
    text: str
    kind: str
    index: int = 0

    def dropped_from(self, scenario: Scenario) -> Scenario:
        """The scenario with this rule alone dropped."""
        if self.kind == "availability":
            waived = [*scenario.availability.waive, self.rule_id]
            return scenario.model_copy(update={"availability": scenario.availability.model_copy(update={"waive": waived})})
        return scenario.model_copy(update={"residency": self._without(scenario.residency)})

    def _without(self, residency: ResidencySection) -> ResidencySection:
        if self.kind == "domestic":
            return residency.model_copy(update={"domestic_only_sites": []})
        if self.kind == "rule":
            return residency.model_copy(update={"rules": [r for i, r in enumerate(residency.rules) if i != self.index]})
        kept = [r for r in residency.regimes if (r if isinstance(r, str) else r.id) != self.rule_id]
        return residency.model_copy(update={"regimes": kept})


def scenario_rules(instance: Instance) -> list[ScenarioRule]:
    """The rules of a scenario's residency, each droppable on its own."""
    residency = instance.facts.residency
    rules = [ScenarioRule(r.regime_id, r.name, "regime", k) for k, r in enumerate(instance.regimes)]
    rules += [
        ScenarioRule(
            f"residency.rules[{k}]", f"populations in {', '.join(r.populations)} only at sites in {', '.join(r.sites)}", "rule", k
        )
        for k, r in enumerate(residency.rules)
    ]
    if residency.domestic_only_sites:
        rules.append(
            ScenarioRule(
                "domestic_only_sites",
                f"sites in {', '.join(residency.domestic_only_sites)} serve only their own country",
                "domestic",
            )
        )
    parts = instance.site_parts
    if parts is not None:
        accelerator = instance.facts.serving.accelerator
        names = {rule.rule_id: rule.name for rule in instance.facts.availability}
        for rule_id in sorted(set(parts.barred_by) - {""}):
            moved = [j for j, r in enumerate(parts.barred_by) if r == rule_id]
            countries = sorted({str(instance.sites["country_code"].iloc[j]) for j in moved})
            instead = sorted({parts.part[j] or "nothing" for j in moved})
            text = f"{names.get(rule_id, rule_id)}: bars {accelerator} in {', '.join(countries)} (runs {', '.join(instead)})"
            rules.append(ScenarioRule(rule_id, text, "availability"))
    return rules


def rule_mask(instance: Instance, rule: ScenarioRule) -> NDArray[np.bool_]:
    """``(c, m)`` the pairs this rule alone permits (the others not applied)."""
    population_country = instance.populations.table["country_code"].to_numpy(str)
    site_country = instance.sites["country_code"].to_numpy(str)
    residency = instance.facts.residency
    if rule.kind == "availability":  # the pairs of the classes the part the rule leaves cannot serve
        parts, serves = instance.site_parts, instance.part_serves
        assert parts is not None and serves is not None
        moved = np.array([r == rule.rule_id for r in parts.barred_by])
        return np.asarray((serves | ~moved[None, :])[instance.commodity_class], dtype=bool)
    if rule.kind == "regime":
        split = instance.split()
        own = CommoditySplit(split.population, split.workload, np.where(split.regime == rule.index, 0, FREE), split.demand_factor)
        return regime_mask(population_country, site_country, own, [instance.regimes[rule.index]])
    if rule.kind == "domestic":
        only = ResidencySection(groups=residency.groups, domestic_only_sites=residency.domestic_only_sites)
    else:
        only = ResidencySection(groups=residency.groups, rules=[residency.rules[rule.index]])
    return residency_mask(population_country, site_country, only)[instance.commodity_population]


def rule_binds(instance: Instance, is_open: NDArray[np.bool_]) -> list[dict[str, Any]]:
    """Per rule: the pairs inside their objective it bars, and the populations and open sites it keeps apart.

    Parameters
    ----------
    instance : Instance
        The solved instance.
    is_open : numpy.ndarray of bool
        ``(m,)`` the plan's open sites.

    Returns
    -------
    list of dict
        ``rule_id``, ``text``, ``pairs_barred`` (inside the TTFT objective, at a site with power),
        ``populations_barred`` and ``sites_barred`` (counts), and ``binds_at_open_sites``: the largest
        populations barred from an open site inside their objective, each with those sites.
    """
    powered = (instance.sites["mw_available"].to_numpy(float) > 0)[None, :]
    demand = instance.commodity_mean_demand_tok_s
    table = instance.populations.table
    out = []
    for rule in scenario_rules(instance):
        barred = instance.within_budget.dense() & powered & ~rule_mask(instance, rule) & (demand > 0)[:, None]
        at_open = barred & is_open[None, :]
        commodities = np.flatnonzero(at_open.any(axis=1))
        order = commodities[np.argsort(-demand[commodities], kind="stable")][:LISTED]
        named = [
            {
                "population": str(table["name"].iloc[int(instance.commodity_population[c])]),
                "country_code": str(table["country_code"].iloc[int(instance.commodity_population[c])]),
                "class": instance.classes[int(instance.commodity_class[c])].name,
                "demand_tok_s": float(demand[c]),
                "open_sites_barred": [str(s) for s in instance.sites["id"].to_numpy()[at_open[c]]][:LISTED],
            }
            for c in order.tolist()
        ]
        out.append(
            {
                "rule_id": rule.rule_id,
                "text": rule.text,
                "pairs_barred": int(barred.sum()),
                "populations_barred": len(np.unique(instance.commodity_population[barred.any(axis=1)])),
                "sites_barred": int(barred.any(axis=0).sum()),
                "binds_at_open_sites": named,
            }
        )
    return out
