"""What one node does for each workload class: goodput inside the SLO and the node's TTFT parts.

A class either states its per-node goodput and node-side TTFT components, or they come from the
serving model (:mod:`placement.serving.request`): the largest batch that meets the p99 ITL objective and
fits in HBM, prefill for the class's prompts, KV transfer when disaggregated, and the queueing
tail, inside the part of the TTFT objective the node may spend (``serving_ttft_budget_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path

from placement._cache import is_enabled, key_digest, load, store
from placement._errors import InputError, Problem
from placement._process import Background
from placement.scenario.classes import WorkloadClass
from placement.scenario.sections import ServingSection
from placement.serving.calibration import fit_parts
from placement.serving.closed_loop import fit_sweep, is_sweep, load_sweep
from placement.serving.efficiency import ServingEfficiency, bundled_calibration, goodput_band, measured_workloads
from placement.serving.hardware import (
    bundled_accelerators,
    bundled_models,
    get_accelerator,
    get_model,
    kv_bytes_per_token,
)
from placement.serving.kernels import kv_capacity_bytes, kv_copies, kv_transfer_ms, prefill_ms
from placement.serving.measured import load_measured
from placement.serving.prefix_cache import (
    CacheFigures,
    PrefixReuse,
    hit_rate_limit,
    load_tiers,
    miss_peak,
    retention_s,
    reuse_for,
    tier_stack,
)
from placement.serving.request import ServingRequest, ServingResult, serve
from placement.serving.speculative import AUTO, speculation_for


@dataclass(frozen=True)
class ClassProfile:
    """A workload class as the optimiser sees it.

    Parameters
    ----------
    name : str
        Class name.
    ttft_objective_ms, itl_objective_ms : float
        The class's p99 objectives. [ms]
    round_trips : float
        Client-site round trips before the first token.
    queue_ms, prefill_ms, first_decode_ms : float
        Node-side TTFT components: the prefill queue's p99 wait, the longest prompt's prefill (with any KV
        transfer) and the decode step before the first token (0 when the last prefill chunk emits it). [ms]
    retrieval_ms, safety_tokenization_ms : float
        Other fixed TTFT components. [ms]
    goodput_tok_s_per_node : float
        Output tokens/s one node delivers inside the objectives, tail headroom included. [tokens/s]
    utilisation_cap : float
        Share of ``goodput_tok_s_per_node`` usable (1 when the serving model already applied it).
    itl_ms : float
        p99 inter-token latency achieved. [ms]
    cache_hit_rate : float
        Prefix-cache hit rate.
    source : str
        ``"scenario"``, ``"serving model"`` or ``"serving model, p10 of its band"`` (``serving.goodput_quantile``).
    serving_load_share : float, optional
        Serving-model classes: the share of the node's capacity at its batch that ``goodput_tok_s_per_node``
        uses (the rest is the tail headroom keeping p99 TTFT inside its budget); 1 for given goodput.
    slot_wait_ms : float, optional
        Node-side TTFT component: the p99 wait for a decode slot. [ms]
    speculative : str, optional
        The speculative-decoding method the serving model runs for the class (``""``: none).
    serving_mode : str, optional
        ``aggregated`` (chunked prefill on every node) or ``disaggregated`` (prefill and decode pools).
    cache : CacheFigures, optional
        With ``serving.kv_cache`` and a ``prefix_reuse`` profile: the cache model (``cache_hit_rate`` is then its
        limit, the per-token figure; each site's own hit rate follows from the share of the class it serves).
    node_ttft_share : float, optional
        The share of the class's ``serving_ttft_budget_ms`` the node was searched inside (below 1: a rung of
        ``serving.node_ttft_ladder``).
    mode_goodput : tuple of (str, float), optional
        Each serving mode the search compared (``aggregated``, ``disaggregated``, ``+method`` with speculation) and
        its goodput per node: why ``serving_mode`` was chosen. [tokens/s]
    """

    name: str
    ttft_objective_ms: float
    itl_objective_ms: float
    round_trips: float
    queue_ms: float
    prefill_ms: float
    first_decode_ms: float
    retrieval_ms: float
    safety_tokenization_ms: float
    goodput_tok_s_per_node: float
    utilisation_cap: float
    itl_ms: float
    cache_hit_rate: float
    source: str
    serving_load_share: float = 1.0
    slot_wait_ms: float = 0.0
    speculative: str = ""
    serving_mode: str = "aggregated"
    cache: CacheFigures | None = None
    node_ttft_share: float = 1.0
    mode_goodput: tuple[tuple[str, float], ...] = ()

    @property
    def warmup_nodes(self) -> float:
        """Node-equivalents an open site spends on the shared prefixes it misses (0 without the cache model)."""
        return 0.0 if self.cache is None else self.cache.warmup_nodes

    @property
    def node_ttft_ms(self) -> float:
        """The node's part of the p99 TTFT: queue, decode-slot wait, prefill and first decode step. [ms]"""
        return self.queue_ms + self.slot_wait_ms + self.prefill_ms + self.first_decode_ms

    @property
    def fixed_ttft_ms(self) -> float:
        """Every TTFT component that does not depend on the network. [ms]"""
        return self.node_ttft_ms + self.retrieval_ms + self.safety_tokenization_ms

    @property
    def nodes_per_tok_s(self) -> float:
        """Node-equivalents used per tok/s of this class. [nodes/(tokens/s)]"""
        return 1.0 / (self.goodput_tok_s_per_node * self.utilisation_cap)


