"""A build-out's results folder, written whole or not at all.

``summary.json``, ``buildout.csv`` (year x site x accelerator, the base scenario), ``buildout_scenarios.csv``
(every scenario), ``years.csv`` (the base scenario), ``years_scenarios.csv`` (every scenario: its year figures, the
caps' emissions and water among them), ``scenarios.csv``, ``sites_by_year.geojson`` (per-year properties),
``timeline.png`` (MW by site and year, stacked by accelerator), ``maps_by_year.png`` (small multiples),
``map.html`` (a year selector), ``report.md``, and ``years/<year>/`` holding each year of the base scenario
as a plain results folder (``summary.json``, ``sites.csv``, ``assignments.csv``; with N+1 also ``failover.csv``,
``failover_sites.csv`` and ``failover_scenarios.csv``, as a single-year N+1 plan writes them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import geopandas as gpd
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from placement.buildout.solve import StochasticResult
from placement.buildout.tables import (
    buildout_table,
    class_accelerator_table,
    rules_table,
    scenario_table,
    summary_dict,
    year_assignments,
    year_sites,
    year_summary,
    year_table,
)
from placement.outputs import geojson as geo
from placement.outputs.buildout_failover import n_plus_one_lines, write_year_failover
from placement.outputs.webmap import countries_geojson, leaflet_assets
from placement.outputs.world_map import WORLD_LAT_DEG, WORLD_LON_DEG, add_polygons, geographic_aspect, load_basemap
from placement.outputs.writer import write_folder
from placement.results.folder import write_csv, write_json

ACCELERATOR_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
TIMELINE_SITES = 12
"""Sites drawn one panel each on the timeline (the largest by final-year MW); the rest are summed."""


def _colour(result: StochasticResult) -> dict[str, str]:
    ids = result.buildout.fleet.ids
    return {name: ACCELERATOR_COLOURS[h % len(ACCELERATOR_COLOURS)] for h, name in enumerate(ids)}


def draw_timeline(
    table: pd.DataFrame,
    colours: dict[str, str],
    path: Path,
    *,
    title: str,
    energized_mw: pd.DataFrame | None = None,
) -> None:
    """MW used by site and year, stacked by accelerator, with each site's MW reserved and energized.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`placement.buildout.tables.buildout_table` of one scenario.
    colours : dict
        Colour per accelerator.
    path : Path
        PNG to write.
    title : str
        Figure title.
    energized_mw : pandas.DataFrame, optional
        MW energized per site (index ``site_id``) and year (columns): a named site's line then shows its power
        from the year it is energized, not only from the year it opens (the table has rows for open sites only).
    """
    final = table[table["year"] == table["year"].max()].groupby("site_id")["mw_used"].sum().sort_values(ascending=False)
    top = list(final.index[:TIMELINE_SITES])
    frame = table.assign(panel=np.where(table["site_id"].isin(top), table["site_id"], "all other sites"))
    panels = [*top, "all other sites"] if len(final) > len(top) else top
    columns = 4
    rows = int(np.ceil(len(panels) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.0 * columns, 2.6 * rows), sharex=True, squeeze=False)
    years = sorted(table["year"].unique())
    for ax, panel in zip(axes.flat, panels, strict=False):
        part = frame[frame["panel"] == panel]
        stack = part.pivot_table(index="year", columns="accelerator", values="mw_used", aggfunc="sum").reindex(years).fillna(0.0)
        bottom = np.zeros(len(years))
        for name in stack.columns:
            if name == "none":
                continue
            ax.bar(years, stack[name], bottom=bottom, color=colours.get(str(name), "#999999"), label=str(name), width=0.7)
            bottom += stack[name].to_numpy(float)
        site_year = part.groupby(["year", "site_id"])[["mw_reserved", "mw_available"]].first().groupby("year").sum()
        site_year = site_year.reindex(years).fillna(0.0)
        if energized_mw is not None and panel in energized_mw.index:
            site_year["mw_available"] = energized_mw.loc[panel].reindex(years).to_numpy(float)
        ax.step(years, site_year["mw_reserved"], where="mid", color="black", linewidth=1.0, label="MW reserved")
        ax.step(
            years, site_year["mw_available"], where="mid", color="#c0392b", linestyle=":", linewidth=1.0, label="MW energized"
        )
        ax.set_title(panel, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xticks(years)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    handles: list[Artist] = [Rectangle((0, 0), 1, 1, color=colours[name]) for name in colours]
    handles += [Line2D([], [], color="black"), Line2D([], [], color="#c0392b", linestyle=":")]
    fig.legend(handles, [*colours, "MW reserved", "MW energized"], loc="lower center", ncol=len(colours) + 2, fontsize=8)
    fig.suptitle(title + " — MW used by site and year, by accelerator")
    fig.supylabel("MW (facility, PUE included)", fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_year_maps(result: StochasticResult, table: pd.DataFrame, colours: dict[str, str], path: Path) -> None:
    """One world map per year: open sites sized by MW used, coloured by their largest accelerator."""
    b = result.buildout
    world = load_basemap()
    sites = b.sites.set_index("id")
    years = b.years
    columns = min(len(years), 2) if len(years) > 1 else 1
    rows = int(np.ceil(len(years) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(9.0 * columns, 4.4 * rows), squeeze=False)
    for ax, year in zip(axes.flat, years, strict=False):
        add_polygons(ax, world.geometry.to_numpy(), facecolors="#eceae4", edgecolor="#b8b5ad", linewidth=0.3)
        ax.set_aspect(geographic_aspect(world))
        part = table[(table["year"] == year)]
        by_site = part.groupby("site_id")["mw_used"].sum()
        main = part.sort_values("mw_used", ascending=False).drop_duplicates("site_id").set_index("site_id")["accelerator"]
        lon, lat = sites.loc[by_site.index, "lon"], sites.loc[by_site.index, "lat"]
        face = [colours.get(str(main[s]), "#ffffff") for s in by_site.index]
        ax.scatter(lon, lat, s=8 + by_site.to_numpy(float) * 0.6, c=face, edgecolors="black", linewidths=0.5, zorder=5)
        ax.set_xlim(*WORLD_LON_DEG)
        ax.set_ylim(*WORLD_LAT_DEG)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{year}: {len(by_site)} sites, {by_site.sum():,.0f} MW used", fontsize=10)
    for ax in list(axes.flat)[len(years) :]:
        ax.axis("off")
    handles = [Line2D([], [], marker="o", linestyle="", markerfacecolor=c, markeredgecolor="black") for c in colours.values()]
    fig.legend(handles, list(colours), loc="lower center", ncol=len(colours), fontsize=8, title="largest accelerator at the site")
    fig.suptitle(f"{b.scenario_name}: open sites by year ({b.scenario_names[b.base_index]} demand; area ~ MW used)")
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def sites_by_year_frame(result: StochasticResult, table: pd.DataFrame) -> gpd.GeoDataFrame:
    """Every candidate site as a point with per-year properties (``open_2027``, ``mw_used_2027``, ``nodes_2027``, ...)."""
    b = result.buildout
    sites = b.sites[["id", "name", "country_code", "continent", "lat", "lon"]].rename(columns={"id": "site_id"}).copy()
    data = b.data
    for y, year in enumerate(b.years):
        part = table[table["year"] == year]
        used = part.groupby("site_id")["mw_used"].sum()
        nodes = part.groupby("site_id")["nodes"].sum()
        mix = _mix_by_site(part)
        sites[f"open_{year}"] = result.plan.first.open[:, y]
        sites[f"mw_available_{year}"] = data.site_mw_available[:, y]
        sites[f"mw_reserved_{year}"] = result.plan.first.mw_reserved[:, y]
        sites[f"mw_used_{year}"] = sites["site_id"].map(used).fillna(0.0).to_numpy(float)
        sites[f"nodes_{year}"] = sites["site_id"].map(nodes).fillna(0).astype(int).to_numpy()
        sites[f"accelerators_{year}"] = sites["site_id"].map(mix).fillna("").to_numpy(str)
    return gpd.GeoDataFrame(sites, geometry=gpd.points_from_xy(sites["lon"], sites["lat"]), crs=geo.WGS84)


def _mix_by_site(part: pd.DataFrame) -> dict[str, str]:
    """``accelerator:nodes;...`` of each site in one year's rows."""
    mix: dict[str, list[str]] = {}
    for record in part[part["nodes"] > 0].to_dict("records"):
        mix.setdefault(str(record["site_id"]), []).append(f"{record['accelerator']}:{record['nodes']}")
    return {site: ";".join(entries) for site, entries in mix.items()}


