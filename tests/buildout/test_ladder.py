"""The node TTFT ladder in the build-out: a far population runs the tighter rung, at that rung's goodput, as in one year.

The single-year ladder's world (tests/profiles/test_node_ttft_ladder.py): one site, Chicago, and two cities, Chicago
and Denver, with an objective Denver meets only at 80 % of the node's TTFT budget. Over a one-year horizon Denver is
unserved without the ladder and served with it; its pair carries the load of the tighter rung (the loose rung's
goodput over the tight one's), the nodes add up by hand, and every written assignment is inside its objective.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from placement.buildout.arrays import build_buildout
from placement.buildout.evaluate import violations
from placement.cli import main
from placement.instance.build import build_instance
from placement.optimize.buildout.solve import solve_buildout
from placement.scenario.load import load_scenario
from tests.buildout.test_model import EXACT
from tests.profiles.test_node_ttft_ladder import _scenario

HORIZON = {
    "years": [2027],
    "clusters": None,
    "time_slices": 1,
    "integer_nodes": True,
    "accelerators": [{"id": "h100-sxm", "node_capex_usd": 250000}],
    "demand_scenarios": [{"name": "base", "probability": 1.0, "growth_per_year": 0.0}],
}


def _objective(tmp_path: Path) -> tuple[float, float, float]:
    """An objective Denver meets only at the tighter rung; the loose and tight rungs' goodput per node."""
    probe = build_instance(load_scenario(_scenario(tmp_path / "probe", ttft_ms=2000, ladder=[0.8])))
    loose, tight = probe.rungs[0]
    denver = probe.populations.table["name"].tolist().index("Denver")
    network = loose.round_trips * float(probe.rtt_ms[denver, 0])
    objective = network + (loose.fixed_ttft_ms + tight.fixed_ttft_ms) / 2
    goodput = [p.goodput_tok_s_per_node * p.utilisation_cap for p in (loose, tight)]
    return objective, goodput[0], goodput[1]


def _buildout_scenario(folder: Path, objective: float, ladder: list[float] | None) -> Path:
    path = _scenario(folder, ttft_ms=objective, ladder=ladder)
    scenario = yaml.safe_load(path.read_text())
    scenario["horizon"] = HORIZON
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_far_population_runs_the_tighter_rung_in_the_buildout(tmp_path: Path) -> None:
    objective, loose, tight = _objective(tmp_path)
    assert loose > tight > 0
    without = build_buildout(load_scenario(_buildout_scenario(tmp_path / "off", objective, None)))
    with_ladder = build_buildout(load_scenario(_buildout_scenario(tmp_path / "on", objective, [0.8])))
    assert without.data.pair_row.size == 1, "without the ladder only Chicago reaches the site"
    d = with_ladder.data
    assert d.pair_row.size == 2
    # Denver's pair carries the tighter rung's load; Chicago's the loose rung's (1)
    assert sorted(d.pair_load_factor.tolist()) == pytest.approx([1.0, loose / tight])
    plan = solve_buildout(d, EXACT)
    assert violations(d, plan) == []
    assert plan.unserved_share.max() == pytest.approx(0.0, abs=1e-9)
    # by hand: one slice, so the site needs ceil(Chicago / loose + Denver / tight) nodes
    demand = d.row_demand_tok_s[d.pair_row, 0, 0, 0]
    far = d.pair_load_factor > 1
    nodes = int(np.ceil(demand[~far].sum() / loose + demand[far].sum() / tight - 1e-9))
    assert plan.nodes[0, 0, 0, 0] == pytest.approx(nodes)


@pytest.mark.slow
def test_every_written_year_keeps_its_ttft_objective_with_the_ladder(tmp_path: Path) -> None:
    objective, _, _ = _objective(tmp_path)
    path = _buildout_scenario(tmp_path / "on", objective, [0.8])
    code = main(["solve", str(path), "--out", str(tmp_path / "out"), "--no-maps", "--quiet"])
    assert code == 0
    rows = pd.read_csv(tmp_path / "out" / "years" / "2027" / "assignments.csv")
    assert set(rows["population"]) == {"Chicago", "Denver"}
    assert (rows["ttft_p99_ms"] <= rows["ttft_objective_ms"] + 1e-9).all()
