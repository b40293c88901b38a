"""Aggregators in the WID-friendly form ``zero / add / merge / finish``
(docs/semantics.md#aggregations): `pure` holds the Python forms, `spark` the Spark
column-expression forms. `merge` is what makes panes, session merges and
state compaction possible."""

from wid.aggregates.pure import Aggregator, make_aggregator

__all__ = ["Aggregator", "make_aggregator"]
