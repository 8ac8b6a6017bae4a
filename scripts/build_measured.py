"""Build ``data/serving/measured.csv`` from the MLPerf Llama-2-70B results in ``../shared/data/serving/``.

Run by a developer when the shared file changes (the project never reads ``../shared`` at run time)::

    .venv/bin/python scripts/build_measured.py [SHARED_CSV]

Kept: closed-division Server and Interactive results of accelerators the catalog has (H100 SXM, H200 SXM, B200,
GB200, MI300X, MI325X), on one node of the catalog's size. Dropped, with the reason printed: Offline (no latency
limit, so not a goodput inside an objective), multi-node systems, single-GPU runs, parts the catalog lacks
(H100 NVL/PCIe, H200 NVL, GH200, L40S, RTX PRO 6000, Arc), virtualised and CTS (confidential) variants,
and the ``-99.9`` twin of a ``-99`` result of the same run (MLPerf reports one run twice; the SOURCES note).

Precision: the file's ``weight_data_types``; v4.1 NVIDIA rows that say fp16 run FP8 (the SOURCES note), and
v5.0 rows without a precision take the submitter's round default (NVIDIA Hopper FP8, AMD FP8, Blackwell FP4:
the v5.0 B200 and GB200 submissions are FP4, as NVIDIA's v5.0 results brief states).

Appended: DESIGN.md section 3's v5.0 Dell XE9680 H100 Interactive row (12,979 tok/s), which the shared file's
partial v5.0 set lacks.

Workload (DESIGN.md section 3): OpenOrca prompts mean 222, longest 1,021 tokens; generated tokens per sample as
reported (else 290); Server p99 TTFT 2,000 ms / TPOT 200 ms, Interactive 450 / 40 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "serving" / "mlperf_llama2_70b_results.csv"
SHARED_OTHER = SHARED.with_name("mlperf_other_models_results.csv")
OUT = ROOT / "data" / "serving" / "measured.csv"

#: Catalog id of each accelerator name in the file (only the parts the catalog has), and the catalog's node size.
ACCELERATORS = {
    "NVIDIA H100-SXM-80GB": ("h100-sxm", 8),
    "NVIDIA H200-SXM-141GB": ("h200", 8),
    "NVIDIA B200-SXM-180GB": ("b200", 8),
    "NVIDIA GB200": ("gb200", 4),
    "AMD Instinct MI300X-NPS1-SPX-192GB-750W": ("mi300x", 8),
    "AMD Instinct MI300X 192GB HBM3": ("mi300x", 8),
    "AMD MI300X-NPS1-SPX-192GB-750W": ("mi300x", 8),
    "AMD Instinct MI325X 256GB HBM3E": ("mi325x", 8),
    "AMD Instinct MI325X 256GB HBM3e": ("mi325x", 8),
    "AMD Instinct MI325X (system name)": ("mi325x", 8),
}
LIMITS = {"Server": (2000.0, 200.0), "Interactive": (450.0, 40.0)}
#: DESIGN.md section 3's calibration rows that the shared file lacks (its v5.0 set is partial), appended last.
DESIGN_ROWS = [
    {
        "point_id": "design-v5.0-h100-interactive",
        "round": "v5.0",
        "submitter": "Dell",
        "system": "Dell XE9680 (8x H100-SXM-80GB)",
        "model": "llama-2-70b",
        "accelerator": "h100-sxm",
        "gpus": 8,
        "precision": "fp8",
        "software": "",
        "scenario": "Interactive",
        "input_tokens": 222,
        "input_tokens_max": 1021,
        "output_tokens": 290,
        "ttft_p99_ms": 450.0,
        "itl_p99_ms": 40.0,
        "tok_s": 12979.0,
        "source": "MLCommons MLPerf Inference v5.0 (Dell), llama2-70b-interactive, as quoted in DESIGN.md section 3",
    }
]
#: Published throughput tables the serving model is checked on but never fitted on (``use`` = ``check``): every
#: prompt submitted at once, no latency limit (``NO_LIMIT_MS``), fixed lengths, the stated TP.
NO_LIMIT_MS = 1e9
TRTLLM_V013 = {  # DESIGN.md section 3: TensorRT-LLM v0.13 performance overview, Llama-2-70B FP8, output tok/s
    (128, 128): (16385, 17060, 6433, 3969),
    (128, 2048): (17715, 19220, 5775, 3743),
    (2048, 128): (2010, 2061, 742, 459),
    (2048, 2048): (8016, 10349, 2551, 1911),
    (500, 2000): (15260, 16789, 4463, 3019),
}
TRTLLM_NODES = (("h100-sxm", 8), ("h200", 8), ("h100-sxm", 2), ("h200", 1))
AMD_VLLM = {(128, 2048): 16581.5, (128, 4096): 13667.3, (500, 2000): 13367.1, (2048, 2048): 8352.6}
AMD_VLLM_SOURCE = (
    "AMD ROCm performance results, vLLM throughput 8 x MI300X, Llama-3.1-70B FP8 (KV FP8), TP8 "
    "(rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605; amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html, "
    "read 2026-12)"
)


def _check(point_id: str, accelerator: str, gpus: int, model: str, lengths: tuple[int, int], tok_s: float, **what: str) -> dict:
    n_in, n_out = lengths
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        point_id=point_id,
        model=model,
        accelerator=accelerator,
        gpus=gpus,
        precision="fp8",
        scenario="Offline (no limit)",
        input_tokens=n_in,
        input_tokens_max=n_in,
        output_tokens=n_out,
        ttft_p99_ms=NO_LIMIT_MS,
        itl_p99_ms=NO_LIMIT_MS,
        tok_s=tok_s,
        tp=gpus,
        use="check",
        **what,
    )
    return row


def check_rows() -> list[dict]:
    """The TensorRT-LLM v0.13 and AMD vLLM throughput tables as ``check`` rows."""
    rows = [
        _check(
            f"trtllm-v0.13-{acc}-x{gpus}-{n_in}-{n_out}",
            acc,
            gpus,
            "llama-2-70b",
            (n_in, n_out),
            figures[k],
            submitter="NVIDIA",
            system=f"{gpus}x {acc}",
            software="TensorRT-LLM v0.13",
            source="NVIDIA TensorRT-LLM v0.13 performance overview (in-flight batching, max throughput), "
            "as quoted in DESIGN.md section 3",
        )
        for (n_in, n_out), figures in TRTLLM_V013.items()
        for k, (acc, gpus) in enumerate(TRTLLM_NODES)
    ]
    rows += [
        _check(
            f"amd-vllm-0.9-mi300x-x8-{n_in}-{n_out}",
            "mi300x",
            8,
            "llama-3.1-70b",
            (n_in, n_out),
            tok_s,
            submitter="AMD",
            system="8x MI300X",
            software="vLLM 0.9.0.1, ROCm 6.4.1",
            source=AMD_VLLM_SOURCE,
        )
        for (n_in, n_out), tok_s in AMD_VLLM.items()
    ]
    return rows


COLUMNS = [
    "point_id",
    "round",
    "submitter",
    "system",
    "model",
    "accelerator",
    "gpus",
    "precision",
    "software",
    "scenario",
    "input_tokens",
    "input_tokens_max",
    "output_tokens",
    "ttft_p99_ms",
    "itl_p99_ms",
    "tok_s",
    "source",
    "tp",
    "use",
    "ttft_p99_measured_ms",
    "tpot_p99_measured_ms",
]


def _ms(nanoseconds: object) -> float | str:
    """A latency the run logged, in ms (blank where the source has none)."""
    value = pd.to_numeric(nanoseconds, errors="coerce")
    return "" if pd.isna(value) else round(float(value) / 1e6, 3)


def _precision(row: pd.Series, accelerator: str) -> str:
    stated = str(row["precision"]).lower() if isinstance(row["precision"], str) else ""
    if stated == "fp4" or accelerator in ("b200", "gb200", "b300", "gb300"):
        return "fp4"
    return "fp8"  # fp8 as stated; v4.1 "fp16" runs FP8; v5.0 blank rows of Hopper and AMD are FP8


def _scenario(row: pd.Series) -> str:
    # v5.0 reports the interactive benchmark as its own benchmark with scenario "Server".
    return "Interactive" if "interactive" in str(row["benchmark"]) else str(row["scenario"])


def build(shared: Path) -> pd.DataFrame:
    """The measured points: one row per run kept."""
    raw = pd.read_csv(shared)
    kept, dropped = [], {}
    for _, row in raw.iterrows():
        scenario = _scenario(row)
        name = str(row["accelerator"])
        if scenario not in LIMITS:
            dropped["Offline (no latency limit)"] = dropped.get("Offline (no latency limit)", 0) + 1
            continue
        if name not in ACCELERATORS:
            dropped[f"not in the catalog: {name}"] = dropped.get(f"not in the catalog: {name}", 0) + 1
            continue
        accelerator, node = ACCELERATORS[name]
        if int(row["accelerators"]) != node:
            dropped["not one node of the catalog's size"] = dropped.get("not one node of the catalog's size", 0) + 1
            continue
        ttft, itl = LIMITS[scenario]
        per_sample = row["tokens_per_sample"]
        kept.append(
            {
                "round": row["round"],
                "submitter": row["submitter"],
                "system": row["system"],
                "model": "llama-2-70b",
                "accelerator": accelerator,
                "gpus": node,
                "precision": _precision(row, accelerator),
                "software": row["software"] if isinstance(row["software"], str) else "",
                "scenario": scenario,
                "input_tokens": 222,
                "input_tokens_max": 1021,
                "output_tokens": round(float(per_sample)) if pd.notna(per_sample) else 290,
                "ttft_p99_ms": ttft,
                "itl_p99_ms": itl,
                "tok_s": float(row["tokens_per_s"]),
                "source": f"MLCommons MLPerf Inference {row['round']} ({row['submitter']}), {row['benchmark']}: "
                + str(row["source"]),
                "_accuracy": 0 if str(row["benchmark"]).endswith("-99") else 1,
            }
        )
    frame = pd.DataFrame(kept)
    # One run reported as -99 and -99.9: keep the -99 row (the same system, scenario and figure within 0.5 %).
    frame = frame.sort_values(["round", "submitter", "system", "scenario", "_accuracy"], kind="stable")
    twin = frame.duplicated(["round", "submitter", "system", "scenario"], keep="first")
    dropped["-99.9 twin of a -99 result"] = int(twin.sum())
    frame = frame[~twin].drop(columns="_accuracy").reset_index(drop=True)
    frame.insert(0, "point_id", [f"mlperf-{r}-{k:03d}" for k, r in enumerate(frame["round"])])
    frame = pd.concat([frame, pd.DataFrame(DESIGN_ROWS)], ignore_index=True).assign(tp="", use="fit")
    frame = pd.concat([frame, pd.DataFrame(check_rows())], ignore_index=True)
    for reason, n in sorted(dropped.items()):
        print(f"dropped {n:4d}: {reason}")
    return frame.reindex(columns=COLUMNS)


#: The other MLPerf LLM benchmarks (``mlperf_other_models_workloads.md`` beside the shared file, every figure sourced
#: there): catalog model id, mean and longest prompt (the dataset's per-sample statistics), and the p99 TTFT / TPOT
#: limits per scenario. The answer is each run's own generated tokens per sample.
OTHER_BENCHMARKS = {
    "llama3.1-405b": ("llama-3.1-405b", 9429, 19988, {"Server": (6000.0, 175.0), "Interactive": (4500.0, 80.0)}),
    "llama3.1-8b": ("llama-3.1-8b", 871, 2540, {"Server": (2000.0, 100.0), "Interactive": (500.0, 30.0)}),
    "deepseek-r1": ("deepseek-r1", 804, 3140, {"Server": (2000.0, 80.0), "Interactive": (1500.0, 15.0)}),
}
#: Catalog id and node size of each accelerator of the other models' file. A GB200 or GB300 NVL72 system is one
#: rack (the catalog's 72-GPU node); a smaller Grace-Blackwell system is counted in 4-GPU compute trays.
OTHER_ACCELERATORS = {
    "NVIDIA H100-SXM-80GB": ("h100-sxm", 8),
    "NVIDIA H200-SXM-141GB": ("h200", 8),
    "NVIDIA B200-SXM-180GB": ("b200", 8),
    "NVIDIA GB200": ("gb200", 4),
    "NVIDIA GB300": ("gb300", 4),
}
RACKS = {"gb200": "gb200-nvl72", "gb300": "gb300-nvl72"}


def other_model_rows(shared: Path) -> pd.DataFrame:
    """The Server and Interactive results of Llama-3.1-405B, Llama-3.1-8B and DeepSeek-R1, one node's figure each.

    A run over several nodes of the catalog's size counts as that many nodes (its tokens/s divided among them):
    the serving model plans one node. Rows without the run's own tokens per sample are dropped (the answer length
    is the workload).
    """
    raw = pd.read_csv(shared)
    kept, dropped = [], {}
    for _, row in raw.iterrows():
        bench = str(row["benchmark"]).removesuffix("-interactive")
        scenario = "Interactive" if str(row["benchmark"]).endswith("-interactive") else str(row["scenario"])
        name = str(row["accelerator"])
        reason = ""
        if bench not in OTHER_BENCHMARKS or scenario not in OTHER_BENCHMARKS[bench][3]:
            reason = "Offline (no latency limit)" if scenario == "Offline" else f"no limits for {bench} {scenario}"
        elif name not in OTHER_ACCELERATORS:
            reason = f"not in the catalog: {name}"
        elif pd.isna(row["tokens_per_sample"]):
            reason = "no tokens per sample"
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        model, mean_in, max_in, limits = OTHER_BENCHMARKS[bench]
        accelerator, node = OTHER_ACCELERATORS[name]
        gpus = int(row["accelerators"])
        if gpus == 72 and accelerator in RACKS:
            accelerator, node = RACKS[accelerator], 72
        if gpus < node:  # a part of one node (Llama-3.1-8B on one H100): its own figure
            node = gpus
        if gpus % node:
            dropped["not whole nodes of the catalog's size"] = dropped.get("not whole nodes of the catalog's size", 0) + 1
            continue
        nodes = gpus // node
        ttft, itl = limits[scenario]
        kept.append(
            {
                "round": row["round"],
                "submitter": row["submitter"],
                "system": row["system"] + (f" (1 of {nodes} nodes)" if nodes > 1 else ""),
                "model": model,
                "accelerator": accelerator,
                "gpus": node,
                "precision": _precision(row, accelerator.removesuffix("-nvl72")),
                "software": row["framework"] if isinstance(row["framework"], str) else "",
                "scenario": scenario,
                "input_tokens": mean_in,
                "input_tokens_max": max_in,
                "output_tokens": round(float(row["tokens_per_sample"])),
                "ttft_p99_ms": ttft,
                "itl_p99_ms": itl,
                "tok_s": round(float(row["tokens_per_s"]) / nodes, 2),
                # what the run itself measured (the logs' p99s), beside the limits it held
                "ttft_p99_measured_ms": _ms(row["ttft_p99_ns"]),
                "tpot_p99_measured_ms": _ms(row["tpot_p99_ns"]),
                "source": f"MLCommons MLPerf Inference {row['round']} ({row['submitter']}), {row['benchmark']}: "
                + str(row["source"])
                + (f"; tokens/s of {nodes} nodes divided by {nodes}" if nodes > 1 else ""),
            }
        )
    for reason, n in sorted(dropped.items()):
        print(f"other models, dropped {n:4d}: {reason}")
    frame = pd.DataFrame(kept)
    labels = zip(frame["round"], frame["model"], strict=True)
    frame.insert(0, "point_id", [f"mlperf-{r}-{m}-{k:03d}" for k, (r, m) in enumerate(labels)])
    # Fitted: the calibration in force (benchmarks/calibrate_serving.py) is fitted on every model's points jointly.
    return frame.assign(tp="", use="fit")


def main(argv: list[str]) -> None:
    shared = Path(argv[0]) if argv else SHARED
    frame = build(shared)
    frame = pd.concat([frame, other_model_rows(SHARED_OTHER)[COLUMNS]], ignore_index=True)
    frame.to_csv(OUT, index=False)
    print(f"{len(frame)} measured points in {OUT}")
    print(frame.groupby(["accelerator", "precision", "scenario", "round"]).agg(n=("tok_s", "size"), median=("tok_s", "median")))


if __name__ == "__main__":
    main(sys.argv[1:])
