"""Full-resolution solves: the priced LP's bound is a bound of the full model at every round, the answer is
feasible for it and within the bound's gap; the shortfall is served lexicographically; the exact ratio's bound
holds; ``summary.json`` says which model the gap is of.

The full model here is the instance itself (every pair, every slice), solved directly by HiGHS as the reference.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pulp
import pytest

from placement.optimize import pricing
from placement.optimize.model import build_model, set_warm_start
from placement.optimize.priced import solve_priced
from placement.optimize.problem import PlacementInput
from placement.optimize.ratio import solve_ratio
from placement.optimize.solve import solve_placement
from placement.optimize.solver import SolverOptions, SolveStatus, solve_problem
from placement.optimize.verify import verify_solution
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario
from tests.optimize.test_constraints import brute_force_ratio
from tests.optimize.test_model import make_input

EXACT = SolverOptions(name="highs", gap=1e-9)


def random_instance(seed: int, *, n: int = 14, m: int = 5, slices: int = 4, power: float = 1.0) -> PlacementInput:
    """Commodities peaking in different slices, 2-4 sites each, energy costs per pair, power that binds."""
    rng = np.random.default_rng(seed)
    demand = rng.uniform(2_000, 20_000, (n, 1)) * rng.uniform(0.3, 1.0, (n, slices))
    pairs = sorted({(c, int(j)) for c in range(n) for j in rng.choice(m, size=int(rng.integers(2, 5)), replace=False)})
    data = make_input(
        demand,
        pairs,
        rng.uniform(0.8e-4, 1.2e-4, len(pairs)),
        rng.uniform(20, 200, m),
        rng.uniform(8, 20, m),
        [0.01] * m,
        rng.integers(3, 9, m) * 0.01 * power,
    )
    energy = rng.uniform(0.5, 5.0, len(pairs))
    return PlacementInput(**{**data.__dict__, "pair_cost_usd_per_h": energy})


def full_optimum(data: PlacementInput, *, relax_integers: bool = False) -> float:
    """The full model's optimum (every commodity served), by HiGHS on every pair and slice."""
    model = build_model(data)
    if relax_integers:
        for var in model.problem.variables():
            var.cat = pulp.LpContinuous
    report = solve_problem(model.problem, EXACT)
    return report.objective if report.status == SolveStatus.OPTIMAL else math.inf


def least_unserved(data: PlacementInput) -> float:
    """The least unserved mean goodput of any design (MILP on every pair). [tokens/s]"""
    model = build_model(data, served_value_usd_per_tok_s=0.0)
    assert model.unserved is not None
    objective = [(u, float(d)) for u, d in zip(model.unserved, data.mean_demand_tok_s.tolist(), strict=True)]
    model.problem.setObjective(pulp.LpAffineExpression(objective))
    return solve_problem(model.problem, EXACT).objective


@pytest.mark.parametrize("seed", range(6))
def test_every_rounds_bound_is_a_bound_of_the_full_model(seed: int) -> None:
    data = random_instance(seed)
    optimum, lp_optimum = full_optimum(data), full_optimum(data, relax_integers=True)
    if not math.isfinite(optimum):
        pytest.skip("power short: covered by the shortfall test")
    start = pricing.initial_pairs(data, 1)  # one pair per commodity: the rest must be priced in
    for rounds in (1, 2, 3, 5):
        relaxation, _ = pricing.relax(data, objective="cost", pairs=start, max_rounds=rounds)
        assert relaxation.bound <= lp_optimum * (1 + 1e-7) + 1e-6
    converged, _ = pricing.relax(data, objective="cost", pairs=start, target=0.0)
    assert converged.converged
    assert converged.bound == pytest.approx(lp_optimum, rel=1e-6)  # the full LP, strong linking rows included
    assert lp_optimum <= optimum * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_priced_solve_is_feasible_and_its_bound_holds(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing, "INITIAL_PAIRS_PER_COMMODITY", 1)
    data = random_instance(seed)
    optimum = full_optimum(data)
    if not math.isfinite(optimum):
        pytest.skip("power short: covered by the shortfall test")
    solution = solve_priced(data, SolverOptions(name="highs", gap=0.01), shortfall=False)
    report = solution.report
    assert verify_solution(data, solution) == []
    assert report.best_bound <= optimum * (1 + 1e-7) + 1e-6  # a bound of the full model, not of the restricted MILP
    assert solution.objective_usd_per_h >= optimum * (1 - 1e-7)
    assert report.gap == pytest.approx((solution.objective_usd_per_h - report.best_bound) / solution.objective_usd_per_h)
    # Proven within the gap only if it is (on a few nodes the LP bound can be percents below integer designs).
    assert (report.status == SolveStatus.OPTIMAL) == (report.gap <= 0.01)
    assert (report.stopped_by.value == "gap") == (report.gap <= 0.01)
    # With every pair in its MILP its bound is the full model's: the gap closes.
    whole = solve_priced(data, SolverOptions(name="highs", gap=0.01), shortfall=False, all_pairs=True)
    assert whole.report.gap <= 0.01 and whole.report.best_bound <= optimum * (1 + 1e-7) + 1e-6


