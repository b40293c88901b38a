"""A pipeline's ``[spark]`` table (`check_spark_table`; shown without
secrets, `masked_spark`), and Spark master
URLs read as Spark reads them, before Spark starts (`check_master`).

Spark parses a master URL only when its context starts
(``SparkContext.createTaskScheduler``), after the JVM is up, and a URL it
cannot parse ends there with an error that names the JVM's exit, not the
URL. These are the forms Spark 4 accepts (its cluster managers: local,
standalone, YARN, Kubernetes; Mesos was removed in Spark 4.0):

- ``local``, ``local[N]``, ``local[*]``, and with a task retry count
  ``local[N,F]``, ``local[*,F]``;
- ``local-cluster[N,cores,memory]`` (Spark's own test cluster);
- ``spark://host:port``, or several masters (standby masters):
  ``spark://host1:port1,host2:port2``;
- ``yarn``;
- ``k8s://https://host:port`` (``k8s://host:port`` means https).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from wid.errors import ConfigError
from wid.spec.secrets import mask_url, masked_options

_LOCAL = re.compile(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]")
_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
FORMS = "local[*], local[N], spark://host:7077, yarn or k8s://https://host:443"


def standalone_masters(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://`` master URL, in order; [] for
    any other form."""
    if not master.startswith("spark://"):
        return []
    found = [_HOST_PORT.fullmatch(part.strip()) for part in master.removeprefix("spark://").split(",")]
    return [(m.group(1).strip("[]"), int(m.group(2))) for m in found if m is not None]


def check_master(master: str, field: str = "spark.master") -> None:
    """Raise ConfigError naming `field` when Spark would not parse `master`
    (see the module docstring), or when it asks for no cores."""
    local = _LOCAL.fullmatch(master)
    if local:
        if local.group(1) == "0":
            raise ConfigError(field, f"{master!r} asks for 0 cores", "use local[*] or local[N] with N >= 1")
        return
    if _LOCAL_CLUSTER.fullmatch(master) or master == "yarn":
        return
    if master.startswith("spark://"):
        parts = master.removeprefix("spark://").split(",")
        if all(_HOST_PORT.fullmatch(p.strip()) for p in parts):
            return
        raise ConfigError(field, f"{master!r} is not a standalone master URL",
                          "write spark://host:port (several masters: spark://host1:port1,host2:port2)")
    if master.startswith("k8s://") and len(master) > len("k8s://"):
        return
    raise ConfigError(field, f"{master!r} is not a Spark master URL", f"use {FORMS}")


SPARK_KEYS = ("master", "remote", "conf")


def check_spark_table(spark: dict[str, Any], named: Callable[[str], str] = "spark.{}".format) -> None:
    """The ``[spark]`` table: `master` (``local[*]``, ``spark://host:7077``,
    ``yarn``..., `wid.spec.masters`) or `remote` (a Spark Connect server, ``sc://host:15002``),
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
    if "master" in spark:
        check_master(spark["master"], named("master"))
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



__all__ = ["FORMS", "SPARK_KEYS", "check_master", "check_spark_table", "masked_spark", "standalone_masters"]
