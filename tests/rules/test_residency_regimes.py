"""Residency regimes as data: a share of a bloc's demand served in-bloc, checked by hand and on the bundled world."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from placement._errors import InputError
from placement.analyses.diff import diff_plans, render_diff
from placement.analyses.rule_binds import rule_binds
from placement.analyses.rule_price import price_rules
from placement.cli import main as cli_main
from placement.instance.build import build_instance
from placement.plan.solve import run
from placement.rules.residency import FREE, REGIMES_CSV, Regime, load_regime_table, split_commodities
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, DEFAULT_SCENARIO, nested_mismatch, write_scenario

HEADER = "regime_id,name,members,sites,share,serve_outsiders,simplification,source\n"
EU = frozenset(
    {
        "AT",
        "BE",
        "BG",
        "HR",
        "CY",
        "CZ",
        "DK",
        "EE",
        "FI",
        "FR",
        "DE",
        "GR",
        "HU",
        "IE",
        "IT",
        "LV",
        "LT",
        "LU",
        "MT",
        "NL",
        "PL",
        "PT",
        "RO",
        "SK",
        "SI",
        "ES",
        "SE",
        "IS",
        "LI",
        "NO",
    }
)

# Two blocs and a site outside both: Montreal's power is the cheapest, so without rules one site there
# serves everybody (every site is inside a 2 s objective, and one node carries the whole world's peak).
TWO_BLOCS = CATALOG_HEADER + (
    "montreal,Montreal,CA,North America,45.50,-73.57,50,30,1.3,10000000,false\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,120,1.3,10000000,false\n"
    "paris,Paris,FR,Europe,48.85,2.35,50,100,1.3,10000000,false\n"
    "ashburn,Ashburn,US,North America,39.04,-77.49,50,80,1.3,10000000,false\n"
    "chicago,Chicago,US,North America,41.88,-87.63,50,60,1.3,10000000,false\n"
)
BLOC_REGIMES = HEADER + (
    "bloc-a,Bloc A,DE FR,,*=0.5,true,half of A's demand in A,test\n"
    "bloc-b,Bloc B,US,,*=0.5,false,half of B's demand in B; B's sites only for B,test\n"
)


def _two_blocs(tmp_path: Path, regimes: list[object]) -> Path:
    (tmp_path / "regimes.csv").write_text(BLOC_REGIMES)
    residency = {"regimes": regimes, "regimes_file": "regimes.csv"} if regimes else {}
    classes = [{**yaml.safe_load(write_scenario(tmp_path).read_text())["classes"][0], "ttft_p99_ms": 2000}]
    return write_scenario(
        tmp_path,
        catalog=TWO_BLOCS,
        classes=classes,
        demand={"adoption": 0.001},
        residency=residency,
    )


def _default_with(folder: Path, residency: dict[str, object]) -> Path:
    """The bundled default scenario with another residency section, written in ``folder`` (its paths made absolute)."""
    raw = yaml.safe_load(DEFAULT_SCENARIO.read_text())
    raw["residency"] = residency
    for key, field in (("sites", "catalog"), ("demand", "cities"), ("time", "profile")):
        raw[key][field] = str((DEFAULT_SCENARIO.parent / raw[key][field]).resolve())
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_two_blocs_by_hand(tmp_path: Path) -> None:
    """Worked by hand: each bloc must open its own cheapest site; B's site may take only B; Montreal is not worth a third.

    Without rules: Montreal alone (cheapest power, one site's fixed cost). With half of each bloc's demand
    in-bloc: a site in A (Paris, cheaper than Frankfurt) and one in B (Chicago, cheaper than Ashburn) must
    open; a third site costs its fixed charge and a node for nothing, so Montreal stays shut. A's free half
    may not use Chicago (B serves no outsiders), so all of A is at Paris; B's free half goes to the cheaper
    energy of the two open sites, Chicago (60 $/MWh against Paris's 100).
    """
    (tmp_path / "free").mkdir()
    free = run(load_scenario(_two_blocs(tmp_path / "free", [])))
    assert sorted(free.sites.loc[free.sites["open"], "site_id"]) == ["montreal"]

    (tmp_path / "blocs").mkdir()
    plan = run(load_scenario(_two_blocs(tmp_path / "blocs", ["bloc-a", "bloc-b"])))
    assert sorted(plan.sites.loc[plan.sites["open"], "site_id"]) == ["chicago", "paris"]
    a = plan.assignments
    site_of = {"DE": "paris", "FR": "paris", "US": "chicago"}
    assert (a["site_id"] == a["country_code"].map(site_of)).all()
    regulated = a[a["regime"] != ""]
    assert set(regulated["regime"]) == {"bloc-a", "bloc-b"}
    by_country = a.groupby("country_code")["goodput_tok_s"].sum()
    in_bloc = regulated.groupby("country_code")["goodput_tok_s"].sum()
    assert (in_bloc / by_country).to_numpy() == pytest.approx(0.5), "exactly the regulated half is a regime's"
    assert plan.summary.unserved_share == pytest.approx(0.0)
    assert plan.summary.objective_usd_per_h > free.summary.objective_usd_per_h
    assert any("bloc-b" in n and "serve no one else" in n for n in plan.notes)


def test_a_share_of_one_splits_nothing_and_share_zero_restricts_nothing() -> None:
    countries = np.array(["DE", "US"])
    population, workload = np.repeat(np.arange(2), 2), np.tile(np.arange(2), 2)
    regime = Regime("r", "R", frozenset({"DE"}), frozenset({"DE"}), (1.0, 0.25), True, "s", "src")
    split = split_commodities(countries, population, workload, [regime])
    assert split.population.tolist() == [0, 0, 1, 1, 0], "the split part is appended after the commodities"
    assert split.regime.tolist() == [0, FREE, FREE, FREE, 0]
    assert split.demand_factor.tolist() == [1.0, 0.75, 1.0, 1.0, 0.25]


def test_the_china_rule_is_one_entry_of_the_table(tmp_path: Path) -> None:
    """cn-pipl permits exactly the pairs the hand-written rule did on the bundled world."""
    assert yaml.safe_load(DEFAULT_SCENARIO.read_text())["residency"] == {"regimes": ["cn-pipl"]}
    path = _default_with(tmp_path, {"rules": [{"populations": ["CN"], "sites": ["CN"]}], "domestic_only_sites": ["CN"]})
    table = load_regime_table()
    assert table["cn-pipl"].members == frozenset({"CN"}) and not table["cn-pipl"].serve_outsiders
    new = build_instance(load_scenario(DEFAULT_SCENARIO))
    old = build_instance(load_scenario(path))
    assert np.array_equal(new.allowed.bits, old.allowed.bits)
    assert np.array_equal(new.commodity_population, old.commodity_population)


@pytest.mark.slow  # the bundled world, solved (world_results)
def test_the_default_world_keeps_an_eu_share_of_agent_traffic_in_the_eu(tmp_path: Path, world_results: Path) -> None:
    eu = {"id": "eu-gdpr", "share": {"chat": 0.0, "agent": 0.3, "batch": 0.0}}
    path = _default_with(tmp_path, {"regimes": ["cn-pipl", eu]})
    plan = run(load_scenario(path))
    a = plan.assignments
    country = plan.sites.set_index("site_id")["country_code"]
    regulated = a[a["regime"] == "eu-gdpr"]
    assert len(regulated) and set(regulated["class"]) == {"agent"}
    assert regulated["site_id"].map(country).isin(EU).all(), "the regulated share is served at EU/EEA sites"
    eu_agent = a[a["country_code"].isin(EU) & (a["class"] == "agent")]
    assert regulated["goodput_tok_s"].sum() == pytest.approx(0.3 * eu_agent["goodput_tok_s"].sum(), rel=1e-6)
    without = pd.read_json(world_results / "summary.json", typ="series")
    assert plan.summary.cost_per_million_goodput_tokens_usd >= without["cost_per_million_goodput_tokens_usd"] - 1e-9
    assert any("eu-gdpr" in n for n in plan.notes)


def test_the_bundled_regimes_are_cited_simplifications() -> None:
    table = load_regime_table(REGIMES_CSV)
    assert {"cn-pipl", "ru-242fz", "eu-gdpr", "in-dpdp", "sa-pdpl", "id-pp71", "vn-decree53"} <= set(table)
    for row in table.values():
        assert row.simplification and row.source
        assert all(0.0 <= s <= 1.0 for s in row.share.values())
    assert table["eu-gdpr"].members == EU


def test_bad_regime_rows_are_gathered_with_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "regimes.csv"
    path.write_text(HEADER + "a,A,DE XX,,*=1.5,true,s,src\na,B,FR,,chat,maybe,s,src\n")
    with pytest.raises(InputError) as caught:
        load_regime_table(path)
    text = str(caught.value)
    for expected in (
        "unknown country code 'XX'",
        "*=1.5 is outside [0, 1]",
        "'chat' is not class=share",
        "'a' repeats",
        "true or false",
    ):
        assert expected in text
    assert "row 2" in text and "members" in text


def test_bad_regime_choices_are_gathered(tmp_path: Path) -> None:
    (tmp_path / "regimes.csv").write_text(BLOC_REGIMES + "bloc-c,Bloc C,DE,,*=1,true,overlaps A,test\n")
    path = write_scenario(
        tmp_path,
        catalog=TWO_BLOCS,
        residency={
            "regimes_file": "regimes.csv",
            "regimes": ["bloc-a", "bloc-c", "nowhere", {"id": "bloc-b", "share": {"chat": 1.5, "video": 0.2}}],
        },
    )
    with pytest.raises(InputError) as caught:
        build_instance(load_scenario(path))
    text = str(caught.value)
    assert "DE is a member of both 'bloc-a' and 'bloc-c' (overlapping blocs)" in text
    assert "unknown regime 'nowhere'" in text
    assert "unknown class 'video'" in text
    assert "chat: 1.5 is outside [0, 1]" in text
    assert "residency.regimes[3]" in text


def test_the_price_of_each_bloc_by_hand(tmp_path: Path) -> None:
    """Each rule dropped alone, worked by hand on the two blocs.

    Without bloc B's rule, Paris (A's site, open to outsiders) serves everybody: one site. Without bloc A's,
    Chicago must open for B's half and may serve only B, so A's demand needs a second site: Montreal, the
    cheapest power outside B, which then takes B's free half too (30 $/MWh against Chicago's 60).
    """
    loaded = load_scenario(_two_blocs(tmp_path, ["bloc-a", "bloc-b"]))
    plan = run(loaded)
    table, headlines = price_rules(loaded, plan)
    by_rule = {h.rule_id: h for h in headlines}
    assert set(by_rule) == {"bloc-a", "bloc-b"}
    assert by_rule["bloc-b"].sites_open_without == 1 and by_rule["bloc-a"].sites_open_without == 2
    for h in headlines:
        assert h.sites_open_with == 2
        assert h.usd_per_m_with is not None and h.usd_per_m_without is not None
        assert h.usd_per_m_with > h.usd_per_m_without, "each rule costs something here"
    totals = table[table["region"] == "all"].set_index("rule_id")
    regions = table[table["region"] != "all"].groupby("rule_id")[["mw_with", "mw_without"]].sum()
    assert regions["mw_with"].to_numpy() == pytest.approx(totals.loc[regions.index, "mw_with"].to_numpy())
    assert regions["mw_without"].to_numpy() == pytest.approx(totals.loc[regions.index, "mw_without"].to_numpy())
    europe = table[(table["rule_id"] == "bloc-a") & (table["region"] == "Europe")].iloc[0]
    assert europe["mw_with"] > 0 and europe["mw_without"] == 0, "without A's rule nothing is built in Europe"

    binds = {b["rule_id"]: b for b in rule_binds(plan.instance, plan.sites["open"].to_numpy(bool))}
    kept = {(b["country_code"], tuple(b["open_sites_barred"])) for b in binds["bloc-b"]["binds_at_open_sites"]}
    # B's sites serve no outsiders (A's users kept from Chicago); B's regulated half stays in B (kept from Paris).
    assert kept == {("DE", ("chicago",)), ("FR", ("chicago",)), ("US", ("paris",))}
    assert binds["bloc-a"]["binds_at_open_sites"] and all(
        b["country_code"] in {"DE", "FR"} for b in binds["bloc-a"]["binds_at_open_sites"]
    )


def test_solve_prices_the_rules_and_diff_shows_them_by_continent(tmp_path: Path) -> None:
    scenario = _two_blocs(tmp_path, ["bloc-a", "bloc-b"])
    assert cli_main(["solve", str(scenario), "--out", str(tmp_path / "with"), "--no-maps", "--quiet", "--price-rules"]) == 0
    prices = pd.read_csv(tmp_path / "with" / "rule_prices.csv")
    assert set(prices["rule_id"]) == {"bloc-a", "bloc-b"} and "all" in set(prices["region"])
    summary = json.loads((tmp_path / "with" / "summary.json").read_text())
    assert [r["rule_id"] for r in summary["rule_prices"]] == ["bloc-a", "bloc-b"]
    assert nested_mismatch(summary, "rule_prices") == ([], [])  # each rule's keys as the output reference says
    assert any(n.startswith("  - price of bloc-a") for n in summary["notes"])
    assert "price of bloc-b" in (tmp_path / "with" / "report.md").read_text()

    (tmp_path / "free").mkdir()
    free = _two_blocs(tmp_path / "free", [])
    assert cli_main(["solve", str(free), "--out", str(tmp_path / "without"), "--no-maps", "--quiet"]) == 0
    diff = diff_plans(tmp_path / "without", tmp_path / "with")
    regions = diff.regions.set_index("region")
    assert regions.loc["Europe", "mw_used_a"] == 0 and regions.loc["Europe", "mw_used_b"] > 0
    assert regions["mw_used_b"].sum() == pytest.approx(summary["mw_used"])
    assert [r["rule_id"] for r in diff.rule_prices["b"]] == ["bloc-a", "bloc-b"] and diff.rule_prices["a"] == []
    assert "by continent of the sites" in render_diff(diff)


def test_a_buildout_refuses_price_rules_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = Path(__file__).parents[1] / "data" / "buildout_small.yaml"
    assert cli_main(["solve", str(small), "--out", str(tmp_path / "out"), "--price-rules", "--quiet"]) != 0
    assert "availability: {enforce: false}" in capsys.readouterr().err


def test_the_buildout_keeps_a_regulated_share_in_bloc(tmp_path: Path) -> None:
    """One year of the small European build-out, half of Germany's chat bound to Nordic sites."""
    small = Path(__file__).parents[1] / "data" / "buildout_small.yaml"
    raw = yaml.safe_load(small.read_text())
    raw["demand"]["clusters"] = 12
    raw["time"] = {"slices": 1}
    raw["residency"] = {"regimes": ["de-nordic"], "regimes_file": "regimes.csv"}
    horizon = raw["horizon"]
    horizon.update(years=[2028], clusters=12, time_slices=1, existing_fleet=[])
    horizon["accelerators"] = [a for a in horizon["accelerators"] if a["id"] == "b200"]
    horizon["demand_scenarios"] = [{"name": "base", "probability": 1.0}]
    horizon["power_schedule"] = str((small.parent / horizon["power_schedule"]).resolve())
    for key, field in (("sites", "catalog"), ("demand", "cities")):
        raw[key][field] = str((small.parent / raw[key][field]).resolve())
    (tmp_path / "regimes.csv").write_text(
        HEADER + "de-nordic,Germany to the Nordics,DE,SE FI NO,chat=0.5 batch=0,true,test,test\n"
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert cli_main(["solve", str(path), "--out", str(tmp_path / "out"), "--no-maps", "--quiet"]) == 0
    year = tmp_path / "out" / "years" / "2028"
    a = pd.read_csv(year / "assignments.csv", keep_default_na=False)
    country = pd.read_csv(year / "sites.csv").set_index("site_id")["country_code"]
    regulated = a[a["regime"] == "de-nordic"]
    assert len(regulated) and regulated["site_id"].map(country).isin({"SE", "FI", "NO"}).all()
    german_chat = a[(a["country_code"] == "DE") & (a["class"] == "chat")]["goodput_tok_s"].sum()
    assert regulated["goodput_tok_s"].sum() == pytest.approx(0.5 * german_chat, rel=1e-6)
    assert set(regulated["class"]) == {"chat"}


def test_a_regulated_part_with_no_in_bloc_site_in_reach_is_diagnosed(tmp_path: Path) -> None:
    """US users whose half must be served in Germany: no German site is inside their 300 ms objective."""
    from placement._errors import InfeasibleError

    (tmp_path / "regimes.csv").write_text(HEADER + "us-in-de,US data in Germany,US,DE,*=0.5,true,test,test\n")
    path = write_scenario(tmp_path, residency={"regimes": ["us-in-de"], "regimes_file": "regimes.csv"})
    with pytest.raises(InfeasibleError) as caught:
        run(load_scenario(path))
    text = str(caught.value)
    assert "New York (US), class chat (its us-in-de part, in-bloc sites only)" in text
    assert "Berlin" not in text, "German users are not restricted"


def test_validate_checks_the_regimes_without_solving(tmp_path: Path) -> None:
    from placement.analyses.validate import validate_file

    (tmp_path / "regimes.csv").write_text(BLOC_REGIMES)
    path = write_scenario(
        tmp_path, catalog=TWO_BLOCS, residency={"regimes": ["bloc-a", "nowhere"], "regimes_file": "regimes.csv"}
    )
    with pytest.raises(InputError, match="unknown regime 'nowhere'"):
        validate_file(path)
