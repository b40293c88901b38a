"""Combining before the shuffle on Spark (`wid.kernels.operator.combine`):
a hot key's rows, spread over several input partitions, reach its shard
as partials (what each shard received, from its counts), and the windows,
late rows and counts stay the streaming oracle's; with
``spark.wid.operator.combine = false`` every row ships as a row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.kernels.operator.cases import HOT_WINDOW, SCHEMA, assert_same_results, hot_key_batches
from tests.spark.operator.spark_run import operator_rows, to_result
from wid.kernels.operator.output import COUNTS_ROW, KIND, STATS
from wid.semantics.stream_oracle import run_stream
from wid.spark.operator.query import COMBINE_CONF

PARTITIONS = 3  # input partitions of each micro-batch's rows


@pytest.mark.parametrize("combine", ["true", "false"])
def test_a_hot_key_reaches_its_shard_as_partials(spark: Any, tmp_path: Path, combine: str) -> None:
    batches = hot_key_batches()
    spark.conf.set(COMBINE_CONF, combine)
    try:
        seen = operator_rows(spark, tmp_path, batches, HOT_WINDOW, SCHEMA, lambda df: df.repartition(PARTITIONS))
    finally:
        spark.conf.unset(COMBINE_CONF)
    got = [to_result(rows, HOT_WINDOW, SCHEMA.names) for rows in seen]
    stats = [[json.loads(r[STATS]) for r in rows if r[KIND] == COUNTS_ROW] for rows in seen]
    assert_same_results(HOT_WINDOW, got, run_stream(batches, HOT_WINDOW))
    for b, shards in enumerate(stats):
        rows = [r for _, r in batches[b].rows]
        panes = len({(r["k"], r["ts"] // 10) for r in rows})  # (group, pane) pairs of the micro-batch
        hot = max(shards, key=lambda s: s["rows"])  # the hot key's shard
        assert sum(s["rows"] for s in shards) == len(rows), f"batch {b}"  # what the shards' input stands for
        assert hot["rows"] >= 300, f"batch {b}"
        if combine == "true":  # at most one partial per (input partition, group, pane)
            assert hot["received"] <= sum(s["received"] for s in shards) <= PARTITIONS * panes < hot["rows"] / 2
        else:
            assert [s["received"] for s in shards] == [s["rows"] for s in shards], f"batch {b}"
