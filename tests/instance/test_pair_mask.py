"""The bit-packed (commodities x sites) table answers every question as the byte table it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from placement.instance.pair_mask import PairMask


@pytest.mark.parametrize("shape", [(7, 1), (13, 8), (40, 17), (5000, 123)])
def test_every_read_matches_the_byte_table(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    dense = rng.random(shape) < 0.3
    other = rng.random(shape) < 0.5
    mask, second = PairMask.of(dense), PairMask.of(other)
    assert mask.shape == shape and mask.size == dense.size
    assert mask.bits.nbytes == shape[0] * ((shape[1] + 7) // 8)  # an eighth of a byte table, rounded up per row
    assert np.array_equal(mask.dense(), dense)
    rows = rng.integers(0, shape[0], size=9)
    assert np.array_equal(mask.rows(rows), dense[rows])
    assert np.array_equal(mask.rows(slice(2, 5)), dense[2:5])
    assert np.array_equal(mask.row(int(rows[0])), dense[rows[0]])
    for j in (0, shape[1] - 1, shape[1] // 2):
        assert np.array_equal(mask.column(j), dense[:, j])
    cols = rng.integers(0, shape[1], size=9)
    assert np.array_equal(mask.at(rows, cols), dense[rows, cols])
    assert np.array_equal(mask.count_by_row(), dense.sum(axis=1))
    assert np.array_equal(mask.any_by_row(), dense.any(axis=1))
    assert np.array_equal(mask.any_by_column(), dense.any(axis=0))
    chosen = rng.random(shape[0]) < 0.5
    assert mask.count() == int(dense.sum()) and mask.count(chosen) == int(dense[chosen].sum())
    assert np.array_equal(mask.and_not(second).dense(), dense & ~other)
    assert np.array_equal(mask.and_(second).dense(), dense & other)
    keep = rng.random(shape[1]) < 0.5
    assert np.array_equal(mask.and_columns(keep).dense(), dense & keep[None, :])
    group = rng.integers(0, 3, size=shape[0])
    by_group = rng.random((3, shape[1])) < 0.5
    assert np.array_equal(mask.and_row_groups(group, by_group).dense(), dense & by_group[group])
    r, c = mask.nonzero()
    expected_r, expected_c = np.nonzero(dense)
    assert np.array_equal(r, expected_r) and np.array_equal(c, expected_c)


def test_complements_never_count_the_padding_bits() -> None:
    full = PairMask.of(np.ones((3, 5), dtype=bool))
    none = PairMask.empty(3, 5)
    # a & ~b over whole bytes: the three unused bits of each row stay clear, so counts are of real cells only
    assert full.and_not(none).count() == 15
    assert none.and_not(full).count() == 0
    assert not none.any_by_column().any() and none.any_by_column().shape == (5,)


def test_shapes_must_agree() -> None:
    with pytest.raises(ValueError, match="different shapes"):
        PairMask.empty(3, 5).and_not(PairMask.empty(3, 6))
    with pytest.raises(ValueError, match="2-D"):
        PairMask.of(np.ones(4, dtype=bool))
