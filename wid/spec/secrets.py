"""Credentials in sink URLs: checked at config time, shown only as ``***``.

A PostgreSQL sink takes a libpq connection URI (``postgresql://user:pw@host:5432/db``)
or key=value string (``host=... dbname=... password=...``), written in the
pipeline (`url`), or read at run time from environment variables (`url_env`
for the whole URL, `password_env` for the password alone), so that the file
and its dumps hold no secret. Every text wid shows (messages, logs, reprs,
progress lines, `wid explain`, `dumps_pipeline`) goes through `mask_url` or
`scrub`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from wid.errors import ConfigError

MASK = "***"
SCHEMES = ("postgresql", "postgres")
_KEY_VALUE = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


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


def mask_url(url: str) -> str:
    """`url` with its password as ``***`` (and any ``password=`` value)."""
    masked = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]+)", rf"\g<1>{MASK}", url)
    if _is_uri(masked):
        parts = urlsplit(masked)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
            masked = urlunsplit(parts._replace(netloc=netloc))
    return masked


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
    """Return `url` if it reads as a PostgreSQL connection URI or key=value
    string, else raise ConfigError naming `field`, with the URL masked."""
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
    if not _KEY_VALUE.findall(url):
        raise ConfigError(field, f"'{mask_url(url)}' is neither a postgresql:// URI nor key=value pairs",
                          "write postgresql://user@host:5432/db or host=... dbname=...")
    return url


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of each non-empty secret (and its URL
    encoding) replaced by ``***``."""
    for secret in secrets:
        if secret:
            for form in {secret, quote(secret, safe="")}:
                text = text.replace(form, MASK)
    return text


__all__ = ["MASK", "check_postgres_url", "mask_url", "scrub", "url_password", "with_password"]
