""":meth:`FeatureTable.fresh_within` (one compiled pass) answers what numpy's gather and ``where``
answered, bit for bit and in the same memory layout (detectors reduce over it: a layout of its
own could add in another order)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from detectors.features import FeatureTable, _as_slice


def _by_numpy(table: FeatureTable, pids: np.ndarray, column: int | slice, lo: np.ndarray,
              hi: np.ndarray) -> np.ndarray:
    rows = _as_slice(pids)
    v = table.value[rows, column]
    t = table.ts[rows, column]
    if v.ndim == 2:
        lo, hi = lo[:, None], hi[:, None]
    return np.where((t >= lo) & (t <= hi), v, np.nan)


@pytest.mark.parametrize("column", [3, slice(8, 16), slice(16, 17)])
def test_fresh_within_is_numpys_answer(column: int | slice) -> None:
    rng = np.random.default_rng(13)
    table = FeatureTable()
    table._grow(3000)
    table.value[:] = rng.random(table.value.shape)
    table.value[rng.random(table.value.shape) < 0.1] = np.nan
    table.ts[:] = rng.integers(-1, 100, table.ts.shape)
    for pids in (np.arange(100, 2100), np.sort(rng.choice(3000, 1500, replace=False)),
                 np.array([7]), np.arange(0), np.array([5, 4, 9])):
        lo: NDArray[np.int64] = np.asarray(rng.integers(0, 50, pids.shape[0]), np.int64)
        hi: NDArray[np.int64] = lo + np.asarray(rng.integers(0, 60, pids.shape[0]), np.int64)
        want = _by_numpy(table, pids, column, lo, hi)
        got = table.fresh_within(pids, column, lo, hi)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes(order="A") == want.tobytes(order="A")
        assert got.strides == want.strides
