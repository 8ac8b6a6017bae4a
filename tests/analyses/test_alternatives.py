"""Near-optimal alternatives (``placement alternatives``): both of two equally good designs found, the site every plan
needs named, every design within the slack and serving what the optimum serves, the folder complete, bad options
refused."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from placement.analyses.alternatives import Direction, parse_direction
from placement.cli import main
from placement.outputs.alternatives_files import mw_not_shared, sites_not_shared
from tests.conftest import CATALOG_HEADER, REPO, script_module, write_scenario

# New York is served as well from x as from y (the same power price, PUE and latency class; 0.01 degrees apart), and
# a second site costs its $250/h fixed cost: one of them, not both. Berlin is in reach of m (Frankfurt) alone. Chicago
# reaches New York too, but at five times the power price: far dearer than a 2 % slack allows.
TWIN_CATALOG = CATALOG_HEADER + (
    "x,Ashburn X,US,North America,39.04,-77.49,50,80,1.3,10000000,false\n"
    "y,Ashburn Y,US,North America,39.05,-77.50,50,80,1.3,10000000,false\n"
    "m,Frankfurt,DE,Europe,50.11,8.68,50,80,1.3,10000000,false\n"
    "far,Chicago,US,North America,41.88,-87.63,50,400,1.3,10000000,false\n"
)
TWIN_CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,New York,US,NY,40.71,-74.01,8000000,America/New_York\n"
    "3,Berlin,DE,16,52.52,13.40,3600000,Europe/Berlin\n"
)
FILES = ("summary.json", "sites.csv", "assignments.csv", "populations.csv", "report.md")


def _twin_world(folder: Path, **overrides: Any) -> Path:
    return write_scenario(folder, catalog=TWIN_CATALOG, cities=TWIN_CITIES, **overrides)


def _run(path: Path, out: Path, *extra: str) -> tuple[list[dict[str, str]], pd.DataFrame]:
    assert main(["alternatives", str(path), "--out", str(out), "--no-maps", "--quiet", *extra]) == 0
    with (out / "alternatives.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return rows, pd.read_csv(out / "alternative_sites.csv", dtype={"site_id": str})


def test_both_equally_good_pairs_are_found_and_the_site_every_plan_needs_is_named(tmp_path: Path) -> None:
    out = tmp_path / "alt"
    rows, sites = _run(_twin_world(tmp_path), out, "--count", "2", "--slack", "0.02")
    assert [r["design"] for r in rows] == ["optimum", "alternative_01", "alternative_02"]
    designs = {r["sites"] for r in rows}
    assert designs == {"m;x", "m;y"}  # both pairs, and nothing dearer than the slack allows
    assert rows[1]["sites"] != rows[0]["sites"]  # the first alternative avoids the optimum's site for New York
    assert float(rows[1]["mw_not_shared"]) > 0.5 and float(rows[1]["sites_not_shared"]) == pytest.approx(2 / 3)
    classes = dict(zip(sites["site_id"], sites["class"], strict=True))
    assert classes == {"m": "must-have", "x": "choice", "y": "choice", "far": "never"}
    optimum = float(rows[0]["usd_per_h"])
    for row in rows:  # read back from each design's own files, not only the table
        summary = json.loads((out / row["plan"] / "summary.json").read_text())
        assert summary["objective_usd_per_h"] <= optimum * 1.02 * (1 + 1e-9)
        assert summary["objective_usd_per_h"] == pytest.approx(float(row["usd_per_h"]), rel=1e-6)
        assert all((out / row["plan"] / name).exists() for name in FILES)
        opened = pd.read_csv(out / row["plan"] / "sites.csv", dtype={"site_id": str})
        assert ";".join(sorted(opened.loc[opened["open"], "site_id"])) == row["sites"]
    for name in ("alternatives.png", "alternatives.geojson"):
        assert (out / name).stat().st_size > 1000
    layer = json.loads((out / "alternatives.geojson").read_text())
    assert {f["properties"]["site_id"]: f["properties"]["class"] for f in layer["features"]} == classes


def test_the_guides_table_and_site_classes_are_printed_from_the_folder(tmp_path: Path) -> None:
    """scripts/alternatives_table.py: a row per design, then the sites by class, the figures of the folder's files."""
    out = tmp_path / "alt"
    rows, sites = _run(_twin_world(tmp_path), out, "--count", "2", "--slack", "0.02")
    script = script_module("alternatives_table")
    text = script.table(out)
    lines = text.splitlines()
    designs = [line for line in lines[2:] if line.startswith("| ")]
    named = [line.split(" | ")[0].removeprefix("| ") for line in designs]
    assert named == [r["design"] + (f" (same as {r['same_as']})" if r["same_as"] else "") for r in rows]
    assert f"| {float(rows[0]['usd_per_h']):,.0f} |" in designs[0]
    assert f"{float(rows[1]['cost_over_optimum']) * 100:+.2f} %" in designs[1]
    assert f"| {float(rows[1]['mw_not_shared']) * 100:.0f} % |" in designs[1]
    assert "**Must-have** (1): m." in lines and "**Choice** (2): x, y." in lines and "**Never** (1): far." in lines
    assert len(sites) == 4
    assert script.main([str(tmp_path)]) == 2, "a folder without alternatives.csv is refused with the usage"


