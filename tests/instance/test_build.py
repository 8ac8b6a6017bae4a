"""Building an instance: the node profiles computed in a forked child give the instance computed in one process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import placement.instance.build as build
from placement._process import Background, can_fork
from placement.instance.build import build_instance
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario


@pytest.mark.skipif(not can_fork(), reason="no fork here: the profiles are computed in the caller either way")
def test_profiles_forked_beside_the_world_give_the_same_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_scenario(write_scenario(tmp_path, policy={"unreachable": "report"}))
    here = build_instance(loaded)
    forked: list[bool] = []
    original = build.Background

    def recording(function: Callable[[], object], *, fork: bool = True) -> Background[object]:
        background = original(function, fork=fork)
        forked.append(background.forked)
        return background

    monkeypatch.setattr(build, "Background", recording)
    monkeypatch.setattr(build, "FORK_PROFILES_SITES", 1)  # the small catalog's 3 sites are forked for
    there = build_instance(loaded)
    assert forked == [True]
    assert [p.goodput_tok_s_per_node for p in there.profiles] == [p.goodput_tok_s_per_node for p in here.profiles]
    a, b = here.inputs, there.inputs
    for name in ("pair_site", "pair_commodity", "pair_nodes_per_tok_s", "pair_cost_usd_per_h", "site_node_usd_per_h"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    monkeypatch.setattr(build, "FORK_PROFILES_SITES", 10**9)
    forked.clear()
    build_instance(loaded)
    assert forked == [False], "a world of a few sites keeps its profiles in this process"
