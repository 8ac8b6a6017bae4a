"""Energy and emissions of a plan (:mod:`placement.economics.footprint`): by hand, and against the cost model's power bill."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from placement.economics import footprint
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, REPO, write_scenario

CARBON_CATALOG = CATALOG_HEADER.replace(",locked\n", ",locked,carbon_intensity_g_per_kwh\n") + (
    "ashburn,Ashburn,US,North America,39.04,-77.49,50,80,1.3,10000000,false,380\n"
    "chicago,Chicago,US,North America,41.88,-87.63,50,60,1.3,10000000,false,420\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,50,120,1.3,10000000,false,350\n"
)
DYNAMIC_POWER = {"node_kw": 10.2, "headroom": 0.2, "idle_power_share": 0.4}


def _slices(n: int) -> dict[str, object]:
    return {"slices": n} if n == 1 else {"slices": n, "profile": str(REPO / "data" / "demand" / "diurnal_profile.csv")}


def test_site_power_by_hand() -> None:
    # Site 0: 10 nodes and 2 warm-up nodes of 13 kW facility power, 40 % idle; busy 5 then 20 node-equivalents
    # (clipped to its 10 nodes): 0.013 * (0.4 * 12 + 0.6 * 5) = 0.1014 MW, then 0.013 * (4.8 + 6) = 0.1404 MW.
    power = footprint.site_power_mw_by_slice([0.013, 0.02], [10, 0], [2, 0], [[5.0, 20.0], [0.0, 0.0]], 0.4)
    np.testing.assert_allclose(power, [[0.1014, 0.1404], [0.0, 0.0]])
    # 10 h at the first and 14 h at the second, 365 days: (1.014 + 1.9656) * 365 MWh; at 400 then 200 g/kWh.
    np.testing.assert_allclose(footprint.energy_mwh_per_year(power, [10.0, 14.0]), [2.9796 * 365, 0.0])
    carbon = footprint.tco2e_per_year(power, [10.0, 14.0], [[400.0, 200.0], [500.0, 500.0]])
    np.testing.assert_allclose(carbon, [(1.014 * 400 + 1.9656 * 200) * 365 / 1000, 0.0])


def test_per_million_tokens_by_hand() -> None:
    # 1,000 t a year over 1e6 tok/s (31.536e12 tokens, 31.536e6 million): 1e9 g / 31.536e6 = 31.71 g per million.
    assert float(footprint.per_million_tokens(1000.0, 1e6, scale=1e6)) == pytest.approx(1e9 / 31.536e6)
    assert np.isnan(footprint.per_million_tokens(5.0, 0.0))


@pytest.mark.parametrize("slices", [1, 24])
def test_plan_energy_is_what_the_cost_model_bills_for_power(tmp_path: Path, slices: int) -> None:
    # At a flat power price the year's energy, priced at each site's price, is the plan's idle power plus load
    # energy: the figures follow the same nodes and loads the objective pays for. Emissions are energy x intensity.
    path = write_scenario(tmp_path, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER, time=_slices(slices))
    plan = run(load_scenario(path))
    sites, summary = plan.sites, plan.summary
    breakdown = summary.cost_breakdown_usd_per_h
    assert breakdown is not None and breakdown.load_energy_usd_per_h > 0
    billed = float((sites["energy_mwh_per_year"] * sites["power_price_usd_per_mwh"]).sum()) / 8760.0
    assert billed == pytest.approx(breakdown.idle_power_usd_per_h + breakdown.load_energy_usd_per_h, rel=1e-9)
    drawn = sites["carbon_intensity_g_per_kwh"] if slices == 1 else sites["gco2e_per_kwh"]  # 24 h: the hourly shape's
    np.testing.assert_allclose(sites["tco2e_per_year"], sites["energy_mwh_per_year"] * drawn / 1e3)
    if slices > 1:  # drawing more at some hours than others moves the mean a little off the catalog's, not far
        opened = sites[sites["open"]]
        ratio = opened["gco2e_per_kwh"] / opened["carbon_intensity_g_per_kwh"]
        assert ((ratio > 0.8) & (ratio < 1.2)).all() and (abs(ratio - 1) > 1e-6).any()
    assert (sites.loc[~sites["open"], "energy_mwh_per_year"] == 0).all()
    assert summary.tco2e_per_year == pytest.approx(float(sites["tco2e_per_year"].sum()))
    tokens_m = summary.goodput_tok_s * 8760 * 3600 / 1e6
    assert summary.gco2e_per_million_goodput_tokens == pytest.approx(summary.tco2e_per_year * 1e6 / tokens_m)


def test_load_energy_follows_the_goodput_served(tmp_path: Path) -> None:
    # Given goodput 10,000 tok/s a node, 10.2 kW, 60 % of it following the load, PUE 1.3 everywhere: the load draws
    # 0.6 * 10.2 kW * 1.3 per 10,000 tok/s of mean goodput, the idle part 0.4 * 10.2 kW * 1.3 a node, all year.
    plan = run(load_scenario(write_scenario(tmp_path, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER)))
    sites, summary = plan.sites, plan.summary
    load_mw = 0.6 * 10.2e-3 * 1.3 * summary.goodput_tok_s / 10_000
    idle_mw = 0.4 * 10.2e-3 * 1.3 * float(sites["nodes"].sum())
    assert summary.energy_mwh_per_year == pytest.approx((load_mw + idle_mw) * 8760, rel=1e-9)


def test_a_catalog_without_intensities_gives_no_carbon_figures(tmp_path: Path) -> None:
    # Energy is known, emissions are not: no total is made of the sites that have a figure and the ones that do not.
    plan = run(load_scenario(write_scenario(tmp_path, serving=DYNAMIC_POWER)))
    assert plan.summary.energy_mwh_per_year is not None and plan.summary.energy_mwh_per_year > 0
    assert plan.summary.tco2e_per_year is None and plan.summary.gco2e_per_million_goodput_tokens is None


def test_solar_curve_is_a_daytime_half_sine_of_mean_one() -> None:
    curve = footprint.solar_by_local_hour()
    assert curve.mean() == pytest.approx(1.0)
    assert (curve[:6] == 0).all() and (curve[18:] == 0).all()
    assert curve[11] == curve[12] == curve.max()  # symmetric about noon


def test_intensity_shape_by_hand() -> None:
    # Two hours of "day": solar 2 in the first (its mean is 1), 0 in the second. A grid of 20 % solar and 50 % fossil:
    # fossil 0.5 - 0.2 * (2 - 1) = 0.3 by day and 0.5 + 0.2 = 0.7 by night, mean 0.5: multipliers 0.6 and 1.4.
    # Without solar, or without fossil, the shape is flat; solar 60 % against fossil 40 % would take fossil below 0
    # by day: the floor holds it at a tenth of the mean, and the night carries the rest.
    sun = np.array([[2.0, 0.0]] * 4)
    shape = footprint.intensity_shape([0.2, 0.0, 0.3, 0.6], [0.5, 0.7, 0.0, 0.4], sun)
    np.testing.assert_allclose(shape[0], [0.6, 1.4])
    np.testing.assert_allclose(shape[1], [1.0, 1.0])
    np.testing.assert_allclose(shape[2], [1.0, 1.0])
    np.testing.assert_allclose(shape[3], [0.1 / 1.05, 2.0 / 1.05])
    np.testing.assert_allclose(shape.mean(axis=1), 1.0)


# Ashburn and Chicago alike but for power: Chicago's is $20/MWh cheaper and 400 g/kWh dirtier. Every MWh moved from
# Chicago to Ashburn costs $20 and saves 0.4 t: above $50/t Ashburn is the cheaper place to draw it (PUE and node
# power are the same at both, so this holds for idle power and load energy alike).
SHIFT_CATALOG = CATALOG_HEADER.replace(",locked\n", ",locked,carbon_intensity_g_per_kwh\n") + (
    "ashburn,Ashburn,US,North America,39.04,-77.49,200,80,1.3,10000000,false,380\n"
    "chicago,Chicago,US,North America,41.88,-87.63,200,60,1.3,10000000,false,780\n"
    "frankfurt,Frankfurt,DE,Europe,50.11,8.68,200,120,1.3,10000000,false,350\n"
)


def _us_energy(tmp_path: Path, price: float) -> dict[str, float]:
    folder = tmp_path / f"c{price:g}"
    folder.mkdir()
    path = write_scenario(folder, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER, objective={"carbon_usd_per_t": price})
    sites = run(load_scenario(path)).sites.set_index("site_id")
    return {site: float(sites.loc[site, "energy_mwh_per_year"]) for site in ("ashburn", "chicago")}


def test_a_carbon_price_above_the_break_even_moves_the_load_to_the_cleaner_site(tmp_path: Path) -> None:
    below, above = _us_energy(tmp_path, 45.0), _us_energy(tmp_path, 55.0)
    assert below["ashburn"] == 0 and below["chicago"] > 0  # the cheap power wins below $50/t
    assert above["chicago"] == 0 and above["ashburn"] > 0  # the clean power above it
    assert above["ashburn"] == pytest.approx(below["chicago"], rel=1e-6)  # the same work, moved


def test_a_carbon_price_adds_its_charge_to_the_cost_of_a_design(tmp_path: Path) -> None:
    # The design of the plan without a price, costed in the model with one: dearer by exactly price x tonnes.
    plain = run(load_scenario(write_scenario(tmp_path, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER)))
    (tmp_path / "priced").mkdir()
    path = write_scenario(tmp_path / "priced", catalog=CARBON_CATALOG, serving=DYNAMIC_POWER, objective={"carbon_usd_per_t": 100})
    priced = run(load_scenario(path))
    solution, data = plain.solution, priced.instance.inputs
    dearer = data.cost_usd_per_h(solution.open, solution.nodes, solution.pair_share) - plain.summary.objective_usd_per_h
    assert plain.summary.tco2e_per_year is not None and plain.summary.carbon_charge_usd_per_h is None
    assert dearer == pytest.approx(100 * plain.summary.tco2e_per_year / 8760, rel=1e-9)
    assert priced.summary.carbon_charge_usd_per_h == pytest.approx(100 * priced.summary.tco2e_per_year / 8760, rel=1e-9)
    assert priced.summary.objective_usd_per_h >= plain.summary.objective_usd_per_h  # a price never makes it cheaper


def test_a_carbon_price_without_intensities_is_an_input_error(tmp_path: Path) -> None:
    from placement._errors import InputError

    path = write_scenario(tmp_path, objective={"carbon_usd_per_t": 50})
    with pytest.raises(InputError) as caught:
        run(load_scenario(path))
    text = str(caught.value)
    assert "site 'ashburn'" in text and "site 'frankfurt'" in text and "carbon_intensity_g_per_kwh" in text


def _capped(tmp_path: Path, name: str, **objective: float) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return write_scenario(folder, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER, objective=objective)


def test_a_binding_emissions_cap_moves_the_load_to_the_cleaner_site_by_hand(tmp_path: Path) -> None:
    # Uncapped, the US load runs at Chicago (power $20/MWh cheaper, 400 g/kWh dirtier). Serving part of it at Ashburn
    # would open a second site ($250/h fixed), so any cap between "all at Ashburn" and "all at Chicago" is met by
    # moving all of it: the optimum then costs exactly $20 more per MWh moved, and emits 0.4 t less per MWh.
    free = run(load_scenario(_capped(tmp_path, "free")))
    moved_mwh = float(free.sites.set_index("site_id").loc["chicago", "energy_mwh_per_year"])
    assert free.summary.tco2e_per_year is not None and moved_mwh > 0
    cap = free.summary.tco2e_per_year - 0.5 * 0.4 * moved_mwh  # half way: needs the whole move
    capped = run(load_scenario(_capped(tmp_path, "capped", carbon_cap_t_per_year=cap)))
    sites = capped.sites.set_index("site_id")
    assert sites.loc["chicago", "energy_mwh_per_year"] == 0
    assert sites.loc["ashburn", "energy_mwh_per_year"] == pytest.approx(moved_mwh, rel=1e-9)
    assert capped.summary.tco2e_per_year == pytest.approx(free.summary.tco2e_per_year - 0.4 * moved_mwh, rel=1e-9)
    assert capped.summary.tco2e_per_year <= cap
    extra = capped.summary.objective_usd_per_h - free.summary.objective_usd_per_h
    assert extra == pytest.approx(20.0 * moved_mwh / 8760, rel=1e-6)


def test_a_cap_below_the_least_emissions_is_diagnosed(tmp_path: Path) -> None:
    from placement._errors import InfeasibleError

    free = run(load_scenario(_capped(tmp_path, "free")))
    assert free.summary.tco2e_per_year is not None
    with pytest.raises(InfeasibleError, match=r"the carbon cap of [\d,]+ tCO2e a year: the least any plan") as caught:
        run(load_scenario(_capped(tmp_path, "tight", carbon_cap_t_per_year=0.2 * free.summary.tco2e_per_year)))
    least = float(str(caught.value).split("uses is at least ")[1].split(" tCO2e")[0].replace(",", ""))
    assert 0.2 * free.summary.tco2e_per_year < least < free.summary.tco2e_per_year


@pytest.mark.parametrize(
    "overrides",
    [
        {"policy": {"unreachable": "report", "serving": "optional"}},
        {"serving": {**DYNAMIC_POWER, "cross_metro_prefill": {}}},
    ],
    ids=["optional serving", "cross-metro prefill"],
)
def test_a_cap_binds_with_optional_serving_and_with_cross_metro_prefill(tmp_path: Path, overrides: dict[str, object]) -> None:
    # The least $/M search (optional serving) and the priced solve with cross-metro columns hold the cap rows: a cap
    # at 90 % of the uncapped plan's emissions is met, read back from sites.csv as a planner would.
    plans = []
    for name, objective in (("free", {}), ("capped", None)):
        folder = tmp_path / name
        folder.mkdir()
        if objective is None:
            assert plans[0].summary.tco2e_per_year is not None
            objective = {"carbon_cap_t_per_year": 0.9 * plans[0].summary.tco2e_per_year}
        overrides = {"serving": DYNAMIC_POWER, **overrides}
        path = write_scenario(folder, catalog=SHIFT_CATALOG, objective=objective, **overrides)
        plans.append(run(load_scenario(path)))
    free, capped = plans
    assert free.summary.tco2e_per_year is not None and capped.summary.tco2e_per_year is not None
    limit = 0.9 * free.summary.tco2e_per_year
    assert float(capped.sites["tco2e_per_year"].sum()) == pytest.approx(capped.summary.tco2e_per_year, rel=1e-9)
    assert capped.summary.tco2e_per_year <= limit * (1 + 1e-7)
    assert capped.summary.cap_cost is not None and capped.summary.objective_usd_per_h > 0


# Madrid (Spain's mix: a sixth solar, so clean by day and dirty by night) and Keflavik (Iceland: no fossil, flat),
# both in reach of two towns in London; Day Town keeps London's hours, Night Town Tokyo's (busy in Europe's night).
# All power follows the load and nodes cost next to nothing, so a plan's cost is its energy: Madrid's at $40/MWh,
# Keflavik's at $80.
HOURS_CATALOG = CATALOG_HEADER.replace(",locked\n", ",locked,carbon_intensity_g_per_kwh\n") + (
    "madrid,Madrid,ES,Europe,40.42,-3.70,200,40,1.3,0,false,300\n"
    "keflavik,Keflavik,IS,Europe,64.00,-22.56,200,80,1.3,0,false,260\n"
)
HOURS_CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,Day Town,GB,ENG,51.51,-0.13,300000000,Europe/London\n"
    "2,Night Town,GB,ENG,51.45,-0.97,300000000,Asia/Tokyo\n"
)


def _hours_plan(tmp_path: Path, name: str, cap: float | None) -> Plan:
    from tests.conftest import scenario_dict

    folder = tmp_path / name
    folder.mkdir()
    path = write_scenario(
        folder, catalog=HOURS_CATALOG, cities=HOURS_CITIES, classes=[{**scenario_dict()["classes"][0], "ttft_p99_ms": 400}],
        serving={**DYNAMIC_POWER, "idle_power_share": 0.0}, time=_slices(24),
        economics={"site_fixed_cost_usd_per_h": 0, "node_capex_usd": 1, "opex_usd_per_node_h": 0},
        objective={"carbon_cap_t_per_year": 1e30 if cap is None else cap},
    )  # fmt: skip
    return run(load_scenario(path))


def test_a_binding_cap_moves_the_night_load_to_the_site_clean_at_night_by_hand(tmp_path: Path) -> None:
    free = _hours_plan(tmp_path, "free", None)
    data = free.instance.inputs
    (cap,) = data.caps
    pair = {(free.instance.populations.table["name"].iloc[int(free.instance.commodity_population[free.instance.modelled][c])],
             str(free.instance.sites["id"].iloc[j])): k
            for k, (c, j) in enumerate(zip(data.pair_commodity, data.pair_site, strict=True))}  # fmt: skip
    t_per_h, usd_per_h = cap.pair_per_h, data.pair_cost_usd_per_h
    # Madrid is the dirtier place for Night Town's hours and the cleaner one for Day Town's (same yearly figures).
    night_saves = t_per_h[pair["Night Town", "madrid"]] - t_per_h[pair["Night Town", "keflavik"]]
    day_saves = t_per_h[pair["Day Town", "madrid"]] - t_per_h[pair["Day Town", "keflavik"]]
    night_costs = usd_per_h[pair["Night Town", "keflavik"]] - usd_per_h[pair["Night Town", "madrid"]]
    day_costs = usd_per_h[pair["Day Town", "keflavik"]] - usd_per_h[pair["Day Town", "madrid"]]
    assert night_saves > 0 and night_costs / night_saves < day_costs / max(day_saves, 1e-12)
    shares = free.assignments.groupby(["population", "site_id"])["share_of_demand"].sum()
    assert shares["Day Town", "madrid"] == pytest.approx(1.0) and shares["Night Town", "madrid"] == pytest.approx(1.0)
    uncapped = free.summary.tco2e_per_year
    assert uncapped is not None
    for cut in (0.01, 0.04):
        # The optimum moves Night Town only, just enough: a share (cut x E0) / (its saving a year if all moved).
        plan = _hours_plan(tmp_path, f"cut{cut}", (1 - cut) * uncapped)
        moved = plan.assignments.groupby(["population", "site_id"])["share_of_demand"].sum()
        assert moved["Day Town", "madrid"] == pytest.approx(1.0, abs=1e-6)
        assert moved["Night Town", "keflavik"] == pytest.approx(cut * uncapped / (night_saves * 8760), rel=1e-4)
        extra = plan.summary.objective_usd_per_h - free.summary.objective_usd_per_h  # (and whole nodes at $1 each)
        assert extra == pytest.approx(moved["Night Town", "keflavik"] * night_costs, rel=1e-3)


def test_explain_prices_a_binding_cap_by_hand(tmp_path: Path) -> None:
    # Explain holds the cap's row: with the plan's sites fixed, a tonne more lets a tonne's worth of Night Town back to
    # Madrid, so the cap's dual is what moving Night Town costs per tonne it saves. 10 % looser than a cap 4 % below
    # the uncapped emissions no longer binds: it saves all the move cost; 10 % tighter costs at least the dual's worth.
    from placement.analyses.explain import explain, render_table

    free = _hours_plan(tmp_path, "free", None)
    data = free.instance.inputs
    (cap,) = data.caps
    name = free.instance.populations.table["name"].to_numpy()[free.instance.commodity_population[free.instance.modelled]]
    site = free.instance.sites["id"].to_numpy()
    pair = {(name[c], site[j]): k for k, (c, j) in enumerate(zip(data.pair_commodity, data.pair_site, strict=True))}
    saves = cap.pair_per_h[pair["Night Town", "madrid"]] - cap.pair_per_h[pair["Night Town", "keflavik"]]
    costs = data.pair_cost_usd_per_h[pair["Night Town", "keflavik"]] - data.pair_cost_usd_per_h[pair["Night Town", "madrid"]]
    uncapped = free.summary.tco2e_per_year
    assert uncapped is not None
    plan = _hours_plan(tmp_path, "cut", 0.96 * uncapped)
    moved = plan.assignments.groupby(["population", "site_id"])["share_of_demand"].sum()["Night Town", "keflavik"]
    (worth,) = explain(plan.instance, plan.sites).caps
    assert worth["cap"] == "carbon" and worth["limit_per_year"] == pytest.approx(0.96 * uncapped, rel=1e-9)
    assert worth["value_usd_per_unit"] == pytest.approx(costs / saves, rel=1e-3)
    assert worth["looser_saves_usd_per_h"] == pytest.approx(moved * costs, rel=1e-3)
    assert worth["tighter_costs_usd_per_h"] >= worth["value_usd_per_unit"] * 0.096 * uncapped / 8760 * (1 - 1e-6)
    assert "carbon cap of" in render_table(explain(plan.instance, plan.sites))


def _profile_csv(path: Path, rows: dict[str, list[float]]) -> Path:
    lines = ["area,local_hour,gco2e_per_kwh"] + [f"{a},{h},{v}" for a, values in rows.items() for h, v in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_your_own_hourly_intensities_replace_the_catalog_and_the_shape(tmp_path: Path) -> None:
    # The US at a flat 100 g/kWh, Frankfurt's own profile at 500 by night and 50 from 08:00 to 17:59 local time: its
    # slices carry that profile by its local (solar) hour, and each site's emissions are its energy at those figures.
    us, frankfurt = [100.0] * 24, [50.0 if 8 <= h < 18 else 500.0 for h in range(24)]
    _profile_csv(tmp_path / "carbon.csv", {"US": us, "frankfurt": frankfurt})
    time = {**_slices(24), "carbon_intensity_profile": "carbon.csv"}
    plan = run(load_scenario(write_scenario(tmp_path, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER, time=time)))
    intensity = plan.instance.carbon_intensity_g_per_kwh
    assert intensity is not None
    ids = plan.instance.sites["id"].tolist()
    np.testing.assert_allclose(intensity[ids.index("ashburn")], 100.0)
    offset = round(8.68 / 15)  # Frankfurt's solar time: UTC+1
    expected = [frankfurt[(utc + offset) % 24] for utc in range(24)]
    np.testing.assert_allclose(intensity[ids.index("frankfurt")], expected)
    sites = plan.sites.set_index("site_id")
    for us_site in ("ashburn", "chicago"):
        assert sites.loc[us_site, "gco2e_per_kwh"] == pytest.approx(100.0)
    assert 50.0 <= sites.loc["frankfurt", "gco2e_per_kwh"] <= 500.0


def test_a_bad_intensity_profile_names_every_problem(tmp_path: Path) -> None:
    from placement._errors import InputError

    rows = {"US": [100.0] * 23, "atlantis": [1.0] * 24}  # the US misses an hour; no site is called atlantis
    _profile_csv(tmp_path / "carbon.csv", rows)
    with (tmp_path / "carbon.csv").open("a") as handle:
        handle.write("DE,3,-5\n")
    time = {**_slices(24), "carbon_intensity_profile": "carbon.csv"}
    with pytest.raises(InputError) as caught:
        run(load_scenario(write_scenario(tmp_path, catalog=CARBON_CATALOG, serving=DYNAMIC_POWER, time=time)))
    text = str(caught.value)
    assert "'atlantis' is no site id" in text and "gco2e_per_kwh" in text and "must be a number >= 0" in text


def test_a_cap_the_rounding_breaks_holds_the_warm_lp_below_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The priced solve (every model above its pair threshold): the LP at a cap rounded up to whole nodes draws their
    # idle power and breaks it; the warm LP is then held below it and priced on, not solved again from the start.
    # The plan keeps the cap (from sites.csv), its bound is the LP's at the cap itself, and the MILP on the small
    # model agrees within the gaps.
    import placement.optimize.solve as solve_module

    free_folder, small_folder, priced_folder = (tmp_path / n for n in ("free", "small", "priced"))
    free_folder.mkdir()
    free = run(load_scenario(write_scenario(free_folder, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER)))
    assert free.summary.tco2e_per_year is not None
    objective = {"carbon_cap_t_per_year": 0.97 * free.summary.tco2e_per_year}
    small_folder.mkdir()
    small = run(load_scenario(write_scenario(small_folder, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER, objective=objective)))
    monkeypatch.setattr(solve_module, "PRICING_FROM_PAIRS", 0)
    priced_folder.mkdir()
    lines: list[str] = []
    path = write_scenario(priced_folder, catalog=SHIFT_CATALOG, serving=DYNAMIC_POWER, objective=objective)
    priced = run(load_scenario(path), progress=lines.append)
    assert any("priced on from where it was, held below it" in line for line in lines), "the rounding broke the cap"
    assert not any("the LPs again" in line for line in lines), "the LPs were not solved again from the start"
    assert float(priced.sites["tco2e_per_year"].sum()) <= objective["carbon_cap_t_per_year"] * (1 + 1e-7)
    gap = priced.solution.report.gap
    assert gap <= priced.instance.facts.solver.gap + 1e-9
    assert priced.solution.objective_usd_per_h == pytest.approx(small.solution.objective_usd_per_h, rel=gap + 1e-3)
