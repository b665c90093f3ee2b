"""The one place cosine similarity is computed: unit-normalising rows and queries,
scoring a matrix against a query, and taking the top of a score vector exactly."""

from __future__ import annotations

from typing import Any

import numpy as np


def unit_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length (float32) and a mask of the rows that had a length
    (zero rows stay zero and are reported as such)."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-d matrix, got shape {m.shape}")
    norms = np.linalg.norm(m, axis=1)
    ok = norms > 0
    out = np.zeros_like(m)
    out[ok] = m[ok] / norms[ok, None]
    return out, ok


def unit(vector: np.ndarray) -> np.ndarray:
    """A query vector scaled to unit length (zero stays zero)."""
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def cosine_scores(unit_matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of every row of an already unit-normalised matrix with ``query``."""
    if unit_matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    out: np.ndarray = unit_matrix @ unit(query)
    return out


def cosine_to(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of every row of a raw matrix with ``query`` (zero rows score 0)."""
    rows, _ = unit_rows(matrix)
    return cosine_scores(rows, query)


def top_indices(scores: np.ndarray, m: int) -> np.ndarray:
    """Indices of the m highest finite scores, plus every row tied with the lowest of
    them (so tie-breaking by a secondary key stays exact)."""
    n = scores.shape[0]
    if n == 0 or m <= 0:
        return np.zeros(0, np.int64)
    if m >= n:
        idx = np.arange(n)
    else:
        idx = np.argpartition(scores, n - m)[n - m:]
        low = scores[idx].min()
        if np.isfinite(low):
            idx = np.flatnonzero(scores >= low)
    out: np.ndarray = idx[np.isfinite(scores[idx])]
    return out


def with_spare_rows(rows: int, dim: int) -> np.ndarray:
    """A zero float32 matrix of ``rows`` rows (a view) over a buffer with about an
    eighth more: a cache that adopts it grows into the spare rows without copying
    (``widened``). Untouched zero pages cost no resident memory."""
    spare = rows // 8 if rows >= 1024 else 0
    return np.zeros((rows + spare, dim), np.float32)[:rows]


def buffer_rows(matrix: np.ndarray) -> int:
    """How many rows the buffer under ``matrix`` holds from its first row: its base's
    when it is a leading slice of a C-contiguous matrix, else its own."""
    base = matrix.base
    if (isinstance(base, np.ndarray) and base.ndim == 2 and base.dtype == matrix.dtype
            and base.shape[1] == matrix.shape[1] and base.flags.c_contiguous
            and matrix.flags.c_contiguous and base.ctypes.data == matrix.ctypes.data):
        return int(base.shape[0])
    return int(matrix.shape[0])


def widened(matrix: np.ndarray, rows: int) -> np.ndarray:
    """The first ``rows`` rows of the buffer under ``matrix`` (``rows`` ≤
    ``buffer_rows(matrix)``): the same memory, no copy."""
    base = matrix.base if buffer_rows(matrix) > matrix.shape[0] else matrix
    assert isinstance(base, np.ndarray) and base.shape[0] >= rows
    out: np.ndarray = base[:rows]
    return out


_ARROW_NUMPY = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
                "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
                "uint64": np.uint64, "float": np.float32, "double": np.float64}


def arrow_numpy(array: Any) -> np.ndarray:
    """An Arrow array of numbers or booleans as a numpy array, read from its buffers.
    pyarrow's own ``to_numpy`` goes through its pandas conversion, which imports pandas
    (~0.5 s, on a workbench page's first scan); this does not. Nulls come out as
    whatever their slot holds (0, False): callers mask them with ``is_valid``."""
    n, off = len(array), array.offset
    kind = str(array.type)
    data = array.buffers()[1]
    if kind == "bool":
        if data is None:
            return np.zeros(n, bool)
        bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
        return bits[off:off + n].astype(bool)
    dtype = _ARROW_NUMPY.get(kind)
    if dtype is None:
        return np.asarray(array.to_numpy(zero_copy_only=False))
    if data is None:
        return np.zeros(n, dtype)
    return np.frombuffer(data, dtype, count=n, offset=off * np.dtype(dtype).itemsize)