@pytest.mark.parametrize("seed", range(6))
def test_shortfall_serves_the_most_then_bounds_the_cost(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing, "INITIAL_PAIRS_PER_COMMODITY", 1)
    data = random_instance(seed, power=0.3)
    least = least_unserved(data)
    total = float(data.mean_demand_tok_s.sum())
    assert least > 0.01 * total  # the power is short
    assert solve_placement(data, EXACT).report.status == SolveStatus.INFEASIBLE
    assert solve_priced(data, EXACT, shortfall=False).report.status == SolveStatus.INFEASIBLE
    solution = solve_priced(data, SolverOptions(name="highs", gap=0.01), shortfall=True)
    left = float((solution.unserved_share * data.mean_demand_tok_s).sum())
    assert left == pytest.approx(least, rel=1e-6, abs=1e-6 * total)  # nothing left unserved that could be served
    # The least cost among designs serving that much, on every pair:
    reference = build_model(data, served_value_usd_per_tok_s=0.0, min_served_tok_s=total - left * (1 + 1e-9) - 1e-6)
    cheapest = solve_problem(reference.problem, EXACT).objective
    assert solution.report.best_bound <= cheapest * (1 + 1e-7) + 1e-6 <= solution.objective_usd_per_h * (1 + 2e-7) + 1e-6
    assert verify_solution(data, solution, optional=True) == []


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("min_share", [0.0, 0.6])
def test_ratio_bound_is_below_the_brute_force_ratio(seed: int, min_share: float) -> None:
    rng = np.random.default_rng(200 + seed)
    n_pop, m = 4, 3
    pairs = sorted({(c, j) for c in range(n_pop) for j in range(m) if rng.random() < 0.6} | {(c, c % m) for c in range(n_pop)})
    data = make_input(
        rng.uniform(2_000, 15_000, n_pop), pairs, 1e-4, rng.uniform(5, 60, m), rng.uniform(8, 20, m), [0.01] * m,
        rng.integers(1, 4, m) * 0.01,
    )  # fmt: skip
    expected = brute_force_ratio(data, min_share * float(data.mean_demand_tok_s.sum()))
    if not np.isfinite(expected):
        pytest.skip("no design serves the minimum")
    solution = solve_ratio(data, SolverOptions(name="highs", gap=0.005), min_served_share=min_share)
    served = solution.served_mean_tok_s(data)
    ratio = solution.objective_usd_per_h / served
    bounds = [step["ratio_bound_usd_per_tok_s"] for step in solution.iterations]
    assert bounds and all(b <= expected * (1 + 1e-9) for b in bounds)  # valid at every step
    assert solution.report.best_bound / served <= expected * (1 + 1e-9) <= ratio * (1 + 1e-7)
    assert solution.report.gap <= 0.005


def test_dinkelbach_objective_keeps_the_load_energy_cost() -> None:
    data = random_instance(3)
    model = build_model(data, served_value_usd_per_tok_s=0.01)
    shares = np.zeros(len(data.pair_site))
    first = np.unique(data.pair_commodity, return_index=True)[1]
    shares[first] = 1.0
    is_open = np.zeros(data.n_sites, dtype=bool)
    is_open[data.pair_site[first]] = True
    nodes = np.ceil(data.site_slice_load(shares).max(axis=1)).astype(np.int64)
    set_warm_start(model, data, (is_open, nodes, shares))
    served = float((shares * data.mean_demand_tok_s[data.pair_commodity]).sum())
    expected = data.cost_usd_per_h(is_open, nodes, shares) - 0.01 * served
    assert data.pair_cost_usd_per_h[first].sum() > 0
    assert pulp.value(model.problem.objective) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("clusters", "basis"), [(None, "full_resolution"), (2, "aggregated")])
def test_summary_names_the_basis_of_its_gap(tmp_path: Path, clusters: int | None, basis: str) -> None:
    plan = run(load_scenario(write_scenario(tmp_path, demand={"clusters": clusters})))
    assert plan.summary.gap_basis == basis
    assert plan.summary.to_json_dict()["gap_basis"] == basis
    bound = plan.summary.best_bound_usd_per_h
    assert bound is not None and bound <= plan.summary.objective_usd_per_h * (1 + 1e-9)


