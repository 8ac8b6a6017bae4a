"""The CLI asks glibc to map large arrays on their own, so that a long solve hands freed memory back."""

from __future__ import annotations

import platform
import sys

import pytest

from placement._process import map_large_blocks


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_glibc_takes_the_threshold() -> None:
    assert map_large_blocks() is True


@pytest.mark.skipif(sys.platform.startswith("linux"), reason="elsewhere the call does nothing and says so")
def test_other_systems_are_left_alone() -> None:
    assert map_large_blocks() is False
