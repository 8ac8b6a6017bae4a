"""Deterministic answers: the same scenario gives the same decision files, and a solve says which limit stopped it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from placement.optimize.solver import SolverOptions, SolveStatus, StopReason, solve_problem
from placement.world import demand
from tests.conftest import REPO, SOLVERS
from tests.optimize.test_solver import hard_instance

EUROPE_SMALL = REPO / "data" / "scenarios" / "europe-small.yaml"
DECISION_FILES = ("sites.csv", "assignments.csv", "populations.csv", "population_members.csv")
RUNTIME_KEYS = ("runtime_s", "build_s")
"""``summary.json`` keys that measure the machine, not the decision."""


def plain_lloyd(points: np.ndarray, weights: np.ndarray, centres: np.ndarray, iterations: int) -> np.ndarray:
    """Lloyd's iterations with every point compared to every centre (the reference)."""
    labels = np.full(len(points), -1)
    for _ in range(iterations):
        distance_sq = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        new = distance_sq.argmin(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for c in range(len(centres)):
            mine = labels == c
            if mine.any():
                centres[c] = (points[mine] * weights[mine, None]).sum(axis=0) / weights[mine].sum()
    return labels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounded_kmeans_partitions_as_plain_lloyd(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(3000, 3))
    points = vectors / np.linalg.norm(vectors, axis=1)[:, None]
    weights = rng.lognormal(size=3000)
    labels = demand.weighted_kmeans(points, weights, 60, iterations=200, seed=seed)
    centres = demand._kmeans_plus_plus(points, np.maximum(weights, 0.0) + 1e-12, 60, seed)
    reference = plain_lloyd(points, np.maximum(weights, 0.0) + 1e-12, centres, 200)
    crossed = pd.crosstab(labels, reference)
    assert ((crossed > 0).sum(axis=0) == 1).all() and ((crossed > 0).sum(axis=1) == 1).all()


def textbook_seeding(points: np.ndarray, w: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Weighted k-means++ as written in the textbook: each next centre drawn by ``Generator.choice``."""
    rng = np.random.default_rng(seed)
    centres = [points[rng.choice(len(points), p=w / w.sum())]]
    nearest_sq = ((points - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        score = w * nearest_sq
        total = score.sum()
        pick = int(rng.choice(len(points), p=score / total)) if total > 0 else int(rng.integers(len(points)))
        centres.append(points[pick])
        nearest_sq = np.minimum(nearest_sq, ((points - centres[-1]) ** 2).sum(axis=1))
    return np.array(centres)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_kmeans_seeding_draws_the_textbooks_centres(seed: int) -> None:
    # the seeding draws as Generator.choice does, without its checks: the same centres, so the bundled
    # world's populations (and every plan built on them) are those the textbook seeding gave
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(4000, 3))
    points = vectors / np.linalg.norm(vectors, axis=1)[:, None]
    weights = np.where(rng.uniform(size=4000) < 0.2, 0.0, rng.lognormal(size=4000)) + 1e-12
    np.testing.assert_array_equal(
        demand._kmeans_plus_plus(points, weights, 90, seed), textbook_seeding(points, weights, 90, seed)
    )
    few = points[:5]  # more centres than distinct scores: once every point is a centre the total is 0
    np.testing.assert_array_equal(
        demand._kmeans_plus_plus(few, weights[:5], 8, seed), textbook_seeding(few, weights[:5], 8, seed)
    )


def test_kmeans_is_repeatable() -> None:
    rng = np.random.default_rng(5)
    points = rng.normal(size=(2000, 3))
    weights = rng.uniform(1, 10, 2000)
    first = demand.weighted_kmeans(points, weights, 50, seed=3)
    assert np.array_equal(first, demand.weighted_kmeans(points.copy(), weights.copy(), 50, seed=3))
    assert not np.array_equal(first, demand.weighted_kmeans(points, weights, 50, seed=4))


@pytest.mark.parametrize("solver", SOLVERS)
def test_node_limit_stops_the_solve_and_says_so(solver: str) -> None:
    report = solve_problem(hard_instance(), SolverOptions(name=solver, gap=0.0, node_limit=2, time_limit_s=60))
    assert report.stopped_by == StopReason.NODE_LIMIT
    assert report.status in (SolveStatus.FEASIBLE, SolveStatus.NO_SOLUTION)
    if report.status == SolveStatus.FEASIBLE:
        assert report.gap > 0


@pytest.mark.parametrize("solver", SOLVERS)
def test_gap_stop_is_reported(solver: str) -> None:
    report = solve_problem(hard_instance(n=6, m=3), SolverOptions(name=solver, gap=0.0, node_limit=1000))
    assert report.status == SolveStatus.OPTIMAL
    assert report.stopped_by == StopReason.GAP


def test_time_limit_stop_is_reported() -> None:
    # Proving this instance optimal takes HiGHS about 20 s on the 2-core test machine (CBC 15 s),
    # a hundred times the limit, so the limit must be what stops it: a solve that ignored the limit,
    # or reported it as a gap stop, fails here instead of passing as "fast enough to prove it".
    time_limit_s = 0.2
    report = solve_problem(hard_instance(n=200, m=40), SolverOptions(gap=0.0, time_limit_s=time_limit_s))
    assert report.stopped_by == StopReason.TIME_LIMIT
    assert report.status in (SolveStatus.FEASIBLE, SolveStatus.NO_SOLUTION)
    assert time_limit_s <= report.runtime_s < time_limit_s + 10


def solve_cli(out: Path, env: dict[str, str] | None = None) -> Path:
    subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "solve", str(EUROPE_SMALL), "--out", str(out), "--quiet", "--no-maps"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    return out


def decisions(summary_path: Path) -> dict[str, object]:
    summary = json.loads(summary_path.read_text())
    return {key: value for key, value in summary.items() if key not in RUNTIME_KEYS}


def test_same_scenario_gives_byte_identical_decisions(tmp_path: Path) -> None:
    first = solve_cli(tmp_path / "a")
    # The second run as another processor would run it: numpy's AVX-512 kernels and OpenBLAS's own
    # kernel choice switched to those of an older x86 core (both variables are ignored where they do not apply).
    other_cpu = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell"}
    second = solve_cli(tmp_path / "b", env=other_cpu)
    for name in DECISION_FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert decisions(first / "summary.json") == decisions(second / "summary.json")
    stopped = json.loads((first / "summary.json").read_text())["stopped_by"]
    assert stopped in ("gap", "node_limit")  # the bundled scenarios never stop on the wall clock
    assert not any((first / name).exists() for name in ("map.png", "map.html", "map_europe.png"))
    assert (first / "report.html").exists() and (first / "catchments.geojson").exists()