def test_partial_plan_bounds_its_cost_not_a_penalty(tmp_path: Path) -> None:
    # Too little power for the demand: a partial plan. Its bound is of the cost (it used to be the penalised
    # objective's, three orders of magnitude above the cost).
    path = write_scenario(tmp_path, sites={"mw_multiplier": 0.002}, policy={"unreachable": "report"})
    plan = run(load_scenario(path))
    summary = plan.summary
    assert summary.status == "partial" and summary.unserved_share > 0
    assert summary.best_bound_usd_per_h is not None and summary.gap is not None
    assert summary.best_bound_usd_per_h <= summary.objective_usd_per_h * (1 + 1e-9)
    assert summary.gap == pytest.approx(1 - summary.best_bound_usd_per_h / summary.objective_usd_per_h, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("counts", [{"min_sites_open": 4}, {"max_sites_open": 2}, {"locked": True}])
def test_site_counts_and_locks_keep_the_bound_valid(
    seed: int, counts: dict[str, int | bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pricing, "INITIAL_PAIRS_PER_COMMODITY", 1)
    base = random_instance(seed, power=2.0)
    locked = np.zeros(base.n_sites, dtype=bool)
    if counts.get("locked"):
        locked[int(np.argmax(base.site_fixed_usd_per_h))] = True  # the dearest site, forced open
    data = PlacementInput(**{
        **base.__dict__, "site_locked": locked,
        "min_sites_open": counts.get("min_sites_open"), "max_sites_open": counts.get("max_sites_open"),
    })  # fmt: skip
    optimum, lp_optimum = full_optimum(data), full_optimum(data, relax_integers=True)
    if not math.isfinite(optimum):
        pytest.skip("no design within the site count")
    relaxation, _ = pricing.relax(data, objective="cost", pairs=pricing.initial_pairs(data, 1), target=0.0)
    assert relaxation.bound <= lp_optimum * (1 + 1e-7) + 1e-6
    assert relaxation.bound == pytest.approx(lp_optimum, rel=1e-6)
    solution = solve_priced(data, SolverOptions(name="highs", gap=0.01), shortfall=False)
    if solution.report.status.has_solution:
        assert verify_solution(data, solution) == []
        assert solution.report.best_bound <= optimum * (1 + 1e-7) + 1e-6 <= solution.objective_usd_per_h * (1 + 2e-7) + 1e-6


def test_a_deadline_stops_pricing_after_the_round_it_is_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deadline already past: one round (its LP gets a second), then the rounds stop with that round's figures."""
    import time

    monkeypatch.setattr(pricing, "INITIAL_PAIRS_PER_COMMODITY", 1)
    data = random_instance(1)
    full = full_optimum(data, relax_integers=True)
    lines: list[str] = []
    start = pricing.initial_pairs(data, 1)
    relaxation, _ = pricing.relax(data, objective="unserved", pairs=start, deadline=time.perf_counter(), progress=lines.append)
    assert relaxation.timed_out and not relaxation.converged
    assert relaxation.rounds == 1 and len(relaxation.history) == 1
    assert len(lines) == 1 and lines[0].startswith("LP round 1 (least unserved)") and "bound" in lines[0] and "gap" in lines[0]
    with pytest.raises(TimeoutError, match="time limit stopped pricing"):  # from scratch the least-unserved LP comes first
        pricing.relax(data, objective="cost", pairs=start, deadline=time.perf_counter())
    _, lp = pricing.relax(data, objective="unserved", pairs=start, target=0.0)
    cost, _ = pricing.relax(data, objective="cost", lp=lp, deadline=time.perf_counter())
    assert cost.rounds == 1, "one round, then the deadline (or its bound met its value)"
    assert cost.bound <= full * (1 + 1e-7) + 1e-6, "a round's bound is a bound, however early it stops"


def test_the_time_limit_bounds_the_priced_solve_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setattr(pricing, "INITIAL_PAIRS_PER_COMMODITY", 1)
    data = random_instance(1)
    late = SolverOptions(name="highs", gap=1e-9, deadline=time.perf_counter())
    # every commodity to be served: one round cannot tell whether the pairs priced so far can, so no plan, and why
    none = solve_priced(data, late, shortfall=False)
    assert not none.report.status.has_solution and none.report.stopped_by.value == "time_limit"
    assert "time limit stopped pricing" in none.report.message
    # serving what can be: the plan of the rounds that finished, feasible, with a valid bound and the time limit named
    solution = solve_priced(data, replace(late, deadline=time.perf_counter()), shortfall=True)
    report = solution.report
    assert verify_solution(data, solution, optional=True) == [], "stopped early, the plan still meets every constraint"
    served = float(solution.pair_share @ data.mean_demand_tok_s[data.pair_commodity])
    reference = build_model(data, served_value_usd_per_tok_s=0.0, min_served_tok_s=served * (1 - 1e-9))
    assert report.best_bound <= solve_problem(reference.problem, EXACT).objective * (1 + 1e-7) + 1e-6
    assert report.stopped_by.value == "time_limit" and "stopped LP pricing" in report.message
    on_time = solve_priced(data, SolverOptions(name="highs", gap=1e-9), shortfall=True)
    assert on_time.report.stopped_by.value != "time_limit"


@pytest.mark.parametrize("regional", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_pricing_bounds_hold_under_resource_caps(seed: int, regional: bool) -> None:
    # Each cap row's dual enters every reduced cost and the Lagrangian bound: each round's bound stays below the
    # capped MILP's optimum, and the priced LP ends at the LP relaxation's value (within the MILP's). With a second
    # cap over half the sites (a region: the same coefficients, masked), both duals count.
    from placement.optimize.problem import ResourceCap
    from tests.optimize.test_highs_lps import random_instance

    base = random_instance(seed, power=2.0)
    rng = np.random.default_rng(seed)
    cap = ResourceCap("carbon", "tCO2e", np.zeros(base.n_sites), rng.uniform(0.01, 0.05, base.n_sites),
                      rng.uniform(0.0, 2.0, len(base.pair_site)), 1e30)  # fmt: skip
    free = solve_placement(replace(base, caps=(cap,)), SolverOptions(name="highs", gap=1e-9))
    region = np.zeros(base.n_sites, dtype=bool)
    region[np.flatnonzero(free.open)[::2]] = True  # every other open site
    caps = (cap, replace(cap, name="carbon in the region", sites=region)) if regional else (cap,)
    used = [c.used_per_h(free.open, free.nodes, free.pair_share, base.pair_site) for c in caps]
    assert not regional or 0 < used[1] <= used[0]
    tight = tuple(replace(c, limit_per_h=0.85 * u) for c, u in zip(caps, used, strict=True))
    data = replace(base, caps=tight)
    capped = solve_placement(data, SolverOptions(name="highs", gap=1e-9))
    assert capped.report.status.has_solution
    for c in tight:
        assert c.used_per_h(capped.open, capped.nodes, capped.pair_share, base.pair_site) <= c.limit_per_h * (1 + 1e-6)
    start = pricing.initial_pairs(data, count=1)
    bounds: list[float] = []
    relaxation, _ = pricing.relax(data, objective="cost", pairs=start, progress=lambda line: bounds.append(
        float(line.split("bound ")[1].split(" ")[0].replace(",", ""))))  # fmt: skip
    assert max(bounds) <= capped.objective_usd_per_h * (1 + 1e-9)
    assert relaxation.bound == pytest.approx(relaxation.value, rel=1e-6)
    assert relaxation.value <= capped.objective_usd_per_h * (1 + 1e-9)


@pytest.mark.parametrize("shortfall", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_the_priced_solve_holds_a_cap_its_rounding_breaks(seed: int, shortfall: bool) -> None:
    # A large model's designs are its LP rounded up to whole nodes, which draws more than the LP: under a tight cap
    # the LPs are held below it by what the rounding added. The answer meets the cap itself, and its bound is the
    # LP's at the cap (never above the capped MILP's optimum, at the same service with a shortfall).
    from placement.optimize.problem import ResourceCap
    from tests.optimize.test_highs_lps import random_instance

    base = random_instance(seed, power=2.0 if not shortfall else 0.6)
    rng = np.random.default_rng(seed)
    cap = ResourceCap("carbon", "tCO2e", np.zeros(base.n_sites), rng.uniform(0.5, 1.0, base.n_sites),
                      rng.uniform(0.0, 2.0, len(base.pair_site)), 1e30)  # fmt: skip
    free = solve_priced(replace(base, caps=(cap,)), EXACT, shortfall=shortfall)
    used = cap.used_per_h(free.open, free.nodes, free.pair_share, base.pair_site)
    data = replace(base, caps=(replace(cap, limit_per_h=0.9 * used),))
    lines: list[str] = []
    solution = solve_priced(data, replace(EXACT, gap=1e-4, progress=lines.append), shortfall=shortfall)
    assert verify_solution(data, solution, optional=shortfall) == []
    assert data.caps[0].used_per_h(solution.open, solution.nodes, solution.pair_share, base.pair_site) <= 0.9 * used * (1 + 1e-7)
    served = float(solution.pair_share @ data.mean_demand_tok_s[data.pair_commodity])
    reference = (
        build_model(data, served_value_usd_per_tok_s=0.0, min_served_tok_s=served * (1 - 1e-9))
        if shortfall
        else build_model(data)
    )
    optimum = solve_problem(reference.problem, EXACT).objective
    report = solution.report
    assert report.best_bound <= optimum * (1 + 1e-7) + 1e-6, "the bound is of the model at the cap itself"
    assert report.gap == pytest.approx((report.objective - report.best_bound) / report.objective, abs=1e-9)
    backed_off = any("held below it" in line for line in lines)
    assert backed_off == ("held below the caps" in report.message)
    if backed_off:
        assert any("the LP at the caps themselves" in line for line in lines)