def test_a_spread_design_that_leads_back_to_an_earlier_one_is_searched_again_with_those_barred(tmp_path: Path) -> None:
    # Within a 2 % slack the twin world has two designs, and the third spread design leads back to one of them; barred
    # from both, nothing else is that cheap, so it stays a repeat. Within a wide slack the third leads back to the
    # second's sites; barred from every design before it (each open site holding a node, so an empty site opened is no
    # way out), it finds a fourth: four designs, four sets of sites, none with an earlier one's MW, each within the slack.
    (tmp_path / "tight").mkdir(), (tmp_path / "wide").mkdir()
    tight, _ = _run(_twin_world(tmp_path / "tight"), tmp_path / "tight" / "alt", "--count", "3", "--slack", "0.02")
    assert {r["sites"] for r in tight} == {"m;x", "m;y"} and tight[3]["same_as"] in {"optimum", "alternative_01"}
    wide, _ = _run(_twin_world(tmp_path / "wide"), tmp_path / "wide" / "alt", "--count", "3", "--slack", "1")
    assert len({r["sites"] for r in wide}) == 4 and all(r["same_as"] == "" for r in wide)
    for row in wide:  # every open site of every design holds nodes
        opened = pd.read_csv(tmp_path / "wide" / "alt" / row["plan"] / "sites.csv", dtype={"site_id": str})
        assert (opened.loc[opened["open"], "nodes"] > 0).all()
    assert all(float(r["usd_per_h"]) <= 2 * float(wide[0]["usd_per_h"]) * (1 + 1e-9) for r in wide)


def test_with_optional_serving_each_alternative_serves_what_the_optimum_serves(tmp_path: Path) -> None:
    # The optimum serves New York alone ($/M is lower without Berlin's second site); an alternative may not serve less
    # to look cheaper: goodput held, so $/M is within the slack too.
    path = _twin_world(tmp_path, policy={"unreachable": "report", "serving": "optional"})
    rows, sites = _run(path, tmp_path / "alt", "--count", "2")
    served, per_million = float(rows[0]["goodput_tok_s"]), float(rows[0]["usd_per_million_goodput_tokens"])
    assert {r["sites"] for r in rows} == {"x", "y"}
    for row in rows:
        assert float(row["goodput_tok_s"]) >= served * (1 - 1e-6)
        assert float(row["usd_per_million_goodput_tokens"]) <= per_million * 1.02 * (1 + 1e-5)
    assert set(sites.loc[sites["class"] == "never", "site_id"]) == {"m", "far"}


def test_most_sites_opens_more_sites_within_a_wide_slack(tmp_path: Path) -> None:
    rows, _ = _run(_twin_world(tmp_path), tmp_path / "alt", "--count", "1", "--slack", "1", "--direction", "most-sites")
    assert rows[1]["direction"] == "most-sites"
    assert int(rows[1]["sites_open"]) > int(rows[0]["sites_open"])
    assert float(rows[1]["usd_per_h"]) <= 2 * float(rows[0]["usd_per_h"]) * (1 + 1e-9)


