"""What the commands print: the text a plan, a build-out, an analysis or a bundled table shows on stdout.

Each ``print_*`` function takes a command's typed result (a plan, a diff, a table) and writes its lines to stdout;
each ``*_lines`` function returns them. The command line (:mod:`placement.cli`) computes, then calls one of these.
The analyses a function renders are imported inside it, so that a command loads only what it prints.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement.results import jsonio
from placement.results.textfmt import ms_text, mw_text

if TYPE_CHECKING:
    import pandas as pd

    from placement.analyses.diff import PlanDiff
    from placement.analyses.discover import Discovery
    from placement.analyses.explain import Explanation
    from placement.analyses.exposure import FailoverExposure
    from placement.buildout.arrays import Buildout
    from placement.buildout.solve import StochasticResult
    from placement.network.measurements import CalibrationReport
    from placement.network.paths import PathType
    from placement.results.record import PlanResults
    from placement.scenario.sections import DiscoverSection
    from placement.world.bundled import BundledScenario

TAIL_SITES_NAMED = 15
"""The tail check names at most this many sites that exceed an objective; the rest are counted."""

RTT_LEGS = {
    "internet": "data center to data center over the public internet (what the plan uses between sites)",
    "access": "users at FROM to a site at TO, their last mile included (what the plan budgets)",
    "backbone": "data center to data center over one provider's private backbone (not used by the plan)",
}
"""What ``placement rtt`` measured, by path type."""

SITE_NETWORKS = {
    "transit": "sites on commodity transit (colocation, greenfield, hosting)",
    "backbone": "cloud regions on their provider's backbone",
}
"""Who carries the data centers' packets, by ``--site-network``."""


def print_json(value: Any, *, ensure_ascii: bool = True) -> None:
    """Write ``value`` as the commands' JSON (indented, non-finite numbers as ``null``).

    Parameters
    ----------
    value : Any
        What to print (see :func:`placement.results.jsonio.dumps`).
    ensure_ascii : bool, optional
        Escape non-ASCII characters (place names keep theirs with ``False``).
    """
    print(jsonio.dumps(value, ensure_ascii=ensure_ascii))


def print_lines(lines: Iterable[str]) -> None:
    """Write each line to stdout."""
    for line in lines:
        print(line)


def plan_lines(results: PlanResults) -> list[str]:
    """A solved plan's headline: status, sites, nodes, power, cost per million goodput tokens, unserved and TTFT.

    Parameters
    ----------
    results : PlanResults
        The solved plan's results; its notes (each diagnosis bounded to 15 names and a count) follow the headline.

    Returns
    -------
    list of str
        The lines ``placement solve`` prints before the tail check.
    """
    s = results.summary
    cost = s.cost_per_million_goodput_tokens_usd
    return [
        f"{s.status}: {s.sites_open} of {s.sites_candidate} sites open, {s.nodes:,} nodes, {mw_text(s.mw_used)} MW; "
        f"${s.objective_usd_per_h:,.0f}/h for {s.goodput_tok_s:,.0f} goodput tok/s = "
        f"${cost:.3f} per million goodput tokens (gap {s.gap:.2%} on the {(s.gap_basis or 'solved').replace('_', ' ')} "
        f"model, {s.solver})"
        if cost is not None and s.gap is not None
        else f"{s.status}: no goodput served",
        f"unserved share {s.unserved_share:.2%}; "
        f"p99 TTFT mean {ms_text(s.p99_ttft_ms_mean or 0)} ms, max {ms_text(s.p99_ttft_ms_max or 0)} ms",
        *results.notes,
    ]


def print_plan(results: PlanResults, *, tail: Sequence[str], out: Path) -> None:
    """What ``placement solve`` prints: the plan's headline and notes, the tail check's lines, the results folder."""
    print_lines(plan_lines(results))
    print_lines(tail)
    print(f"results in {out}")


