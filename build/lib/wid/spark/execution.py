"""How a stage runs: one record (`Execution`) for what a plan compiled to,
what `wid explain` outlines from the spec alone, and what a compiled stage
reports (docs/architecture.md#execution-paths)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

BATCH = "batch"
OPERATOR = "operator"


@dataclass(frozen=True)
class Execution:
    """How a stage runs: its `path` (``"batch"``, ``"operator"`` or Spark's
    real-time mode), the `forms` it takes (one once compiled; an outline,
    read from the spec alone, lists those it may take in the order they are
    tried: the input's column types pick the first that can run), `why`,
    and `notes` (costs, settings that shaped the plan, ways the
    configuration may lose data)."""

    path: str
    forms: tuple[str, ...]
    why: str
    notes: tuple[str, ...] = ()

    @property
    def form(self) -> str:
        """The form it takes (the first it may take, for an outline)."""
        return self.forms[0]


def outline(forms: tuple[str, ...], why: str, notes: tuple[str, ...] = ()) -> Execution:
    """A batch stage's forms, from its spec alone."""
    return Execution(BATCH, forms, why, notes)


@dataclass(frozen=True)
class Planned:
    """A compiled batch window stage: its output DataFrame and how it runs."""

    output: DataFrame
    execution: Execution

    @property
    def form(self) -> str:
        return self.execution.form


def planned(output: DataFrame, form: str, why: str, notes: tuple[str, ...] = ()) -> Planned:
    """A batch plan's `output`, taking `form` for the reason `why`."""
    return Planned(output, Execution(BATCH, (form,), why, notes))


__all__ = ["BATCH", "OPERATOR", "Execution", "Planned", "outline", "planned"]
