"""Secrets: PostgreSQL URLs and secret options, checked at config time,
read from the environment at run time, shown only as ``***``.

A PostgreSQL sink takes a libpq connection URI (``postgresql://user:pw@host:5432/db``)
or key=value string (``host=... dbname=... password=...``), written in the
pipeline (`url`), or read at run time from environment variables (`url_env`
for the whole URL, `password_env` for the password alone). Any source or
sink takes Spark options from environment variables too (`options_env`:
option name -> variable name, such as Kafka's ``kafka.sasl.jaas.config``),
so that the file and its dumps hold no secret.

Every text wid shows (messages, logs, reprs, progress lines, `wid explain`,
`dumps_pipeline`) shows a URL through `mask_url`, options through
`masked_options`, and text from outside (a driver's message) through `scrub`.
The rule for which option is a secret is `is_secret`.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from wid.errors import ConfigError

MASK = "***"
SCHEMES = ("postgresql", "postgres")
_KEY_VALUE = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")
# A whole libpq key=value string: pairs, each value quoted ('...', \ escapes) or up to a space.
_CONNINFO = re.compile(r"\s*(?:[A-Za-z_]\w*\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']\S*)\s*)+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_SECRET_WORD = re.compile(r"password|passwd|secret|token|jaas|credential|private")
_SECRET_PART = ("key", "sas")
_WORDS = re.compile(r"[._\-\s]+|(?<=[a-z0-9])(?=[A-Z])")
# A key=value pair at the start, after a space, or after ?, & or ; (a URL's
# parameters). Its value, in a URL, runs to the next &; in a libpq string,
# to the next space past a quoted part ('...' with \ escapes, or "...").
_PAIR = r"(?<![^\s?&;])(?P<key>[A-Za-z_][\w.-]*)(?P<eq>\s*=\s*)(?P<value>{value})"
_URL_PAIR = re.compile(_PAIR.format(value="[^&]*"))
_LIBPQ_PAIR = re.compile(_PAIR.format(value=r"(?:'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?)?\S*"))
_LIBPQ = re.compile(r"\s*[A-Za-z_]\w*\s*=")
# The module Spark Connect's server runs a stream's foreachBatch function in (its own Python process).
CONNECT_WRITER = "pyspark.sql.connect.streaming.worker.foreach_batch_worker"


def is_secret(name: str) -> bool:
    """Whether an option (or URL parameter) called `name` holds a secret,
    whose value wid shows as ``***``. The rule: cut the name into words at
    ``.``, ``_``, ``-`` and lower-to-upper case changes; it is a secret when
    a word contains ``password``, ``passwd``, ``secret``, ``token``,
    ``jaas``, ``credential`` or ``private`` (any case), or is ``key`` or
    ``sas``. So ``kafka.sasl.jaas.config``, ``kafka.ssl.key.password``,
    ``kafka.ssl.keystore.key``,
    ``kafka.sasl.oauthbearer.client.credentials.client.secret``,
    ``fs.s3a.access.key``, ``fs.azure.sas.*``, ``sslpassword`` are secrets;
    ``kafka.bootstrap.servers``, ``subscribe``, ``sslmode`` are not. It
    errs on the side of masking (``kafka.sasl.mechanism`` is shown,
    ``...token.endpoint.url`` is not)."""
    words = [w.lower() for w in _WORDS.split(name) if w]
    return any(_SECRET_WORD.search(w) or w in _SECRET_PART for w in words)


def masked_options(options: Mapping[str, object]) -> dict[str, object]:
    """`options` as wid shows them: a secret option's value (`is_secret`)
    as ``***``, and a password in any other text value masked (`mask_url`)."""
    return {k: MASK if is_secret(k) else mask_url(v) if isinstance(v, str) else v for k, v in options.items()}


def _mask_pairs(text: str, pair: re.Pattern[str]) -> str:
    """`text` with the value of each secret-named ``key=value`` pair as ``***``."""
    def one(m: re.Match[str]) -> str:
        return f"{m['key']}{m['eq']}{MASK}" if is_secret(m["key"]) and m["value"] else m[0]
    return pair.sub(one, text)


def _mask_user_info(url: str) -> str:
    """`url` with the password of its user info as ``***``: after
    ``scheme://`` (or from the start, when the text has no ``scheme://``:
    ``user:pw@host``, and a mistyped ``postgresql:/user:pw@host``, whose
    ``postgresql`` then reads as the user), the user runs to the first
    ``:``, the password from there to the last ``@``, so that a password
    holding ``@``, ``:`` or ``/`` is masked whole. A ``user:pw@host`` whose
    password starts with ``//`` reads as a URL of scheme ``user``."""
    scheme = _SCHEME.match(url)
    start = scheme.end() if scheme else 0
    at = url.rfind("@", start)
    colon = url.find(":", start, at)
    if at < 0 or colon < 0 or colon + 1 == at:
        return url
    return f"{url[:colon + 1]}{MASK}{url[at:]}"


