"""HiGHS's LP methods on the relaxation the bundled world's restricted MILP solves first, in one run.

Usage: .venv/bin/python benchmarks/relaxation_methods.py [SCENARIO]

Solves the scenario (default: the bundled world) as ``placement.run`` does; when relax-and-fix
(:mod:`placement.optimize.relax_fix`) reaches its LP relaxation, the same model is first copied into a fresh HiGHS
and solved by each method: interior point with crossover (what the plan uses), interior point without crossover,
dual simplex, primal simplex and PDLP. Prints each method's seconds, objective, and whether it leaves every site
whole (and how many open). Machines here are shared and noisy: compare the rows of one run with each other.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

import placement  # noqa: E402
from placement.optimize import relax_fix  # noqa: E402
from placement.world.bundled import default_scenario_path  # noqa: E402

METHODS: tuple[tuple[str, dict[str, str | int]], ...] = (
    ("interior point + crossover", {"solver": "ipm"}),
    ("interior point, no crossover", {"solver": "ipm", "run_crossover": "off"}),
    ("dual simplex", {"solver": "simplex", "simplex_strategy": 1}),
    ("primal simplex", {"solver": "simplex", "simplex_strategy": 4}),
    ("PDLP", {"solver": "pdlp"}),
)
ROWS: list[tuple[str, float, float, bool, int]] = []


def _each_method(highs: Any) -> None:
    """Solve a copy of ``highs``'s model's relaxation by every method of :data:`METHODS` (the first relaxation only)."""
    import highspy

    if ROWS:
        return
    model, binaries = highs.getModel(), relax_fix._binary_columns(highs)
    for name, options in METHODS:
        copy = highspy.Highs()  # type: ignore[no-untyped-call]
        copy.setOptionValue("output_flag", False)
        copy.passModel(model)
        copy.setOptionValue("solve_relaxation", True)
        for key, value in options.items():
            copy.setOptionValue(key, value)
        start = time.perf_counter()
        copy.run()
        seconds = time.perf_counter() - start
        values = np.asarray(copy.getSolution().col_value)[binaries]
        whole = bool(((values <= relax_fix.WHOLE_TOLERANCE) | (values >= 1 - relax_fix.WHOLE_TOLERANCE)).all())
        ROWS.append((name, seconds, float(copy.getInfo().objective_function_value), whole, int((values > 0.5).sum())))


def main() -> None:
    scenario = Path(sys.argv[1]) if len(sys.argv) > 1 else default_scenario_path()
    solve_relaxation = relax_fix._solve_relaxation

    def probed(highs: Any) -> tuple[float, np.ndarray] | None:
        _each_method(highs)
        return solve_relaxation(highs)

    relax_fix._solve_relaxation = probed
    placement.run(placement.load_scenario(scenario))
    if not ROWS:
        raise SystemExit(f"{scenario} solved no MILP by relax-and-fix: nothing to compare")
    print(f"{scenario.name}: the restricted MILP's LP relaxation")
    print("| method | seconds | objective | every site whole | sites open |")
    print("|---|---|---|---|---|")
    for name, seconds, objective, whole, opened in ROWS:
        print(f"| {name} | {seconds:.2f} | {objective:,.2f} | {'yes' if whole else 'no'} | {opened} |")


if __name__ == "__main__":
    main()
