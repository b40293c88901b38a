"""The WID paper's running example (Li et al., SIGMOD 2005): highway
sensors report speeds; per segment, the min and max speed over the last 5
minutes, every minute, closed by punctuations instead of waiting out the
lateness.

    python examples/traffic.py [--minutes 30] [--segments 4] [--out DIR]
    wid run examples/traffic.toml

The readings are synthetic (no real sensor feed ships with wid): one sensor
per segment reports every 20 s, at 60 mph plus noise, slowing down in a
jam; readings reach the landing directory with up to 30 s of disorder. At
the end of each minute each sensor sends a punctuation ``(seg_id, ts =
minute boundary, is_punctuation = true)``: no more readings of that segment
before the boundary, the paper's ``(seg-id, *, <=t)``. One reading in 40 is
delayed by six minutes, past the punctuations that close every window it
belongs to (the window is generous: a reading late for only some of its
windows still counts in the others): late, it goes to the dead letter. One
file lands per minute of arrival.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
T0_MS = 1_700_000_000_000 - 1_700_000_000_000 % 60_000  # a minute boundary


def readings(minutes: int, segments: int, seed: int = 5) -> list[tuple[int, dict[str, Any]]]:
    """(arrival time in ms, row) for every reading and punctuation."""
    rng = random.Random(seed)
    out = []
    count = 0
    for s in range(segments):
        seg = f"I5-N-{s + 1:02d}"
        for m in range(minutes):
            jam = 25.0 if 10 <= m < 15 and s == 1 else 0.0
            for i in range(3):
                ts = T0_MS + m * 60_000 + i * 20_000 + rng.randrange(1_000)
                arrival = ts + rng.randrange(30_000)
                count += 1
                if count % 40 == 7 and m < minutes - 7:  # every 40th reading, unless the stream ends first
                    arrival += 360_000
                speed = round(60.0 - jam + rng.gauss(0, 4), 1)
                out.append((arrival, {"seg_id": seg, "speed": speed, "ts": ts, "is_punctuation": False}))
            boundary = T0_MS + (m + 1) * 60_000
            out.append((boundary + 31_000, {"seg_id": seg, "speed": None, "ts": boundary, "is_punctuation": True}))
    return sorted(out, key=lambda a: (a[0], a[1]["seg_id"]))


def files(minutes: int, segments: int) -> list[list[dict[str, Any]]]:
    """The rows of each landing file: one per minute of arrival."""
    by_minute: dict[int, list[dict[str, Any]]] = {}
    for arrival, row in readings(minutes, segments):
        by_minute.setdefault((arrival - T0_MS) // 60_000, []).append(row)
    return [by_minute[k] for k in sorted(by_minute)]


def land(directory: Path, minutes: int = 30, segments: int = 4) -> int:
    """Write the landing files; returns how many."""
    directory.mkdir(parents=True, exist_ok=True)
    batches = files(minutes, segments)
    for i, rows in enumerate(batches):
        path = directory / f"minute-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    return len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--out", default=str(HERE.parent / "out" / "landing" / "traffic"))
    args = parser.parse_args()
    n = land(Path(args.out), args.minutes, args.segments)
    print(f"landed {n} files under {args.out}")


if __name__ == "__main__":
    main()
