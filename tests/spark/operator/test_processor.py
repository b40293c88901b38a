"""The operator's Spark processor unpickles without its call's libraries:
Spark unpickles it in a new Python process on the driver at every query
start only to run `init` (`wid.spark.operator.processor`)."""

from __future__ import annotations

import subprocess
import sys

from pyspark import cloudpickle

from wid import Aggregation, Window
from wid.kernels.operator.shard_call import ShardCall
from wid.spark.operator import processor
from wid.spark.operator.processor import WidProcessor
from wid.spark.operator.query import operator_spec
from wid.spark.shipping import ship

# PySpark's own StatefulProcessor module imports numpy before 4.2 (through pyspark.rdd): the
# processor must add none of the three to what PySpark itself loads.
PROBE = """
import pickle, sys
import pyspark.sql.streaming.stateful_processor
own = {m for m in ("pandas", "pyarrow", "numpy") if m in sys.modules}
processor = pickle.loads(sys.stdin.buffer.read())
heavy = sorted(m for m in ("pandas", "pyarrow", "numpy") if m in sys.modules and m not in own)
call = pickle.loads(processor.payload)
print(",".join(heavy) or "-", type(call).__name__, call.spec.kind, "pandas" in sys.modules)
"""


def test_the_processor_unpickles_without_pandas_pyarrow_or_numpy() -> None:
    window = Window(kind="tumbling", event_time_column="ts", group_by=("k",), duration_ms=60_000,
                    aggregations=(Aggregation("count", as_="n"),))
    ship(processor)  # as the plan ships it: wid.kernels and wid.semantics whole, and the processor
    blob = cloudpickle.dumps(WidProcessor(ShardCall(operator_spec(window, pipeline="p", shards=2))))
    # a fresh interpreter, as the pre-init worker Spark starts on the driver
    done = subprocess.run([sys.executable, "-I", "-c", PROBE], input=blob, capture_output=True, check=True)
    assert done.stdout.decode().split() == ["-", "ShardCall", "tumbling", "True"]
