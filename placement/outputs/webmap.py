"""The interactive map: one self-contained HTML file (Leaflet inlined, no CDN, no tile server).

``map.html`` holds Leaflet 1.9.4 (vendored in ``placement/vendor/leaflet``), the Natural Earth
countries as the basemap and the plan's layers: open sites (circle area ~ MW, colour ~ $/M
goodput), sites not opened, population -> site lines, population points, catchments and the
latency graph's links. Every layer can be switched off; sites and populations open a popup with
their figures and, for populations, the TTFT budget of each assignment. A Content-Security-Policy
forbids the page any network request, so it behaves the same offline.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

import geopandas as gpd
import matplotlib
import numpy as np
import pandas as pd
import shapely
from matplotlib.colors import Normalize, to_hex

from placement.outputs.classes import deadline_classes
from placement.outputs.failover_report import if_lost_texts
from placement.profiles.ttft_budget import COMPONENTS
from placement.results import jsonio
from placement.results.record import PlanResults

__all__ = ["VENDOR_DIR", "leaflet_assets", "render_webmap", "webmap_data", "write_webmap"]

VENDOR_DIR = Path(str(files("placement").joinpath("vendor", "leaflet")))
"""Vendored Leaflet (``leaflet.js``, ``leaflet.css``, ``images/``, ``LICENSE``)."""
COST_CMAP = "viridis_r"
"""Site colour by $/M goodput, as on the static maps."""
CARBON_CMAP = "YlOrBr"
"""Site colour by the carbon intensity of the power it draws (gCO2e/kWh), the map's second colour option."""

WATER_CMAP = "PuBu"
"""Site colour by the water a kWh it draws consumes (L/kWh, on site and by the grid), the map's third colour option."""
CATCHMENT_TINTS = ("#fbb4ae", "#b3cde3", "#ccebc5", "#decbe4", "#fed9a6", "#ffffcc", "#e5d8bd", "#fddaec")
BASEMAP_SIMPLIFY_DEG = 0.03
"""Tolerance for lightly simplifying the country outlines. [degrees]"""
"""Classes whose TTFT objective exceeds this are batch work; their lines start switched off. [ms]"""
DECIMALS = 3

MAX_POPULATIONS = 3000
"""Populations the page draws at most: the largest by demand and every one with unserved demand. A
full-resolution plan has ~34,000 cities and ~250,000 assignment lines, a 55 MB page no browser pans
smoothly; every population is in ``populations.geojson`` and ``assignments.geojson``."""
"""Coordinate decimals in the page (about 100 m)."""


def leaflet_assets(vendor_dir: Path = VENDOR_DIR) -> tuple[str, str]:
    """Leaflet's JavaScript and CSS, the CSS's images inlined as ``data:`` URIs.

    Parameters
    ----------
    vendor_dir : Path, optional
        Folder of the vendored Leaflet distribution.

    Returns
    -------
    tuple of str
        ``(javascript, css)``.
    """
    script = (vendor_dir / "leaflet.js").read_text(encoding="utf-8")
    css = (vendor_dir / "leaflet.css").read_text(encoding="utf-8")

    def inline(match: re.Match[str]) -> str:
        data = base64.b64encode((vendor_dir / "images" / match.group(1)).read_bytes()).decode("ascii")
        return f"url(data:image/png;base64,{data})"

    return script, re.sub(r"url\(images/([A-Za-z0-9_.-]+\.png)\)", inline, css)


def _round(value: Any, decimals: int) -> Any:
    """Round every float in nested lists (GeoJSON coordinates)."""
    if isinstance(value, float):
        return round(value, decimals)
    if isinstance(value, list | tuple):
        return [_round(v, decimals) for v in value]
    return value


def _num(value: Any, decimals: int = 4) -> float | None:
    """A JSON-safe rounded number (NaN and infinities become null)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return round(number, decimals) if math.isfinite(number) else None


def _features(frame: gpd.GeoDataFrame, columns: list[str], *, decimals: int = DECIMALS) -> dict[str, Any]:
    """A GeoJSON FeatureCollection of a frame's geometry and some of its columns."""
    features = []
    for geometry, values in zip(frame.geometry, frame[columns].itertuples(index=False), strict=True):
        if geometry is None or geometry.is_empty:
            continue
        shape = json.loads(shapely.to_geojson(geometry))
        shape["coordinates"] = _round(shape["coordinates"], decimals)
        properties = {c: (_num(v) if isinstance(v, float | np.floating) else v) for c, v in zip(columns, values, strict=True)}
        features.append({"type": "Feature", "properties": properties, "geometry": shape})
    return {"type": "FeatureCollection", "features": features}


