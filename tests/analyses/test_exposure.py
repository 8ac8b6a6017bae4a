"""``placement failover``: a written plan loses a site or a fault domain now; what moves, what goes unserved."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from placement.analyses.exposure import exposure_folder_name, failover_exposure
from placement.cli import main
from tests.conftest import solved_small, write_scenario

# Catalog of conftest: ashburn and chicago reach New York and Chicago; frankfurt alone reaches Berlin and Paris.
DOMAINS = {"us-east": ["ashburn", "chicago"]}


@pytest.fixture(scope="module")
def plain_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return solved_small(tmp_path_factory, "plain")


@pytest.fixture(scope="module")
def n_plus_one_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("n1")
    scenario = write_scenario(folder, policy={"unreachable": "report"}, fault_tolerance={"n_plus_one": True, "domains": DOMAINS})
    assert main(["solve", str(scenario), "--out", str(folder / "out"), "--quiet", "--no-maps"]) == 0
    return folder / "out"


def _sites(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "sites.csv", keep_default_na=False).set_index("site_id")


def _served_at(folder: Path, site: str) -> float:
    return float(_sites(folder).loc[site, "goodput_tok_s"])


def test_a_plain_plan_shows_its_exposure_at_the_site_that_serves_the_us(plain_folder: Path) -> None:
    sites = _sites(plain_folder)
    us = [s for s in ("ashburn", "chicago") if sites.loc[s, "open"] in (True, "true", "True")]
    assert len(us) == 1  # the cheapest plan without N+1 serves both US populations from one site
    exposure = failover_exposure(plain_folder, site_ids=us)
    served = _served_at(plain_folder, us[0])
    assert exposure.headline["served_there_tok_s"] == pytest.approx(served, rel=1e-6)
    # No other open site reaches New York or Chicago, and nodes are sized to the plan's own load plus headroom:
    # Frankfurt is out of their objectives, so nothing can move.
    assert exposure.headline["rerouted_tok_s"] == pytest.approx(0.0, abs=1e-6)
    assert exposure.headline["unserved_share"] == pytest.approx(1.0)
    assert set(exposure.commodities["population"]) == {"New York", "Chicago"}
    assert len(exposure.sites) == 0


def test_an_n_plus_one_plan_loses_nothing_and_its_ttft_rises_to_the_standby(n_plus_one_folder: Path) -> None:
    scenarios = pd.read_csv(n_plus_one_folder / "failover_scenarios.csv", keep_default_na=False).set_index("failed")
    rows = pd.read_csv(n_plus_one_folder / "failover.csv", keep_default_na=False)
    for site in ("ashburn", "chicago"):
        if site not in scenarios.index:
            continue  # a standby serves nothing: its loss moves nothing
        exposure = failover_exposure(n_plus_one_folder, site_ids=[site])
        headline = exposure.headline
        assert headline["served_there_tok_s"] == pytest.approx(scenarios.loc[site, "served_tok_s"], rel=1e-6)
        # The what-if LP may use any pair inside the objectives: it moves at least what the plan protected.
        assert headline["rerouted_tok_s"] >= scenarios.loc[site, "moved_tok_s"] * (1 - 1e-6)
        assert headline["unserved_tok_s"] == 0.0
        used = exposure.sites.set_index("site_id")
        assert (used["peak_nodes_used"] <= used["nodes"] * (1 + 1e-9)).all()
        # TTFT after the loss is the TTFT at the site that takes the load, the figure failover.csv holds.
        to = rows[rows["failed"] == site]
        for _, commodity in exposure.commodities.iterrows():
            at = to[(to["population_id"] == commodity["population_id"]) & (to["class"] == commodity["class"])]
            kept_elsewhere = commodity["served_there_tok_s"] < _total_served(n_plus_one_folder, commodity["population_id"])
            if len(at["serving_site_id"].unique()) == 1 and not kept_elsewhere:
                assert commodity["ttft_p99_after_ms"] == pytest.approx(float(at["ttft_p99_ms"].iloc[0]), rel=1e-6)
            assert commodity["ttft_p99_after_ms"] <= commodity["ttft_objective_ms"]


def _total_served(folder: Path, population_id: str) -> float:
    assignments = pd.read_csv(folder / "assignments.csv", keep_default_na=False)
    return float(assignments[assignments["population_id"] == population_id]["goodput_tok_s"].sum())


def test_losing_frankfurt_leaves_berlin_and_paris_unserved_by_name(n_plus_one_folder: Path) -> None:
    exposure = failover_exposure(n_plus_one_folder, site_ids=["frankfurt"])
    table = exposure.commodities.set_index("population")
    assert set(table.index) == {"Berlin", "Paris"}
    assert (table["unserved_tok_s"] == table["served_there_tok_s"]).all()
    assert exposure.headline["populations_unserved"] == 2


def test_a_domain_fails_all_its_sites_at_once(n_plus_one_folder: Path) -> None:
    exposure = failover_exposure(n_plus_one_folder, domain="us-east")
    assert exposure.kind == "domain" and exposure.label == "us-east"
    assert set(exposure.failed_site_ids) == {"ashburn", "chicago"}
    # Both US sites lost: nothing else reaches New York or Chicago.
    assert exposure.headline["rerouted_tok_s"] == pytest.approx(0.0, abs=1e-6)
    us = sum(_served_at(n_plus_one_folder, s) for s in ("ashburn", "chicago"))
    assert exposure.headline["unserved_tok_s"] == pytest.approx(us, rel=1e-6)
    # Several --site give the same loss.
    both = failover_exposure(n_plus_one_folder, site_ids=["ashburn", "chicago"])
    assert both.headline["unserved_tok_s"] == pytest.approx(exposure.headline["unserved_tok_s"])


def test_the_command_prints_the_table_and_writes_its_folder_whole(
    n_plus_one_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["failover", str(n_plus_one_folder), "--site", "frankfurt", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "if site frankfurt is lost now" in printed
    assert "Berlin" in printed and "unserved" in printed
    written = n_plus_one_folder / exposure_folder_name("frankfurt")
    assert sorted(p.name for p in written.iterdir()) == [
        "failover_exposure.csv",
        "failover_exposure.json",
        "failover_exposure_sites.csv",
    ]
    headline = json.loads((written / "failover_exposure.json").read_text())
    assert headline["failed_site_ids"] == ["frankfurt"]
    table = pd.read_csv(written / "failover_exposure.csv", keep_default_na=False)
    assert table["unserved_tok_s"].sum() == pytest.approx(headline["unserved_tok_s"])
    # --json prints the headline and where it went.
    assert main(["failover", str(n_plus_one_folder), "--domain", "us-east", "--json"]) == 0
    printed_json = json.loads(capsys.readouterr().out)
    assert printed_json["failed"] == "us-east" and Path(printed_json["folder"]).name == "failover-us-east"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--site", "chicagoo"], "did you mean chicago"),
        ([], "nothing fails"),
        (["--domain", "us-west"], "us-west"),
    ],
)
def test_bad_requests_end_in_a_clear_error_and_write_nothing(
    n_plus_one_folder: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    before = sorted(p.name for p in n_plus_one_folder.iterdir())
    assert main(["failover", str(n_plus_one_folder), *args, "--quiet"]) in (1, 2)
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "Fix:" in err
    assert sorted(p.name for p in n_plus_one_folder.iterdir()) == before


def test_a_folder_that_is_not_a_plan_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["failover", str(tmp_path / "nowhere"), "--site", "x"]) in (1, 2)
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["failover", str(tmp_path / "empty"), "--site", "x"]) in (1, 2)
    assert "not a results folder" in capsys.readouterr().err


def test_out_may_not_be_the_plan_folder(plain_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (plain_folder / "sites.csv").read_bytes()
    assert main(["failover", str(plain_folder), "--site", "frankfurt", "--out", str(plain_folder), "--quiet"]) in (1, 2)
    assert "replace the plan's folder" in capsys.readouterr().err
    assert (plain_folder / "sites.csv").read_bytes() == before


def test_a_build_out_and_its_years_are_refused_saying_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "bo"
    (folder / "years" / "2027").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"kind": "buildout", "years": [{"year": 2027}, {"year": 2028}]}))
    assert main(["failover", str(folder), "--site", "x"]) in (1, 2)
    err = capsys.readouterr().err
    assert "is a build-out (years 2027-2028)" in err and "To failover one year" in err and "Traceback" not in err
    year = folder / "years" / "2027"
    (year / "summary.json").write_text(json.dumps({"year": 2027, "demand_scenario": "base"}))
    assert main(["failover", str(year), "--site", "x"]) in (1, 2)
    assert "year 2027 of a build-out" in capsys.readouterr().err


@pytest.mark.slow
def test_the_default_plan_prints_the_exposure_of_its_busiest_site(
    world_results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sites = _sites(world_results)
    busiest = str(sites["goodput_tok_s"].idxmax())
    assert main(["failover", str(world_results), "--site", busiest, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"if site {busiest} is lost now" in printed and "re-routed inside the objectives" in printed
    headline = json.loads((world_results / f"failover-{busiest}" / "failover_exposure.json").read_text())
    assert headline["served_there_tok_s"] == pytest.approx(float(sites.loc[busiest, "goodput_tok_s"]), rel=1e-6)
    moved_plus_unserved = headline["rerouted_tok_s"] + headline["unserved_tok_s"]
    assert moved_plus_unserved == pytest.approx(headline["served_there_tok_s"], rel=1e-9)
    receiving = pd.read_csv(world_results / f"failover-{busiest}" / "failover_exposure_sites.csv")
    assert (receiving["peak_nodes_used"] <= receiving["nodes"] * (1 + 1e-9)).all()
    assert busiest not in set(receiving["site_id"])


def test_the_plan_names_the_populations_whose_sites_share_one_domain(n_plus_one_folder: Path) -> None:
    notes = json.loads((n_plus_one_folder / "summary.json").read_text())["notes"]
    assert "  - New York (US), class chat: every site in reach is in us-east" in notes
    assert "  - Chicago (US), class chat: every site in reach is in us-east" in notes
    assert not any("Berlin" in note and "us-east" in note for note in notes)
