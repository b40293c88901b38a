"""The state-scale benchmark's data and its checkpoint measure
(`benchmarks.state_scale`): file 0 opens every key once, each later file
holds its rows in its own minute of event time, and the size counts every
file under a directory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchmarks.state_scale import MINUTE_US, T0_US, land, size_of


def test_file_0_opens_every_key_and_each_file_moves_a_minute(tmp_path: Path) -> None:
    landing = land(tmp_path, keys=50, rows=20, files=3)
    files = sorted(landing.iterdir())
    assert [f.name for f in files] == [f"part-{i:05d}.parquet" for i in range(4)]
    first = pq.read_table(files[0])
    assert sorted(first.column("k").to_pylist()) == list(range(50))
    for i, f in enumerate(files):
        table = pq.read_table(f)
        ts = table.column("ts").cast("int64").to_numpy()
        assert table.num_rows == (50 if i == 0 else 20)
        assert ((ts >= T0_US + i * MINUTE_US) & (ts < T0_US + (i + 1) * MINUTE_US)).all()
        assert np.isin(table.column("k").to_numpy(), np.arange(50)).all()
    assert [f.stat().st_mtime for f in files] == sorted(f.stat().st_mtime for f in files)  # read in order


def test_the_size_counts_every_file_below(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "x").write_bytes(b"1" * 10)
    (tmp_path / "a" / "b" / "y").write_bytes(b"1" * 32)
    assert size_of(tmp_path) == 42
