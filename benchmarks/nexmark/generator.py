"""Nexmark events (Person, Auction, Bid), generated with NumPy by the rules
of the Nexmark generator (nexmark/nexmark, ``nexmark-flink``'s
``generator/`` package, default ``NexmarkConfiguration``).

Event n (0-based, n < `events`) is, by ``n % 50``: a person (0), an auction
(1, 2, 3) or a bid (4 .. 49): 1 : 3 : 46. Its event time is
``EPOCH_2026_MS + n * 1000 // rate_per_s`` (an inter-event delay of
``1e6 / rate`` microseconds, 100 us at the default 10,000 events/s), so
times never decrease. Ids: person ``1000 + n // 50``, auction ``1000 + 3 *
(n // 50) + n % 50 - 1``. References, as in Nexmark (``hot`` batches of
100 ids, and a lead of 10 ids that makes some events refer to a person or
auction generated a little later):

- auction.seller: with probability 3/4 (hotSellersRatio 4) the first person
  of the last hot batch, else one of the last 1000 people plus the lead;
- auction: category ``10 + U{0..4}``, initial_bid a price, reserve
  ``initial_bid + price``, expires ``date_time + 1 + U[0, 2h)`` where h is
  the event time 1666 events ahead (100 auctions in flight) minus now;
- bid.auction: with probability 1/2 (hotAuctionRatio 2) the first auction of
  the last hot batch, else one of the last 100 auctions plus the lead;
- bid.bidder: with probability 3/4 (hotBiddersRatio 4) the second person of
  the last hot batch, else as seller. (nexmark-flink adds the first person id
  twice to bidders; Beam's generator, followed here, adds it once, so bidders
  are persons.)
- prices ``round(100 * 10 ** U[0, 6))`` cents; channel one of four hot
  channels (probability 1/2, with their URLs) or ``channel-i`` of 10,000.

Strings follow Nexmark's shapes (names, emails, credit cards, 6 states, 10
cities, random lower-case words with spaces, ``extra`` padding each event to
about 200 / 500 / 100 bytes) but hold only letters, digits, spaces and
``_/:.?&=@-``: never a comma, quote or newline. A reference past the last
generated id (the lead, at the very end of the stream) is clipped to it, so
every reference exists. Deterministic from (`events`, `seed`): chunks of
`CHUNK` events each draw from ``default_rng([seed, chunk])``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks import data

RATE_PER_S = 10_000
PERSON, AUCTION, BID = 1, 3, 46
TOTAL = PERSON + AUCTION + BID
FIRST_PERSON_ID = FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID, CATEGORIES = 10, 5
HOT_BATCH = 100  # hot sellers, bidders and auctions are the first (bidders: second) of a batch of 100 ids
HOT_SELLERS_RATIO, HOT_AUCTION_RATIO, HOT_BIDDERS_RATIO = 4, 2, 4
ACTIVE_PEOPLE, IN_FLIGHT_AUCTIONS, ID_LEAD = 1000, 100, 10
AVG_BYTES = {"person": 200, "auction": 500, "bid": 100}
CHUNK = 250_000  # events per chunk (a multiple of TOTAL)
STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
          "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
CHANNELS = 10_000
TABLES = ("person", "auction", "bid")


def nexmark(events: int, seed: int = 1) -> Path:
    """The directory ``benchmarks/.data/nexmark_<events>_<seed>`` holding
    ``person``, ``auction`` and ``bid`` as Parquet and header-less CSV
    (`benchmarks.data.write`), generated on first use. Columns, times in
    epoch ms:

    - person: id, name, email_address, credit_card, city, state, date_time_ms, extra
    - auction: id, item_name, description, initial_bid, reserve, date_time_ms,
      expires_ms, seller, category, extra
    - bid: auction, bidder, price, channel, url, date_time_ms, extra

    Raises ValueError when `events` < 50 (one of each kind needs 4 events;
    a whole cycle keeps the proportions)."""
    if events < TOTAL:
        raise ValueError(f"events must be at least {TOTAL} (one Nexmark cycle); got {events}")
    where = data.ROOT / f"nexmark_{events}_{seed}"
    if not (where / "bid.parquet").exists():
        for name, table in generate(events, seed).items():
            data.write(where, name, table)
        pa.default_memory_pool().release_unused()  # so later peak-RSS samples do not count the tables
    return where


def generate(events: int, seed: int = 1, rate_per_s: int = RATE_PER_S) -> dict[str, pa.Table]:
    """The three tables (see `nexmark`) in memory, in event order; a
    `rate_per_s` other than Nexmark's default stretches event time (tests
    use it to span many windows with few events)."""
    bases = _bases(np.random.default_rng([seed, 2**32]))
    last = np.int64(events - 1)
    chunks = [_chunk(np.arange(lo, min(lo + CHUNK, events), dtype=np.int64),
                     _Draw(np.random.default_rng([seed, lo // CHUNK]), bases, _last_person(last),
                           _last_auction(last), rate_per_s))
              for lo in range(0, events, CHUNK)]
    return {name: pa.concat_tables([c[name] for c in chunks]).combine_chunks() for name in TABLES}


@dataclass(frozen=True)
class _Draw:
    """What a chunk draws with: its generator, the fixed pools (`_bases`),
    the last person and auction ids of the whole stream (references are
    clipped to them) and the event rate."""

    rng: np.random.Generator
    bases: dict[str, pa.Array]
    last_person: np.int64
    last_auction: np.int64
    rate_per_s: int

    def time_ms(self, n: np.ndarray) -> np.ndarray:
        return event_time_ms(n, self.rate_per_s)


def event_time_ms(n: np.ndarray, rate_per_s: int = RATE_PER_S) -> np.ndarray:
    """Event time of event number `n` (epoch ms): Nexmark's
    ``baseTime + (long)(n * 1e6 / rate) / 1000``."""
    return data.EPOCH_2026_MS + n * 1000 // rate_per_s


def _last_person(n: np.ndarray) -> np.ndarray:
    """Base-0 id of the last person generated at or before event n."""
    return n // TOTAL * PERSON + np.minimum(n % TOTAL, PERSON - 1)


def _last_auction(n: np.ndarray) -> np.ndarray:
    """Base-0 id of the last auction generated at or before event n (-1 before the first)."""
    epoch, offset = n // TOTAL, n % TOTAL
    in_auctions = (offset >= PERSON) & (offset < PERSON + AUCTION)
    return np.where(in_auctions, epoch * AUCTION + offset - PERSON,
                    np.where(offset < PERSON, epoch - 1, epoch) * AUCTION + AUCTION - 1)


def _some_person(rng: np.random.Generator, n: np.ndarray) -> np.ndarray:
    """One of the last `ACTIVE_PEOPLE` people, or up to `ID_LEAD` ahead."""
    people = _last_person(n) + 1
    active = np.minimum(people, ACTIVE_PEOPLE)
    return people - active + (rng.random(len(n)) * (active + ID_LEAD)).astype(np.int64)


def _some_auction(rng: np.random.Generator, n: np.ndarray) -> np.ndarray:
    """One of the last `IN_FLIGHT_AUCTIONS` auctions, or up to `ID_LEAD` ahead."""
    last = _last_auction(n)
    low = np.maximum(last - IN_FLIGHT_AUCTIONS, 0)
    return low + (rng.random(len(n)) * (last - low + 1 + ID_LEAD)).astype(np.int64)


def _hot(rng: np.random.Generator, ratio: int, hot: np.ndarray, other: np.ndarray) -> np.ndarray:
    """`hot` with probability ``1 - 1/ratio``, else `other`."""
    return np.where(rng.integers(0, ratio, len(hot)) > 0, hot, other)


def _pick(rng: np.random.Generator, values: tuple[str, ...], size: int) -> pa.Array:
    return pa.array(values).take(rng.integers(0, len(values), size))


def _price(rng: np.random.Generator, size: int) -> np.ndarray:
    return np.floor(10.0 ** (rng.random(size) * 6.0) * 100.0 + 0.5).astype(np.int64)


def _chunk(n: np.ndarray, draw: _Draw) -> dict[str, pa.Table]:
    kind = n % TOTAL
    return {"person": _persons(draw, n[kind < PERSON]),
            "auction": _auctions(draw, n[(kind >= PERSON) & (kind < PERSON + AUCTION)]),
            "bid": _bids(draw, n[kind >= PERSON + AUCTION])}


def _persons(draw: _Draw, n: np.ndarray) -> pa.Table:
    rng, bases, size = draw.rng, draw.bases, len(n)
    name = pc.binary_join_element_wise(_pick(rng, FIRST_NAMES, size), _pick(rng, LAST_NAMES, size), " ")
    email = pc.binary_join_element_wise(
        pc.binary_join_element_wise(_words(rng, size, 7), _words(rng, size, 5), "@"), pa.scalar(".com"), "")
    card = pc.binary_join_element_wise(*(bases["card"].take(rng.integers(0, 10_000, size)) for _ in range(4)), " ")
    city, state = _pick(rng, CITIES, size), _pick(rng, STATES, size)
    used = 8 + sum(pc.binary_length(s).to_numpy() for s in (name, email, card, city, state))
    return pa.table({"id": _last_person(n) + FIRST_PERSON_ID, "name": name, "email_address": email,
                     "credit_card": card, "city": city, "state": state, "date_time_ms": draw.time_ms(n),
                     "extra": _extra(rng, bases["reusable"], used, AVG_BYTES["person"])})


def _auctions(draw: _Draw, n: np.ndarray) -> pa.Table:
    rng, bases, size, now = draw.rng, draw.bases, len(n), draw.time_ms(n)
    seller = _hot(rng, HOT_SELLERS_RATIO, _last_person(n) // HOT_BATCH * HOT_BATCH, _some_person(rng, n))
    horizon_ms = draw.time_ms(n + IN_FLIGHT_AUCTIONS * TOTAL // AUCTION) - now
    expires = now + 1 + (rng.random(size) * np.maximum(2 * horizon_ms, 1)).astype(np.int64)
    item, description = _words(rng, size, 20), _words(rng, size, 100)
    initial = _price(rng, size)
    used = 48 + pc.binary_length(item).to_numpy() + pc.binary_length(description).to_numpy()
    return pa.table({"id": _last_auction(n) + FIRST_AUCTION_ID, "item_name": item, "description": description,
                     "initial_bid": initial, "reserve": initial + _price(rng, size), "date_time_ms": now,
                     "expires_ms": expires, "seller": np.minimum(seller, draw.last_person) + FIRST_PERSON_ID,
                     "category": FIRST_CATEGORY_ID + rng.integers(0, CATEGORIES, size),
                     "extra": _extra(rng, bases["reusable"], used, AVG_BYTES["auction"])})


def _bids(draw: _Draw, n: np.ndarray) -> pa.Table:
    rng, bases, size = draw.rng, draw.bases, len(n)
    auction = _hot(rng, HOT_AUCTION_RATIO, _last_auction(n) // HOT_BATCH * HOT_BATCH, _some_auction(rng, n))
    bidder = _hot(rng, HOT_BIDDERS_RATIO, _last_person(n) // HOT_BATCH * HOT_BATCH + 1, _some_person(rng, n))
    hot = rng.integers(0, 2, size) > 0
    channel = np.where(hot, CHANNELS + rng.integers(0, len(HOT_CHANNELS), size), rng.integers(0, CHANNELS, size))
    return pa.table({"auction": np.minimum(auction, draw.last_auction) + FIRST_AUCTION_ID,
                     "bidder": np.minimum(bidder, draw.last_person) + FIRST_PERSON_ID, "price": _price(rng, size),
                     "channel": bases["channel"].take(channel), "url": bases["url"].take(channel),
                     "date_time_ms": draw.time_ms(n),
                     "extra": _extra(rng, bases["reusable"], np.full(size, 32), AVG_BYTES["bid"])})


def _bases(rng: np.random.Generator) -> dict[str, pa.Array]:
    """Fixed pools: credit-card quartets ``0000``..``9999``; the 10,000
    channels then the 4 hot ones, with their URLs (9 in 10 plain channels
    carry ``&channel_id=<abs(Integer.reverse(i))>``, Java's int overflow
    included); a 1 MiB string of letters that ``extra`` fields are cut from."""
    count = CHANNELS + len(HOT_CHANNELS)
    parts = [_words(rng, count, 5, b"_") for _ in range(3)]
    base = pc.binary_join_element_wise(pa.scalar("https://www.nexmark.com"), *parts, pa.scalar("item.htm?query=1"),
                                       "/")
    i = np.arange(CHANNELS, dtype=np.uint32)
    reversed_bits = np.zeros(CHANNELS, dtype=np.uint32)
    for bit in range(32):
        reversed_bits |= ((i >> bit) & 1) << (31 - bit)
    channel_id = np.abs(reversed_bits.view(np.int32))  # abs(Integer.MIN_VALUE) stays negative, as in Java
    tagged = np.concatenate([rng.integers(0, 10, CHANNELS) > 0, np.zeros(len(HOT_CHANNELS), bool)])
    suffix = pa.array(np.where(tagged, np.char.add("&channel_id=", np.concatenate(
        [channel_id, np.zeros(len(HOT_CHANNELS), np.int32)]).astype(str)), ""))
    return {"card": pa.array([f"{k:04d}" for k in range(10_000)]),
            "channel": pa.array([f"channel-{k}" for k in range(CHANNELS)] + list(HOT_CHANNELS)),
            "url": pc.binary_join_element_wise(base, suffix, ""),
            "reusable": np.frombuffer(_letters(rng, 2**20), dtype=np.uint8)}


def _letters(rng: np.random.Generator, size: int, special: bytes | None = None) -> bytes:
    """`size` random lower-case letters; each is `special` with probability 1/13."""
    chars = rng.integers(ord("a"), ord("z") + 1, size, dtype=np.uint8)
    if special is not None:
        chars[rng.integers(0, 13, size) == 0] = ord(special)
    return chars.tobytes()


def _words(rng: np.random.Generator, size: int, max_length: int, special: bytes = b" ") -> pa.Array:
    """Nexmark's ``nextString``: 3 to `max_length` - 1 characters, trimmed."""
    lengths = rng.integers(3, max_length, size)
    out = _strings(lengths, _letters(rng, int(lengths.sum()), special))
    return pc.utf8_trim(out, characters=" ") if special == b" " else out


def _extra(rng: np.random.Generator, reusable: np.ndarray, used: np.ndarray, average: int) -> pa.Array:
    """Nexmark's ``nextExtra``: padding of ``average - used`` bytes on average
    (uniform within +-20%), a substring of `reusable` at a random offset."""
    want = np.maximum(average - used, 0)
    delta = np.floor(want * 0.2 + 0.5).astype(np.int64)
    lengths = want - delta + (rng.random(len(want)) * 2 * delta).astype(np.int64)
    starts = (rng.random(len(want)) * (len(reusable) - lengths)).astype(np.int64)
    ends = np.cumsum(lengths)
    index = np.arange(ends[-1] if len(ends) else 0) + np.repeat(starts - (ends - lengths), lengths)
    return _strings(lengths, reusable[index].tobytes())


def _strings(lengths: np.ndarray, chars: bytes) -> pa.Array:
    """A string array whose i-th value is the next ``lengths[i]`` bytes of `chars`."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.StringArray.from_buffers(len(lengths), pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars))
