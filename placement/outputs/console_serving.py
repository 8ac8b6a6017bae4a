"""What the serving commands print: one node's goodput inside an objective (``placement goodput``) and refits.

:class:`GoodputAnswer` holds what ``placement goodput`` worked out (the report, the prefix cache's figures, the
simulation, the refits); :func:`print_goodput` writes it as text and :func:`print_goodput_json` as JSON.
``placement calibrate`` prints its fits with :func:`print_calibration`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from placement.outputs.console import print_json, print_lines

if TYPE_CHECKING:
    from placement.serving.calibration import PartFit
    from placement.serving.closed_loop import SweepFit
    from placement.serving.request import ServingRequest


@dataclass(frozen=True, kw_only=True)
class GoodputAnswer:
    """What ``placement goodput`` prints: the request as asked and the per-node report with what came beside it.

    Attributes
    ----------
    asked : ServingRequest
        The request as given on the command line (its objective before a prefix cache's load time comes off the
        TTFT), over ``pool_nodes`` nodes.
    report : dict
        :func:`placement.serving.request.goodput_report`'s figures, per node.
    pool_nodes : int
        Nodes the pools span (``--pool-nodes``; 1 for one node).
    node_cost_usd_h : float, optional
        All-in node cost as given (``--node-cost-usd-h``). [USD/h]
    cache : dict, optional
        The prefix cache's figures (``--kv-cache`` and ``--prefix-reuse``); None without a cache model.
    simulate : bool
        The node was simulated (``--simulate``).
    simulated : dict, optional
        The simulation's figures; None when not simulated or when there was nothing to simulate.
    plot : str, optional
        Where the Pareto curve was written (``--plot``).
    measurements : str, optional
        The planner's measurements file (``--measurements``).
    fits : list of PartFit or list of SweepFit
        The refits on those measurements (empty without them).
    refitted : bool
        One of the fits is of the request's accelerator and precision, and its figures were used.
    """

    asked: ServingRequest
    report: dict[str, Any]
    pool_nodes: int
    node_cost_usd_h: float | None
    cache: dict[str, Any] | None
    simulate: bool
    simulated: dict[str, Any] | None
    plot: str | None
    measurements: str | None
    fits: list[PartFit] | list[SweepFit]
    refitted: bool


def _itl_name(asked: ServingRequest) -> str:
    """What the ITL objective bounds: ``TPOT`` (each request's mean) or ``ITL`` (every gap)."""
    return "TPOT" if asked.itl_metric == "tpot" else "ITL"


def goodput_heading(asked: ServingRequest) -> str:
    """The request and its objective: model on the node, mean (and longest) prompt, answer, p99 TTFT and ITL."""
    return (
        f"{asked.label}, {asked.input_tokens} in (mean"
        f"{'' if asked.input_tokens_max is None else f', longest {asked.input_tokens_max}'}) / {asked.output_tokens} out, "
        f"p99 TTFT <= {asked.ttft_p99_ms:g} ms, p99 {_itl_name(asked)} <= {asked.itl_p99_ms:g} ms"
    )


def cache_line(cache: dict[str, Any]) -> str:
    """The prefix cache's figures: what it keeps, its hit rate, its load time, its warm-up nodes, goodput without it."""
    keeps = f"{cache['cache_gb_per_node']:,.0f} GB per node keeps a prefix {cache['retention_s']:,.0f} s"
    hits = f"hit rate {cache['hit_rate_limit']:.1%} at a site that sees the whole class"
    load = f"{cache['hit_load_ms']:.1f} ms to load the longest prompt's hits (in the prefill)"
    cold = f"{cache['warmup_nodes_per_site']:.2f} nodes per open site for the shared prefixes it misses"
    bare = f"without a cache {cache['goodput_tok_s_per_node_without_cache']:,.0f} tok/s per node"
    return f"  prefix cache ({cache['tier']} tier, {cache['reuse_profile']} reuse): {keeps}; {hits}; {load}; {cold}; {bare}"


def speculative_line(report: dict[str, Any]) -> str:
    """Which speculative method was kept and its tokens per step, or that plain decoding won."""
    used = report["speculative"]
    return (
        f"  speculative decoding: {used}, {report['tokens_per_step']:.2f} tokens per step (ITL per output token)"
        if used
        else "  speculative decoding: not used (plain decoding gives more goodput here)"
    )


def node_figure_lines(answer: GoodputAnswer) -> list[str]:
    """The node's uncertainty band, calibration, ITL, TTFT parts, power and cost per million goodput tokens."""
    report = answer.report
    band, calibration = report["band"], report["calibration"]
    lines = [
        f"  band p10-p90 {band['goodput_p10_tok_s']:,.0f}-{band['goodput_p90_tok_s']:,.0f} tok/s (log sigma "
        f"{band['sigma_log']:.2f}: {'; '.join(band['reasons'])})",
        "  calibration: " + "; ".join(f"{name} {c['value']:g} ({c['basis']})" for name, c in calibration.items()),
        f"  p99 {_itl_name(answer.asked)} {report['itl_ms']:.1f} ms "
        f"(prefill chunk {report['chunk_tokens']} tokens per step, "
        f"{report['mixed_step_share']:.0%} of steps carry one)",
        f"  p99 TTFT {report['ttft_ms']:.1f} ms = queue {report['queue_p99_ms']:.1f} + decode-slot wait "
        f"{report['slot_wait_p99_ms']:.1f} + prefill {report['prefill_ms']:.1f} + KV transfer "
        f"{report['kv_transfer_ms']:.1f} + first decode step {report['first_decode_ms']:.1f}",
        f"  node {report['node_kw']:.1f} kW; {report['tokens_per_s_per_mw']:,.0f} tok/s per MW; "
        f"utilisation cap {report['utilisation_cap']:.2f}",
    ]
    if "cost_per_million_goodput_tokens_usd" in report and report["cost_per_million_goodput_tokens_usd"] is not None:
        lines.append(
            f"  ${report['cost_per_million_goodput_tokens_usd']:.3f} per million goodput tokens at ${answer.node_cost_usd_h:g}/h"
        )
    return lines


def simulated_lines(report: dict[str, Any], simulated: dict[str, Any] | None, metric: str) -> list[str]:
    """The event-by-event simulation beside the analytic figures (``--simulate``).

    Parameters
    ----------
    report : dict
        The analytic per-node figures.
    simulated : dict, optional
        :func:`placement.serving.simulate.simulation_report`'s figures, or for pools
        :func:`~placement.serving.simulate_disaggregated.pools_report`'s; None when there was nothing to simulate.
    metric : {"tpot", "step"}
        The objective's ITL metric: the analytic ITL is shown in its row only.

    Returns
    -------
    list of str
        A heading and a table of analytic and simulated p99 TTFT, TPOT, ITL, tokens/s and batch (a decode replica's
        for pools).
    """
    if simulated is None:
        return ["  simulated: nothing to simulate (no goodput)"]

    def line(label: str, analytic: float | None, sim: float | None, fmt: str = ".1f") -> str:
        shown = "-" if analytic is None else format(analytic, fmt)
        return f"    {label:30}{shown:>10}{'-' if sim is None else format(sim, fmt):>11}"

    how = (
        f"{simulated['prefill_replicas']} prefill + {simulated['decode_replicas']} decode replicas"
        if "prefill_replicas" in simulated
        else f"chunk {simulated['chunk_tokens']} tokens/step"
    )
    return [
        f"  simulated at {simulated['load_factor']:g} x goodput ({simulated['arrival_rate_per_s']:.1f} requests/s, "
        f"{simulated['requests']:,} measured, {how}):",
        f"    {'':30}{'analytic':>10}{'simulated':>11}",
        line("p99 TTFT at the node [ms]", report["ttft_ms"], simulated["ttft_p99_ms"]),
        # the analytic ITL is the objective's metric: each request's mean (tpot) or every gap (step)
        line("p99 TPOT, per request [ms]", report["itl_ms"] if metric == "tpot" else None, simulated["tpot_p99_ms"]),
        line("p99 ITL, every gap [ms]", report["itl_ms"] if metric == "step" else None, simulated["itl_p99_ms"]),
        line("tokens/s", report["goodput_tok_s"] * simulated["load_factor"], simulated["throughput_tok_s"], ",.0f"),
        line("batch per replica", report["batch"], simulated["mean_batch"], ".1f"),
    ]


def fits_text(fits: list[PartFit] | list[SweepFit]) -> str:
    """The refits' table: per-part fits of measured points, or a closed-loop sweep's."""
    from placement.serving.calibration import PartFit, render_part_fits
    from placement.serving.closed_loop import render_sweep_fits

    return render_part_fits(fits) if isinstance(fits[0], PartFit) else render_sweep_fits(fits)


def goodput_lines(answer: GoodputAnswer) -> list[str]:
    """What ``placement goodput`` prints: the request, the node's goodput and figures, the simulation and refits.

    Parameters
    ----------
    answer : GoodputAnswer
        What the command worked out.

    Returns
    -------
    list of str
        The heading, then (when the node has goodput) its figures, the simulation, the Pareto curve's file and
        the refits on the planner's measurements.
    """
    report, asked = answer.report, answer.asked
    lines = [goodput_heading(asked)]
    if not report["goodput_tok_s"]:
        return [*lines, f"  no goodput: {report['limit']}"]
    pooled = f"; pools over {answer.pool_nodes} nodes, figures per node" if answer.pool_nodes > 1 else ""
    lines.append(
        f"  goodput {report['goodput_tok_s']:,.0f} tok/s per node (batch {report['batch']}, TP {report['tp']}, "
        f"{report['replicas']} replicas; limited by {report['limit']}{pooled})"
    )
    if answer.cache is not None:
        lines.append(cache_line(answer.cache))
    if asked.speculative:
        lines.append(speculative_line(report))
    lines.extend(node_figure_lines(answer))
    if answer.simulate:
        lines.extend(simulated_lines(report, answer.simulated, asked.itl_metric))
    if answer.plot:
        lines.append(f"  Pareto curve in {answer.plot}")
    if answer.fits:
        used = "refitted on them" if answer.refitted else f"not refitted: no point of {asked.accelerator} {asked.precision}"
        lines.append(f"your measurements ({answer.measurements}; {used}):")
        lines.append(fits_text(answer.fits))
    return lines


def print_goodput(answer: GoodputAnswer) -> None:
    """Write :func:`goodput_lines` to stdout."""
    print_lines(goodput_lines(answer))


def print_goodput_json(answer: GoodputAnswer) -> None:
    """``placement goodput --json``: the report, with the simulation's figures under ``simulated`` when simulated."""
    print_json({**answer.report, "simulated": answer.simulated} if answer.simulate else answer.report)


def print_fits_json(fits: Sequence[PartFit] | Sequence[SweepFit]) -> None:
    """``placement calibrate --json``: every fit's fields."""
    print_json([asdict(f) for f in fits])


def print_calibration(fits: list[PartFit] | list[SweepFit], *, source: str) -> None:
    """What ``placement calibrate`` prints: what was refitted on the file's points, then the fits' table."""
    from placement.serving.calibration import PartFit

    sweep = (
        "each part's GEMM fraction"
        if isinstance(fits[0], PartFit)
        else "a closed-loop sweep: each part's GEMM fraction and floor scale"
    )
    print(f"{source}: {sweep} refitted on its points (the rest as calibrated)")
    print(fits_text(fits))
