"""The plan record: what a solve decided, its tables, summary and notes, as the writers and analyses read it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.results.summary import (
    ArrangementSummary,
    PlanSummary,
    RulePrice,
)
from placement.scenario.classes import WorkloadClass
from placement.scenario.sections import ResidencySection, ServingSection

ROW_DIGITS = 7
"""Significant digits of ``failover.csv``'s figures (millions of rows at full resolution)."""


@dataclass(frozen=True)
class FailoverTables:
    """The three failover tables of an N+1 plan (columns in the module docstring and the README).

    Parameters
    ----------
    sites : pandas.DataFrame
        ``failover_sites.csv``.
    scenarios : pandas.DataFrame
        ``failover_scenarios.csv``.
    row_chunks : callable
        ``() -> iterator of DataFrame``: ``failover.csv`` one loss at a time. At full resolution it has millions
        of rows (every protected city, class, hour and serving site of every loss), so it is written as it is
        made, never held whole; :attr:`rows` gathers it for small plans and tests.
    """

    sites: pd.DataFrame
    scenarios: pd.DataFrame
    row_chunks: Callable[[], Iterator[pd.DataFrame]]

    @property
    def rows(self) -> pd.DataFrame:
        """``failover.csv`` as one table."""
        chunks = list(self.row_chunks())
        return pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame(columns=ROW_COLUMNS)


ROW_COLUMNS = [
    "failed", "failed_kind", "population_id", "population", "country_code", "class", "slice", "serving_site_id",
    "goodput_tok_s", "moved_tok_s", "demand_tok_s", "protected", "ttft_p99_ms", "ttft_objective_ms",
]  # fmt: skip
SITE_COLUMNS = ["failed", "failed_kind", "site_id", "slice", "moved_in_tok_s", "nodes_needed", "nodes"]
SCENARIO_COLUMNS = [
    "failed", "failed_kind", "site_ids", "served_tok_s", "moved_tok_s", "unprotected_tok_s", "populations_moved", "to_sites",
]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A verified siting plan and the tables users read.

    Parameters
    ----------
    instance : Instance
        What was solved.
    solution : PlacementSolution
        The solver's answer (verified).
    sites : pandas.DataFrame
        Every candidate site with its decision and figures.
    assignments : pandas.DataFrame
        One row per (population, class, site) with goodput, RTT, TTFT and its components.
    populations : pandas.DataFrame
        Every population with served and unserved goodput.
    summary : PlanSummary
        Headline figures (see :func:`summarise`); ``summary.json`` is its JSON form.
    notes : list of str
        Diagnoses the user should read (unreachable populations, shortfalls, time limits).
    failover : FailoverTables or None
        What each loss moves where (N+1 plans): ``failover*.csv``.
    rule_prices : pandas.DataFrame or None
        What each residency rule costs, per continent (``solve --price-rules``): ``rule_prices.csv``.
    rule_price_headlines : list of RulePrice or None
        The same per rule, whole plan: ``summary.json``'s ``rule_prices``.
    arrangement : ArrangementSummary or None
        The plan against the fixed arrangement (:mod:`placement.analyses.arrangement`): ``summary.json``'s ``arrangement``.

    The writers read what was solved through the properties below, not through the instance's
    scenario.
    """

    instance: Instance
    solution: PlacementSolution
    sites: pd.DataFrame
    assignments: pd.DataFrame
    populations: pd.DataFrame
    summary: PlanSummary
    notes: list[str] = field(default_factory=list)
    failover: FailoverTables | None = None
    rule_prices: pd.DataFrame | None = None
    rule_price_headlines: list[RulePrice] | None = None
    arrangement: ArrangementSummary | None = None

    @property
    def scenario_name(self) -> str:
        """The solved scenario's ``name``."""
        return self.instance.facts.name

    @property
    def scenario_path(self) -> Path:
        """The solved scenario's file (``summary.json``'s ``scenario_path``; copied as ``scenario.yaml``)."""
        return self.instance.facts.path

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


RULES_HEADER = "Rules that shaped the plan:"
"""The note that opens the rules block (:func:`rule_notes`); reports lift that block into its own section."""


def split_rules(notes: list[str]) -> tuple[list[str], list[str]]:
    """The rules block of a plan's notes (without its header) and the other notes.

    Parameters
    ----------
    notes : list of str
        A plan's notes (``summary.json``'s ``notes``).

    Returns
    -------
    tuple of list of str
        ``(rules, others)``; each rule without its ``"  - "`` indent.
    """
    if RULES_HEADER not in notes:
        return [], list(notes)
    start = notes.index(RULES_HEADER)
    end = start + 1
    while end < len(notes) and notes[end].startswith("  - "):
        end += 1
    return [n[4:] for n in notes[start + 1 : end]], [*notes[:start], *notes[end:]]
