"""Errors a user of wid can cause, each naming what was wrong and how to fix it.

Every error type derives from `WidError`, so a caller (and `wid run`) can print
one clear message instead of a stack trace.
"""

from __future__ import annotations


class WidError(Exception):
    """Base class of every error wid raises on purpose."""


class ConfigError(WidError, ValueError):
    """A window, aggregation or pipeline declaration is invalid.

    `field` is the dotted path of the offending field as written in TOML
    (for example ``transform.window.hop_ms`` or ``aggregations[1].as``).
    `fix` says how to fix it; where the fix differs between Python and a
    pipeline file, `fix` is in Python's terms (``aggregations=[...]``) and
    `toml_fix` in TOML's (``[[transform.window.aggregations]]``), which
    `in_toml` (the TOML loader, ``wid`` on the command line) shows.
    """

    def __init__(self, field: str, problem: str, fix: str | None = None, toml_fix: str | None = None) -> None:
        self.field = field
        self.problem = problem
        self.fix = fix
        self.toml_fix = toml_fix
        message = f"{field}: {problem}"
        if fix:
            message += f". Fix: {fix}"
        super().__init__(message)

    def in_toml(self) -> ConfigError:
        """The same error with its fix in a pipeline file's terms."""
        if self.toml_fix is None:
            return self
        return ConfigError(self.field, self.problem, self.toml_fix, self.toml_fix)

    def at(self, prefix: str) -> ConfigError:
        """Return the same error, in TOML's terms (`in_toml`), with `prefix`
        prepended to the field path (a TOML table's)."""
        sep = "" if self.field.startswith("[") else "."
        found = self.in_toml()
        return ConfigError(f"{prefix}{sep}{found.field}", found.problem, found.fix, found.toml_fix)


class MissingDependencyError(WidError):
    """Something wid needs at run time (Java, a Spark connector) is missing."""

    def __init__(self, what: str, fix: str) -> None:
        self.what = what
        self.fix = fix
        super().__init__(f"{what} is missing. Fix: {fix}")


class SetupError(WidError):
    """The Python environment is broken in a way wid can name (two
    distributions that install the same ``pyspark`` module, PySpark's files
    of another release than its jars): what is wrong, then how to fix it."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}. Fix: {fix}")


class RejectedError(WidError):
    """A batch, or a micro-batch, rejected more than the share of its rows
    ``wid run --strict`` allows (`wid.pipelines.rejections`); raised before
    anything of it is written. `exit_code` is ``wid run``'s status for it."""

    exit_code = 3


class StateCapError(WidError):
    """A declared state cap (`max_groups_per_window`,
    `max_distinct_values_per_group`) was hit; wid fails rather than grow."""


class SinkError(WidError):
    """A sink failed for a reason retrying cannot fix (a wrong password, no
    such database). The message starts ``sink error:`` and names the sink,
    never a secret."""


class SinkUnavailableError(SinkError):
    """A sink kept failing with transient errors past its retry budget
    (`wid.io.retry`). The message starts ``sink unavailable:``."""


class InputError(WidError):
    """The input data cannot be processed as declared (for example a
    declared column is missing from the DataFrame)."""