def tail_check_lines(table: pd.DataFrame, *, seconds: float) -> list[str]:
    """The tail check's lines: how many site-class nodes were simulated, and those that exceed an objective.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`placement.analyses.tail.check_tail`'s table (``tail_check.csv``).
    seconds : float
        How long the simulation took. [s]

    Returns
    -------
    list of str
        A count line, then at most :data:`TAIL_SITES_NAMED` flagged sites (with the serving mode when not colocated,
        and a cross-metro row's prefill site) and how many more.
    """
    flagged = table[table["exceeds"] != ""]
    lines = [
        f"tail check: {len(table)} site-class nodes simulated in {seconds:.1f} s; "
        f"{len(flagged)} exceed an objective (tail_check.csv)"
    ]
    for row in flagged.head(TAIL_SITES_NAMED).to_dict("records"):
        mode, prefill = str(row.get("mode", "colocated")), row.get("prefill_site_id")
        how = "" if mode == "colocated" else f" ({mode}" + (f" from {prefill})" if prefill else ")")
        lines.append(
            f"  {row['name']} ({row['site_id']}), {row['class']}{how}: "
            f"p99 TTFT {row['simulated_ttft_p99_ms']:.1f} ms at the node "
            f"(allowed {row['node_ttft_allowed_ms']:.1f}), p99 ITL {row['simulated_itl_p99_ms']:.1f} ms "
            f"(objective {row['itl_objective_ms']:g}) at {row['load_factor']:.2f} x planned goodput per node"
        )
    if len(flagged) > TAIL_SITES_NAMED:
        lines.append(f"  ... and {len(flagged) - TAIL_SITES_NAMED} more")
    return lines


def buildout_year_lines(result: StochasticResult, buildout: Buildout) -> list[str]:
    """The build-out's year table in the base scenario's demand: cost, goodput, unserved, power, sites, fleet."""
    from placement.buildout.tables import year_table

    years = year_table(result, buildout.base_index)
    base = buildout.scenario_names[buildout.base_index]
    span = f"{buildout.years[0]}" + (f"-{buildout.years[-1]}" if len(buildout.years) > 1 else "")
    lines = [
        f"build-out {span}, {base} demand:",
        f"  {'year':>6} {'$/M goodput':>12} {'goodput tok/s':>15} {'unserved':>9} {'MW used':>9} {'sites':>6}"
        "  nodes by accelerator",
    ]
    for r in years.to_dict("records"):
        mix = ", ".join(f"{a} {r[f'nodes_{a}']:,}" for a in buildout.fleet.ids if r[f"nodes_{a}"] > 0)
        lines.append(
            f"  {r['year']:>6} {r['cost_per_million_goodput_tokens_usd']:>12.3f} {r['goodput_tok_s']:>15,.0f} "
            f"{r['unserved_share']:>9.1%} {r['mw_used']:>9,.0f} {r['sites_open']:>6}  {mix}"
        )
    return lines


def buildout_scenario_lines(result: StochasticResult) -> list[str]:
    """The build-out's scenario table (probability, NPV cost, the mean-value plan's) and its expected values."""
    from placement.buildout.tables import scenario_table

    lines = [f"  {'scenario':>10} {'probability':>11} {'NPV cost':>14} {'mean-value plan':>16}"]
    for r in scenario_table(result).to_dict("records"):
        lines.append(
            f"  {r['scenario']:>10} {r['probability']:>11.2f} {r['npv_cost_usd'] / 1e9:>12,.2f} B "
            f"{r['mean_value_plan_npv_cost_usd'] / 1e9:>14,.2f} B"
        )
    lines.append(
        f"expected NPV ${result.expected_usd / 1e9:,.2f} B; mean-value plan ${result.eev_usd / 1e9:,.2f} B; "
        f"value of the stochastic solution ${result.vss_usd / 1e9:,.2f} B (gap {result.gap:.2%}, {result.adopted} plan adopted)"
    )
    return lines


def print_buildout(result: StochasticResult, buildout: Buildout, *, out: Path) -> None:
    """What ``placement solve`` prints for a build-out: its years, its scenarios, its notes, the results folder."""
    print_lines(buildout_year_lines(result, buildout))
    print_lines(buildout_scenario_lines(result))
    print_lines(result.notes)
    print(f"results in {out}")


