"""Specs: frozen dataclasses for windows, aggregations and pipelines, with
validation at construction and TOML load/dump. Pure Python: no pyspark."""

from wid.spec.aggregation import Aggregation
from wid.spec.window import Punctuation, Window

__all__ = ["Aggregation", "Punctuation", "Window"]
