"""A minute roll reads before its first bucket only the history the rate rule needs
(:mod:`pipeline.store.rollup.history`), on every store backend (chDB, the ClickHouse server,
18.16 here, and the cluster): the series whose rollup row of the minute before proves it read
that minute only, the others the whole horizon, and the rolled rows are the ones a roll over the
whole horizon writes and the numpy rule's sums, through late samples, a restart, gaps, resets,
Counter32 wraps, series that start mid-minute and series absent for a minute."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from pipeline.metrics import IS_COUNTER
from pipeline.model import FLAG_COUNTER32, FLAG_RESET, SampleBatch
from pipeline.rates.rule import HORIZON_NS, RATED, intervals
from pipeline.store.base import Store
from pipeline.store.rollup.history import LOOKBACK, roll_samples_sql, rows_relation
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.sql import dedup_select, floor_to, roll_sql, samples_select
from pipeline.store.schema import ROLLUP_1M, SERIES_KEY
from tests.pipeline.rate_cases import Row, batch

NS = 1_000_000_000
MINUTE = 60 * NS
READ = ("v0", "v1", "vmin", "vmax", "t0", "t1", "cnt", "fl", "ri", "rn")
#: the devices (on the cluster, both shards hold some)
DEVICES = ("leaf1", "leaf2", "leaf3", "spine1")
#: the minute the constructed cases turn on (s from the start)
TURN = 180
C32 = FLAG_COUNTER32


def _series(port: str, times: Sequence[float], values: Sequence[float] | None = None,
            flags: Sequence[int] | None = None) -> list[tuple[float, str, int, float, int]]:
    vals = values if values is not None else [1000.0 * (k + 1) ** 2 for k in range(len(times))]
    fl = flags if flags is not None else [0] * len(times)
    return [(t, port, -1, v, f) for t, v, f in zip(times, vals, fl, strict=True)]


def case_rows() -> list[Row]:
    """Counter series over seven minutes, each on every device (times in s from the start)."""
    # the previous minute holds five samples: the sixth before TURN (78 s before it) decides
    # the cadence, and with it whether the interval ending 38 s after TURN is a gap (median
    # of 10, 10, 18, 18, 20 is 18: 40 s is no gap; without the oldest, 14: a gap)
    five = [12, 42, 72, 102, 122, 140, 158, 168, 178, 218, *range(228, 420, 10)]
    steady = [3 + 10 * k for k in range(42)]  # six a minute: the minute before proves
    slow = [7 + 20 * k for k in range(21)]  # three a minute: every roll reads the horizon
    fast = [1 + 5 * k for k in range(84)]
    mid = list(range(150, 420, 5))  # starts half-way through minute 2
    # absent for minute 2; back at 185: the interval to 215 is a gap only with the 10 s
    # cadence of minute 1 (read from the horizon)
    absent = [5 + 10 * k for k in range(12)] + [185, 215] + list(range(225, 420, 10))
    # a flagged restart and a Counter32 wrap on each minute's first sample
    reset_t = [3 + 10 * k for k in range(42)]
    reset_v = [1e6 + 500.0 * k if 3 + 10 * k < TURN else 10.0 * k for k in range(42)]
    reset_f = [FLAG_RESET if t == TURN + 3 else 0 for t in reset_t]
    wrap_v = [float((2**32 - 3000 + 137 * k) % 2**32) for k in range(42)]
    rows = [*_series("Ethernet1", five), *_series("Ethernet2", steady),
            *_series("Ethernet3", slow), *_series("Ethernet4", fast),
            *_series("Ethernet5", mid), *_series("Ethernet6", absent),
            *_series("Ethernet7", reset_t, reset_v, reset_f),
            *_series("Ethernet8", steady, wrap_v, [C32] * len(steady))]
    return [(float(t), dev, port, "if_in_octets", q, v, f) for dev in DEVICES
            for t, port, q, v, f in rows]


@pytest.fixture
def start() -> int:
    """The first minute but one of the hour two hours ago (TTLs run on the wall clock), so the
    cases' seven minutes never complete an hour, whatever the time of day (started in an hour's
    last minutes, the job also rolled that hour: a statement more than the test counts)."""
    return floor_to(time.time_ns() - 2 * 3600 * NS, 3600 * NS) + MINUTE


@pytest.fixture
def cases(start: int) -> SampleBatch:
    return batch(case_rows(), start)


def _rows(store: Store, relation: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    c = store.query(f"SELECT {', '.join(SERIES_KEY)}, rb, {', '.join(READ)} FROM {relation}")
    keys = zip(*(c[k].tolist() for k in (*SERIES_KEY, "rb")), strict=True)
    return dict(zip(keys, zip(*(c[n].tolist() for n in READ), strict=True), strict=True))


def rolled(store: Store) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The job's rows (one per series and bucket, as a merge keeps)."""
    return _rows(store, f"({dedup_select(store.dialect, store.database, ROLLUP_1M, None, None)})")


def whole_horizon(store: Store, lo_ns: int, hi_ns: int) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The rows a roll of ``[lo_ns, hi_ns)`` that reads the rule's whole horizon writes."""
    sql = samples_select(store.dialect, store.database, MINUTE, lo_ns, hi_ns)
    return _rows(store, f"({sql})")