def node_kw(serving: ServingSection) -> float:
    """IT power of one node of the ``serving`` section: its own, or the accelerator catalog's pro rata. [kW]"""
    if serving.node_kw is not None:
        return serving.node_kw
    accel = get_accelerator(serving.accelerator)
    return accel.node_kw * serving.gpus_per_node / accel.gpus_per_node


def part_node(serving: ServingSection, part: str) -> ServingSection:
    """The ``serving`` section of a node of ``part``: the scenario's own, or the catalog's node of a substitute part."""
    if part == serving.accelerator:
        return serving
    spec = get_accelerator(part)
    return serving.model_copy(update={"accelerator": part, "gpus_per_node": spec.gpus_per_node, "node_kw": None})


def catalog_node_capex_usd(serving: ServingSection) -> float:
    """Capex of one node of the ``serving`` section from the accelerator catalog, pro rata to its GPUs. [USD]"""
    accel = get_accelerator(serving.accelerator)
    return accel.node_capex_usd * serving.gpus_per_node / accel.gpus_per_node


def _given(workload: WorkloadClass, headroom: float) -> ClassProfile:
    assert workload.goodput_tok_s_per_node is not None
    cap = workload.utilisation_cap if workload.utilisation_cap is not None else 1.0 - headroom
    return ClassProfile(
        workload.name,
        workload.ttft_p99_ms,
        workload.itl_p99_ms,
        workload.round_trips,
        workload.queue_ms or 0.0,
        workload.prefill_ms or 0.0,
        workload.first_decode_ms or 0.0,
        workload.retrieval_ms,
        workload.safety_tokenization_ms,
        workload.goodput_tok_s_per_node,
        cap,
        workload.itl_p99_ms,
        workload.prefix_cache_hit_rate,
        "scenario",
        slot_wait_ms=workload.slot_wait_ms,
    )


def serving_request(serving: ServingSection, workload: WorkloadClass) -> ServingRequest:
    """The serving-model request of a computed class on the scenario's node.

    Parameters
    ----------
    serving : ServingSection
        The scenario's ``serving`` section (it names the node).
    workload : WorkloadClass
        A class whose goodput the serving model computes (``serving_ttft_budget_ms`` given).

    Returns
    -------
    ServingRequest
        Lengths, objectives and node of the class.
    """
    assert workload.serving_ttft_budget_ms is not None
    return ServingRequest(
        serving.model,
        serving.accelerator,
        serving.gpus_per_node,
        serving.precision,
        workload.input_tokens,
        workload.output_tokens,
        workload.serving_ttft_budget_ms,
        workload.itl_p99_ms,
        prefix_cache_hit_rate=workload.prefix_cache_hit_rate,
        input_tokens_max=workload.input_tokens_max,
        disaggregated=serving.disaggregated is True,
        min_tok_s_per_user=workload.min_tok_s_per_user,
        speculative=serving.speculative,
        itl_metric=workload.itl_metric,
    )


def warm_catalogs() -> None:
    """Read the bundled model, accelerator and calibration tables the serving model reads (once per process).

    Called before the profiles are computed in forked children, so that each child inherits them rather than reading
    them again.
    """
    bundled_models()
    bundled_accelerators()
    bundled_calibration()
    measured_workloads()


