"""KV cache tiers in the build-out: each site's tier sets its goodput and TTFT, its cold cache is charged while it is open.

Worked by hand on arrays (a site whose tier doubles goodput needs half the nodes), and on the combination world
(five sites on three tiers) against the single-year plan's own figures: the same cold-cache nodes per site, the same
goodput per node on each tier, the charge in each open site's fixed cost.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from placement.buildout.arrays import build_buildout
from placement.buildout.evaluate import plan_costs, violations
from placement.instance.build import build_instance
from placement.optimize.buildout.caps import site_energy_mwh_per_year
from placement.optimize.buildout.solve import solve_buildout
from placement.scenario.load import load_scenario
from tests.buildout.test_model import EXACT, H, instance
from tests.combinations import CATALOG, CITIES, merged


def test_a_site_whose_tier_doubles_goodput_serves_with_half_the_nodes() -> None:
    # 1,000 tok/s, 100 tok/s a node on the scenario's tier: 10 nodes at site 0 (2 $/h each + 10 MW at 1 $/h = 30 $/h),
    # or 5 at site 1, whose tier doubles a node's goodput (5 * 2 + 5 = 15 $/h); both sites cost 1 $/h open.
    data = instance([1000.0], mw=[[20.0], [20.0]], fixed=[1.0, 1.0])
    data = replace(data, site_goodput_factor=np.array([[[1.0]], [[2.0]]]))
    plan = solve_buildout(data, EXACT)
    assert violations(data, plan) == []
    assert plan.first.open[:, 0].tolist() == [False, True]
    assert plan.nodes[:, 0, 0, 0].tolist() == [0.0, 5.0]
    assert plan_costs(data, plan).expected_npv_usd == pytest.approx(16.0 * H)


def test_a_site_whose_tier_cannot_serve_a_class_gets_none_of_it() -> None:
    data = instance([300.0], mw=[[20.0], [20.0]], fixed=[5.0, 1.0])
    data = replace(data, site_goodput_factor=np.array([[[1.0]], [[0.0]]]))
    plan = solve_buildout(data, EXACT)
    assert violations(data, plan) == []
    assert plan.pair_share[:, 0, 0].tolist() == [1.0, 0.0]


def _world(folder: Path, **serving: object) -> Path:
    """The combination world (sites on the hbm, nvme and dram tiers) planned over one year (2027)."""
    horizon = {
        "years": [2027],
        "clusters": None,
        "time_slices": 2,
        "accelerators": [{"id": "h100-sxm", "node_capex_usd": 250000}],
        "demand_scenarios": [{"name": "base", "probability": 1.0, "growth_per_year": 0.0}],
    }
    scenario = merged({"serving": serving, "horizon": horizon})
    (folder / "catalog.csv").write_text(CATALOG)
    (folder / "cities.csv").write_text(CITIES)
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


def _single_year(folder: Path, **serving: object) -> Path:
    """The same world as a single-year plan (no horizon)."""
    scenario = merged({"serving": serving})
    (folder / "catalog.csv").write_text(CATALOG)
    (folder / "cities.csv").write_text(CITIES)
    path = folder / "single.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


@pytest.mark.slow
def test_the_buildout_takes_each_sites_tier_as_the_single_year_plan_does(tmp_path: Path) -> None:
    cache = {"kv_cache": {"tier": "dram"}}
    b = build_buildout(load_scenario(_world(tmp_path, **cache)))
    single = build_instance(load_scenario(_single_year(tmp_path, **cache)))
    assert b.tiers is not None and b.tiers.cached
    tiers = [b.tiers.names[g] for g in b.tiers.site_tier.tolist()]
    assert tiers == ["hbm", "nvme", "dram", "dram", "dram"]  # the catalog's kv_tier
    # the cold cache: the single-year plan's nodes per open site, site by site
    assert b.tiers.warmup_nodes().tolist() == single.cache_warmup_nodes.tolist()
    assert single.cache_warmup_nodes.max() > 0
    # goodput per node at each site: its tier's, as the single-year plan's profile sets give it
    sets = single.tier_sets or [[[p] for p in single.profiles]]
    site_set = single.site_set if single.site_set is not None else np.zeros(len(single.sites), dtype=np.int64)
    expected = [sets[g][0][0].goodput_tok_s_per_node * sets[g][0][0].utilisation_cap for g in site_set.tolist()]
    assert b.data.goodput_mkays[:, 0, 0, 0, 0] == pytest.approx(expected)
    assert len(set(np.round(expected, 6).tolist())) > 1, "the tiers differ in goodput on this world"


@pytest.mark.slow
def test_the_cold_cache_is_charged_to_each_open_site_every_year(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "cached").mkdir()
    plain = build_buildout(load_scenario(_world(tmp_path / "plain")))
    cached = build_buildout(load_scenario(_world(tmp_path / "cached", kv_cache={"tier": "dram"})))
    assert cached.tiers is not None
    warm = cached.tiers.warmup_nodes().astype(float)
    tier_usd = cached.tiers.tier_usd_per_node_h()
    d = cached.data
    # a warm-up node, worked out of its parts: annuity, running cost (tier included), full power, the facility's MW
    node_usd_per_h = (
        d.node_annuity_usd_per_h[0, 0]
        + (plain.data.running_may[:, 0, 0] + tier_usd)
        + d.node_load_mw[:, 0] * cached.energy_price_usd_per_mwh[:, 0]  # type: ignore[index]
        + d.node_mw[:, 0] * d.site_usd_per_h_per_mw
    )
    assert d.site_fixed_usd_per_h == pytest.approx(plain.data.site_fixed_usd_per_h + warm * node_usd_per_h)
    assert d.site_mw_available[:, 0] == pytest.approx(plain.data.site_mw_available[:, 0] - warm * d.node_mw[:, 0])
    assert d.running_may[:, 0, 0] == pytest.approx(plain.data.running_may[:, 0, 0] + tier_usd)
    plan = solve_buildout(d, EXACT)
    assert violations(d, plan) == []
    costs = plan_costs(d, plan)
    opened = plan.first.open[:, 0]
    assert opened.any()
    # every open site pays its cold cache in its site cost, a closed one nothing
    expected = np.where(opened, d.site_fixed_usd_per_h, 0.0) + plan.first.mw_reserved[:, 0] * d.site_usd_per_h_per_mw
    assert costs.site_usd_per_h[:, 0] == pytest.approx(expected)
    assert (costs.site_usd_per_h[opened, 0] >= (warm * node_usd_per_h)[opened]).all()
    # their power: drawn all year at every open site, in its energy (the tables' and the caps' figure)
    energy = site_energy_mwh_per_year(d, plan)[:, 0, 0]
    without = site_energy_mwh_per_year(replace(d, site_open_mw=None), plan)[:, 0, 0]
    assert energy - without == pytest.approx(np.where(opened, warm * d.node_mw[:, 0] * 8760.0, 0.0))
