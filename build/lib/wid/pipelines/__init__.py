"""Pipelines (docs/semantics.md#pipelines), one module per stage: `read` (sources,
the SQL pre-stage, the compiled window or join), `write` (the sinks: a
batch's outputs, and the one ``foreachBatch`` writer of every stream),
`run` (the one dispatcher, which the Python API and the command line both
call) and `report` (the one report of a run). Named ``pipelines`` because
``wid.pipeline`` is the decorator that declares one."""
