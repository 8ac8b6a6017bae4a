"""Building an instance: the node profiles computed in a forked child give the instance computed in one process."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import placement.instance.build as build
from placement._errors import InputError
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


def _children() -> set[int]:
    """This process's child processes, running or ended and not yet reaped (Linux: from /proc)."""
    me, found = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.add(int(stat.parent.name))
    return found


@pytest.mark.skipif(not (can_fork() and Path("/proc/self/stat").is_file()), reason="needs fork and /proc")
def test_a_world_that_fails_stops_the_profiles_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_scenario(write_scenario(tmp_path))
    (tmp_path / "cities.csv").unlink()  # the demand's file gone after validation: the world fails to build
    monkeypatch.setattr(build, "FORK_PROFILES_SITES", 1)
    before = _children()
    with pytest.raises(InputError) as failed:  # kept, as a caller gathering errors keeps them, with their frames
        build_instance(loaded)
    assert _children() - before == set(), "the profiles' child of a build that failed is stopped and reaped at once"
    assert "cities" in str(failed.value)