def countries_geojson(basemap: gpd.GeoDataFrame) -> dict[str, Any]:
    """Country outlines, simplified, as GeoJSON for a page's basemap (the bundled Natural Earth countries)."""
    world = basemap[["name", "geometry"]].copy() if "name" in basemap else basemap.assign(name="")[["name", "geometry"]]
    world["geometry"] = shapely.simplify(world.geometry.to_numpy(), BASEMAP_SIMPLIFY_DEG, preserve_topology=True)
    return _features(gpd.GeoDataFrame(world, geometry="geometry", crs=basemap.crs), ["name"], decimals=2)


def _site_colours(sites: pd.DataFrame) -> tuple[list[str], Normalize]:
    cost = sites["cost_per_million_goodput_tokens_usd"].astype(float)
    known = cost[sites["open"].astype(bool)].dropna()
    low, high = (float(known.min()), float(known.max())) if len(known) else (0.0, 1.0)
    norm = Normalize(vmin=low, vmax=high if high > low else low + 1e-6)
    cmap = matplotlib.colormaps[COST_CMAP]
    return [to_hex(cmap(norm(v))) if math.isfinite(v) else "#999999" for v in cost.tolist()], norm


def _carbon_colours(sites: pd.DataFrame) -> tuple[list[str], Normalize | None]:
    """Each site's colour by ``gco2e_per_kwh`` (grey where unknown) and the scale; no scale in folders without it."""
    return _column_colours(sites, "gco2e_per_kwh", CARBON_CMAP)


def _water_colours(sites: pd.DataFrame) -> tuple[list[str], Normalize | None]:
    """Each site's colour by ``water_l_per_kwh`` (grey where unknown) and the scale; no scale without it."""
    return _column_colours(sites, "water_l_per_kwh", WATER_CMAP)


def _column_colours(sites: pd.DataFrame, column: str, cmap_name: str) -> tuple[list[str], Normalize | None]:
    """Each site's colour by a column over the open sites' range (grey where unknown); no scale where it is absent."""
    if column not in sites.columns:
        return ["#999999"] * len(sites), None
    values = sites[column].astype(float)
    known = values[sites["open"].astype(bool)].dropna()
    if not len(known):
        return ["#999999"] * len(sites), None
    low, high = float(known.min()), float(known.max())
    norm = Normalize(vmin=low, vmax=high if high > low else low + 1e-6)
    cmap = matplotlib.colormaps[cmap_name]
    return [to_hex(cmap(norm(v))) if math.isfinite(v) else "#999999" for v in values.tolist()], norm


