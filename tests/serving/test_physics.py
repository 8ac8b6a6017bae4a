"""Serving physics: hand-worked formulas, the tail model, catalogs and the two MLPerf calibration rows."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from placement._errors import InputError
from placement.economics.cost import cost_per_million_tokens_usd
from placement.outputs.pareto_chart import plot_pareto
from placement.serving.efficiency import (
    MLPERF_LLAMA2_INPUT_TOKENS,
    MLPERF_LLAMA2_INPUT_TOKENS_MAX,
    MLPERF_LLAMA2_OUTPUT_TOKENS,
    ServingEfficiency,
)
from placement.serving.hardware import (
    ACCELERATORS_CSV,
    MODELS_CSV,
    get_accelerator,
    get_model,
    kv_bytes_per_token,
    load_accelerators,
    load_models,
)
from placement.serving.kernels import (
    attention_rows,
    decode_step,
    kv_copies,
    kv_transfer_ms,
    mixed_step_ms,
    prefill_attention_flops,
    prefill_flops,
    prefill_ms,
)
from placement.serving.lengths import LengthDistribution
from placement.serving.pareto import pareto_curve
from placement.serving.queueing import erlang_c, queue_wait_p99_ms, utilisation_cap
from placement.serving.request import ServingRequest, goodput_report, serve
from placement.serving.steps import ChunkSizes

KIB = 1024


# --- catalogs -------------------------------------------------------------------------------------


def test_kv_bytes_per_token_match_design_figures() -> None:
    assert kv_bytes_per_token(get_model("llama-3.1-70b"), "bf16") == 320 * KIB
    assert kv_bytes_per_token(get_model("llama-3.1-70b"), "fp8") == 160 * KIB
    assert kv_bytes_per_token(get_model("llama-2-70b"), "bf16") == 320 * KIB
    assert kv_bytes_per_token(get_model("llama-3.1-8b"), "bf16") == 128 * KIB
    # MLA: 61 layers x (512 + 64) x 2 bytes = 70,272 bytes = 68.625 KiB
    assert kv_bytes_per_token(get_model("deepseek-v3"), "bf16") == 61 * 576 * 2
    assert kv_bytes_per_token(get_model("deepseek-v3"), "bf16") / KIB == pytest.approx(68.6, abs=0.05)


def test_bundled_catalogs_load_and_have_sources() -> None:
    models, accels = load_models(MODELS_CSV), load_accelerators(ACCELERATORS_CSV)
    assert {"llama-3.1-8b", "llama-3.1-70b", "llama-2-70b", "llama-3.1-405b", "deepseek-v3", "qwen3-235b-a22b"} <= set(models)
    assert {"h100-sxm", "h200", "b200", "gb200-nvl72", "mi300x"} <= set(accels)
    assert accels["h100-sxm"].tflops == {"bf16": 989.0, "fp8": 1979.0}
    assert accels["b200"].tflops["fp4"] == 9000.0
    assert models["deepseek-v3"].params_active_b == 37.0


def test_loader_reports_file_row_and_field(tmp_path: Path) -> None:
    text = MODELS_CSV.read_text().splitlines()
    broken = text[1].replace(",32,4096,", ",thirty,4096,", 1)  # llama-3.1-8b layers
    path = tmp_path / "models.csv"
    path.write_text("\n".join([text[0], broken, *text[2:]]) + "\n")
    with pytest.raises(InputError) as info:
        load_models(path)
    message = str(info.value)
    assert str(path) in message and "row 1" in message and "'layers'" in message


def test_a_part_names_the_die_it_carries(tmp_path: Path) -> None:
    accels = load_accelerators(ACCELERATORS_CSV)
    # the GB200 tray and rack carry the HGX B200's die (their GEMM fraction is one calibrated figure); others their own
    assert accels["gb200-nvl72"].silicon == accels["gb200"].silicon == "b200" and accels["gb300"].silicon == "b300"
    assert accels["h200"].silicon == "h200" and accels["mi355x"].silicon == "mi355x"
    lines = ACCELERATORS_CSV.read_text().splitlines()
    broken = [line.replace(",nvidia-blackwell,b300", ",nvidia-blackwell,b301") for line in lines]
    path = tmp_path / "accelerators.csv"
    path.write_text("\n".join(broken) + "\n")
    with pytest.raises(InputError) as info:
        load_accelerators(path)
    message = str(info.value)
    assert "'die'" in message and "'b301' is no part of this catalog" in message and message.count("b301") == 2
    path.write_text("\n".join(line.replace(",b300,switch", ",b300,sharp") for line in lines) + "\n")
    with pytest.raises(InputError, match="must be ring or switch, got 'sharp'"):
        load_accelerators(path)


def test_unknown_model_lists_known_names_and_suggests() -> None:
    with pytest.raises(InputError) as info:
        goodput_report(ServingRequest("llama-2-70", "h200", 8, "fp8", 1024, 290, 450, 40))
    message = str(info.value)
    assert "did you mean 'llama-2-70b'" in message
    for name in ("llama-3.1-8b", "llama-3.1-405b", "deepseek-v3", "qwen3-235b-a22b"):
        assert name in message


def test_unknown_accelerator_and_unsupported_precision() -> None:
    with pytest.raises(InputError, match="h100-sxm"):
        get_accelerator("h100")
    with pytest.raises(InputError, match="not supported by the silicon"):
        serve(ServingRequest("llama-2-70b", "h100-sxm", 8, "fp4", 1024, 290, 2000, 200))


# --- decode and prefill ---------------------------------------------------------------------------

EFF = ServingEfficiency(
    hbm=0.9,
    tensor=0.65,
    attention=0.5,
    step_overhead_ms=1.0,
    layer_floor_us=40.0,
    sequence_us=10.0,
    allreduce_latency_us=8.0,
    scale_up_efficiency=0.8,
    gemm_half_tokens=64.0,
)


def test_decode_step_worked_by_hand() -> None:
    # Llama-2-70B FP8 on one H200, batch 64, 1,000 tokens of context each.
    model, accel = get_model("llama-2-70b"), get_accelerator("h200")
    step = decode_step(model, accel, "fp8", tp=1, batch=64, context_tokens=1000, eff=EFF)
    weights = 68.98e9 * 1.0
    kv = 64 * 1000 * 160 * KIB
    memory_ms = weights / (0.9 * 4.8e12) * 1e3  # 15.97 ms: the linear layers read every weight once
    compute_ms = 2 * 68.98e9 * (64 + 64) / (0.65 * 1979e12) * 1e3  # 13.73 ms: 64 rows run a 128-row tile's time
    kv_ms = kv / (0.9 * 4.8e12) * 1e3  # 2.43 ms: decode attention reads the KV after the GEMMs
    # its GEMMs have 8 rows (the 8 query heads of a GQA group share one KV head), padded like every GEMM's: 8 + 64
    attention_flop_ms = 64 * 4 * 80 * 64 * 128 * 1000 * (8 + 64) / 8 / (0.5 * 989e12) * 1e3  # 3.05 ms: above the read
    assert step.memory_ms == pytest.approx(memory_ms, rel=1e-9)
    assert step.memory_ms == pytest.approx(15.967, abs=0.01)
    assert step.compute_ms == pytest.approx(compute_ms, rel=1e-9)
    assert step.attention_ms == pytest.approx(attention_flop_ms, rel=1e-9) and attention_flop_ms > kv_ms
    assert step.attention_ms == pytest.approx(3.053, abs=0.01)
    assert step.comm_ms == 0.0
    floor_ms = 1.0 + 80 * 40e-3 + 64 * 10e-3  # per step, per layer (80) and per sequence (64): 4.84 ms
    assert step.total_ms == pytest.approx(memory_ms + attention_flop_ms + floor_ms)


def test_decode_attention_rows_are_the_heads_sharing_a_kv_head() -> None:
    # GQA: a group's query heads, whatever the tensor parallelism, until the KV heads run out and replicate
    assert attention_rows(get_model("llama-2-70b"), 1) == 8 and attention_rows(get_model("llama-2-70b"), 8) == 8
    assert attention_rows(get_model("llama-3.1-405b"), 8) == 16 and attention_rows(get_model("llama-3.1-8b"), 8) == 4
    # MLA: every head reads the one latent; tensor parallelism leaves each GPU 128 / tp of them, data-parallel all
    r1 = get_model("deepseek-r1")
    assert attention_rows(r1, 4) == 32 and attention_rows(r1, 8) == 16 and attention_rows(r1, 8, attention_dp=True) == 128
    # so the same work pads 4x more under TP8 than under data-parallel attention: (16 + 64) / 16 against (128 + 64) / 128
    accel, eff = get_accelerator("b200"), replace(EFF, hbm=10.0)  # memory far too fast to bind: the FLOPs show
    tp8 = decode_step(r1, accel, "fp4", tp=8, batch=64, context_tokens=2000, eff=eff)
    dp8 = decode_step(r1, accel, "fp4", tp=8, batch=64, context_tokens=2000, eff=eff, attention_dp=True)
    assert tp8.attention_ms / dp8.attention_ms == pytest.approx((80 / 16) / (192 / 128), rel=1e-6)


def test_tensor_parallel_adds_allreduce_and_splits_bytes() -> None:
    model, accel = get_model("llama-2-70b"), get_accelerator("h100-sxm")
    one = decode_step(model, accel, "fp8", tp=2, batch=8, context_tokens=500, eff=EFF)
    # two all-reduces per layer, each 8 x 8192 BF16 values; NVSwitch reduces in the network (NVLink SHARP), so each
    # GPU sends the payload once, as a ring's 2(n-1)/n would at n = 2
    assert accel.allreduce == "switch"
    per_call = 8e-6 + 8 * 8192 * 2 / (0.8 * 450e9)
    assert one.comm_ms == pytest.approx(2 * 80 * per_call * 1e3)
    # at TP8 a ring would send 1.75x the payload over each GPU's links; the switch still once
    eight = decode_step(model, accel, "fp8", tp=8, batch=8, context_tokens=500, eff=EFF)
    assert eight.comm_ms == pytest.approx(one.comm_ms)
    ring = decode_step(model, replace(accel, allreduce="ring"), "fp8", tp=8, batch=8, context_tokens=500, eff=EFF)
    assert ring.comm_ms == pytest.approx(2 * 80 * (8e-6 + 1.75 * 8 * 8192 * 2 / (0.8 * 450e9)) * 1e3)
    # MI300X's Infinity Fabric is a mesh of links, no switch: a ring
    assert get_accelerator("mi300x").allreduce == "ring"
    assert one.memory_ms == pytest.approx(68.98e9 / 2 / (0.9 * 3.35e12) * 1e3)
    assert one.attention_ms == pytest.approx(8 * 500 * 160 * KIB / 2 / (0.9 * 3.35e12) * 1e3)


def test_colocated_prefill_steals_step_time() -> None:
    model, accel = get_model("llama-2-70b"), get_accelerator("h200")
    alone = decode_step(model, accel, "fp8", tp=1, batch=128, context_tokens=1000, eff=EFF)
    fused = decode_step(model, accel, "fp8", tp=1, batch=128, context_tokens=1000, prefill_tokens=450, eff=EFF)
    assert fused.total_ms > alone.total_ms


def test_prefix_cache_removes_prefill_tokens_linearly() -> None:
    model = get_model("llama-3.1-70b")
    n = 2000.0

    def gemm_flops(h: float) -> float:
        return prefill_flops(model, n, h * n) - prefill_attention_flops(model, n, h * n)

    for h in (0.25, 0.5, 0.75):
        assert gemm_flops(h) == pytest.approx((1 - h) * gemm_flops(0.0))
    assert gemm_flops(0.0) == pytest.approx(2 * 70.6e9 * n)
    accel = get_accelerator("h100-sxm")
    times = [prefill_ms(model, accel, "fp8", tp=8, tokens=n, prefix_cache_hit_rate=h, eff=EFF) for h in (0.0, 0.5, 1.0)]
    assert times[0] > times[1] > times[2] == 0.0


def test_kv_transfer_is_bytes_over_nic_bandwidth() -> None:
    # 1,024 tokens x 160 KiB over one 400 Gb/s NIC = 167.8 MB / 50 GB/s = 3.36 ms
    assert kv_transfer_ms(1024, 160 * KIB, 400) == pytest.approx(1024 * 160 * KIB / 50e9 * 1e3)
    assert kv_transfer_ms(1024, 160 * KIB, 800) == pytest.approx(kv_transfer_ms(1024, 160 * KIB, 400) / 2)


def test_disaggregated_ttft_includes_kv_transfer() -> None:
    r = serve(ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 2048, 256, 2000, 50, disaggregated=True))
    model = get_model("llama-3.1-70b")
    per_nic = kv_bytes_per_token(model, "fp8") * kv_copies(model, r.tp) / r.tp
    assert r.kv_transfer_ms == pytest.approx(kv_transfer_ms(2048, per_nic, 400))
    assert r.kv_transfer_ms > 0
    assert r.ttft_ms == pytest.approx(r.queue_p99_ms + r.slot_wait_p99_ms + r.prefill_ms + r.kv_transfer_ms + r.first_decode_ms)
    assert 0 < r.prefill_gpu_share < 1
    colocated = serve(ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 2048, 256, 2000, 50))
    assert colocated.kv_transfer_ms == 0.0


# --- the tail -------------------------------------------------------------------------------------


def test_erlang_c_textbook_values() -> None:
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)  # two servers, a = 1 Erlang
    assert erlang_c(1, 0.7) == pytest.approx(0.7)  # M/M/1: P(wait) = rho
    # c = 10, a = 8 from the defining sum
    a, c = 8.0, 10
    top = a**c / math.factorial(c) * c / (c - a)
    expected = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    assert erlang_c(c, a) == pytest.approx(expected)
    assert erlang_c(c, a) == pytest.approx(0.409, abs=0.001)


def test_mm1_p99_wait_and_utilisation_cap_inverse() -> None:
    # M/M/1, S = 10 ms, rho = 0.5: P(W > t) = 0.5 exp(-(mu - lambda) t), mu - lambda = 0.05/ms
    assert queue_wait_p99_ms(1, 10.0, 0.5) == pytest.approx(math.log(50) / 0.05)
    cap = utilisation_cap(8, 100.0, 250.0)
    assert queue_wait_p99_ms(8, 100.0, cap) == pytest.approx(250.0, rel=1e-6)
    assert utilisation_cap(8, 100.0, 500.0) > cap  # more budget, less headroom
    assert utilisation_cap(64, 100.0, 250.0) > cap  # pooling
    assert utilisation_cap(8, 100.0, -1.0) == 0.0


# --- goodput --------------------------------------------------------------------------------------


def test_goodput_is_zero_when_itl_objective_below_batch_one_step() -> None:
    r = serve(ServingRequest("llama-2-70b", "h200", 8, "fp8", 1024, 290, 2000, 1.0))
    assert r.goodput_tok_s == 0.0 and r.batch == 0
    assert "itl" in r.limit
    assert r.itl_ms > 1.0  # the batch-1 step it could not beat


def test_result_respects_its_objective() -> None:
    r = serve(ServingRequest("llama-3.1-8b", "h100-sxm", 8, "bf16", 1024, 256, 500, 30, min_tok_s_per_user=40))
    assert 0 < r.goodput_tok_s <= r.capacity_tok_s
    assert r.itl_ms <= 30 and 1e3 / r.itl_ms >= 40
    assert r.ttft_ms <= 500 + 1e-6
    assert r.ttft_ms == pytest.approx(r.queue_p99_ms + r.slot_wait_p99_ms + r.prefill_ms + r.kv_transfer_ms + r.first_decode_ms)


def test_every_ttft_part_is_what_its_name_says() -> None:
    # Issue 22, item 5: colocated, prefill is every step carrying one of the longest prompt's chunks (the last
    # of them samples the first token, so no decode step precedes it) and the decode-slot wait is its own part
    from placement.serving.efficiency import CALIBRATED
    from placement.serving.steps import chunked_steps

    request = ServingRequest(
        "llama-3.1-70b", "h100-sxm", 8, "fp8", 1155, 211, 110.0, 25.0, 0.5, min_tok_s_per_user=40.0, input_tokens_max=4142
    )
    r = serve(request)
    assert r.goodput_tok_s > 0 and r.chunk_tokens > 0
    assert r.first_decode_ms == 0.0 and r.kv_transfer_ms == 0.0
    assert r.queue_p99_ms > 0 and r.slot_wait_p99_ms >= 0  # ITL-limited here: the slots are rarely all busy
    busy = serve(ServingRequest("llama-3.1-8b", "h100-sxm", 8, "bf16", 1024, 256, 500, 30, min_tok_s_per_user=40))
    assert busy.slot_wait_p99_ms > 0 and busy.first_decode_ms == 0.0  # TTFT-limited: the slot queue binds
    w = request.workload
    m, a = get_model(request.model), get_accelerator(request.accelerator)
    steps = chunked_steps(m, a, "fp8", tp=r.tp, batch=np.array([float(r.batch)]), workload=w, eff=CALIBRATED)
    ki = int(np.flatnonzero(steps.chunk == r.chunk_tokens)[0])
    chunks = math.ceil(w.new_tokens_max / r.chunk_tokens)
    assert r.prefill_ms == pytest.approx(chunks * float(steps.mixed_ms[ki, 0]), rel=1e-12)
    # disaggregated: the decode pool's first step is one decode step at its batch, inside the ITL objective
    d = serve(ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 2048, 256, 2000, 50, disaggregated=True))
    assert d.first_decode_ms == pytest.approx(d.itl_ms) and d.first_decode_ms <= 50
    assert d.slot_wait_p99_ms == 0.0
    # a prompt the prefix cache serves whole has no prefill: one pure decode step gives the first token
    cached = serve(ServingRequest("llama-3.1-8b", "h100-sxm", 8, "bf16", 1024, 256, 500, 30, 1.0))
    assert cached.prefill_ms == 0.0 and 0 < cached.first_decode_ms <= 30


def test_tighter_itl_lowers_goodput() -> None:
    loose = serve(ServingRequest("llama-3.1-70b", "h200", 8, "fp8", 1024, 290, 2000, 100)).goodput_tok_s
    tight = serve(ServingRequest("llama-3.1-70b", "h200", 8, "fp8", 1024, 290, 2000, 25)).goodput_tok_s
    assert tight < loose


def test_weights_that_do_not_fit_give_zero() -> None:
    r = serve(ServingRequest("llama-3.1-405b", "h100-sxm", 8, "bf16", 1024, 290, 2000, 200))
    assert r.goodput_tok_s == 0.0 and "do not fit" in r.limit


def test_report_keys_cost_and_facility_yield() -> None:
    report = goodput_report(ServingRequest("llama-2-70b", "h200", 8, "fp8", 1024, 290, 450, 40, node_cost_usd_h=30.0))
    for key in (
        "goodput_tok_s",
        "batch",
        "itl_ms",
        "ttft_ms",
        "node_kw",
        "tokens_per_s_per_mw",
        "cost_per_million_goodput_tokens_usd",
    ):
        assert key in report
    assert report["cost_per_million_goodput_tokens_usd"] == pytest.approx(
        float(cost_per_million_tokens_usd(30.0, report["goodput_tok_s"]))
    )
    assert report["node_kw"] == pytest.approx(10.2)
    assert report["tokens_per_s_per_mw"] == pytest.approx(report["goodput_tok_s"] / (10.2 / 1000))
    assert "cost_per_million_goodput_tokens_usd" not in goodput_report(
        ServingRequest("llama-2-70b", "h200", 8, "fp8", 1024, 290, 450, 40)
    )
    with_pue = serve(ServingRequest("llama-2-70b", "h200", 8, "fp8", 1024, 290, 450, 40, pue=1.25))
    assert with_pue.tokens_per_s_per_mw == pytest.approx(report["tokens_per_s_per_mw"] / 1.25)


@pytest.mark.parametrize(
    ("accelerator", "ttft_ms", "itl_ms", "published_tok_s", "low", "high"),
    [("h100-sxm", 2000, 200, 31106, 0.85, 1.1), ("h100-sxm", 450, 40, 12979, 1.0, 1.35), ("h200", 450, 40, 19424, 0.9, 1.1)],
    ids=["h100-v5.0-server", "h100-v5.0-interactive", "h200-v5.0-interactive"],
)
def test_fitted_mlperf_rows(
    accelerator: str, ttft_ms: float, itl_ms: float, published_tok_s: float, low: float, high: float
) -> None:
    """The DESIGN.md calibration rows (MLPerf v5.0 llama2-70b, 8 GPUs, FP8) at the measured workload.

    Prompts mean 222 / max 1,021, ~290 generated tokens. They are points of data/serving/measured.csv (the H200 one as
    an older round of its configuration), fitted jointly with every model's points: H100 Server 11 % low, H200
    Interactive within 1 %; H100 Interactive is over-predicted (+25 %), the joint calibration's known gap there,
    bounded so that it cannot grow unseen.
    """
    got = goodput_report(
        ServingRequest(
            "llama-2-70b",
            accelerator,
            8,
            "fp8",
            MLPERF_LLAMA2_INPUT_TOKENS,
            MLPERF_LLAMA2_OUTPUT_TOKENS,
            ttft_ms,
            itl_ms,
            input_tokens_max=MLPERF_LLAMA2_INPUT_TOKENS_MAX,
        )
    )["goodput_tok_s"]
    assert low * published_tok_s <= got <= high * published_tok_s


def test_mixed_step_is_at_least_the_decode_step_and_grows_with_the_chunk() -> None:
    model, accel = get_model("llama-2-70b"), get_accelerator("h200")
    kwargs = {"decode_batch": 128, "decode_context_tokens": 128 * 400.0, "efficiency": EFF}
    pure = mixed_step_ms(model, accel, "fp8", 8, prefill_chunk_tokens=0, **kwargs)  # type: ignore[arg-type]
    assert pure == pytest.approx(decode_step(model, accel, "fp8", tp=8, batch=128, context_tokens=400, eff=EFF).total_ms)
    steps = [mixed_step_ms(model, accel, "fp8", 8, prefill_chunk_tokens=k, **kwargs) for k in (0, 64, 256, 1024, 4096)]  # type: ignore[arg-type]
    assert all(b >= a for a, b in itertools.pairwise(steps))
    assert steps[-1] > 2 * steps[0]  # a 4k-token chunk is compute-bound: far longer than the memory-bound decode step
    by_id = mixed_step_ms("llama-2-70b", "h200", "fp8", 8, prefill_chunk_tokens=256, **kwargs)  # type: ignore[arg-type]
    assert by_id == pytest.approx(steps[2])


def test_chosen_chunk_meets_both_objectives_and_interactive_costs_throughput() -> None:
    request = ServingRequest("llama-2-70b", "h200", 8, "fp8", 222, 290, 450, 40, input_tokens_max=1021)
    r = serve(request)
    assert r.chunk_tokens > 0
    assert r.itl_ms <= 40.0 + 1e-9
    assert r.ttft_ms <= 450.0 + 1e-9
    # the longest prompt's prefill is ceil(1021 / K) mixed steps, the last of which emits the first token
    # (checked step by step in test_every_ttft_part_is_what_its_name_says)
    assert r.first_decode_ms == 0.0 and r.prefill_ms > 0
    relaxed = serve(ServingRequest("llama-2-70b", "h200", 8, "fp8", 222, 290, 2000, 200, input_tokens_max=1021))
    assert relaxed.goodput_tok_s > 1.5 * r.goodput_tok_s


def test_longer_longest_prompt_costs_ttft_not_mean_work() -> None:
    short = serve(ServingRequest("llama-2-70b", "h200", 8, "fp8", 222, 290, 2000, 200))
    long = serve(ServingRequest("llama-2-70b", "h200", 8, "fp8", 222, 290, 2000, 200, input_tokens_max=1021))
    assert long.goodput_tok_s <= short.goodput_tok_s * 1.001  # equal up to the search grid
    assert long.goodput_tok_s > 0.8 * short.goodput_tok_s  # the mean work is the same


def test_pareto_curve_and_plot(tmp_path: Path) -> None:
    curve = pareto_curve(ServingRequest("llama-3.1-8b", "h100-sxm", 8, "fp8", 1024, 256, 2000, 50))
    assert {"tp", "batch", "itl_ms", "tok_s_per_user", "tok_s_per_gpu", "on_frontier"} <= set(curve.columns)
    front = curve[curve["on_frontier"]].sort_values("tok_s_per_user")
    assert len(front) > 3
    assert front["tok_s_per_gpu"].is_monotonic_decreasing  # faster per user costs throughput per GPU
    path = plot_pareto(curve, tmp_path / "pareto.png", itl_p99_ms=40)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_request_problems_are_reported_together() -> None:
    request = ServingRequest("llama-2-70b", "h200", 8, "fp8", 1024, 290, 450, 40, pue=0.5, input_tokens_max=512)
    with pytest.raises(InputError) as info:
        serve(request)
    fields = {p.field for p in info.value.problems}
    assert {"pue", "input_tokens_max"} <= fields


def test_goodput_report_is_serve_of_the_same_request() -> None:
    request = ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 2048, 256, 2000, 50, node_cost_usd_h=30.0, pue=1.2)
    result, report = serve(request), goodput_report(request)
    assert report["goodput_tok_s"] == result.goodput_tok_s
    assert report["cost_per_million_goodput_tokens_usd"] == pytest.approx(30.0 / (result.goodput_tok_s * 3600 / 1e6))
    assert report["tokens_per_s_per_mw"] == pytest.approx(result.goodput_tok_s / (result.node_kw * 1.2 / 1e3))


def test_default_scenario_classes_carry_mean_and_longest_prompt() -> None:
    from placement.scenario.classes import WorkloadClass
    from placement.scenario.load import load_scenario
    from placement.world.bundled import bundled_path

    loaded = load_scenario(bundled_path("scenarios") / "default.yaml")
    for workload in loaded.scenario.classes:
        assert workload.input_tokens_max is not None
        assert workload.input_tokens_max > workload.input_tokens  # derived from the Azure traces: p99 > mean
    # An old-style class with only input_tokens still loads; input_tokens now means the mean prompt.
    old = WorkloadClass(name="c", share=1.0, ttft_p99_ms=300, itl_p99_ms=50, serving_ttft_budget_ms=170, input_tokens=1024)
    assert old.input_tokens_max is None
    with pytest.raises(ValueError, match="MEAN"):
        WorkloadClass(
            name="c",
            share=1.0,
            ttft_p99_ms=300,
            itl_p99_ms=50,
            serving_ttft_budget_ms=170,
            input_tokens=1024,
            input_tokens_max=10,
        )


@pytest.mark.parametrize(("accelerator", "gpus"), [("gb200", 4), ("mi325x", 8), ("mi355x", 8), ("b300", 8)])
def test_new_catalog_accelerators_serve_the_mlperf_workload(accelerator: str, gpus: int) -> None:
    accel = get_accelerator(accelerator)
    assert accel.gpus_per_node == gpus
    assert 0.83 <= accel.hbm_efficiency <= 0.95  # DESIGN.md band
    precision = "fp4" if "fp4" in accel.tflops else "fp8"
    r = serve(ServingRequest("llama-2-70b", accelerator, gpus, precision, 222, 290, 2000, 200, input_tokens_max=1021))
    assert r.goodput_tok_s > 0


def test_catalog_efficiencies_are_cited_and_inside_published_bands() -> None:
    # DESIGN.md section 3: achieved HBM 83-95 % of peak; FP8 GEMM ~60-70 % on NVIDIA (lower on AMD, cited per row).
    for accel in load_accelerators(ACCELERATORS_CSV).values():
        assert 0.83 <= accel.hbm_efficiency <= 0.95, accel.id
        assert accel.gemm_efficiency <= 0.70, accel.id
        assert 0.0 < accel.attention_efficiency <= 0.75, accel.id  # FlashAttention-3 peak share on H100
        assert 0.0 < accel.scale_up_efficiency <= 1.0 and accel.allreduce_latency_us > 0, accel.id
    lines = ACCELERATORS_CSV.read_text(encoding="utf-8").splitlines()
    assert "efficiency_source" in lines[0]


def test_accelerator_catalog_without_efficiency_source_is_refused(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.read_csv(ACCELERATORS_CSV, dtype=str, keep_default_na=False)
    frame.loc[0, "efficiency_source"] = ""
    bad = tmp_path / "accelerators.csv"
    frame.to_csv(bad, index=False)
    with pytest.raises(InputError, match="efficiency_source"):
        load_accelerators(bad)


def test_chunk_sizes_by_hand() -> None:
    """Prompts of 1,000 new tokens under a 384-token budget: chunks 384, 384, 232; three steps a prompt."""
    sizes = ChunkSizes.of(np.full(8, 1000.0), np.array([384.0, 2048.0]))
    assert sizes.steps_per_prompt.tolist() == [3.0, 1.0]
    assert set(sizes.sizes[0].tolist()) == {232.0, 384.0}
    assert sizes.upper[0][0] == 1.0 and sizes.upper[0][-1] == pytest.approx(2.0 / 3.0)
    # two thirds of chunk steps carry 384 tokens: the top half does, the top 90 % reaches down to 232
    assert sizes.tail_tokens(0, np.array([0.5]), np.array([0.0])).tolist() == [384.0]
    assert sizes.tail_tokens(0, np.array([0.9]), np.array([0.0])).tolist() == [232.0]
    # a budget above every prompt: one step each, the chunk is the prompt
    assert sizes.tail_tokens(1, np.array([0.01]), np.array([0.0])).tolist() == [1000.0]
    # when the pipeline is always busy every chunk step is full
    assert sizes.tail_tokens(1, np.array([0.5]), np.array([0.6])).tolist() == [2048.0]


def test_length_quantiles_keep_the_mean_and_the_cap() -> None:
    grid = LengthDistribution(222, 1021).quantiles(256)
    assert grid.mean() == pytest.approx(222, rel=0.01)
    assert grid.max() == 1021 and np.all(np.diff(grid) >= 0)
    assert LengthDistribution(300).quantiles(4).tolist() == [300.0] * 4


def test_itl_cap_keeps_the_p99_itl_inside_the_objective_when_prompts_are_long() -> None:
    """Long prompts and a tight ITL: goodput is capped where chunk steps would break the ITL, and says so."""
    request = ServingRequest(
        "llama-3.1-70b", "h100-sxm", 8, "fp8", 1155, 211, 110, 25, prefix_cache_hit_rate=0.5, input_tokens_max=4142
    )
    result = serve(request)
    assert 0 < result.goodput_tok_s < result.capacity_tok_s
    assert result.itl_ms <= 25.0 + 1e-9
    assert result.limit in {"itl", "ttft"}
