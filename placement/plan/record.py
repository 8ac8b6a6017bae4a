"""The plan record: what a solve decided, the instance it was solved on and the results its folder holds.

The writers take the plan's :class:`placement.results.record.PlanResults` (tables, summary, notes, failover
tables), never the plan: what they read cannot reach into the scenario or the instance. The analyses,
which re-solve or re-route, take the plan with its instance.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.results.record import FailoverTables, PlanResults
from placement.results.summary import ArrangementSummary, PlanSummary, RulePrice
from placement.scenario.classes import WorkloadClass
from placement.scenario.sections import ResidencySection, ServingSection


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A verified siting plan: the instance solved, the solver's answer and the results users read.

    Parameters
    ----------
    instance : Instance
        What was solved.
    solution : PlacementSolution
        The solver's answer (verified).
    results : PlanResults
        The tables, summary, notes and failover tables (what the results folder holds); the properties
        below read them.
    """

    instance: Instance
    solution: PlacementSolution
    results: PlanResults

    def with_results(self, **changes: Any) -> Plan:
        """The same plan with some of its results replaced (``notes=...``, ``summary=...``)."""
        return replace(self, results=replace(self.results, **changes))

    @property
    def sites(self) -> pd.DataFrame:
        """Every candidate site with its decision and figures (``sites.csv``)."""
        return self.results.sites

    @property
    def assignments(self) -> pd.DataFrame:
        """One row per (population, class, site) (``assignments.csv``)."""
        return self.results.assignments

    @property
    def populations(self) -> pd.DataFrame:
        """Every population with served and unserved goodput (``populations.csv``)."""
        return self.results.populations

    @property
    def summary(self) -> PlanSummary:
        """Headline figures (``summary.json``)."""
        return self.results.summary

    @property
    def notes(self) -> list[str]:
        """Diagnoses the user should read."""
        return self.results.notes

    @property
    def failover(self) -> FailoverTables | None:
        """What each loss moves where (N+1 plans)."""
        return self.results.failover

    @property
    def rule_prices(self) -> pd.DataFrame | None:
        """What each residency rule costs, per continent (``solve --price-rules``)."""
        return self.results.rule_prices

    @property
    def rule_price_headlines(self) -> list[RulePrice] | None:
        """What each residency rule costs, whole plan."""
        return self.results.rule_price_headlines

    @property
    def arrangement(self) -> ArrangementSummary | None:
        """The plan against the fixed arrangement."""
        return self.results.arrangement

    @property
    def scenario_name(self) -> str:
        """The solved scenario's ``name``."""
        return self.results.scenario

    @property
    def scenario_path(self) -> Path:
        """The solved scenario's file (``summary.json``'s ``scenario_path``; copied as ``scenario.yaml``)."""
        return self.results.scenario_path

    @property
    def classes(self) -> list[WorkloadClass]:
        """The workload classes, in the order of the instance's class indices."""
        return self.instance.classes

    @property
    def serving(self) -> ServingSection:
        """The scenario's ``serving`` section: the node the classes were planned on."""
        return self.instance.facts.serving

    @property
    def rtt_quantile(self) -> str:
        """The round trip the TTFT budgets used (``latency.quantile``: ``p50`` or ``p90``)."""
        return self.instance.facts.quantile

    @property
    def residency(self) -> ResidencySection:
        """The scenario's ``residency`` section: where each population's traffic may be served."""
        return self.instance.facts.residency
