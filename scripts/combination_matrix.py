"""Print the combination matrix: every pair of features solved on the small world of ``tests/combinations.py``.

Each cell is ``ok`` (solved, and the written plan passes each feature's own check), or a letter naming the reason it
does not (listed under the table, with the tool's own words). The table of docs/guides/features-together.md is this
script's output.

Usage: ``python scripts/combination_matrix.py [--out FOLDER]`` (about 5 minutes on 2 cores; FOLDER keeps the plans).
"""

from __future__ import annotations

import argparse
import itertools
import string
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.combinations import FEATURES, Outcome, baseline, run_pair  # noqa: E402


def _why(outcome: Outcome) -> str:
    """One line: the refusal's first sentence, or the checks that failed."""
    if outcome.refusal is not None:
        text = outcome.refusal.removeprefix("error: 1 problem in the input: - ")
        text = text.split("(top level): ", 1)[-1]
        return "refused: " + text.split(". Fix")[0].split("; remove")[0][:200]
    return "solved, but a check fails: " + "; ".join(outcome.problems)[:200]


def main(argv: list[str]) -> int:
    """Solve every pair and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep the plans in this folder")
    args = parser.parse_args(argv)
    root = args.out or Path(tempfile.mkdtemp(prefix="combinations-"))
    base = baseline(root / "base")
    names = [f.name for f in FEATURES]
    cells: dict[tuple[str, str], str] = {}
    reasons: dict[str, str] = {}
    for i, pair in enumerate(itertools.combinations(names, 2)):
        outcome = run_pair(root / f"pair_{i:03d}", pair, base)
        if outcome.passed:
            cells[pair] = "ok"
            continue
        why = _why(outcome)
        letter = next((k for k, v in reasons.items() if v == why), None)
        if letter is None:
            letter = string.ascii_uppercase[len(reasons)]
            reasons[letter] = why
        cells[pair] = letter
    short = {name: str(i + 1) for i, name in enumerate(names)}
    print("| | " + " | ".join(short[n] for n in names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for a in names:
        row = [cells.get((a, b), cells.get((b, a), "")) if a != b else "·" for b in names]
        print(f"| {short[a]} {a} | " + " | ".join(row) + " |")
    print()
    for letter, why in reasons.items():
        print(f"- **{letter}**: {why}")
    passed = sum(v == "ok" for v in cells.values())
    print(f"\n{passed} of {len(cells)} pairs solve and pass every check")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
