"""Series through the query layer on every store backend: rates across resets and wraps, buckets,
duplicates, gauges, priorities, rollups against raw samples, and refused requests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pipeline.errors import QueryError
from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.store.rollup.job import RollupJob
from tests.ui.ui_fabric import NS, batch, now_s
from ui.query.layer import Query


def values(result: Any, qual: int | None = None) -> list[float | None]:
    [series] = [s for s in result.series if s.qual == qual]
    return [v for _, v in series.points]


def counter_rows(ts: np.ndarray, vals: np.ndarray, flags: Any = 0, metric: str = "if_in_octets",
                 qual: int = -1, port: str = "Ethernet1") -> tuple[Any, ...]:
    return ("leaf1", port, metric, qual, ts, vals, flags)


@pytest.fixture
def t0() -> int:
    # whole minutes, so 10 s and 60 s buckets line up with the samples
    return (now_s() - 3600 * NS) // (60 * NS) * 60 * NS


def test_counter_rate_is_per_second_and_bucketed(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 60) * NS
    store.insert_samples(batch([counter_rows(ts, np.arange(60) * 250.0)]))
    res = Query(store).series("leaf1", "Ethernet1", "if_in_octets", start=t0, end=t0 + 59 * NS,
                              step="10s").results[0]
    assert res.kind == "counter" and res.unit == "bytes/s" and res.source == "samples"
    assert [t for t, _ in res.series[0].points] == [t0 + k * 10 * NS for k in range(6)]
    assert values(res) == [250.0] * 6


def test_reset_is_not_a_negative_rate(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 60) * NS
    vals = np.where(np.arange(60) < 30, np.arange(60) * 10.0, (np.arange(60) - 30) * 10.0 + 5)
    store.insert_samples(batch([counter_rows(ts, vals)]))
    got = values(Query(store).series("leaf1", "Ethernet1", "if_in_octets", start=t0,
                                     end=t0 + 59 * NS, step="10s").results[0])
    # the 30th sample restarted at 5 at an unknown moment: that interval has no rate, and its
    # bucket's rate is over the nine intervals that have one
    assert got == [10.0] * 6


def test_a_reset_flag_means_no_rate_even_when_the_value_grew(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 20) * NS
    vals = np.where(np.arange(20) < 10, np.arange(20) * 10.0, 1000.0 + (np.arange(20) - 10) * 10)
    flags = np.where(np.arange(20) == 10, FLAG_RESET, 0)
    store.insert_samples(batch([counter_rows(ts, vals, flags)]))
    got = values(Query(store).series("leaf1", "Ethernet1", "if_in_octets", start=t0,
                                     end=t0 + 19 * NS, step="10s").results[0])
    # the device rebooted and counted 1000 since, over a time nobody knows: no rate for that
    # interval (not 1000 - 90 per second, not 1000 per second either)
    assert got == [10.0, 10.0]


def test_counter32_wrap(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 40) * NS
    vals = (2**32 - 15_000 + np.arange(40) * 1000.0) % 2**32
    store.insert_samples(batch([counter_rows(ts, vals, FLAG_COUNTER32)]))
    got = values(Query(store).series("leaf1", "Ethernet1", "if_in_octets", start=t0,
                                     end=t0 + 39 * NS, step="10s").results[0])
    assert got == [1000.0] * 4


def test_duplicates_collapse(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 60) * NS
    counter = counter_rows(ts, np.arange(60) * 100.0)
    gauge = ("leaf1", "Ethernet1", "queue_occupancy_bytes", 3, ts, np.arange(60) * 1.0, 0)
    store.insert_samples(batch([counter, gauge]))
    # a redelivery of the first 25 samples, in a batch shaped differently
    store.insert_samples(batch([("leaf1", "Ethernet1", "queue_occupancy_bytes", 3, ts[:25],
                                 np.arange(25) * 1.0, 0), counter_rows(ts[:25],
                                                                       np.arange(25) * 100.0)]))
    q = Query(store)
    rates = values(q.series("leaf1", "Ethernet1", "if_in_octets", start=t0, end=t0 + 59 * NS,
                            step="30s").results[0])
    means = values(q.series("leaf1", "Ethernet1", "queue_occupancy_bytes", start=t0,
                            end=t0 + 59 * NS, step="30s").results[0], qual=3)
    assert rates == [100.0, 100.0]
    assert means == [14.5, 44.5]


def test_gauge_aggregates_and_empty_buckets(store: Any, t0: int) -> None:
    ts = np.concatenate([t0 + np.arange(0, 10) * NS, t0 + np.arange(30, 40) * NS])
    vals = np.concatenate([np.arange(10) * 1.0, 100 + np.arange(10) * 1.0])
    store.insert_samples(batch([("leaf1", "Ethernet1", "queue_occupancy_bytes", 0, ts, vals, 0)]))
    q = Query(store)

    def agg(how: str) -> list[float | None]:
        return values(q.series("leaf1", "Ethernet1", "queue_occupancy_bytes", start=t0,
                               end=t0 + 39 * NS, step="10s", agg=how).results[0], qual=0)

    assert agg("mean") == [4.5, None, None, 104.5]
    assert agg("max") == [9.0, None, None, 109.0]
    assert agg("min") == [0.0, None, None, 100.0]
    assert agg("last") == [9.0, None, None, 109.0]


def test_priorities_are_separate_series(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 20) * NS
    store.insert_samples(batch([
        counter_rows(ts, np.arange(20) * 3.0, metric="pfc_rx_frames", qual=3),
        counter_rows(ts, np.arange(20) * 4.0, metric="pfc_rx_frames", qual=4),
    ]))
    q = Query(store)
    both = q.series("leaf1", "Ethernet1", "pfc_rx_frames", start=t0, end=t0 + 19 * NS,
                    step="10s").results[0]
    assert {s.qual: [v for _, v in s.points] for s in both.series} == {3: [3.0, 3.0],
                                                                        4: [4.0, 4.0]}
    one = q.series("leaf1", "Ethernet1", "pfc_rx_frames", qual=4, start=t0, end=t0 + 19 * NS,
                   step="10s").results[0]
    assert [s.qual for s in one.series] == [4]


def test_rollups_agree_with_raw_samples(store: Any) -> None:
    t0 = (now_s() - 9 * 3600 * NS) // (3600 * NS) * 3600 * NS
    n = 8 * 3600
    ts = t0 + np.arange(n, dtype=np.int64) * NS
    rng = np.random.default_rng(5)
    counter = np.cumsum(rng.integers(0, 1000, n)).astype(np.float64)
    gauge = rng.integers(0, 5000, n).astype(np.float64)
    store.insert_samples(batch([
        counter_rows(ts, counter),
        ("leaf1", "Ethernet1", "queue_watermark_bytes", 2, ts, gauge, 0),
    ]))
    RollupJob(store, store.settings).run_once()  # the complete minutes and hours are rolled
    q = Query(store)
    end = t0 + (n - 1) * NS
    assert {r.name for r in q.rollups()} == {"samples_1m", "samples_1h"}
    for step, source in (("1m", "1m"), ("1h", "1h")):
        raw = q.series("leaf1", "Ethernet1", "if_in_octets", start=t0, end=end, step=step,
                       source="raw").results[0]
        rolled = q.series("leaf1", "Ethernet1", "if_in_octets", start=t0, end=end, step=step,
                          source=source).results[0]
        assert rolled.source == f"samples_{source}" and raw.source == "samples"
        assert np.allclose(np.array(values(raw), float), np.array(values(rolled), float))
        for how in ("max", "min", "last"):
            kw: dict[str, Any] = {"start": t0, "end": end, "step": step, "agg": how}
            raw_g = q.series("leaf1", "Ethernet1", "queue_watermark_bytes", source="raw", **kw)
            rolled_g = q.series("leaf1", "Ethernet1", "queue_watermark_bytes", source=source,
                                **kw)
            assert values(raw_g.results[0], 2) == values(rolled_g.results[0], 2)
    # a long range picks the coarsest rollup whose width divides the step
    auto = q.series("leaf1", "Ethernet1", "if_in_octets", start=t0, end=end, step="2h")
    assert auto.results[0].source == "samples_1h"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"metrics": "if_in_bogus"}, "unknown metric"),
    ({"device": "leaf1' OR 1=1 --"}, "not a valid device"),
    ({"port": "Eth 1;"}, "not a valid port"),
    ({"metrics": "if_in_octets", "qual": 3}, "has no priority or queue"),
    ({"metrics": "pfc_rx_frames", "qual": 9}, "0..7"),
    ({"start": "now-10d", "step": "1s"}, "use a step of at least"),
    ({"start": "now", "end": "now-1h"}, "must be before end"),
    ({"start": "now-500d", "step": "1d"}, "the limit is"),
    ({"step": "0s"}, "must be positive"),
    ({"step": "1y"}, "want a duration"),
    ({"step": "10ms"}, "below the minimum"),
    ({"agg": "max"}, "is a counter"),
    ({"metrics": "queue_occupancy_bytes", "agg": "median"}, "not one of"),
    ({"start": "1700000000"}, "not nanoseconds"),
    ({"start": "2026-01-01T00:00:00"}, "no time zone"),
    ({"source": "5m"}, "not one of"),
    ({"metrics": ["if_in_octets"] * 17}, "at most 16"),
])
def test_refused_requests(chdb_store: Any, kwargs: dict[str, Any], message: str) -> None:
    args = {"device": "leaf1", "port": "Ethernet1", "metrics": "if_in_octets"}
    args.update(kwargs)
    with pytest.raises(QueryError, match=message):
        Query(chdb_store).series(args.pop("device"), args.pop("port"), args.pop("metrics"),
                                 **args)


def test_counters_and_gauges_in_one_request(store: Any, t0: int) -> None:
    ts = t0 + np.arange(0, 120) * NS
    store.insert_samples(batch([
        counter_rows(ts, np.arange(120) * 7.0),
        counter_rows(ts, np.arange(120) * 3.0, metric="pfc_tx_frames", qual=3),
        ("leaf1", "Ethernet1", "queue_occupancy_bytes", 3, ts, np.arange(120) % 60 * 1.0, 0),
    ]))
    q = Query(store)
    for source in ("raw", "1m"):
        got = q.series("leaf1", "Ethernet1", ["queue_occupancy_bytes", "if_in_octets",
                                              "pfc_tx_frames", "if_in_fcs_errors"],
                       start=t0 + 60 * NS, end=t0 + 119 * NS, step="60s", agg="max",
                       source=source)
        by = {r.metric: r for r in got.results}
        assert [r.metric for r in got.results] == ["queue_occupancy_bytes", "if_in_octets",
                                                   "pfc_tx_frames", "if_in_fcs_errors"]
        assert values(by["if_in_octets"]) == [7.0]
        assert values(by["pfc_tx_frames"], qual=3) == [3.0]
        assert values(by["queue_occupancy_bytes"], qual=3) == [59.0]
        assert by["if_in_fcs_errors"].series == []  # not reported: no series at all
