"""Time ``placement explain`` on the bundled default world, phase by phase, and the CLI end to end.

Usage: .venv/bin/python benchmarks/bench_explain.py [OUTDIR] [--repeat N]

Without OUTDIR, the default world is solved once (``--no-maps``) into a temporary folder first. Prints one
row per repeat: rebuilding the scenario (``load``), the plan's LP with the design fixed (``base LP``), one
re-solve per site (drop it, or force it open and bisect its entry power price), the "what would pay"
section, the in-process total and the wall time of ``python cli.py explain`` in a fresh process (imports
included). Machines here are shared and noisy: compare the rows of one run with each other.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placement.analyses.explain import explain_folder  # noqa: E402


def _solved_folder(tmp: Path) -> Path:
    out = tmp / "out"
    subprocess.run([sys.executable, str(REPO / "cli.py"), "solve", "--out", str(out), "--quiet", "--no-maps"], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return out


def _cli_s(folder: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "explain", str(folder), "--quiet"], check=True, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir", nargs="?", help="a results folder of the default world (default: solve one)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.outdir) if args.outdir else _solved_folder(Path(tmp))
        print(f"{'run':>4} {'load s':>7} {'base LP s':>10} {'sites s':>8} {'pay s':>6} {'total s':>8} {'CLI wall s':>11}  sites")
        for k in range(args.repeat):
            start = time.perf_counter()
            explained = explain_folder(folder)
            total = time.perf_counter() - start
            p = explained.phases_s
            print(
                f"{k + 1:>4} {p['load_s']:>7.2f} {p['base_lp_s']:>10.2f} {p['sites_s']:>8.2f} {p['what_would_pay_s']:>6.2f} "
                f"{total:>8.2f} {_cli_s(folder):>11.2f}  {len(explained.sites)}"
            )


if __name__ == "__main__":
    main()
