"""The ingest loop: bus → store, at least once, idempotent.

It reads the samples, alerts and actions topics as one consumer group, decodes each message,
inserts what it gathered, and only then commits the offsets. A crash between insert and commit
redelivers the messages; the store collapses the repeat (samples are keyed by series and event
time), so nothing acknowledged is lost and nothing is doubled. A message that cannot be decoded
goes to the dead-letter topic with the reason and never stops the loop.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pipeline.bus import Bus, Message, Producer, Topics
from pipeline.codec import ENCODING_OVERHEAD, ROW_BYTES, decode_batch, encode_batch
from pipeline.errors import BusError, DecodeError, StoreError
from pipeline.model import ActionResult, Alert, SampleBatch, alerts_from_json
from pipeline.stage import StageContext
from pipeline.store import Store

log = logging.getLogger("rocewatch.ingest")


@dataclass
class IngestStats:
    """Counters the loop keeps about itself (exposed by the health endpoints)."""

    messages: int = 0
    samples: int = 0
    alerts: int = 0
    actions: int = 0
    dead_letters: int = 0
    inserts: int = 0
    store_errors: int = 0
    bus_errors: int = 0
    commit_failures: int = 0
    last_insert_s: float = 0.0
    dead_letter_reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class _Pending:
    samples: list[SampleBatch] = field(default_factory=list)
    rows: int = 0
    alerts: list[Alert] = field(default_factory=list)
    actions: list[ActionResult] = field(default_factory=list)
    messages: int = 0
    #: the bus failed while gathering (what was gathered before is still to be stored)
    error: BusError | None = None


def dead_letter(producer: Producer, topics: Topics, msg: Message, reason: str) -> None:
    """Park an undecodable message, with where it came from and why, on the dead-letter topic."""
    envelope = {
        "topic": msg.topic, "partition": msg.partition, "offset": msg.offset,
        "reason": reason, "key": msg.key.decode(errors="replace") if msg.key else None,
        "value_b64": base64.b64encode(msg.value).decode(),
    }
    producer.send(topics.deadletter, json.dumps(envelope).encode(), key=msg.key)


class Ingest:
    """One ingest consumer: gathers up to ``max_rows`` or ``max_wait_s``, inserts, commits."""

    def __init__(self, bus: Bus, store: Store, topics: Topics, group: str = "ingest",
                 max_rows: int = 200_000, max_wait_s: float = 0.5) -> None:
        self.store = store
        self.topics = topics
        self.max_rows = max_rows
        self.max_wait_s = max_wait_s
        self.stats = IngestStats()
        bus.ensure_topics(topics.all())
        self._consumer = bus.consumer([topics.samples, topics.alerts, topics.actions], group)
        self._producer = bus.producer()

    def _decode(self, msg: Message, into: _Pending) -> None:
        try:
            if msg.topic == self.topics.samples:
                batch = decode_batch(msg.value)
                into.samples.append(batch)
                into.rows += len(batch)
            elif msg.topic == self.topics.alerts:
                into.alerts.extend(alerts_from_json(msg.value))
            elif msg.topic == self.topics.actions:
                into.actions.extend(
                    ActionResult.model_validate_json(line) for line in msg.value.splitlines()
                    if line.strip())
        except (DecodeError, ValueError) as exc:
            reason = f"{type(exc).__name__}: {exc}"[:500]
            kind = reason.split(":")[0]
            if kind not in self.stats.dead_letter_reasons:
                log.warning("dead-lettering %s[%d]@%d: %s", msg.topic, msg.partition,
                            msg.offset, reason)
            self.stats.dead_letter_reasons[kind] = self.stats.dead_letter_reasons.get(kind, 0) + 1
            self.stats.dead_letters += 1
            dead_letter(self._producer, self.topics, msg, reason)

    def gather(self, stop: threading.Event | None = None) -> _Pending:
        pending = _Pending()
        deadline = time.monotonic() + self.max_wait_s
        while pending.rows < self.max_rows and not (stop and stop.is_set()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                msgs = self._consumer.poll(timeout_s=left, max_records=2000)
            except BusError as exc:
                # keep what was gathered: its positions have moved, so it must be stored
                # before anything is committed
                self.stats.bus_errors += 1
                pending.error = exc
                break
            for msg in msgs:
                self._decode(msg, pending)
            pending.messages += len(msgs)
        return pending

    def flush(self, pending: _Pending) -> None:
        """Insert everything gathered; raises StoreError (offsets stay uncommitted)."""
        t0 = time.perf_counter()
        if pending.samples:
            self.store.insert_samples(SampleBatch.concat(pending.samples))
        if pending.alerts:
            self.store.insert_alerts(pending.alerts)
        if pending.actions:
            self.store.insert_actions(pending.actions)
        self.stats.last_insert_s = time.perf_counter() - t0
        self.stats.inserts += 1

    def step(self, stop: threading.Event | None = None) -> int:
        """One gather → insert → commit cycle; returns the messages handled."""
        pending = self.gather(stop)
        if not pending.messages:
            if pending.error is not None:
                raise pending.error
            return 0
        self.flush(pending)
        self._producer.flush()  # dead letters are durable before their offsets are committed
        self._commit(pending)
        return pending.messages

    def _commit(self, pending: _Pending) -> None:
        """Count what the store now has and commit it. A commit the bus refuses (the group
        rebalanced meanwhile) loses nothing: the partitions' next owner redoes the work and the
        store collapses the repeat."""
        self.stats.messages += pending.messages
        self.stats.samples += pending.rows
        self.stats.alerts += len(pending.alerts)
        self.stats.actions += len(pending.actions)
        try:
            self._consumer.commit()
        except BusError as exc:
            self.stats.commit_failures += 1
            log.warning("offsets not committed (the work will be redone): %s", exc)

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop``; a store or bus outage is retried with backoff, never skipped."""
        backoff = 0.5
        pending: _Pending | None = None
        try:
            while not stop.is_set():
                if pending is None:
                    pending = self.gather(stop)
                    if not pending.messages:
                        if pending.error is not None:  # the broker is away: wait, then again
                            log.error("ingest cannot poll (will retry in %.1fs): %s", backoff,
                                      pending.error)
                            stop.wait(backoff)
                            backoff = min(backoff * 2, 30.0)
                        pending = None
                        continue
                try:
                    self.flush(pending)
                    self._producer.flush()  # dead letters are durable before the commit
                except (StoreError, BusError) as exc:
                    if isinstance(exc, StoreError):
                        self.stats.store_errors += 1
                    else:
                        self.stats.bus_errors += 1
                    log.error("ingest cannot finish a batch (will retry in %.1fs): %s",
                              backoff, exc)
                    stop.wait(backoff)
                    backoff = min(backoff * 2, 30.0)
                    continue
                backoff = 0.5
                self._commit(pending)
                pending = None
        finally:
            self.close()

    def close(self) -> None:
        self._consumer.close()
        self._producer.close()


