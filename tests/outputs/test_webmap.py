"""The interactive map opens offline in headless Chromium without console errors and draws a
picture; the regional maps and report.html around it are written and can be rebuilt from files."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from placement.outputs.catchments import catchment_frame
from placement.outputs.network_layer import links_frame
from placement.outputs.plan_outputs import summary_json_dict
from placement.outputs.regional_maps import draw_regional_maps
from placement.outputs.report_html import budget_rows, render_html, rerender_report, write_report_html
from placement.outputs.webmap import drawn_populations, write_webmap
from placement.plan.record import Plan
from placement.plan.solve import run
from placement.results import jsonio
from placement.scenario.load import load_scenario
from tests.conftest import write_scenario
from tests.economics.test_footprint import CARBON_CATALOG

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--proxy-server=127.0.0.1:9",  # network off: any request would go to a closed port
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=5000",
)


@pytest.fixture(scope="module")
def plan_and_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path]:
    folder = tmp_path_factory.mktemp("webmap")
    # with intensities and climates: all three colour layers
    lines = CARBON_CATALOG.splitlines()
    catalog = "\n".join([lines[0] + ",climate", *(line + ",temperate" for line in lines[1:])]) + "\n"
    plan = run(load_scenario(write_scenario(folder, catalog=catalog)))
    out = folder / "out"
    out.mkdir()
    write_webmap(
        plan.results,
        out / "map.html",
        catchments=catchment_frame(plan.results),
        links=links_frame(plan.instance.latency.round_trips),
    )
    return plan, out


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("chromium is not installed (apt-get install chromium): the headless check of map.html needs it")


def _browse(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _console_lines(stderr: str) -> list[str]:
    """Messages the page wrote to its console (errors, uncaught exceptions, CSP refusals)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


# ----------------------------------------------------------------------------- the page itself


def test_page_is_self_contained(plan_and_folder: tuple[Plan, Path]) -> None:
    _, out = plan_and_folder
    text = (out / "map.html").read_text(encoding="utf-8")
    assert "Leaflet 1.9.4" in text  # the vendored library is inlined
    assert not re.search(r"<script[^>]+src=|<link\b|url\(\s*['\"]?(https?:)?//|@import", text)
    assert "default-src 'none'" in text  # the page may not fetch anything
    assert (out / "map.html").stat().st_size < 5_000_000


def test_page_data_carries_the_plan(plan_and_folder: tuple[Plan, Path]) -> None:
    plan, out = plan_and_folder
    text = (out / "map.html").read_text(encoding="utf-8")
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert raw is not None
    data = json.loads(raw.group(1))
    assert len(data["sites"]) == len(plan.sites)
    assert sum(s["open"] for s in data["sites"]) == int(plan.sites["open"].sum())
    assert len(data["assignments"]) == len(plan.assignments)
    assert len(data["links"]) > 100 and len(data["countries"]["features"]) > 100
    opened = plan.sites[plan.sites["open"]].set_index("site_id")
    for site in (s for s in data["sites"] if s["open"]):  # the second colour option: the intensity of each site's draw
        assert site["g_kwh"] == pytest.approx(opened.loc[site["id"], "gco2e_per_kwh"], abs=0.05)
    legend = data["legend"]
    assert legend["carbon_min"] == pytest.approx(opened["gco2e_per_kwh"].min(), abs=1e-3)
    assert legend["carbon_max"] == pytest.approx(opened["gco2e_per_kwh"].max(), abs=1e-3)
    for site in (s for s in data["sites"] if s["open"]):  # the third: the water a kWh drawn there consumes
        assert site["l_kwh"] == pytest.approx(opened.loc[site["id"], "water_l_per_kwh"], abs=5e-4)
    assert legend["water_min"] == pytest.approx(opened["water_l_per_kwh"].min(), abs=1e-3)
    assert legend["water_max"] == pytest.approx(opened["water_l_per_kwh"].max(), abs=1e-3)
    assert {f["properties"]["site_id"] for f in data["catchments"]["features"]} <= set(
        plan.sites.loc[plan.sites["open"], "site_id"]
    )
    for population in data["populations"]:
        for row in population["rows"]:  # class, site, share, goodput, rtt, ttft, objective, components...
            assert sum(row[7:]) == pytest.approx(row[5], abs=0.01)
            assert row[5] <= row[6] + 1e-6
    # the RTT shown is the one the budget used: the network component is round trips x that RTT
    budget = plan.assignments.set_index(["population", "site", "class"])["rtt_budget_ms"]
    for line in data["assignments"]:
        assert line[6] == pytest.approx(budget[(line[4], line[5], line[10])], abs=0.06)