def mask_url(url: str) -> str:
    """`url` with every password in it as ``***``, whatever its form: the
    user info of ``scheme://user:pw@host``, ``scheme:/user:pw@host`` or
    ``user:pw@host`` (`_mask_user_info`), and the value of each secret-named
    pair (`is_secret`: ``password=``, ``sslpassword=``, ``token=``...) of a
    libpq key=value string (quoted or not) or of a URL's parameters
    (``?password=...``, Spark Connect's ``;token=...``). A password is
    masked as written, percent-encoded or not. A URL without password comes
    back unchanged but for an ``@`` after a ``:`` in its parameters, which
    reads as user info (masking too much, never too little)."""
    if _LIBPQ.match(url):
        return _mask_pairs(url, _LIBPQ_PAIR)
    return _mask_pairs(_mask_user_info(url), _URL_PAIR)


def _is_uri(url: str) -> bool:
    return "://" in url


def url_password(url: str) -> str | None:
    """The password `url` holds (URI user info, a ``password`` query
    parameter, or a ``password=`` pair), or None."""
    if _is_uri(url):
        parts = urlsplit(url)
        if parts.password:
            return unquote(parts.password)
        query = dict(parse_qsl(parts.query))
        return query.get("password")
    pairs = {k: v.strip("'") for k, v in _KEY_VALUE.findall(url)}
    return pairs.get("password")


def with_password(url: str, password: str) -> str:
    """`url` with `password` set (URI user info, or a ``password=`` pair)."""
    if not _is_uri(url):
        escaped = password.replace("\\", "\\\\").replace("'", "\\'")
        return f"{url} password='{escaped}'"
    parts = urlsplit(url)
    user = quote(unquote(parts.username or ""), safe="")
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))


def check_postgres_url(field: str, url: object) -> str:
    """Return `url` if it reads as a PostgreSQL connection URI or a whole
    key=value string, else raise ConfigError naming `field`, with the URL
    masked (`mask_url`)."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(field, "must be a connection URL", "e.g. postgresql://user@localhost:5432/db")
    if _is_uri(url):
        scheme = url.split("://", 1)[0]
        if scheme not in SCHEMES:
            raise ConfigError(field, f"'{mask_url(url)}' is not a PostgreSQL URL (scheme '{scheme}')",
                              "write postgresql://user@host:5432/db")
        try:
            urlsplit(url).port  # noqa: B018  (parses the port)
        except ValueError as err:
            raise ConfigError(field, f"'{mask_url(url)}': {err}", "write postgresql://user@host:5432/db") from None
        return url
    if not _CONNINFO.fullmatch(url):
        raise ConfigError(field, f"'{mask_url(url)}' is neither a postgresql:// URI nor key=value pairs",
                          "write postgresql://user@host:5432/db or host=... dbname=...")
    return url


def this_process() -> tuple[str, str]:
    """Which process this is, for a message on a variable it lacks, and
    where to set the variable: Spark Connect's server runs a stream's
    foreachBatch writer in a Python process of its own (`CONNECT_WRITER`),
    which has the server's environment, not the client's; any other process
    is the one wid runs in (the driver, or a Spark Connect client)."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    where = f"pid {os.getpid()}, host {socket.gethostname()}"
    if getattr(main, "name", None) == CONNECT_WRITER:
        return (f"the Spark Connect server's stream writer ({where})",
                "set it in the Spark Connect server's environment (where the server starts), not the client's")
    return (f"this process ({where})",
            "set it where wid runs; under Spark Connect a stream's sinks read it on the server: set it there")


def from_environment(field: str, variable: str, what: str = "") -> str:
    """The value of environment variable `variable`. Raises ConfigError
    naming `field`, the variable (`what` says what it holds) and the process
    that lacks it (`this_process`), in one line."""
    value = os.environ.get(variable)
    if value is None:
        process, fix = this_process()
        raise ConfigError(field, f"environment variable {variable}{what} is not set in {process}", fix)
    return value


def resolved_options(field: str, options: Mapping[str, object], options_env: Mapping[str, str]) -> dict[str, str]:
    """Spark options: `options` as text, then each of `options_env`
    (option -> environment variable name) read from the environment now
    (`from_environment`, naming `field`)."""
    read = {k: from_environment(field, v, f" (for option {k})") for k, v in options_env.items()}
    return {**{k: str(v) for k, v in options.items()}, **read}


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of each non-empty secret (and its URL
    encoding) replaced by ``***``."""
    for secret in secrets:
        if secret:
            for form in {secret, quote(secret, safe="")}:
                text = text.replace(form, MASK)
    return text


__all__ = ["CONNECT_WRITER", "MASK", "check_postgres_url", "from_environment", "is_secret", "mask_url",
           "masked_options", "resolved_options", "scrub", "this_process", "url_password", "with_password"]
