"""Re-routing a fixed plan's load off failed sites: tiny instances worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.reroute import reroute_on_capacity
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus

OPTIONS = SolverOptions()


def _instance(
    demand: list[list[float]], pairs: list[tuple[int, int]], *, npt: list[float], rtt: list[float], m: int
) -> PlacementInput:
    c, s = zip(*pairs, strict=True)
    slices = len(demand[0])
    return PlacementInput(
        slice_demand_tok_s=np.array(demand, dtype=float),
        slice_hours=np.full(slices, 24.0 / slices),
        pair_commodity=np.array(c, dtype=np.int64),
        pair_site=np.array(s, dtype=np.int64),
        pair_nodes_per_tok_s=np.array(npt, dtype=float),
        pair_rtt_ms=np.array(rtt, dtype=float),
        pair_cost_usd_per_h=np.zeros(len(pairs)),
        site_fixed_usd_per_h=np.zeros(m),
        site_node_usd_per_h=np.ones(m),
        site_node_mw=np.full(m, 0.01),
        site_mw_available=np.full(m, 10.0),
        site_locked=np.zeros(m, dtype=bool),
    )


def _plan(is_open: list[bool], nodes: list[int], shares: list[float]) -> PlacementSolution:
    report = SolverReport("hand", SolveStatus.OPTIMAL, 0.0, 0.0, 0.0, 0.0, "")
    return PlacementSolution(
        np.array(is_open), np.array(nodes, dtype=np.int64), np.array(shares, dtype=float), np.zeros(1), 0.0, report
    )


def test_everything_fits_and_moves_to_the_spare_site() -> None:
    # One commodity, 100 tok/s in slice 0 and 50 in slice 1, all at site 0; site 1 has 10 nodes, 0.1 node/tok/s.
    data = _instance([[100.0, 50.0]], [(0, 0), (0, 1)], npt=[0.1, 0.1], rtt=[10.0, 20.0], m=2)
    result = reroute_on_capacity(data, _plan([True, True], [10, 10], [1.0, 0.0]), np.array([0]), options=OPTIONS)
    np.testing.assert_allclose(result.lost_tok_s, [[100.0, 50.0]])
    np.testing.assert_allclose(result.moved_between(0, 1), [100.0, 50.0], rtol=1e-7)
    np.testing.assert_allclose(result.unserved_tok_s, 0.0, atol=1e-6)
    np.testing.assert_allclose(result.site_load_nodes[1], [10.0, 5.0], rtol=1e-7)
    assert result.site_nodes.tolist() == [0, 10]


def test_short_capacity_leaves_part_unserved_after_the_site_own_load() -> None:
    # Site 1 carries its own commodity 1 at 40 tok/s x 0.1 = 4 nodes of its 10: 6 nodes left = 60 tok/s of the 100.
    data = _instance([[100.0], [40.0]], [(0, 0), (0, 1), (1, 1)], npt=[0.1, 0.1, 0.1], rtt=[5.0, 9.0, 3.0], m=2)
    result = reroute_on_capacity(data, _plan([True, True], [10, 10], [1.0, 0.0, 1.0]), np.array([0]), options=OPTIONS)
    np.testing.assert_allclose(result.moved_between(0, 1)[0], 60.0, rtol=1e-7)
    np.testing.assert_allclose(result.unserved_tok_s[:, 0], [40.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(result.site_load_nodes[1, 0], 10.0, rtol=1e-7)
    np.testing.assert_allclose(result.lost_tok_s.sum(), result.move_tok_s.sum() + result.unserved_tok_s.sum())


def test_goodput_first_then_the_nearer_site() -> None:
    # Site 0 fails (80 tok/s of commodity 0). Sites 1 (RTT 50) and 2 (RTT 10) have room for 50 each:
    # 80 moves in all, 50 of it to the nearer site 2, 30 to site 1.
    data = _instance([[80.0]], [(0, 0), (0, 1), (0, 2)], npt=[0.1, 0.1, 0.1], rtt=[1.0, 50.0, 10.0], m=3)
    result = reroute_on_capacity(data, _plan([True, True, True], [8, 5, 5], [1.0, 0.0, 0.0]), np.array([0]), options=OPTIONS)
    np.testing.assert_allclose([result.moved_between(0, j)[0] for j in range(3)], [0.0, 30.0, 50.0], atol=1e-6)
    np.testing.assert_allclose(result.unserved_tok_s, 0.0, atol=1e-6)


def test_goodput_is_never_traded_for_latency() -> None:
    # Two commodities lost at site 0; site 1 (near for both) has room for 50 tok/s, site 2 (far) is allowed only
    # for commodity 1. The most goodput moved is 100: commodity 1 must use the far site, however near site 1 is.
    data = _instance(
        [[50.0], [50.0]],
        [(0, 0), (1, 0), (0, 1), (1, 1), (1, 2)],
        npt=[0.1] * 5,
        rtt=[1.0, 1.0, 2.0, 2.0, 500.0],
        m=3,
    )
    plan = _plan([True, True, True], [10, 5, 5], [1.0, 1.0, 0.0, 0.0, 0.0])
    result = reroute_on_capacity(data, plan, np.array([0]), options=OPTIONS)
    np.testing.assert_allclose(
        [[result.moved_between(c, j)[0] for j in range(3)] for c in range(2)], [[0.0, 50.0, 0.0], [0.0, 0.0, 50.0]], atol=1e-6
    )
    np.testing.assert_allclose(result.unserved_tok_s, 0.0, atol=1e-6)


def test_closed_sites_take_nothing_and_disallowed_pairs_are_not_used() -> None:
    # Site 1 is closed; site 2 is open but commodity 0 may not go there: all of it is unserved.
    data = _instance([[30.0], [1.0]], [(0, 0), (0, 1), (1, 2)], npt=[0.1] * 3, rtt=[1.0, 1.0, 1.0], m=3)
    result = reroute_on_capacity(data, _plan([True, False, True], [5, 0, 5], [1.0, 0.0, 1.0]), np.array([0]), options=OPTIONS)
    np.testing.assert_allclose(result.move_tok_s, 0.0)
    np.testing.assert_allclose(result.unserved_tok_s[:, 0], [30.0, 0.0])


def test_an_empty_failure_moves_nothing() -> None:
    data = _instance([[100.0]], [(0, 0), (0, 1)], npt=[0.1, 0.1], rtt=[1.0, 2.0], m=2)
    plan = _plan([True, True], [10, 10], [0.5, 0.5])
    result = reroute_on_capacity(data, plan, np.zeros(0, dtype=np.int64), options=OPTIONS)
    assert result.lost_tok_s.sum() == 0.0 and result.move_tok_s.sum() == 0.0 and result.unserved_tok_s.sum() == 0.0
    np.testing.assert_allclose(result.site_load_nodes[:, 0], [5.0, 5.0])


def test_a_failed_index_outside_the_instance_is_refused() -> None:
    data = _instance([[1.0]], [(0, 0)], npt=[0.1], rtt=[1.0], m=1)
    with pytest.raises(ValueError, match=r"0\.\.0, got \[3\]"):
        reroute_on_capacity(data, _plan([True], [1], [1.0]), np.array([3]), options=OPTIONS)
