"""A build-out year's failover tables: what ``failover.csv``, ``failover_sites.csv`` and ``failover_scenarios.csv`` hold.

With N+1 each year of a build-out is protected with the single-year machinery
(:mod:`placement.optimize.buildout.spares`), so each ``years/<year>/`` folder carries the same three files a single-year
N+1 plan writes (:func:`placement.plan.failover.failover_tables`), read off that year's re-routes: ``scripts/check_failover.py``
checks each such folder from its files alone. Nodes in ``failover_sites.csv`` are counted in each site's spare part (a site
running two accelerators counts the other's nodes at the least ratio of their goodput; see
:func:`placement.optimize.buildout.spares.capacity_in_part`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pandas as pd

from placement.buildout.arrays import part_groups
from placement.buildout.solve import StochasticResult
from placement.instance.record import Instance
from placement.optimize.problem import PlacementSolution
from placement.plan.failover import failover_tables
from placement.results.record import FailoverTables


def year_instance(result: StochasticResult, y: int, scenario: int) -> Instance:
    """The build-out's instance as year ``y`` of a scenario: its demand grown, the year's arrays, the build-out's rows."""
    b = result.buildout
    protection = result.plan.protection
    assert protection is not None
    instance = b.instance
    mean = instance.commodity_mean_demand_tok_s
    grown = np.divide(b.commodity_demand_tok_s[:, y, scenario], mean, out=np.zeros_like(mean), where=mean > 0)
    return replace(
        instance,
        inputs=protection.years[(y, scenario)].view,
        row_of_commodity=b.row_of_commodity,
        commodity_slice_demand_tok_s=instance.commodity_slice_demand_tok_s * grown[:, None],
    )


def year_solution(result: StochasticResult, y: int, scenario: int) -> PlacementSolution:
    """Year ``y`` of a scenario as a single-year plan: open sites, nodes in spare parts, routing, each loss's re-routes."""
    plan = result.plan
    protection = plan.protection
    assert protection is not None
    year = protection.years[(y, scenario)]
    return PlacementSolution(
        open=plan.first.open[:, y],
        nodes=year.nodes,
        pair_share=plan.pair_share[year.pairs, y, scenario],
        unserved_share=plan.unserved_share[:, y, scenario],
        objective_usd_per_h=0.0,
        report=plan.report,
        failover_share=year.failover_share,
    )


def year_failover(result: StochasticResult, y: int, scenario: int) -> FailoverTables | None:
    """The failover tables of year ``y`` of a scenario (None: a plan without N+1).

    A site's TTFT is its slowest part's, as the pairs were allowed (``assignments.csv`` does the same): the rows are
    made once per group of sites that may run the same parts, each keeping the rows served in its group.
    """
    if result.plan.protection is None:
        return None
    b = result.buildout
    instance, solution = year_instance(result, y, scenario), year_solution(result, y, scenario)
    tables = failover_tables(instance, solution)
    ids = b.sites["id"].to_numpy()
    groups = [(set(ids[columns].tolist()), b.fleet.worst_profiles(key)) for columns, key in part_groups(b.site_parts)]

    def row_chunks() -> Iterator[pd.DataFrame]:
        for sites, profiles in groups:
            for chunk in failover_tables(replace(instance, profiles=profiles), solution).row_chunks():
                kept = chunk[chunk["serving_site_id"].isin(sites)]
                if len(kept):
                    yield kept

    return FailoverTables(tables.sites, tables.scenarios, row_chunks)
