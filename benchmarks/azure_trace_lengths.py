"""Request-length figures of the default scenario's classes, derived from the Azure LLM inference traces (2023).

The traces are reference-only (CC-BY-4.0, Azure Public Dataset; Patel et al., "Splitwise", ISCA 2024): this script
reads them where a checkout has them (``../shared/data/traffic/`` beside the repository) and prints the figures that
``data/scenarios/default.yaml`` and ``data/SOURCES.md`` quote. Nothing here is needed at run time.

Usage::

    .venv/bin/python benchmarks/azure_trace_lengths.py [--traffic DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

TRACES = {"conversation": "AzureLLMInferenceTrace_conv_2023.csv", "code": "AzureLLMInferenceTrace_code_2023.csv"}
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "traffic"


def length_stats(path: Path) -> pd.DataFrame:
    """Mean, median, p90, p99 and max of ContextTokens (prompt) and GeneratedTokens (answer). [tokens]"""
    frame = pd.read_csv(path, usecols=["ContextTokens", "GeneratedTokens"])
    rows = {}
    for column in ("ContextTokens", "GeneratedTokens"):
        s = frame[column]
        rows[column] = {
            "rows": len(s),
            "mean": s.mean(),
            "median": s.median(),
            "p90": s.quantile(0.90),
            "p99": s.quantile(0.99),
            "max": s.max(),
        }
    return pd.DataFrame(rows).T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traffic", type=Path, default=DEFAULT_DIR, help="folder holding the Azure trace CSVs")
    args = parser.parse_args()
    for name, file in TRACES.items():
        path = args.traffic / file
        if not path.is_file():
            print(f"{name}: {path} not found (the traces are reference-only and not shipped)")
            continue
        print(f"\n{name} ({file})")
        print(length_stats(path).round(1).to_string())


if __name__ == "__main__":
    main()
