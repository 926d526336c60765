"""The ingest loop: bus → store, at least once, idempotent.

It reads the samples, alerts and actions topics as one consumer group, decodes each message,
inserts what it gathered, and only then commits that batch's own offsets. A crash between insert
and commit redelivers the messages; the store collapses the repeat (samples are keyed by series
and event time), so nothing acknowledged is lost and nothing is doubled. A message that cannot be
read goes to the dead-letter topic with its origin and the reason, durably before its offset is
committed, and never stops the loop; a message of which only some items are bad (alerts, action
records, sample rows) has its good items stored and its bad ones dead-lettered
(:mod:`pipeline.wire.deadletter`). Sample rows whose time is outside a sane window around the
ingest clock (a device clock in 2200 or 1970, a negative time) are dead-lettered the same way, with
the reason, and the rollups' watermark is held to that clock, so no one device can move the
fabric's clock or complete buckets for the others (:mod:`pipeline.ingest.window`).

The loop gathers the next batch while up to ``inflight`` earlier ones are inserted by helper
threads, and commits batches strictly in order, each once it and all before it are stored. A
store outage is retried under the retry policy (:mod:`pipeline.retry`; nothing is committed
meanwhile); a broker outage while polling keeps what was gathered and tries again.

The neighbors topic is read in the same group: the devices' LLDP reports become the changes the
store records (:mod:`pipeline.ingest.neighbors`).

The role also runs the store's scheduled jobs: retention where the engine has no TTL, and the
rollup job (:mod:`pipeline.store.rollup.job`); with ``coordination`` configured, only in the
ingest process that holds their lease (:mod:`pipeline.cluster.lease`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field

from pipeline.bus.base import Bus, Message, Topics
from pipeline.errors import BusError, StoreError
from pipeline.exposition import Metrics
from pipeline.ingest.metrics import insert_seconds, watch
from pipeline.ingest.neighbors import NeighborRecorder
from pipeline.ingest.window import TimeWindow, device_times
from pipeline.model import ActionResult, Alert, SampleBatch
from pipeline.retry import REPOLL, Backoff, RetryPolicy
from pipeline.stage import CoreSettings, StageContext
from pipeline.store.base import Store
from pipeline.store.retention import RetentionJob
from pipeline.store.rollup.clock import PartitionClock
from pipeline.store.rollup.job import RollupJob
from pipeline.topology.neighbors import NeighborChange
from pipeline.wire.actions import decode_actions
from pipeline.wire.alerts import decode_alerts
from pipeline.wire.deadletter import DeadLetter, DeadLetters, DeadLetterStats
from pipeline.wire.neighbors import decode_reports
from pipeline.wire.samples import decode_samples

__all__ = ["Ingest", "IngestStats", "run"]

log = logging.getLogger("rocewatch.ingest")
#: finishing a gathered batch after a store or bus failure (nothing is committed meanwhile)
STORE_RETRY = RetryPolicy(initial_s=0.5, cap_s=30.0)


@dataclass
class IngestStats:
    """Counters the loop keeps about itself (exposed by the health endpoints)."""

    messages: int = 0
    samples: int = 0
    alerts: int = 0
    actions: int = 0
    #: LLDP neighbour changes recorded (pipeline.ingest.neighbors)
    neighbor_changes: int = 0
    inserts: int = 0
    store_errors: int = 0
    bus_errors: int = 0
    commit_failures: int = 0
    last_insert_s: float = 0.0
    #: sample rows dead-lettered because their time was outside the window
    out_of_window: int = 0
    #: how far the ingest clock runs ahead of the wall clock (the fabric's lead), seconds
    clock_lead_s: float = 0.0
    #: what could not be read (the dead-letter topic has each message, its origin and why)
    dead_letters: DeadLetterStats = field(default_factory=DeadLetterStats)


@dataclass
class _Pending:
    samples: list[SampleBatch] = field(default_factory=list)
    rows: int = 0
    alerts: list[Alert] = field(default_factory=list)
    actions: list[ActionResult] = field(default_factory=list)
    neighbors: list[NeighborChange] = field(default_factory=list)
    messages: int = 0
    #: (topic, partition) → the offset after the last message gathered: what a commit covers
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    #: the bus failed while gathering (what was gathered before is still to be stored)
    error: BusError | None = None
    #: the event time every partition had reached once this was gathered (for the rollups)
    event_ns: int | None = None
    #: the ingest clock the newest of its samples were screened at
    clock_ns: int | None = None


class Ingest:
    """One ingest consumer: gathers up to ``max_rows`` or ``max_wait_s``, inserts, commits."""

    def __init__(self, bus: Bus, store: Store, topics: Topics, group: str = "ingest",
                 max_rows: int = 200_000, max_wait_s: float = 0.5, inflight: int = 2,
                 window: TimeWindow | None = None, metrics: Metrics | None = None) -> None:
        self.store = store
        self._insert_seconds = insert_seconds(metrics or Metrics())
        self.window = window or TimeWindow(retention_days=store.settings.retention_days)
        self.inflight = max(1, inflight)
        self.topics = topics
        self.max_rows = max_rows
        self.max_wait_s = max_wait_s
        self.stats = IngestStats()
        self._rows_per_message = 0  # rows per samples message seen so far (0: not known yet)
        self.clock = PartitionClock()
        bus.ensure_topics(topics.all())
        self._consumer = bus.consumer([topics.samples, topics.alerts, topics.actions,
                                       topics.neighbors], group)
        self.neighbors = NeighborRecorder(store)
        self._producer = bus.producer()
        self.letters = DeadLetters(group, self._producer, topics.deadletter)
        self.stats.dead_letters = self.letters.stats

    def _decode(self, msg: Message, into: _Pending) -> SampleBatch | None:
        """Add the alerts or actions a message holds to ``into``, or return the sample rows it
        holds (to be screened by :meth:`_screen`); what cannot be read is dead-lettered (the
        producer is flushed before the commit, in :meth:`finish`)."""
        if msg.topic == self.topics.samples:
            samples = self.letters.read_items(msg, decode_samples)
            if not isinstance(samples, DeadLetter) and len(samples.items):
                return samples.items
        elif msg.topic == self.topics.alerts:
            alerts = self.letters.read_items(msg, decode_alerts)
            if not isinstance(alerts, DeadLetter):
                into.alerts.extend(alerts.items)
        elif msg.topic == self.topics.actions:
            actions = self.letters.read_items(msg, decode_actions)
            if not isinstance(actions, DeadLetter):
                into.actions.extend(actions.items)
        elif msg.topic == self.topics.neighbors:
            reports = self.letters.read_items(msg, decode_reports)
            if not isinstance(reports, DeadLetter):
                into.neighbors.extend(self.neighbors.changes(reports.items))
        return None

    def _screen(self, read: list[tuple[Message, SampleBatch]], into: _Pending) -> None:
        """Keep the rows of one poll's sample messages whose time is within the window around
        the ingest clock (the devices of these messages counted in its lead); dead-letter the
        others with the reason."""
        times = [device_times(batch) for _, batch in read]
        candidates: dict[str, int] = {}
        for found in times:
            candidates.update(found)
        clock = into.clock_ns = self.window.clock_ns(candidates)
        for (msg, batch), seen in zip(read, times, strict=True):
            kept, bad = self.window.screen(batch, clock)
            found = seen
            if bad:
                refused = len(batch) - len(kept)
                self.stats.out_of_window += refused
                self.letters.stats.bad_items += refused
                first = bad[0]
                self.letters.park(msg, f"{refused} sample(s) outside the time window, "
                                       f"{len(kept)} kept; item {first.index}: {first.reason}",
                                  bad, len(kept))
                found = device_times(kept)
            if len(kept):
                into.samples.append(kept)
                into.rows += len(kept)
                self.clock.saw(msg.topic, msg.partition, kept.ts_ns)
                self.window.accepted(found)

    def gather(self, stop: threading.Event | None = None) -> _Pending:
        pending = _Pending()
        deadline = time.monotonic() + self.max_wait_s
        while pending.rows < self.max_rows and not (stop and stop.is_set()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # ask for about as many messages as fit under max_rows (sample messages vary in size;
            # until a size is known, a few at a time)
            if pending.samples:
                self._rows_per_message = max(1, pending.rows // len(pending.samples))
            room = ((self.max_rows - pending.rows) // self._rows_per_message
                    if self._rows_per_message else 16)
            try:
                msgs = self._consumer.poll(timeout_s=left, max_records=max(1, min(2000, room)))
            except BusError as exc:
                # keep what was gathered: its positions have moved, so it must be stored
                # before anything is committed
                self.stats.bus_errors += 1
                pending.error = exc
                break
            offsets = pending.offsets
            read: list[tuple[Message, SampleBatch]] = []
            for msg in msgs:
                batch = self._decode(msg, pending)
                if batch is not None:
                    read.append((msg, batch))
                tp = (msg.topic, msg.partition)
                if msg.offset >= offsets.get(tp, 0):
                    offsets[tp] = msg.offset + 1
            if read:
                self._screen(read, pending)
            pending.messages += len(msgs)
        # the data's event time, held to the ingest clock: a device ahead of the others (within
        # the window) does not complete the rollups' buckets for them
        watermark = self.clock.watermark()
        if watermark is not None:
            clock = pending.clock_ns if pending.clock_ns is not None else self.window.clock_ns()
            watermark = min(watermark, clock)
            self.stats.clock_lead_s = self.window.last_lead_ns / 1e9
        pending.event_ns = watermark
        return pending

    def flush(self, pending: _Pending) -> None:
        """Insert everything gathered; raises StoreError (offsets stay uncommitted)."""
        t0 = time.perf_counter()
        if pending.samples:
            self.store.insert_samples(SampleBatch.concat(pending.samples),
                                      event_ns=pending.event_ns)
        if pending.alerts:
            self.store.insert_alerts(pending.alerts)
        if pending.actions:
            self.store.insert_actions(pending.actions)
        if pending.neighbors:
            self.store.insert_neighbors(pending.neighbors)
        self.stats.last_insert_s = time.perf_counter() - t0
        self.stats.inserts += 1
        self._insert_seconds.observe(self.stats.last_insert_s)

    def finish(self, pending: _Pending) -> None:
        """Store a gathered batch and make its dead letters durable: after this returns, its
        offsets may be committed. Raises StoreError or BusError (nothing may be committed)."""
        self.flush(pending)
        self._producer.flush()

    def step(self, stop: threading.Event | None = None) -> int:
        """One gather → insert → commit cycle; returns the messages handled."""
        pending = self.gather(stop)
        if not pending.messages:
            if pending.error is not None:
                raise pending.error
            return 0
        self.finish(pending)
        self._commit(pending)
        return pending.messages

    def _commit(self, pending: _Pending) -> None:
        """Count what the store now has and commit exactly its offsets. A commit the bus refuses
        (the group rebalanced, the broker is away) loses nothing: whoever reads those partitions
        next redoes the work from the last commit, and the store collapses the repeat."""
        self.stats.messages += pending.messages
        self.stats.samples += pending.rows
        self.stats.alerts += len(pending.alerts)
        self.stats.actions += len(pending.actions)
        self.stats.neighbor_changes += len(pending.neighbors)
        if not pending.offsets:
            return
        try:
            self._consumer.commit(pending.offsets)
        except BusError as exc:
            self.stats.commit_failures += 1
            log.warning("offsets not committed (the work will be redone): %s", exc)

    def _retry(self, pending: _Pending, stop: threading.Event, failure: Exception) -> bool:
        """Finish ``pending`` after a failure, under the retry policy, until it works or
        ``stop``."""
        backoff = Backoff(STORE_RETRY)
        while True:
            if isinstance(failure, StoreError):
                self.stats.store_errors += 1
            else:
                self.stats.bus_errors += 1
            delay = backoff.fail()
            if delay is None:
                return False
            log.error("ingest cannot finish a batch (will retry in %.1fs): %s", delay, failure)
            if stop.wait(delay):
                return False
            try:
                self.finish(pending)
                return True
            except (StoreError, BusError) as exc:
                failure = exc

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop``. Up to ``inflight`` batches are inserted by helper threads while
        the next is gathered (a server spreads concurrent inserts over its cores); a batch's
        offsets are committed once it and every batch before it are stored, in order. A store
        or bus outage is retried with backoff, never skipped."""
        from collections import deque
        from concurrent.futures import Future, ThreadPoolExecutor

        inserter = ThreadPoolExecutor(self.inflight, thread_name_prefix="rocewatch-insert")
        queue: deque[tuple[_Pending, Future[None]]] = deque()
        polls = Backoff(REPOLL)

        def settle() -> bool:
            """Commit, in order, the batches at the head of the queue that are stored; when the
            queue is full, wait for its head. False when stopped before a failed batch could be
            stored."""
            while queue:
                previous, future = queue[0]
                if not future.done() and len(queue) < self.inflight:
                    return True
                try:
                    future.result()
                except (StoreError, BusError) as exc:
                    if not self._retry(previous, stop, exc):
                        return False
                queue.popleft()
                self._commit(previous)
            return True

        try:
            while not stop.is_set():
                pending = self.gather(stop)
                if not settle():
                    break
                if pending.messages:
                    queue.append((pending, inserter.submit(self.finish, pending)))
                    polls.succeed()
                elif pending.error is not None:  # the broker is away: wait, then again
                    delay = polls.fail()
                    if delay is None:
                        raise pending.error
                    log.error("ingest cannot poll (will retry in %.1fs): %s", delay,
                              pending.error)
                    stop.wait(delay)
            # stopping: store and commit what is in flight; a failure now is redelivered later
            for previous, future in queue:
                try:
                    future.result()
                except (StoreError, BusError) as exc:
                    log.warning("stopping with a batch not stored (it will be redelivered): %s",
                                exc)
                    break
                self._commit(previous)
        finally:
            inserter.shutdown(wait=True)
            self.close()

    def close(self) -> None:
        self._consumer.close()
        self._producer.close()