def _sites(sites: pd.DataFrame, *, if_lost: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    colours, _ = _site_colours(sites)
    carbon_colours, _ = _carbon_colours(sites)
    water_colours, _ = _water_colours(sites)
    mw_max = max(float(sites["mw_used"].max()) if len(sites) else 0.0, 1e-9)
    rows = []
    records = zip(sites.to_dict("records"), colours, carbon_colours, water_colours, strict=True)
    for row, colour, carbon_colour, water_colour in records:
        rows.append(
            {
                "id": str(row["site_id"]),
                "name": str(row["name"]),
                "cc": str(row.get("country_code", "")),
                "lat": _num(row["lat"], 4),
                "lon": _num(row["lon"], 4),
                "open": bool(row["open"]),
                "mw": _num(row["mw_used"], 3),
                "mw_avail": _num(row["mw_available"], 3),
                "nodes": int(row["nodes"]),
                "usd_h": _num(row["cost_usd_per_h"], 1),
                "usd_per_m": _num(row["cost_per_million_goodput_tokens_usd"], 4),
                "goodput": _num(row["goodput_tok_s"], 0),
                "share": _num(row["goodput_share"], 4),
                "tok_s_mw": _num(row["tokens_per_s_per_mw"], 0),
                "price": _num(row["power_price_usd_per_mwh"], 2),
                "reason": str(row["reason"]),
                "colour": colour,
                "carbon_colour": carbon_colour,
                "g_kwh": _num(row.get("gco2e_per_kwh", math.nan), 1),
                "t_year": _num(row.get("tco2e_per_year", math.nan), 0),
                "water_colour": water_colour,
                "l_kwh": _num(row.get("water_l_per_kwh", math.nan), 3),
                "m3_year": _num(row.get("water_m3_per_year", math.nan), 0),
                "stress": str(row.get("water_stress", "") or ""),
                "radius": round(4.0 + 22.0 * math.sqrt(max(float(row["mw_used"]), 0.0) / mw_max), 2),
            }
        )
        if if_lost is not None and bool(row["open"]) and str(row["site_id"]) in if_lost:
            rows[-1]["if_lost"] = if_lost[str(row["site_id"])]  # N+1 plans only: the default map is unchanged
    return rows


def _budget_rtt(assignments: pd.DataFrame) -> str:
    """The assignments' column holding the round trip the TTFT budget used (``rtt_ms`` in folders that predate it)."""
    return "rtt_budget_ms" if "rtt_budget_ms" in assignments.columns else "rtt_ms"


def _populations(populations: pd.DataFrame, assignments: pd.DataFrame) -> list[dict[str, Any]]:
    """Population points, each with its assignment rows (class, site, share, goodput, RTT, TTFT, components)."""
    # the round trip the TTFT budget used (p90 by default), so that RTT x round trips = the network component
    rtt = _budget_rtt(assignments)
    fields = ["class", "site", "share_of_demand", "goodput_tok_s", rtt, "ttft_p99_ms", "ttft_objective_ms", *COMPONENTS]
    grouped: dict[str, list[list[Any]]] = {}
    for key, values in zip(assignments["population_id"], assignments[fields].itertuples(index=False, name=None), strict=True):
        grouped.setdefault(str(key), []).append([v if isinstance(v, str) else _num(v, 3) for v in values])
    demand_max = max(float(populations["demand_tok_s"].max()) if len(populations) else 0.0, 1e-9)
    rows = []
    for row in populations.to_dict("records"):
        unserved = float(row["unserved_tok_s"]) > 1e-6 * max(float(row["demand_tok_s"]), 1.0)
        rows.append(
            {
                "name": str(row["name"]),
                "cc": str(row["country_code"]),
                "lat": _num(row["lat"], DECIMALS),
                "lon": _num(row["lon"], DECIMALS),
                "demand": _num(row["demand_tok_s"], 0),
                "served": _num(row["served_tok_s"], 0),
                "unserved": unserved,
                "nearest_rtt": _num(row["nearest_site_rtt_ms"], 1),
                "cities": int(row["n_cities"]) if "n_cities" in row and pd.notna(row["n_cities"]) else None,
                "rows": grouped.get(str(row["population_id"]), []),
                "radius": round(2.0 + 9.0 * math.sqrt(max(float(row["demand_tok_s"]), 0.0) / demand_max), 2),
            }
        )
    return rows


def _assignment_lines(assignments: pd.DataFrame) -> list[list[Any]]:
    """``[pop_lat, pop_lon, site_lat, site_lon, population, site, rtt_ms, ttft_ms, slack_ms, goodput, class]``, the short way."""
    lines = []
    for row in assignments.to_dict("records"):
        lon0, lon1 = float(row["pop_lon"]), float(row["site_lon"])
        lon1 += -360.0 if lon1 - lon0 > 180.0 else (360.0 if lon0 - lon1 > 180.0 else 0.0)
        lines.append(
            [
                _num(row["pop_lat"], DECIMALS),
                _num(lon0, DECIMALS),
                _num(row["site_lat"], DECIMALS),
                _num(lon1, DECIMALS),
                str(row["population"]),
                str(row["site"]),
                _num(row[_budget_rtt(assignments)], 1),
                _num(row["ttft_p99_ms"], 1),
                _num(row["ttft_slack_ms"], 1),
                _num(row["goodput_tok_s"], 0),
                str(row["class"]),
            ]
        )
    return lines


def _links(links: gpd.GeoDataFrame) -> list[list[Any]]:
    """``[[lat, lon], ...], kind, a, b, length_km, rtt_ms`` per link (already unwrapped by the network module)."""
    rows = []
    for geometry, kind, a, b, length, rtt in zip(
        links.geometry, links["kind"], links["a"], links["b"], links["length_km"], links["rtt_ms"], strict=True
    ):
        coords = [[round(y, DECIMALS), round(x, DECIMALS)] for x, y in shapely.get_coordinates(geometry).tolist()]
        rows.append([coords, str(kind), str(a), str(b), _num(length, 0), _num(rtt, 2)])
    return rows


def drawn_populations(
    populations: pd.DataFrame, assignments: pd.DataFrame, *, limit: int = MAX_POPULATIONS
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any] | None]:
    """The populations (and their assignments) the page draws: all, or the largest and the unserved.

    Parameters
    ----------
    populations, assignments : pandas.DataFrame
        The plan's tables.
    limit : int, optional
        Most populations drawn; every population with unserved demand is drawn on top.

    Returns
    -------
    tuple
        The populations and assignments drawn, and None when all are, else ``{"populations": drawn,
        "of": all, "demand_share": share of demand drawn}`` for the page to say so.
    """
    if len(populations) <= limit:
        return populations, assignments, None
    demand = populations["demand_tok_s"].to_numpy(float)
    unserved = populations["unserved_tok_s"].to_numpy(float) > 1e-6 * np.maximum(demand, 1.0)
    largest = np.zeros(len(populations), dtype=bool)
    largest[np.argsort(-demand, kind="stable")[:limit]] = True
    keep = largest | unserved
    kept = populations[keep]
    share = float(demand[keep].sum() / max(demand.sum(), 1e-12))
    lines = assignments[assignments["population_id"].isin(kept["population_id"])]
    return kept, lines, {"populations": int(keep.sum()), "of": len(populations), "demand_share": round(share, 4)}


