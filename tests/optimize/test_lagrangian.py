"""Pricing out pairs: each (commodity, site)'s slice price, formed a block of pairs at a time, matches the dense
table."""

from __future__ import annotations

import numpy as np
import pytest

from placement.optimize import lagrangian


@pytest.mark.parametrize("shuffled", [False, True])
def test_slice_prices_match_the_dense_table_across_blocks(shuffled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of 7 pairs over 80 (the last one short), whether the pairs come in commodity order or not.
    monkeypatch.setattr(lagrangian, "PRICE_CHUNK_PAIRS", 7)
    rng = np.random.default_rng(7)
    demand, slice_dual = rng.uniform(0, 5, (10, 4)), rng.uniform(-2, 0, (6, 4))
    commodity = np.sort(rng.integers(0, 10, 80))
    site = rng.integers(0, 6, 80)
    if shuffled:
        order = rng.permutation(80)
        commodity, site = commodity[order], site[order]
    expected = (demand @ slice_dual.T)[commodity, site]
    np.testing.assert_allclose(lagrangian._slice_prices(demand, slice_dual, commodity, site), expected, rtol=1e-12)
