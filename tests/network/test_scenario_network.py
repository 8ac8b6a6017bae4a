"""A scenario's own latency network reaches everything: the solve, the retrieval round trips,
``network.geojson`` and the web map. Nothing falls back to the bundled network."""

from __future__ import annotations

import inspect
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd
import pytest

from placement.cli import main
from placement.instance.build import build_instance
from placement.instance.latency import endpoints
from placement.network.graph import build_graph, nearest_hub
from placement.network.great_circle import LatencyParams
from placement.network.latency import LatencyModel
from placement.network.load import HUBS_CSV, LINKS_CSV, default_network, default_params, load_network
from placement.network.paths import RoundTrips, backbone_rtt_ms
from placement.network.places import rtt_report
from placement.outputs.network_layer import graph_links_frame, hubs_frame, links_frame, write_network
from placement.outputs.regional_maps import draw_regional_maps
from placement.outputs.webmap import webmap_data, write_webmap
from placement.plan.solve import run
from placement.scenario.load import load_scenario
from tests.conftest import scenario_dict, write_scenario

ASHBURN, FRANKFURT = (39.04, -77.49), (50.11, 8.68)


def _retrieval_class() -> list[dict[str, Any]]:
    """The small scenario's class with its retrieval store in Frankfurt (and room in the objective for it)."""
    workload = {**scenario_dict()["classes"][0], "retrieval_store_site": "frankfurt", "ttft_p99_ms": 2000}
    return [workload]


def _crossing() -> tuple[str, str]:
    """The submarine link on the bundled network's quickest path from Ashburn to Frankfurt."""
    network, params = default_network(), default_params()
    graph = build_graph(network, params)
    hubs, _ = nearest_hub([ASHBURN[0], FRANKFURT[0]], [ASHBURN[1], FRANKFURT[1]], network)
    path = nx.dijkstra_path(graph, network.hub_ids[hubs[0]], network.hub_ids[hubs[1]], weight="rtt_ms")
    return next((u, v) for u, v in itertools.pairwise(path) if graph.edges[u, v]["kind"] == "submarine")


