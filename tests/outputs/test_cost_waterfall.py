"""The cost waterfall on a hand-made plan whose steps are worked out by hand, and on the world plan."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from placement.outputs.cost_waterfall import STEPS, cost_waterfall, draw_cost_waterfall
from placement.results.class_summary import ClassSummary
from placement.results.folder import read_results_folder

PER_M = 1e6 / 3600.0


def _hand_made() -> tuple[list[ClassSummary], pd.DataFrame, pd.DataFrame]:
    """One site of 10 nodes ($4/h each: capex 2, facility 1, idle power 0.5, opex 0.5), $10/h fixed, $6/h load energy,
    busiest hour 8 node-equivalents. Class a: 300 tok/s at 100 per node (3 node-equivalents), a goodput the serving
    model keeps at 80 % of the node's capacity; class b: 50 tok/s at 50 per node with a utilisation cap of 0.5
    (2 node-equivalents). Mean usage 5 of 10 nodes."""
    classes = [
        ClassSummary(name="a", goodput_tok_s=300.0, goodput_tok_s_per_node=100.0, utilisation_cap=1.0, serving_load_share=0.8),
        ClassSummary(name="b", goodput_tok_s=50.0, goodput_tok_s_per_node=50.0, utilisation_cap=0.5),
    ]
    sites = pd.DataFrame(
        {
            "site_id": ["s", "t"], "open": [True, False], "nodes": [10, 0], "peak_utilisation": [0.8, 0.0],
            "node_capex_usd_per_h": [2.0, 2.0], "facility_capex_usd_per_h": [1.0, 1.0], "power_usd_per_h": [0.5, 0.5],
            "opex_usd_per_h": [0.5, 0.5], "fixed_cost_usd_per_h": [10.0, 10.0], "load_energy_usd_per_h": [6.0, 0.0],
        }
    )  # fmt: skip
    assignments = pd.DataFrame({"site_id": ["s", "s"], "class": ["a", "b"], "goodput_tok_s": [300.0, 50.0]})
    return classes, sites, assignments


def test_hand_made_steps() -> None:
    table = cost_waterfall(*_hand_made()).set_index("class")
    # class a: 3 node-equivalents of 5, so 60 % of the site's fixed cost and load energy; 20 % of its nodes are tail headroom
    a = {"node_capex": 4.8, "facility_capex": 2.4, "idle_power": 1.2, "opex": 1.2, "load_energy": 3.6, "site_fixed": 6.0,
         "tail_headroom": 3 * 0.2 * 4, "idle_hours": 3 * (8 / 5 - 1) * 4, "whole_nodes": 3 * (10 - 8) / 5 * 4}  # fmt: skip
    # class b: 2 node-equivalents, half of them headroom (cap 0.5)
    b = {"node_capex": 2.0, "facility_capex": 1.0, "idle_power": 0.5, "opex": 0.5, "load_energy": 2.4, "site_fixed": 4.0,
         "tail_headroom": 2 * 0.5 * 4, "idle_hours": 2 * (8 / 5 - 1) * 4, "whole_nodes": 2 * (10 - 8) / 5 * 4}  # fmt: skip
    for name, steps, goodput in (("a", a, 300.0), ("b", b, 50.0)):
        for key, usd_per_h in steps.items():
            assert table.loc[name, key] == pytest.approx(usd_per_h * PER_M / goodput), (name, key)
    assert table.loc["a", "total"] == pytest.approx(0.6 * (40 + 10 + 6) * PER_M / 300)  # the plan's split of the site
    assert table.loc["b", "total"] == pytest.approx(0.4 * (40 + 10 + 6) * PER_M / 50)
    assert table.loc["all classes", "total"] == pytest.approx(56 * PER_M / 350)  # the closed site costs nothing
    assert list(table.columns) == ["goodput_tok_s", *STEPS, "total"]


@pytest.mark.slow
def test_world_steps_add_up_to_each_class_and_the_headline(world_results: Path, tmp_path: Path) -> None:
    results = read_results_folder(world_results)
    summary = results.plan_summary()
    table = cost_waterfall(summary.classes, results.sites, results.assignments).set_index("class")
    for c in summary.classes:
        assert table.loc[c.name, "total"] == pytest.approx(c.cost_per_million_goodput_tokens_usd, rel=1e-3)
    assert table.loc["all classes", "total"] == pytest.approx(summary.cost_per_million_goodput_tokens_usd, rel=1e-4)
    assert (table[list(STEPS)] >= -1e-9).all().all()
    assert (world_results / "cost_waterfall.png").stat().st_size > 0
    drawn = draw_cost_waterfall(table.reset_index(), tmp_path / "w.png", unserved_share=0.05)
    assert drawn.stat().st_size > 0
    assert "cost_waterfall.png" in (world_results / "report.md").read_text()
    assert json.loads((world_results / "summary.json").read_text())["classes"]