def print_comparison(rows: list[dict[str, Any]], *, out: Path) -> None:
    """What ``placement compare`` prints: the optimum beside the baselines, and where the table and chart are."""
    from placement.outputs.compare import render_comparison

    print(render_comparison(rows))
    print(f"table and chart in {out}")


def print_explanation(explanation: Explanation, *, folder: Path) -> None:
    """What ``placement explain`` prints: why each site is in or out, and where ``explain.json`` is."""
    from placement.analyses.explain import render_table

    print(render_table(explanation))
    print(f"explain.json in {folder}")


def exposure_json(exposure: FailoverExposure, *, written: Path) -> dict[str, Any]:
    """``placement failover --json``: the exposure's headline and the folder its files are in."""
    return {**exposure.headline, "folder": str(written)}


def print_exposure(exposure: FailoverExposure, *, written: Path) -> None:
    """What ``placement failover`` prints: the exposure's table, and where its files are."""
    from placement.analyses.exposure import render_exposure

    print(render_exposure(exposure))
    print(f"failover_exposure.csv, failover_exposure_sites.csv and failover_exposure.json in {written}")


def adequacy_json(figures: dict[str, Any], *, written: list[Path]) -> dict[str, Any]:
    """``placement adequacy --json``: the figures (``expected_unserved_share`` among them) and the files written."""
    return {**figures, "files": [str(p) for p in written]}


def print_adequacy(figures: dict[str, Any], *, written: list[Path]) -> None:
    """What ``placement adequacy`` prints: the figures in words, and where they were written."""
    from placement.outputs.report_md import adequacy_lines

    print_lines(adequacy_lines(figures))
    folder = written[0].parent if written else Path(".")
    print(f"adequacy.csv, summary.json (adequacy) and the report in {folder}")


def print_diff(diff: PlanDiff, *, written: Path) -> None:
    """What ``placement diff`` prints: what changed between the two plans, and where its files are."""
    from placement.analyses.diff import render_diff

    print(render_diff(diff))
    print(f"diff.json, diff.geojson and diff.png in {written}")


def rtt_lines(report: dict[str, Any], *, path: PathType, site_network: str) -> list[str]:
    """A round trip between two places: the path, the site network, the RTT, its physics bound, the hops and notes.

    Parameters
    ----------
    report : dict
        :func:`placement.network.places.rtt_report`'s report.
    path : PathType
        The path measured (internet, access or backbone).
    site_network : str
        ``transit`` or ``backbone``: who carries the data centers' packets (not shown for a backbone path).

    Returns
    -------
    list of str
        The lines ``placement rtt FROM TO`` prints.
    """
    from placement.network.paths import PathType

    origin, destination = report["from"], report["to"]
    lines = [
        f"{origin['name']} ({origin['country_code']}) -> {destination['name']} ({destination['country_code']}): {RTT_LEGS[path]}"
    ]
    if path is not PathType.BACKBONE:
        lines.append(f"  {SITE_NETWORKS[site_network]}")
    lines.append(
        f"  RTT {report['rtt_ms']:.1f} ms (p90 {report['rtt_p90_ms']:.1f} ms); "
        f"physics bound {report['bound_ms']:.1f} ms (great circle in fiber)"
    )
    lines.append(f"  path: {' > '.join(report['path'])}")
    lines.extend(f"  note: {note}" for note in report.get("notes", []))
    return lines


def rtt_calibration_json(report: CalibrationReport, *, measurements: str) -> dict[str, Any]:
    """``placement rtt --measurements FILE --json``: the error table and the corrections the measurements make."""
    return {
        "measurements": measurements,
        "table": report.table.to_dict(orient="records"),
        "p50_factor": dict(report.corrections.p50_factor),
        "p90_spread_factor": dict(report.corrections.p90_spread_factor),
    }


def print_rtt_calibration(report: CalibrationReport, *, measurements: str) -> None:
    """What ``placement rtt --measurements FILE`` prints: the model's error before and after the corrections."""
    from placement.network.measurements import format_report

    print_lines(format_report(report, measurements))


