"""The build-out from a scenario file: validation, the results folder, the outside check, the fleet mix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from placement._errors import InputError
from placement.cli import main
from placement.scenario.load import load_scenario
from tests.conftest import script_module

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "buildout_small.yaml"


@pytest.fixture(scope="module")
def solved(buildout_results: Path) -> Path:
    return buildout_results


def test_the_results_folder_holds_every_output(solved: Path) -> None:
    for name in ("summary.json", "buildout.csv", "buildout_scenarios.csv", "years.csv", "scenarios.csv", "timeline.png",
                 "maps_by_year.png", "map.html", "sites_by_year.geojson", "report.md"):  # fmt: skip
        assert (solved / name).is_file(), name
    table = pd.read_csv(solved / "buildout.csv")
    assert list(table.columns[:8]) == [
        "year",
        "site_id",
        "accelerator",
        "nodes",
        "mw_used",
        "mw_available",
        "mw_reserved",
        "capex_usd",
    ]
    assert "cost_usd_per_h" in table.columns
    summary = json.loads((solved / "summary.json").read_text())
    assert [y["year"] for y in summary["years"]] == [2027, 2028, 2029]
    for key in ("expected_cost_usd", "scenario_costs_usd", "value_of_stochastic_solution_usd"):
        assert key in summary
    assert set(summary["scenario_costs_usd"]) == {"low", "high"}
    regret = summary["min_max_regret"]  # the small scenario asks for the min-max-regret plan too
    assert regret["max_regret_usd"] >= 0
    assert set(regret["wait_and_see_usd"]) == {"low", "high"}
    expected = sum(summary["scenario_costs_usd"][s] * p for s, p in summary["scenario_probabilities"].items())
    assert summary["expected_cost_usd"] == pytest.approx(expected)
    years = pd.read_csv(solved / "years.csv")
    by_year = table.groupby("year")["cost_usd_per_h"].sum()
    assert by_year.to_numpy() == pytest.approx(years["cost_usd_per_h"].to_numpy(), rel=1e-9)
    assert "2028" in (solved / "map.html").read_text()


def test_class_shares_by_accelerator_add_up_and_use_only_parts_in_service(solved: Path) -> None:
    mix = pd.read_csv(solved / "class_accelerators.csv")
    assert list(mix.columns) == ["year", "class", "accelerator", "share_of_class_tokens"]
    sums = mix.groupby(["year", "class"])["share_of_class_tokens"].sum()
    assert sums.to_numpy() == pytest.approx(1.0, abs=1e-9)
    in_service = pd.read_csv(solved / "buildout.csv").query("nodes > 0").groupby("year")["accelerator"].agg(set)
    for year, part in mix.groupby("year"):
        assert set(part["accelerator"]) <= in_service[year], year  # no tokens on a part with no nodes that year
    assert "Which accelerators carry each class" in (solved / "report.md").read_text()


def test_each_year_is_a_plain_results_folder(solved: Path) -> None:
    single_sites = {"site_id", "name", "open", "nodes", "mw_used", "mw_available", "cost_usd_per_h", "goodput_tok_s"}
    for year in (2027, 2028, 2029):
        folder = solved / "years" / str(year)
        summary = json.loads((folder / "summary.json").read_text())
        for key in ("cost_per_million_goodput_tokens_usd", "objective_usd_per_h", "mw_used", "sites_open", "unserved_share"):
            assert key in summary
        assert single_sites <= set(pd.read_csv(folder / "sites.csv").columns)
        assignments = pd.read_csv(folder / "assignments.csv")
        assert {"population_id", "class", "site_id", "goodput_tok_s", "rtt_ms", "rtt_budget_ms"} <= set(assignments.columns)
        assert (assignments["ttft_slack_ms"] >= 0).all()
        assert assignments["goodput_tok_s"].sum() == pytest.approx(summary["goodput_tok_s"], rel=1e-6)


def test_the_outside_check_passes(solved: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_buildout.py"), str(solved)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout


def test_a_late_site_has_no_mw_before_its_power_arrives(solved: Path) -> None:
    table = pd.read_csv(solved / "buildout_scenarios.csv")
    stockholm = table[(table["site_id"] == "stockholm") & (table["year"] == 2027)]
    assert stockholm.empty


def _write(tmp_path: Path, horizon: dict[str, object]) -> Path:
    raw = yaml.safe_load(SMALL.read_text())
    raw["horizon"] = {**raw["horizon"], **horizon}
    for key in ("sites", "demand"):
        for field in ("catalog", "cities"):
            if field in raw[key]:
                raw[key][field] = str((SMALL.parent / raw[key][field]).resolve())
    raw["time"]["profile"] = str((SMALL.parent / raw["time"]["profile"]).resolve())
    raw["horizon"]["power_schedule"] = str((SMALL.parent / raw["horizon"]["power_schedule"]).resolve())
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_horizon_errors_are_gathered_with_their_key_paths(tmp_path: Path) -> None:
    bad = _write(
        tmp_path,
        {
            "years": [2027, 2029],
            "demand_scenarios": [{"name": "a", "probability": 0.5}, {"name": "b", "probability": 0.2}],
            "class_shares": {2027: {"chat": 0.9}},
        },
    )
    with pytest.raises(InputError) as caught:
        load_scenario(bad)
    text = str(caught.value)
    assert "consecutive" in text and "sum to 1" in text


def test_a_bad_power_schedule_names_each_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedule = tmp_path / "schedule.csv"
    schedule.write_text("site_id,year,mw_available\nnowhere,2028,10\nparis,2028,-5\nparis,20x9,4\n")
    path = _write(tmp_path, {"power_schedule": str(schedule)})
    code = main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 1
    assert not (tmp_path / "out").exists()
    err = capsys.readouterr().err
    for where, field in (("row 1 (line 2)", "site_id"), ("row 2 (line 3)", "mw_available"), ("row 3 (line 4)", "year")):
        assert f"{where}, field '{field}'" in err, err
    assert "Traceback" not in err


def test_mw_that_go_down_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedule = tmp_path / "schedule.csv"
    schedule.write_text("site_id,year,mw_available\nparis,2027,50\nparis,2028,20\n")
    path = _write(tmp_path, {"power_schedule": str(schedule)})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    assert "energized MW go down" in capsys.readouterr().err


def _fleet_mix(tmp_path: Path, accelerators: list[str]) -> Path:
    """The small build-out's world as a one-year fleet mix of these accelerators (no horizon)."""
    raw = yaml.safe_load(SMALL.read_text())
    del raw["horizon"]
    raw["serving"]["accelerators"] = accelerators
    raw["demand"]["clusters"] = 15
    raw["time"]["slices"] = 1
    raw["time"]["profile"] = None
    for key, field in (("sites", "catalog"), ("demand", "cities")):
        raw[key][field] = str((SMALL.parent / raw[key][field]).resolve())
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_single_year_fleet_mix_runs_through_the_buildout_engine(tmp_path: Path) -> None:
    path = _fleet_mix(tmp_path, ["h100-sxm", "b200", "mi300x"])
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--quiet", "--no-maps"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["years"]) == 1
    assert summary["value_of_stochastic_solution_usd"] == pytest.approx(0.0, abs=1e-6)
    assert set(summary["accelerators_used"]) <= {"h100-sxm", "b200", "mi300x"}