def numpy_sums(b: SampleBatch) -> dict[tuple[str, str, int], tuple[float, int]]:
    """(device, port, bucket) → the numpy rule's rated increase and ns, over the whole batch."""
    key = (b.device.astype(np.int64) << 40) | (b.port.astype(np.int64) << 8)
    order = np.lexsort((b.ts_ns, key))
    got = intervals(key[order], b.ts_ns[order], b.value[order], b.flags[order],
                    IS_COUNTER[b.metric[order].astype(np.int64)])
    out: dict[tuple[str, str, int], tuple[float, int]] = {}
    rated = np.isin(got.status, RATED)
    for i, row in enumerate(order):
        k = (b.devices[b.device[row]], b.ports[b.port[row]], int(b.ts_ns[row]) // MINUTE * MINUTE)
        inc, span = out.get(k, (0.0, 0))
        if rated[i]:
            inc, span = inc + float(got.increase[i]), span + int(got.dt_ns[i])
        out[k] = (inc, span)
    return out


def assert_rule(rows: dict[tuple[Any, ...], tuple[Any, ...]], b: SampleBatch) -> None:
    want = numpy_sums(b)
    got = {(k[0], k[1], k[4]): (v[8], v[9]) for k, v in rows.items()}
    assert {k: v[1] for k, v in got.items()} == {k: v[1] for k, v in want.items() if k in got}
    for k, (inc, _) in got.items():
        assert inc == pytest.approx(want[k][0], rel=1e-12), k


def test_a_roll_reads_the_minute_before_for_proven_series_and_the_horizon_for_the_rest(
        store: Store, cases: SampleBatch, start: int) -> None:
    store.insert_samples(cases)
    lo = start + TURN * NS
    for b in range(lo - HORIZON_NS, lo, MINUTE):  # the minutes before are rolled
        store.execute(roll_sql(store.dialect, store.database, ROLLUP_1M, b, b + MINUTE))
    rows = rows_relation(store.database, getattr(store, "cluster", ""))
    source = roll_samples_sql(store.dialect, store.database, lo, lo + MINUTE, rows)
    got = store.query(f"SELECT port, t FROM ({source})")
    read = {(str(p), int(t)) for p, t in zip(got["port"], got["t"], strict=True)}
    assert len(read) * len(DEVICES) == len(got["t"]), "every sample once per device"
    ts = cases.ts_ns
    for k in np.flatnonzero((ts >= lo - HORIZON_NS) & (ts < lo + MINUTE)):
        port, t = cases.ports[cases.port[k]], int(ts[k])
        n_before = int(np.sum((cases.port == cases.port[k]) & (cases.device == 0)
                              & (ts >= lo - MINUTE) & (ts < lo)))
        wanted = t >= lo - MINUTE or n_before < LOOKBACK
        assert ((port, t) in read) == wanted, (port, (t - start) / NS, n_before)
    assert ("Ethernet2", lo - 117 * NS) not in read  # steady: its minute 1 is not read
    assert ("Ethernet1", lo - 78 * NS) in read  # five: the sixth sample back is


def job_for(store: Store) -> RollupJob:
    """A job that reads the proven history and counts a minute complete once the data reached
    its end (no lateness)."""
    return RollupJob(store, store.settings.model_copy(update={"rollup_lateness_s": 0.0}),
                     proven_history=True)


def stream(store: Store, job: RollupJob, b: SampleBatch, start: int, minutes: range) -> None:
    """Insert ``b``'s samples a minute at a time, the job run after each: every minute is rolled
    alone, by the run after the next one's samples came (as in steady state)."""
    for m in minutes:
        lo = start + m * MINUTE
        store.insert_samples(b.take(np.flatnonzero((b.ts_ns >= lo) & (b.ts_ns < lo + MINUTE))))
        job.run_once()


def test_each_roll_writes_what_a_roll_of_the_whole_horizon_writes(
        store: Store, cases: SampleBatch, start: int) -> None:
    job = job_for(store)
    stream(store, job, cases, start, range(7))
    assert job.stats.statements == 6  # a minute a statement (the hour is not complete)
    rows = rolled(store)
    assert len({k[4] for k in rows}) == 6
    assert rows == whole_horizon(store, start, start + 6 * MINUTE)
    assert_rule(rows, cases)
    five = {k[4]: v for k, v in rows.items() if k[:2] == ("leaf1", "Ethernet1")}
    # the interval ending 38 s after the turn is rated (no gap): the sixth sample back counted
    assert five[start + TURN * NS][9] == 40 * NS + 2 * 10 * NS
    absent = {k[4]: v for k, v in rows.items() if k[:2] == ("leaf1", "Ethernet6")}
    # back after a minute away (185 s, 215 s): both intervals are gaps by minute 1's cadence; the
    # two after them (225 s, 235 s) are rated
    assert absent[start + TURN * NS][9] == 2 * 10 * NS


def test_late_samples_and_a_restart_roll_what_the_whole_horizon_rolls(
        store: Store, cases: SampleBatch, start: int) -> None:
    # the minute before the turn first lacks two of its samples: its rollup rows count too few
    # to prove anything, and the minute after it is rolled from the horizon; then they come in
    # late (and make that minute prove), and a new job (a restart) rolls on, a minute a run
    lo = start + TURN * NS
    held = np.flatnonzero((cases.ts_ns >= lo - 40 * NS) & (cases.ts_ns < lo - 20 * NS))
    early = cases.take(np.setdiff1d(np.arange(len(cases)), held))
    first = job_for(store)
    stream(store, first, early, start, range(5))
    done = first.stats.done_ns[ROLLUP_1M.name]
    assert done == lo + MINUTE  # the turn's minute rolled
    assert rolled(store) == whole_horizon(store, start, done)
    time.sleep(1.05 - time.time() % 1.0)  # marks of a later server second
    store.insert_samples(cases.take(held))
    restarted = job_for(store)
    stream(store, restarted, early, start, range(5, 7))
    # that minute and the turn (a cluster reads marks again for a while: it may roll more)
    assert restarted.stats.rerolled.get(ROLLUP_1M.name, 0) >= 2
    rows = rolled(store)
    assert rows == whole_horizon(store, start, start + 6 * MINUTE)
    assert_rule(rows, cases)