@lru_cache(maxsize=8)
def _refitted(path: Path, modified_ns: int) -> dict[tuple[str, str], ServingEfficiency]:
    """Each part's figures refitted on a planner's measurements (read once per file version).

    A closed-loop sweep refits the GEMM fraction and the floors' scale; a file of points inside latency limits the
    GEMM fraction.
    """
    del modified_ns  # part of the cache key: an edited file is refitted
    if is_sweep(path):
        return {(f.accelerator, f.precision): f.efficiency() for f in fit_sweep(load_sweep(path))}
    return {(f.accelerator, f.precision): ServingEfficiency(tensor=f.gemm_efficiency) for f in fit_parts(load_measured(path))}


def measured_efficiency(serving: ServingSection, *, source: str) -> dict[tuple[str, str], ServingEfficiency]:
    """The figures ``serving.measurements`` refits, by (accelerator, precision); empty without it.

    Parameters
    ----------
    serving : ServingSection
        The scenario's ``serving`` section.
    source : str
        The scenario file (a relative ``measurements`` path starts from its folder).

    Returns
    -------
    dict
        ``{(accelerator, precision): the overrides in force}``.

    Raises
    ------
    InputError
        The file does not exist, or a row is wrong (row, field, rule, fix).
    """
    if serving.measurements is None:
        return {}
    path = Path(serving.measurements)
    path = path if path.is_absolute() else (Path(source).parent / path).resolve()
    if not path.is_file():
        fix = (
            "give a CSV with the columns of data/serving/measured.csv, or a closed-loop sweep (a path relative to the "
            "scenario file)"
        )
        raise InputError([Problem(source, "serving.measurements", "", f"no such file: {path}", fix)])
    return _refitted(path, path.stat().st_mtime_ns)


def compared_modes(serving: ServingSection, request: ServingRequest, refit: ServingEfficiency | None) -> list[ServingResult]:
    """The node's result in each serving mode ``serving.disaggregated`` allows (both with ``auto``: colocated first)."""
    pools = [False, True] if serving.disaggregated == "auto" else [serving.disaggregated is True]
    return [serve_pooled(serving.pool_nodes, replace(request, disaggregated=d), refit) for d in pools]


def _best(serving: ServingSection, request: ServingRequest, refit: ServingEfficiency | None) -> ServingResult:
    """The node's result; with ``disaggregated: auto`` the pools that give more goodput (colocated on a tie)."""
    return max(compared_modes(serving, request, refit), key=lambda r: r.goodput_tok_s)


