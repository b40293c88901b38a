"""The Nexmark generator (`benchmarks.nexmark.generator`): proportions,
times, ids and references, without Spark."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from benchmarks import data
from benchmarks.nexmark import generator as g

EVENTS = 20_000

COLUMNS = {
    "person": ["id", "name", "email_address", "credit_card", "city", "state", "date_time_ms", "extra"],
    "auction": ["id", "item_name", "description", "initial_bid", "reserve", "date_time_ms", "expires_ms", "seller",
                "category", "extra"],
    "bid": ["auction", "bidder", "price", "channel", "url", "date_time_ms", "extra"],
}


@pytest.fixture(scope="module")
def tables() -> dict[str, pa.Table]:
    return g.generate(EVENTS, seed=3)


def col(tables: dict[str, pa.Table], table: str, name: str) -> np.ndarray:
    return tables[table][name].to_numpy()


def test_columns_and_types(tables: dict[str, pa.Table]) -> None:
    for name, columns in COLUMNS.items():
        schema = tables[name].schema
        assert schema.names == columns
        for field in schema:
            assert field.type == (pa.string() if field.name in (
                "name", "email_address", "credit_card", "city", "state", "extra", "item_name", "description",
                "channel", "url") else pa.int64()), (name, field)


def test_proportions_1_3_46_per_50_events(tables: dict[str, pa.Table]) -> None:
    counts = [tables[t].num_rows for t in g.TABLES]
    assert counts == [EVENTS // 50 * 1, EVENTS // 50 * 3, EVENTS // 50 * 46]


def test_times_start_in_2026_at_10000_events_per_second_and_never_decrease(tables: dict[str, pa.Table]) -> None:
    # event n happens at n * 100 us: 10 events per ms, the last at (EVENTS - 1) // 10 ms
    every = np.concatenate([col(tables, t, "date_time_ms") for t in g.TABLES])
    assert every.min() == data.EPOCH_2026_MS
    assert every.max() == data.EPOCH_2026_MS + (EVENTS - 1) // 10
    for t in g.TABLES:
        assert np.all(np.diff(col(tables, t, "date_time_ms")) >= 0), t


def test_ids_are_consecutive_from_1000(tables: dict[str, pa.Table]) -> None:
    for t in ("person", "auction"):
        ids = col(tables, t, "id")
        assert np.array_equal(ids, np.arange(1000, 1000 + len(ids))), t


def test_every_reference_exists_and_some_lead(tables: dict[str, pa.Table]) -> None:
    persons, auctions = col(tables, "person", "id"), col(tables, "auction", "id")
    assert np.isin(col(tables, "auction", "seller"), persons).all()
    assert np.isin(col(tables, "bid", "auction"), auctions).all()
    assert np.isin(col(tables, "bid", "bidder"), persons).all()
    # Nexmark's lead: some bids name an auction made after them
    made = dict(zip(auctions, col(tables, "auction", "date_time_ms"), strict=True))
    bid_times, bid_auctions = col(tables, "bid", "date_time_ms"), col(tables, "bid", "auction")
    assert any(made[a] > t for a, t in zip(bid_auctions, bid_times, strict=True))


def test_hot_items_dominate_and_auctions_expire_after_they_start(tables: dict[str, pa.Table]) -> None:
    bidders = col(tables, "bid", "bidder")
    hot = (bidders - 1000) % 100 == 1  # the second person of a batch of 100
    assert 0.7 < hot.mean() < 0.8  # 3/4, plus the few random picks that land there
    start, expires = col(tables, "auction", "date_time_ms"), col(tables, "auction", "expires_ms")
    assert np.all(expires > start)
    assert np.all(col(tables, "auction", "reserve") >= col(tables, "auction", "initial_bid"))
    prices = col(tables, "bid", "price")
    assert prices.min() >= 100 and prices.max() <= 100_000_000


def test_strings_are_csv_safe_and_extra_pads_to_the_average_size(tables: dict[str, pa.Table]) -> None:
    for name, table in tables.items():
        for field in table.schema:
            if field.type == pa.string():
                text = "".join(table[field.name].to_pylist()[:2000])
                assert not set(text) & {",", '"', "\n", "\r"}, (name, field.name)
    sizes = [len(s) for s in col(tables, "bid", "extra")]
    assert 60 < np.mean(sizes) < 76  # 100 bytes minus the 32 of the numbers


def test_deterministic_from_the_seed() -> None:
    assert g.generate(500, seed=1)["bid"].equals(g.generate(500, seed=1)["bid"])
    assert not g.generate(500, seed=1)["bid"].equals(g.generate(500, seed=2)["bid"])


def test_refuses_fewer_than_one_cycle() -> None:
    with pytest.raises(ValueError, match="at least 50"):
        g.nexmark(49)
