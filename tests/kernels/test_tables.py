"""The WID operator's tables: group ids against NumPy's own `unique`, state blobs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.kernels.tables import codes_to_ids


@settings(max_examples=200, deadline=None)
@given(codes=st.lists(st.integers(0, 5000), max_size=300), spread=st.sampled_from([1, 2, 100, 10**12]))
def test_codes_to_ids_equals_numpy_unique(codes: list[int], spread: int) -> None:
    """Both paths (a table of every code where the codes are dense, a sort
    where they are sparse) give what ``np.unique`` gives."""
    array = np.array(codes, dtype=np.int64) * spread
    size = int(array.max()) + 1 if len(codes) else 0
    uniq, first, inverse = np.unique(array, return_index=True, return_inverse=True)
    ids, n, got_first = codes_to_ids(array, size)
    assert n == len(uniq)
    assert ids.tolist() == inverse.tolist()
    assert got_first.tolist() == first.tolist()


def test_state_bytes_are_compressed_and_read_like_uncompressed_ones() -> None:
    """State written before compression (`to_bytes`) still reads back."""
    import pyarrow as pa

    from wid.kernels.tables import from_bytes, state_bytes, to_bytes

    table = pa.table({"k": np.repeat(np.arange(100, dtype=np.int32), 100), "n": np.ones(10_000, dtype=np.int64)})
    small, plain = state_bytes(table), to_bytes(table)
    assert len(small) < len(plain) / 2
    assert from_bytes(small).equals(table) and from_bytes(plain).equals(table)