@lru_cache(maxsize=4096)
def serve_pooled(pool_nodes: int, request: ServingRequest, refit: ServingEfficiency | None) -> ServingResult:
    """One node's result; disaggregated pools queue over ``pool_nodes`` nodes' GPUs (``serving.pool_nodes``), per node.

    A disaggregated prefill pool is shared by every decode replica it serves (DistServe, Splitwise): its p99 wait is
    that of ``pool_nodes x gpus`` GPUs' servers, not of one node's. The pool's goodput, capacity and replicas are
    returned per node. Colocated (chunked prefill) replicas keep their own queues. The serving model is a pure
    function of the request, so results are kept: a plan and its fixed-arrangement comparison ask for many of the
    same nodes.
    """
    pool = pool_nodes if request.disaggregated else 1
    result = serve(replace(request, gpus=request.gpus * pool), efficiency=refit or ServingEfficiency())
    if pool == 1:
        return result
    return replace(
        result,
        gpus=request.gpus,
        goodput_tok_s=result.goodput_tok_s / pool,
        capacity_tok_s=result.capacity_tok_s / pool,
        replicas=max(result.replicas // pool, 1),
        node_kw=result.node_kw / pool,
    )


CACHE_ITERATIONS = 8
"""Most rounds of the cache fixed point (hit rate -> goodput -> KV written per second -> retention -> hit rate)."""


def cached_request(
    serving: ServingSection, request: ServingRequest, reuse: PrefixReuse, refit: ServingEfficiency | None = None
) -> tuple[ServingRequest, ServingResult, CacheFigures]:
    """The node at the hit rate its cache sustains: a fixed point of hit rate, goodput and retention.

    ``serving.kv_cache`` names the tier; ``request`` is the class on the node with the node's TTFT budget (its hit
    rate is replaced); ``refit`` the figures refitted on ``serving.measurements``. Returns the request as served
    (hit rate, budget less the hit load), its result, and the cache's figures.

    Each round serves the class at hit rate ``h`` inside the node's TTFT budget less the time to load the longest
    prompt's cached KV from the tier, then recomputes the retention from the KV the node writes at that goodput (the
    free HBM after its batch, plus the tiers) and ``h`` as the limit of :func:`hit_rate_limit`.
    """
    assert serving.kv_cache is not None
    model, accel = get_model(serving.model), get_accelerator(serving.accelerator)
    stack = tier_stack(serving.kv_cache.tier, load_tiers())
    bandwidth_gb_s = min(t.load_gb_s_per_node for t in stack)
    kv_b = kv_bytes_per_token(model, serving.precision)
    longest = float(request.input_tokens_max or request.input_tokens)
    hit = reuse.session_share + reuse.shared_share
    for _ in range(CACHE_ITERATIONS):
        load_ms = longest * hit * kv_b / (bandwidth_gb_s * 1e9) * 1e3 if bandwidth_gb_s < float("inf") else 0.0
        trial = replace(request, prefix_cache_hit_rate=min(hit, 0.99), ttft_p99_ms=max(request.ttft_p99_ms - load_ms, 1.0))
        result = _best(serving, trial, refit)
        batch_kv = result.batch * (request.input_tokens + request.output_tokens) * kv_b * kv_copies(model, result.tp)
        free = result.replicas * max(
            kv_capacity_bytes(model, accel, serving.precision, result.tp, ServingEfficiency()) - batch_kv, 0.0
        )
        cache_bytes = free + sum(t.adds_cache_gb_per_node for t in stack) * 1e9
        requests_per_s = result.capacity_tok_s / request.output_tokens
        written = requests_per_s * (request.input_tokens * (1.0 - hit) + request.output_tokens) * kv_b
        keep_s = retention_s(cache_bytes, written)
        new_hit = hit_rate_limit(reuse, keep_s)
        if abs(new_hit - hit) < 1e-4:
            break
        hit = new_hit
    shared_tokens = reuse.shared_share * request.input_tokens if result.tp > 0 else 0.0  # tp 0: the node serves nothing
    node_s_per_miss = (
        prefill_ms(model, accel, serving.precision, tp=result.tp, tokens=shared_tokens) / 1e3 / max(result.replicas, 1)
    )
    warmup = miss_peak(reuse) / keep_s * node_s_per_miss if shared_tokens > 0 and keep_s < float("inf") else 0.0
    figures = CacheFigures(
        reuse,
        serving.kv_cache.tier,
        cache_bytes / 1e9,
        keep_s,
        trial.prefix_cache_hit_rate,
        load_ms,
        warmup,
        1.0 / request.output_tokens,
        _best(serving, replace(request, prefix_cache_hit_rate=0.0), refit).goodput_tok_s,
    )
    return trial, result, figures


def _computed(serving: ServingSection, k: int, workload: WorkloadClass, *, source: str) -> ClassProfile | Problem:
    request = serving_request(serving, workload)
    refit = measured_efficiency(serving, source=source).get((serving.accelerator, serving.precision))
    cache = None
    if serving.kv_cache is not None and workload.prefix_reuse is not None:
        reuse = reuse_for(workload.prefix_reuse, source=source, key=f"classes[{k}].prefix_reuse")
        request, result, cache = cached_request(serving, request, reuse, refit)
    else:
        result = _best(serving, request, refit)
    accel = get_accelerator(serving.accelerator)
    band = goodput_band(
        accel, serving.precision, model=serving.model, input_tokens=request.input_tokens, output_tokens=request.output_tokens
    )
    quantile = band.factor(serving.goodput_quantile)  # 1 at p50: the modelled figure
    if result.goodput_tok_s <= 0:
        return Problem(
            source,
            f"classes[{k}]",
            "",
            f"{serving.model} on {serving.gpus_per_node} x {serving.accelerator} delivers no goodput inside "
            f"ITL {workload.itl_p99_ms:g} ms / node TTFT {workload.serving_ttft_budget_ms:g} ms ({result.limit})",
            "relax the objectives, or use more GPUs per node or a faster accelerator",
        )
    return ClassProfile(
        workload.name,
        workload.ttft_p99_ms,
        workload.itl_p99_ms,
        workload.round_trips,
        result.queue_p99_ms,
        result.prefill_ms + result.kv_transfer_ms + (0.0 if cache is None else cache.hit_load_ms),
        result.first_decode_ms,
        workload.retrieval_ms,
        workload.safety_tokenization_ms,
        result.goodput_tok_s * quantile,
        1.0,
        result.itl_ms,
        request.prefix_cache_hit_rate,
        _source_label(serving, refit),
        result.goodput_tok_s / result.capacity_tok_s if result.capacity_tok_s > 0 else 1.0,
        slot_wait_ms=result.slot_wait_p99_ms,
        speculative=result.speculative,
        serving_mode="disaggregated" if result.disaggregated else "aggregated",
        cache=cache,
        mode_goodput=tuple((mode_label(r), float(r.goodput_tok_s * quantile)) for r in compared_modes(serving, request, refit)),
    )


def mode_name(profile: ClassProfile) -> str:
    """A profile's serving mode as the plan's tables name it: ``aggregated`` or ``disaggregated``, ``+method``."""
    return f"{profile.serving_mode}+{profile.speculative}" if profile.speculative else profile.serving_mode


def mode_label(result: ServingResult) -> str:
    """``aggregated`` or ``disaggregated``, ``+method`` with speculative decoding."""
    mode = "disaggregated" if result.disaggregated else "aggregated"
    return f"{mode}+{result.speculative}" if result.speculative else mode


def _source_label(serving: ServingSection, refit: ServingEfficiency | None) -> str:
    label = "serving model" + (", refitted on serving.measurements" if refit is not None else "")
    return label if serving.goodput_quantile == "p50" else f"{label}, {serving.goodput_quantile} of its band"


def class_profiles(
    classes: list[WorkloadClass], serving: ServingSection, *, source: str, accelerator_key: str = "serving.accelerator"
) -> list[ClassProfile]:
    """Each class's per-node goodput and node-side TTFT, given or computed.

    Parameters
    ----------
    classes : list of WorkloadClass
        The scenario's ``classes``.
    serving : ServingSection
        The scenario's ``serving`` section (the node computed classes run on).
    source : str
        The scenario file, for error messages.
    accelerator_key : str, optional
        The key an unknown accelerator is reported at (a build-out's ``horizon.accelerators[i].id``).

    Returns
    -------
    list of ClassProfile
        In the scenario's class order.

    Raises
    ------
    InputError
        For an unknown model or accelerator, or a class no node can serve inside its objectives.
    """
    problems: list[Problem] = []
    if not all(workload.given for workload in classes):
        problems = node_problems(serving, source=source, accelerator_key=accelerator_key)
        if problems:
            raise InputError(problems)
    profiles, unserved = served_class_profiles(classes, serving, source=source)
    problems += [problem for problem in unserved if problem is not None]
    if problems:
        raise InputError(problems)
    return [profile for profile in profiles if profile is not None]


def node_problems(serving: ServingSection, *, source: str, accelerator_key: str = "serving.accelerator") -> list[Problem]:
    """An unknown model or accelerator of the node, or a speculation method the model lacks, at the key it was written."""
    problems: list[Problem] = []
    for key, value, lookup in (
        ("serving.model", serving.model, get_model),
        (accelerator_key, serving.accelerator, get_accelerator),
    ):
        try:
            lookup(value)
        except InputError as exc:
            problems += [Problem(source, key, "", p.rule, p.fix) for p in exc.problems]
    if not problems and serving.speculative is not None:
        try:
            speculation_for(serving.model, serving.speculative)
        except InputError as exc:
            problems += [Problem(source, "serving.speculative", "", p.rule, p.fix) for p in exc.problems]
    return problems


def served_class_profiles(
    classes: list[WorkloadClass], serving: ServingSection, *, source: str
) -> tuple[list[ClassProfile | None], list[Problem | None]]:
    """Each class's profile on the node, or why the node cannot serve it inside its objectives.

    Parameters
    ----------
    classes : list of WorkloadClass
        The scenario's ``classes``.
    serving : ServingSection
        The node (model and accelerator known: :func:`class_profiles` checks them).
    source : str
        The scenario file, for error messages.

    Returns
    -------
    tuple of list
        Per class, its profile or None, and None or the problem that says why it cannot be served.

    Raises
    ------
    InputError
        For a bad number in a class (not for a class the node cannot serve).
    """
    profiles: list[ClassProfile | None] = []
    problems: list[Problem | None] = []
    errors: list[Problem] = []
    # a computed class's outcome as an earlier run stored it (placement._cache): no child forked for it
    computed = [k for k, workload in enumerate(classes) if not workload.given]
    stored = {k: _stored(serving, k, classes[k], source) for k in computed}
    todo = {k for k in computed if stored[k] is None}
    # the serving model's classes are independent: computed in forked children side by side (where a fork is safe)
    jobs = {
        k: Background(partial(_outcome, serving, k, w, source), fork=len(todo) > 1 and k in todo)
        for k, w in enumerate(classes)
        if stored.get(k) is None
    }
    for k in range(len(classes)):
        try:
            outcome = jobs[k].result() if k in jobs else stored[k]
        except InputError as exc:
            errors += exc.problems
            continue
        profiles.append(None if isinstance(outcome, Problem) else outcome)
        problems.append(outcome if isinstance(outcome, Problem) else None)
    if errors:
        raise InputError(errors)
    return profiles, problems


def _digest(serving: ServingSection, k: int, workload: WorkloadClass, source: str) -> str:
    """What a computed class's outcome is stored under: the node, the class and its place, the files they name.

    Not the scenario's path, which only the outcome's messages name (put back when it is read).
    """
    return key_digest("class-profile", (serving, workload, k), base=Path(source).parent)


def _stored(serving: ServingSection, k: int, workload: WorkloadClass, source: str) -> ClassProfile | Problem | None:
    """A computed class's outcome as an earlier run stored it (None: none stored, or the cache is off)."""
    if not is_enabled():
        return None
    found, outcome = load("class-profile", _digest(serving, k, workload, source))
    if not found or not isinstance(outcome, ClassProfile | Problem):
        return None
    return replace(outcome, source=source) if isinstance(outcome, Problem) else outcome


def _stored_or_computed(serving: ServingSection, k: int, workload: WorkloadClass, source: str) -> ClassProfile | Problem:
    """A computed class's outcome from the cache (placement._cache), or computed and stored there."""
    outcome = _stored(serving, k, workload, source)
    return outcome if outcome is not None else _computed_and_stored(serving, k, workload, source)


def _computed_and_stored(serving: ServingSection, k: int, workload: WorkloadClass, source: str) -> ClassProfile | Problem:
    """A computed class's outcome, kept in the cache (placement._cache) for the next run that asks."""
    outcome = _computed(serving, k, workload, source=source)
    if is_enabled():
        kept = replace(outcome, source="") if isinstance(outcome, Problem) else outcome
        store("class-profile", _digest(serving, k, workload, source), kept)
    return outcome


def _outcome(serving: ServingSection, k: int, workload: WorkloadClass, source: str) -> ClassProfile | Problem:
    """A class's profile (given, or computed and stored: the caller found none stored), or why the node cannot serve it."""
    return _given(workload, serving.headroom) if workload.given else _computed_and_stored(serving, k, workload, source)


def mode_choices(serving: ServingSection) -> list[tuple[bool, str | None]]:
    """Each concrete serving mode the node may run a class in: (disaggregated pools, speculation method or None).

    More than one where ``serving.disaggregated`` or ``serving.speculative`` is ``auto``: the modes are then options of
    each pair (:func:`class_rungs`), not one choice per class.
    """
    pools = [False, True] if serving.disaggregated == "auto" else [serving.disaggregated is True]
    methods: list[str | None] = [serving.speculative]
    if serving.speculative == AUTO:
        method = speculation_for(serving.model, AUTO)
        methods = [None] + ([method.method] if method is not None else [])
    return [(pooled, method) for pooled in pools for method in methods]


def runs_options(serving: ServingSection) -> bool:
    """Whether a class may run more than one (mode, node TTFT budget) at a site: a ladder, or a mode left to the plan."""
    return bool(serving.node_ttft_ladder) or len(mode_choices(serving)) > 1


def _is_mode(profile: ClassProfile, pooled: bool, method: str | None) -> bool:
    return (profile.serving_mode == "disaggregated") == pooled and profile.speculative == (method or "")


def frontier_rungs(own: ClassProfile, options: list[ClassProfile]) -> list[ClassProfile]:
    """The class's own profile, then each option that reaches farther than every one kept before it, by goodput.

    An option is worth a column only where it fits a pair the ones with more goodput per node do not: with less
    node-side TTFT (``fixed_ttft_ms``). So the kept rungs fall in goodput and in TTFT together, and each pair's first
    rung that fits its objective is its cheapest of every option (:func:`placement.instance.record.rung_index`): at one
    site every option costs the same per node, so the MILP given every option as a column would choose the same.
    """
    kept = [own]
    for option in sorted(options, key=lambda p: (-p.goodput_tok_s_per_node * p.utilisation_cap, p.fixed_ttft_ms)):
        if option.fixed_ttft_ms < kept[-1].fixed_ttft_ms - 1e-9:
            kept.append(option)
    return kept


def class_rungs(
    classes: list[WorkloadClass], serving: ServingSection, profiles: list[ClassProfile], *, source: str
) -> list[list[ClassProfile]]:
    """Each class's options: every serving mode the scenario leaves open, at each node TTFT budget of the ladder.

    Rung 0 is the class's own profile (the mode with the most goodput per node, at its whole
    ``serving_ttft_budget_ms``). A computed, interactive class also runs in each other mode of
    :func:`mode_choices` and at each share of its budget in ``serving.node_ttft_ladder``, where the node still
    delivers goodput there; of those, the rungs are the ones on the frontier of goodput against node TTFT
    (:func:`frontier_rungs`), most goodput first. A pair far from its site then runs the mode and budget with the most
    goodput that still fits its TTFT objective: disaggregated pools near the users and aggregated nodes, which add no
    KV transfer, farther away, or speculation only where its longer first step fits.

    Parameters
    ----------
    classes : list of WorkloadClass
        The scenario's classes.
    serving : ServingSection
        The node (``node_ttft_ladder`` gives the shares; ``disaggregated`` and ``speculative`` the modes).
    profiles : list of ClassProfile
        Each class's own profile (:func:`class_profiles`).
    source : str
        The scenario file, for error messages.

    Returns
    -------
    list of list of ClassProfile
        Per class, its rungs from the loosest (its own profile, the most goodput) to the tightest.
    """
    shares = [1.0, *sorted(serving.node_ttft_ladder or [], reverse=True)]
    choices = mode_choices(serving)
    out = []
    for k, (workload, profile) in enumerate(zip(classes, profiles, strict=True)):
        options: list[ClassProfile] = []
        if not workload.given and not workload.time_shiftable and workload.serving_ttft_budget_ms is not None:
            for pooled, method in choices:
                pinned = serving.model_copy(update={"disaggregated": pooled, "speculative": method})
                for share in shares:
                    if share == 1.0 and _is_mode(profile, pooled, method):
                        continue  # the class's own profile
                    budget = workload.serving_ttft_budget_ms * share
                    rung = _stored_or_computed(pinned, k, workload.model_copy(update={"serving_ttft_budget_ms": budget}), source)
                    if isinstance(rung, ClassProfile):
                        options.append(replace(rung, node_ttft_share=share))
        out.append(frontier_rungs(profile, options))
    return out


@dataclass(frozen=True)
class CrossMetroProfile:
    """A class served by cross-metro prefill: the decode pool at the users' site, the prefill pool in another metro.

    Parameters
    ----------
    profile : ClassProfile
        The class as the optimiser sees it in this mode: goodput per node-equivalent of both pools together, and the
        node's TTFT parts (``prefill_ms`` carries the KV's WAN transfer; the round trip between the two sites is the
        pair's own and is added per pair). ``serving_mode`` is ``cross-metro``.
    prefill_share : float
        Share of the node-equivalents that are the prefill pool (at the prefill site); the rest decode at the
        users' site.
    kv_transfer_ms : float
        The longest prompt's KV crossing the WAN at ``wan_gbit_s``. [ms]
    allowance_ms : float
        Round trip between the two sites the pools were sized for (one of ``rtt_ms``): a pair of sites farther
        apart uses a larger allowance, or none. [ms]
    kv_gb_per_tok : float
        KV moved over the WAN per output token: the mean prompt's whole KV over the mean answer. [GB/token]
    """

    profile: ClassProfile
    prefill_share: float
    kv_transfer_ms: float
    allowance_ms: float
    kv_gb_per_tok: float

    @property
    def decode_nodes_per_tok_s(self) -> float:
        """Node-equivalents at the decode site per tok/s. [nodes/(tokens/s)]"""
        return (1.0 - self.prefill_share) * self.profile.nodes_per_tok_s

    @property
    def prefill_nodes_per_tok_s(self) -> float:
        """Node-equivalents at the prefill site per tok/s. [nodes/(tokens/s)]"""
        return self.prefill_share * self.profile.nodes_per_tok_s


def cross_metro_profile(
    serving: ServingSection, workload: WorkloadClass, profile: ClassProfile, *, allowance_ms: float, source: str
) -> CrossMetroProfile | str:
    """A computed interactive class with its prefill pool in another metro, or why it has none.

    The pools are sized as disaggregated serving (:func:`placement.serving.disaggregated.disaggregated_candidate`, pooled
    over ``serving.pool_nodes``) inside the class's node TTFT budget less the round trip allowed between the sites
    and any cache hit's load time, the prompt's KV crossing one WAN link of ``wan_gbit_s`` instead of the hall's
    NICs, at the class's own hit rate and speculation setting.

    Parameters
    ----------
    serving : ServingSection
        The node and ``cross_metro_prefill`` (set).
    workload : WorkloadClass
        The class.
    profile : ClassProfile
        Its profile (:func:`class_profiles`): the hit rate it runs at and its source label.
    allowance_ms : float
        Round trip between the decode and the prefill site the pools are sized for. [ms]
    source : str
        The scenario file.

    Returns
    -------
    CrossMetroProfile or str
        The profile, or why the class cannot be served this way.
    """
    spec = serving.cross_metro_prefill
    assert spec is not None
    if workload.given or workload.serving_ttft_budget_ms is None:
        return "its goodput is given, not computed: the serving model has no pools to split"
    if workload.time_shiftable:
        return "time-shiftable: it may be served whole at any site, so splitting its prefill off buys nothing"
    model = get_model(serving.model)
    wan_ms = kv_transfer_ms(
        float(workload.input_tokens_max or workload.input_tokens), kv_bytes_per_token(model, serving.precision), spec.wan_gbit_s
    )
    hit_load_ms = 0.0 if profile.cache is None else profile.cache.hit_load_ms
    budget = workload.serving_ttft_budget_ms - allowance_ms - hit_load_ms
    why = (
        f"the node's {workload.serving_ttft_budget_ms:g} ms TTFT budget less {allowance_ms:g} ms to the prefill site"
        f" and the p99 prompt's KV over the WAN ({wan_ms:.1f} ms at {spec.wan_gbit_s:g} Gbit/s)"
    )
    if budget <= wan_ms:
        return f"{why} leaves no time to prefill"
    request = replace(
        serving_request(serving, workload),
        prefix_cache_hit_rate=profile.cache_hit_rate,
        ttft_p99_ms=budget,
        disaggregated=True,
        kv_link_gbit_s=spec.wan_gbit_s,
    )
    refit = measured_efficiency(serving, source=source).get((serving.accelerator, serving.precision))
    result = serve_pooled(serving.pool_nodes, request, refit)
    if result.goodput_tok_s <= 0:
        return f"{why} leaves the pools no goodput ({result.limit})"
    accel = get_accelerator(serving.accelerator)
    band = goodput_band(
        accel, serving.precision, model=serving.model, input_tokens=request.input_tokens, output_tokens=request.output_tokens
    )
    xm = replace(
        profile,
        queue_ms=result.queue_p99_ms,
        prefill_ms=result.prefill_ms + result.kv_transfer_ms + hit_load_ms,
        first_decode_ms=result.first_decode_ms,
        slot_wait_ms=result.slot_wait_p99_ms,
        goodput_tok_s_per_node=result.goodput_tok_s * band.factor(serving.goodput_quantile),
        utilisation_cap=1.0,
        itl_ms=result.itl_ms,
        serving_load_share=result.goodput_tok_s / result.capacity_tok_s if result.capacity_tok_s > 0 else 1.0,
        speculative=result.speculative,
        serving_mode="cross-metro",
        node_ttft_share=1.0,
    )
    gb_per_tok = workload.input_tokens * kv_bytes_per_token(model, serving.precision) / workload.output_tokens / 1e9
    return CrossMetroProfile(xm, result.prefill_gpu_share, result.kv_transfer_ms, allowance_ms, gb_per_tok)


def cross_metro_profiles(
    classes: list[WorkloadClass], serving: ServingSection, profiles: list[ClassProfile], *, source: str
) -> list[list[CrossMetroProfile] | str]:
    """Each class's :func:`cross_metro_profile` at each of ``rtt_ms`` that leaves it goodput, or why it has none.

    A larger round trip leaves the pools less of the node's budget, so the allowances are tried from the smallest
    and stop at the first that gives nothing.
    """
    spec = serving.cross_metro_prefill
    assert spec is not None
    out: list[list[CrossMetroProfile] | str] = []
    for workload, profile in zip(classes, profiles, strict=True):
        steps: list[CrossMetroProfile] = []
        first: str = ""
        for allowance in spec.rtt_ms:
            found = cross_metro_profile(serving, workload, profile, allowance_ms=allowance, source=source)
            if isinstance(found, str):
                first = first or found
                break
            steps.append(found)
        out.append(steps if steps else first)
    return out
