"""What ``placement solve`` prints for the bundled world, shortened as the "Your first plan" page shows it.

Usage::

    .venv/bin/python scripts/first_plan_transcript.py

Solves the bundled world as a first run does (``cli.py solve --no-cache``, no maps, into a temporary folder) and
prints its output as the page shows it: the progress lines up to the solve's first step, the line that starts the
writing, then the plan's summary with each list cut to its first item (the rules listed whole), and the results
folder named ``out`` as a plain ``placement solve`` would write it. The seconds on the progress lines depend on the
machine and its load; a test compares the rest with the page.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRESS_SHOWN = 6
"""Progress lines printed before the ellipsis: the scenario, catalog, demand, model, solver and first step lines."""
WHOLE_SECTIONS = ("Rules that shaped the plan:",)
"""Summary sections printed whole (every other list is cut to its first item)."""
STAMP = re.compile(r"^\[\s*[0-9.]+ s\] ")


def progress_lines(stderr: str) -> list[str]:
    """The first progress lines, an ellipsis, the line that starts the writing, an ellipsis."""
    lines = [line for line in stderr.splitlines() if STAMP.match(line)]
    writing = [line for line in lines if STAMP.sub("", line).startswith("writing results")]
    return [*lines[:PROGRESS_SHOWN], "...", *writing[:1], "..."]


def summary_lines(stdout: str, folder: Path) -> list[str]:
    """The plan's summary with each list cut to its first item (the sections of :data:`WHOLE_SECTIONS` whole)."""
    out: list[str] = []
    section, items = "", 0
    for line in stdout.splitlines():
        if line.startswith("results in "):
            out.append("results in out")
            continue
        if not line.startswith("  "):
            section, items = line, 0
            out.append(line)
            continue
        items += 1
        if section in WHOLE_SECTIONS or items == 1:
            out.append(line)
        elif items == 2:
            out.append("  ...")
    return [line.replace(str(folder), "out") for line in out]


def transcript() -> str:
    """The block the page shows, from a fresh solve."""
    with tempfile.TemporaryDirectory() as base:
        folder = Path(base) / "out"
        command = [sys.executable, str(REPO / "cli.py"), "solve", "--out", str(folder), "--no-maps", "--no-cache"]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
        lines = ["$ .venv/bin/python cli.py solve", *progress_lines(done.stderr), *summary_lines(done.stdout, folder)]
    return "\n".join(lines).replace(f"{REPO}/", "") + "\n"


if __name__ == "__main__":
    print(transcript(), end="")