def webmap_data(
    results: PlanResults,
    *,
    catchments: gpd.GeoDataFrame,
    links: gpd.GeoDataFrame,
    basemap: gpd.GeoDataFrame | None = None,
) -> dict[str, Any]:
    """Everything the page draws, as JSON-ready data.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.
    catchments : geopandas.GeoDataFrame
        Catchment polygons (:func:`placement.outputs.catchments.catchment_frame`).
    links : geopandas.GeoDataFrame
        Links of the scenario's latency model
        (:func:`placement.outputs.network_layer.links_frame`).
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).

    Returns
    -------
    dict
        ``summary, countries, sites, populations, assignments, catchments, links, legend``.
    """
    from placement.outputs.world_map import load_basemap

    basemap = load_basemap() if basemap is None else basemap
    populations, assignments, shown = drawn_populations(results.populations, results.assignments)
    catchments = catchments.assign(tint=[CATCHMENT_TINTS[k % len(CATCHMENT_TINTS)] for k in range(len(catchments))])
    columns = [
        c
        for c in ("site_id", "name", "populations_served", "people_served", "largest_populations", "mw_used", "tint")
        if c in catchments
    ]
    _, norm = _site_colours(results.sites)
    _, carbon_norm = _carbon_colours(results.sites)
    _, water_norm = _water_colours(results.sites)
    cmap = matplotlib.colormaps[COST_CMAP]
    s = results.summary
    failover = results.failover
    if_lost = if_lost_texts(failover.scenarios) if failover is not None else None
    summary = {
        "scenario": s.scenario,
        "status": s.status,
        "cost_per_million_goodput_tokens_usd": _num(s.cost_per_million_goodput_tokens_usd),
        "sites_open": s.sites_open,
        "sites_candidate": s.sites_candidate,
        "mw_used": _num(s.mw_used),
        "nodes": s.nodes,
        "goodput_tok_s": _num(s.goodput_tok_s),
        "unserved_share": _num(s.unserved_share),
        "shown": shown,
    }
    return {
        "summary": summary,
        "countries": countries_geojson(basemap),
        "sites": _sites(results.sites, if_lost=if_lost),
        "populations": _populations(populations, assignments),
        "assignments": _assignment_lines(assignments),
        "catchments": _features(catchments, columns),
        "links": _links(links),
        "legend": {
            "cost_min": _num(norm.vmin),
            "cost_max": _num(norm.vmax),
            "gradient": [to_hex(cmap(x)) for x in np.linspace(0.0, 1.0, 7)],
            "carbon_min": None if carbon_norm is None else _num(carbon_norm.vmin),
            "carbon_max": None if carbon_norm is None else _num(carbon_norm.vmax),
            "carbon_gradient": [to_hex(matplotlib.colormaps[CARBON_CMAP](x)) for x in np.linspace(0.0, 1.0, 7)],
            "water_min": None if water_norm is None else _num(water_norm.vmin),
            "water_max": None if water_norm is None else _num(water_norm.vmax),
            "water_gradient": [to_hex(matplotlib.colormaps[WATER_CMAP](x)) for x in np.linspace(0.0, 1.0, 7)],
            "mw_max": _num(results.sites["mw_used"].max(), 3),
            "components": list(COMPONENTS),
            "deadline_classes": sorted(deadline_classes(results.assignments)),
        },
    }


