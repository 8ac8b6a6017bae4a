"""A ladder of node TTFT budgets: each (population, site) pair runs the loosest one its objective allows.

One site, Chicago, and two cities: Chicago itself and Denver, farther than the class's full node budget allows
but inside it at 80 % of that budget. Without the ladder Denver is unserved; with it Denver is served at the
tighter budget's goodput and Chicago at the full one's, and the node count is worked out by hand from the two
rungs' goodput per node.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError
from placement.instance.build import build_instance
from placement.plan.solve import solve_instance
from placement.scenario.load import load_scenario
from tests.conftest import CATALOG_HEADER, computed_chat, write_scenario

CATALOG = CATALOG_HEADER + "chicago,Chicago,US,North America,41.88,-87.63,50,80,1.3,10000000,false\n"
CITIES = (
    "geonameid,name,countrycode,admin1code,latitude,longitude,population,timezone\n"
    "1,Chicago,US,IL,41.88,-87.63,2700000,America/Chicago\n"
    "2,Denver,US,CO,39.74,-104.99,700000,America/Denver\n"
)


def _scenario(folder: Path, *, ttft_ms: float, ladder: list[float] | None, **serving: object) -> Path:
    chat = computed_chat(ttft_ms)
    folder.mkdir(parents=True, exist_ok=True)
    return write_scenario(
        folder,
        catalog=CATALOG,
        cities=CITIES,
        classes=[chat],
        serving={"model": "llama-3.1-70b", "accelerator": "h100-sxm", "node_ttft_ladder": ladder, **serving},
        latency={"model": "great_circle"},
        policy={"unreachable": "report"},
    )


def test_a_far_population_runs_the_tighter_budget_and_the_nodes_add_up_by_hand(tmp_path: Path) -> None:
    probe = build_instance(load_scenario(_scenario(tmp_path / "probe", ttft_ms=2000, ladder=[0.8])))
    loose, tight = probe.rungs[0]
    assert tight.node_ttft_share == 0.8 and tight.node_ttft_ms <= 0.8 * 170 + 1e-6
    assert loose.goodput_tok_s_per_node > tight.goodput_tok_s_per_node > 0, "a looser budget never gives less goodput"
    names = probe.populations.table["name"].tolist()
    chicago, denver = names.index("Chicago"), names.index("Denver")
    network = {c: loose.round_trips * float(probe.rtt_ms[c, 0]) for c in (chicago, denver)}
    fixed_loose, fixed_tight = loose.fixed_ttft_ms, tight.fixed_ttft_ms
    # an objective Denver meets only at the tighter budget, Chicago at the full one
    objective = network[denver] + (fixed_loose + fixed_tight) / 2
    assert network[chicago] + fixed_loose < objective < network[denver] + fixed_loose

    without = solve_instance(build_instance(load_scenario(_scenario(tmp_path / "off", ttft_ms=objective, ladder=None))))
    assert without.populations.set_index("name").loc["Denver", "served_tok_s"] == 0, "out of reach at the full budget"

    instance = build_instance(load_scenario(_scenario(tmp_path / "on", ttft_ms=objective, ladder=[0.8])))
    plan = solve_instance(instance)
    rows = plan.assignments.set_index("population")
    assert rows.loc["Denver", "node_ttft_budget_ms"] == pytest.approx(136.0)
    assert rows.loc["Chicago", "node_ttft_budget_ms"] == pytest.approx(170.0)
    assert (plan.assignments["ttft_p99_ms"] <= objective + 1e-9).all()
    assert rows.loc["Denver", "prefill_ms"] == pytest.approx(tight.prefill_ms)
    # each pair's node-equivalents per tok/s are its rung's
    data = instance.inputs
    assert sorted(data.pair_nodes_per_tok_s.tolist()) == pytest.approx(sorted([loose.nodes_per_tok_s, tight.nodes_per_tok_s]))
    # by hand: one slice (the peak), so the site needs ceil(sum of demand / goodput per node) nodes
    demand = instance.commodity_slice_demand_tok_s[:, 0]
    by_city = dict(zip(instance.commodity_population.tolist(), demand.tolist(), strict=True))
    nodes = math.ceil(by_city[chicago] / loose.goodput_tok_s_per_node + by_city[denver] / tight.goodput_tok_s_per_node - 1e-9)
    assert int(plan.solution.nodes[0]) == nodes
    assert plan.summary.unserved_share == pytest.approx(0.0, abs=1e-9)


def test_without_a_ladder_nothing_changes_and_bad_ladders_are_refused(tmp_path: Path) -> None:
    instance = build_instance(load_scenario(_scenario(tmp_path / "none", ttft_ms=400, ladder=None)))
    assert instance.rungs == [] and not instance.laddered and instance.options == instance.profiles
    assert np.array_equal(instance.option_class, np.arange(len(instance.profiles))) and not instance.varies_by_pair
    with pytest.raises(InputError, match="between 0 and 1"):
        load_scenario(_scenario(tmp_path / "bad", ttft_ms=400, ladder=[0.8, 1.2]))
    # a fleet mix takes the ladder (the build-out models it: tests/buildout/test_ladder.py)
    fleet = load_scenario(_scenario(tmp_path / "fleet", ttft_ms=400, ladder=[0.8], accelerators=["h100-sxm", "h200"]))
    assert fleet.scenario.serving.node_ttft_ladder == [0.8]
