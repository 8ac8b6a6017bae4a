"""N+1 with cross-metro prefill: the loss of a prefill site loses the pairs that prefill there, and they move.

One hand-worked instance, solved by the exact N+1 MILP and by the large-model protection (its MILP and its
one-loss-at-a-time path), and the checks that catch a prefill site's loss left unmoved or moved onto a pair that
still needs the failed site.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placement.optimize import protect
from placement.optimize.failover import failover_variable_count
from placement.optimize.priced import solve_priced
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.protect import losses, protect_plan
from placement.optimize.solve import solve_placement
from placement.optimize.solver import SolverOptions, SolveStatus
from placement.optimize.verify import verify_solution
from tests.optimize.test_model import make_input
from tests.optimize.test_remote_pairs import with_remote

OPTIONS = SolverOptions(name="highs", gap=1e-9)

D, P, B, D2 = 0, 1, 2, 3
"""Decode site D, prefill site P, ordinary backup B, and a second decode site D2 that also prefills at P."""


def prefill_world(*, fault_tolerant: bool = True) -> PlacementInput:
    """One commodity, 10,000 tok/s in one slice; $10 to open a site ($15 for D2), 0.01 MW a node, 1 MW (100 nodes).

    Pairs: 0 = served whole at B (1e-4 node per tok/s: one node), $5 an hour of load; 1 = decode at D, prefill at P
    (0.5e-4 at each: half a node each), $1; 2 = decode at D2, prefill at P, the same, $1. Nodes cost $10 at D, P
    and D2, $40 at B.
    """
    base = make_input([10_000], [(0, B)], 1e-4, [10, 10, 10, 15], [10, 10, 40, 10], [0.01] * 4, [1.0] * 4,
                      fault_tolerant=fault_tolerant)  # fmt: skip
    base = replace(base, pair_cost_usd_per_h=np.array([5.0]))
    return with_remote(base, [(0, D, P, 0.5e-4, 0.5e-4, 1.0), (0, D2, P, 0.5e-4, 0.5e-4, 1.0)])


def test_the_loss_of_a_prefill_site_moves_its_decode_sites_traffic_to_the_backup() -> None:
    """By hand.

    Without N+1 the cross-metro pair is cheapest: D and P open with one node each (half a node rounded up),
    $10 + $10 + $10 + $10 + $1 of load = $41.

    With N+1 every loss must be covered. Were the loss of P not a loss of the pairs prefilling there, D and D2 would
    cover each other through P: three sites of one node, $20 + $20 + $25 + $1 = $66. But P's loss takes both cross-metro pairs,
    so the commodity needs an ordinary pair on a surviving site: B, one node, $10 + $40 = $50. Then D's loss moves
    to B too (its node is idle), and D2 stays closed. Cost: D $20 + P $20 + B $50 + $1 of load = $91. Serving at
    B (with D and P as standby) costs $90 + $5 = $95, so the cross-metro pair keeps the share: $91.
    """
    without = solve_placement(prefill_world(fault_tolerant=False), OPTIONS)
    assert without.objective_usd_per_h == pytest.approx(41.0)
    assert without.pair_share.tolist() == pytest.approx([0.0, 1.0, 0.0], abs=1e-6)
    data = prefill_world()
    assert failover_variable_count(data) == 4 * 2  # the commodity loads 4 sites (B, D, P, D2), 2 other pairs each
    solution = solve_placement(data, OPTIONS)
    assert solution.report.status == SolveStatus.OPTIMAL
    assert solution.objective_usd_per_h == pytest.approx(91.0)
    assert solution.open.tolist() == [True, True, True, False]
    assert solution.nodes.tolist() == [1, 1, 1, 0]
    assert solution.pair_share.tolist() == pytest.approx([0.0, 1.0, 0.0], abs=1e-6)
    assert solution.failover_share[P].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)  # P lost: all to B
    assert solution.failover_share[D].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
    assert verify_solution(data, solution) == []


def freed_pool_world() -> PlacementInput:
    """Sites D1, D2, P, B; 20,000 tok/s; pairs whole at D1, D2, B and cross-metro D1 and D2 with prefill at P."""
    base = make_input([20_000], [(0, 0), (0, 1), (0, 3)], 1e-4, [10] * 4, [10, 10, 10, 40], [0.01] * 4,
                      [0.01, 0.01, 1.0, 1.0], fault_tolerant=True)  # fmt: skip
    base = replace(base, pair_cost_usd_per_h=np.array([5.0, 5.0, 5.0]))
    return with_remote(base, [(0, 0, 2, 0.5e-4, 0.5e-4, 1.0), (0, 1, 2, 0.5e-4, 0.5e-4, 1.0)])


def test_a_lost_prefill_pool_frees_its_decode_pool_for_the_moved_share() -> None:
    """By hand: during P's loss the decode pools of the pairs it took are free, and the moved share may use them.

    20,000 tok/s. D1 and D2 have power for one node each ($10 a node, $10 to open), P and B plenty ($10 and $40 a
    node). Pairs: 0, 1 = served whole at D1, D2 (1e-4 a tok/s: 2 nodes for all of it), $5; 2 = whole at B, $5;
    3, 4 = decode at D1, D2 and prefill at P (0.5e-4 at each: one node for all of it at each), $1.

    Half the demand on each cross-metro pair: D1, D2 and P carry 0.5, 0.5 and 1 node, one node each. D1's loss
    moves its half to D2 through P (D2 1 node; P gives up half a node and takes it back: 1). P's loss takes both
    halves: each moves to its own decode site served whole (half the demand is one node there, in the node its
    decode pool no longer uses). $20 x 3 + $1 = $61; two sites cannot survive every loss, and B costs $50.
    Were the freed decode pools still counted during P's loss, D1 and D2 could take only half the demand between
    them, and B would be needed.
    """
    data = freed_pool_world()
    solution = _exact(data)
    assert solution.objective_usd_per_h == pytest.approx(61.0)
    assert solution.open.tolist() == [True, True, True, False]
    assert solution.nodes.tolist() == [1, 1, 1, 0]
    assert solution.pair_share.tolist() == pytest.approx([0.0, 0.0, 0.0, 0.5, 0.5], abs=1e-6)
    assert solution.failover_share[2].tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0, 0.0], abs=1e-6)
    # D1 and D2 during P's loss: what moves in (1 node each) on what they keep (nothing); were the lost decode
    # pools still loaded there, 1.5 nodes each
    shares, moved = solution.pair_share, solution.failover_share[2]
    kept = np.where(data.pairs_touching(np.array([2])), 0.0, shares)
    assert (data.site_slice_load(kept) + data.site_slice_load(moved))[:2, 0] == pytest.approx([1.0, 1.0])
    assert (data.site_slice_load(shares) + data.site_slice_load(moved))[:2, 0] == pytest.approx([1.5, 1.5])


def _exact(data: PlacementInput) -> PlacementSolution:
    solution = solve_placement(data, OPTIONS)
    assert verify_solution(data, solution) == []
    return solution


def test_the_checks_reject_a_prefill_sites_loss_left_unmoved_or_moved_through_it() -> None:
    data = prefill_world()
    good = _exact(data)
    unmoved = replace(good, failover_share={k: v for k, v in good.failover_share.items() if k != P})
    assert any("failure of site 1 leaves demand without a backup" in p for p in verify_solution(data, unmoved))
    # onto the other decode site, whose pair still prefills at the failed P (D2 opened with a node to take it)
    through_p = replace(
        good, open=np.array([True, True, True, True]), nodes=np.array([1, 1, 1, 1]),
        failover_share={**good.failover_share, P: np.array([0.0, 0.0, 1.0])},
    )  # fmt: skip
    assert any("failure of site 1 re-routes demand to closed or failed sites" in p for p in verify_solution(data, through_p))
    # to B without the node to carry it
    short = replace(good, nodes=np.array([1, 1, 0, 0]))
    assert any("failure of site 1 overloads" in p for p in verify_solution(data, short))


def test_without_coverage_of_the_prefill_loss_the_cheaper_plan_is_rejected() -> None:
    """The $66 plan that only survives decode-site losses (D and D2 covering each other through P) fails the checks."""
    data = prefill_world()
    report = replace(_exact(data).report, objective=66.0)
    shares = np.array([0.0, 1.0, 0.0])
    plan = PlacementSolution(
        np.array([True, True, False, True]), np.array([1, 1, 0, 1]), shares, np.zeros(1), 66.0, report,
        failover_share={D: np.array([0.0, 0.0, 1.0])},
    )  # fmt: skip
    problems = verify_solution(data, plan)
    assert problems == ["failure of site 1 leaves demand without a backup"]


def _base(data: PlacementInput) -> PlacementSolution:
    base = solve_priced(replace(data, fault_tolerant=False), OPTIONS, shortfall=True, route_nearest=False, all_pairs=True)
    assert base.report.status.has_solution
    return base


@pytest.mark.parametrize("one_at_a_time", [False, True])
def test_protection_covers_the_loss_of_a_prefill_site(monkeypatch: pytest.MonkeyPatch, one_at_a_time: bool) -> None:
    """The large-model path reaches the same $91: B bought for P's loss, and D's loss moved there too.

    One loss at a time: P's loss can only go to B (one node, $40.10 a node-equivalent with B's opening spread over
    its 100 nodes); D's alone would go to D2 (half a node there, P's spare half node free), but sized again on the
    node P's loss bought at B, it moves there at no cost, and D2 stays closed.
    """
    data = prefill_world()
    base = _base(data)
    assert base.objective_usd_per_h == pytest.approx(41.0)
    found = {loss.key: loss for loss in losses(data, base.pair_share)}
    assert sorted(found) == [D, P]
    assert found[P].backup.tolist() == [0]  # pair 2 prefills at P too: no backup for P's loss
    assert found[D].backup.tolist() == [0, 2]
    if one_at_a_time:
        monkeypatch.setattr(protect, "MILP_MAX_COLUMNS", 0)
    solution = protect_plan(data, base, OPTIONS)
    assert ("one loss at a time" in solution.report.message) is one_at_a_time
    assert not solution.n_plus_one_dropped
    assert verify_solution(data, solution, optional=True) == []
    assert solution.objective_usd_per_h == pytest.approx(91.0)
    assert solution.nodes.tolist() == [1, 1, 1, 0]
    assert solution.failover_share[P].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
    assert solution.failover_share[D].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)


def test_a_fault_domain_holding_the_prefill_site_loses_the_pairs_prefilling_there() -> None:
    """Domain {P, D2}: its loss takes both cross-metro pairs (as P's loss does); the plan and its cost are the same."""
    data = replace(prefill_world(), failure_domains=(np.array([P, D2]),))
    solution = _exact(data)
    assert solution.objective_usd_per_h == pytest.approx(91.0)
    domain = data.n_sites
    assert solution.failover_share[domain].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
    unmoved = replace(solution, failover_share={k: v for k, v in solution.failover_share.items() if k != domain})
    assert any("failure of domain 0 leaves demand without a backup" in p for p in verify_solution(data, unmoved))


def test_the_spare_capacity_relaxation_refuses_cross_metro_pairs() -> None:
    from placement.optimize.model import build_model

    with pytest.raises(ValueError, match="not written for cross-metro pairs"):
        build_model(prefill_world(), failover_rows="spare")
    assert build_model(prefill_world(), failover_rows="exact").blocks.failover  # the exact rows are written


@pytest.mark.parametrize("one_at_a_time", [False, True])
def test_protection_moves_a_lost_prefill_share_into_the_decode_pool_it_frees(
    monkeypatch: pytest.MonkeyPatch, one_at_a_time: bool
) -> None:
    """By hand, on :func:`freed_pool_world`: the plan without N+1 serves all on D1 with prefill at P, $41.

    Protected on that pair: P's loss moves half the demand into D1's node served whole (the node its decode pool
    no longer uses) and half to D2 served whole (one node, $20); D1's loss moves everything to D2 with prefill at P
    (D2's node, and P's node, which P's own lost share no longer uses). $61, the exact optimum. Were the lost
    pools still counted, D1 could take nothing during P's loss, and B ($50) would be needed.
    """
    data = freed_pool_world()
    base = _base(data)
    assert base.objective_usd_per_h == pytest.approx(41.0)  # on D1 or on D2 (the same): D1, as below
    base = replace(base, open=np.array([True, False, True, False]), nodes=np.array([1, 0, 1, 0]),
                   pair_share=np.array([0.0, 0.0, 0.0, 1.0, 0.0]))  # fmt: skip
    if one_at_a_time:
        monkeypatch.setattr(protect, "MILP_MAX_COLUMNS", 0)
    solution = protect_plan(data, base, OPTIONS)
    assert ("one loss at a time" in solution.report.message) is one_at_a_time
    assert verify_solution(data, solution, optional=True) == []
    assert solution.objective_usd_per_h == pytest.approx(61.0)
    assert solution.nodes.tolist() == [1, 1, 1, 0]
    assert solution.failover_share[2].tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0, 0.0], abs=1e-6)
    assert solution.failover_share[0].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0, 1.0], abs=1e-6)