def publish_batches(producer: Producer, topics: Topics, batches: Sequence[SampleBatch],
                    max_bytes: int = 900_000) -> int:
    """Send batches to the samples topic keyed by device, so a device's order holds: a batch of
    several devices is split per device, and one larger than ``max_bytes`` encoded is split into
    consecutive pieces. Returns the messages sent."""
    sent = 0
    for batch in batches:
        for device_batch in _per_device(batch):
            key = device_batch.devices[int(device_batch.device[0])].encode()
            for piece in _pieces(device_batch, max_bytes):
                producer.send(topics.samples, encode_batch(piece), key=key)
                sent += 1
    return sent


def _per_device(batch: SampleBatch) -> list[SampleBatch]:
    if not len(batch):
        return []
    first = batch.device[0]
    if bool((batch.device == first).all()):
        return [batch]
    order = np.argsort(batch.device, kind="stable")
    codes = batch.device[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(codes)]
    return [_compact(batch.take(order[a:b])) for a, b in zip(starts, ends, strict=True)]


def _compact(batch: SampleBatch) -> SampleBatch:
    """A one-device batch with vocabularies cut down to what it uses."""
    used, port_codes = np.unique(batch.port, return_inverse=True)
    return SampleBatch(
        batch.ts_ns, np.zeros(len(batch), np.int32), port_codes.astype(np.int32), batch.metric,
        batch.qual, batch.value, batch.flags, (batch.devices[int(batch.device[0])],),
        tuple(batch.ports[int(i)] for i in used))


def _pieces(batch: SampleBatch, max_bytes: int) -> list[SampleBatch]:
    vocab = sum(len(d.encode()) + 1 for d in batch.devices) + \
        sum(len(p.encode()) + 1 for p in batch.ports)
    per_piece = max(1, (max_bytes - ENCODING_OVERHEAD - vocab) // ROW_BYTES)
    if len(batch) <= per_piece:
        return [batch]
    return [batch.take(np.arange(a, min(a + per_piece, len(batch))))
            for a in range(0, len(batch), per_piece)]


def run(ctx: StageContext, stop: threading.Event) -> None:
    """The ingest role's loop."""
    if ctx.store is None:
        raise StoreError("the ingest role needs a store")
    from pipeline.retention import RetentionJob

    ingest = Ingest(ctx.bus, ctx.store, ctx.topics)
    ctx.health["ingest"] = lambda: asdict(ingest.stats)
    # engines without TTL (ClickHouse 18.16) drop expired partitions from a scheduled job
    retention = RetentionJob(ctx.store, ctx.settings.store)
    retention.start()
    try:
        ingest.run(stop)
    finally:
        retention.stop()