def _links_pairs(rows: list[tuple[str, str]]) -> set[frozenset[str]]:
    return {frozenset(pair) for pair in rows}


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two copies of the small scenario: one on the bundled network, one without the Ashburn-Frankfurt crossing."""
    folder = tmp_path_factory.mktemp("edited-network")
    crossing = _crossing()
    links = pd.read_csv(LINKS_CSV, dtype=str, keep_default_na=False)
    dropped = links.apply(lambda r: {r["a"], r["b"]} == set(crossing), axis=1)
    links[~dropped].to_csv(folder / "links.csv", index=False)
    shutil.copyfile(HUBS_CSV, folder / "hubs.csv")
    (folder / "bundled").mkdir()
    (folder / "own").mkdir()
    bundled = write_scenario(folder / "bundled", classes=_retrieval_class())
    own = write_scenario(folder / "own", classes=_retrieval_class(), latency={"hubs": "../hubs.csv", "links": "../links.csv"})
    out = folder / "out"
    assert main(["solve", str(own), "--out", str(out), "--quiet"]) == 0
    return {
        "crossing": crossing,
        "dropped": int(dropped.sum()),
        "bundled": build_instance(load_scenario(bundled)),
        "own": build_instance(load_scenario(own)),
        "out": out,
    }


def test_removed_link_lengthens_the_retrieval_round_trip(edited: dict[str, Any]) -> None:
    bundled, own = edited["bundled"], edited["own"]
    ashburn = bundled.sites["id"].tolist().index("ashburn")
    before, after = bundled.retrieval_extra_ms[0, ashburn], own.retrieval_extra_ms[0, ashburn]
    assert after > before + 1.0  # the detour round the missing cable, not noise
    sites = own.sites.set_index("id")
    trips = own.latency.site_site_rtt(endpoints(sites.loc[["ashburn"]]), endpoints(sites.loc[["frankfurt"]]))
    assert after == pytest.approx(trips.p90_ms[0, 0])  # the scenario budgets the p90 (latency.quantile default)
    assert own.retrieval_extra_ms[0, bundled.sites["id"].tolist().index("frankfurt")] == 0.0
    assert own.latency.network is not default_network()
    assert len(own.latency.network.links) == len(default_network().links) - edited["dropped"]


def test_network_geojson_is_the_scenario_network(edited: dict[str, Any]) -> None:
    features = json.loads((edited["out"] / "network.geojson").read_text(encoding="utf-8"))["features"]
    pairs = _links_pairs([(f["properties"]["a"], f["properties"]["b"]) for f in features])
    assert frozenset(edited["crossing"]) not in pairs
    assert len(features) == len(default_network().links) - edited["dropped"]


def test_web_map_draws_the_scenario_network(edited: dict[str, Any]) -> None:
    text = (edited["out"] / "map.html").read_text(encoding="utf-8")
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert raw is not None
    links = json.loads(raw.group(1))["links"]
    assert frozenset(edited["crossing"]) not in _links_pairs([(link[2], link[3]) for link in links])
    assert len(links) == len(default_network().links) - edited["dropped"]


def test_bundled_network_still_has_the_link(edited: dict[str, Any]) -> None:
    """The control: the link the test removes is on the bundled network (else the test proves nothing)."""
    links = links_frame(edited["bundled"].latency.round_trips)
    assert frozenset(edited["crossing"]) in _links_pairs(list(zip(links["a"], links["b"], strict=True)))


def test_great_circle_model_has_no_links(tmp_path: Path) -> None:
    latency = LatencyModel.from_great_circle(LatencyParams(route_factor=1.5, fixed_ms=2.0, access_ms=8.0))
    path = write_network(links_frame(latency.round_trips), tmp_path)
    assert json.loads(path.read_text(encoding="utf-8"))["features"] == []


def test_great_circle_scenario_writes_no_links(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, latency={"model": "great_circle"})
    out = tmp_path / "out"
    assert main(["solve", str(path), "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "network.geojson").read_text(encoding="utf-8"))["features"] == []
    raw = re.search(
        r'<script type="application/json" id="data">(.*?)</script>', (out / "map.html").read_text(encoding="utf-8"), re.S
    )
    assert raw is not None and json.loads(raw.group(1))["links"] == []


def test_catchments_are_computed_once_per_results_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import placement.outputs.catchments as catchments
    import placement.outputs.plan_files as plan_files
    import placement.outputs.writer as writer

    assert not hasattr(catchments, "_CACHE") and not hasattr(catchments, "catchments_of")
    calls: list[int] = []

    def counted(results: Any, **options: Any) -> Any:
        calls.append(1)
        return catchments.catchment_frame(results, **options)

    monkeypatch.setattr(plan_files, "catchment_frame", counted)
    plan = run(load_scenario(write_scenario(tmp_path)))
    writer.write_results(plan, tmp_path / "out")
    assert len(calls) == 1
    drawn = json.loads((tmp_path / "out" / "catchments.geojson").read_text(encoding="utf-8"))["features"]
    assert {f["properties"]["site_id"] for f in drawn} == set(plan.sites.loc[plan.sites["open"], "site_id"])


@pytest.mark.parametrize(
    ("function", "parameters"),
    [
        (backbone_rtt_ms, ("params", "network")),
        (graph_links_frame, ("network", "params")),
        (links_frame, ("round_trips",)),
        (hubs_frame, ("network",)),
        (load_network, ("hubs_path", "links_path")),
        (rtt_report, ("round_trips",)),
        (RoundTrips, ("network", "backbone", "internet")),
        (webmap_data, ("catchments", "links")),
        (write_webmap, ("catchments", "links")),
        (draw_regional_maps, ("catchments",)),
    ],
)
def test_no_latency_or_catchment_argument_has_a_default(function: Any, parameters: tuple[str, ...]) -> None:
    """Nothing on the solve or output path can quietly fall back to the bundled network or recompute catchments."""
    signature = inspect.signature(function)
    for name in parameters:
        assert signature.parameters[name].default is inspect.Parameter.empty, f"{function.__name__}({name}=...)"