def discovery_lines(found: Discovery, *, spec: DiscoverSection) -> list[str]:
    """The discovery's headline, its ranked proposals (20 at most) and who stays unserved (8 at most).

    Parameters
    ----------
    found : Discovery
        What :func:`placement.analyses.discover.discover` found.
    spec : DiscoverSection
        The proposal rules used (least population, spacing), named when nothing is proposed.

    Returns
    -------
    list of str
        The lines ``placement discover`` prints before the folder.
    """
    head = found.headline()
    lines: list[str] = []
    if not head["proposals"]:
        why = (
            "the plan already serves every population"
            if head["unserved_share_before"] < 1e-6
            else f"no city of at least {spec.min_population:,} people lies within reach of the unserved demand and "
            f"{spec.spacing_km:g} km from every site (lower --min-population or --spacing-km)"
        )
        lines.append(f"no site proposed: {why}")
    lines.append(
        f"{head['proposals_opened']} of {head['proposals']} proposed sites worth building, {head['mw_built']:,.0f} MW: "
        f"unserved {head['unserved_share_before']:.2%} -> {head['unserved_share_after']:.2%}, "
        f"${head['usd_per_million_goodput_tokens_before']:.3f}/M -> ${head['usd_per_million_goodput_tokens_after']:.3f}/M"
    )
    for row in found.ranked.head(20).itertuples():
        lines.append(
            f"  {row.site_id} {row.name} ({row.country_code}): {row.mw_built:,.1f} MW, takes "
            f"{row.unserved_taken_tok_s:,.0f} unserved tok/s, entry ${row.entry_usd_per_mwh:,.0f}/MWh; gains: {row.largest_gains}"
        )
    for line in head["still_unserved"][:8]:
        lines.append(
            f"  still unserved: {line['population']} ({line['country_code']}) {line['unserved_share']:.0%}: {line['why']}"
        )
    return lines


def print_discovery(found: Discovery, *, spec: DiscoverSection, out: Path) -> None:
    """What ``placement discover`` prints: the proposals, who stays unserved, and the discovery's folder."""
    print_lines(discovery_lines(found, spec=spec))
    print(f"discovery in {out}")


