"""Executor-side code: the vectorised NumPy and pyarrow passes Spark runs
once per partition (``mapInArrow``) or per shard and micro-batch (the WID
operator's ``transformWithStateInPandas``). Nothing here imports pyspark or
wid's specs: Spark plans (`wid.spark`) ship this package, with the pure
`wid.semantics` it uses, to executors by value (`wid.spark.shipping`), so
executors need numpy, pyarrow and pandas, not wid."""