def test_a_larger_model_in_one_future_raises_its_cost(tmp_path: Path) -> None:
    futures = [
        {"name": "same", "probability": 0.5, "growth_per_year": 0.1},
        {"name": "bigger", "probability": 0.5, "growth_per_year": 0.1, "model_change": {"year": 2029, "model": "deepseek-v3"}},
    ]
    path = _write(tmp_path, {"demand_scenarios": futures, "regret": False})
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--quiet", "--no-maps"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    costs = summary["scenario_costs_usd"]
    assert costs["bigger"] > costs["same"]
    table = pd.read_csv(out / "buildout_scenarios.csv")
    same = table[(table["scenario"] == "same") & (table["year"] == 2028)]["nodes"].sum()
    assert table[(table["scenario"] == "bigger") & (table["year"] == 2028)]["nodes"].sum() == same  # nothing changes before 2029


def test_an_unknown_model_is_named_with_its_key_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    futures = [{"name": "x", "probability": 1.0, "model_change": {"year": 2028, "model": "gpt-9"}}]
    path = _write(tmp_path, {"demand_scenarios": futures})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    assert "horizon.demand_scenarios[0].model_change.model" in capsys.readouterr().err


@pytest.mark.slow
def test_the_year_map_opens_offline_without_console_errors(solved: Path, tmp_path: Path) -> None:
    from tests.outputs.test_webmap import _browse, _console_lines

    done = _browse(solved / "map.html", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _console_lines(done.stderr) == []
    assert "open sites" in done.stdout and "Natural Earth" in done.stdout  # the script ran and drew the basemap
    assert "default-src 'none'" in (solved / "map.html").read_text()  # no network request can leave the page


def test_explain_says_a_buildout_folder_is_not_a_single_year_plan(solved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(solved), "--quiet"]) != 0
    assert "is a build-out (years 2027-2029)" in capsys.readouterr().err
    assert main(["explain", str(solved / "years" / "2028"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "is year 2028 of a build-out" in err and "Traceback" not in err and "internal failure" not in err


def _validate_errors(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal failure" not in err
    return err


def test_validate_checks_what_the_buildout_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate said ok to each of these, and solve then refused them (or solved them wrongly)."""
    futures = [{"name": "x", "probability": 1.0, "model_change": {"year": 2028, "model": "gpt-9"}}]
    err = _validate_errors(_write(tmp_path, {"demand_scenarios": futures}), capsys)
    assert "horizon.demand_scenarios[0].model_change.model: unknown model 'gpt-9'" in err
    fleet = [{"site": "atlantis", "accelerator": "h100-sxm", "nodes": 5, "installed_year": 2025}]
    err = _validate_errors(_write(tmp_path, {"existing_fleet": fleet}), capsys)
    assert "horizon.existing_fleet[0], field 'site': unknown site 'atlantis'" in err
    schedule = tmp_path / "schedule.csv"
    schedule.write_text("site_id,year,mw_available\nparis,2028,ten\n")
    err = _validate_errors(_write(tmp_path, {"power_schedule": str(schedule)}), capsys)
    assert "row 1 (line 2), field 'mw_available'" in err


def test_an_unknown_accelerator_on_offer_is_named_where_it_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offers = [{"id": "h100-sxm", "last_year": 2027}, {"id": "b2000", "first_year": 2028}]
    err = _validate_errors(_write(tmp_path, {"accelerators": offers, "existing_fleet": []}), capsys)
    assert "horizon.accelerators[1].id: accelerator b2000: unknown accelerator 'b2000'" in err
    assert "serving.accelerator:" not in err


def test_a_fleet_mix_listing_one_accelerator_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _fleet_mix(tmp_path, ["h100-sxm", "b200", "b200"])
    err = _validate_errors(path, capsys)
    assert "serving.accelerators[2]: accelerator 'b200' is listed twice (first at serving.accelerators[1])" in err
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    assert not (tmp_path / "out").exists()


def test_two_schedule_rows_for_one_site_and_year_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedule = tmp_path / "schedule.csv"
    schedule.write_text("site_id,year,mw_available\nparis,2028,10\nparis,2028,40\n")
    err = _validate_errors(_write(tmp_path, {"power_schedule": str(schedule)}), capsys)
    assert "row 2 (line 3), field 'year': a second row for site 'paris' in 2028 (first at row 1 (line 2))" in err
    assert "go down" not in err


def test_an_existing_fleet_installed_inside_the_horizon_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = [{"site": "frankfurt", "accelerator": "h100-sxm", "nodes": 50, "installed_year": 2028}]
    err = _validate_errors(_write(tmp_path, {"existing_fleet": fleet}), capsys)
    assert "existing_fleet[0].installed_year 2028 is inside the horizon (from 2027)" in err


def test_a_carbon_price_path_charges_each_year_its_price_on_its_tonnes(solved: Path, tmp_path: Path) -> None:
    # horizon.carbon_usd_per_t: $0 in 2027 rising to $20 in 2029 (interpolated: $10 in 2028). The plan keeps its
    # design at these prices (measured; at $100 it moves to cleaner sites since NVSwitch's in-network all-reduce
    # halved the fleet, and a tonne weighs more against it); so each year's cost rises by exactly its
    # price times its tonnes (idle power and load energy alike), and no year emits more. Each year's figures add up
    # from its own sites.csv.
    path = _write(tmp_path, {"carbon_usd_per_t": {2027: 0, 2029: 20}, "regret": False})
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--quiet", "--no-maps"]) == 0
    priced, free = pd.read_csv(out / "years.csv"), pd.read_csv(solved / "years.csv")
    assert priced["carbon_usd_per_t"].tolist() == [0.0, 10.0, 20.0] and free["carbon_usd_per_t"].tolist() == [0.0] * 3
    assert (priced["tco2e_per_year"] > 0).all() and (priced["water_m3_per_year"] > 0).all()
    assert (priced["tco2e_per_year"] <= free["tco2e_per_year"] * (1 + 1e-9)).all()
    checked = 0
    for k in range(3):
        if priced["nodes"].iloc[k] == free["nodes"].iloc[k] and priced["tco2e_per_year"].iloc[k] == pytest.approx(
            free["tco2e_per_year"].iloc[k], rel=1e-9
        ):
            charge = priced["carbon_usd_per_t"].iloc[k] * priced["tco2e_per_year"].iloc[k] / 8760
            rise = priced["cost_usd_per_h"].iloc[k] - free["cost_usd_per_h"].iloc[k]
            assert rise == pytest.approx(charge, rel=1e-6, abs=1e-6)
            checked += 1
    assert checked == 3  # every year kept its design (measured): each one's charge checked
    for k, year in enumerate((2027, 2028, 2029)):
        sites = pd.read_csv(out / "years" / str(year) / "sites.csv")
        assert sites["tco2e_per_year"].sum() == pytest.approx(priced["tco2e_per_year"].iloc[k], rel=1e-9)
        assert sites["energy_mwh_per_year"].sum() == pytest.approx(priced["energy_mwh_per_year"].iloc[k], rel=1e-9)
        catalog = pd.read_csv(ROOT / "data" / "sites" / "world_metros.csv").set_index("id")
        intensity = catalog.loc[sites["site_id"], "carbon_intensity_g_per_kwh"].to_numpy()
        # the build-out's slices price energy by the day: the day's mean intensity, within the hourly shape's reach
        ratio = sites["tco2e_per_year"] / (sites["energy_mwh_per_year"] * intensity / 1000)
        assert ratio[sites["energy_mwh_per_year"] > 0].between(0.8, 1.25).all()


def test_the_carbon_price_path_is_interpolated_and_held() -> None:
    from placement.scenario.horizon import HorizonSection

    horizon = HorizonSection(years=[2026, 2027, 2028, 2029, 2030, 2031], carbon_usd_per_t={2027: 50, 2030: 200})
    assert horizon.carbon_price_path(10.0) == pytest.approx([50, 50, 100, 150, 200, 200])
    assert HorizonSection(years=[2027, 2028]).carbon_price_path(10.0) == [10.0, 10.0]  # no path: the flat price
    with pytest.raises(ValueError, match="prices must be >= 0"):
        HorizonSection(years=[2027], carbon_usd_per_t={2027: -1})


def _capped(tmp_path: Path, objective: dict[str, object]) -> Path:
    path = _write(tmp_path, {})
    raw = yaml.safe_load(path.read_text())
    raw["objective"] = {**raw.get("objective", {}), **objective}
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_caps_hold_in_every_year_and_scenario_of_the_written_buildout(solved: Path, tmp_path: Path) -> None:
    # Uncapped, Frankfurt serves everything in 2027 (the same demand in both futures). Caps below that year's
    # emissions and water, and on Germany's emissions, move load to cleaner and drier sites in every year and future;
    # the stressed site may evaporate no water on site.
    free = pd.read_csv(solved / "years.csv").set_index("year")
    carbon, water, germany = (
        0.6 * float(free.loc[2027, "tco2e_per_year"]),
        0.8 * float(free.loc[2027, "water_m3_per_year"]),
        2000.0,
    )
    caps = {"carbon_cap_t_per_year": carbon, "water_cap_m3_per_year": water, "stressed_site_water_m3_per_year": 0.0}
    path = _capped(tmp_path, {**caps, "regional_caps": [{"region": "DE", "carbon_t_per_year": germany}]})
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--quiet", "--no-maps"]) == 0
    years = pd.read_csv(out / "years_scenarios.csv")
    assert set(years["scenario"]) == {"low", "high"} and len(years) == 6
    assert (years["tco2e_per_year"] <= carbon * (1 + 1e-6)).all(), years["tco2e_per_year"].tolist()
    assert (years["water_m3_per_year"] <= water * (1 + 1e-6)).all(), years["water_m3_per_year"].tolist()
    for year in (2027, 2028, 2029):  # the base future's sites, year by year
        sites = pd.read_csv(out / "years" / str(year) / "sites.csv")
        assert sites.loc[sites["country_code"] == "DE", "tco2e_per_year"].sum() <= germany * (1 + 1e-6)
    summary = json.loads((out / "summary.json").read_text())
    names = [c["cap"] for c in summary["caps"]]
    assert names[:3] == ["carbon", "water", "carbon in DE"]
    assert "on-site water at saint-ghislain" in names  # the catalog's stressed sites, Belgium's among them
    assert summary["caps"][0]["most_used_per_year"] == pytest.approx(years["tco2e_per_year"].max())
    stressed = summary["caps"][names.index("on-site water at saint-ghislain")]
    assert stressed["most_used_per_year"] == pytest.approx(0.0, abs=1e-6)  # no node may run there
    every = pd.read_csv(out / "buildout_scenarios.csv")
    assert every.loc[every["site_id"] == "saint-ghislain", "nodes"].sum() == 0
    uncapped = json.loads((solved / "summary.json").read_text())
    assert summary["expected_cost_usd"] >= uncapped["lower_bound_usd"]  # a capped plan costs no less than the uncapped optimum
    assert summary["min_max_regret"] is not None  # its rounded plan was held within the caps too
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_buildout.py"), str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert "PASS  every year and scenario within the plan's caps  (within)" in run.stdout


def test_a_cap_the_installed_fleet_breaks_is_refused_with_its_year(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Frankfurt's 50 installed nodes draw their idle power in 2027 and 2028 whatever the plan does (~1,500 tCO2e).
    path = _capped(tmp_path, {"regional_caps": [{"region": "DE", "carbon_t_per_year": 100.0}]})
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--quiet", "--no-maps"]) == 1
    err = capsys.readouterr().err
    assert "no plan meets the carbon in DE cap of 100 tCO2e a year in 2027" in err, err
    assert "no plan meets the carbon in DE cap of 100 tCO2e a year in 2028" in err
    assert "a year in 2029" not in err  # their life ends: one new node there would do
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_carbon_cap_over_a_site_without_its_intensity_is_an_input_error(tmp_path: Path) -> None:
    catalog = pd.read_csv(ROOT / "data" / "sites" / "world_metros.csv", keep_default_na=False, na_values=[""])
    catalog.loc[catalog["id"] == "malmo", "carbon_intensity_g_per_kwh"] = float("nan")
    catalog.to_csv(tmp_path / "sites.csv", index=False)
    path = _capped(tmp_path, {"carbon_cap_t_per_year": 5000.0})
    raw = yaml.safe_load(path.read_text())
    raw["sites"]["catalog"] = str(tmp_path / "sites.csv")
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError) as caught:
        from placement.buildout.arrays import build_buildout

        build_buildout(load_scenario(path))
    text = str(caught.value)
    assert "site 'malmo', field 'carbon_intensity_g_per_kwh'" in text, text
    assert "objective.carbon_cap_t_per_year" in text and "needs every site's grid intensity" in text


def test_the_guides_tables_are_regenerated_from_the_folder(solved: Path) -> None:
    """scripts/buildout_tables.py: a row per year and per demand scenario, the figures of the folder's files."""
    script = script_module("buildout_tables")
    text = script.tables(solved)
    years = pd.read_csv(solved / "years.csv")
    scenarios = pd.read_csv(solved / "scenarios.csv", keep_default_na=False)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows[1 : 1 + len(years)]] == [str(y) for y in years["year"]]
    first = years.iloc[0]
    assert f"| {first['cost_per_million_goodput_tokens_usd']:.3f} |" in rows[1]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows[2 + len(years) : 2 + len(years) + len(scenarios)]] == list(
        scenarios["scenario"]
    )
    summary = json.loads((solved / "summary.json").read_text())
    assert f"**${summary['expected_cost_usd'] / 1e9:,.2f} B**" in text
    assert f"the adopted plan is the {summary['adopted_plan'].upper()} plan" in text
    by_scenario = pd.read_csv(solved / "years_scenarios.csv", keep_default_na=False)
    last = by_scenario[by_scenario["year"] == by_scenario["year"].max()]
    after = text.split(f"Every demand scenario in {int(last['year'].iloc[0])}, the adopted plan:")[1]
    last_rows = [line for line in after.split("Which accelerators")[0].splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0].removeprefix("| ") for r in last_rows] == list(last["scenario"])
    assert f"| {last['mw_reserved'].iloc[0]:,.0f} |" in last_rows[0]
    shares = pd.read_csv(solved / "class_accelerators.csv")
    part_rows = [line for line in after.split("Which accelerators")[1].splitlines() if line.startswith("| ")]
    assert part_rows[0] == "| year | " + " | ".join(dict.fromkeys(shares["class"])) + " |"
    assert [r.split(" | ")[0].removeprefix("| ") for r in part_rows[1:]] == [str(y) for y in sorted(set(shares["year"]))]
    top = shares[shares["year"] == shares["year"].min()].nlargest(1, "share_of_class_tokens").iloc[0]
    assert f"{top['accelerator']} {top['share_of_class_tokens'] * 100:.0f} %" in part_rows[1]
    assert script.main([str(solved.parent)]) == 2, "a folder without years.csv is refused with the usage"


def test_the_rules_guides_table_is_regenerated_from_two_folders(solved: Path) -> None:
    """scripts/rules_table.py: a row per build-out (here the same one twice), the figures of its files."""
    script = script_module("rules_table")
    text = script.table(solved, solved)
    years = pd.read_csv(solved / "years.csv")
    summary = json.loads((solved / "summary.json").read_text())
    header, _, free, rules = text.splitlines()
    assert [f"$/M {y}" for y in years["year"]] == [c.strip() for c in header.split("|")[3 : 3 + len(years)]]
    assert free.startswith("| no rules (`enforce: false`) |") and rules.startswith("| the bundled rules |")
    cells = [c.strip() for c in rules.strip("|").split("|")]
    assert cells[1] == f"${summary['expected_cost_usd'] / 1e9:,.1f} B"
    assert cells[2 : 2 + len(years)] == [f"{v:.3f}" for v in years["cost_per_million_goodput_tokens_usd"]]
    bought = summary["nodes_bought_by_country"]
    china = cells[2 + len(years)]
    assert china == " · ".join(f"{p} {n:,.0f}" for p, n in bought.get("CN", {}).items() if n >= 0.5) or china == "0"
    assert cells[-1] == f"{summary['aggregation']['unreachable_demand_share'] * 100:.1f} %"
    assert script.main([str(solved)]) == 2, "two folders, or the usage"
