"""``placement adequacy``: expected unserved goodput over a year of outages, against a 3-site world worked by hand."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InputError
from placement.analyses.adequacy import (
    UnservedRates,
    evaluate_sources,
    exact_expectation,
    plan_sources,
    sample_year_losses,
    year_loss_tail,
)
from placement.analyses.adequacy_protect import protect_to_target
from placement.cli import main
from placement.optimize.problem import PlacementInput, PlacementSolution
from placement.optimize.solver import SolverOptions, SolverReport, SolveStatus
from placement.rules.outages import site_outage_figures
from placement.scenario.load import load_scenario
from placement.scenario.sections import OutagesSection
from placement.world.catalog import load_catalog
from tests.conftest import CATALOG_HEADER, SMALL_CATALOG, nested_mismatch, solved_small, write_scenario

# ----------------------------------------------------------------------------- the hand world
#
# Three sites, one slice, 0.1 node per tok/s everywhere.
#   A: 10 nodes, serves commodity 0 (100 tok/s; allowed at A and B).
#   B:  6 nodes, serves commodity 2 (20 tok/s; allowed at B only): 2 nodes used, 4 spare = 40 tok/s of headroom.
#   C:  6 nodes, serves commodity 1 (60 tok/s; allowed at B and C).
# The plan serves 180 tok/s. Unserved while a set of sites is down, by hand:
#   {}      0
#   {A}     60   commodity 0's 100 lost, B takes 40
#   {B}     20   commodity 2 has no other site
#   {C}     20   commodity 1's 60 lost, B takes 40
#   {A,B}  120   commodity 0's 100 and commodity 2's 20, nowhere to go
#   {A,C}  120   160 lost, B takes 40
#   {B,C}   80   commodity 2's 20 and commodity 1's 60
#   {A,B,C} 180
HAND_UNSERVED = {"": 0.0, "A": 60.0, "B": 20.0, "C": 20.0, "AB": 120.0, "AC": 120.0, "BC": 80.0, "ABC": 180.0}
SERVED = 180.0
# Each site's own outages (catalog columns): events a year and hours each.
RATES = {"A": (2.0, 10.0), "B": (4.0, 30.0), "C": (1.0, 100.0)}


def _hand_world() -> tuple[PlacementInput, PlacementSolution, pd.DataFrame]:
    pairs = [(0, 0), (0, 1), (2, 1), (1, 1), (1, 2)]  # (commodity, site): A=0, B=1, C=2
    data = PlacementInput(
        slice_demand_tok_s=np.array([[100.0], [60.0], [20.0]]),
        slice_hours=np.array([24.0]),
        pair_commodity=np.array([c for c, _ in pairs], dtype=np.int64),
        pair_site=np.array([s for _, s in pairs], dtype=np.int64),
        pair_nodes_per_tok_s=np.full(len(pairs), 0.1),
        pair_rtt_ms=np.array([5.0, 9.0, 4.0, 8.0, 3.0]),
        pair_cost_usd_per_h=np.zeros(len(pairs)),
        site_fixed_usd_per_h=np.zeros(3),
        site_node_usd_per_h=np.ones(3),
        site_node_mw=np.full(3, 0.01),
        site_mw_available=np.full(3, 10.0),
        site_locked=np.zeros(3, dtype=bool),
    )
    report = SolverReport("hand", SolveStatus.OPTIMAL, 0.0, 0.0, 0.0, 0.0, "")
    is_open = np.array([True, True, True])
    is_open.setflags(write=False)  # as a plan read back from its folder
    solution = PlacementSolution(
        is_open,
        np.array([10, 6, 6], dtype=np.int64),
        np.array([1.0, 0.0, 1.0, 0.0, 1.0]),
        np.zeros(3),
        0.0,
        report,
    )
    sites = pd.DataFrame(
        {
            "id": ["A", "B", "C"],
            "outage_events_per_year": [RATES[s][0] for s in "ABC"],
            "outage_hours": [RATES[s][1] for s in "ABC"],
        }
    )
    return data, solution, sites


def _hand_expectation() -> float:
    """``sum_F P(F) U(F)`` over the 8 states, each site down with probability 1 - exp(-events x hours / 8760)."""
    down = {s: 1.0 - math.exp(-e * h / 8760.0) for s, (e, h) in RATES.items()}
    total = 0.0
    for state in itertools.product([False, True], repeat=3):
        failed = "".join(s for s, is_down in zip("ABC", state, strict=True) if is_down)
        probability = math.prod(down[s] if is_down else 1.0 - down[s] for s, is_down in zip("ABC", state, strict=True))
        total += probability * HAND_UNSERVED[failed]
    return total


def test_unserved_per_set_of_sites_down_matches_the_hand_figures() -> None:
    data, solution, _ = _hand_world()
    unserved = UnservedRates(data, solution, SolverOptions())
    assert unserved.served_tok_s == pytest.approx(SERVED)
    for name, value in HAND_UNSERVED.items():
        assert unserved(frozenset("ABC".index(s) for s in name)) == pytest.approx(value, abs=1e-6), name


def test_exact_enumeration_matches_every_outage_combination_worked_by_hand() -> None:
    data, solution, sites = _hand_world()
    sources = plan_sources(sites, solution.open, OutagesSection())
    assert [s.source.label for s in sources] == ["site:A", "site:B", "site:C"]
    exact = exact_expectation(sources, UnservedRates(data, solution, SolverOptions()))
    assert exact.states == 8
    assert exact.dropped_probability == 0.0
    assert exact.unserved_tok_s == pytest.approx(_hand_expectation(), rel=1e-9)
    # ~0.44 tok/s of 180: a share of ~0.24 %
    assert exact.unserved_tok_s / SERVED == pytest.approx(_hand_expectation() / SERVED, rel=1e-9)


def test_monte_carlo_converges_to_the_exact_value_within_its_standard_error() -> None:
    data, solution, sites = _hand_world()
    sources = plan_sources(sites, solution.open, OutagesSection())
    years = sample_year_losses(sources, UnservedRates(data, solution, SolverOptions()), years=4000, seed=7)
    per_year_tok_h = years.loss_tok_h / 8760.0  # mean unserved tok/s over each year
    mean, error = per_year_tok_h.mean(), per_year_tok_h.std(ddof=1) / math.sqrt(len(per_year_tok_h))
    assert error < 0.1 * mean  # the test can tell a wrong mean
    assert abs(mean - _hand_expectation()) < 4 * error
    assert sum(years.by_set_tok_s.values()) == pytest.approx(mean, rel=1e-9)
    again = sample_year_losses(sources, UnservedRates(data, solution, SolverOptions()), years=4000, seed=7)
    np.testing.assert_array_equal(again.loss_tok_h, years.loss_tok_h)  # seeded


def test_site_figures_come_from_the_tier_then_the_scenario_then_the_catalog() -> None:
    sites = pd.DataFrame(
        {"id": ["a", "b", "c", "d"], "tier": ["I", "4", "", "iii"], "outage_hours": [np.nan, np.nan, np.nan, 2.0]}
    )
    events, hours = site_outage_figures(sites, OutagesSection())
    # Tier I: 28.8 h a year as 12 h events; Tier IV: 0.4 h as 4 h events; blank: the scenario's tier (III, 1.6 h)
    np.testing.assert_allclose(events * np.array([12.0, 4.0, 4.0, 1.0]), [28.8, 0.4, 1.6, 0.4])
    np.testing.assert_allclose(hours, [12.0, 4.0, 4.0, 2.0])
    events, hours = site_outage_figures(sites, OutagesSection(site_tier="I", site_events_per_year=1.0))
    np.testing.assert_allclose(events, 1.0)
    np.testing.assert_allclose(hours, [12.0, 4.0, 12.0, 2.0])


def test_bad_outage_columns_in_the_catalog_are_reported_with_row_and_field(tmp_path: Path) -> None:
    header = CATALOG_HEADER.strip() + ",tier,outage_events_per_year,outage_hours\n"
    rows = [line + ",,," for line in SMALL_CATALOG.splitlines()[1:]]
    rows[0] = rows[0][:-3] + ",V,-1,"
    rows[2] = rows[2][:-3] + ",III,2,0"
    path = tmp_path / "catalog.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    with pytest.raises(InputError) as raised:
        load_catalog(path)
    text = str(raised.value)
    assert "row 1 (line 2)" in text and "field 'tier'" in text and "i, ii, iii, iv" in text
    assert "field 'outage_events_per_year'" in text
    assert "row 3 (line 4)" in text and "field 'outage_hours'" in text


def test_bad_outage_keys_in_the_scenario_are_reported_with_their_key(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, fault_tolerance={"outages": {"site_hours": 0, "domain_hours": {"metro": 3}}})
    with pytest.raises(InputError) as raised:
        load_scenario(path)
    text = str(raised.value)
    assert "fault_tolerance.outages.site_hours" in text
    assert "domain_hours" in text and "metro" in text


@pytest.fixture(scope="module")
def small_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return solved_small(tmp_path_factory, "adequacy")


def test_cli_adequacy_json_has_the_expected_unserved_share(small_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adequacy", str(small_folder), "--json", "--years", "500", "--seed", "3"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert 0.0 < figures["expected_unserved_share"] < 1.0
    assert figures["method"] == "exact"  # a few sites: every state enumerated
    assert figures["years"] == 500 and figures["seed"] == 3
    assert figures["cvar_share"] >= figures["var_share"] >= 0.0
    summary = json.loads((small_folder / "summary.json").read_text())
    assert summary["adequacy"]["expected_unserved_share"] == pytest.approx(figures["expected_unserved_share"])
    assert nested_mismatch(summary, "adequacy") == ([], [])  # its keys as the output reference describes them
    table = pd.read_csv(small_folder / "adequacy.csv")
    assert {"source", "events_per_year", "hours", "unserved_tok_s_when_down", "contribution_share"} <= set(table.columns)
    assert "Expected unserved goodput" in (small_folder / "report.md").read_text()
    assert "Expected unserved goodput" in (small_folder / "report.html").read_text()


def test_cli_adequacy_refuses_out_of_range_options(small_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["adequacy", str(small_folder), "--threshold", "2", "--years", "5"]) != 0
    err = capsys.readouterr().err
    assert "--threshold" in err and "--years" in err


def test_a_target_adds_spare_nodes_until_the_expected_unserved_share_meets_it() -> None:
    data, solution, sites = _hand_world()
    sites["outage_events_per_year"] = [2.0, 0.1, 1.0]  # B rarely fails: what it alone serves cannot be protected
    sites["outage_hours"] = [10.0, 4.0, 100.0]
    outages = OutagesSection(years=500)
    sources = plan_sources(sites, solution.open, outages)
    before = evaluate_sources(data, solution, sources, ["A", "B", "C"], outages)
    target = 1e-4
    assert before.expected_unserved_share > 10 * target
    protected = protect_to_target(data, solution, sources, ["A", "B", "C"], outages, target)
    assert protected.met and protected.diagnosis == ""
    assert protected.adequacy.expected_unserved_share <= target
    # By hand: with A down, 60 tok/s more at B (6 nodes); with C down, 20 more (2 nodes); shared: B gets 6.
    assert protected.solution.nodes.tolist() == [10, 12, 6]
    rounds = protected.adequacy.figures["iterations"]
    assert rounds[0]["round"] == 0 and rounds[-1]["added_nodes"] == {"B": 6}


def test_a_target_that_spare_nodes_cannot_meet_is_diagnosed() -> None:
    data, solution, sites = _hand_world()  # B fails often and serves commodity 2, which has no other site
    outages = OutagesSection(years=500)
    sources = plan_sources(sites, solution.open, outages)
    protected = protect_to_target(data, solution, sources, ["A", "B", "C"], outages, 1e-4)
    assert not protected.met
    assert "with B down" in protected.diagnosis and "site:B" in protected.diagnosis


def test_solve_with_a_target_records_the_rounds_and_says_why_it_is_not_met(tmp_path: Path) -> None:
    # The conftest world: the cheapest plan serves New York and Chicago from one site, so no spare node elsewhere can
    # carry them while it is down: the target cannot be met by spare nodes, and the plan says so.
    scenario = write_scenario(tmp_path, policy={"unreachable": "report"}, fault_tolerance={"max_expected_unserved_share": 1e-4})
    assert main(["solve", str(scenario), "--out", str(tmp_path / "out"), "--quiet", "--no-maps"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    adequacy = summary["adequacy"]
    assert adequacy["expected_unserved_share"] > 1e-4
    assert adequacy["iterations"][0]["round"] == 0
    assert any(n.startswith("ADEQUACY TARGET NOT MET") and "New York" in n and "n_plus_one" in n for n in summary["notes"])
    assert (tmp_path / "out" / "adequacy.csv").is_file()


def test_the_source_table_gives_each_source_alone_and_the_figures_the_exact_expectation() -> None:
    data, solution, sites = _hand_world()
    outages = OutagesSection(years=200)
    adequacy = evaluate_sources(data, solution, plan_sources(sites, solution.open, outages), ["A", "B", "C"], outages)
    table = adequacy.sources.set_index("source")
    for site, alone in (("A", 60.0), ("B", 20.0), ("C", 20.0)):
        events, hours = RATES[site]
        down = 1.0 - math.exp(-events * hours / 8760.0)
        assert table.loc[f"site:{site}", "unserved_tok_s_when_down"] == pytest.approx(alone, abs=1e-6)
        assert table.loc[f"site:{site}", "alone_unserved_tokens_per_year"] == pytest.approx(down * alone * 8760 * 3600)
    figures = adequacy.figures
    assert figures["method"] == "exact"
    assert figures["expected_unserved_share"] == pytest.approx(_hand_expectation() / SERVED, rel=1e-9)
    assert figures["expected_unserved_tokens_per_year"] == pytest.approx(_hand_expectation() * 8760 * 3600, rel=1e-9)


def test_a_tail_never_seen_in_the_years_drawn_is_bounded_not_zero() -> None:
    shares = np.linspace(0.0, 1e-4, 2000)  # no year above 0.001; the worst 5 % are the top 100
    tail = year_loss_tail(shares, threshold=1e-3, level=0.95)
    assert tail["p_year_loss_above_threshold"] == 0.0
    assert tail["p_year_loss_above_threshold_upper_95"] == pytest.approx(1.0 - 0.05 ** (1 / 2000))  # ~3 / 2000
    assert tail["var_share"] == pytest.approx(shares[-100])
    assert tail["cvar_share"] == pytest.approx(shares[-100:].mean())


def test_adequacy_refuses_a_buildout_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "buildout", "years": [{"year": 2027}, {"year": 2030}]}))
    assert main(["adequacy", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "build-out" in err and "adequacy" in err


def test_the_monte_carlo_weighs_an_outage_by_the_hours_it_covers() -> None:
    # Two 12 h slices: site A's loss leaves 10 tok/s unserved in the first (00:00-12:00 UTC), 30 in the second.
    data, solution, _ = _hand_world()
    data = replace(
        data, slice_demand_tok_s=np.array([[50.0, 70.0], [60.0, 60.0], [20.0, 20.0]]), slice_hours=np.array([12.0, 12.0])
    )
    unserved = UnservedRates(data, solution, SolverOptions())
    np.testing.assert_allclose(unserved.profile(frozenset({0})), [10.0, 30.0], atol=1e-6)  # B takes 40 of 50 and of 70
    assert unserved(frozenset({0})) == pytest.approx(20.0)  # the daily mean, for the expectation
    # 06:00 on day 0 to 06:00 on day 1: 6 h at 10, 12 h at 30, 6 h at 10
    assert unserved.over(frozenset({0}), 6.0, 30.0) == pytest.approx(6 * 10 + 12 * 30 + 6 * 10)
    assert unserved.over(frozenset({0}), 12.0, 15.0) == pytest.approx(3 * 30)
    # Over many years the outages fall at every hour alike: the mean is still the exact expectation.
    _, _, sites = _hand_world()
    sources = plan_sources(sites, solution.open, OutagesSection())
    exact = exact_expectation(sources, unserved).unserved_tok_s
    years = sample_year_losses(sources, unserved, years=4000, seed=11).loss_tok_h / 8760.0
    assert abs(years.mean() - exact) < 4 * years.std(ddof=1) / math.sqrt(len(years))


def test_solve_with_a_target_tabulates_the_spare_nodes_it_adds_and_their_cost(tmp_path: Path) -> None:
    # Ashburn holds 15 nodes (0.2 MW), Chicago 11 (0.15 MW): the US needs both. With Chicago down, Ashburn's room
    # takes what fits; the plan is tabulated again on the nodes added, which cost their $/h.
    catalog = SMALL_CATALOG.replace("39.04,-77.49,50,", "39.04,-77.49,0.2,").replace("41.88,-87.63,50,", "41.88,-87.63,0.15,")
    plain = write_scenario(tmp_path, catalog=catalog, policy={"unreachable": "report"}, fault_tolerance={"adequacy": True})
    assert main(["solve", str(plain), "--out", str(tmp_path / "plain"), "--quiet", "--no-maps"]) == 0
    target = write_scenario(
        tmp_path, catalog=catalog, policy={"unreachable": "report"}, fault_tolerance={"max_expected_unserved_share": 1e-5}
    )
    assert main(["solve", str(target), "--out", str(tmp_path / "target"), "--quiet", "--no-maps"]) == 0
    before = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert before["adequacy"]["method"] == "exact" and "iterations" not in before["adequacy"]  # adequacy: true alone
    assert "Expected unserved goodput" in (tmp_path / "plain" / "report.md").read_text()
    assert (tmp_path / "plain" / "adequacy.csv").is_file()
    after = json.loads((tmp_path / "target" / "summary.json").read_text())
    rounds = after["adequacy"]["iterations"]
    assert nested_mismatch(after, "adequacy") == ([], [])  # iterations included
    added = sum(sum(r["added_nodes"].values()) for r in rounds)
    assert added > 0
    assert after["nodes"] == before["nodes"] + added
    assert after["nodes"] == int(pd.read_csv(tmp_path / "target" / "sites.csv")["nodes"].sum())
    assert after["objective_usd_per_h"] == pytest.approx(
        before["objective_usd_per_h"] + sum(r["added_usd_per_h"] for r in rounds), rel=1e-9
    )
    assert after["adequacy"]["expected_unserved_share"] < before["adequacy"]["expected_unserved_share"]
