"""The ``[spark]`` table of a pipeline: where Spark runs (`master` or
`remote`) and its settings (`conf`), checked, and shown without secrets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wid.errors import ConfigError
from wid.spec.secrets import mask_url, masked_options

SPARK_KEYS = ("master", "remote", "conf")


def check_spark_table(spark: dict[str, Any], named: Callable[[str], str] = "spark.{}".format) -> None:
    """The ``[spark]`` table: `master` (``local[*]``, ``spark://host:7077``,
    ``yarn``...) or `remote` (a Spark Connect server, ``sc://host:15002``),
    not both, and `conf`, a table of Spark settings. Raises ConfigError
    naming the key as `named` writes it (``spark.master``; the command
    line's ``--master`` for a value given there)."""
    for key in spark:
        if key not in SPARK_KEYS:
            raise ConfigError(named(key), "unknown key", "use " + ", ".join(SPARK_KEYS))
    for key in ("master", "remote"):
        if key in spark and (not isinstance(spark[key], str) or not spark[key]):
            raise ConfigError(named(key), f"must be a string, got {spark[key]!r}")
    if "master" in spark and "remote" in spark:
        raise ConfigError(named("remote"), "a pipeline runs either on a master or on a Spark Connect server",
                          f"keep one of {named('master')} and {named('remote')}")
    if "remote" in spark and not str(spark["remote"]).startswith("sc://"):
        raise ConfigError(named("remote"), f"a Spark Connect URL starts with sc://, got {mask_url(str(spark['remote']))!r}",
                          "e.g. sc://127.0.0.1:15002")
    if str(spark.get("master", "")).startswith("sc://"):
        raise ConfigError(named("master"), "sc:// names a Spark Connect server",
                          f"give {mask_url(str(spark['master']))!r} as {named('remote')}")
    if not isinstance(spark.get("conf", {}), dict):
        raise ConfigError(named("conf"), "must be a table of Spark settings")


def masked_spark(spark: dict[str, Any]) -> dict[str, Any]:
    """The ``[spark]`` table as wid shows it: secret settings in `conf`
    (`wid.spec.secrets.is_secret`: ``spark.hadoop.fs.s3a.secret.key``...)
    and a token in `remote` (``sc://host:15002/;token=...``) as ``***``."""
    shown = {k: mask_url(v) if k in ("master", "remote") and isinstance(v, str) else v for k, v in spark.items()}
    if isinstance(spark.get("conf"), dict):
        shown["conf"] = masked_options(spark["conf"])
    return shown


__all__ = ["SPARK_KEYS", "check_spark_table", "masked_spark"]
