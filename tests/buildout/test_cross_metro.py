"""Cross-metro prefill in the build-out: the single-year plan's columns, taken where the single-year plan takes them.

The single-year world of tests/instance/test_cross_metro.py (Frankfurt's users, a dear Frankfurt site and a cheap
Amsterdam one out of their reach served whole, one round trip away as a prefill site) over a one-year horizon: the
build-out offers the single-year plan's column, routes Frankfurt's demand over it (the decode pool in Frankfurt, the
prefill pool in Amsterdam), its loads at both sites are the pools' node-equivalents by hand, it pays the WAN per token,
and every written assignment keeps its TTFT objective with the sites' round trip.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from placement.buildout.arrays import build_buildout
from placement.buildout.evaluate import plan_costs, violations
from placement.cli import main
from placement.optimize.buildout.solve import solve_buildout
from placement.scenario.load import load_scenario
from tests.buildout.test_model import EXACT
from tests.instance.test_cross_metro import CROSS, _scenario

HORIZON = {
    "years": [2027],
    "clusters": None,
    "time_slices": 1,
    "integer_nodes": True,
    "demand_scenarios": [{"name": "base", "probability": 1.0, "growth_per_year": 0.0}],
}


def _buildout(folder: Path, cross_metro: dict[str, object] | None) -> Path:
    path = _scenario(folder, cross_metro=cross_metro)
    scenario = yaml.safe_load(path.read_text())
    scenario["horizon"] = HORIZON
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


@pytest.mark.slow
def test_the_buildout_prefills_in_amsterdam_as_the_single_year_plan_does(tmp_path: Path) -> None:
    b = build_buildout(load_scenario(_buildout(tmp_path / "on", CROSS)))
    cross = b.cross_metro
    assert cross is not None and len(cross) == 1
    sites = b.sites["id"].tolist()
    assert (sites[int(cross.decode_site[0])], sites[int(cross.prefill_site[0])]) == ("frankfurt", "amsterdam")
    d = b.data
    q = cross.first
    # the loads by hand: the pools' node-equivalents per tok/s over the class served whole at each site
    step = cross.cross.options[int(cross.option[0])]
    whole = b.instance.profiles[0].nodes_per_tok_s
    assert d.pair_load_factor[q] == pytest.approx(step.decode_nodes_per_tok_s / whole)
    assert d.remote_load[q] == pytest.approx(step.prefill_nodes_per_tok_s / whole)
    assert d.pair_usd_per_tok_s[q] == pytest.approx(step.kv_gb_per_tok * 3600.0 * CROSS["wan_usd_per_gb"])
    plan = solve_buildout(d, EXACT)
    assert violations(d, plan) == []
    assert plan.pair_share[q, 0, 0] > 0.5, "most of Frankfurt's demand is prefilled in Amsterdam"
    nodes = plan.nodes[:, 0, 0, 0]
    assert nodes[1] > nodes[0] > 0
    # Frankfurt carries the whole share and the decode pool, Amsterdam the prefill pool: in nodes, by hand
    peak = float(d.row_demand_tok_s[0, 0, 0, 0])
    goodput = d.goodput_mkays[:, 0, 0, 0, 0]
    x = float(plan.pair_share[q, 0, 0])
    at_frankfurt = peak * ((1 - x) + x * d.pair_load_factor[q]) / goodput[0]
    at_amsterdam = peak * x * d.remote_load[q] / goodput[1]
    assert nodes[0] == pytest.approx(np.ceil(at_frankfurt - 1e-6))
    assert nodes[1] == pytest.approx(np.ceil(at_amsterdam - 1e-6))
    costs = plan_costs(d, plan)
    assert costs.transport_usd_per_h is not None
    wan = x * float(d.daily_demand_tok_s[0, 0, 0]) * d.pair_usd_per_tok_s[q]
    assert costs.transport_usd_per_h[0, 0] == pytest.approx(wan)
    # without the option the same world serves the class whole in Frankfurt, at more cost
    off = build_buildout(load_scenario(_buildout(tmp_path / "off", None)))
    assert off.cross_metro is None
    alone = solve_buildout(off.data, EXACT)
    assert plan_costs(off.data, alone).expected_npv_usd > costs.expected_npv_usd


@pytest.mark.slow
def test_each_year_names_its_prefill_site_inside_the_objective(tmp_path: Path) -> None:
    path = _buildout(tmp_path / "on", CROSS)
    assert main(["solve", str(path), "--out", str(tmp_path / "out"), "--no-maps", "--quiet"]) == 0
    rows = pd.read_csv(tmp_path / "out" / "years" / "2027" / "assignments.csv", keep_default_na=False)
    far = rows[rows["prefill_site_id"] == "amsterdam"]
    assert len(far) and (far["site_id"] == "frankfurt").all()
    assert (rows["ttft_p99_ms"] <= rows["ttft_objective_ms"] + 1e-9).all()
    assert (far["cross_metro_rtt_ms"] > 0).all()
