"""The exact ratio's figures, from a results folder of a plan with optional serving: for the optimisation page.

Usage::

    .venv/bin/python scripts/dinkelbach_table.py --solve DIR   # solve the example, then print
    .venv/bin/python scripts/dinkelbach_table.py DIR           # print from a folder solved before

The example is the bundled world with ``policy: {serving: optional, min_served_share: 0.9}``: ``--solve`` writes that
scenario beside ``DIR`` (``DIR.yaml``) and runs ``placement solve`` on it, without maps. Printed: the $/M goodput the
plan attains and the least ratio proven, their gap, and each Dinkelbach step (the ratio it tried, the design it found,
its value ``cost - lambda x goodput`` and that value's proven bound) from ``summary.json``; the solve's seconds are
``runtime_s`` (machine-dependent: see ``benchmarks/bench_speed.py`` for timings).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_POLICY = "policy:\n  unreachable: report\n  serving: optional\n  min_served_share: 0.9\n"
"""The example's policy block, in place of the bundled world's."""
USD_PER_H_PER_TOK_S_TO_USD_PER_M = 1e6 / 3600.0
"""A ratio in USD/h per tok/s as USD per million tokens."""


def example_scenario(path: Path) -> Path:
    """Write the bundled world with optional serving to ``path`` (its data paths made absolute)."""
    text = (REPO / "data" / "scenarios" / "default.yaml").read_text(encoding="utf-8").replace("../", f"{REPO / 'data'}/")
    start = text.index("\npolicy:\n") + 1
    end = text.find("\n\n", start)
    block = text[start : len(text) if end < 0 else end + 1]
    path.write_text(text.replace(block, EXAMPLE_POLICY, 1), encoding="utf-8")
    return path


def _per_million(usd_per_h_per_tok_s: float | None) -> str:
    return "" if usd_per_h_per_tok_s is None else f"${usd_per_h_per_tok_s * USD_PER_H_PER_TOK_S_TO_USD_PER_M:.4f}/M"


def rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) pairs of the plan's ratio."""
    steps = summary.get("dinkelbach_iterations") or []
    gap = summary.get("gap")
    return [
        ("cost per million goodput tokens", f"${summary['cost_per_million_goodput_tokens_usd']:.4f}"),
        ("least ratio proven", f"${summary['ratio_bound_usd_per_million_tokens']:.4f}"),
        ("gap (the ratio's)", "" if gap is None else f"{gap * 100:.3f} %"),
        ("Dinkelbach steps", str(len(steps))),
        ("served share of demand", f"{(1 - summary['unserved_share']) * 100:.1f} %"),
        ("sites open", str(summary["sites_open"])),
        ("status, stopped by", f"{summary['status']}, {summary['stopped_by']}"),
    ]


def step_rows(summary: dict[str, Any]) -> list[str]:
    """One Markdown row per Dinkelbach step."""
    out = []
    for k, step in enumerate(summary.get("dinkelbach_iterations") or [], start=1):
        bound = step.get("value_bound_usd_per_h")
        out.append(
            f"| {k} | {_per_million(step['lambda_usd_per_tok_s'])} | ${step['cost_usd_per_h']:,.0f}/h | "
            f"{step['goodput_tok_s']:,.0f} | {step['value_usd_per_h']:,.1f} | {'' if bound is None else f'{bound:,.1f}'} | "
            f"{_per_million(step.get('ratio_bound_usd_per_tok_s'))} |"
        )
    return out


def table(summary: dict[str, Any]) -> str:
    """The two Markdown tables: the plan's ratio, then its steps."""
    lines = ["| figure | value |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows(summary)), ""]
    lines += [
        "| step | ratio tried | cost | goodput tok/s | value $/h | value bound $/h | ratio proven |",
        "|---|---|---|---|---|---|---|",
        *step_rows(summary),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    solve = argv[:1] == ["--solve"]
    args = argv[1:] if solve else argv
    if len(args) != 1:
        print("usage: scripts/dinkelbach_table.py [--solve] DIR")
        return 2
    folder = Path(args[0])
    if solve:
        scenario = example_scenario(folder.with_suffix(".yaml"))
        command = [sys.executable, str(REPO / "cli.py"), "solve", str(scenario), "--out", str(folder), "--no-maps", "--quiet"]
        done = subprocess.run(command, check=False, stdout=subprocess.DEVNULL)  # the plan's own summary: not the table
        if done.returncode != 0:
            return done.returncode
    summary_path = folder / "summary.json"
    if not summary_path.is_file():
        print(f"{folder} has no summary.json: solve it first (scripts/dinkelbach_table.py --solve {folder})")
        return 2
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    if not summary.get("dinkelbach_iterations"):
        print(f"{folder}'s plan has no Dinkelbach steps: its scenario does not make serving optional")
        return 2
    print(table(summary), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
