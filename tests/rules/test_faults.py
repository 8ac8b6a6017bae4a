"""Fault domains: from a catalog column or a list, checked against the catalog, found by name, planned for."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from placement._errors import InputError
from placement.cli import main
from placement.rules.faults import catalog_domains, fault_domains, find_domain
from placement.scenario.load import load_scenario
from placement.scenario.sections import FaultToleranceSection
from placement.world.catalog import load_catalog
from tests.conftest import CATALOG_HEADER, nested_mismatch, write_scenario

GROUPED = CATALOG_HEADER.replace("locked\n", "locked,grid_region,campus\n") + (
    "ashburn,Ashburn,US,North America,39.04,-77.49,50,80,1.3,10000000,false,US-PJM,\n"
    "chicago,Chicago,US,North America,41.88,-87.63,50,60,1.3,10000000,false,US-PJM,\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,120,1.3,10000000,false,DE-national,fra\n"
)


def _sites(tmp_path: Path) -> pd.DataFrame:
    (tmp_path / "grouped.csv").write_text(GROUPED)
    return load_catalog(tmp_path / "grouped.csv")


def test_a_column_groups_the_sites_that_share_a_value(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    domains = fault_domains(FaultToleranceSection(n_plus_one=True, domains="grid_region"), sites, source="s.yaml")
    assert domains is not None and domains.grouping == "grid_region"
    assert domains.names == ("DE-national", "US-PJM")
    assert domains.sites_of("US-PJM") == ("ashburn", "chicago")
    assert set(catalog_domains(sites)) == {"grid_region", "campus"}
    assert catalog_domains(sites)["campus"].names == ("fra",)  # an empty cell is in no domain


def test_listed_domains_name_every_unknown_site(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    section = FaultToleranceSection(n_plus_one=True, domains={"east": ["ashburn", "chicgo"], "eu": ["frankfrt"]})
    with pytest.raises(InputError) as error:
        fault_domains(section, sites, source="s.yaml")
    text = str(error.value)
    assert "fault_tolerance.domains.east[1]" in text and "did you mean 'chicago'" in text
    assert "fault_tolerance.domains.eu[0]" in text and "did you mean 'frankfurt'" in text
    listed = fault_domains(FaultToleranceSection(n_plus_one=True, domains={"east": ["chicago", "ashburn"]}), sites, source="s")
    assert listed is not None and listed.site_ids == (("ashburn", "chicago"),)  # catalog order


def test_a_column_the_catalog_lacks_or_that_groups_nothing_is_refused(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    with pytest.raises(InputError, match=r"no column 'grid_regoin'.*did you mean 'grid_region'"):
        fault_domains(FaultToleranceSection(n_plus_one=True, domains="grid_regoin"), sites, source="s.yaml")
    with pytest.raises(InputError, match="puts no two sites in one domain"):
        fault_domains(FaultToleranceSection(n_plus_one=True, domains="campus"), sites, source="s.yaml")


def test_domains_without_n_plus_one_or_with_an_empty_list_are_refused(tmp_path: Path) -> None:
    for fault_tolerance, message in (
        ({"domains": "grid_region"}, "needs fault_tolerance.n_plus_one: true"),
        ({"n_plus_one": True, "domains": {"east": []}}, "list no sites"),
    ):
        scenario = write_scenario(tmp_path, fault_tolerance=fault_tolerance)
        with pytest.raises(InputError, match=message):
            load_scenario(scenario)


def test_validate_checks_the_domains_against_the_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write_scenario(tmp_path, catalog=GROUPED, fault_tolerance={"n_plus_one": True, "domains": {"x": ["nowhere"]}})
    assert main(["validate", str(scenario)]) == 1
    printed = capsys.readouterr()
    assert "unknown site 'nowhere'" in printed.out + printed.err and "Traceback" not in printed.out + printed.err


def test_find_domain_by_name_column_value_or_says_what_exists(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    assert find_domain("US-PJM", sites, None) == ("grid_region:US-PJM", ("ashburn", "chicago"))
    assert find_domain("campus:fra", sites, None) == ("campus:fra", ("frankfurt",))
    with pytest.raises(InputError) as error:
        find_domain("US-PJN", sites, None)
    assert "did you mean 'grid_region:US-PJM'" in str(error.value) or "US-PJM" in str(error.value)


def test_a_domain_holding_every_site_in_reach_leaves_its_populations_exposed_not_unserved(tmp_path: Path) -> None:
    # New York and Chicago reach Ashburn and Chicago only, both in US-PJM: protected against either site,
    # not against the region. They stay served; the region's loss is listed as unprotected.
    scenario = write_scenario(
        tmp_path, catalog=GROUPED, policy={"unreachable": "report"},
        fault_tolerance={"n_plus_one": True, "domains": "grid_region"},
    )  # fmt: skip
    assert main(["solve", str(scenario), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["unserved_share"] == pytest.approx(0.0, abs=1e-9)
    assert summary["fault_domains"] == {"grouping": "grid_region", "domains": {"US-PJM": ["ashburn", "chicago"]}}
    assert nested_mismatch(summary, "fault_domains") == ([], [])  # as the output reference describes them
    assert summary["unprotectable_share"] == pytest.approx(1.0)  # Berlin, Paris: one site; New York, Chicago: one region
    scenarios = pd.read_csv(tmp_path / "out" / "failover_scenarios.csv", keep_default_na=False).set_index("failed")
    assert scenarios.loc["US-PJM", "failed_kind"] == "domain"
    assert scenarios.loc["US-PJM", "moved_tok_s"] == 0
    assert scenarios.loc["US-PJM", "unprotected_tok_s"] == pytest.approx(scenarios.loc["US-PJM", "served_tok_s"])
