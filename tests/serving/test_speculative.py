"""Speculative decoding: tokens per step by hand, the step it costs, and where it pays (tight ITL) or not (tight TTFT)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placement._errors import InputError
from placement.serving.efficiency import CALIBRATED, achieved
from placement.serving.hardware import get_accelerator, get_model
from placement.serving.kernels import step_parts_ms
from placement.serving.pareto import pareto_curve
from placement.serving.request import ServingRequest, serve
from placement.serving.speculative import SPECULATIVE_CSV, Speculation, load_speculation, speculation_for

CHAT = ServingRequest("llama-3.1-70b", "h100-sxm", 8, "fp8", 1155, 211, 170, 25, prefix_cache_hit_rate=0.5, input_tokens_max=4142)


def test_tokens_per_step_by_hand() -> None:
    # a chain of k drafts accepted one after another with probability a: 1 + a + a^2 + ... + a^k tokens per step
    three = Speculation("x", 3, 0.75, 0.03)
    assert three.tokens_per_step == pytest.approx(1 + 0.75 + 0.75**2 + 0.75**3)
    assert three.verify_tokens == 4 and three.step_factor == pytest.approx(1.09)
    assert Speculation("mtp", 1, 0.875, 0.02).tokens_per_step == pytest.approx(1.875)


def test_the_bundled_table_is_cited_and_names_catalog_models() -> None:
    table = load_speculation(SPECULATIVE_CSV)
    assert ("llama-3.1-70b", "eagle3") in table and ("deepseek-v3", "mtp") in table
    for spec in table.values():
        assert spec.basis in {"cited", "estimate"} and spec.source
        get_model(next(m for m, method in table if method == spec.method))  # every model id is in the catalog
    assert speculation_for("llama-3.1-70b", "auto") == table[("llama-3.1-70b", "eagle3")]
    assert speculation_for("llama-3.1-70b", None) is None


def test_an_unknown_method_is_a_clear_error() -> None:
    with pytest.raises(InputError, match=r"'mtp' is not a speculation method of llama-3\.1-70b.*eagle3"):
        serve(replace(CHAT, speculative="mtp"))


def test_a_verify_step_reads_the_weights_once() -> None:
    """At batch 1 the step is bound by reading weights: verifying 4 tokens costs the same weight read, and GEMMs of
    4 rows where they ran 1 (each padded to the tile: ``m + m_half`` rows' time)."""
    model, accel = get_model("llama-3.1-70b"), get_accelerator("h100-sxm")
    one = np.array([1.0])
    kwargs = {"batch": one, "context_total": one * 1260, "chunk_tokens": np.zeros(1), "chunk_attention_flop": np.zeros(1)}
    plain = step_parts_ms(model, accel, "fp8", 4, eff=CALIBRATED, **kwargs)
    verify = step_parts_ms(model, accel, "fp8", 4, eff=CALIBRATED, verify_tokens=4.0, **kwargs)
    assert verify[0][0] == pytest.approx(plain[0][0]), "the weights are read once"
    pad = achieved(accel, CALIBRATED, "fp8").gemm_half_tokens
    assert pad > 10, "the calibration pads every GEMM"
    assert verify[1][0] == pytest.approx((4 + pad) / (1 + pad) * plain[1][0]), "four tokens through the GEMMs"
    assert verify[1][0] < verify[0][0], "still bound by the weight read at batch 1"


def test_speculation_pays_at_a_tight_itl_and_not_where_the_ttft_binds() -> None:
    plain, eagle = serve(CHAT), serve(replace(CHAT, speculative="eagle3"))
    assert eagle.speculative == "eagle3" and eagle.tokens_per_step == pytest.approx(2.734375)
    # at a 25 ms ITL plain decoding is held to small batches; EAGLE-3's 2.7 tokens a step lift it until the TTFT binds
    # (6,075 against 4,513 tok/s per node with the calibration in force)
    assert eagle.goodput_tok_s > 1.3 * plain.goodput_tok_s
    assert eagle.itl_ms <= 25 + 1e-9 and eagle.limit == "ttft" and plain.limit == "itl"
    # a 110 ms node TTFT with 4,142-token prompts: the chunk steps carry the verify tokens too, and prefill binds
    agent = replace(CHAT, ttft_p99_ms=110, min_tok_s_per_user=40)
    assert serve(replace(agent, speculative="eagle3")).goodput_tok_s < serve(agent).goodput_tok_s
    auto = serve(replace(agent, speculative="auto"))
    assert auto.speculative == "" and auto.goodput_tok_s == pytest.approx(serve(agent).goodput_tok_s), "auto keeps the better"


def test_the_pareto_curve_has_both_curves() -> None:
    curve = pareto_curve(replace(CHAT, speculative="eagle3"))
    assert set(curve["speculative"]) == {"", "eagle3"}
    fast = curve[curve["tok_s_per_user"] >= 40]  # the 25 ms ITL side of the curve
    best = fast.groupby("speculative")["tok_s_per_gpu"].max()
    assert best["eagle3"] > best[""], "at 40 tok/s per user speculation delivers more per GPU"


def test_a_scenario_plans_on_speculation_where_it_pays() -> None:
    from placement.profiles.build import class_profiles
    from placement.scenario.load import load_scenario
    from tests.conftest import DEFAULT_SCENARIO

    loaded = load_scenario(DEFAULT_SCENARIO)
    serving = loaded.scenario.serving.model_copy(update={"speculative": "auto"})
    # chat at a 25 ms ITL (the default's 50 ms lets plain decoding run batches the TTFT budget binds first)
    classes = [c.model_copy(update={"itl_p99_ms": 25.0}) if c.name == "chat" else c for c in loaded.scenario.classes]
    plain = {p.name: p for p in class_profiles(classes, loaded.scenario.serving, source=str(loaded.path))}
    fast = {p.name: p for p in class_profiles(classes, serving, source=str(loaded.path))}
    assert fast["chat"].speculative == "eagle3" and fast["chat"].goodput_tok_s_per_node > plain["chat"].goodput_tok_s_per_node
    assert fast["agent"].speculative == "" and fast["agent"].goodput_tok_s_per_node == plain["agent"].goodput_tok_s_per_node
    assert all(p.speculative == "" for p in plain.values())


def test_a_scenario_naming_a_method_its_model_lacks_is_one_clear_error() -> None:
    from placement.profiles.build import class_profiles
    from placement.scenario.load import load_scenario
    from tests.conftest import DEFAULT_SCENARIO

    loaded = load_scenario(DEFAULT_SCENARIO)
    serving = loaded.scenario.serving.model_copy(update={"speculative": "mtp"})
    with pytest.raises(InputError) as caught:
        class_profiles(loaded.scenario.classes, serving, source="scenario.yaml")
    assert len(caught.value.problems) == 1, "said once, not once per class"
    problem = caught.value.problems[0]
    assert problem.source == "scenario.yaml" and "serving.speculative" in str(problem) and "eagle3" in problem.fix