def _json_for_script(data: Mapping[str, Any]) -> str:
    """JSON that can sit inside a ``<script>`` element (``</`` cannot close it)."""
    return jsonio.dumps(data, compact=True).replace("</", "<\\/")


def render_webmap(data: Mapping[str, Any], *, title: str) -> str:
    """The HTML page for :func:`webmap_data`'s output.

    Parameters
    ----------
    data : mapping
        Output of :func:`webmap_data`.
    title : str
        Page title.

    Returns
    -------
    str
        A self-contained HTML document.
    """
    script, css = leaflet_assets()
    return (
        PAGE.replace("%%TITLE%%", html.escape(title))
        .replace("%%LEAFLET_CSS%%", css)
        .replace("%%STYLE%%", STYLE)
        .replace("%%LEAFLET_JS%%", script.replace("</script", "<\\/script"))
        .replace("%%DATA%%", _json_for_script(data))
        .replace("%%APP%%", APP)
    )


def write_webmap(
    results: PlanResults,
    path: Path,
    *,
    catchments: gpd.GeoDataFrame,
    links: gpd.GeoDataFrame,
    basemap: gpd.GeoDataFrame | None = None,
) -> Path:
    """Write the interactive map.

    Parameters
    ----------
    results : PlanResults
        A solved plan's results.
    path : Path
        HTML file to write (``map.html`` in a results folder).
    catchments : geopandas.GeoDataFrame
        Catchment polygons (:func:`placement.outputs.catchments.catchment_frame`).
    links : geopandas.GeoDataFrame
        Links of the scenario's latency model.
    basemap : geopandas.GeoDataFrame, optional
        Country polygons (default: the bundled Natural Earth file).

    Returns
    -------
    Path
        The file written.
    """
    title = f"{results.summary.scenario}: interactive placement map"
    data = webmap_data(results, catchments=catchments, links=links, basemap=basemap)
    Path(path).write_text(render_webmap(data, title=title), encoding="utf-8")
    return Path(path)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%%TITLE%%</title>
<style>%%LEAFLET_CSS%%</style>
<style>%%STYLE%%</style>
</head><body>
<div id="map"></div>
<pre id="errors" hidden></pre>
<script>window.__errors=[];window.addEventListener("error",function(e){window.__errors.push(String(e.message));});</script>
<script>%%LEAFLET_JS%%</script>
<script type="application/json" id="data">%%DATA%%</script>
<script>%%APP%%</script>
<script>document.getElementById("errors").textContent = window.__errors.join("\\n");
document.body.setAttribute("data-errors", String(window.__errors.length));</script>
</body></html>
"""

STYLE = """
html,body{height:100%;margin:0}#map{height:100%;background:#dde9f2}
.box{background:rgba(255,255,255,.93);padding:6px 9px;border-radius:5px;box-shadow:0 1px 4px rgba(0,0,0,.3);
 font:12px/1.35 system-ui,sans-serif;max-width:300px}
