"""Sources, sinks and the dead-letter output (docs/semantics.md#pipelines)."""
