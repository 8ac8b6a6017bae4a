"""Measured serving points: published (or a planner's own) goodput of a node inside stated latency limits.

A measured point is one run: a model on a node of ``gpus`` accelerators at a weight precision, a workload
(mean and longest prompt, mean answer), the p99 TTFT and p99 inter-token limits it held, and the generated
tokens per second it completed. The bundled file, ``data/serving/measured.csv``, holds the MLPerf Inference
Llama-2-70B Server and Interactive results of the accelerators the catalog has (``scripts/build_measured.py``
builds it, each row with its source); a planner's own file has the same columns (``serving.measurements``,
``placement calibrate FILE``). Every problem in a file is gathered (row, field, rule, fix).

A row's ``use`` is ``fit`` (the default: the calibration fits it) or ``check`` (published, but not a goodput
inside latency limits of the benchmark the fit is for: the TensorRT-LLM and AMD throughput tables, run with every
prompt submitted at once and no limit; ``benchmarks/validate_serving.py`` reports them, nothing fits them).
``tp`` is the tensor-parallel degree the run used where the source states it (blank: the model searches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from placement._errors import Problem
from placement._validate import Column, missing_columns, numbers, raise_if, read_table, require_rows, text
from placement.serving.efficiency import MEASURED_CSV
from placement.serving.hardware import WEIGHT_BYTES, bundled_accelerators, bundled_models
from placement.serving.request import ServingRequest

__all__ = ["MEASURED_CSV", "MeasuredPoint", "load_measured", "median_points"]


_COLUMNS = (
    Column("point_id", help="point id (any unique label)"),
    Column("model", help="model id of data/serving/models.csv"),
    Column("accelerator", help="accelerator id of data/serving/accelerators.csv"),
    Column("gpus", "number", low=1, whole=True, help="accelerators in the node measured"),
    Column("precision", help="weight precision (fp8, fp4, bf16)"),
    Column("input_tokens", "number", low=1, help="mean prompt length [tokens]"),
    Column("input_tokens_max", "number", required=False, low=1, may_be_absent=True, help="longest prompt [tokens]"),
    Column("output_tokens", "number", low=1, help="mean generated tokens per request"),
    Column("ttft_p99_ms", "number", low=1, help="p99 TTFT limit the run held [ms]"),
    Column("itl_p99_ms", "number", low=0.1, help="p99 inter-token (TPOT) limit the run held [ms]"),
    Column("tok_s", "number", low=0.001, help="generated tokens per second the node completed"),
    Column("source", help="where the figure was published (or who measured it)"),
    Column("round", required=False, may_be_absent=True),
    Column("submitter", required=False, may_be_absent=True),
    Column("system", required=False, may_be_absent=True),
    Column("software", required=False, may_be_absent=True),
    Column("scenario", required=False, may_be_absent=True),
    Column("tp", "number", required=False, low=1, whole=True, may_be_absent=True, help="tensor-parallel degree used"),
    Column("use", required=False, may_be_absent=True, help="fit (default) or check"),
    Column("ttft_p99_measured_ms", "number", required=False, low=0.0, may_be_absent=True, help="p99 TTFT the run measured"),
    Column("tpot_p99_measured_ms", "number", required=False, low=0.0, may_be_absent=True, help="p99 TPOT the run measured"),
)
USES = ("fit", "check")
"""What a row is for: fitted by the calibration, or a published check that nothing fits."""


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured run (a row of ``measured.csv``).

    Parameters
    ----------
    point_id : str
        The row's label.
    model, accelerator : str
        Catalog ids.
    gpus : int
        Accelerators in the node measured.
    precision : str
        Weight precision.
    input_tokens, output_tokens : float
        Mean prompt and answer. [tokens]
    input_tokens_max : float or None
        Longest prompt (None: the mean). [tokens]
    ttft_p99_ms, itl_p99_ms : float
        The latency limits the run held. [ms]
    tok_s : float
        Generated tokens per second the node completed inside them.
    system, round, software, scenario, source : str
        What was measured and where it was published.
    tp : int or None
        Tensor-parallel degree the run used, where the source states it.
    use : str
        ``fit`` or ``check``.
    ttft_p99_measured_ms, tpot_p99_measured_ms : float or None
        The p99 TTFT and TPOT the run itself logged (below its limits), where the source gives them. [ms]
    """

    point_id: str
    model: str
    accelerator: str
    gpus: int
    precision: str
    input_tokens: float
    output_tokens: float
    input_tokens_max: float | None
    ttft_p99_ms: float
    itl_p99_ms: float
    tok_s: float
    system: str = ""
    round: str = ""
    software: str = ""
    scenario: str = ""
    source: str = ""
    tp: int | None = None
    use: str = "fit"
    ttft_p99_measured_ms: float | None = None
    tpot_p99_measured_ms: float | None = None

    def request(self) -> ServingRequest:
        """The serving model's question for this run: the same node, workload and limits."""
        return ServingRequest(
            self.model,
            self.accelerator,
            self.gpus,
            self.precision,
            round(self.input_tokens),
            round(self.output_tokens),
            self.ttft_p99_ms,
            self.itl_p99_ms,
            input_tokens_max=None if self.input_tokens_max is None else round(self.input_tokens_max),
            tp=self.tp,
        )


