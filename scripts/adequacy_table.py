"""The 24x7 guide's expected-unserved-goodput table, from results folders: regenerated, not pasted.

Usage::

    placement solve default --out DIR1
    placement solve world-24x7 --out DIR2
    .venv/bin/python scripts/adequacy_table.py DIR1 DIR2

Runs ``placement adequacy DIR --json --years 2000 --seed 0`` on each folder at the default threshold (0.1 %) and at
0.01 % (which adds the adequacy figures to the folder, as the command does), and prints one Markdown row per folder.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

from placement.cli import main as placement

YEARS, SEED = 2000, 0
THRESHOLDS = (0.001, 0.0001)
"""The two thresholds of a year's loss the table gives the probability of (a share of the plan's goodput)."""

HEADER = (
    "| plan | expected unserved goodput a year | share ± standard error | P(year loses > 0.1 %) | P(year loses > 0.01 %) "
    "| CVaR 95 % |",
    "|---|---|---|---|---|---|",
)


def adequacy(folder: Path, threshold: float) -> dict[str, Any]:
    """``placement adequacy FOLDER --json`` at ``threshold``: its figures."""
    out = io.StringIO()
    args = ["adequacy", str(folder), "--json", "--years", str(YEARS), "--seed", str(SEED), "--threshold", str(threshold)]
    with contextlib.redirect_stdout(out):
        code = placement(args)
    if code != 0:
        raise SystemExit(f"placement adequacy {folder} failed (exit {code})")
    text = out.getvalue()
    figures: dict[str, Any] = json.loads(text[text.index("{") :])
    return figures


def probability(figures: dict[str, Any]) -> str:
    """P(a year loses more than the threshold) ± its standard error, or the 95 % upper bound when no year does."""
    p = figures["p_year_loss_above_threshold"]
    if p == 0:
        return f"0 of {figures['years']:,} years (at most {figures['p_year_loss_above_threshold_upper_95'] * 100:.2f} %, 95 %)"
    return f"{p * 100:.2f} % ± {figures['p_year_loss_above_threshold_std_error'] * 100:.2f} %"


def _tokens(n: float) -> str:
    """``2.5e11``: two significant figures."""
    return f"{n:.2g}".replace("e+", "e")


def row(name: str, at: list[dict[str, Any]]) -> str:
    """One plan's row from its figures at each of :data:`THRESHOLDS`."""
    first = at[0]
    return (
        f"| {name} | {_tokens(first['expected_unserved_tokens_per_year'])} tokens "
        f"| {first['expected_unserved_share'] * 100:.4f} % ± {first['std_error_share'] * 100:.4f} % "
        f"| {probability(at[0])} | {probability(at[1])} "
        f"| {first['cvar_share'] * 100:.3f} % |"
    )


def table(folders: list[Path]) -> str:
    """The Markdown table, one row per folder (named by the scenario it solved)."""
    rows = []
    for folder in folders:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        rows.append(row(Path(summary["scenario_path"]).stem, [adequacy(folder, t) for t in THRESHOLDS]))
    return "\n".join([*HEADER, *rows]) + "\n"


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv]
    if not folders or any(not (f / "summary.json").is_file() for f in folders):
        print("usage: scripts/adequacy_table.py DIR [DIR ...]  (single-year results folders: placement solve --out DIR)")
        return 2
    print(table(folders), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
