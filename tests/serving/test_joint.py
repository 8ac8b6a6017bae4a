"""The joint calibration: it recovers the terms a known law was made with, keeps unidentified terms at their priors,
and its folds predict a left-out model from the others."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from placement.serving import joint
from placement.serving.efficiency import ServingEfficiency
from placement.serving.hardware import get_model
from placement.serving.measured import MeasuredPoint

TRUTH = {"step_overhead_ms": 2.0, "layer_floor_us": 90.0, "sequence_us": 15.0, "allreduce_latency_us": 15.0}
GEMM = {"h100-sxm": 0.55, "h200": 0.7}


def _law(point: MeasuredPoint, eff: ServingEfficiency, *, with_sequences: bool = True) -> float:
    """A goodput law with the shape of the serving model: compute share times tokens over a floored step."""
    model = get_model(point.model)
    batch = point.itl_p99_ms  # a batch per point
    tp = 8 if model.layers > 100 else 1
    compute = 1.0 if point.scenario == "Server" else 0.3
    step = (
        (eff.step_overhead_ms or 0.0)
        + model.layers * (eff.layer_floor_us or 0.0) / 1e3
        + (batch * (eff.sequence_us or 0.0) / 1e3 if with_sequences else 0.0)
        + (2 * model.layers * (eff.allreduce_latency_us or 0.0) / 1e3 if tp > 1 else 0.0)
        + 5.0
    )
    return float(1e5 * (eff.tensor or 0.5) ** compute * batch / step / model.layers)


def _points(noise: float = 0.0, seed: int = 0) -> list[MeasuredPoint]:
    rng = np.random.default_rng(seed)
    out = []
    for model in ("llama-2-70b", "llama-3.1-8b", "llama-3.1-405b"):
        for accel in GEMM:
            for scenario, batch in (("Server", 120.0), ("Interactive", 30.0)):
                p = MeasuredPoint(f"{model}-{accel}-{scenario}", model, accel, 8, "fp8", 500, 300, 1000, 2000.0, batch, 1.0)
                p = replace(p, scenario=scenario)
                eff = ServingEfficiency(tensor=GEMM[accel], **TRUTH)  # type: ignore[arg-type]
                out.append(replace(p, tok_s=_law(p, eff) * float(np.exp(noise * rng.normal()))))
    return out


@pytest.fixture
def law(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(joint, "point_goodput", lambda job: _law(*job))


@pytest.mark.usefixtures("law")
def test_the_joint_fit_recovers_the_terms_a_law_was_made_with() -> None:
    points = _points()
    fit = joint.fit_jointly(points, iterations=30, point_sigma=0.01)  # exact points: the data outweigh the priors
    assert {t.label for t in fit.terms} == {
        "step_overhead_ms nvidia-hopper",
        "layer_floor_us nvidia-hopper",
        "sequence_us nvidia-hopper",
        "allreduce_latency_us nvidia-hopper",
        "attention_efficiency nvidia-hopper",
        "gemm_efficiency nvidia-hopper h100-sxm fp8",
        "gemm_efficiency nvidia-hopper h200 fp8",
        "gemm_half_tokens",
    }
    # the law pads no GEMM: the tile padding never leaves its prior
    assert fit.value("gemm_half_tokens") == pytest.approx(joint.GEMM_HALF_TOKENS_PRIOR)
    # The priors still pull a little (they are part of the loss): each figure within 15 %, the goodput within 1 %.
    for name, value in TRUTH.items():
        assert fit.value(name, "nvidia-hopper") == pytest.approx(value, rel=0.15), name
    for part, value in GEMM.items():
        assert fit.value("gemm_efficiency", "nvidia-hopper", part, "fp8") == pytest.approx(value, rel=0.15), part
    assert float(np.max(np.abs(fit.log_errors))) < 0.01
    costs = [float(line.split("-> ")[1].split(",")[0]) for line in fit.history]
    assert costs == sorted(costs, reverse=True)


def test_a_term_no_point_can_identify_stays_at_its_prior(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(joint, "point_goodput", lambda job: _law(*job, with_sequences=False))
    fit = joint.fit_jointly(_points(), iterations=20)
    assert fit.value("sequence_us", "nvidia-hopper") == pytest.approx(joint.SEQUENCE_US_PRIOR, rel=0.02)
    # the law has no attention at all: its term never leaves the catalog's cited figure
    assert fit.value("attention_efficiency", "nvidia-hopper") == pytest.approx(0.5)


@pytest.mark.usefixtures("law")
def test_a_left_out_model_is_predicted_from_the_others() -> None:
    points = _points(noise=0.02, seed=1)
    fit = joint.fit_jointly(points, iterations=30, point_sigma=0.02)
    # 405B is the only model split over GPUs: without it the collective's latency falls back to its prior, so
    # leaving it out predicts it worse than leaving out a model whose terms the others still pin down.
    values, predicted = joint.fold_predictions(fit, lambda p: p.model == "llama-3.1-8b")
    assert set(predicted) == {k for k, p in enumerate(points) if p.model == "llama-3.1-8b"}
    assert max(abs(e) for e in predicted.values()) < 0.10
    _, without_405b = joint.fold_predictions(fit, lambda p: p.model == "llama-3.1-405b")
    assert max(abs(e) for e in without_405b.values()) > max(abs(e) for e in predicted.values())
    assert len(values) == len(fit.terms)


def test_terms_touching_disjoint_points_are_differenced_together() -> None:
    # rows are points, columns terms: a term that touches every point is differenced alone
    touch = np.array([[1, 0, 1, 0, 1], [1, 0, 0, 1, 1], [0, 1, 1, 0, 1]], dtype=bool)
    assert joint._colour(touch) == [[0, 1], [2, 3], [4]]


def test_the_terms_are_per_family_per_die_and_the_tile_padding_shared() -> None:
    base = MeasuredPoint("a", "deepseek-r1", "gb200-nvl72", 72, "fp4", 804, 3000, 3140, 2000.0, 80.0, 1.0)
    points = [
        base,
        replace(base, accelerator="gb200", gpus=4),
        replace(base, accelerator="b200", gpus=8),
        replace(base, accelerator="gb300", gpus=4),
        replace(base, model="llama-2-70b", accelerator="mi300x"),
    ]
    labels = [t.label for t in joint.terms_for(points)]
    # the rack, its tray and the HGX part carry one B200 die; GB300 carries the B300 die, named by its HGX part
    assert labels.count("gemm_efficiency nvidia-blackwell b200 fp4") == 1
    assert "gemm_efficiency nvidia-blackwell b300 fp4" in labels and not any("gb200" in label for label in labels)
    assert joint.die_of("gb200-nvl72") == joint.die_of("gb200") == "b200" and joint.die_of("h200") == "h200"
    # the tile padding is one term for every family and model: a dense model's GEMMs pad their rows too
    assert "gemm_efficiency amd-cdna3 mi300x fp4" in labels and labels.count("gemm_half_tokens") == 1
    assert sum(label.startswith("layer_floor_us") for label in labels) == 2
    padding = next(t for t in joint.terms_for(points) if t.parameter == "gemm_half_tokens")
    assert padding.touches(points[0]) and padding.touches(points[-1])


@pytest.mark.usefixtures("law")
def test_a_family_left_out_takes_the_other_families_floors() -> None:
    # Blackwell points made with the same engine as Hopper's: left out whole, the fold has nothing of Blackwell and
    # predicts it as the product predicts a family without points, its floors those the other families fit.
    blackwell = [
        replace(p, point_id=p.point_id.replace("h100-sxm", "b200"), accelerator="b200")
        for p in _points()
        if p.accelerator == "h100-sxm" and p.model != "llama-3.1-405b"
    ]
    points = _points() + [replace(p, tok_s=_law(p, ServingEfficiency(tensor=0.55, **TRUTH))) for p in blackwell]  # type: ignore[arg-type]
    fit = joint.fit_jointly(points, iterations=30, point_sigma=0.02)
    values, predicted = joint.fold_predictions(fit, lambda p: p.accelerator == "b200")
    by_label = {t.label: float(v) for t, v in zip(fit.terms, values, strict=True)}
    for floor in ("step_overhead_ms", "layer_floor_us", "sequence_us"):
        assert by_label[f"{floor} nvidia-blackwell"] == pytest.approx(by_label[f"{floor} nvidia-hopper"]), floor
        prior = next(t.prior for t in fit.terms if t.label == f"{floor} nvidia-blackwell")
        # carried, not the prior: the law's floors are 1.25-2.25x the priors
        assert abs(by_label[f"{floor} nvidia-blackwell"] / prior - 1) > 0.2, floor
    # the fabric's latency and the attention kernels' fraction are the part's own: their cited prior
    blackwell_terms = {t.label: t for t in fit.terms if t.family == "nvidia-blackwell"}
    for name in ("allreduce_latency_us nvidia-blackwell", "attention_efficiency nvidia-blackwell"):
        assert by_label[name] == pytest.approx(blackwell_terms[name].prior), name
    assert set(predicted) == {k for k, p in enumerate(points) if p.accelerator == "b200"}