def test_least_power_in_a_country_never_uses_more_there_than_the_optimum(tmp_path: Path) -> None:
    # Germany's one site serves Berlin, which no other site reaches: its MW cannot fall, and must not rise.
    rows, _ = _run(_twin_world(tmp_path), tmp_path / "alt", "--count", "1", "--direction", "least-power-in:DE")
    assert rows[1]["direction"] == "least-power-in:DE"
    assert float(rows[1]["mw_in_europe"]) <= float(rows[0]["mw_in_europe"]) * (1 + 1e-9)


def test_least_emissions_takes_the_cleaner_twin(tmp_path: Path) -> None:
    # x and y cost the same, but y's grid emits a quarter of x's: the least-emissions alternative serves New York at y.
    rows = [line.split(",") for line in TWIN_CATALOG.splitlines()]
    intensity = {"id": "carbon_intensity_g_per_kwh", "x": "400", "y": "100", "m": "300", "far": "500"}
    catalog = "".join(",".join([*row, intensity[row[0]]]) + "\n" for row in rows)
    path = write_scenario(tmp_path, catalog=catalog, cities=TWIN_CITIES)
    out = tmp_path / "alt"
    rows_out, _ = _run(path, out, "--count", "1", "--direction", "least-emissions")
    assert (rows_out[1]["direction"], rows_out[1]["sites"]) == ("least-emissions", "m;y")
    emitted = [json.loads((out / r["plan"] / "summary.json").read_text())["tco2e_per_year"] for r in rows_out]
    assert emitted[1] <= emitted[0] * (1 + 1e-9)


def test_distances_by_hand() -> None:
    a = pd.Series({"x": 2.0, "m": 1.0})
    b = pd.Series({"y": 2.0, "m": 1.0})
    assert mw_not_shared(a, b) == pytest.approx(4 / 6)  # |2| + |2| over 3 + 3
    assert mw_not_shared(a, a) == 0.0
    assert sites_not_shared(frozenset({"x", "m"}), frozenset({"y", "m"})) == pytest.approx(2 / 3)


def test_directions_are_read_or_refused_with_the_rule() -> None:
    assert parse_direction("least-power-in:Europe") == Direction("least-power-in", "Europe")
    assert parse_direction(" Fewest-Sites ").label == "fewest-sites"
    with pytest.raises(ValueError, match=r"unknown direction 'cheapest'.*least-power-in:REGION"):
        parse_direction("cheapest")
    with pytest.raises(ValueError, match="needs a region"):
        parse_direction("least-power-in")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--slack", "0"], "argument --slack: must be above 0 and at most 1"),
        (["--slack", "1.5"], "argument --slack: must be above 0 and at most 1"),
        (["--count", "0"], "argument --count: must be 1 to 20"),
        (["--count", "21"], "argument --count: must be 1 to 20"),
        (["--direction", "cheapest"], "argument --direction: unknown direction 'cheapest'"),
    ],
)
def test_bad_options_are_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["alternatives", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), *extra])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_a_region_naming_no_site_and_too_few_alternatives_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _twin_world(tmp_path)
    out = tmp_path / "o"
    assert main(["alternatives", str(path), "--out", str(out), "--quiet", "--direction", "least-power-in:Mars"]) == 1
    err = capsys.readouterr().err
    assert "least-power-in:Mars names no site" in err and "Traceback" not in err and not out.exists()
    given = ["--count", "1", "--direction", "fewest-sites,most-sites"]
    assert main(["alternatives", str(path), "--out", str(out), "--quiet", *given]) == 1
    assert "2 directions need at least as many alternatives: raise the count to 2" in capsys.readouterr().err


def test_a_buildout_scenario_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "tests" / "data" / "buildout_small.yaml"
    assert main(["alternatives", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 1
    assert "alternatives are drawn around a single-year plan" in capsys.readouterr().err


@pytest.mark.slow
def test_on_dask_the_hand_chosen_directions_give_the_same_designs(tmp_path: Path) -> None:
    path = _twin_world(tmp_path)
    tables = {}
    for name, extra in (("turn", []), ("dask", ["--workers", "1"])):
        rows, _ = _run(path, tmp_path / name, "--count", "2", "--direction", "fewest-sites", *extra)
        tables[name] = [(r["design"], r["direction"], r["sites"], r["usd_per_h"]) for r in rows]
    assert tables["turn"] == tables["dask"]
