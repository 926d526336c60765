"""The rollup job on every store backend (chDB and the ClickHouse server, 18.16 here): complete
buckets hold what the samples say, rolling again changes nothing, late samples re-roll their
buckets, a restart resumes from the watermark kept in the store, event time (not the wall clock)
decides, and readers see every sample whether a bucket is rolled yet or not."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import pytest

from pipeline.model import SampleBatch
from pipeline.rates.rule import HORIZON_NS
from pipeline.store.base import Store
from pipeline.store.rollup.job import RollupJob
from pipeline.store.rollup.read import rollup_rows, watermarks
from pipeline.store.rollup.sql import dedup_select, floor_to, roll_sql
from pipeline.store.schema import ROLLUP_1H, ROLLUP_1M, ROLLUPS, Rollup

NS = 1_000_000_000
MINUTE, HOUR = 60 * NS, 3600 * NS
Rows = dict[tuple[Any, ...], tuple[Any, ...]]
READ = ("v0", "v1", "vmin", "vmax", "t0", "t1", "cnt", "fl")


def _rows(store: Store, relation: str) -> Rows:
    c = store.query(f"SELECT device, port, metric, qual, rb, {', '.join(READ)} FROM {relation}")
    keys = zip(c["device"], c["port"], c["metric"], c["qual"].tolist(), c["rb"].tolist(),
               strict=True)
    values = zip(*(c[name].tolist() for name in READ), strict=True)
    out = dict(zip(keys, values, strict=True))
    assert len(out) == len(c["rb"]), "a series and bucket came back twice"
    return out


def rolled(store: Store, rollup: Rollup) -> Rows:
    """What the rollup table holds (one row per key, as a merge keeps): the rolled buckets."""
    return _rows(store, f"({dedup_select(store.dialect, store.database, rollup, None, None)})")


def read(store: Store, rollup: Rollup) -> Rows:
    """What a reader of the rollup sees (rolled buckets and the live rest)."""
    return _rows(store, rollup_rows(store, rollup))


def before(rows: Rows, end_ns: int) -> Rows:
    return {k: v for k, v in rows.items() if k[4] < end_ns}


def job_for(store: Store, **settings: Any) -> RollupJob:
    return RollupJob(store, store.settings.model_copy(update=settings))


def next_second() -> None:
    """Wait for the next whole second of the clock the server stamps marks with."""
    time.sleep(1.05 - time.time() % 1.0)


@pytest.fixture
def hour0() -> int:
    """The start of the hour three hours ago (rollup buckets line up with it)."""
    return floor_to(time.time_ns() - 3 * HOUR, HOUR)


@pytest.fixture
def samples(batch_factory: Any, hour0: int) -> SampleBatch:
    """2 devices x 3 ports x 2 metrics every second for 1 h 10 min from ``hour0`` + 5 s."""
    batch: SampleBatch = batch_factory(seconds=70 * 60, start_ns=hour0 + 5 * NS)
    return batch


def insert_in_polls(store: Store, batch: SampleBatch, every_s: int = 600) -> None:
    """Insert as a stream would: consecutive slices of event time."""
    t = batch.ts_ns
    for lo in range(int(t.min()), int(t.max()) + 1, every_s * NS):
        store.insert_samples(batch.take(np.flatnonzero((t >= lo) & (t < lo + every_s * NS))))


def test_complete_buckets_hold_what_the_samples_say(store: Store, samples: SampleBatch,
                                                     rollup_expectation: Any, hour0: int) -> None:
    insert_in_polls(store, samples)
    job = job_for(store)
    assert job.run_once() > 0
    last = int(samples.ts_ns.max())
    done_m = floor_to(last - 30 * NS, MINUTE)  # complete: 30 s (lateness) past the end
    assert watermarks(store) == {ROLLUP_1M.name: done_m, ROLLUP_1H.name: hour0 + HOUR}
    minutes, hours = (rollup_expectation(samples, r.bucket_ns) for r in ROLLUPS)
    assert rolled(store, ROLLUP_1M) == before(minutes, done_m)
    assert rolled(store, ROLLUP_1H) == before(hours, hour0 + HOUR)
    # the same from the samples table by SQL: counts and maxima per series over rolled minutes
    d = store.dialect
    raw = store.query(
        f"SELECT device, port, metric, qual, count() AS n, max(value) AS top FROM "
        f"{store.database}.samples FINAL WHERE {d.time_cmp('ts')} < {d.ns_to_time(done_m)} "
        f"GROUP BY device, port, metric, qual ORDER BY device, port, metric, qual")
    per_series: dict[tuple[Any, ...], list[float]] = {}
    for key, row in rolled(store, ROLLUP_1M).items():
        acc = per_series.setdefault(key[:4], [0, float("-inf")])
        acc[0] += row[6]
        acc[1] = max(acc[1], row[3])
    assert per_series == {k: [n, top] for k, n, top in zip(
        zip(raw["device"], raw["port"], raw["metric"], raw["qual"].tolist(), strict=True),
        raw["n"].tolist(), raw["top"].tolist(), strict=True)}
    # readers see every sample: rolled buckets and the ones still open
    assert read(store, ROLLUP_1M) == minutes and read(store, ROLLUP_1H) == hours


def test_rolling_again_writes_the_same_rows(store: Store, samples: SampleBatch) -> None:
    insert_in_polls(store, samples)
    job = job_for(store)
    job.run_once()
    first = rolled(store, ROLLUP_1M), rolled(store, ROLLUP_1H)
    assert job.run_once() == 0, "nothing new: nothing rolled"
    marks = watermarks(store)
    for rollup in ROLLUPS:  # every bucket again, by hand, twice
        lo = floor_to(int(samples.ts_ns.min()), rollup.bucket_ns)
        for _ in range(2):
            store.execute(roll_sql(store.dialect, store.database, rollup, lo,
                                   marks[rollup.name]))
        table = f"{store.database}.{rollup.name}"
        kept = len(first[ROLLUPS.index(rollup)])
        written = store.query(f"SELECT count() AS n FROM {table}")
        final = store.query(f"SELECT count() AS n FROM {table} FINAL")
        # the same keys thrice (until merged), one row each once collapsed
        assert int(final["n"][0]) == kept <= int(written["n"][0]) <= 3 * kept
    assert (rolled(store, ROLLUP_1M), rolled(store, ROLLUP_1H)) == first
    assert watermarks(store) == marks


def test_late_samples_re_roll_their_buckets(store: Store, samples: SampleBatch,
                                            rollup_expectation: Any, hour0: int) -> None:
    # one series misses a stretch of minute 20 (and so of the first hour) until after the roll
    t = samples.ts_ns
    late = (samples.device == 1) & (samples.port == 2) & (t >= hour0 + 20 * MINUTE + 10 * NS) \
        & (t < hour0 + 20 * MINUTE + 40 * NS)
    insert_in_polls(store, samples.take(np.flatnonzero(~late)))
    job = job_for(store)
    job.run_once()
    on_time = samples.take(np.flatnonzero(~late))
    assert before(rolled(store, ROLLUP_1H), hour0 + HOUR) == before(
        rollup_expectation(on_time, HOUR), hour0 + HOUR)
    store.insert_samples(samples.take(np.flatnonzero(late)))
    assert job.run_once() >= 2
    # the late minute, and the rolled minutes after it whose intervals look back into it
    followers = -(-HORIZON_NS // MINUTE)
    assert job.stats.rerolled == {ROLLUP_1M.name: 1 + followers, ROLLUP_1H.name: 1}
    done = watermarks(store)
    for rollup in ROLLUPS:
        want = before(rollup_expectation(samples, rollup.bucket_ns), done[rollup.name])
        assert rolled(store, rollup) == want
        assert read(store, rollup) == rollup_expectation(samples, rollup.bucket_ns)


class OutOfSight:
    """A store whose reads have missed a write for a while, as a cluster's do when the replica
    that took it dies before another copied it: ``unreadable`` is what
    :meth:`Store.unreadable_since` says, set by the test."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.unreadable: int | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def unreadable_since(self) -> int | None:
        return self.unreadable

    def comes_back(self, batch: SampleBatch, written_s: int) -> None:
        """The write of ``batch`` at server second ``written_s`` becomes readable: its samples
        and its marks, stamped when it was written."""
        store = self._store
        with_marks = store.settings
        store.settings = with_marks.model_copy(update={"rollups": False})
        try:
            store.insert_samples(batch)
        finally:
            store.settings = with_marks
        width = ROLLUP_1M.bucket_ns
        buckets = sorted({int(t) // width * width for t in batch.ts_ns})
        store.execute(f"INSERT INTO {store.database}.rollup_marks (at, bucket_ns, event_ns) "
                      f"SELECT toDateTime({written_s}, 'UTC'), arrayJoin({buckets}), "
                      f"toInt64({int(batch.ts_ns.max())})")


def test_a_write_out_of_sight_when_its_minute_was_rolled_is_rolled_once_readable(
        store: Store, samples: SampleBatch, rollup_expectation: Any, hour0: int) -> None:
    # a replica took part of minute 20 and died before the run that rolled it read the shard,
    # after the run had found every write readable: nothing of that run is known to be unsure
    t = samples.ts_ns
    minute20 = hour0 + 20 * MINUTE
    hidden = (samples.device == 0) & (t >= minute20) & (t < minute20 + 30 * NS)
    insert_in_polls(store, samples.take(np.flatnonzero(~hidden)))
    outage = OutOfSight(store)
    job = RollupJob(outage, store.settings)  # type: ignore[arg-type]
    job.run_once()
    written_s = int(store.query("SELECT toUInt64(now()) AS now")["now"][0]) - 60
    short = rolled(store, ROLLUP_1M)
    assert before(short, hour0 + HOUR) != before(rollup_expectation(samples, MINUTE), hour0 + HOUR)
    # the next runs find the write unreadable (the replica's copy waits): they may roll again
    # what marks since then name, and it is still short
    outage.unreadable = written_s
    job.run_once()
    job.run_once()
    assert rolled(store, ROLLUP_1M) == short
    # the replica is back: the write and its marks (from when it was made) are readable
    outage.comes_back(samples.take(np.flatnonzero(hidden)), written_s)
    outage.unreadable = None
    assert job.run_once() >= 1
    done = watermarks(store)
    for rollup in ROLLUPS:
        assert rolled(store, rollup) == before(rollup_expectation(samples, rollup.bucket_ns),
                                               done[rollup.name])
    # the stretch is over: the next run rolls nothing again
    assert job.run_once() == 0


class Answers(OutOfSight):
    """:meth:`Store.unreadable_since` answers in turn from a list (the last one after that)."""

    def __init__(self, store: Store, answers: list[int | None]) -> None:
        super().__init__(store)
        self.answers = answers

    def unreadable_since(self) -> int | None:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_a_write_made_between_the_first_question_and_the_marks_read_counts_as_unreadable(
        store: Store, samples: SampleBatch, hour0: int) -> None:
    # the run asks whether a write is unreadable, then reads the marks; a write made in between
    # (its mark seen, its part not yet fetched by the replica reads go to) is unreadable by the
    # second answer: the minutes rolled now are rolled again once it is readable
    insert_in_polls(store, samples.take(np.flatnonzero(samples.ts_ns < hour0 + 30 * MINUTE)))
    now_s = int(store.query("SELECT toUInt64(now()) AS now")["now"][0])
    answers = Answers(store, [None, now_s, now_s])
    job = RollupJob(answers, store.settings)  # type: ignore[arg-type]
    assert job.run_once() > 0
    assert job.unsure > 0 and not job.settled
    answers.answers = [None]
    job.run_once()
    assert job.settled and job.stats.unsure_rerolled > 0


def test_samples_later_than_the_limit_stay_raw(store: Store, samples: SampleBatch,
                                               rollup_expectation: Any, hour0: int) -> None:
    t = samples.ts_ns
    late = (samples.device == 0) & (t >= hour0 + 2 * MINUTE) & (t < hour0 + 3 * MINUTE)
    insert_in_polls(store, samples.take(np.flatnonzero(~late)))
    job = job_for(store, rollup_max_late_s=1800)
    job.run_once()
    kept = rolled(store, ROLLUP_1M)
    store.insert_samples(samples.take(np.flatnonzero(late)))  # an hour behind the newest data
    assert job.run_once() == 0
    assert job.stats.too_late == 1 and job.stats.rerolled == {}
    assert rolled(store, ROLLUP_1M) == kept


def test_a_restarted_job_resumes_from_the_watermark(store: Store, samples: SampleBatch,
                                                    rollup_expectation: Any,
                                                    hour0: int) -> None:
    t = samples.ts_ns
    first = t < hour0 + 40 * MINUTE
    insert_in_polls(store, samples.take(np.flatnonzero(first)))
    next_second()  # the marks so far are older than the first run
    job_for(store).run_once()
    reached = watermarks(store)[ROLLUP_1M.name]
    assert reached == hour0 + 39 * MINUTE
    insert_in_polls(store, samples.take(np.flatnonzero(~first)))
    again = job_for(store)  # a new process: nothing in memory
    again.run_once()
    done = watermarks(store)
    assert again.stats.rolled[ROLLUP_1M.name] == (done[ROLLUP_1M.name] - reached) // MINUTE
    if not store.read_lag_s:  # (a cluster's job reads the marks of its read lag again)
        assert again.stats.rerolled == {}, "a restart rolled old buckets again"
    for rollup in ROLLUPS:
        want = rollup_expectation(samples, rollup.bucket_ns)
        assert rolled(store, rollup) == before(want, done[rollup.name])
        assert read(store, rollup) == want


def test_event_time_decides_when_a_bucket_is_complete(store: Store, batch_factory: Any,
                                                      rollup_expectation: Any) -> None:
    # two days ago by the wall clock, ten minutes into an hour: the four minutes the test rolls
    # never end an hour (at :56 the forced run also completed the hour bucket and rolled 2)
    start = floor_to(time.time_ns() - 2 * 86400 * NS, HOUR) + 10 * MINUTE
    older = batch_factory(devices=1, ports=1, seconds=150, start_ns=start)
    store.insert_samples(older)
    job = job_for(store, rollup_lateness_s=20)
    job.run_once()
    # data up to 2:29 (event time): minute 1 ended at 2:00 + 20 s lateness; minute 2 is open
    assert watermarks(store)[ROLLUP_1M.name] == start + 2 * MINUTE
    assert set(rolled(store, ROLLUP_1M)) == set(before(rollup_expectation(older, MINUTE),
                                                       start + 2 * MINUTE))
    newer = batch_factory(devices=1, ports=1, seconds=30, start_ns=start + 190 * NS)
    store.insert_samples(newer)  # the data's clock reaches 3:39: minute 2 is complete
    job.run_once()
    assert watermarks(store)[ROLLUP_1M.name] == start + 3 * MINUTE
    assert job.run_once(event_ns=start + 4 * MINUTE + 20 * NS) == 1  # a replay that ended
    assert watermarks(store)[ROLLUP_1M.name] == start + 4 * MINUTE


def test_the_scheduled_job_rolls_as_data_arrives(store: Store, batch_factory: Any,
                                                 hour0: int) -> None:
    job = job_for(store, rollup_every_s=0.2, rollup_lateness_s=0)
    job.start()
    try:
        for minute in range(4):
            store.insert_samples(batch_factory(devices=1, ports=1, seconds=60,
                                               start_ns=hour0 + minute * MINUTE))
        deadline = time.monotonic() + 30
        while job.stats.done_ns.get(ROLLUP_1M.name, 0) < hour0 + 3 * MINUTE \
                and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        job.stop()
    assert job.stats.done_ns[ROLLUP_1M.name] == hour0 + 3 * MINUTE
    assert job.stats.failures == 0 and job.stats.runs >= 1
    assert len(rolled(store, ROLLUP_1M)) == 3 * 2  # 3 minutes of 2 series


def test_a_run_longer_than_the_period_delays_the_next_and_skips_nothing(
        store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    job = job_for(store, rollup_every_s=0.02)
    ends: list[float] = []

    def slow(event_ns: int | None = None) -> int:
        time.sleep(0.1)  # five periods long
        ends.append(time.monotonic())
        return 0

    monkeypatch.setattr(job, "run_once", slow)
    with caplog.at_level(logging.WARNING, logger="apscheduler"):
        job.start()
        try:
            deadline = time.monotonic() + 30
            while len(ends) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            job.stop()
    assert len(ends) >= 3
    assert not [r for r in caplog.records if "maximum number of running instances" in
                r.getMessage() or "was missed" in r.getMessage()]
