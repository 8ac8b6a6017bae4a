"""Regions scenario keys name (countries, continents), demand by region, and the rules a plan reports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError
from placement.instance.load import load_populations
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from placement.world.demand import Populations
from placement.world.regions import continents, country_table, is_region_key, region_values
from tests.conftest import write_scenario


def _populations(path: Path) -> Populations:
    loaded = load_scenario(path)
    return load_populations(loaded.scenario.demand, loaded.resolve, source=str(loaded.path))


def test_country_table_reads_namibia_as_a_country() -> None:
    table = country_table()
    assert table.loc["NA", "name"] == "Namibia" and table.loc["NA", "continent"] == "Africa"
    assert table.loc["CN", "continent"] == "Asia" and "IN" in table.loc["CN", "neighbours"].split(",")
    assert len(table) > 240
    assert set(continents()) >= {"Africa", "Asia", "Europe", "North America", "Oceania", "South America"}


def test_a_country_key_wins_over_its_continent() -> None:
    values = region_values(["DE", "FR", "US", "BR"], {"Europe": 0.3, "FR": 0.5}, 0.1)
    assert values.tolist() == [0.3, 0.5, 0.1, 0.1]
    assert is_region_key("Europe") and is_region_key("NA") and not is_region_key("Europa")


def test_adoption_by_region_scales_that_region_only(tmp_path: Path) -> None:
    base = _populations(write_scenario(tmp_path))
    regional = tmp_path / "regional"
    regional.mkdir()
    path = write_scenario(regional, demand={"adoption_by_region": {"Europe": 0.10, "FR": 0.15}, "growth_by_region": {"US": 2.0}})
    scaled = _populations(path)
    ratio = dict(
        zip(scaled.table["name"], scaled.table["demand_tok_s"].to_numpy() / base.table["demand_tok_s"].to_numpy(), strict=True)
    )
    # adoption 0.05 everywhere before: Berlin x2 (Europe 0.10), Paris x3 (FR 0.15 wins), US cities x2 (growth)
    assert ratio["Berlin"] == pytest.approx(2.0) and ratio["Paris"] == pytest.approx(3.0)
    assert ratio["New York"] == pytest.approx(2.0) and ratio["Chicago"] == pytest.approx(2.0)


def test_unknown_region_and_bad_adoption_are_refused_together(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, demand={"adoption_by_region": {"Europa": 0.2, "US": 1.5}})
    with pytest.raises(InputError) as info:
        load_scenario(path)
    text = str(info.value)
    assert "'Europa' is neither an ISO alpha-2 country code" in text and "Europe" in text
    assert "adoption_by_region.US: 1.5 must be > 0 and <= 1" in text


def test_plan_names_the_residency_rule_and_where_power_binds(tmp_path: Path) -> None:
    # Germans only from Germany; Frankfurt serves only Germany; then Frankfurt with 0.05 MW: its power binds
    path = write_scenario(
        tmp_path,
        residency={"rules": [{"populations": ["DE"], "sites": ["DE"]}], "domestic_only_sites": ["DE"]},
        policy={"unreachable": "report"},
    )
    plan = run(load_scenario(path))
    notes = "\n".join(plan.notes)
    assert "Rules that shaped the plan:" in notes
    assert "populations in DE are served only from sites in DE" in notes
    assert "sites in DE serve only their own country" in notes
    barred = plan.assignments[(plan.assignments["country_code"] == "FR") & (plan.assignments["site_id"] == "frankfurt")]
    assert barred.empty  # Paris may not use Frankfurt, and Paris has no other site inside 300 ms
    assert "power binds" not in notes  # 50 MW each: nothing near its limit
    tight = tmp_path / "tight"
    tight.mkdir()
    catalog = (
        (tmp_path / "catalog.csv")
        .read_text(encoding="utf-8")
        .replace("Frankfurt,DE,Europe,50.11,8.68,50", "Frankfurt,DE,Europe,50.11,8.68,0.05")
    )
    small = write_scenario(tight, catalog=catalog, policy={"unreachable": "report"})
    notes = "\n".join(run(load_scenario(small)).notes)
    assert "power binds at 1 of" in notes and "frankfurt 0.05 MW" in notes
    assert np.isfinite(plan.summary.objective_usd_per_h)


def test_reports_give_the_rules_their_own_section(tmp_path: Path) -> None:
    from placement.outputs.report_html import render_html
    from placement.outputs.report_md import render_markdown
    from placement.results.record import split_rules

    path = write_scenario(
        tmp_path, residency={"rules": [{"populations": ["DE"], "sites": ["DE"]}]}, policy={"unreachable": "report"}
    )
    plan = run(load_scenario(path))
    rules, others = split_rules(plan.notes)
    assert rules and rules[0] == "residency: populations in DE are served only from sites in DE"
    assert not any("Rules that shaped" in n or n.startswith("  - residency") for n in others)
    markdown = render_markdown(plan.summary, plan.sites, plan.populations, plan.notes)
    assert "## Rules that shaped the plan\n\n- residency: populations in DE are served only from sites in DE" in markdown
    page = render_html(plan.summary, plan.sites, plan.populations, plan.notes, tmp_path)
    assert "<h2>Rules that shaped the plan</h2><ul><li>residency: populations in DE" in page.replace("\n", "")
    assert split_rules(["a note"]) == ([], ["a note"])
