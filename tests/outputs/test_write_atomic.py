"""A file written whole or not at all gets the mode any other file written there gets, not mkstemp's private 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from placement.outputs.writer import write_text_atomic


def test_an_atomic_file_has_the_umasks_mode_like_a_plain_one(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        plain = tmp_path / "plain.txt"
        plain.write_text("x", encoding="utf-8")
        atomic = tmp_path / "explain.json"
        write_text_atomic(atomic, "{}\n")
    finally:
        os.umask(mask)
    assert atomic.read_text(encoding="utf-8") == "{}\n"
    assert stat.S_IMODE(atomic.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left behind