def load_measured(path: str | Path = MEASURED_CSV, *, use: str = "fit") -> list[MeasuredPoint]:
    """Read and check a file of measured points.

    Parameters
    ----------
    path : str or Path
        CSV with the columns of ``data/serving/measured.csv`` (``round``, ``submitter``, ``system``,
        ``software``, ``scenario``, ``input_tokens_max``, ``tp`` and ``use`` may be left out).
    use : {"fit", "check"}
        Which rows to return: those to fit (the default), or the published checks. Every row is checked either way.

    Returns
    -------
    list of MeasuredPoint
        In file order.

    Raises
    ------
    InputError
        Every problem in the file: row, field, rule and fix (unknown model or accelerator ids with close ones, a
        precision the accelerator lacks, a node larger than the accelerator's, a longest prompt below the mean).
    """
    path = Path(path)
    table = read_table(path, fix="save it as UTF-8 CSV with a header row (the columns of data/serving/measured.csv)")
    problems = missing_columns(table, _COLUMNS)
    raise_if(problems)
    require_rows(table, "give one row per measured point")
    series = {c.name: (numbers(table, c, problems) if c.kind == "number" else text(table, c, problems)) for c in _COLUMNS}
    cells = {name: column.tolist() for name, column in series.items()}  # plain lists: a row is read in microseconds
    source = str(path)
    for k in range(len(table.cells)):
        where = table.where(k)
        problems.extend(node_problems(cells, k, source, where))
        row_use = str(cells["use"][k]).strip()
        if row_use not in ("", *USES):
            problems.append(Problem(source, where, "use", f"unknown use {row_use!r}", "give fit, check or leave it blank (fit)"))
        longest, mean = cells["input_tokens_max"][k], cells["input_tokens"][k]
        if pd.notna(longest) and pd.notna(mean) and longest < mean:
            rule = "is below input_tokens (the mean)"
            problems.append(Problem(source, where, "input_tokens_max", rule, "give the longest prompt"))
    ids = series["point_id"]
    for k in np.flatnonzero(ids.duplicated().to_numpy()).tolist():
        rule = f"{ids.iloc[k]!r} appears twice"
        problems.append(Problem(source, table.where(k), "point_id", rule, "give every row its own id"))
    raise_if(problems)
    return [point for k in range(len(table.cells)) if (point := _point(cells, k)).use == use]


def node_problems(cells: Mapping[str, Sequence[Any]], k: int, source: str, where: str) -> list[Problem]:
    """Row ``k``'s model, accelerator, precision and node size against the catalogs (both measurement formats).

    Parameters
    ----------
    cells : dict
        The file's parsed columns (``model``, ``accelerator``, ``precision``, ``gpus`` among them).
    k : int
        The row.
    source, where : str
        The file and the row's label, for the problems.

    Returns
    -------
    list of Problem
        An unknown model or accelerator, a precision the part lacks, more GPUs than one node has.
    """
    models, accelerators = bundled_models(), bundled_accelerators()
    model, accel, precision = (str(cells[name][k]).strip() for name in ("model", "accelerator", "precision"))
    problems = []
    if model and model not in models:
        problems.append(Problem(source, where, "model", f"unknown model {model!r}", f"use one of {', '.join(models)}"))
    if accel and accel not in accelerators:
        known = ", ".join(accelerators)
        problems.append(Problem(source, where, "accelerator", f"unknown accelerator {accel!r}", f"use one of {known}"))
    elif accel:
        spec = accelerators[accel]
        if precision and (precision not in WEIGHT_BYTES or precision not in spec.tflops):
            supported = ", ".join(sorted(spec.tflops))
            rule = f"{accel} has no {precision!r} tensor throughput in the catalog"
            problems.append(Problem(source, where, "precision", rule, f"use one of {supported}"))
        gpus = cells["gpus"][k]
        if pd.notna(gpus) and gpus > spec.gpus_per_node:
            rule = f"{int(gpus)} GPUs is more than one {accel} node ({spec.gpus_per_node})"
            problems.append(Problem(source, where, "gpus", rule, "give one node's figure (divide a cluster's by its nodes)"))
    return problems


