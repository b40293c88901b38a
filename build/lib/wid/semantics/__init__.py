"""The pure math of windows and the reference engine (the oracle).

No pyspark here (docs/architecture.md#layout): `windowing` (wids, bounds, panes),
`sessions` (session merge), `ranks` (count windows), `rolling` (rolling
extents), `aggregate_values` (what each aggregation means) and `oracle`.
"""

from wid.semantics.oracle import DeadLetter, OracleResult, evaluate

__all__ = ["DeadLetter", "OracleResult", "evaluate"]
