"""Retrying a sink write through a transient outage, with bounded
exponential backoff.

A write is one transaction keyed by natural key, so running it again is
safe: a retry after a lost connection rewrites the same rows. Past the
budget the write raises `SinkUnavailableError`, whose one-line message
names the sink and the cause; a stream stops without committing its
micro-batch, so a rerun on the same checkpoint resumes exactly there (the
stream's runner says so: `wid.pipelines.run`; a batch run has no
checkpoint).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from wid.errors import SinkUnavailableError
from wid.spec.secrets import scrub

LOG = logging.getLogger("wid")
T = TypeVar("T")
MAX_BACKOFF_S = 30.0
UNAVAILABLE = "sink unavailable: "  # how the error reads inside Spark's wrapping (`wid.spark.errors.translate`)


def cause(err: BaseException, secrets: Iterable[str | None] = ()) -> str:
    """The first line of `err`, without any of `secrets`."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return scrub(text, secrets)


def with_retries(write: Callable[[], T], *, where: str, retries: int, backoff_ms: int,
                 transient: Callable[[BaseException], bool], secrets: Iterable[str | None] = (),
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `write`; on an error `transient` accepts, wait `backoff_ms` (then
    twice as long each time, at most `MAX_BACKOFF_S`) and run it again, up to
    `retries` times, logging one line per retry. `where` names the sink
    (no secret in it). Raises SinkUnavailableError past the budget; other
    errors propagate at once."""
    delay, waited = backoff_ms / 1000, 0.0
    secrets = list(secrets)
    for attempt in range(retries + 1):
        try:
            return write()
        except Exception as err:
            if not transient(err):
                raise
            if attempt == retries:
                raise SinkUnavailableError(f"{UNAVAILABLE}{where}: {cause(err, secrets)} (gave up after "
                                           f"{retries} retries over {waited:.0f} s)") from None
            LOG.warning("%s: %s; retry %d of %d in %.1f s", where, cause(err, secrets), attempt + 1, retries, delay)
            sleep(delay)
            waited += delay
            delay = min(delay * 2, MAX_BACKOFF_S)
    raise AssertionError("unreachable")  # the loop returns or raises


__all__ = ["UNAVAILABLE", "cause", "with_retries"]
