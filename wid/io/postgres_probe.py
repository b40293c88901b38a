"""Checking a pipeline's PostgreSQL sinks before Spark starts.

A PostgreSQL sink is written once Spark has computed the rows, so a missing
driver, an unset variable or a server that is down surfaced a minute into
a run, after the work, and a server that is down only after the sink's
retries. `check_postgres` asks first, as `wid.io.kafka_probe` does for
Kafka, one question at a time, each failure one line naming the field and
the fix, each wait bounded by `PROBE_S` seconds:

1. Is the driver installed (psycopg, the ``postgres`` extra)?
2. Is the URL there: the variable `url_env` names set (and `password_env`'s)?
3. Does the server answer, and take the login (``connect_timeout``)?
4. Can the role write the table: ``INSERT`` and ``UPDATE`` on it where it
   exists (the sink upserts), ``CREATE`` in its schema where it does not
   (the sink creates it)?

The first two need no network (`wid validate --offline` asks only those).
Under Spark Connect a stream's writer runs on the server, which reads its
own environment and may reach servers this machine cannot: nothing is
probed then (`wid.pipelines.read.check_before_spark`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wid.errors import ConfigError, MissingDependencyError
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec, SinkSpec
from wid.spec.secrets import mask_url, scrub, url_password
from wid.versions import pip_install

PROBE_S = 5  # seconds the connection may take (libpq's connect_timeout: whole seconds)
# Whether the role can write `table` (a regclass, or NULL when the table does not exist) or create it in the
# first schema of its search_path; current_schema() is NULL when none of that path exists.
WRITABLE_SQL = ("SELECT to_regclass(%(t)s) IS NOT NULL, "
                "COALESCE(has_table_privilege(to_regclass(%(t)s), 'INSERT, UPDATE'), false), "
                "COALESCE(has_schema_privilege(current_schema(), 'CREATE'), false), current_user, current_schema()")


def uses(spec: PipelineSpec | JoinPipelineSpec) -> Iterator[tuple[str, SinkSpec]]:
    """Each PostgreSQL sink of `spec`, with its role (``target``,
    ``dead_letter``: the TOML table)."""
    for role, sink in (("target", spec.target), ("dead_letter", spec.dead_letter)):
        if sink.kind == "postgres":
            yield role, sink


def check_postgres(spec: PipelineSpec | JoinPipelineSpec, network: bool = True, timeout_s: int = PROBE_S) -> None:
    """Check every PostgreSQL sink of `spec` (see the module docstring);
    without `network`, only the driver and the variables. Raises
    MissingDependencyError without psycopg; ConfigError naming
    ``<role>.url_env`` (or ``password_env``) for an unset variable,
    ``<role>.url`` or ``<role>.url_env`` for a server that does not answer
    within `timeout_s` seconds or refuses the login, ``<role>.table`` for a
    table the role can neither write nor create."""
    found = list(uses(spec))
    if found:
        try:
            import psycopg  # noqa: F401 - the driver the sink writes with, imported as the writer will
        except ImportError:
            raise MissingDependencyError("the PostgreSQL driver psycopg (for a postgres sink)",
                                         pip_install("postgres")) from None
    for role, sink in found:
        try:
            url = sink.connection_url()
        except ConfigError as err:
            raise err.at(role) from None
        if network:
            writable(role, sink, url, timeout_s)


def _connect(role: str, sink: SinkSpec, url: str, timeout_s: int) -> Any:
    """A connection to `url` within `timeout_s` seconds, or ConfigError
    naming the field the URL comes from and the server's answer (no
    password)."""
    import psycopg

    field = f"{role}.{'url' if sink.url is not None else 'url_env'}"
    where = mask_url(sink.url) if sink.url is not None else f"${sink.url_env}"
    try:
        return psycopg.connect(url, connect_timeout=timeout_s, autocommit=True)
    except psycopg.Error as err:
        text = scrub(str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__,
                     (url, url_password(url)))
        raise ConfigError(field, f"PostgreSQL at {where} does not answer within {timeout_s} s or refuses the "
                          f"connection ({text})", "start the server, or correct the URL, the role or the password"
                          ) from None


def writable(role: str, sink: SinkSpec, url: str, timeout_s: int = PROBE_S) -> None:
    """Raise ConfigError naming ``<role>.table`` unless the role `url` logs
    in as can upsert into `sink`'s table, or create it when it is missing
    (`WRITABLE_SQL`); ConfigError naming the URL's field when the server
    does not answer (`_connect`)."""
    from psycopg import sql

    table = sink.table or ""
    with _connect(role, sink, url, timeout_s) as con:
        quoted = sql.Identifier(table).as_string(con)
        exists, can_write, can_create, user, schema = con.execute(WRITABLE_SQL, {"t": quoted}).fetchone()
    if exists and not can_write:
        raise ConfigError(f"{role}.table", f"role {user} may not INSERT and UPDATE table {table!r}",
                          f"GRANT INSERT, UPDATE ON {quoted} TO {user}, or give a table it may write")
    if not exists and not can_create:
        where = f"schema {schema}" if schema else "any schema of its search_path (none exists)"
        raise ConfigError(f"{role}.table", f"table {table!r} does not exist, and role {user} may not create it in "
                          f"{where}", f"create the table, or GRANT CREATE ON SCHEMA {schema or 'public'} TO {user}")


__all__ = ["PROBE_S", "check_postgres", "uses", "writable"]