def _site_entry(site: dict[Any, Any], rows: list[dict[Any, Any]], colours: dict[str, str]) -> dict[str, Any]:
    main = max(rows, key=lambda r: float(r["mw_used"]))["accelerator"]
    return {
        "id": str(site["id"]),
        "name": str(site["name"]),
        "lat": float(site["lat"]),
        "lon": float(site["lon"]),
        "mw_used": round(sum(float(r["mw_used"]) for r in rows), 2),
        "mw_reserved": round(float(rows[0]["mw_reserved"]), 2),
        "mw_available": round(float(rows[0]["mw_available"]), 2),
        "colour": colours.get(str(main), "#ffffff"),
        "mix": ", ".join(f"{r['accelerator']} {int(r['nodes']):,}" for r in rows if int(r["nodes"]) > 0),
    }


def render_year_map(result: StochasticResult, table: pd.DataFrame, colours: dict[str, str]) -> str:
    """A self-contained Leaflet page: a year selector over the open sites (works with no network)."""
    b = result.buildout
    sites = {str(r["id"]): r for r in b.sites.to_dict("records")}
    years: dict[str, list[dict[str, Any]]] = {}
    for year in b.years:
        by_site: dict[str, list[dict[Any, Any]]] = {}
        for record in table[table["year"] == year].to_dict("records"):
            by_site.setdefault(str(record["site_id"]), []).append(record)
        years[str(year)] = [_site_entry(sites[site], rows, colours) for site, rows in by_site.items()]
    script, css = leaflet_assets()
    payload = json.dumps({"years": years, "colours": colours, "countries": countries_geojson(load_basemap())})
    payload = payload.replace("</", "<\\/")
    title = f"{b.scenario_name}: build-out by year"
    return _PAGE.format(title=title, css=css, script=script, payload=payload, first=b.years[0])


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>{css}</style>
<style>html,body{{margin:0;height:100%;font-family:sans-serif}}#map{{position:absolute;top:44px;bottom:0;width:100%}}
#bar{{height:44px;display:flex;align-items:center;gap:12px;padding:0 12px;background:#f4f3ef}}</style></head>
<body><div id="bar"><b>{title}</b><label>year <select id="year"></select></label><span id="info"></span></div>
<div id="map"></div>
<script>{script}</script>
<script>
const data = {payload};
const map = L.map('map', {{worldCopyJump: true}}).setView([25, 10], 2);
map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
map.attributionControl.addAttribution('Basemap: Natural Earth (public domain)');
L.geoJSON(data.countries, {{interactive: false, style: {{color: '#b8b5ad', weight: 0.6, fillColor: '#f3f1ec', fillOpacity: 1}}}})
  .addTo(map);
