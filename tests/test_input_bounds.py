"""Every input a clear error, in bounded time: command-line values checked where they are parsed, ``validate``
refusing what ``solve`` refuses, empty files named, each message once, and planner-sized files in time that grows
with their distinct inputs."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement._errors import InputError, Problem
from placement._validate import Column
from placement.analyses.frontier import MAX_POINTS, frontier_caps
from placement.analyses.validate import validate_file
from placement.cli import main
from placement.network.measurements import calibrate, load_measurements, modelled
from placement.network.paths import Endpoints, PathType, default_round_trips
from placement.network.places import resolve_place, resolve_places
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from placement.serving.calibration import MAX_CONFIGURATIONS, check_configurations, fit_parts
from placement.serving.measured import MeasuredPoint, load_measured
from tests.conftest import write_scenario
from tests.economics.test_footprint import CARBON_CATALOG, DYNAMIC_POWER
from tests.profiles.test_profiles import physics_class

# --- command-line values, checked where they are parsed, in the scenario's words --------------------------------


@pytest.mark.parametrize(
    ("args", "key", "rule"),
    [
        (["discover", "--spacing-km", "-5"], "sites.discover.spacing_km", "greater than 0"),
        (["discover", "--min-population", "-1"], "sites.discover.min_population", "greater than or equal to 0"),
        (["discover", "--max-candidates", "0"], "sites.discover.max_candidates", "greater than or equal to 1"),
        (["solve", "--gap", "2"], "solver.gap", "less than 1"),
        (["solve", "--time-limit", "-3"], "solver.time_limit_s", "greater than 0"),
    ],
)
def test_a_bad_command_line_value_is_refused_where_it_is_parsed(
    args: list[str], key: str, rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and key in err and rule in err and "Traceback" not in err and "internal" not in err


def test_a_frontier_takes_a_bounded_number_of_points(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["frontier", "--points", "100000"])
    assert f"must be 2 to {MAX_POINTS}" in capsys.readouterr().err
    with pytest.raises(ValueError, match=f"2 to {MAX_POINTS} points"):
        frontier_caps(100.0, 0.0, MAX_POINTS + 1)
    caps = frontier_caps(100.0, 0.0, MAX_POINTS)
    assert len(caps) == MAX_POINTS - 1 and np.diff(caps).max() < 0  # every cap below the one before


@pytest.mark.parametrize(
    ("option", "value", "rule"),
    [("--slack", "-0.1", "must be above 0 and at most 1"), ("--count", "50", "must be 1 to 20"),
     ("--direction", "least-power-in", "least-power-in needs a region")],
)  # fmt: skip
def test_alternatives_take_a_bounded_slack_count_and_known_directions(
    option: str, value: str, rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["alternatives", option, value])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and f"argument {option}" in err and rule in err and "Traceback" not in err


def test_discover_on_a_plan_that_serves_everything_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write_scenario(tmp_path)
    assert main(["discover", str(scenario), "--out", str(tmp_path / "found"), "--quiet", "--no-maps"]) == 0
    out = capsys.readouterr().out
    assert "no site proposed: the plan already serves every population" in out
    assert (tmp_path / "found" / "discover.json").is_file() and (tmp_path / "found" / "plan" / "summary.json").is_file()


# --- validate refuses what solve refuses ------------------------------------------------------------------------


def _slices() -> dict[str, object]:
    return {"slices": 24, "profile": str(Path(__file__).resolve().parent.parent / "data" / "demand" / "diurnal_profile.csv")}


def _profile(path: Path, rows: list[tuple[str, int]]) -> str:
    path.write_text("area,local_hour,gco2e_per_kwh\n" + "".join(f"{a},{h},300\n" for a, h in rows))
    return path.name


def _bad_scenarios(root: Path) -> dict[str, Path]:
    """Inputs each sound alone that ``solve`` refuses together, one folder each."""
    out = {}
    folder = root / "carbon_price"
    folder.mkdir()
    out["a carbon price with sites of no intensity"] = write_scenario(folder, objective={"carbon_usd_per_t": 50})
    folder = root / "area"
    folder.mkdir()
    name = _profile(folder / "carbon.csv", [("ATLANTIS", h) for h in range(24)])
    out["an intensity profile of an area that is no site or country"] = write_scenario(
        folder, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER, time={**_slices(), "carbon_intensity_profile": name}
    )
    folder = root / "hour"
    folder.mkdir()
    name = _profile(folder / "carbon.csv", [("US", h) for h in [*range(24), 5]])
    out["a profile with a repeated hour"] = write_scenario(
        folder, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER, time={**_slices(), "carbon_intensity_profile": name}
    )
    folder = root / "region"
    folder.mkdir()
    cap = {"regional_caps": [{"region": "Atlantis", "carbon_t_per_year": 1000}]}
    out["a regional cap of a region no site is in"] = write_scenario(folder, catalog=CARBON_CATALOG, objective=cap)
    return out


def test_validate_refuses_every_input_solve_refuses(tmp_path: Path) -> None:
    for what, scenario in _bad_scenarios(tmp_path).items():
        with pytest.raises(InputError) as solved:
            run(load_scenario(scenario))
        with pytest.raises(InputError) as validated:
            validate_file(scenario)
        assert {p.rule for p in solved.value.problems} <= {p.rule for p in validated.value.problems}, what


def test_header_only_and_empty_input_files_are_errors_naming_them(tmp_path: Path) -> None:
    profile = tmp_path / "carbon.csv"
    profile.write_text("area,local_hour,gco2e_per_kwh\n")
    regimes = tmp_path / "regimes.csv"
    regimes.write_text("")
    time_section = {**_slices(), "carbon_intensity_profile": profile.name}
    for overrides, path in (
        ({"catalog": CARBON_CATALOG, "serving": DYNAMIC_POWER, "time": time_section}, profile),
        ({"residency": {"regimes_file": regimes.name}}, regimes),  # named, though no regime is picked from it yet
    ):
        with pytest.raises(InputError) as caught:
            validate_file(write_scenario(tmp_path, **overrides))
        assert str(path) in str(caught.value), overrides


def test_an_unknown_area_is_named_once_with_its_rows(tmp_path: Path) -> None:
    scenario = _bad_scenarios(tmp_path)["an intensity profile of an area that is no site or country"]
    with pytest.raises(InputError) as caught:
        validate_file(scenario)
    (problem,) = [p for p in caught.value.problems if "ATLANTIS" in p.rule]
    assert problem.where == "rows 2, 3, 4, ... (24 rows)"


def test_a_problem_found_twice_is_reported_once() -> None:
    twice = Problem("s.yaml", "serving.measurements", "", "no such file: x.csv", "give a file")
    error = InputError([twice, Problem("s.yaml", "a", "", "other", "fix"), twice])
    assert len(error.problems) == 2 and str(error).count("no such file") == 1


def test_a_missing_measurements_file_is_reported_once_not_once_per_class(tmp_path: Path) -> None:
    classes = [physics_class(), {**physics_class(), "name": "agent"}, {**physics_class(), "name": "batch"}]
    for c, share in zip(classes, (0.5, 0.3, 0.2), strict=True):
        c["share"] = share
    serving = {"model": "llama-3.1-70b", "accelerator": "h200", "measurements": "nope.csv"}
    with pytest.raises(InputError) as caught:
        validate_file(write_scenario(tmp_path, classes=classes, serving=serving))
    assert [p.rule for p in caught.value.problems].count(f"no such file: {tmp_path / 'nope.csv'}") == 1


def test_a_fix_written_from_a_help_text_reads_as_english() -> None:
    assert Column("wue_l_per_kwh", help="the site's own water usage").how_to_fix() == "give the site's own water usage"
    assert Column("lat", help="latitude").how_to_fix() == "give the latitude"


# --- calibrate: empty files named, repeated configurations fitted once, a bound stated ------------------------------

HEADER = (
    "point_id,model,accelerator,gpus,precision,input_tokens,input_tokens_max,output_tokens,ttft_p99_ms,itl_p99_ms,tok_s,source\n"
)


def test_an_empty_or_header_only_measurement_file_is_an_error_naming_it(tmp_path: Path) -> None:
    header_only = tmp_path / "header.csv"
    header_only.write_text(HEADER)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    for path in (header_only, empty):
        with pytest.raises(InputError) as caught:
            load_measured(path)
        assert str(path) in str(caught.value)
    checks = tmp_path / "checks.csv"
    checks.write_text(
        HEADER.replace(",source\n", ",source,use\n") + "a,llama-3.1-405b,h100-sxm,8,fp8,9000,20000,684,6000,175,250,me,check\n"
    )
    assert main(["calibrate", str(checks)]) == 1  # rows, but none to fit: said, not a table of nan


def test_repeated_rows_of_one_configuration_are_fitted_once(tmp_path: Path) -> None:
    # 10,000 runs of one benchmark configuration, 5 % noise: one fit at their geometric mean, weighted by all of them
    rng = np.random.default_rng(3)
    tok_s = 250.0 * np.exp(rng.normal(0.0, 0.05, 10_000))
    rows = [f"r{k},llama-3.1-405b,h100-sxm,8,fp8,9000,20000,684,6000,175,{v:.3f},me\n" for k, v in enumerate(tok_s)]
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "".join(rows))
    start = time.perf_counter()
    points = load_measured(path)
    (fit,) = fit_parts(points, source=str(path))
    assert fit.rows == (10_000,) and fit.point_ids == ("r0",)
    assert fit.measured_tok_s[0] == pytest.approx(float(np.exp(np.log(tok_s).mean())), rel=1e-6)
    assert fit.fitted_tok_s[0] == pytest.approx(fit.measured_tok_s[0], rel=0.1)
    assert time.perf_counter() - start < 120  # one configuration's ~17 runs, not 170,000


def test_more_configurations_than_the_limit_are_refused_at_once() -> None:
    points = [
        MeasuredPoint(f"p{k}", "llama-3.1-405b", "h100-sxm", 8, "fp8", 1000.0 + k, 684.0, None, 6000.0, 175.0, 250.0)
        for k in range(MAX_CONFIGURATIONS + 1)
    ]
    check_configurations(points[:MAX_CONFIGURATIONS], "mine.csv")  # at the limit: fitted
    with pytest.raises(InputError) as caught:
        check_configurations(points, "mine.csv")
    assert f"at most {MAX_CONFIGURATIONS}" in str(caught.value) and "mine.csv" in str(caught.value)


# --- rtt --measurements: place names resolved once, round trips pair by pair ----------------------------------------


def test_pairs_are_the_table_element_by_element() -> None:
    trips = default_round_trips()
    rng = np.random.default_rng(5)
    n = 60
    codes = np.array(["US", "DE", "IN", "CN", "BR", "NG", "AE", "SA", "JP", "ZA"])
    ends = [
        Endpoints.of(rng.uniform(-40, 60, n), rng.uniform(-120, 140, n), rng.choice(codes, n), rng.random(n) < 0.5)
        for _ in range(2)
    ]
    for path in (PathType.INTERNET, PathType.ACCESS):
        table = trips.rtt_ms(ends[0], ends[1], path)
        pairs = trips.rtt_pairs_ms(ends[0], ends[1], path)
        np.testing.assert_array_equal(pairs.p50_ms, np.diagonal(table.p50_ms))
        np.testing.assert_array_equal(pairs.p90_ms, np.diagonal(table.p90_ms))


def test_a_name_resolves_alike_alone_and_in_bulk() -> None:
    texts = ["Portland", "Portland, US", "Sao Paulo", "Frankfurt", "Zürich", "Frankfrut", "41.0,29.0", "Lagos, NG"]
    bulk = resolve_places(texts)
    for text in texts:
        try:
            alone: object = resolve_place(text)
        except InputError as error:
            alone = str(error)
        got = bulk[text]
        assert (str(got) if isinstance(got, InputError) else got) == alone, text


def test_ten_thousand_pings_are_read_and_fitted(tmp_path: Path) -> None:
    # 10,000 pings between 300 cities and points typed as coordinates: each name resolved once, each path modelled once
    cities = pd.read_csv(Path(__file__).resolve().parent.parent / "data" / "cities" / "geonames_cities15000.csv")
    big = cities.nlargest(300, "population")
    names = (big["name"] + ", " + big["countrycode"]).to_numpy()
    rng = np.random.default_rng(7)
    a = rng.choice(names, 10_000)
    b = np.where(
        rng.random(10_000) < 0.7, rng.choice(names, 10_000), [f"{x:.3f},{y:.3f}" for x, y in rng.uniform(-40, 60, (10_000, 2))]
    )
    keep = a != b
    frame = pd.DataFrame({"from": a[keep], "to": b[keep], "rtt_ms": rng.uniform(20, 300, keep.sum()).round(1)})
    path = tmp_path / "pings.csv"
    frame.to_csv(path, index=False)
    measurements = load_measurements(path)
    assert len(measurements) == len(frame)
    report = calibrate(measurements, default_round_trips())
    p50, _ = modelled(measurements, default_round_trips())
    assert np.isfinite(p50).all() and (report.rows["before_ms"].to_numpy() == p50).all()
    assert report.table["n"].sum() == 2 * len(frame)  # every row once in its region pair and once in "all"
