"""The matrix buffers a recall cache grows into: spare rows behind a scan's matrix,
found again from a slice of it and taken without a copy."""

from __future__ import annotations

import numpy as np

from memory_core.vectors import buffer_rows, widened, with_spare_rows


def test_a_large_scan_matrix_has_an_eighth_more_rows_behind_it() -> None:
    m = with_spare_rows(4096, 3)
    assert m.shape == (4096, 3) and m.dtype == np.float32 and not m.any()
    assert buffer_rows(m) == 4096 + 512
    assert buffer_rows(with_spare_rows(100, 3)) == 100  # small: none


def test_widened_is_the_same_memory_with_the_rows_kept() -> None:
    m = with_spare_rows(2048, 2)
    m[:] = np.arange(4096, dtype=np.float32).reshape(2048, 2)
    w = widened(m, 2100)
    assert w.shape == (2100, 2) and np.shares_memory(w, m)
    assert np.array_equal(w[:2048], m) and not w[2048:].any()
    assert buffer_rows(w) == 2048 + 256
    assert widened(w, buffer_rows(w)).shape == (2304, 2)


def test_only_a_leading_slice_of_a_c_contiguous_matrix_has_a_buffer_beyond_it() -> None:
    base = np.zeros((10, 4), np.float32)
    assert buffer_rows(base) == 10
    assert buffer_rows(base[:6]) == 10
    assert buffer_rows(base[2:6]) == 4  # not the buffer's first row
    assert buffer_rows(base[:6, :2]) == 6  # not contiguous
    assert buffer_rows(base[:6].astype(np.float64)) == 6  # a copy
