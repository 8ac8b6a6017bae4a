"""The optimum beside simple arrangements of the same hardware and demand: the ``compare`` command's rows.

The optimal plan of a scenario, then each baseline of :mod:`placement.analyses.baselines` (nearest-metro, cheapest-power,
single-region) on the same instance; :mod:`placement.outputs.compare` writes and shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placement.analyses.arrangement import fixed_arrangement
from placement.analyses.baselines import all_baselines
from placement.instance.build import build_instance
from placement.plan.record import Plan
from placement.plan.solve import run, solve_instance
from placement.scenario.load import LoadedScenario

__all__ = ["compare_placements", "optimal_row"]


def optimal_row(plan: Plan, name: str = "optimal") -> dict[str, Any]:
    """The optimal plan's figures, with the same keys as :meth:`placement.analyses.baselines.Baseline.as_dict`."""
    s = plan.summary
    return {
        "placement": name,
        "cost_per_million_goodput_tokens_usd": s.cost_per_million_goodput_tokens_usd,
        "served_share": 1.0 - s.unserved_share,
        "tokens_per_s_per_mw": s.tokens_per_s_per_mw,
        "mw_used": s.mw_used,
        "cost_usd_per_h": s.objective_usd_per_h,
        "goodput_tok_s": s.goodput_tok_s,
        "sites_open": s.sites_open,
    }


def compare_placements(loaded: LoadedScenario, *, progress: Callable[[str], None] = lambda _: None) -> list[dict[str, Any]]:
    """Solve a scenario and evaluate the baselines on the same instance.

    Parameters
    ----------
    loaded : LoadedScenario
        The scenario.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    list of dict
        ``optimal``, ``nearest-metro``, ``cheapest-power``, ``single-region``, each with
        ``cost_per_million_goodput_tokens_usd``, ``served_share``, ``tokens_per_s_per_mw``,
        ``mw_used``, ``cost_usd_per_h``, ``goodput_tok_s``, ``sites_open``; a scenario with arrangement
        options on (:meth:`placement.scenario.sections.ServingSection.arrangement_options`) adds ``optimal, fixed arrangement``:
        the same world solved with aggregated serving and no speculation.
    """
    instance = build_instance(loaded, progress=progress)
    plan = solve_instance(instance, progress=progress)
    rows = [optimal_row(plan)]
    if loaded.scenario.serving.arrangement_options():
        progress("solving the same world with the fixed arrangement")
        rows.append(optimal_row(run(fixed_arrangement(loaded)), "optimal, fixed arrangement"))
    return [*rows, *(b.as_dict() for b in all_baselines(instance))]
