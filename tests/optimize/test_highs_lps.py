"""The LPs built straight into HiGHS (routing, the fixed-design LP of explain, the priced LP) are the placement
rows of the one linear model: what HiGHS holds is the model's export, and routing's LP is route_to_nearest's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from placement.optimize import pricing, routing, rows
from placement.optimize.heuristics import route_to_nearest
from placement.optimize.linear import LinearModel, new_highs, pulp_values, to_highspy, to_pulp
from placement.optimize.problem import PlacementInput
from placement.optimize.ranging import FixedDesignLP
from placement.optimize.routing import route_nearest_arrays
from placement.optimize.solve import solve_placement
from placement.optimize.solver import SolverOptions


def random_instance(seed: int, *, n: int = 14, m: int = 5, slices: int = 4, power: float = 1.0) -> PlacementInput:
    """Commodities peaking in different slices, 2-4 sites each, round trips and energy costs per pair."""
    rng = np.random.default_rng(seed)
    demand = rng.uniform(2_000, 20_000, (n, 1)) * rng.uniform(0.3, 1.0, (n, slices))
    pairs = sorted({(c, int(j)) for c in range(n) for j in rng.choice(m, size=int(rng.integers(2, 5)), replace=False)})
    return PlacementInput(
        slice_demand_tok_s=demand,
        slice_hours=np.full(slices, 24.0 / slices),
        pair_commodity=np.array([c for c, _ in pairs], dtype=np.int64),
        pair_site=np.array([j for _, j in pairs], dtype=np.int64),
        pair_nodes_per_tok_s=rng.uniform(0.8e-4, 1.2e-4, len(pairs)),
        pair_rtt_ms=rng.uniform(5.0, 90.0, len(pairs)),
        pair_cost_usd_per_h=rng.uniform(0.5, 5.0, len(pairs)),
        site_fixed_usd_per_h=rng.uniform(20, 200, m),
        site_node_usd_per_h=rng.uniform(8, 20, m),
        site_node_mw=np.full(m, 0.01),
        site_mw_available=rng.integers(3, 9, m) * 0.01 * power,
        site_locked=np.zeros(m, dtype=bool),
    )


def _lp_arrays(highs: object) -> list[np.ndarray]:
    """Bounds, costs and every coefficient (sorted by column, then row) of the LP in a HiGHS object."""
    lp = highs.getLp()  # type: ignore[attr-defined]
    matrix = lp.a_matrix_
    start, index = np.asarray(matrix.start_), np.asarray(matrix.index_)
    outer = np.repeat(np.arange(len(start) - 1), np.diff(start))
    rows, cols = (outer, index) if "Rowwise" in str(matrix.format_) else (index, outer)
    order = np.lexsort((rows, cols))
    fields = (lp.col_cost_, lp.col_lower_, lp.col_upper_, lp.row_lower_, lp.row_upper_)
    return [np.asarray(f) for f in fields] + [cols[order], rows[order], np.asarray(matrix.value_)[order]]


def _assert_same_lp(a: object, b: object) -> None:
    for x, y in zip(_lp_arrays(a), _lp_arrays(b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("priced", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_routing_lp_routes_like_route_to_nearest(seed: int, priced: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    base = random_instance(seed, power=2.0)
    # Energy priced by commodity: moving a share between sites keeps the load cost, so the budget row holds.
    energy = np.random.default_rng(seed).uniform(0.5, 5.0, base.n_commodities)[base.pair_commodity]
    data = PlacementInput(**{**base.__dict__, "pair_cost_usd_per_h": energy})
    options = SolverOptions(name="highs", gap=1e-9)
    blind = solve_placement(PlacementInput(**{**data.__dict__, "pair_rtt_ms": np.zeros(len(data.pair_site))}), options)
    assert blind.report.status.has_solution  # a design placed without regard to round trips
    design = dataclasses.replace(blind, routing_report=None)
    if priced:  # the routing LP by column generation from the pairs in use and each commodity's nearest
        monkeypatch.setattr(routing, "PRICED_FROM_COLUMNS", 0)
    model, report = route_to_nearest(data, design, options, optional=False)
    assert report.status.has_solution
    pulp_shares = np.clip(pulp_values(model.shares), 0.0, 1.0)
    routed = route_nearest_arrays(data, design.open, design.nodes, design.pair_share)
    assert routed is not None
    weight = data.pair_rtt_ms * data.mean_demand_tok_s[data.pair_commodity]
    assert routed @ weight == pytest.approx(pulp_shares @ weight, rel=1e-7)
    assert routed @ weight <= design.pair_share @ weight * (1 + 1e-9)
    assert routed @ weight < design.pair_share @ weight * (1 - 1e-3)  # routing moved shares nearer
    np.testing.assert_allclose(routed, pulp_shares, atol=1e-6)


def test_fixed_design_lp_holds_its_model() -> None:
    data = random_instance(1, power=0.5)  # power short: some demand left unserved
    is_open = np.ones(data.n_sites, dtype=bool)
    is_open[0] = False
    lp = FixedDesignLP(data, is_open, 5.0)
    assert lp.status and lp.unserved_share.any()
    base = lp.cost_usd_per_h() - lp.fixed_usd_per_h
    _assert_same_lp(lp.highs, to_highspy(lp.model.model))
    for j in range(data.n_sites):  # what-ifs restore what they change
        lp.resolve_toggled(j)
        lp.resolve_more_power(j, 0.1)
    _assert_same_lp(lp.highs, to_highspy(lp.model.model))
    fresh = to_highspy(lp.model.model)
    fresh.run()
    assert fresh.getInfo().objective_function_value == pytest.approx(base, rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_priced_lp_holds_its_model_every_round(seed: int) -> None:
    data = PlacementInput(**{**random_instance(seed, power=2.0).__dict__, "min_sites_open": 2})
    start = pricing.initial_pairs(data, 1)
    least, lp = pricing.relax(data, objective="unserved", pairs=start)
    cost, lp = pricing.relax(data, objective="cost", unserved_cap_tok_s=max(least.value, 0.0) + 1e-6, target=0.0, lp=lp)
    assert cost.converged and lp.cap_row >= 0 and (lp.slice_row >= 0).sum() > data.n_sites
    _assert_same_lp(lp.h, to_highspy(lp.model))  # pairs priced in, slices and links cut in: every coefficient sent
    fresh = to_highspy(lp.model, new_highs())
    fresh.run()
    assert fresh.getInfo().objective_function_value == pytest.approx(cost.value, rel=1e-9)


def _rows_by_name(model: LinearModel) -> dict[str, dict[str, float]]:
    problem = to_pulp(model).problem
    return {row.name: {v.name: c for v, c in row.items()} for row in problem.constraints()}


def test_pairs_priced_in_complete_the_demand_and_capacity_rows() -> None:
    data = random_instance(3)
    pc, ps, load = data.pair_commodity, data.pair_site, data.pair_slice_load()
    sites, slices = rows.capacity_slices(ps, load, data.n_sites)
    ones, per_node = np.ones(data.n_commodities), np.ones(data.n_sites)
    full = LinearModel("full")
    nodes = full.add_columns("nodes", [str(j) for j in range(data.n_sites)])
    shares = rows.share_columns(full, pc, ps)
    rows.demand_rows(full, shares.cols, pc, ones)
    rows.capacity_rows(full, shares.cols, ps, load, nodes.cols, per_node, sites, slices)
    grown = LinearModel("grown")
    nodes = grown.add_columns("nodes", [str(j) for j in range(data.n_sites)])
    first = np.arange(len(ps)) % 3 == 0
    shares = rows.share_columns(grown, pc[first], ps[first])
    demand = rows.demand_rows(grown, shares.cols, pc[first], ones)
    capacity = rows.capacity_rows(grown, shares.cols, ps[first], load[first], nodes.cols, per_node, sites, slices)
    later = rows.share_columns(grown, pc[~first], ps[~first])
    rows.extend_demand_rows(demand, later.cols, pc[~first])
    rows.extend_capacity_rows(capacity, sites, slices, later.cols, ps[~first], load[~first])
    assert _rows_by_name(grown) == _rows_by_name(full)


def test_routing_past_the_deadline_keeps_the_design_and_says_so() -> None:
    from placement.optimize.milp import route_on_open_sites

    base = random_instance(1, power=2.0)
    data = PlacementInput(**{**base.__dict__, "pair_cost_usd_per_h": np.ones(len(base.pair_site))})
    blind = solve_placement(PlacementInput(**{**data.__dict__, "pair_rtt_ms": np.zeros(len(data.pair_site))}), SolverOptions())
    design = dataclasses.replace(blind, routing_report=None)
    in_time = route_on_open_sites(data, design, SolverOptions())
    late = route_on_open_sites(data, design, SolverOptions(deadline=0.0))
    assert in_time.routing_report is not None and late.routing_report is None
    np.testing.assert_array_equal(late.pair_share, design.pair_share)
    assert "time limit came before routing" in late.report.message
    assert "routing" not in in_time.report.message