def _point(cells: Mapping[str, Sequence[Any]], k: int) -> MeasuredPoint:
    def word(name: str) -> str:
        return str(cells[name][k]).strip()

    longest, tp = cells["input_tokens_max"][k], cells["tp"][k]
    return MeasuredPoint(
        point_id=word("point_id"),
        model=word("model"),
        accelerator=word("accelerator"),
        gpus=int(cells["gpus"][k]),
        precision=word("precision"),
        input_tokens=float(cells["input_tokens"][k]),
        output_tokens=float(cells["output_tokens"][k]),
        input_tokens_max=None if pd.isna(longest) else float(longest),
        ttft_p99_ms=float(cells["ttft_p99_ms"][k]),
        itl_p99_ms=float(cells["itl_p99_ms"][k]),
        tok_s=float(cells["tok_s"][k]),
        system=word("system"),
        round=word("round"),
        software=word("software"),
        scenario=word("scenario"),
        source=word("source"),
        tp=None if pd.isna(tp) else int(tp),
        use=word("use") or "fit",
        ttft_p99_measured_ms=_optional(cells["ttft_p99_measured_ms"][k]),
        tpot_p99_measured_ms=_optional(cells["tpot_p99_measured_ms"][k]),
    )


def _optional(value: float) -> float | None:
    """A blank number cell as None."""
    return None if pd.isna(value) else float(value)


def _median(values: list[float | None]) -> float | None:
    """The median of the values given (None when none is)."""
    given = [v for v in values if v is not None]
    return float(np.median(given)) if given else None


def median_points(points: list[MeasuredPoint], *, latest_round_only: bool = True) -> list[MeasuredPoint]:
    """One point per configuration (model, accelerator, GPUs, precision, workload, limits): the median run.

    Many systems of one accelerator run the same software on the same silicon and land within a few per cent;
    fitting their median weighs each configuration once, not each submitter. With ``latest_round_only`` a
    configuration keeps only its latest round (the current software generation); older rounds are checks.

    Parameters
    ----------
    points : list of MeasuredPoint
        The runs.
    latest_round_only : bool, optional
        Keep only each configuration's latest round (rounds compare as text: ``v4.1 < v5.0 < v5.1``).

    Returns
    -------
    list of MeasuredPoint
        The median run of each configuration (``point_id`` joins the runs' ids with ``+`` when several).
    """
    groups: dict[tuple[object, ...], list[MeasuredPoint]] = {}
    for p in points:
        key = (p.model, p.accelerator, p.gpus, p.precision, p.input_tokens, p.input_tokens_max, p.ttft_p99_ms, p.itl_p99_ms)
        groups.setdefault(key, []).append(p)
    out = []
    for runs in groups.values():
        if latest_round_only:
            latest = max(r.round for r in runs)
            runs = [r for r in runs if r.round == latest]
        figures = sorted(runs, key=lambda r: r.tok_s)
        mid = figures[len(figures) // 2]
        tok_s = float(np.median([r.tok_s for r in runs]))
        out_tokens = float(np.median([r.output_tokens for r in runs]))
        label = "+".join(r.point_id for r in runs) if len(runs) <= 3 else f"{runs[0].point_id}+{len(runs) - 1} more"
        out.append(
            MeasuredPoint(
                label,
                mid.model,
                mid.accelerator,
                mid.gpus,
                mid.precision,
                mid.input_tokens,
                out_tokens,
                mid.input_tokens_max,
                mid.ttft_p99_ms,
                mid.itl_p99_ms,
                tok_s,
                system=f"median of {len(runs)} system(s)",
                round=mid.round,
                software=mid.software,
                scenario=mid.scenario,
                source=mid.source,
                ttft_p99_measured_ms=_median([r.ttft_p99_measured_ms for r in runs]),
                tpot_p99_measured_ms=_median([r.tpot_p99_measured_ms for r in runs]),
            )
        )
    return out