def frontier_lines(out: Path, *, axis: str) -> list[str]:
    """One line per point of ``frontier.csv``: its cap, what it uses a year, its cost and footprint, sites, unserved.

    Parameters
    ----------
    out : pathlib.Path
        The frontier's folder (holds ``frontier.csv``).
    axis : {"carbon", "water"}
        What the caps limit.

    Returns
    -------
    list of str
        The lines ``placement frontier`` prints before the folder.
    """
    from placement.analyses.frontier import UNIT, USED_PER_YEAR
    from placement.outputs.frontier_files import PER_MILLION

    lines: list[str] = []
    with (out / "frontier.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            unit, used, per_million = UNIT[axis], USED_PER_YEAR[axis], PER_MILLION[axis][0]
            cap = "no cap" if not row["cap"] else f"cap {float(row['cap']):,.0f} {unit}"
            lines.append(
                f"{row['plan']}: {cap}: {float(row[used]):,.0f} {unit} a year, "
                f"${float(row['usd_per_million_goodput_tokens']):.3f}/M, "
                f"{float(row[per_million]):,.1f} {'gCO2e' if axis == 'carbon' else 'L'}/M, {row['sites_open']} sites, "
                f"{float(row['unserved_share']):.1%} unserved"
                + ("" if row.get("at_equal_service", "True") == "True" else "; serves less than the plan without a cap")
            )
    return lines


def print_frontier(out: Path, *, axis: str) -> None:
    """What ``placement frontier`` prints: each point of the frontier, and its folder."""
    print_lines(frontier_lines(out, axis=axis))
    print(f"frontier in {out}")


def alternatives_lines(out: Path) -> list[str]:
    """One line per design of ``alternatives.csv``, then the must-have, choice and never sites of ``alternative_sites.csv``.

    Parameters
    ----------
    out : pathlib.Path
        The run's folder.

    Returns
    -------
    list of str
        The lines ``placement alternatives`` prints before the folder.
    """
    lines: list[str] = []
    with (out / "alternatives.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if not row.get("usd_per_h"):
                lines.append(f"{row['design']} ({row['direction']}): no design: {row['status']}")
                continue
            per_million = row["usd_per_million_goodput_tokens"]
            lines.append(
                f"{row['design']} ({row['direction']}): {float(row['usd_per_h']):,.2f} $/h "
                f"({float(row['cost_over_optimum']):+.2%}), " + (f"${float(per_million):.3f}/M, " if per_million else "")
                + f"{row['sites_open']} sites, {float(row['mw_not_shared']):.0%} of MW not shared with the optimum"
                + (f"; the same as {row['same_as']}" if row.get("same_as") else "")
            )  # fmt: skip
    classes: dict[str, list[str]] = {"must-have": [], "choice": [], "never": []}
    with (out / "alternative_sites.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            classes[row["class"]].append(row["site_id"])
    for name in ("must-have", "choice"):
        ids = classes[name]
        shown = ", ".join(ids[:12]) + (f" (+{len(ids) - 12})" if len(ids) > 12 else "")
        lines.append(f"{name}: {len(ids)} sites" + (f": {shown}" if ids else ""))
    lines.append(f"never: {len(classes['never'])} sites")
    return lines


def print_alternatives(out: Path) -> None:
    """What ``placement alternatives`` prints: each design, the sites every, some and no design opens, the folder."""
    print_lines(alternatives_lines(out))
    print(f"alternatives in {out}")


def print_sweep(table: pd.DataFrame, *, out: Path) -> None:
    """What ``placement sweep`` prints: the solved cases' cost range, the first 5 failures, the results folder.

    Parameters
    ----------
    table : pandas.DataFrame
        The sweep's cases (:func:`placement.sweep.run.run_sweep`); a failed case has its ``error``.
    out : pathlib.Path
        The sweep's results folder.
    """
    solved = table[table["error"] == ""]
    cost = solved["cost_per_million_goodput_tokens_usd"]
    if len(solved):
        print(
            f"{len(solved)} of {len(table)} cases solved: ${cost.min():.3f} to ${cost.max():.3f} per million goodput tokens "
            f"(largest gap {solved['gap'].max():.2%})"
        )
    for row in table[table["error"] != ""].head(5).to_dict("records"):
        print(f"case {row['case']} ({row['case_id']}) failed: {str(row['error']).splitlines()[0]}")
    print(f"results in {out}")


def print_validated(
    *, path: Path, n_sites: int, scenario_name: str | None = None, n_classes: int = 0, catalog_name: str = ""
) -> None:
    """What ``placement validate`` prints for a file that passed: the scenario and its catalog, or the catalog.

    Parameters
    ----------
    path : pathlib.Path
        The file checked.
    n_sites : int
        Its candidate sites (after a scenario's exclusions).
    scenario_name : str, optional
        The scenario's name, when the file is one (else the file is a catalog).
    n_classes : int, optional
        The scenario's workload classes.
    catalog_name : str, optional
        The scenario's catalog file name.
    """
    if scenario_name is not None:
        print(f"ok: scenario {scenario_name} with {n_classes} classes; catalog {catalog_name}: {n_sites} sites")
    else:
        print(f"ok: catalog {path} with {n_sites} sites")


def print_written(paths: Iterable[Path]) -> None:
    """One ``wrote PATH`` line per file written."""
    for path in paths:
        print(f"wrote {path}")


def print_init(written: Sequence[Path], *, folder: Path) -> None:
    """What ``placement init`` prints: the files copied, then how to validate and solve the scenario."""
    print_written(written)
    scenario = written[0]
    print("next: edit the scenario and its site catalog, then")
    print(f"  placement validate {scenario}")
    print(f"  placement solve {scenario} --out {folder / 'out'}")


def print_schema(text: str) -> None:
    """What ``placement schema`` prints without ``--out``: the scenario's JSON Schema, as it is."""
    print(text, end="")


def print_scenarios(scenarios: Iterable[BundledScenario]) -> None:
    """What ``placement scenarios`` prints: each bundled scenario's key, name, description and path."""
    for scenario in scenarios:
        print(f"{scenario.key}  ({scenario.name})")
        print(f"  {scenario.description}")
        print(f"  {scenario.path}")
    print("copy one to edit: placement init DIR [--scenario KEY]")
