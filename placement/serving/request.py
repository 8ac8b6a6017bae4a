"""What one node serves and the goodput it delivers: :class:`ServingRequest`, its checks, and :func:`serve`.

Goodput = utilisation cap × capacity at the best batch and tensor-parallel degree that meet every objective
(:mod:`placement.serving.search`, on the step times of :mod:`placement.serving.kernels`); :func:`serve` adds the
node's power, its yield per MW and, with a node cost, the cost per million goodput tokens.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from placement._errors import InputError, Problem
from placement.economics.cost import cost_per_million_tokens_usd
from placement.economics.cost import tokens_per_s_per_mw as _yield_per_mw
from placement.serving.candidate import Candidate, tp_options
from placement.serving.efficiency import CALIBRATED, ServingEfficiency, calibrated_figure, goodput_band
from placement.serving.hardware import (
    AcceleratorSpec,
    ModelSpec,
    bundled_accelerators,
    get_accelerator,
    get_model,
)
from placement.serving.search import best_candidate
from placement.serving.speculative import AUTO, speculation_for
from placement.serving.workload import Workload


@dataclass(frozen=True)
class ServingRequest:
    """What one node serves and the objective it must meet: the inputs of :func:`serve`.

    Parameters
    ----------
    model, accelerator : str
        Catalog ids (``data/serving/models.csv``, ``accelerators.csv``).
    gpus : int
        GPUs in the node (tensor parallelism stays inside one scale-up domain; the rest are replicas).
    precision : str
        Weight precision: ``bf16``, ``fp8`` or ``fp4`` (KV cache BF16, FP8, FP8).
    input_tokens, output_tokens : int
        Mean prompt and mean answer length per request. [tokens]
    ttft_p99_ms, itl_p99_ms : float
        The objective. [ms]
    prefix_cache_hit_rate : float
        Share of prompt tokens served from the prefix cache.
    disaggregated : bool
        Separate prefill and decode pools (KV crosses the scale-out NIC).
    min_tok_s_per_user : float
        Interactivity floor: decode speed per user. [tokens/s]
    input_tokens_max : int, optional
        Longest prompt (or a high quantile such as p99): the KV cache keeps room for it and the p99 TTFT is
        its prefill. ``None``: every prompt is ``input_tokens`` long. [tokens]
    tp : int, optional
        Tensor-parallel degree to use; ``None`` searches every degree the node allows.
    node_cost_usd_h : float, optional
        All-in cost of the node; gives ``cost_per_million_goodput_tokens_usd``. [USD/h]
    pue : float
        Facility PUE for ``tokens_per_s_per_mw``; 1.0 gives the node-level (IT power) figure.
    speculative : str, optional
        Speculative decoding: a method of ``data/serving/speculative.csv`` for the model (``eagle3``,
        ``mtp``), or ``auto`` (the model's method, kept only where it gives more goodput); None: off.
    kv_link_gbit_s : float, optional
        With ``disaggregated``: the prefill pool is in another metro and the prompt's whole KV crosses one WAN
        link of this rate (cross-metro prefill); None: the pools share the node's scale-out fabric. [Gbit/s]
    itl_metric : {"step", "tpot"}
        What ``itl_p99_ms`` bounds: each request's mean time per output token (``"tpot"``, the default: MLPerf's
        and serving benchmarks' TPOT, what the calibration is fitted on) or every single gap between tokens
        (``"step"``, stricter: the p99 is set by the steps that carry a prefill chunk).
    attention_dp : bool
        Also search data-parallel attention with all-to-all expert parallelism for a mixture of experts
        (:func:`placement.serving.kernels.layouts`: modelled, not calibrated on any measured point).
    """

    model: str
    accelerator: str
    gpus: int
    precision: str
    input_tokens: int
    output_tokens: int
    ttft_p99_ms: float
    itl_p99_ms: float
    prefix_cache_hit_rate: float = 0.0
    disaggregated: bool = False
    min_tok_s_per_user: float = 0.0
    input_tokens_max: int | None = None
    tp: int | None = None
    node_cost_usd_h: float | None = None
    pue: float = 1.0
    speculative: str | None = None
    kv_link_gbit_s: float | None = None
    attention_dp: bool = False
    itl_metric: str = "tpot"

    @property
    def label(self) -> str:
        """``llama-2-70b on 8 x h200 (fp8)``."""
        return f"{self.model} on {self.gpus} x {self.accelerator} ({self.precision})"

    @property
    def workload(self) -> Workload:
        """The search's workload: mean prompt and answer, and the longest prompt (the mean when not given)."""
        longest = float(self.input_tokens if self.input_tokens_max is None else max(self.input_tokens_max, self.input_tokens))
        return Workload(
            input_tokens=float(self.input_tokens),
            input_tokens_max=longest,
            output_tokens=float(self.output_tokens),
            ttft_p99_ms=self.ttft_p99_ms,
            itl_p99_ms=self.itl_p99_ms,
            min_tok_s_per_user=self.min_tok_s_per_user,
            hit_rate=self.prefix_cache_hit_rate,
            speculation=speculation_for(self.model, self.speculative),
            kv_link_gbit_s=self.kv_link_gbit_s,
            itl_metric=self.itl_metric,
        )


@dataclass(frozen=True)
class ServingResult:
    """Goodput of one node (the ``gpus`` requested) inside the objective, and how it was reached.

    Attributes
    ----------
    goodput_tok_s : float
        Output tokens per second delivered inside p99 TTFT and p99 ITL. [tokens/s]
    capacity_tok_s : float
        Output tokens per second at the chosen batch before tail headroom. [tokens/s]
    batch : int
        Decode sequences per replica.
    tp, replicas : int
        Tensor-parallel degree and number of replicas (decode replicas when disaggregated).
    itl_ms : float
        p99 inter-token latency: the mixed (chunk-carrying) step once more than 1 % of steps carry a chunk,
        else the pure decode step. [ms]
    ttft_ms : float
        p99 time to first token of the longest prompt: queue + decode-slot wait + prefill + KV transfer +
        first decode step. [ms]
    queue_p99_ms : float
        p99 wait for the prefill (colocated: the replica's chunk pipeline; disaggregated: the prefill pool). [ms]
    slot_wait_p99_ms : float
        p99 wait for one of the ``replicas x batch`` decode slots to free (colocated; 0 when disaggregated,
        whose decode pool is sized to its load). [ms]
    prefill_ms : float
        The longest prompt's prefill: colocated, every step carrying one of its chunks, the last of which
        samples the first token; disaggregated, its prefill on the prefill pool. [ms]
    kv_transfer_ms : float
        The prompt's KV from the prefill to the decode pool over the scale-out NIC (disaggregated). [ms]
    first_decode_ms : float
        The decode step before the first token: one decode step of the decode pool (disaggregated, or a
        prompt fully served by the prefix cache); 0 colocated, where the last chunk step emits it. [ms]
    utilisation_cap : float
        Load / capacity that keeps p99 TTFT inside the objective (headroom = 1 − cap).
    prefill_gpu_share : float
        Share of the node's GPUs in the prefill pool (disaggregated), 0 when colocated.
    node_kw : float
        IT power of the node, pro rata to ``gpus``. [kW]
    pue : float
        Facility PUE applied to ``tokens_per_s_per_mw`` (1.0: node-level figure).
    tokens_per_s_per_mw : float
        Goodput per MW of facility power (node kW × PUE). [tokens/s/MW]
    cost_per_million_goodput_tokens_usd : float or None
        With a node cost. [USD/Mtok]
    chunk_tokens : int
        Prefill chunk budget per step (colocated; 0 when disaggregated). [tokens]
    mixed_step_share : float
        Share of steps carrying a prefill chunk at full load (colocated).
    limit : str
        What stopped the batch growing: ``itl``, ``kv_capacity``, ``tok_s_per_user``, ``ttft``,
        ``max_batch``, or why nothing fits.
    speculative : str
        The speculative-decoding method the result runs (``""``: none).
    attention_dp : bool
        The node runs data-parallel attention with all-to-all expert parallelism (only where the request allows it).
    tokens_per_step : float
        Mean tokens a decode step emits per sequence (1 without speculation; ``itl_ms`` is then the step
        over it, the time per output token).
    """

    model: str
    accelerator: str
    precision: str
    gpus: int
    disaggregated: bool
    goodput_tok_s: float
    capacity_tok_s: float
    batch: int
    tp: int
    replicas: int
    itl_ms: float
    ttft_ms: float
    prefill_ms: float
    kv_transfer_ms: float
    queue_p99_ms: float
    slot_wait_p99_ms: float
    first_decode_ms: float
    utilisation_cap: float
    prefill_gpu_share: float
    node_kw: float
    pue: float
    tokens_per_s_per_mw: float
    cost_per_million_goodput_tokens_usd: float | None
    chunk_tokens: int
    mixed_step_share: float
    limit: str
    speculative: str = ""
    attention_dp: bool = False
    tokens_per_step: float = 1.0


def _precision_problems(request: ServingRequest, m: ModelSpec | None, a: AcceleratorSpec | None) -> list[Problem]:
    source, precision = "goodput request", request.precision
    problems = []
    if m is not None and precision not in m.precisions:
        problems.append(
            Problem(source, m.id, "precision", f"{precision!r} not offered for this model", f"use one of {list(m.precisions)}")
        )
    if a is not None and precision not in a.tflops:
        problems.append(
            Problem(source, a.id, "precision", f"{precision!r} not supported by the silicon", f"use one of {list(a.tflops)}")
        )
    return problems


def _number_problems(request: ServingRequest, w: Workload) -> list[Problem]:
    r = request
    checks = [
        ("gpus", r.gpus >= 1 and float(r.gpus).is_integer(), f"must be a whole number >= 1, got {r.gpus}"),
        ("input_tokens", w.input_tokens >= 1, f"must be >= 1, got {w.input_tokens:g}"),
        ("output_tokens", w.output_tokens >= 1, f"must be >= 1, got {w.output_tokens:g}"),
        ("ttft_p99_ms", w.ttft_p99_ms > 0, f"must be > 0, got {w.ttft_p99_ms:g}"),
        ("itl_p99_ms", w.itl_p99_ms > 0, f"must be > 0, got {w.itl_p99_ms:g}"),
        ("prefix_cache_hit_rate", 0.0 <= w.hit_rate <= 1.0, f"must be between 0 and 1, got {w.hit_rate:g}"),
        ("min_tok_s_per_user", w.min_tok_s_per_user >= 0, f"must be >= 0, got {w.min_tok_s_per_user:g}"),
        ("node_cost_usd_h", r.node_cost_usd_h is None or r.node_cost_usd_h >= 0, f"must be >= 0, got {r.node_cost_usd_h}"),
        ("pue", r.pue >= 1.0, f"must be >= 1, got {r.pue:g}"),
        ("kv_link_gbit_s", r.kv_link_gbit_s is None or r.kv_link_gbit_s > 0, f"must be > 0, got {r.kv_link_gbit_s}"),
        ("itl_metric", r.itl_metric in ("step", "tpot"), f"must be step or tpot, got {r.itl_metric!r}"),
    ]
    problems = [Problem("goodput request", "", field, rule, "give a valid value") for field, good, rule in checks if not good]
    if (
        r.tp is not None and r.tp not in tp_options(get_accelerator(r.accelerator), r.gpus)
        if r.accelerator in bundled_accelerators()
        else False
    ):
        problems.append(
            Problem(
                "goodput request",
                "",
                "tp",
                f"{r.tp} is not a power of two dividing gpus inside one scale-up domain",
                "pick another tp",
            )
        )
    if r.input_tokens_max is not None and r.input_tokens_max < r.input_tokens:
        problems.append(
            Problem(
                "goodput request",
                "",
                "input_tokens_max",
                f"must be >= input_tokens (the mean, {r.input_tokens}), got {r.input_tokens_max}",
                "give the longest prompt (or its p99) as input_tokens_max and the mean as input_tokens",
            )
        )
    return problems


def check_request(request: ServingRequest) -> tuple[ModelSpec, AcceleratorSpec]:
    """The catalog entries of the request; every problem with it reported together.

    Parameters
    ----------
    request : ServingRequest
        The request to check.

    Returns
    -------
    tuple of ModelSpec and AcceleratorSpec
        The model and the accelerator.

    Raises
    ------
    InputError
        Unknown model or accelerator (with the known ids), unsupported precision, or a bad number.
    """
    w = request.workload
    problems: list[Problem] = []
    m = a = None
    try:
        m = get_model(request.model)
    except InputError as exc:
        problems += exc.problems
    try:
        a = get_accelerator(request.accelerator)
    except InputError as exc:
        problems += exc.problems
    problems += _precision_problems(request, m, a) + _number_problems(request, w)
    if problems:
        raise InputError(problems)
    assert m is not None and a is not None
    return m, a


def _result(request: ServingRequest, a: AcceleratorSpec, best: Candidate, workload: Workload) -> ServingResult:
    """The node's figures: TTFT from its parts, power, yield per MW and, with a node cost, $/M goodput."""
    node_kw = a.node_kw * request.gpus / a.gpus_per_node
    cost = request.node_cost_usd_h
    cost_per_million = None if cost is None else float(cost_per_million_tokens_usd(cost, best.goodput_tok_s))
    return ServingResult(
        model=request.model,
        accelerator=request.accelerator,
        precision=request.precision,
        gpus=request.gpus,
        disaggregated=request.disaggregated,
        goodput_tok_s=best.goodput_tok_s,
        capacity_tok_s=best.capacity_tok_s,
        batch=best.batch,
        tp=best.tp,
        replicas=best.replicas,
        itl_ms=best.itl_ms,
        ttft_ms=best.queue_p99_ms + best.slot_wait_p99_ms + best.prefill_ms + best.kv_transfer_ms + best.first_decode_ms,
        prefill_ms=best.prefill_ms,
        kv_transfer_ms=best.kv_transfer_ms,
        queue_p99_ms=best.queue_p99_ms,
        slot_wait_p99_ms=best.slot_wait_p99_ms,
        first_decode_ms=best.first_decode_ms,
        utilisation_cap=best.utilisation_cap,
        prefill_gpu_share=best.prefill_gpu_share,
        node_kw=node_kw,
        pue=request.pue,
        tokens_per_s_per_mw=float(_yield_per_mw(best.goodput_tok_s, node_kw * request.pue / 1e3)),
        cost_per_million_goodput_tokens_usd=cost_per_million,
        chunk_tokens=best.chunk_tokens,
        mixed_step_share=best.mixed_step_share,
        limit=best.limit,
        speculative="" if workload.speculation is None else workload.speculation.method,
        tokens_per_step=workload.tokens_per_step,
        attention_dp=best.attention_dp,
    )


def serve(request: ServingRequest, *, efficiency: ServingEfficiency = CALIBRATED) -> ServingResult:
    """Goodput of one node inside a p99 TTFT / p99 ITL objective, at the best batch and tensor-parallel degree.

    Parameters
    ----------
    request : ServingRequest
        Model, node, workload and objective.
    efficiency : ServingEfficiency
        Achieved efficiencies; defaults to the calibrated set.

    Returns
    -------
    ServingResult
        Goodput and its components; goodput 0 (with ``limit`` saying why) when nothing meets the objective.

    Raises
    ------
    InputError
        Unknown model or accelerator (with the known ids), unsupported precision, or a bad number.
    """
    m, a = check_request(request)
    workloads = [request.workload]
    if request.speculative == AUTO and workloads[0].speculation is not None:
        # speculation is kept only where it pays: on a tie (both nothing) the plain decode is reported
        workloads.insert(0, replace(workloads[0], speculation=None))
    results = [
        _result(
            request,
            a,
            best_candidate(
                m,
                a,
                request.precision,
                gpus=request.gpus,
                tp=request.tp,
                disaggregated=request.disaggregated,
                workload=w,
                eff=efficiency,
                allow_dp=request.attention_dp,
            ),
            w,
        )
        for w in workloads
    ]
    best = max(results, key=lambda r: r.goodput_tok_s)
    silent = best.goodput_tok_s <= 0 and best.limit.startswith("itl objective") and request.speculative is None
    if silent and (method := speculation_for(request.model, AUTO)) is not None:
        # never a silent 0 where the model could speculate: say so (the planner opts in; drafts cost accuracy nothing
        # but they are a serving choice)
        hint = f"; {method.method} speculative decoding emits more than one token per step: try --speculative auto"
        best = replace(best, limit=best.limit + hint)
    return best


def goodput_report(request: ServingRequest, *, efficiency: ServingEfficiency = CALIBRATED) -> dict[str, Any]:
    """The CLI's ``goodput`` report: :func:`serve` as a JSON-ready dict.

    Keys are the fields of :class:`ServingResult` (``goodput_tok_s`` per node, ``batch``, ``itl_ms``,
    ``ttft_ms`` and its components, ``node_kw``, ``tokens_per_s_per_mw``, ...);
    ``cost_per_million_goodput_tokens_usd`` only when the request has a node cost; ``calibration`` (where the GEMM
    fraction and the step overhead in force come from) and ``band`` (``goodput_p10_tok_s``, ``goodput_p90_tok_s``,
    ``sigma_log`` and its ``reasons``: :func:`placement.serving.efficiency.goodput_band`).

    Parameters
    ----------
    request : ServingRequest
        As in :func:`serve`.
    efficiency : ServingEfficiency, optional
        Overrides (a GEMM fraction refitted on a planner's measurements: ``goodput --measurements``).

    Returns
    -------
    dict
        The report; floats that are not finite become ``None``.
    """
    result = serve(request, efficiency=efficiency)
    report = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(result).items()}
    if request.node_cost_usd_h is None:
        report.pop("cost_per_million_goodput_tokens_usd")
    accel = get_accelerator(request.accelerator)
    calibration = calibration_report(accel, request.precision)
    if efficiency.tensor is not None:
        calibration["gemm_efficiency"] = {"value": efficiency.tensor, "basis": "refitted", "on": "your measurements"}
    report["calibration"] = calibration
    band = goodput_band(
        accel, request.precision, model=request.model, input_tokens=request.input_tokens, output_tokens=request.output_tokens
    )
    report["band"] = {
        "goodput_p10_tok_s": result.goodput_tok_s * band.factor("p10"),
        "goodput_p90_tok_s": result.goodput_tok_s * band.factor("p90"),
        "sigma_log": band.sigma_log,
        "reasons": list(band.reasons),
    }
    return report