def run(ctx: StageContext[CoreSettings], stop: threading.Event) -> None:
    """The ingest role's loop (it reads the ``store`` and ``ingest`` sections)."""
    if ctx.store is None:
        raise StoreError("the ingest role needs a store")
    window = ctx.settings.ingest
    ingest = Ingest(ctx.bus, ctx.store, ctx.topics, window=TimeWindow(
        window.max_past_s, window.max_ahead_s, retention_days=ctx.settings.store.retention_days),
        max_wait_s=window.gather_s, metrics=ctx.metrics)
    ctx.health["ingest"] = lambda: asdict(ingest.stats)
    # engines without TTL (ClickHouse 18.16) drop expired partitions from a scheduled job
    retention = RetentionJob(ctx.store, ctx.settings.store)
    # the rollups are rolled in bulk, bucket by bucket, as the data's event time completes them
    rollups = RollupJob(ctx.store, ctx.settings.store)
    ctx.health["rollup"] = lambda: asdict(rollups.stats)
    watch(ctx.metrics, lambda: asdict(ingest.stats), lambda: ingest.letters.stats,
          lambda: rollups.stats)
    jobs = _StoreJobs(retention, rollups)
    lease = None
    if ctx.settings.coordination.zookeeper:
        # several ingest processes: the jobs run in one of them, the lease's holder
        from pipeline.cluster.lease import Lease

        lease = Lease(ctx.settings.coordination, ctx.settings.site, "ingest-jobs", jobs.start,
                      jobs.stop, ctx.metrics).begin()
        ctx.health["lease"] = lease.health
    else:
        jobs.start()
    try:
        ingest.run(stop)
    finally:
        if lease is not None:
            lease.close()
        jobs.stop()


@dataclass
class _StoreJobs:
    """The store's scheduled jobs the ingest role runs, started and stopped together."""

    retention: RetentionJob
    rollups: RollupJob

    def start(self) -> None:
        self.retention.start()
        self.rollups.start()

    def stop(self) -> None:
        self.rollups.stop()
        self.retention.stop()
