"""N+1 in the build-out: spares worked out by hand on small worlds, carried into later years, within power and caps."""

from __future__ import annotations

import itertools
import json
import runpy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from placement._errors import SolverError
from placement.buildout.evaluate import plan_costs, violations
from placement.buildout.solve import checked
from placement.cli import main
from placement.optimize.buildout.caps import cap_use_per_year
from placement.optimize.buildout.input import BuildoutInput, NPlusOne, YearCap
from placement.optimize.buildout.solve import solve_buildout
from placement.optimize.buildout.spares import capacity_in_part, part_ratio, spare_nodes_bought, with_spares, without_spares
from tests.buildout.test_cli import ROOT, _write
from tests.buildout.test_model import EXACT, H, instance


def protected(data: BuildoutInput, *domains: list[int]) -> BuildoutInput:
    """The arrays with N+1 against any one site and each of ``domains``."""
    arrays = tuple(np.asarray(d, dtype=np.int64) for d in domains)
    return replace(data, n_plus_one=NPlusOne(arrays, tuple(f"d{k}" for k in range(len(domains)))))


def site_nodes(plan_nodes: np.ndarray) -> list[list[int]]:
    """``(M, Y)`` nodes in service per site and year, of the first scenario, summed over accelerators."""
    return np.rint(plan_nodes[..., 0].sum(axis=1)).astype(int).tolist()


def test_spares_are_bought_year_by_year_and_carried_until_they_retire() -> None:
    # Site 0 (10 $/h open) serves the one row: 100, 200, 200 tok/s = 1, 2, 2 nodes of 100 tok/s. Losing it moves all
    # of it to site 1 (20 $/h open), which then needs 1, 2, 2 nodes. A node serves two years: the spare bought in the
    # first year retires in the third, so one is bought in each year (1 + 1, then 1 to replace the first).
    data = replace(instance([100, 200, 200], mw=[[5, 5, 5], [5, 5, 5]], fixed=[10, 20]), life_years=2)
    plain = solve_buildout(data, EXACT)
    assert site_nodes(plain.nodes) == [[1, 2, 2], [0, 0, 0]]
    plan = solve_buildout(protected(data), EXACT)
    assert violations(data, plan) == []
    assert site_nodes(plan.nodes) == [[1, 2, 2], [1, 2, 2]]
    assert np.rint(spare_nodes_bought(plan)[1, 0, :, 0]).tolist() == [1, 1, 1]
    assert plan.first.open[1].tolist() == [True, True, True]
    # What the spares cost by hand, per year: site 1 open (20) + its MW (1 $/h each) + each node's running (1) and
    # annuity (1): 20 + 1 + 2 = 23, then 20 + 2 + 4 = 26 twice.
    added = plan_costs(data, plan).year_usd_per_h[:, 0] - plan_costs(data, without_spares(plan)).year_usd_per_h[:, 0]
    assert added.tolist() == pytest.approx([23.0, 26.0, 26.0])
    assert plan_costs(data, plan).expected_npv_usd - plan_costs(data, plain).expected_npv_usd == pytest.approx(75.0 * H)


def test_a_site_opened_for_a_spare_keeps_a_node_after_the_spare_retires() -> None:
    # Nodes serve one year. The first year's spare opens site 1; the second year has no demand, so no loss to cover,
    # but a site once open stays open and runs a node: one is bought there.
    data = protected(replace(instance([100, 0], mw=[[5, 5], [5, 5]], fixed=[10, 20]), life_years=1))
    plan = solve_buildout(data, EXACT)
    assert violations(data, plan) == []
    assert site_nodes(plan.nodes) == [[1, 1], [1, 1]]


def test_each_year_re_routes_the_whole_loss_onto_the_spare() -> None:
    data = protected(instance([100, 200], mw=[[5, 5], [5, 5]], fixed=[10, 20]))
    plan = solve_buildout(data, EXACT)
    assert plan.protection is not None
    for y in range(2):
        year = plan.protection.years[(y, 0)]
        assert sorted(year.failover_share) == [0]  # site 0 serves; site 1 serves nothing to lose
        moved = year.failover_share[0]
        assert moved[data.pair_site[year.pairs] == 1].sum() == pytest.approx(1.0)  # the whole row moves to site 1
        assert year.nodes.tolist() == [y + 1, y + 1]


def test_a_fault_domain_moves_the_spare_out_of_the_domain() -> None:
    # Three sites, 10, 15 and 20 $/h open; site 0 serves. Against single losses the spare goes to site 1, the cheaper
    # standby; with sites 0 and 1 one fault domain, their loss can only move to site 2, whose spare then covers the
    # loss of site 0 as well: one spare node, at site 2.
    data = instance([100, 100], mw=[[5, 5], [5, 5], [5, 5]], fixed=[10, 15, 20])
    single = solve_buildout(protected(data), EXACT)
    assert site_nodes(single.nodes) == [[1, 1], [1, 1], [0, 0]]
    domain = solve_buildout(protected(data, [0, 1]), EXACT)
    assert site_nodes(domain.nodes) == [[1, 1], [0, 0], [1, 1]]
    assert domain.protection is not None
    assert sorted(domain.protection.years[(0, 0)].failover_share) == [0, 3]  # site 0, and domain 0 (key 3 = M + 0)
    assert violations(data, domain) == []


