"""Planner-sized input files: how long `placement rtt --measurements` and `placement calibrate` take on them.

Usage::

    .venv/bin/python benchmarks/bench_inputs.py [--rows 100000]

Generates, in a temporary folder, the files a planner brings at scale and times each command as a whole process
(its imports included):

- pings between the 400 largest GeoNames cities, a fifth of them to points typed as ``lat,lon``;
- pings between random cities of the whole table (~30,000 distinct names);
- pings between random coordinates only (every end distinct);
- measured goodput rows repeating a few configurations (a benchmark run many times: Llama-3.1-405B on H100 and
  DeepSeek-R1 on a GB300 tray), with 5 % noise.

Prints one row per file: rows, distinct ends or configurations, seconds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
CITIES = REPO / "data" / "cities" / "geonames_cities15000.csv"
CONFIGURATIONS = (
    "llama-3.1-405b,h100-sxm,8,fp8,9000,20000,684,6000,175,250",
    "deepseek-r1,gb300,4,fp4,3880,20000,3880,2000,80,11273",
)


def _pings(kind: str, rows: int, rng: np.random.Generator) -> pd.DataFrame:
    cities = pd.read_csv(CITIES, usecols=["name", "countrycode", "population"], keep_default_na=False)
    names = (cities["name"] + ", " + cities["countrycode"]).to_numpy()

    def coordinates(n: int) -> np.ndarray:
        return np.array([f"{a:.4f},{b:.4f}" for a, b in zip(rng.uniform(-45, 65, n), rng.uniform(-125, 150, n), strict=True)])

    if kind == "400 cities":
        top = names[np.argsort(-cities["population"].to_numpy())[:400]]
        a = rng.choice(top, rows)
        b = np.where(rng.random(rows) < 0.8, rng.choice(top, rows), coordinates(rows))
    elif kind == "all cities":
        a, b = rng.choice(names, rows), rng.choice(names, rows)
    else:
        a, b = coordinates(rows), coordinates(rows)
    keep = a != b
    return pd.DataFrame({"from": a[keep], "to": b[keep], "rtt_ms": rng.uniform(5, 300, keep.sum()).round(2)})


def _measured(rows: int, rng: np.random.Generator) -> pd.DataFrame:
    header = "model,accelerator,gpus,precision,input_tokens,input_tokens_max,output_tokens,ttft_p99_ms,itl_p99_ms,tok_s"
    table = pd.DataFrame([c.split(",") for c in CONFIGURATIONS], columns=header.split(","))
    out = table.iloc[np.arange(rows) % len(table)].reset_index(drop=True)
    out["tok_s"] = (out["tok_s"].astype(float) * np.exp(rng.normal(0, 0.05, rows))).round(3)
    return out.assign(point_id=[f"run-{k}" for k in range(rows)], source="bench")


def _timed(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(REPO / "cli.py"), *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'file':40s} {'rows':>9s} {'distinct':>9s} {'seconds':>8s}")
    with tempfile.TemporaryDirectory() as folder:
        for kind in ("400 cities", "all cities", "coordinates"):
            frame = _pings(kind, args.rows, rng)
            path = Path(folder) / "pings.csv"
            frame.to_csv(path, index=False)
            distinct = len(set(frame["from"]) | set(frame["to"]))
            print(
                f"{'rtt --measurements, ' + kind:40s} {len(frame):9,d} {distinct:9,d} {_timed(['rtt', '--measurements', str(path)]):8.1f}"
            )
        path = Path(folder) / "measured.csv"
        _measured(args.rows, rng).to_csv(path, index=False)
        seconds = _timed(["calibrate", str(path), "--quiet"])
        print(f"{'calibrate, repeated configurations':40s} {args.rows:9,d} {len(CONFIGURATIONS):9,d} {seconds:8.1f}")


if __name__ == "__main__":
    main()
