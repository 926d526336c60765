"""The rate rule's SQL against its numpy form, on the same vectors, on every store backend (chDB
and the ClickHouse server, 18.16 here): every interval judged alike, a range judged with the
history before it, duplicates counted once, and the rollups holding the rule's sums."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from pipeline.model import SampleBatch
from pipeline.rates.rule import NS, RATED, Status
from pipeline.rates.sql import counter_sql, samples_judged_sql
from pipeline.store.base import Store
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.read import rollup_rows
from pipeline.store.schema import ROLLUP_1H, ROLLUP_1M, SERIES_KEY, Rollup
from tests.pipeline.rate_cases import batch, judged, wild_rows

HOUR = 3600 * NS


@pytest.fixture
def wild() -> SampleBatch:
    """The wild series, starting on an hour a few hours ago (TTLs run on the wall clock)."""
    base = (time.time_ns() - 4 * HOUR) // HOUR * HOUR
    return batch(wild_rows(seed=11, n=600), base)


def judged_rows(store: Store, lo_ns: int | None = None, hi_ns: int | None = None) -> Any:
    sql = samples_judged_sql(store.dialect, store.database, SERIES_KEY, [], lo_ns, hi_ns,
                             counter_sql())
    return store.query(f"SELECT * FROM ({sql}) ORDER BY port, metric, qual, t")


def test_the_sql_judges_every_interval_as_numpy_does(store: Store, wild: SampleBatch) -> None:
    store.insert_samples(wild)
    order, want = judged(wild)
    got = judged_rows(store)
    assert np.array_equal(got["t"], wild.ts_ns[order])
    assert set(want.status.tolist()) == {int(s) for s in Status if s is not Status.LATE}
    assert np.array_equal(got["st"], want.status)
    assert np.array_equal(got["inc"], want.increase, equal_nan=True)
    assert np.array_equal(got["dt"], np.nan_to_num(want.dt_ns))
    rated = np.isin(want.status, RATED)
    assert np.array_equal(got["rated_inc"], np.where(rated, want.increase, 0.0))
    assert np.array_equal(got["rated_ns"], np.where(rated, want.dt_ns, 0))


def test_a_range_is_judged_with_the_history_before_it(store: Store, wild: SampleBatch) -> None:
    store.insert_samples(wild)
    order, want = judged(wild)
    ts = wild.ts_ns[order]
    lo, hi = int(np.quantile(ts, 0.3)), int(np.quantile(ts, 0.8))
    got = judged_rows(store, lo, hi)
    inside = (ts >= lo) & (ts < hi)
    assert np.array_equal(got["t"], ts[inside])
    assert np.array_equal(got["st"], want.status[inside])
    assert np.array_equal(got["inc"], want.increase[inside], equal_nan=True)


def test_a_batch_delivered_twice_is_judged_once(store: Store, wild: SampleBatch) -> None:
    store.insert_samples(wild)
    half = wild.take(np.arange(len(wild) // 2))
    store.insert_samples(SampleBatch.concat([half, wild.take(np.arange(5))]))
    _, want = judged(wild)
    got = judged_rows(store)
    assert np.array_equal(got["st"], want.status)
    assert np.array_equal(got["inc"], want.increase, equal_nan=True)


def rated_sums(wild: SampleBatch, width_ns: int) -> dict[tuple[str, int], tuple[float, int]]:
    """(port, bucket) → (rated increase, rated ns) from the numpy rule."""
    order, want = judged(wild)
    rated = np.isin(want.status, RATED)
    out: dict[tuple[str, int], tuple[float, int]] = {}
    for i, row in enumerate(order):
        key = (wild.ports[wild.port[row]], int(wild.ts_ns[row]) // width_ns * width_ns)
        inc, span = out.get(key, (0.0, 0))
        if rated[i]:
            inc, span = inc + float(want.increase[i]), span + int(want.dt_ns[i])
        out[key] = (inc, span)
    return out


def rollup_sums(store: Store, rollup: Rollup) -> dict[tuple[str, int], tuple[float, int]]:
    c = store.query(f"SELECT port, rb, ri, rn FROM {rollup_rows(store, rollup)}")
    return {(str(p), int(b)): (float(i), int(n))
            for p, b, i, n in zip(c["port"], c["rb"], c["ri"], c["rn"], strict=True)}


def assert_sums(got: dict[tuple[str, int], tuple[float, int]],
                want: dict[tuple[str, int], tuple[float, int]], gauge: str) -> None:
    counters = {k: v for k, v in want.items() if k[0] != gauge}
    assert {k: v[1] for k, v in got.items() if k[0] != gauge} == {k: v[1]
                                                                  for k, v in counters.items()}
    for key, (inc, _) in counters.items():
        assert got[key][0] == pytest.approx(inc, rel=1e-12)
    assert all(v == (0.0, 0) for k, v in got.items() if k[0] == gauge)


def test_the_rollups_hold_the_rules_sums_rolled_or_not(store: Store, wild: SampleBatch) -> None:
    gauge = wild.ports[-1]
    store.insert_samples(wild)
    for rollup in (ROLLUP_1M, ROLLUP_1H):  # before the job ran: computed live from the samples
        assert_sums(rollup_sums(store, rollup), rated_sums(wild, rollup.bucket_ns), gauge)
    job = RollupJob(store, store.settings)
    job.catch_up(event_ns=int(wild.ts_ns.max()) + 2 * HOUR)
    assert job.stats.rolled[ROLLUP_1M.name] > 10
    for rollup in (ROLLUP_1M, ROLLUP_1H):
        assert_sums(rollup_sums(store, rollup), rated_sums(wild, rollup.bucket_ns), gauge)
