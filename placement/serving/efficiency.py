"""Achieved efficiencies of the serving model: the catalog's cited values, their overrides, and the calibration.

Every efficiency the step times use (η_bw, η_c, η_a, all-reduce latency and bandwidth share, step overhead) is a
column of ``data/serving/accelerators.csv`` with its source; :class:`ServingEfficiency` overrides any of them for a
what-if or a fit, and :func:`achieved` resolves the two into the figures in force for one accelerator.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.serving.hardware import AcceleratorSpec


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
        Per-step fixed cost: scheduling, sampling, kernel launches (catalog ``step_overhead_ms``). [ms]
    allreduce_latency_us : float, optional
        Fixed latency of one all-reduce on the scale-up fabric (catalog ``allreduce_latency_us``). [µs]
    scale_up_efficiency : float, optional
        Achieved fraction of scale-up bandwidth in all-reduce (catalog ``scale_up_efficiency``).
    activation_reserve : float
        Fraction of HBM kept for activations, workspace and fragmentation.
    max_batch : int
        Largest decode batch an engine runs per replica.
    service_cv2 : float
        Squared coefficient of variation of prefill service time (1: exponential; prompts vary).
    """

    hbm: float | None = None
    tensor: float | None = None
    attention: float | None = None
    step_overhead_ms: float | None = None
    allreduce_latency_us: float | None = None
    scale_up_efficiency: float | None = None
    activation_reserve: float = 0.10
    max_batch: int = 4096
    service_cv2: float = 1.0


#: The catalog's efficiencies as they stand (``benchmarks/validate_serving.py`` prints the fit): η_bw, η_c, η_a,
#: all-reduce latency and bandwidth share are held at cited mid-band values per accelerator family; only the
#: per-step overhead was fitted, on the DESIGN.md rows (MLPerf H100 Server / Interactive, H200 Interactive,
#: TensorRT-LLM v0.13 table), with MLPerf's measured prompt distribution.
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


def achieved(accel: AcceleratorSpec, eff: ServingEfficiency) -> Achieved:
    """Resolve the efficiencies for ``accel``: each ``None`` in ``eff`` takes the catalog's cited value."""

    def pick(value: float | None, default: float) -> float:
        return default if value is None else value

    return Achieved(
        hbm=pick(eff.hbm, accel.hbm_efficiency),
        tensor=pick(eff.tensor, accel.gemm_efficiency),
        attention=pick(eff.attention, accel.attention_efficiency),
        step_overhead_ms=pick(eff.step_overhead_ms, accel.step_overhead_ms),
        allreduce_latency_us=pick(eff.allreduce_latency_us, accel.allreduce_latency_us),
        scale_up_efficiency=pick(eff.scale_up_efficiency, accel.scale_up_efficiency),
    )
