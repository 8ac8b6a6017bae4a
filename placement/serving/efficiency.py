"""Achieved efficiencies of the serving model: the catalog's cited values, the calibration, and overrides.

Every efficiency the step times use (η_bw, η_c, η_a, all-reduce latency and bandwidth share, step overhead) is a
column of ``data/serving/accelerators.csv`` with its source: the physics' prior. ``data/serving/calibration.csv``
holds the figures fitted jointly on every model's measured points (``placement.serving.joint``,
``benchmarks/calibrate_serving.py``): per accelerator family the serving engine's floors per step, per layer and per
sequence, the collective's latency and the attention kernels' fraction of peak; per die the GEMM fraction per
precision (FP4 its own, never assumed to reach FP8's); the GEMMs' tile padding, shared. :class:`ServingEfficiency`
overrides any of them for a what-if or a fit, and :func:`achieved` resolves the three, override over calibration
over catalog, into the figures in force for one accelerator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import Problem
from placement._validate import Column, choice, missing_columns, numbers, raise_if, read_table, text
from placement.serving.hardware import WEIGHT_BYTES, AcceleratorSpec
from placement.world.bundled import bundled_path

CALIBRATION_CSV = bundled_path("serving") / "calibration.csv"
"""The fitted efficiencies per family (``benchmarks/calibrate_serving.py`` writes it)."""
CALIBRATED_PARAMETERS = (
    "gemm_efficiency",
    "step_overhead_ms",
    "layer_floor_us",
    "sequence_us",
    "gemm_half_tokens",
    "allreduce_latency_us",
    "attention_efficiency",
    "log_sigma_fitted",
    "log_sigma_held_out",
    "log_sigma_model_out",
)
"""What the calibration records: the GEMM fraction of peak per precision, the serving engine's floors (per step, per
layer, per sequence), the GEMMs' tile padding, the latency of one tensor-parallel collective, the attention kernels'
achieved fraction of peak, and per family the RMS log
error of the goodput on the points it was fitted on, on parts left out and on models left out."""
STEP_OVERHEAD_MS_PRIOR = 1.0
"""Prior of the per-step fixed cost of an engine that replays its step as a CUDA/HIP graph: the host's scheduling
and the graph launch, ~0.5-2 ms (vLLM and TensorRT-LLM step traces; an ASSUMPTION held by the prior's width). The
joint calibration starts from it (``calibration.csv`` holds the fitted figure per family)."""
NOT_FITTED = 0.0
"""What a floor or the GEMMs' tile padding is where the calibration has none at all (no calibration table): off."""
CARRIED_ENGINE_TERMS = ("step_overhead_ms", "layer_floor_us", "sequence_us", "gemm_half_tokens")
"""The engine's floors and the GEMMs' tile padding: a part of a family the calibration has no figure for takes the
geometric mean of the fitted families' (:func:`carried_engine_figure`). Each floor means the same thing on every
engine (a step's launch, a layer's kernels, a sequence's bookkeeping), and every fit puts it 1.5-3x above its prior;
the prior alone would make an unmeasured family's steps too short. The collective's latency and the attention
kernels' fraction keep the catalog's cited figure: they belong to the fabric and the kernels."""
LAYER_FLOOR_US_PRIOR = 40.0
"""Prior of the per-layer kernel floor: a transformer layer runs ~10-15 kernels (norms, projections, attention, the
MLP or the router and experts, residual adds), each of which takes a few µs however small its work (launch latency
and a wave of thread blocks, ~3-4 µs on current GPUs). [µs per layer]"""
SEQUENCE_US_PRIOR = 10.0
"""Prior of the per-sequence cost of a step: sampling, stop checks, detokenisation and the scheduler's bookkeeping of
each running sequence (host work that grows with the batch). [µs per sequence per step]"""
GEMM_HALF_TOKENS_PRIOR = 64.0
"""Rows (tokens) at which a GEMM reaches half of its large-GEMM efficiency: tensor-core tiles are 64-128 rows, so a
GEMM over ``m`` tokens runs ``m + m_half`` rows' time (half a 128-row tile of padding on average, more where ``m``
is small). Applied to every GEMM at its own rows: the dense and shared weights' over the step's tokens, each routed
expert's over the tokens routed to it, decode attention's over the query heads sharing one KV head. The joint
calibration fits it as the rows at which a GEMM reaches half its large-GEMM rate. [tokens]"""
P10_Z = 1.2816
"""Standard normal quantile of 0.9: the band's p10 and p90 are ``exp(-/+ P10_Z * sigma)`` times the figure."""
OTHER_MODEL_SIGMA = 0.15
"""Log error added (in quadrature) for a model the measurements do not cover when the calibration has no
leave-one-model-out error for the family: an ASSUMPTION."""
EXTRAPOLATED_SIGMA = 0.25
"""Log error added for a GEMM fraction or overhead carried over from another family or precision (the calibration
marks it ``extrapolated``): an ASSUMPTION, between the held-out error of a part within its family and that of a
family predicted with another's figures (0.4-1.0 in ``benchmarks/calibrate_serving.py``)."""
LENGTHS_SIGMA = 0.10
"""Log error added when the mean prompt or answer is more than twice, or less than half, that of every measured
workload of the model: an ASSUMPTION."""


@dataclass(frozen=True)
class ServingEfficiency:
    """Overrides of the catalog's achieved efficiencies, and engine settings.

    Every efficiency left at ``None`` takes the accelerator's catalog column (``data/serving/accelerators.csv``,
    each with its source); set one to study a what-if or to fit.

    Parameters
    ----------
    hbm : float, optional
        Achieved fraction of peak HBM bandwidth (η_bw; catalog ``hbm_efficiency``).
    tensor : float, optional
        Achieved fraction of dense tensor throughput in GEMMs (η_c; catalog ``gemm_efficiency``).
    attention : float, optional
        Achieved fraction of dense BF16 throughput in attention kernels (η_a; catalog ``attention_efficiency``).
    step_overhead_ms : float, optional
        Per-step fixed cost: scheduling and the step's launch (calibration, else the catalog's). [ms]
    layer_floor_us : float, optional
        Kernel floor per transformer layer (calibration, else :data:`NOT_FITTED`; prior
        :data:`LAYER_FLOOR_US_PRIOR`). [µs]
    sequence_us : float, optional
        Cost per running sequence per step (calibration, else :data:`NOT_FITTED`; prior :data:`SEQUENCE_US_PRIOR`). [µs]
    gemm_half_tokens : float, optional
        Rows at which a GEMM (dense, or one expert's over its routed tokens) reaches half its large-GEMM efficiency
        (calibration, else :data:`NOT_FITTED`; prior :data:`GEMM_HALF_TOKENS_PRIOR`). [tokens]
    allreduce_latency_us : float, optional
        Fixed latency of one all-reduce on the scale-up fabric (catalog ``allreduce_latency_us``). [µs]
    scale_up_efficiency : float, optional
        Achieved fraction of scale-up bandwidth in all-reduce (catalog ``scale_up_efficiency``).
    activation_reserve : float
        Fraction of HBM kept for activations, workspace and fragmentation.
    max_batch : int
        Largest decode batch an engine runs per replica.
    service_cv2 : float, optional
        Squared coefficient of variation of prefill service time; ``None`` (default): the prompt mix's (0 when every
        prompt is the mean), what the calibration is fitted with; 1: exponential.
    """

    hbm: float | None = None
    tensor: float | None = None
    attention: float | None = None
    step_overhead_ms: float | None = None
    layer_floor_us: float | None = None
    sequence_us: float | None = None
    gemm_half_tokens: float | None = None
    allreduce_latency_us: float | None = None
    scale_up_efficiency: float | None = None
    activation_reserve: float = 0.10
    max_batch: int = 4096
    service_cv2: float | None = None


#: No override: the calibration (``data/serving/calibration.csv``) where it has a figure, else the catalog's cited
#: value (``benchmarks/calibrate_serving.py`` prints the fit and its cross-validation).
CALIBRATED = ServingEfficiency()

#: MLPerf llama2-70b (OpenOrca, 24,576 samples; DESIGN.md section 3): mean prompt. [tokens]
MLPERF_LLAMA2_INPUT_TOKENS = 222
#: Longest prompt of that set (p99 791). [tokens]
MLPERF_LLAMA2_INPUT_TOKENS_MAX = 1021
#: Mean tokens a submission generates per sample (checker bounds 265–324; DESIGN.md: ~290). [tokens]
MLPERF_LLAMA2_OUTPUT_TOKENS = 290


@dataclass(frozen=True)
class Achieved:
    """The efficiencies in force for one accelerator: catalog columns unless :class:`ServingEfficiency` overrides."""

    hbm: float
    tensor: float
    attention: float
    step_overhead_ms: float
    allreduce_latency_us: float
    scale_up_efficiency: float
    layer_floor_us: float = NOT_FITTED
    sequence_us: float = NOT_FITTED
    gemm_half_tokens: float = NOT_FITTED

    def floor_ms(self, layers: int, sequences: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """The engine's part of a step: per step, per layer and per sequence. [ms]"""
        per_sequence = np.asarray(sequences) * self.sequence_us / 1e3
        return np.asarray(self.step_overhead_ms + layers * self.layer_floor_us / 1e3 + per_sequence)


@dataclass(frozen=True)
class CalibratedFigure:
    """One fitted (or extrapolated) efficiency of ``data/serving/calibration.csv``.

    Parameters
    ----------
    family : str
        Accelerator family (the catalog's ``family``).
    accelerator : str
        The part a figure is for (blank: every part of the family without its own).
    parameter : str
        ``gemm_efficiency`` or ``step_overhead_ms``.
    precision : str
        The precision a GEMM fraction is for (blank for the overhead).
    value : float
        The figure in force.
    basis : str
        ``fitted`` (on measured points), ``extrapolated`` (from another family or precision) or ``prior``.
    fitted_on : str
        What it was fitted on, or how it was carried over.
    """

    family: str
    accelerator: str
    parameter: str
    precision: str
    value: float
    basis: str
    fitted_on: str


_CALIBRATION_COLUMNS = (
    Column("family"),
    Column("accelerator", required=False),
    Column("parameter"),
    Column("precision", required=False),
    Column("value", "number", low=0.0),
    Column("basis"),
    Column("fitted_on", required=False),
)


CalibrationKey = tuple[str, str, str, str]
"""``(family, accelerator, parameter, precision)``; accelerator and precision may be blank."""


def load_calibration(path: str | Path = CALIBRATION_CSV) -> dict[CalibrationKey, CalibratedFigure]:
    """Read the calibration table: fitted efficiencies by (family, accelerator, parameter, precision).

    Parameters
    ----------
    path : str or Path
        CSV with the columns of ``data/serving/calibration.csv``.

    Returns
    -------
    dict
        ``{(family, accelerator, parameter, precision): CalibratedFigure}`` (accelerator blank for the family's
        figure, precision blank for the overhead).

    Raises
    ------
    InputError
        Every problem in the file: row, field, rule and fix.
    """
    path = Path(path)
    table = read_table(path, fix="save it as UTF-8 CSV with a header row")
    problems = missing_columns(table, _CALIBRATION_COLUMNS)
    raise_if(problems)
    parameter = choice(table, "parameter", CALIBRATED_PARAMETERS, problems, fix="fit only these")
    precision = choice(table, "precision", (*WEIGHT_BYTES, ""), problems, fix="name a catalog precision, or leave it blank")
    basis = choice(table, "basis", ("fitted", "extrapolated", "prior"), problems, fix="say how it was found")
    value = numbers(table, _CALIBRATION_COLUMNS[4], problems)
    family, accelerator = text(table, _CALIBRATION_COLUMNS[0], problems), text(table, _CALIBRATION_COLUMNS[1], problems)
    fitted_on = text(table, _CALIBRATION_COLUMNS[6], problems)
    out: dict[CalibrationKey, CalibratedFigure] = {}
    for k in range(len(table.cells)):
        key = (str(family.iloc[k]), str(accelerator.iloc[k]), str(parameter.iloc[k]), str(precision.iloc[k]))
        if key[2] == "gemm_efficiency" and not (0.0 < float(value.iloc[k]) <= 1.0):
            problems.append(Problem(str(path), table.where(k), "value", "a GEMM fraction must be in (0, 1]", "refit"))
        if key in out:
            problems.append(Problem(str(path), table.where(k), "parameter", f"{key} appears twice", "keep one row"))
        out[key] = CalibratedFigure(*key, float(value.iloc[k]), str(basis.iloc[k]), str(fitted_on.iloc[k]))
    raise_if(problems)
    return out


@lru_cache(maxsize=1)
def bundled_calibration() -> dict[CalibrationKey, CalibratedFigure]:
    """The bundled calibration (read once; empty when the file is absent)."""
    return load_calibration(CALIBRATION_CSV) if CALIBRATION_CSV.is_file() else {}


def calibrated_figure(accel: AcceleratorSpec, parameter: str, precision: str = "") -> CalibratedFigure | None:
    """The calibration's figure for an accelerator (its own, else its family's), or None (the catalog's stands).

    An engine floor or the tile padding (:data:`CARRIED_ENGINE_TERMS`) of a part whose family has none is carried
    over from the fitted families (:func:`carried_engine_figure`).
    """
    table = bundled_calibration()
    own = table.get((accel.family, accel.id, parameter, precision)) or table.get((accel.family, "", parameter, precision))
    if own is None and parameter in CARRIED_ENGINE_TERMS and not precision:
        return carried_engine_figure(parameter, accel.family or accel.id)
    return own


@lru_cache(maxsize=64)
def carried_engine_figure(parameter: str, whose: str) -> CalibratedFigure | None:
    """An engine floor for a family without one: the geometric mean of the fitted families' figures (``extrapolated``).

    Cached like the table it reads: :func:`achieved` asks for it on every step a part of such a family runs.

    Parameters
    ----------
    parameter : str
        One of :data:`CARRIED_ENGINE_TERMS`.
    whose : str
        The family (or, for a part of no family, the part) it is carried to: named in ``fitted_on``.

    Returns
    -------
    CalibratedFigure or None
        None when no family has a fitted figure for it.
    """
    fitted = sorted(
        (f.family, f.value)
        for f in bundled_calibration().values()
        if f.parameter == parameter and not f.accelerator and not f.precision and f.basis == "fitted" and f.value > 0
    )
    if not fitted:
        return None
    value = float(np.exp(np.mean(np.log([v for _, v in fitted]))))
    families = ", ".join(f for f, _ in fitted)
    why = f"no calibration for {whose}: the geometric mean of the fitted families' figures ({families})"
    return CalibratedFigure(whose, "", parameter, "", value, "extrapolated", why)


@dataclass(frozen=True)
class GoodputBand:
    """The uncertainty of a modelled goodput: a log-normal band from the calibration's residuals.

    Parameters
    ----------
    sigma_log : float
        Standard deviation of log(true / modelled goodput).
    reasons : tuple of str
        Where each part of it comes from, in words.
    """

    sigma_log: float
    reasons: tuple[str, ...]

    def factor(self, quantile: str) -> float:
        """The multiplier of the modelled goodput at ``p10``, ``p50`` or ``p90``."""
        z = {"p10": -P10_Z, "p50": 0.0, "p90": P10_Z}[quantile]
        return float(math.exp(z * self.sigma_log))


MEASURED_CSV = bundled_path("serving") / "measured.csv"
"""The published points the calibration is fitted on (``placement.serving.measured`` reads and checks them)."""


@lru_cache(maxsize=1)
def measured_workloads() -> dict[str, tuple[tuple[float, float], ...]]:
    """Per model, the (mean prompt, mean answer) of every workload the calibration in force was fitted on.

    Read from the bundled ``measured.csv`` (its ``fit`` rows with a latency limit), whose rows the measurement loader
    checks; this module sits below that loader, so it reads only the four columns it needs.
    """
    if not MEASURED_CSV.is_file():
        return {}
    frame = pd.read_csv(MEASURED_CSV, usecols=["model", "input_tokens", "output_tokens", "ttft_p99_ms", "use"])
    frame = frame[(frame["use"].fillna("fit") == "fit") & (frame["ttft_p99_ms"] < 1e8)]
    out: dict[str, set[tuple[float, float]]] = {}
    for model, prompt, answer in zip(frame["model"], frame["input_tokens"], frame["output_tokens"], strict=True):
        out.setdefault(str(model), set()).add((float(prompt), float(answer)))
    return {model: tuple(sorted(lengths)) for model, lengths in out.items()}


def _near(lengths: tuple[tuple[float, float], ...], input_tokens: float, output_tokens: float) -> bool:
    """Whether a workload is within a factor of two of one of ``lengths`` in both prompt and answer."""
    return any(0.5 <= input_tokens / i <= 2.0 and 0.5 <= output_tokens / o <= 2.0 for i, o in lengths)


def goodput_band(accel: AcceleratorSpec, precision: str, *, model: str, input_tokens: float, output_tokens: float) -> GoodputBand:
    """The band of a goodput the serving model gives for this part, precision, model and lengths.

    A part whose die has measured points (its own, or a sibling's that carries the same die) carries its family's
    fitted error; a part of a measured family without points its family's leave-one-part-out error; a part of no
    calibrated family the largest held-out error of any family. A model the calibration has no point of adds its
    family's leave-one-model-out error (else :data:`OTHER_MODEL_SIGMA`); a figure carried over from another family
    or precision adds :data:`EXTRAPOLATED_SIGMA`; lengths far from every measured workload of the model (of any model, for a model
    without points) add :data:`LENGTHS_SIGMA`. The parts add in quadrature.

    Parameters
    ----------
    accel : AcceleratorSpec
        The accelerator.
    precision : str
        Its weights' precision.
    model : str
        The model id.
    input_tokens, output_tokens : float
        Mean prompt and answer. [tokens]

    Returns
    -------
    GoodputBand
        The log standard deviation and its reasons.
    """
    table = bundled_calibration()
    family = accel.family

    def sigma(kind: str) -> float | None:
        figure = table.get((family, "", kind, "")) if family else None
        return None if figure is None else figure.value

    parts: list[tuple[float, str]] = []
    own = family and table.get((family, accel.id, "gemm_efficiency", precision)) is not None
    fitted, held = sigma("log_sigma_fitted"), sigma("log_sigma_held_out")
    if own and fitted is not None:
        die = "" if accel.silicon == accel.id else f" (its {accel.silicon} die)"
        parts.append((fitted, f"{accel.id}{die} is measured: {family}'s fitted error"))
    elif held is not None:
        parts.append((held, f"{accel.id} ({precision}) has no point: {family}'s error with a part left out"))
    else:
        worst = max((f.value for k, f in table.items() if k[2] == "log_sigma_held_out"), default=EXTRAPOLATED_SIGMA)
        parts.append((worst, f"{accel.id} is in no calibrated family: the largest held-out error of any family"))
    carried = [
        parameter
        for parameter, key in (("gemm_efficiency", precision), ("step_overhead_ms", ""), ("layer_floor_us", ""))
        if (figure := calibrated_figure(accel, parameter, key)) is not None and figure.basis == "extrapolated"
    ]
    if carried:
        parts.append((EXTRAPOLATED_SIGMA, f"{', '.join(carried)} carried over from another family or precision"))
    measured = measured_workloads()
    if model not in measured:
        model_out = sigma("log_sigma_model_out")
        why = f"{family}'s error with a model left out" if model_out is not None else "assumed"
        parts.append((OTHER_MODEL_SIGMA if model_out is None else model_out, f"{model}: no measured point ({why})"))
    lengths = measured.get(model) or tuple(x for v in measured.values() for x in v)
    if lengths and not _near(lengths, input_tokens, output_tokens):
        parts.append(
            (
                LENGTHS_SIGMA,
                f"lengths far from every measured workload of {model if model in measured else 'any model'} (assumed)",
            )
        )
    return GoodputBand(float(math.sqrt(sum(v * v for v, _ in parts))), tuple(f"{why} ({v:.2f})" for v, why in parts))


def achieved(accel: AcceleratorSpec, eff: ServingEfficiency, precision: str | None = None) -> Achieved:
    """Resolve the efficiencies for ``accel``: an override, else the calibration, else the catalog's cited value.

    Parameters
    ----------
    accel : AcceleratorSpec
        The accelerator.
    eff : ServingEfficiency
        Overrides (each ``None`` falls through).
    precision : str, optional
        The GEMMs' precision: the calibrated GEMM fraction is per precision (without it, the catalog's).

    Returns
    -------
    Achieved
        The figures in force.
    """

    def pick(value: float | None, default: float) -> float:
        return default if value is None else value

    gemm = calibrated_figure(accel, "gemm_efficiency", precision) if precision else None

    def engine(parameter: str, value: float | None, prior: float) -> float:
        figure = calibrated_figure(accel, parameter)
        return pick(value, prior if figure is None else figure.value)

    return Achieved(
        hbm=pick(eff.hbm, accel.hbm_efficiency),
        tensor=pick(eff.tensor, accel.gemm_efficiency if gemm is None else gemm.value),
        attention=engine("attention_efficiency", eff.attention, accel.attention_efficiency),
        step_overhead_ms=engine("step_overhead_ms", eff.step_overhead_ms, accel.step_overhead_ms),
        allreduce_latency_us=engine("allreduce_latency_us", eff.allreduce_latency_us, accel.allreduce_latency_us),
        scale_up_efficiency=pick(eff.scale_up_efficiency, accel.scale_up_efficiency),
        layer_floor_us=engine("layer_floor_us", eff.layer_floor_us, NOT_FITTED),
        sequence_us=engine("sequence_us", eff.sequence_us, NOT_FITTED),
        gemm_half_tokens=engine("gemm_half_tokens", eff.gemm_half_tokens, NOT_FITTED),
    )
