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


def test_arrow_numpy_reads_numbers_and_booleans_at_any_offset() -> None:
    import subprocess
    import sys

    import pyarrow as pa

    from memory_core.vectors import arrow_numpy

    for values, kind in (([3, -1, 7, 2**40, 5], pa.int64()), ([1, 2, 3, 4, 5], pa.int32()),
                         ([0.5, 1.5, -2.0, 3.25, 9.0], pa.float32()),
                         ([1.0, 2.0, 3.0, 4.0, 5.0], pa.float64()),
                         ([True, False, True, True, False, False, True, False, True],
                          pa.bool_())):
        arr = pa.array(values, kind)
        for lo, hi in ((0, len(values)), (1, 4), (3, len(values)), (2, 2)):
            got = arrow_numpy(arr.slice(lo, hi - lo))
            assert got.tolist() == values[lo:hi], (kind, lo, hi)
    # what it is for: no pandas import (pyarrow's own to_numpy imports it)
    code = ("import sys, numpy as np, pyarrow as pa\n"
            "from memory_core.vectors import arrow_numpy\n"
            "a = pa.Array.from_buffers(pa.int64(), 2, [None, pa.py_buffer(np.arange(2))])\n"
            "assert arrow_numpy(a).tolist() == [0, 1]\n"
            "assert arrow_numpy(a.is_valid()).tolist() == [True, True]\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
