"""A plan's expected unserved goodput over a year of outages: ``placement adequacy``.

The reliability engineer's expected unserved energy, in tokens. Every outage source of the plan's open sites
(:mod:`placement.rules.outages`: each site's own forced outages, each fault domain's events) is an independent
alternating process; at any instant a set ``F`` of open sites is down, and the plan re-routes what they served
onto the capacity the others have left, as ``placement failover`` does
(:func:`placement.optimize.reroute.reroute_on_capacity`). What no surviving site can take is unserved:
``U(F)``, per time slice. The expectation uses its hours-weighted daily mean (an outage is equally likely at any
hour); the Monte Carlo integrates the slices over each outage's own hours (the slices are the day's blocks of UTC
hours), so a short outage at the busiest hours weighs more than one at night.

* **Expected unserved goodput** ``sum_F P(F) x U(F)`` a year, and its share of what the plan serves in a year.
  Up to ``exact_max_sources`` sources it is enumerated exactly over the ``2^n`` up/down states (states less
  likely than ``1e-12`` are dropped and bounded: their probability times all the plan serves); beyond, it is the
  Monte Carlo's mean, with its standard error.
* **The year's loss distribution**, from the Monte Carlo (seeded, ``years`` years): each source's events a
  year are Poisson, each starts uniformly in the year and lasts an exponential time of its mean duration (on a
  circular year, so the process is stationary and its mean equals the exact expectation); the sets of sites down
  are swept in time and the year's loss is ``U(F)`` integrated over each stretch with the same sites down. From
  it: the probability a year loses more than ``threshold_share`` of the plan's goodput, and the CVaR at
  ``cvar_level``: the mean loss share of the worst ``1 - cvar_level`` of the years.

``U(F)`` is solved once per distinct set of sites down and cached: most years see the same few single failures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError
from scipy.stats import beta

from placement._errors import InputError, Problem
from placement._types import BoolArray, FloatArray, IntArray
from placement.analyses.explain import rebuild_plan
from placement.analyses.exposure import plan_solution
from placement.economics.cost import HOURS_PER_YEAR, SECONDS_PER_HOUR
from placement.instance.record import Instance
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.reroute import reroute_on_capacity
from placement.optimize.solver import SolverOptions
from placement.rules.outages import OutageSource, outage_sources
from placement.scenario.load import load_scenario
from placement.scenario.sections import FaultToleranceSection, OutagesSection

__all__ = [
    "Adequacy",
    "UnservedRates",
    "adequacy_of_folder",
    "evaluate_adequacy",
    "exact_expectation",
    "plan_sources",
    "sample_year_losses",
    "year_loss_tail",
]

PROBABILITY_FLOOR = 1e-12
"""Exact enumeration drops states less likely than this (their probability is reported and bounds the error)."""
TOP_SETS = 10
"""Failed sets listed by contribution in the figures."""


# ----------------------------------------------------------------------------- what fails


@dataclass(frozen=True)
class PlanSource:
    """An outage source on a plan: the source, and the plan's open sites it takes down.

    Parameters
    ----------
    source : OutageSource
        Its rate, duration and sites.
    open_sites : frozenset of int
        Indices of the plan's open sites among its sites (never empty).
    """

    source: OutageSource
    open_sites: frozenset[int]


def plan_sources(
    sites: pd.DataFrame, is_open: Sequence[bool] | BoolArray, outages: OutagesSection, instance: Instance | None = None
) -> list[PlanSource]:
    """The outage sources that touch an open site of the plan (the others lose nothing).

    Parameters
    ----------
    sites : pandas.DataFrame
        The site catalog (``id`` and the outage columns).
    is_open : sequence of bool
        Per site, open in the plan.
    outages : OutagesSection
        ``fault_tolerance.outages``.
    instance : Instance, optional
        Its ``fault_domains`` add the scenario's listed domains.

    Returns
    -------
    list of PlanSource
    """
    index = {str(s): k for k, s in enumerate(sites["id"].astype(str))}
    opened = np.asarray(is_open, dtype=bool)
    listed = instance.fault_domains if instance is not None else None
    found = []
    for source in outage_sources(sites, outages, listed):
        members = frozenset(index[s] for s in source.site_ids if s in index and opened[index[s]])
        if members:
            found.append(PlanSource(source, members))
    return found


# ----------------------------------------------------------------------------- unserved per set of sites down


class UnservedRates:
    """``U(F)``: the goodput a plan leaves unserved while a set of its sites is down, per slice, cached per set.

    Called, it gives the hours-weighted daily mean (the exact expectation's figure); :meth:`over` integrates the
    slice figures over a stretch of the year, the slices being the day's contiguous blocks of UTC hours from
    midnight (:mod:`placement.world.timeslices`), so an outage at the busiest hours loses more than one at night.

    Parameters
    ----------
    data : PlacementInput
        The arrays the plan was solved on.
    solution : PlacementSolution
        The plan (open, nodes, shares).
    options : SolverOptions
        For the re-routing LPs.
    """

    def __init__(self, data: PlacementInput, solution: PlacementSolution, options: SolverOptions) -> None:
        self.data, self.solution, self.options = data, solution, options
        self.hours = np.asarray(data.slice_hours, dtype=float)
        self.day_h = float(self.hours.sum())
        self.slice_start_h = np.concatenate([[0.0], np.cumsum(self.hours)[:-1]])
        self.profiles: dict[frozenset[int], FloatArray] = {frozenset(): np.zeros(len(self.hours))}

    @property
    def cache(self) -> dict[frozenset[int], FloatArray]:
        """The sets solved so far (the empty set, all sites up, among them)."""
        return self.profiles

    @property
    def served_tok_s(self) -> float:
        """The plan's daily-mean goodput, all sites up. [tokens/s]"""
        data = self.data
        mean = np.asarray(data.slice_demand_tok_s @ self.hours / self.day_h)
        return float(np.asarray(self.solution.pair_share, dtype=float) @ mean[data.pair_commodity])

    def profile(self, failed: frozenset[int]) -> FloatArray:
        """``U(F)`` in each slice. [tokens/s]"""
        if failed not in self.profiles:
            reroute = reroute_on_capacity(
                self.data, self.solution, np.array(sorted(failed), dtype=np.int64), options=self.options
            )
            self.profiles[failed] = np.asarray(reroute.unserved_tok_s.sum(axis=0), dtype=float)
        return self.profiles[failed]

    def __call__(self, failed: frozenset[int]) -> float:
        """``U(F)``, hours-weighted daily mean. [tokens/s]"""
        return float(self.profile(failed) @ self.hours / self.day_h)

    def over(self, failed: frozenset[int], start_h: float, end_h: float) -> float:
        """``U(F)`` integrated from ``start_h`` to ``end_h`` of the year (hour 0: a day's first slice). [tokens/s x h]"""
        rates = self.profile(failed)
        return self._cumulative(rates, end_h) - self._cumulative(rates, start_h)

    def _cumulative(self, rates: FloatArray, time_h: float) -> float:
        days, into_day_h = divmod(time_h, self.day_h)
        partial = np.clip(into_day_h - self.slice_start_h, 0.0, self.hours)
        return float(days * (rates @ self.hours) + rates @ partial)


# ----------------------------------------------------------------------------- exact enumeration


@dataclass(frozen=True)
class ExactExpectation:
    """The exact expectation of ``U``.

    Parameters
    ----------
    unserved_tok_s : float
        ``sum_F P(F) x U(F)`` over the states enumerated. [tokens/s]
    dropped_probability : float
        Probability of the states dropped (each less likely than :data:`PROBABILITY_FLOOR`).
    by_set_tok_s : dict
        Each failed set's ``P(F) x U(F)``. [tokens/s]
    states : int
        States enumerated.
    """

    unserved_tok_s: float
    dropped_probability: float
    by_set_tok_s: dict[frozenset[int], float]
    states: int


def exact_expectation(
    sources: Sequence[PlanSource], unserved: Callable[[frozenset[int]], float], *, floor: float = PROBABILITY_FLOOR
) -> ExactExpectation:
    """Enumerate every up/down state of the sources (depth first, dropping states below ``floor``).

    Parameters
    ----------
    sources : sequence of PlanSource
        Independent sources; source ``i`` is down with probability ``u_i`` (:func:`placement.rules.outages.unavailability`).
    unserved : callable
        ``U(F)`` of a set of sites down. [tokens/s]
    floor : float, optional
        States less likely than this are not enumerated: every state under a branch whose probability so far is
        below it is, so the branch's whole probability is dropped.

    Returns
    -------
    ExactExpectation
    """
    down = [s.source.unavailability for s in sources]
    by_set: dict[frozenset[int], float] = {}
    dropped = 0.0
    states = 0
    stack: list[tuple[int, float, frozenset[int]]] = [(0, 1.0, frozenset())]
    while stack:
        i, probability, failed = stack.pop()
        if probability < floor:
            dropped += probability
            continue
        if i == len(sources):
            states += 1
            if failed:
                by_set[failed] = by_set.get(failed, 0.0) + probability * unserved(failed)
            continue
        stack.append((i + 1, probability * (1.0 - down[i]), failed))
        if down[i] > 0:
            stack.append((i + 1, probability * down[i], failed | sources[i].open_sites))
    return ExactExpectation(sum(by_set.values()), dropped, by_set, states)


# ----------------------------------------------------------------------------- Monte Carlo


@dataclass(frozen=True)
class YearLosses:
    """The Monte Carlo's years.

    Parameters
    ----------
    loss_tok_h : numpy.ndarray
        ``(years,)`` each year's unserved goodput. [tokens/s x h]
    by_set_tok_s : dict
        Each failed set's mean contribution to ``U`` over the years (``U(F)`` integrated while it is down, per
        hour of the years drawn). [tokens/s]
    events : int
        Events drawn in all.
    """

    loss_tok_h: FloatArray
    by_set_tok_s: dict[frozenset[int], float]
    events: int


def _year_intervals(rng: np.random.Generator, counts: IntArray, hours: FloatArray) -> list[tuple[float, float, int]]:
    """One year's outages: ``(start_h, end_h, source)``, on a circular year (an event past its end wraps to its start)."""
    intervals = []
    for i in np.flatnonzero(counts).tolist():
        starts = rng.uniform(0.0, HOURS_PER_YEAR, counts[i])
        lengths = np.minimum(rng.exponential(hours[i], counts[i]), HOURS_PER_YEAR)
        for start, length in zip(starts.tolist(), lengths.tolist(), strict=True):
            end = start + length
            if end <= HOURS_PER_YEAR:
                intervals.append((start, end, i))
            else:
                intervals += [(start, HOURS_PER_YEAR, i), (0.0, end - HOURS_PER_YEAR, i)]
    return intervals


def _sweep(
    intervals: list[tuple[float, float, int]], sources: Sequence[PlanSource], unserved: UnservedRates
) -> tuple[float, dict[frozenset[int], float]]:
    """A year's loss and each failed set's part of it [tokens/s x h], sweeping the year's interval ends in time."""
    edges = sorted([(start, 1, i) for start, _, i in intervals] + [(end, -1, i) for _, end, i in intervals])
    under_way = np.zeros(len(sources), dtype=np.int64)
    loss, by_set = 0.0, dict[frozenset[int], float]()
    at = 0.0
    for time_h, step, i in edges:
        if time_h > at and under_way.any():
            failed = frozenset().union(*(sources[k].open_sites for k in np.flatnonzero(under_way).tolist()))
            lost = unserved.over(failed, at, time_h)
            loss += lost
            by_set[failed] = by_set.get(failed, 0.0) + lost
        at = time_h
        under_way[i] += step
    return loss, by_set


def sample_year_losses(sources: Sequence[PlanSource], unserved: UnservedRates, *, years: int, seed: int) -> YearLosses:
    """Draw ``years`` years of outages and each year's unserved goodput.

    Parameters
    ----------
    sources : sequence of PlanSource
        Independent sources: Poisson events a year, exponential durations.
    unserved : UnservedRates
        ``U(F)`` per slice, integrated over each stretch with the same sites down (time of day included).
    years : int
        Years drawn.
    seed : int
        Seed of the draws (the same seed, sources and plan give the same years).

    Returns
    -------
    YearLosses
    """
    rng = np.random.default_rng(seed)
    rates = np.array([s.source.events_per_year for s in sources], dtype=float)
    hours = np.array([s.source.hours for s in sources], dtype=float)
    losses = np.zeros(years)
    by_set: dict[frozenset[int], float] = {}
    events = 0
    for year in range(years):
        counts = rng.poisson(rates)
        events += int(counts.sum())
        intervals = _year_intervals(rng, counts, hours)
        losses[year], lost_by_set = _sweep(intervals, sources, unserved)
        for failed, lost in lost_by_set.items():
            by_set[failed] = by_set.get(failed, 0.0) + lost / (years * HOURS_PER_YEAR)
    return YearLosses(losses, by_set, events)


# ----------------------------------------------------------------------------- the figures


@dataclass(frozen=True)
class Adequacy:
    """A plan's expected unserved goodput over a year of outages.

    Parameters
    ----------
    figures : dict
        The headline (``summary.json``'s ``adequacy``; ``placement adequacy --json``).
    sources : pandas.DataFrame
        One row per outage source touching an open site (``adequacy.csv``).
    by_set_tok_s : dict
        Each failed set of site indices' contribution to the expected unserved goodput. [tokens/s]
    iterations : list of dict
        The protection rounds of ``max_expected_unserved_share`` (empty without a target).
    """

    figures: dict[str, Any]
    sources: pd.DataFrame
    by_set_tok_s: dict[frozenset[int], float] = field(repr=False)
    iterations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def expected_unserved_share(self) -> float:
        """Expected unserved goodput over what the plan serves, a year."""
        return float(self.figures["expected_unserved_share"])

    def with_iterations(self, iterations: list[dict[str, Any]]) -> Adequacy:
        """The same figures with the protection rounds recorded."""
        figures = {**self.figures, "iterations": iterations} if iterations else self.figures
        return replace(self, figures=figures, iterations=iterations)


def _source_table(
    sources: Sequence[PlanSource], site_ids: Sequence[str], unserved: UnservedRates, served_tok_s: float
) -> pd.DataFrame:
    """Per source: rate, duration, share of the year down, unserved while it alone is down, its contribution.

    The contribution is first order: the source's share of the year down times what its sites' loss leaves unserved
    (``alone_unserved_tokens_per_year``), and ``contribution_share`` is its part of the sum over sources. Overlaps
    of two sources are in the expectation, not in this table (their sets are ``top_failed_sets``).
    """
    rows = []
    for s in sources:
        alone = unserved(s.open_sites)
        u = s.source.unavailability
        rows.append(
            {
                "source": s.source.label,
                "kind": s.source.kind,
                "open_site_ids": ";".join(site_ids[k] for k in sorted(s.open_sites)),
                "events_per_year": s.source.events_per_year,
                "hours": s.source.hours,
                "unavailability": u,
                "unserved_tok_s_when_down": alone,
                "unserved_share_when_down": alone / served_tok_s if served_tok_s > 0 else 0.0,
                "alone_unserved_tokens_per_year": u * alone * HOURS_PER_YEAR * SECONDS_PER_HOUR,
            }
        )
    columns = [
        "source",
        "kind",
        "open_site_ids",
        "events_per_year",
        "hours",
        "unavailability",
        "unserved_tok_s_when_down",
        "unserved_share_when_down",
        "alone_unserved_tokens_per_year",
    ]
    table = pd.DataFrame(rows, columns=columns)
    total = float(table["alone_unserved_tokens_per_year"].sum())
    table["contribution_share"] = table["alone_unserved_tokens_per_year"] / total if total > 0 else 0.0
    return table.sort_values(["alone_unserved_tokens_per_year", "source"], ascending=[False, True]).reset_index(drop=True)


def year_loss_tail(shares: FloatArray, *, threshold: float, level: float) -> dict[str, float]:
    """P(year share > threshold) with its standard error and a 95 % upper bound, the VaR and CVaR at ``level``.

    The upper bound is the Clopper-Pearson one of the years above the threshold: with none of ``n`` years above it,
    ``1 - 0.05^(1/n)`` (about ``3 / n``, the rule of three), so a Monte Carlo that saw none does not claim a zero.
    The VaR is the loss share of the worst ``ceil((1 - level) n)``-th year; the CVaR the mean of those worst years.
    """
    years = len(shares)
    worst = max(1, math.ceil(round((1.0 - level) * years, 9)))  # 1 - 0.95 is 0.05000000000000004
    ordered = np.sort(shares)[::-1]
    above = int((shares > threshold).sum())
    p = above / years
    return {
        "p_year_loss_above_threshold": p,
        "p_year_loss_above_threshold_std_error": math.sqrt(p * (1.0 - p) / years),
        "p_year_loss_above_threshold_upper_95": _upper_95(above, years),
        "var_share": float(ordered[worst - 1]),
        "cvar_share": float(ordered[:worst].mean()),
    }


def _upper_95(successes: int, trials: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound of a proportion: the 0.95 quantile of Beta(k + 1, n - k)."""
    if successes >= trials:
        return 1.0
    return float(beta.ppf(0.95, successes + 1, trials - successes))


def evaluate_adequacy(
    instance: Instance,
    solution: PlacementSolution,
    outages: OutagesSection,
    *,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Adequacy:
    """A plan's expected unserved goodput, year-loss tail and per-source table.

    Parameters
    ----------
    instance : Instance
        What the plan was solved on (its ``sites`` catalog, ``inputs`` arrays, listed fault domains).
    solution : PlacementSolution
        The plan.
    outages : OutagesSection
        Rates and the Monte Carlo's settings (``years``, ``seed``, ``threshold_share``, ``cvar_level``).
    options : SolverOptions, optional
        For the re-routing LPs (default: one thread).
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Adequacy
    """
    sources = plan_sources(instance.sites, solution.open, outages, instance)
    site_ids = [str(s) for s in instance.sites["id"]]
    return evaluate_sources(instance.inputs, solution, sources, site_ids, outages, options=options, progress=progress)


def evaluate_sources(
    data: PlacementInput,
    solution: PlacementSolution,
    sources: Sequence[PlanSource],
    site_ids: Sequence[str],
    outages: OutagesSection,
    *,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Adequacy:
    """:func:`evaluate_adequacy` on the plan's arrays and its outage sources.

    Parameters
    ----------
    data : PlacementInput
        The arrays the plan was solved on.
    solution : PlacementSolution
        The plan.
    sources : sequence of PlanSource
        Its outage sources (:func:`plan_sources`).
    site_ids : sequence of str
        The sites' ids, index order.
    outages : OutagesSection
        The Monte Carlo's settings.
    options : SolverOptions, optional
        For the re-routing LPs.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Adequacy
    """
    unserved = UnservedRates(data, solution, options or SolverOptions())
    served_tok_s = unserved.served_tok_s
    served_tokens = served_tok_s * HOURS_PER_YEAR * SECONDS_PER_HOUR
    progress(f"adequacy: {len(sources)} outage source(s) on {int(np.sum(solution.open))} open site(s)")
    table = _source_table(sources, site_ids, unserved, served_tok_s)
    exact = exact_expectation(sources, unserved) if len(sources) <= outages.exact_max_sources else None
    progress(f"adequacy: {outages.years:,} years drawn (seed {outages.seed})")
    sampled = sample_year_losses(sources, unserved, years=outages.years, seed=outages.seed)
    progress(f"adequacy: {len(unserved.cache) - 1} set(s) of sites down re-routed on the plan's capacity")
    per_year = served_tok_s * HOURS_PER_YEAR
    shares = sampled.loss_tok_h / per_year if per_year > 0 else np.zeros(outages.years)
    mc_mean_share = float(shares.mean())
    mc_error = float(shares.std(ddof=1) / math.sqrt(len(shares))) if len(shares) > 1 else math.nan
    if exact is not None:
        method, expected_tok_s, by_set = "exact", exact.unserved_tok_s, exact.by_set_tok_s
    else:
        method, expected_tok_s, by_set = "monte-carlo", mc_mean_share * served_tok_s, sampled.by_set_tok_s
    expected_share = expected_tok_s / served_tok_s if served_tok_s > 0 else 0.0
    top = sorted(by_set.items(), key=lambda kv: (-kv[1], sorted(kv[0])))[:TOP_SETS]
    figures: dict[str, Any] = {
        "method": method,
        "expected_unserved_tokens_per_year": expected_tok_s * HOURS_PER_YEAR * SECONDS_PER_HOUR,
        "expected_unserved_tok_s": expected_tok_s,
        "expected_unserved_share": expected_share,
        "std_error_share": 0.0 if exact is not None else mc_error,
        "served_tokens_per_year": served_tokens,
        "monte_carlo_share": mc_mean_share,
        "monte_carlo_std_error_share": mc_error,
        "years": outages.years,
        "seed": outages.seed,
        "events_drawn": sampled.events,
        "threshold_share": outages.threshold_share,
        "cvar_level": outages.cvar_level,
        **year_loss_tail(shares, threshold=outages.threshold_share, level=outages.cvar_level),
        "sources": len(sources),
        "states_enumerated": exact.states if exact is not None else None,
        "dropped_probability": exact.dropped_probability if exact is not None else None,
        "error_bound_share": exact.dropped_probability if exact is not None else None,
        "failed_sets_solved": len(unserved.cache) - 1,
        "top_sources": table.head(TOP_SETS)[["source", "alone_unserved_tokens_per_year", "contribution_share"]].to_dict(
            "records"
        ),
        "top_failed_sets": [
            {"site_ids": [site_ids[k] for k in sorted(failed)], "expected_unserved_tok_s": value} for failed, value in top
        ],
    }
    return Adequacy(figures, table, by_set)


OPTIONS = {"years": "--years", "seed": "--seed", "threshold_share": "--threshold"}
"""The command line's options over ``fault_tolerance.outages`` keys."""


def outages_with(outages: OutagesSection, **changes: Any) -> OutagesSection:
    """``fault_tolerance.outages`` with command-line values over it, each checked by the key's own rule.

    Raises
    ------
    InputError
        Every value the key's rule refuses: the option, the rule and the value given.
    """
    given = {k: v for k, v in changes.items() if v is not None}
    if not given:
        return outages
    try:
        return OutagesSection.model_validate({**outages.model_dump(), **given})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else ""
            rule = f"{error['msg']} (got {error.get('input')!r})"
            fix = f"give {OPTIONS.get(key, key)} within the bounds of fault_tolerance.outages.{key}"
            problems.append(Problem("placement adequacy", "", OPTIONS.get(key, key), rule, fix))
        raise InputError(problems) from None


def adequacy_of_folder(
    folder: str | Path,
    *,
    years: int | None = None,
    seed: int | None = None,
    threshold: float | None = None,
    options: SolverOptions | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Adequacy:
    """Evaluate a written plan's adequacy (``placement adequacy RESULTS``).

    Parameters
    ----------
    folder : str or Path
        A results folder written by ``solve`` (not a build-out).
    years, seed, threshold : optional
        Over the scenario's ``fault_tolerance.outages`` ``years``, ``seed`` and ``threshold_share``.
    options : SolverOptions, optional
        For the re-routing LPs.
    progress : callable, optional
        Receives one line per step.

    Returns
    -------
    Adequacy

    Raises
    ------
    PlacementError
        A build-out, or a folder that no longer matches its scenario.
    InputError
        Not a results folder, or a catalog whose outage columns break their rules.
    """
    rebuilt = rebuild_plan(folder, progress=progress, command="adequacy")
    written = rebuilt.results
    section: FaultToleranceSection = load_scenario(written.scenario_path).scenario.fault_tolerance
    outages = outages_with(section.outages, years=years, seed=seed, threshold_share=threshold)
    solution = plan_solution(rebuilt.instance, rebuilt.sites, written.assignments, source=str(folder))
    return evaluate_adequacy(rebuilt.instance, solution, outages, options=options, progress=progress)