def test_a_spare_goes_only_where_a_part_that_serves_the_class_may_be_bought() -> None:
    # Two parts: part 0 serves the class (100 tok/s a node), part 1 cannot. Site 1 (15 $/h) is the cheaper standby, but
    # there part 0 is barred: its capacity cannot take the lost load, so the spare goes to site 2 (20 $/h).
    data = protected(instance([100, 100], mw=[[5, 5], [5, 5], [5, 5]], fixed=[10, 15, 20], goodput=[100.0, 0.0]))
    free = solve_buildout(data, EXACT)
    assert site_nodes(free.nodes) == [[1, 1], [1, 1], [0, 0]]
    barred = np.zeros((3, 2, 2), dtype=bool)
    barred[1, 0] = True
    plan = solve_buildout(replace(data, barred=barred), EXACT)
    assert violations(replace(data, barred=barred), plan) == []
    assert site_nodes(plan.nodes) == [[1, 1], [0, 0], [1, 1]]
    assert np.rint(spare_nodes_bought(plan)[2, 0, 0, 0]) == 1


def test_without_n_plus_one_the_plan_is_unchanged() -> None:
    data = instance([100, 200], mw=[[5, 5], [5, 5]], fixed=[10, 20])
    plan = solve_buildout(data, EXACT)
    assert with_spares(data, plan, EXACT) is plan
    assert plan.protection is None and without_spares(plan) is plan
    assert site_nodes(plan.nodes) == [[1, 2], [0, 0]]
    assert not spare_nodes_bought(plan).any()


def test_a_row_with_one_site_in_reach_gets_no_spare() -> None:
    data = protected(instance([100, 100], mw=[[5, 5], [5, 5]], fixed=[10, 20], allowed=[0]))
    plan = solve_buildout(data, EXACT)
    assert site_nodes(plan.nodes) == [[1, 1], [0, 0]]
    assert plan.protection is not None and plan.protection.years[(0, 0)].failover_share == {}


def test_spares_stay_within_the_power_of_every_later_year() -> None:
    # Site 1 has power for 2 nodes; site 0 serves 100 then 200 tok/s. The spare needs 1 then 2 nodes at site 1: it fits.
    # With 1 MW at site 1 the second year's loss cannot be re-routed: a clear error, not a plan that draws past power.
    data = protected(instance([100, 200], mw=[[5, 5], [2, 2]], fixed=[10, 20]))
    plan = solve_buildout(data, EXACT)
    assert site_nodes(plan.nodes) == [[1, 2], [1, 2]]
    assert violations(data, plan) == []
    tight = protected(instance([100, 200], mw=[[5, 5], [1, 1]], fixed=[10, 20]))
    with pytest.raises(SolverError, match="N\\+1 in year 2"):
        solve_buildout(tight, EXACT)


def test_the_spares_idle_draw_counts_against_a_cap() -> None:
    # Site 0 is clean and serves; the spare can only go to site 1, whose grid emits 0.001 t/MWh. The spare node idles at
    # 0.5 MW all year: 0.5 * 8760 * 0.001 = 4.38 t a year, within a cap of 5 t, over one of 4 t (the plan is refused).
    base = replace(
        instance([100, 100], mw=[[5, 5], [5, 5]], fixed=[10, 20]),
        node_idle_mw=np.full((2, 1), 0.5),
        node_load_mw=np.full((2, 1), 0.5),
    )

    def capped(limit_t: float) -> BuildoutInput:
        return protected(replace(base, caps=(YearCap("carbon", "tCO2e", np.array([0.0, 0.001]), limit_t),)))

    data = capped(5.0)
    plan = checked(data, solve_buildout(data, EXACT), "N+1 under a cap")
    assert cap_use_per_year(data, plan, data.caps[0])[:, 0].tolist() == pytest.approx([4.38, 4.38])
    over = capped(4.0)
    with pytest.raises(SolverError, match="carbon cap"):
        checked(over, solve_buildout(over, EXACT), "N+1 under a cap")


