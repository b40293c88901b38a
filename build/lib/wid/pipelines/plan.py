"""What ``wid explain --plan`` shows: the pipeline compiled on Spark over its
sources' schemas, with no Spark job over the rows (docs/trust.md)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from wid.pipelines.read import compile_pipeline
from wid.spark.explain import Explanation, explain, explain_join
from wid.spark.pane_plan import unsampled
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec


def explain_plan(spark: SparkSession, spec: PipelineSpec | JoinPipelineSpec) -> Explanation:
    """`spec`'s stage compiled on `spark` and explained: its form, why, its
    Spark operators and physical plan (`wid.spark.explain`). The sources
    are read for their schemas (Spark infers a CSV or JSON source's schema
    from its files when the pipeline declares none) and the SQL pre-stages
    are analysed; no Spark job runs over the rows: where a batch stage
    would sample its input to choose its pane plan
    (`wid.spark.pane_plan.unsampled`), the explanation says so and shows
    the two-phase plan. Raises what `compile_pipeline` raises."""
    with unsampled():
        result = compile_pipeline(spark, spec).result
    if isinstance(spec, JoinPipelineSpec):
        return explain_join(result, spec)
    return explain(result, spec.window, spec)


__all__ = ["explain_plan"]
