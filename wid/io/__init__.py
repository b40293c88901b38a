"""Sources, sinks and the dead-letter output (DESIGN.md section 7)."""