def calibration_report(accel: AcceleratorSpec, precision: str) -> dict[str, dict[str, Any]]:
    """Where each calibrated figure in force for an accelerator comes from.

    Parameters
    ----------
    accel : AcceleratorSpec
        The accelerator.
    precision : str
        The GEMMs' precision.

    Returns
    -------
    dict
        ``{"gemm_efficiency": {...}, "step_overhead_ms": {...}, "layer_floor_us": {...}, "sequence_us": {...}}``,
        ``gemm_half_tokens``, ``attention_efficiency`` and ``allreduce_latency_us``, each with ``value``, ``basis`` (``fitted``,
        ``extrapolated``, ``catalog prior`` or ``not fitted``) and ``on`` (what it was fitted on, carried over
        from, or the catalog's source note).
    """
    figures: list[tuple[str, str, float | None]] = [
        ("gemm_efficiency", precision, accel.gemm_efficiency),
        ("step_overhead_ms", "", accel.step_overhead_ms),
        ("layer_floor_us", "", None),
        ("sequence_us", "", None),
        ("gemm_half_tokens", "", None),
        ("attention_efficiency", "", accel.attention_efficiency),
        ("allreduce_latency_us", "", accel.allreduce_latency_us),
    ]
    out: dict[str, dict[str, Any]] = {}
    for parameter, key, prior in figures:
        figure = calibrated_figure(accel, parameter, key)
        if figure is not None:
            out[parameter] = {"value": figure.value, "basis": figure.basis, "on": figure.fitted_on}
        elif prior is not None:
            out[parameter] = {"value": prior, "basis": "catalog prior", "on": "data/serving/accelerators.csv efficiency_source"}
        else:
            out[parameter] = {"value": 0.0, "basis": "not fitted", "on": f"no calibration for {accel.family or accel.id}: off"}
    return out