def test_when_the_spares_break_a_cap_the_buildout_is_solved_again_below_it() -> None:
    # Both sites count at 0.001 t/MWh. Serving the 100 tok/s takes a node at site 0 (0.5 MW idle + 0.5 MW load) and
    # its spare a node at site 1 (0.5 MW idle): 1.5 MW * 8760 h * 0.001 = 13.14 t a year. Under a cap of 20 t that is
    # the plan; under 12 t the spares' idle draw breaks it, and the build-out is solved again with the cap held lower
    # (continuous nodes, rounded up): less is served, every node it keeps is still protected, and the cap holds.
    base = replace(
        instance([100], mw=[[5], [5]], fixed=[10, 20]),
        integer_nodes=False,
        power_margin_mw=np.ones(2),
        node_idle_mw=np.full((2, 1), 0.5),
        node_load_mw=np.full((2, 1), 0.5),
    )

    def capped(limit_t: float) -> BuildoutInput:
        return protected(replace(base, caps=(YearCap("carbon", "tCO2e", np.array([0.001, 0.001]), limit_t),)))

    loose = capped(20.0)
    plan = checked(loose, solve_buildout(loose, EXACT), "N+1 under a loose cap")
    assert cap_use_per_year(loose, plan, loose.caps[0])[0, 0] == pytest.approx(13.14)
    assert plan.unserved_share.max() == pytest.approx(0.0, abs=1e-9)
    tight = capped(12.0)
    plan = checked(tight, solve_buildout(tight, EXACT), "N+1 under a tight cap")
    assert cap_use_per_year(tight, plan, tight.caps[0])[0, 0] <= 12.0
    assert 0.0 < 1.0 - plan.unserved_share[0, 0, 0] < 1.0
    assert site_nodes(plan.nodes) == [[1], [1]]
    assert plan.protection is not None and sorted(plan.protection.years[(0, 0)].failover_share) == [0]


def test_a_site_running_two_parts_counts_the_other_at_its_least_goodput_ratio() -> None:
    # Part 1 serves class 0 twice as fast as part 0 but class 1 at half the speed: a node of part 1 is worth at least
    # half a node of part 0 whatever the mix, and a node of part 0 at least half a node of part 1.
    goodput = np.array([[100.0, 200.0], [100.0, 50.0]])
    assert part_ratio(goodput, 0).tolist() == [1.0, 0.5]
    assert part_ratio(goodput, 1).tolist() == [0.5, 1.0]
    data = replace(
        instance([100], mw=[[5]], fixed=[10], goodput=[100.0, 200.0]),
        goodput_tok_s=goodput,
        row_class=np.zeros(1, dtype=np.int64),
    )
    nodes = np.array([[4.0, 2.0]])
    assert capacity_in_part(data, nodes, np.array([0]), 0, 0).tolist() == [5.0]
    assert capacity_in_part(data, nodes, np.array([1]), 0, 0).tolist() == [4.0]


@pytest.mark.slow
def test_a_written_buildout_with_fault_domains_passes_the_failover_check_in_every_year(tmp_path: Path) -> None:
    # The small European build-out (two futures, H100 in 2027 then B200, an installed fleet) with N+1 against any
    # site and any grid region: each year's folder carries the single-year failover files and passes their check.
    path = _write(tmp_path, {"regret": False})
    raw = yaml.safe_load(path.read_text())
    raw["fault_tolerance"] = {"n_plus_one": True, "domains": "grid_region"}
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--no-maps", "--quiet"]) == 0
    check = runpy.run_path(str(ROOT / "scripts" / "check_failover.py"))["check"]
    years = sorted(p for p in (out / "years").iterdir())
    assert [p.name for p in years] == ["2027", "2028", "2029"]
    for year in years:
        assert check(year) == [], year.name
        scenarios = pd.read_csv(year / "failover_scenarios.csv")
        assert {"site", "domain"} <= set(scenarios["failed_kind"])
    summary = json.loads((out / "summary.json").read_text())
    added = summary["n_plus_one"]
    regions = set(pd.read_csv(ROOT / "data" / "sites" / "world_metros.csv")["grid_region"].dropna())
    assert "DE-national" in added["fault_domains"] and set(added["fault_domains"]) <= regions  # batch reaches every site
    bought = [y["spare_nodes_bought"] for y in added["years"]]
    # Nodes serve four years: over a three-year horizon every spare bought is still in service.
    assert [y["spare_nodes_in_service"] for y in added["years"]] == list(itertools.accumulate(bought))
    assert bought[0] > 0 and all(y["added_usd_per_h"] > 0 for y in added["years"])
    assert added["expected_npv_added_usd"] > 0
    assert any("N+1" in note for note in summary["notes"])
    report = (out / "report.md").read_text()
    assert "## N+1 (low demand)" in report and f"| 2027 | {bought[0]:,} |" in report
    for year, figures in zip(years, added["years"], strict=True):  # each year's summary.json has the single-year keys
        own = json.loads((year / "summary.json").read_text())
        assert own["n_plus_one"] and own["spare_nodes"] == figures["spare_nodes_in_service"]
        shares = own["n_plus_one_protected_share"] + own["unprotectable_share"] + own["n_plus_one_unprotected_share"]
        assert shares == pytest.approx(1.0) and own["n_plus_one_protected_share"] > 0.5
