"""What a results folder holds, as the writers read it: a plan's tables, summary, notes and failover tables.

:class:`PlanResults` carries no model: the writers, the maps and the reports take it and never the
:class:`placement.plan.record.Plan` that made it, so nothing they read reaches into the scenario or
the instance. :class:`FailoverTables` are an N+1 plan's three failover tables; the rules block of a
plan's notes opens with :data:`RULES_HEADER` (:func:`split_rules` lifts it out for the reports).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from placement.results.summary import ArrangementSummary, PlanSummary, RulePrice

ROW_DIGITS = 7
"""Significant digits of ``failover.csv``'s figures (millions of rows at full resolution)."""

ROW_COLUMNS = [
    "failed", "failed_kind", "population_id", "population", "country_code", "class", "slice", "serving_site_id",
    "prefill_site_id", "goodput_tok_s", "moved_tok_s", "demand_tok_s", "protected", "ttft_p99_ms", "ttft_objective_ms",
]  # fmt: skip
SITE_COLUMNS = ["failed", "failed_kind", "site_id", "slice", "moved_in_tok_s", "nodes_needed", "nodes"]
SCENARIO_COLUMNS = [
    "failed", "failed_kind", "site_ids", "served_tok_s", "moved_tok_s", "unprotected_tok_s", "populations_moved", "to_sites",
]  # fmt: skip

RULES_HEADER = "Rules that shaped the plan:"
"""The note that opens the rules block (:func:`placement.plan.notes.rule_notes`); reports lift that block into its own section."""


def no_failover_rows() -> Iterator[pd.DataFrame]:
    """``row_chunks`` of failover tables without rows (read back from a folder, or sent to another process: it pickles)."""
    return iter(())


@dataclass(frozen=True)
class FailoverTables:
    """The three failover tables of an N+1 plan (columns in :mod:`placement.plan.failover` and :mod:`placement.outputs.columns`).

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


@dataclass(frozen=True, kw_only=True)
class PlanResults:
    """A solved plan's results as its folder holds them: tables, figures, notes, no model.

    Parameters
    ----------
    scenario : str
        The solved scenario's ``name``.
    scenario_path : Path
        The solved scenario's file (``summary.json``'s ``scenario_path``; copied as ``scenario.yaml``).
    sites : pandas.DataFrame
        Every candidate site with its decision and figures (``sites.csv``).
    assignments : pandas.DataFrame
        One row per (population, class, site) with goodput, RTT, TTFT and its components (``assignments.csv``).
    populations : pandas.DataFrame
        Every population with served and unserved goodput (``populations.csv``).
    members : pandas.DataFrame
        The cities inside each population (``population_index`` into ``populations``, ``name``, ``lon``, ``lat``,
        ...): ``population_members.csv`` and the catchments.
    summary : PlanSummary
        Headline figures; ``summary.json`` is its JSON form.
    notes : list of str
        Diagnoses the user should read (unreachable populations, shortfalls, time limits, the rules block).
    failover : FailoverTables or None
        What each loss moves where (N+1 plans): ``failover*.csv``.
    rule_prices : pandas.DataFrame or None
        What each residency rule costs, per continent (``solve --price-rules``): ``rule_prices.csv``.
    rule_price_headlines : list of RulePrice or None
        The same per rule, whole plan: ``summary.json``'s ``rule_prices``.
    arrangement : ArrangementSummary or None
        The plan against the fixed arrangement: ``summary.json``'s ``arrangement``.
    adequacy : pandas.DataFrame or None
        Per outage source, what it costs the plan (``fault_tolerance.adequacy``): ``adequacy.csv``; the figures are
        ``summary.json``'s ``adequacy``.
    """

    scenario: str
    scenario_path: Path
    sites: pd.DataFrame
    assignments: pd.DataFrame
    populations: pd.DataFrame
    members: pd.DataFrame
    summary: PlanSummary
    notes: list[str] = field(default_factory=list)
    failover: FailoverTables | None = None
    rule_prices: pd.DataFrame | None = None
    rule_price_headlines: list[RulePrice] | None = None
    arrangement: ArrangementSummary | None = None
    adequacy: pd.DataFrame | None = None


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
