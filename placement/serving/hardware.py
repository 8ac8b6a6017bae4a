"""Serving catalogs: model shapes and accelerators, from ``data/serving/*.csv``, checked row by row.

Every figure in the bundled files has a source (``source`` column, ``data/serving/SOURCES_serving.md``).
Loaders gather every problem in a file (row, field, rule, fix) and raise them together.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from placement._errors import InputError, Problem
from placement._validate import Column, Table, missing_columns, numbers, raise_if, read_table, text, unique
from placement.world.bundled import bundled_path

SERVING_DATA = bundled_path("serving")
MODELS_CSV = SERVING_DATA / "models.csv"
ACCELERATORS_CSV = SERVING_DATA / "accelerators.csv"

#: Bytes per weight for each precision the catalogs know.
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}
#: Bytes per KV-cache element: FP4 weights keep an FP8 KV cache (what FP4 deployments ship).
KV_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "fp4": 1.0}


@dataclass(frozen=True)
class ModelSpec:
    """Shape of one open-weight model.

    Parameters
    ----------
    id, name : str
        Catalog id and display name.
    params_total_b, params_active_b : float
        Total parameters and parameters used per token (equal for dense models). [1e9]
    layers, hidden, q_heads : int
        Transformer layers, hidden size and query heads.
    attention : str
        ``"gqa"`` (grouped-query) or ``"mla"`` (multi-head latent attention).
    kv_heads, head_dim : int
        GQA shape (0 for MLA).
    kv_lora_rank, rope_dim : int
        MLA latent shape (0 for GQA).
    experts, experts_per_token : int
        Routed experts and experts per token (0 for dense models).
    precisions : tuple of str
        Weight precisions with public checkpoints or recipes.
    """

    id: str
    name: str
    params_total_b: float
    params_active_b: float
    layers: int
    hidden: int
    q_heads: int
    attention: str
    kv_heads: int
    head_dim: int
    kv_lora_rank: int
    rope_dim: int
    experts: int
    experts_per_token: int
    precisions: tuple[str, ...]

    @property
    def attention_dim(self) -> int:
        """Per-head width an attention score and value read over (absorbed MLA: latent + rope)."""
        return self.kv_lora_rank + self.rope_dim if self.attention == "mla" else self.head_dim


@dataclass(frozen=True)
class AcceleratorSpec:
    """One accelerator and the node it ships in.

    Parameters
    ----------
    id, name : str
        Catalog id and display name.
    hbm_gb : float
        HBM per GPU. [GB]
    hbm_tb_s : float
        Peak HBM bandwidth per GPU. [TB/s]
    tflops : dict of str to float
        Dense tensor throughput per precision (only precisions the silicon supports). [TFLOP/s]
    gpu_w : float
        Board power per GPU. [W]
    gpus_per_node : int
        GPUs in one node (rack for NVL72).
    node_kw : float
        Maximum IT power of one node. [kW]
    node_capex_usd : float
        Purchase price estimate of one node. [USD]
    scale_up_gb_s : float
        Scale-up (NVLink / Infinity Fabric) bandwidth per GPU, each way. [GB/s]
    scale_up_gpus : int
        GPUs in one scale-up domain.
    scale_out_gbit_s : float
        Scale-out NIC bandwidth per GPU. [Gbit/s]
    gemm_efficiency : float
        Achieved fraction of dense tensor peak in large GEMMs (software stack included).
    hbm_efficiency : float
        Achieved fraction of peak HBM bandwidth in decode (η_bw).
    attention_efficiency : float
        Achieved fraction of dense BF16 peak in prefill attention kernels (FlashAttention class).
    allreduce_latency_us : float
        Fixed latency of one tensor-parallel all-reduce on the scale-up fabric. [µs]
    scale_up_efficiency : float
        Achieved fraction of scale-up bandwidth in all-reduce.
    step_overhead_ms : float
        Per-step scheduling, sampling and launch cost of the serving engine. [ms]
    family : str
        Silicon and software family the calibration fits together (``nvidia-hopper``, ``nvidia-blackwell``,
        ``amd-cdna3``, ``amd-cdna4``; ``data/serving/calibration.csv``); blank: the catalog's cited figures only.
    die : str
        The GPU die the part carries (catalog ``die``; blank: the part's own id). Parts that carry one die share its
        calibrated GEMM fraction: the HGX B200, the GB200 tray and the GB200 NVL72 rack run the B200 die.
    allreduce : str
        How the scale-up fabric reduces (catalog ``allreduce``): ``ring`` (each GPU sends ``2(n − 1)/n`` of the
        payload over its links) or ``switch`` (the switch reduces in the network, NVLink SHARP: each GPU sends the
        payload once and receives the sum once).
    """

    id: str
    name: str
    hbm_gb: float
    hbm_tb_s: float
    tflops: dict[str, float]
    gpu_w: float
    gpus_per_node: int
    node_kw: float
    node_capex_usd: float
    scale_up_gb_s: float
    scale_up_gpus: int
    scale_out_gbit_s: float
    gemm_efficiency: float
    hbm_efficiency: float = 0.90
    attention_efficiency: float = 0.50
    allreduce_latency_us: float = 8.0
    scale_up_efficiency: float = 0.80
    step_overhead_ms: float = 3.0
    family: str = ""
    die: str = ""
    allreduce: str = "ring"

    @property
    def silicon(self) -> str:
        """The die whose GEMM fraction this part takes (``die``, else the part's own id)."""
        return self.die or self.id


_MODEL_NUMBERS = {
    "params_total_b": (True, 0.1),
    "params_active_b": (True, 0.1),
    "layers": (True, 1.0),
    "hidden": (True, 1.0),
    "q_heads": (True, 1.0),
    "kv_heads": (False, 1.0),
    "head_dim": (False, 1.0),
    "kv_lora_rank": (False, 1.0),
    "rope_dim": (False, 1.0),
    "experts": (False, 0.0),
    "experts_per_token": (False, 0.0),
}
_ACCEL_NUMBERS = {
    "hbm_gb": (True, 1.0),
    "hbm_tb_s": (True, 0.01),
    "bf16_tflops": (True, 1.0),
    "fp8_tflops": (False, 1.0),
    "fp4_tflops": (False, 1.0),
    "gpu_w": (True, 1.0),
    "gpus_per_node": (True, 1.0),
    "node_kw": (True, 0.01),
    "node_capex_usd": (True, 0.0),
    "scale_up_gb_s": (True, 0.1),
    "scale_up_gpus": (True, 1.0),
    "scale_out_gbit_s": (True, 1.0),
    "gemm_efficiency": (True, 0.05),
    "hbm_efficiency": (True, 0.05),
    "attention_efficiency": (True, 0.05),
    "allreduce_latency_us": (True, 0.0),
    "scale_up_efficiency": (True, 0.05),
    "step_overhead_ms": (True, 0.0),
}
#: Catalog columns that are fractions of a peak (must be <= 1).
_FRACTIONS = ("gemm_efficiency", "hbm_efficiency", "attention_efficiency", "scale_up_efficiency")


def _columns(texts: tuple[str, ...], figures: dict[str, tuple[bool, float]]) -> tuple[Column, ...]:
    """A catalog's columns: required texts, then figures (required or not, with their lower bound)."""
    return tuple(Column(name) for name in texts) + tuple(
        Column(
            name,
            "number",
            required=required,
            low=low,
            high=1.0 if name in _FRACTIONS else None,
            fix="give the figure and its source",
        )
        for name, (required, low) in figures.items()
    )


_MODEL_COLUMNS = _columns(("id", "name", "attention", "precisions", "source"), _MODEL_NUMBERS)
_ACCEL_COLUMNS = (
    *_columns(("id", "name", "source", "efficiency_source"), _ACCEL_NUMBERS),
    Column("family", required=False, may_be_absent=True, help="calibration family (e.g. nvidia-hopper)"),
    Column("die", required=False, may_be_absent=True, help="the GPU die the part carries (e.g. b200 for gb200-nvl72)"),
    Column("allreduce", required=False, may_be_absent=True, help="ring, or switch (in-network reduction, NVLink SHARP)"),
)
ALLREDUCE_KINDS = ("ring", "switch")


def _read(path: Path, columns: tuple[Column, ...]) -> tuple[Table, pd.DataFrame]:
    """The catalog's text and its figures (blank optional figures as 0); InputError lists every problem."""
    table = read_table(path, fix="save it as UTF-8 CSV with a header row")
    problems = missing_columns(table, columns)
    raise_if(problems)
    figures = pd.DataFrame(index=table.cells.index)
    for column in columns:
        if column.kind == "number":
            figures[column.name] = numbers(table, column, problems).fillna(0.0)
        else:
            text(table, column, problems)
    unique(table, "id", problems, what="id", fix="give every row a unique id")
    raise_if(problems)
    return table, figures


def _model_rule_problems(row: pd.Series, num: pd.Series, where: str, path: Path) -> list[Problem]:
    source, found = str(path), []
    attention = str(row["attention"]).strip().lower()
    if attention not in {"gqa", "mla"}:
        found.append(Problem(source, where, "attention", f"must be gqa or mla, got {attention!r}", "write gqa or mla"))
    elif attention == "gqa" and (num["kv_heads"] < 1 or num["head_dim"] < 1):
        found.append(Problem(source, where, "kv_heads", "GQA needs kv_heads and head_dim", "give both"))
    elif attention == "mla" and num["kv_lora_rank"] < 1:
        found.append(Problem(source, where, "kv_lora_rank", "MLA needs kv_lora_rank (and rope_dim)", "give both"))
    if num["params_active_b"] > num["params_total_b"]:
        found.append(Problem(source, where, "params_active_b", "exceeds params_total_b", "check the model card"))
    if num["experts"] > 0 and not 0 < num["experts_per_token"] < num["experts"]:
        found.append(Problem(source, where, "experts_per_token", "must be between 1 and experts - 1", "check the config"))
    unknown = sorted(set(str(row["precisions"]).split()) - set(WEIGHT_BYTES))
    if unknown:
        found.append(Problem(source, where, "precisions", f"unknown {unknown}", f"use {sorted(WEIGHT_BYTES)}"))
    return found


def load_models(path: str | Path = MODELS_CSV) -> dict[str, ModelSpec]:
    """Read and check the model catalog.

    Parameters
    ----------
    path : str or Path
        CSV with the columns of ``data/serving/models.csv``.

    Returns
    -------
    dict of str to ModelSpec
        Models by id.

    Raises
    ------
    InputError
        Every problem in the file: row, field, rule and fix.
    """
    path = Path(path)
    table, num = _read(path, _MODEL_COLUMNS)
    raw = table.cells
    problems: list[Problem] = []
    for k in range(len(raw)):
        problems += _model_rule_problems(raw.iloc[k], num.iloc[k], table.where(k), path)
    raise_if(problems)
    models: dict[str, ModelSpec] = {}
    for k in range(len(raw)):
        row, n = raw.iloc[k], num.iloc[k]
        models[str(row["id"]).strip()] = ModelSpec(
            id=str(row["id"]).strip(),
            name=str(row["name"]).strip(),
            params_total_b=float(n["params_total_b"]),
            params_active_b=float(n["params_active_b"]),
            layers=int(n["layers"]),
            hidden=int(n["hidden"]),
            q_heads=int(n["q_heads"]),
            attention=str(row["attention"]).strip().lower(),
            kv_heads=int(n["kv_heads"]),
            head_dim=int(n["head_dim"]),
            kv_lora_rank=int(n["kv_lora_rank"]),
            rope_dim=int(n["rope_dim"]),
            experts=int(n["experts"]),
            experts_per_token=int(n["experts_per_token"]),
            precisions=tuple(str(row["precisions"]).split()),
        )
    return models


def load_accelerators(path: str | Path = ACCELERATORS_CSV) -> dict[str, AcceleratorSpec]:
    """Read and check the accelerator catalog.

    Parameters
    ----------
    path : str or Path
        CSV with the columns of ``data/serving/accelerators.csv``.

    Returns
    -------
    dict of str to AcceleratorSpec
        Accelerators by id.

    Raises
    ------
    InputError
        Every problem in the file: row, field, rule and fix.
    """
    path = Path(path)
    table, num = _read(path, _ACCEL_COLUMNS)
    raw = table.cells
    out: dict[str, AcceleratorSpec] = {}
    for k in range(len(raw)):
        row, n = raw.iloc[k], num.iloc[k]
        tflops = {p: float(n[f"{p}_tflops"]) for p in WEIGHT_BYTES if float(n[f"{p}_tflops"]) > 0}
        out[str(row["id"]).strip()] = AcceleratorSpec(
            id=str(row["id"]).strip(),
            name=str(row["name"]).strip(),
            hbm_gb=float(n["hbm_gb"]),
            hbm_tb_s=float(n["hbm_tb_s"]),
            tflops=tflops,
            gpu_w=float(n["gpu_w"]),
            gpus_per_node=int(n["gpus_per_node"]),
            node_kw=float(n["node_kw"]),
            node_capex_usd=float(n["node_capex_usd"]),
            scale_up_gb_s=float(n["scale_up_gb_s"]),
            scale_up_gpus=int(n["scale_up_gpus"]),
            scale_out_gbit_s=float(n["scale_out_gbit_s"]),
            gemm_efficiency=float(n["gemm_efficiency"]),
            hbm_efficiency=float(n["hbm_efficiency"]),
            attention_efficiency=float(n["attention_efficiency"]),
            allreduce_latency_us=float(n["allreduce_latency_us"]),
            scale_up_efficiency=float(n["scale_up_efficiency"]),
            step_overhead_ms=float(n["step_overhead_ms"]),
            family=str(row.get("family", "") or "").strip(),
            die=str(row.get("die", "") or "").strip(),
            allreduce=str(row.get("allreduce", "") or "").strip().lower() or "ring",
        )
    raise_if(
        [
            Problem(
                str(path),
                table.where(k),
                "die",
                f"{spec.die!r} is no part of this catalog",
                "name a part's id, or leave it blank",
            )
            for k, spec in enumerate(out.values())
            if spec.die and spec.die not in out
        ]
        + [
            Problem(
                str(path), table.where(k), "allreduce", f"must be ring or switch, got {spec.allreduce!r}", "write ring or switch"
            )
            for k, spec in enumerate(out.values())
            if spec.allreduce not in ALLREDUCE_KINDS
        ]
    )
    return out


@lru_cache(maxsize=1)
def bundled_models() -> dict[str, ModelSpec]:
    """The bundled model catalog (read once)."""
    return load_models(MODELS_CSV)


@lru_cache(maxsize=1)
def bundled_accelerators() -> dict[str, AcceleratorSpec]:
    """The bundled accelerator catalog (read once)."""
    return load_accelerators(ACCELERATORS_CSV)


def _unknown(kind: str, name: str, known: list[str], source: Path) -> InputError:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return InputError([Problem(str(source), "", kind, f"unknown {kind} {name!r}", f"{hint}known: {', '.join(sorted(known))}")])


def get_model(name: str) -> ModelSpec:
    """Look a model up by id in the bundled catalog; InputError lists the known ids."""
    models = bundled_models()
    if name not in models:
        raise _unknown("model", name, list(models), MODELS_CSV)
    return models[name]


def get_accelerator(name: str) -> AcceleratorSpec:
    """Look an accelerator up by id in the bundled catalog; InputError lists the known ids."""
    accelerators = bundled_accelerators()
    if name not in accelerators:
        raise _unknown("accelerator", name, list(accelerators), ACCELERATORS_CSV)
    return accelerators[name]


def kv_bytes_per_token(model: ModelSpec, precision: str) -> float:
    """KV-cache bytes one token adds, all layers.

    GQA: ``2 · layers · kv_heads · head_dim · bytes``; MLA: ``layers · (kv_lora_rank + rope_dim) · bytes``.

    Parameters
    ----------
    model : ModelSpec
        Model shape.
    precision : str
        Weight precision; the KV element size follows :data:`KV_BYTES`.

    Returns
    -------
    float
        KV cache per token. [bytes]
    """
    element = KV_BYTES[precision]
    if model.attention == "mla":
        return float(model.layers * (model.kv_lora_rank + model.rope_dim) * element)
    return float(2 * model.layers * model.kv_heads * model.head_dim * element)


def moe_split_b(model: ModelSpec) -> tuple[float, float]:
    """``(shared, per expert)`` parameters, all layers. [1e9]

    Shared: attention, dense layers, shared experts and embeddings; then one routed expert. A dense model is all
    shared.
    """
    if model.experts == 0:
        return model.params_total_b, 0.0
    e, k = model.experts, model.experts_per_token
    expert_b = (model.params_total_b - model.params_active_b) / (e - k)
    return model.params_active_b - k * expert_b, expert_b


def weight_bytes(model: ModelSpec, precision: str) -> float:
    """Bytes of all weights at a precision. [bytes]"""
    return model.params_total_b * 1e9 * WEIGHT_BYTES[precision]


def weight_bytes_read(model: ModelSpec, precision: str, tokens: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weight bytes one forward step reads for ``tokens`` tokens in flight.

    Dense models read every weight. MoE models read the shared part and the experts that at least
    one token routes to: a fraction ``1 − (1 − k/E)^tokens`` of them (uniform routing).

    Parameters
    ----------
    model : ModelSpec
        Model shape.
    precision : str
        Weight precision.
    tokens : numpy.ndarray
        Tokens in each step (decode batch plus prefill chunk).

    Returns
    -------
    numpy.ndarray
        Bytes read from HBM for weights, per step. [bytes]
    """
    tokens = np.asarray(tokens, dtype=float)
    if model.experts == 0:
        return np.full_like(tokens, weight_bytes(model, precision))
    e, k = model.experts, model.experts_per_token
    shared_b, expert_b = moe_split_b(model)
    touched = 1.0 - (1.0 - k / e) ** np.maximum(tokens, 1.0)
    return np.asarray((shared_b + e * expert_b * touched) * 1e9 * WEIGHT_BYTES[precision])
