"""Compilation of window specs to Spark DataFrame plans."""
