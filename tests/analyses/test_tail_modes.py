"""The tail check simulates every serving mode: speculative nodes, disaggregated pools, and cross-metro prefill.

The cross-metro world is tests/instance/test_cross_metro.py's: Frankfurt's users, long prompts under cold
connections, the decode pool in Frankfurt and the prefill pool in Amsterdam, 7 ms apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from placement.analyses.tail import COLUMNS, check_tail
from placement.instance.build import build_instance
from placement.outputs.console import tail_check_lines
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from placement.serving.request import ServingRequest
from tests.conftest import write_scenario
from tests.instance.test_cross_metro import CROSS, _scenario
from tests.profiles.test_node_ttft_ladder import _scenario as _ladder_scenario


@pytest.fixture(scope="module")
def cross_metro_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    return run(load_scenario(_scenario(tmp_path_factory.mktemp("tail_cross_metro"), cross_metro=CROSS)))


def test_cross_metro_prefill_has_its_own_rows_with_the_prefill_site(cross_metro_plan: Plan) -> None:
    plan = cross_metro_plan
    table = check_tail(plan, requests=800)
    assert list(table.columns) == COLUMNS
    far = table[table["mode"] == "cross-metro"]
    assert len(far) == 1
    row = far.iloc[0]
    assert (row["site_id"], row["prefill_site_id"]) == ("frankfurt", "amsterdam")
    cross = plan.instance.cross_metro
    assert cross is not None
    option = cross.options[int(cross.pairs.option[0])]
    rtt = float(cross.site_rtt_ms[0, 1])
    # every request pays its prefill, the KV over the WAN and the round trip between the metros
    assert row["simulated_ttft_p99_ms"] >= option.profile.prefill_ms + rtt
    assert row["analytic_node_ttft_ms"] == pytest.approx(option.profile.node_ttft_ms + rtt)
    # the planned load: the decode pool's share of Frankfurt's nodes and the prefill pool's of Amsterdam's
    assert 0.5 <= row["load_factor"] <= 1.0
    assert row["simulated_tok_s_per_node"] == pytest.approx(row["class_tok_s"] / row["class_nodes"], rel=0.08)
    assert row["exceeds"] == "", "at the planned load the pools meet what the objective leaves them"
    # what Frankfurt serves whole runs in pools too; Amsterdam prefills only: no row of its own
    whole = table[table["prefill_site_id"] == ""]
    assert set(whole["mode"]) == {"disaggregated"} and set(whole["site_id"]) == {"frankfurt"}


def test_cross_metro_rows_break_when_the_round_trip_eats_the_slack(
    cross_metro_plan: Plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    import placement.analyses.tail as tail

    real = tail.simulate_serving

    def far(request: ServingRequest, *, network_rtt_ms: float = 0.0, **kw: Any) -> Any:
        """Metros 150 ms farther apart than the plan assumed (a pool in one hall keeps its 0)."""
        return real(request, network_rtt_ms=network_rtt_ms + 150.0 if network_rtt_ms > 0 else 0.0, **kw)

    monkeypatch.setattr(tail, "simulate_serving", far)
    found = check_tail(cross_metro_plan, requests=800)
    table = found.set_index("mode")
    assert "ttft" in table.loc["cross-metro", "exceeds"], "150 ms more between the metros breaks the TTFT"
    assert table.loc["disaggregated", "exceeds"] == "", "a pool in one hall has no round trip"
    lines = tail_check_lines(found, seconds=1.0)
    assert lines[0].endswith("1 exceed an objective (tail_check.csv)")
    assert lines[1].startswith("  Frankfurt (frankfurt), rag (cross-metro from amsterdam): p99 TTFT")


def test_a_speculative_class_is_simulated_speculatively(tmp_path: Path) -> None:
    chat = {
        "name": "chat", "share": 1.0, "ttft_p99_ms": 450, "itl_p99_ms": 20, "serving_ttft_budget_ms": 170,
        "retrieval_ms": 20, "safety_tokenization_ms": 10, "input_tokens": 1024, "output_tokens": 290,
    }  # fmt: skip
    serving = {"model": "llama-3.1-70b", "accelerator": "h100-sxm", "gpus_per_node": 8, "precision": "fp8"}
    path = write_scenario(
        tmp_path,
        classes=[chat],
        serving={**serving, "speculative": "eagle3"},
        demand={"adoption": 0.0002},
        policy={"unreachable": "report"},
    )
    plan = run(load_scenario(path))
    table = check_tail(plan, requests=600)
    assert len(table) >= 1 and set(table["mode"]) == {"speculative"}
    assert (table["exceeds"] == "").all()
    assert (table["simulated_itl_p99_ms"] <= 20.0).all()


def test_each_rung_of_a_ladder_is_simulated_at_its_own_budget(tmp_path: Path) -> None:
    """Chicago serves Chicago at the full node budget and Denver at 80 % of it (tests/profiles/test_node_ttft_ladder.py).

    Each rung is its own node: the tighter one searched and simulated inside 136 ms, held to its own node part plus
    Denver's slack, not the loose node held to the strictest pair's allowance.
    """
    probe = build_instance(load_scenario(_ladder_scenario(tmp_path / "probe", ttft_ms=2000, ladder=[0.8])))
    loose, tight = probe.rungs[0]
    names = probe.populations.table["name"].tolist()
    chicago, denver = names.index("Chicago"), names.index("Denver")
    network = {c: loose.round_trips * float(probe.rtt_ms[c, 0]) for c in (chicago, denver)}
    objective = network[denver] + (loose.fixed_ttft_ms + tight.fixed_ttft_ms) / 2
    plan = run(load_scenario(_ladder_scenario(tmp_path / "on", ttft_ms=objective, ladder=[0.8])))
    table = check_tail(plan, requests=600).set_index("node_ttft_share")
    assert sorted(table.index.tolist()) == [0.8, 1.0]
    slack = plan.assignments.set_index("population")["ttft_slack_ms"]
    for share, profile, city in ((1.0, loose, "Chicago"), (0.8, tight, "Denver")):
        row = table.loc[share]
        assert row["analytic_node_ttft_ms"] == pytest.approx(profile.node_ttft_ms)
        assert row["node_ttft_allowed_ms"] == pytest.approx(profile.node_ttft_ms + slack[city])
        assert row["simulated_ttft_p99_ms"] <= row["node_ttft_allowed_ms"] and row["exceeds"] == ""
    assert table.loc[0.8, "simulated_ttft_p99_ms"] < table.loc[1.0, "simulated_ttft_p99_ms"], "the tighter rung's node"