@pytest.mark.slow
def test_map_opens_offline_without_console_errors(plan_and_folder: tuple[Plan, Path], tmp_path: Path) -> None:
    _, out = plan_and_folder
    done = _browse(out / "map.html", tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'data-ready="1"' in done.stdout, "the page script did not finish"
    assert 'data-errors="0"' in done.stdout, re.findall(r'<pre id="errors"[^>]*>(.*?)</pre>', done.stdout, re.S)
    assert _console_lines(done.stderr) == []


@pytest.mark.slow
def test_screenshot_is_a_map_not_a_blank_page(plan_and_folder: tuple[Plan, Path], tmp_path: Path) -> None:
    _, out = plan_and_folder
    shot = tmp_path / "map.png"
    done = _browse(out / "map.html", tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,800")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) > 200, f"only {len(colours)} colours: the map did not draw"
    assert counts.max() / counts.sum() < 0.8, "one colour covers most of the page"


@pytest.mark.slow
def test_harness_sees_a_console_error(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>", encoding="utf-8")
    done = _browse(page, tmp_path / "profile", "--dump-dom")
    assert any("undefinedFunction" in line for line in _console_lines(done.stderr)), done.stderr[-2000:]


# ----------------------------------------------------------------------------- maps and report around it


def test_regional_maps_only_where_sites_are_open(plan_and_folder: tuple[Plan, Path]) -> None:
    plan, out = plan_and_folder
    written = draw_regional_maps(plan.results, out, catchments=catchment_frame(plan.results))
    assert [p.name for p in written] == ["map_north_america.png", "map_europe.png"]  # Ashburn/Chicago and Frankfurt
    for path in written:
        image = matplotlib.image.imread(path)
        assert image.shape[0] > 500 and image.shape[1] > 700


def test_ttft_budget_rows_are_per_class_least_slack_and_median(plan_and_folder: tuple[Plan, Path]) -> None:
    plan, _ = plan_and_folder
    rows = budget_rows(plan.assignments, least=2)
    main = plan.assignments.sort_values("goodput_tok_s", ascending=False).drop_duplicates(["population_id", "class"])
    assert list(rows["class"].unique()) == list(main["class"].unique()) or set(rows["class"]) == set(main["class"])
    for name, group in rows.groupby("class"):
        mine = main[main["class"] == name]
        slack = np.sort((mine["ttft_objective_ms"] - mine["ttft_p99_ms"]).to_numpy())
        assert group["ttft_slack_ms"].iloc[0] == pytest.approx(slack[0])  # the least slack first
        assert "median" in group["label"].iloc[-1]
        ranked = np.sort(mine["ttft_p99_ms"].to_numpy())
        assert group["ttft_p99_ms"].iloc[-1] == pytest.approx(ranked[len(ranked) // 2])


def test_report_html_embeds_every_map_and_can_be_rebuilt(plan_and_folder: tuple[Plan, Path]) -> None:
    plan, out = plan_and_folder
    draw_regional_maps(plan.results, out, catchments=catchment_frame(plan.results))
    (out / "summary.json").write_text(jsonio.dumps(summary_json_dict(plan.results)), encoding="utf-8")
    plan.sites.to_csv(out / "sites.csv", index=False)
    plan.assignments.to_csv(out / "assignments.csv", index=False)
    plan.populations.to_csv(out / "populations.csv", index=False)
    first = write_report_html(plan.results, out).read_text(encoding="utf-8")
    assert first.count("data:image/png;base64,") == 2 + 2  # TTFT budget, cost waterfall and the two regional maps
    without = dataclasses.replace(plan.summary, cache_hit_rate=None)
    assert "not modelled" in render_html(without, plan.sites, plan.populations, [], out)
    assert "<script" not in first and 'src="http' not in first
    for name in ("tokens/s per MW", "goodput (not throughput)", "p99 inter-token latency", "fault-domain coverage"):
        assert name in first
    (out / "report.html").unlink()
    (out / "ttft_budget.png").unlink()
    (out / "cost_waterfall.png").unlink()
    written = rerender_report(out)
    assert {p.name for p in written} == {"report.md", "report.html", "ttft_budget.png", "cost_waterfall.png"}
    again = (out / "report.html").read_text(encoding="utf-8")
    assert again == first


def test_large_plans_draw_the_largest_and_every_unserved_population(plan_and_folder: tuple[Plan, Path]) -> None:
    plan, _ = plan_and_folder
    populations, assignments = plan.populations, plan.assignments
    assert drawn_populations(populations, assignments, limit=len(populations))[2] is None  # all drawn: no note
    populations = populations.assign(unserved_tok_s=0.0)
    smallest = populations["demand_tok_s"].idxmin()
    populations.loc[smallest, "unserved_tok_s"] = populations.loc[smallest, "demand_tok_s"]  # one unserved, the least
    kept, lines, shown = drawn_populations(populations, assignments, limit=3)
    largest = set(populations.nlargest(3, "demand_tok_s")["population_id"])
    assert set(kept["population_id"]) == largest | {populations.loc[smallest, "population_id"]}
    assert set(lines["population_id"]) <= set(kept["population_id"])
    assert len(lines) == int(assignments["population_id"].isin(kept["population_id"]).sum())
    assert shown is not None and shown["populations"] == len(kept) and shown["of"] == len(populations)
    share = kept["demand_tok_s"].sum() / populations["demand_tok_s"].sum()
    assert shown["demand_share"] == pytest.approx(share, abs=1e-4)


def test_ttft_on_demand_is_the_figure_the_budget_checked(plan_and_folder: tuple[Plan, Path]) -> None:
    plan, _ = plan_and_folder
    instance = plan.instance
    every = np.arange(len(instance.commodity_class))
    objective = np.array([c.ttft_p99_ms for c in instance.classes])[instance.commodity_class]
    table = np.stack([instance.ttft_ms(c) for c in every])  # one commodity against every site
    assert np.array_equal(table <= objective[:, None], instance.within_budget.dense())
    pairs = np.argwhere(instance.allowed.dense())
    assert np.array_equal(instance.ttft_ms(pairs[:, 0], pairs[:, 1]), table[pairs[:, 0], pairs[:, 1]])
    assert float(instance.ttft_ms(int(pairs[0, 0]), int(pairs[0, 1]))) == table[pairs[0, 0], pairs[0, 1]]
    merged = plan.assignments.merge(plan.populations[["population_id"]], on="population_id")
    assert (merged["ttft_p99_ms"] <= merged["ttft_objective_ms"] + 1e-9).all()


def test_a_plan_without_n_plus_one_says_so_in_its_report_and_not_on_its_map(
    plan_and_folder: tuple[Plan, Path], tmp_path: Path
) -> None:
    from placement.outputs.failover_report import NOT_PROTECTED
    from placement.outputs.writer import write_results

    plan, out = plan_and_folder
    assert '"if_lost"' not in (out / "map.html").read_text(encoding="utf-8")
    folder = write_results(plan, tmp_path / "results", maps=False)
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert report.count(NOT_PROTECTED) == 1 and "24x7: what each loss" not in report
    assert "<code>placement failover RESULTS --site ID</code>" in (folder / "report.html").read_text(encoding="utf-8")


def test_a_catalog_without_intensities_has_no_carbon_colour_layer(tmp_path: Path) -> None:
    plan = run(load_scenario(write_scenario(tmp_path)))
    page = tmp_path / "map.html"
    write_webmap(
        plan.results, page, catchments=catchment_frame(plan.results), links=links_frame(plan.instance.latency.round_trips)
    )
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S)
    assert raw is not None
    data = json.loads(raw.group(1))
    assert data["legend"]["carbon_min"] is None and all(s["g_kwh"] is None for s in data["sites"])
    assert data["legend"]["water_min"] is None and all(s["l_kwh"] is None for s in data["sites"])  # no climates either
