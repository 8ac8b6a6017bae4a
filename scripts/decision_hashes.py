"""The decisions a plan makes, as hashes: proof that a change moved code and not behaviour.

Usage::

    .venv/bin/python scripts/decision_hashes.py [KEY ...] [--out DIR]

Solves each bundled scenario (default: ``default``, ``world_full``, ``world-24x7``, ``world-arrangement`` and
``buildout``) with ``--no-maps`` into ``DIR`` (a temporary folder unless given) and prints the SHA-256 of its decision
files: ``sites.csv``, ``assignments.csv`` and ``populations.csv`` of a single-year plan; ``buildout.csv`` and the
expected cost of a build-out. Run it before and after a refactoring and compare the two listings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KEYS = ("default", "world_full", "world-24x7", "world-arrangement", "buildout")
DECISIONS = ("sites.csv", "assignments.csv", "populations.csv")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _decisions(folder: Path) -> list[tuple[str, str]]:
    """``(file, hash)`` of a results folder's decision files (a build-out's table and expected cost)."""
    if (folder / "buildout.csv").is_file():
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        cost = summary.get("expected_cost_usd", summary.get("expected_npv_usd"))
        return [("buildout.csv", _sha(folder / "buildout.csv")), ("expected cost", f"{cost}")]
    return [(name, _sha(folder / name)) for name in DECISIONS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", default=list(KEYS), help="bundled scenario keys")
    parser.add_argument("--out", type=Path, help="keep the results folders here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.out or Path(scratch)
        for key in args.keys:
            folder = root / key
            done = subprocess.run(
                [sys.executable, str(REPO / "cli.py"), "solve", key, "--out", str(folder), "--no-maps", "--quiet"],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                print(f"{key}: solve failed\n{done.stderr[-1500:]}")
                continue
            for name, digest in _decisions(folder):
                print(f"{key:20s} {name:16s} {digest}")


if __name__ == "__main__":
    main()