.box h3{margin:0 0 3px;font-size:13px}.gradient{height:10px;width:200px;border:1px solid #888}
.scale{display:flex;justify-content:space-between;width:202px}
.sym{display:inline-block;vertical-align:middle;margin-right:5px;border-radius:50%}
.popup table{border-collapse:collapse;font-size:11px}
.popup td,.popup th{padding:1px 5px;text-align:right;border-bottom:1px solid #eee}
.popup td:first-child,.popup th:first-child{text-align:left}
"""

APP = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var entities = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};
  var esc = function (s) { return String(s).replace(/[&<>"']/g, function (c) { return entities[c]; }); };
  var fmt = function (v, d) {
    if (v === null || v === undefined) { return "n/a"; }
    return Number(v).toLocaleString("en-US", {minimumFractionDigits: d || 0, maximumFractionDigits: d || 0});
  };
  var pct = function (v) { return v === null || v === undefined ? "n/a" : (100 * v).toFixed(1) + "%"; };
  var map = L.map("map", {preferCanvas: true, worldCopyJump: false, minZoom: 1, zoomSnap: 0.25});
  map.attributionControl.setPrefix('<a href="https://leafletjs.com" title="Leaflet, BSD-2-Clause">Leaflet</a>');
  map.attributionControl.addAttribution("Basemap: Natural Earth (public domain)");

  var countries = L.geoJSON(D.countries, {
    interactive: false, style: {color: "#b8b5ad", weight: 0.6, fillColor: "#f3f1ec", fillOpacity: 1}
  }).addTo(map);

  var catchments = L.geoJSON(D.catchments, {
    style: function (f) { return {color: "#555", weight: 0.8, fillColor: f.properties.tint, fillOpacity: 0.45}; },
    onEachFeature: function (f, layer) {
      var p = f.properties;
      layer.bindPopup('<div class="popup"><b>Catchment of ' + esc(p.name) + "</b><br>" + fmt(p.populations_served) +
        " populations, " + fmt(p.people_served) + " people<br>largest: " + esc(p.largest_populations || "") + "</div>");
    }
  }).addTo(map);

  var links = L.layerGroup();
  D.links.forEach(function (k) {
    var sea = k[1] === "submarine";
    L.polyline(k[0], {color: sea ? "#2a7fb8" : "#8a6d3b", weight: 1.2, opacity: 0.7, dashArray: sea ? "4 3" : null})
      .bindPopup('<div class="popup"><b>' + esc(k[2]) + " - " + esc(k[3]) + "</b><br>" + esc(k[1]) + " link, " + fmt(k[4]) +
        " km modelled, round trip " + fmt(k[5], 1) + " ms</div>").addTo(links);
  });

  var lines = {};
  D.assignments.forEach(function (a) {
    if (!lines[a[10]]) { lines[a[10]] = L.layerGroup(); }
    L.polyline([[a[0], a[1]], [a[2], a[3]]], {color: "#4a78b5", weight: 1, opacity: 0.45})
      .bindPopup('<div class="popup"><b>' + esc(a[4]) + " &rarr; " + esc(a[5]) + "</b><br>RTT " + fmt(a[6], 1) +
        " ms, p99 TTFT " +
        fmt(a[7], 1) + " ms (slack " + fmt(a[8], 1) + " ms)<br>class " + esc(a[10]) + ", goodput " + fmt(a[9]) + " tok/s</div>")
      .addTo(lines[a[10]]);
  });

  var names = {network_ms: "network (round trips x RTT)", queue_ms: "prefill queue", slot_wait_ms: "decode-slot wait",
               retrieval_ms: "retrieval", prefill_ms: "prefill",
               safety_tokenization_ms: "safety/tokenization", first_decode_ms: "first decode"};
  var populationPopup = function (p) {
    var h = '<div class="popup"><b>' + esc(p.name) + " (" + esc(p.cc) + ")</b>" +
      (p.cities ? " &middot; " + fmt(p.cities) + " cities" : "") +
      "<br>demand " + fmt(p.demand) + " tok/s, served inside the objective " + fmt(p.served) + " tok/s" +
      "<br>nearest candidate site: RTT " + fmt(p.nearest_rtt, 1) + " ms";
    if (!p.rows.length) { return h + '<br><b style="color:#c0392b">not served: no site inside its TTFT objective</b></div>'; }
    p.rows.forEach(function (r) {
      h += "<br><br><b>" + esc(r[0]) + " &rarr; " + esc(r[1]) + "</b>: " + pct(r[2]) + " of demand, " + fmt(r[3]) +
        " tok/s, RTT " + fmt(r[4], 1) +
        " ms<table><tr><th>p99 TTFT budget</th><th>ms</th></tr>";
      D.legend.components.forEach(function (c, i) {
        h += "<tr><td>" + names[c] + "</td><td>" + fmt(r[7 + i], 1) + "</td></tr>";
      });
      h += "<tr><th>total (objective " + fmt(r[6]) + ")</th><th>" + fmt(r[5], 1) + "</th></tr></table>";
    });
    return h + "</div>";
  };
  var populations = L.layerGroup();
  D.populations.forEach(function (p) {
    L.circleMarker([p.lat, p.lon], {radius: p.radius, weight: p.unserved ? 1.5 : 0, color: "#c0392b",
      fillColor: p.unserved ? "#e74c3c" : "#2b5c8a", fillOpacity: p.unserved ? 0.75 : 0.55})
      .bindPopup(function () { return populationPopup(p); }, {maxWidth: 340}).addTo(populations);
  });

  var sitePopup = function (s) {
    if (!s.open) {
      return '<div class="popup"><b>' + esc(s.name) + " (" + esc(s.cc) + ")</b>: not opened<br>" + esc(s.reason) +
        "<br>" + fmt(s.mw_avail, 1) + " MW available, power $" + fmt(s.price, 1) + "/MWh</div>";
    }
    return '<div class="popup"><b>' + esc(s.name) + " (" + esc(s.cc) + ")</b>: open<table>" +
      "<tr><td>MW used / available</td><td>" + fmt(s.mw, 1) + " / " + fmt(s.mw_avail, 1) + "</td></tr>" +
      "<tr><td>nodes</td><td>" + fmt(s.nodes) + "</td></tr>" +
      "<tr><td>all-in cost</td><td>$" + fmt(s.usd_h) + "/h</td></tr>" +
      "<tr><td>$ per million goodput tokens</td><td>" + fmt(s.usd_per_m, 3) + "</td></tr>" +
      "<tr><td>goodput</td><td>" + fmt(s.goodput) + " tok/s</td></tr>" +
      "<tr><td>share of the plan's goodput</td><td>" + pct(s.share) + "</td></tr>" +
      "<tr><td>tokens/s per MW</td><td>" + fmt(s.tok_s_mw) + "</td></tr>" +
      "<tr><td>power price</td><td>$" + fmt(s.price, 1) + "/MWh</td></tr>" +
      (s.g_kwh === null ? "" : "<tr><td>grid carbon of its draw</td><td>" + fmt(s.g_kwh) + " gCO2e/kWh, " +
        fmt(s.t_year) + " tCO2e a year</td></tr>") +
      (s.l_kwh === null ? "" : "<tr><td>water, on site and by the grid</td><td>" + fmt(s.l_kwh, 2) + " L/kWh, " +
        fmt(s.m3_year) + " m3 a year" + (s.stress ? " (water stress: " + esc(s.stress) + ")" : "") + "</td></tr>") +
      "</table>" +
      (s.if_lost ? "<br>" + esc(s.if_lost) : "") + "</div>";
  };
  var rejected = L.layerGroup(), opened = L.layerGroup(), carbon = L.layerGroup(), water = L.layerGroup();
  D.sites.forEach(function (s) {
    if (s.open) {
      L.circleMarker([s.lat, s.lon], {radius: s.radius, color: "#000", weight: 1.2, fillColor: s.colour, fillOpacity: 0.95})
        .bindTooltip(esc(s.name) + ": " + fmt(s.mw, 1) + " MW, $" + fmt(s.usd_per_m, 3) + "/M")
        .bindPopup(function () { return sitePopup(s); }).addTo(opened);
      L.circleMarker([s.lat, s.lon], {radius: s.radius, color: "#000", weight: 1.2, fillColor: s.carbon_colour,
        fillOpacity: 0.95}).bindTooltip(esc(s.name) + ": " + fmt(s.mw, 1) + " MW, " + fmt(s.g_kwh) + " gCO2e/kWh")
        .bindPopup(function () { return sitePopup(s); }).addTo(carbon);
      L.circleMarker([s.lat, s.lon], {radius: s.radius, color: "#000", weight: 1.2, fillColor: s.water_colour,
        fillOpacity: 0.95}).bindTooltip(esc(s.name) + ": " + fmt(s.mw, 1) + " MW, " + fmt(s.l_kwh, 2) + " L/kWh")
        .bindPopup(function () { return sitePopup(s); }).addTo(water);
    } else {
      L.circleMarker([s.lat, s.lon], {radius: 3.5, color: "#6b6b6b", weight: 1.2, fillOpacity: 0})
        .bindTooltip(esc(s.name) + ": not opened").bindPopup(function () { return sitePopup(s); }).addTo(rejected);
    }
  });

  var overlays = {
    "Countries (Natural Earth 1:110m)": countries,
    "Catchments (land each open site serves)": catchments,
    "Latency graph links (fiber corridors)": links
  };
  var deadline = D.legend.deadline_classes;
  Object.keys(lines).forEach(function (name) {
    var late = deadline.indexOf(name) >= 0;
    overlays["Population &rarr; site lines, class " + esc(name) + (late ? " (deadline in hours)" : "")] = lines[name];
    if (!late) { lines[name].addTo(map); }
  });
  overlays["Populations (area ~ demand; red: unserved)"] = populations;
  overlays["Sites not opened"] = rejected;
  overlays["Open sites (area ~ MW, colour ~ $/M)"] = opened;
  if (D.legend.carbon_min !== null) { overlays["Open sites (area ~ MW, colour ~ gCO2e/kWh of their power)"] = carbon; }
  if (D.legend.water_min !== null) { overlays["Open sites (area ~ MW, colour ~ litres of water per kWh)"] = water; }
  [catchments, populations, rejected, opened].forEach(function (layer) { layer.addTo(map); });
  L.control.layers(null, overlays, {collapsed: false, position: "topright"}).addTo(map);

  var S = D.summary;
  var info = L.control({position: "topleft"});
  info.onAdd = function () {
    var div = L.DomUtil.create("div", "box");
    div.innerHTML = "<h3>" + esc(S.scenario) + "</h3><b>$" + fmt(S.cost_per_million_goodput_tokens_usd, 3) +
      " per million goodput tokens</b><br>" + esc(S.status) + ": " + fmt(S.sites_open) + " of " + fmt(S.sites_candidate) +
      " sites open, " + fmt(S.nodes) + " nodes, " + fmt(S.mw_used, 1) + " MW<br>unserved share of demand " +
      pct(S.unserved_share) +
      (S.shown ? "<br>drawn: the " + fmt(S.shown.populations) + " largest or unserved of " + fmt(S.shown.of) +
        " populations (" + pct(S.shown.demand_share) + " of demand); all are in populations.geojson" : "") +
      "<br><i>click a site, population, line or catchment for its figures</i>";
    return div;
  };
  info.addTo(map);
  var legend = L.control({position: "bottomright"});
  legend.onAdd = function () {
    var G = D.legend, div = L.DomUtil.create("div", "box");
    var dot = function (r, fill, line) {
      return '<span class="sym" style="width:' + 2 * r + "px;height:" + 2 * r + "px;background:" + fill +
        ";border:1px solid " + line + '"></span>';
    };
    div.innerHTML = "<b>Open site colour: $ per million goodput tokens</b>" +
      '<div class="gradient" style="background:linear-gradient(to right,' + G.gradient.join(",") + ')"></div>' +
      '<div class="scale"><span>' + fmt(G.cost_min, 2) + "</span><span>" + fmt(G.cost_max, 2) + "</span></div>" +
      (G.carbon_min === null ? "" : "<b>or (its own layer): gCO2e per kWh drawn</b>" +
        '<div class="gradient" style="background:linear-gradient(to right,' + G.carbon_gradient.join(",") + ')"></div>' +
        '<div class="scale"><span>' + fmt(G.carbon_min) + "</span><span>" + fmt(G.carbon_max) + "</span></div>") +
      (G.water_min === null ? "" : "<b>or (its own layer): litres of water per kWh drawn</b>" +
        '<div class="gradient" style="background:linear-gradient(to right,' + G.water_gradient.join(",") + ')"></div>' +
        '<div class="scale"><span>' + fmt(G.water_min, 2) + "</span><span>" + fmt(G.water_max, 2) + "</span></div>") +
      dot(12, "#ddd", "#000") + "open site, area ~ MW used (largest " + fmt(G.mw_max, 1) + " MW)<br>" +
      dot(4, "transparent", "#6b6b6b") + "candidate site, not opened<br>" +
      dot(5, "#2b5c8a", "#2b5c8a") + "population served (area ~ demand)<br>" +
      dot(5, "#e74c3c", "#c0392b") + "population not served inside its TTFT objective<br>" +
      '<span class="sym" style="width:18px;height:2px;border-radius:0;background:#4a78b5"></span>population &rarr; site<br>' +
      '<span class="sym" style="width:18px;height:2px;border-radius:0;background:#8a6d3b"></span>terrestrial / ' +
      '<span class="sym" style="width:18px;height:2px;border-radius:0;background:#2a7fb8"></span>submarine link';
    return div;
  };
  legend.addTo(map);

  var bounds = L.latLngBounds(D.populations.map(function (p) { return [p.lat, p.lon]; }).concat(
    D.sites.filter(function (s) { return s.open; }).map(function (s) { return [s.lat, s.lon]; })));
  if (bounds.isValid()) { map.fitBounds(bounds.pad(0.05)); } else { map.setView([20, 0], 2); }
  document.body.setAttribute("data-ready", "1");
})();
"""