const legend = L.control({{position: 'bottomright'}});
legend.onAdd = () => {{
  const div = L.DomUtil.create('div');
  div.style.cssText = 'background:#fff;padding:6px 8px;font-size:12px;border:1px solid #999';
  div.innerHTML = '<b>main accelerator at the site</b><br>' + Object.entries(data.colours).map(([a, c]) =>
    `<span style="display:inline-block;width:10px;height:10px;border-radius:5px;background:${{c}};` +
    `border:1px solid #000"></span> ${{a}}`
  ).join('<br>') + '<br>area ~ MW used';
  return div;
}};
legend.addTo(map);
const layer = L.layerGroup().addTo(map);
const select = document.getElementById('year');
Object.keys(data.years).forEach(y => {{ const o = document.createElement('option'); o.value = y; o.text = y; select.add(o); }});
function show(year) {{
  layer.clearLayers();
  let total = 0;
  data.years[year].forEach(s => {{
    total += s.mw_used;
    const style = {{radius: 3 + Math.sqrt(s.mw_used), color: '#000', weight: 1, fillColor: s.colour, fillOpacity: 0.85}};
    L.circleMarker([s.lat, s.lon], style)
      .bindPopup(`<b>${{s.name}}</b> (${{s.id}})<br>${{s.mw_used.toFixed(1)}} MW used of ${{s.mw_reserved.toFixed(1)}} reserved,
        ${{s.mw_available.toFixed(0)}} energized<br>${{s.mix || 'no nodes'}}`).addTo(layer);
  }});
  document.getElementById('info').textContent = `${{data.years[year].length}} open sites, ${{total.toFixed(0)}} MW used`;
}}
select.addEventListener('change', () => show(select.value));
select.value = '{first}';
show('{first}');
</script></body></html>
"""


def _money(value: float) -> str:
    return f"${value / 1e9:,.2f} B"


def _rules_lines(summary: dict[str, Any]) -> list[str]:
    """The availability rules that shaped the fleet: what each barred (or licensed) where."""
    rules = summary.get("availability_rules", [])
    if not rules:
        return []
    lines = ["", "## Rules that shaped the fleet", ""]
    for rule in rules:
        verb = "barred" if rule["effect"] == "barred" else "needs a licence for"
        bought = "" if rule["effect"] == "barred" else f"; {rule['nodes_bought']:,.0f} nodes bought under it"
        lines.append(
            f"- **{rule['rule_id']}** ({rule['name']}) {verb} {', '.join(rule['accelerators'])} at "
            f"{len(rule['sites'])} sites in {', '.join(rule['countries'])} ({', '.join(rule['sites'])}){bought}. "
            f"Simplified: {rule['simplification']}. Source: {rule['source']}."
        )
    return lines


def render_report(result: StochasticResult, summary: dict[str, Any]) -> str:
    """``report.md``: the year table, the scenario table, expected cost and VSS, and the notes."""
    b = result.buildout
    years = year_table(result, b.base_index)
    scenarios = scenario_table(result)
    lines = [
        f"# {b.scenario_name}: build-out {b.years[0]}-{b.years[-1]}",
        "",
        f"Expected NPV of cost {_money(result.expected_usd)} over {len(b.scenario_names)} demand scenarios "
        f"(discount rate {b.horizon.discount_rate:.0%}); the mean-value plan would cost {_money(result.eev_usd)} in expectation: "
        f"**value of the stochastic solution {_money(result.vss_usd)}** "
        f"({result.vss_usd / max(result.eev_usd, 1e-9):.1%}). Gap to the proven bound {result.gap:.2%}.",
        "",
        f"## Years ({b.scenario_names[b.base_index]} demand)",
        "",
        "| year | $/M goodput tokens | $/h | goodput tok/s | unserved | MW used | MW reserved | sites open | "
        + " | ".join(f"{a} nodes" for a in b.fleet.ids)
        + " |",
        "|---" * (8 + len(b.fleet.ids)) + "|",
    ]
    for r in years.to_dict("records"):
        cost = r["cost_per_million_goodput_tokens_usd"]
        lines.append(
            f"| {r['year']} | {cost:.3f} | {r['cost_usd_per_h']:,.0f} | {r['goodput_tok_s']:,.0f} | {r['unserved_share']:.1%} | "
            f"{r['mw_used']:,.0f} | {r['mw_reserved']:,.0f} | {r['sites_open']} | "
            + " | ".join(f"{r[f'nodes_{a}']:,}" for a in b.fleet.ids)
            + " |"
        )
    mix = class_accelerator_table(result, b.base_index)
    lines += [
        "",
        f"## Which accelerators carry each class ({b.scenario_names[b.base_index]} demand, share of the class's tokens)",
        "",
    ]
    for year, part in mix.groupby("year", sort=True):
        split = "; ".join(
            f"{cls}: " + ", ".join(f"{a} {v:.0%}" for a, v in zip(g["accelerator"], g["share_of_class_tokens"], strict=True))
            for cls, g in part.groupby("class", sort=False)
        )
        lines.append(f"- {year}: {split}")
    lines += [
        "",
        "## Demand scenarios",
        "",
        "| scenario | probability | NPV of cost (this plan) | NPV of cost (mean-value plan) | demand tok/s in the last year "
        "| unserved in the last year | $/M in the last year |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in scenarios.to_dict("records"):
        lines.append(
            f"| {r['scenario']} | {r['probability']:.2f} | {_money(r['npv_cost_usd'])} | "
            f"{_money(r['mean_value_plan_npv_cost_usd'])} | "
            f"{r['demand_tok_s_last_year']:,.0f} | {r['unserved_share_last_year']:.1%} | "
            f"{r['cost_per_million_goodput_tokens_usd_last_year']:.3f} |"
        )
    lines += n_plus_one_lines(summary)
    lines += _rules_lines(summary)
    agg = summary["aggregation"]
    lines += [
        "",
        "## Resolution",
        "",
        f"{agg['cities']:,} cities in {agg['populations']} populations, {agg['time_slices']} time slices, "
        f"{agg['demand_rows']} demand rows, {agg['pairs']:,} population-site pairs; "
        f"{agg['unreachable_demand_share']:.1%} of demand has no site inside its TTFT objective on every accelerator.",
        "",
    ]
    if result.regret is not None:
        lines += ["## Min-max regret", "", "```", json.dumps(result.regret, indent=2), "```", ""]
    if result.notes:
        lines += ["## Notes", "", *[f"- {note}" for note in result.notes], ""]
    return "\n".join(lines)


def _write_years(result: StochasticResult, folder: Path) -> None:
    base = result.buildout.base_index
    for y, year in enumerate(result.buildout.years):
        target = folder / "years" / str(year)
        target.mkdir(parents=True)
        write_json(year_summary(result, y, base), target / "summary.json")
        write_csv(year_sites(result, y, base), target / "sites.csv")
        write_csv(year_assignments(result, y, base), target / "assignments.csv")
        write_year_failover(result, y, base, target)


def _write_all(result: StochasticResult, folder: Path, *, maps: bool, runtime_s: float) -> None:
    b = result.buildout
    shutil.copyfile(b.scenario_path, folder / "scenario.yaml")
    summary = summary_dict(result, runtime_s=runtime_s)
    write_json(summary, folder / "summary.json")
    base = buildout_table(result, b.base_index)
    write_csv(base.drop(columns=["scenario"]), folder / "buildout.csv")
    every = pd.concat([buildout_table(result, s) for s in range(len(b.scenario_names))], ignore_index=True)
    write_csv(every, folder / "buildout_scenarios.csv")
    write_csv(year_table(result, b.base_index), folder / "years.csv")
    every_year = [year_table(result, s).assign(scenario=name) for s, name in enumerate(b.scenario_names)]
    write_csv(pd.concat(every_year, ignore_index=True), folder / "years_scenarios.csv")
    write_csv(class_accelerator_table(result, b.base_index), folder / "class_accelerators.csv")
    write_csv(scenario_table(result), folder / "scenarios.csv")
    write_csv(rules_table(result), folder / "availability_rules.csv")
    geo.write_geojson(sites_by_year_frame(result, base), folder / "sites_by_year.geojson")
    colours = _colour(result)
    energized = pd.DataFrame(b.data.site_mw_available, index=b.sites["id"].to_numpy(), columns=list(b.years))
    draw_timeline(
        base,
        colours,
        folder / "timeline.png",
        title=f"{b.scenario_name} ({b.scenario_names[b.base_index]} demand)",
        energized_mw=energized,
    )
    if maps:
        draw_year_maps(result, base, colours, folder / "maps_by_year.png")
        (folder / "map.html").write_text(render_year_map(result, base, colours), encoding="utf-8")
    (folder / "report.md").write_text(render_report(result, summary), encoding="utf-8")
    _write_years(result, folder)


def write_buildout(result: StochasticResult, out_dir: str | Path, *, maps: bool = True, runtime_s: float = 0.0) -> Path:
    """Write a build-out's results folder, atomically.

    Parameters
    ----------
    result : StochasticResult
        The solved build-out.
    out_dir : str or Path
        Destination (replaced as a whole; see :func:`placement.outputs.writer.write_folder`).
    maps : bool, optional
        Draw the per-year maps and the HTML map.
    runtime_s : float, optional
        Wall-clock time of the run so far, for ``summary.json``. [s]

    Returns
    -------
    Path
        The folder written.
    """
    return write_folder(out_dir, lambda folder: _write_all(result, folder, maps=maps, runtime_s=runtime_s))
