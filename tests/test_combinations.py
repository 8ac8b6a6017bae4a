"""Every pair of features solves on one small world and its written plan passes each feature's own check.

A pair that cannot be combined is listed in :data:`REFUSED` with the physical reason the tool gives; any other
refusal, or a check that fails, fails the test. The world, the features and their checks: :mod:`tests.combinations`.
``scripts/combination_matrix.py`` prints the same pairs as the table of docs/guides/features-together.md.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.combinations import FEATURES, Baseline, baseline, run_pair

PAIRS = list(itertools.combinations([f.name for f in FEATURES], 2))

REFUSED: dict[frozenset[str], str] = {}
"""Pairs the tool refuses for a physical reason, and the words of its reason (none today)."""

GAPS: dict[frozenset[str], str] = {}
"""Pairs refused because the tool does not model them together yet (none today): expected to fail, and a pair that
starts to pass fails the run until it leaves this list (``strict``)."""


def _marks(pair: tuple[str, str]) -> list[pytest.MarkDecorator]:
    gap = GAPS.get(frozenset(pair))
    return [pytest.mark.slow] + ([pytest.mark.xfail(reason=f"not modelled yet: {gap}", strict=True)] if gap else [])


@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    return baseline(tmp_path_factory.mktemp("base"))


@pytest.mark.parametrize("pair", [pytest.param(p, id=" + ".join(p), marks=_marks(p)) for p in PAIRS])
def test_a_pair_of_features_solves_and_passes_each_check(pair: tuple[str, str], base: Baseline, tmp_path: Path) -> None:
    outcome = run_pair(tmp_path, pair, base)
    reason = REFUSED.get(frozenset(pair))
    if reason is None:
        assert outcome.refusal is None, f"refused: {outcome.refusal}"
        assert outcome.problems == []
    else:
        assert outcome.refusal is not None and reason in outcome.refusal, outcome.refusal
