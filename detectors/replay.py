"""Replaying history through detection: stored samples of a time range, or a samples topic.

Detection runs on event time only, so re-running it over what the store or Kafka kept gives the
same incidents the live engine raised (or, after a detector change, the ones it would raise now:
a backtest). :func:`store_batches` reads the store's ``samples`` table through its query interface
in time windows (``FINAL`` collapses the duplicates at-least-once ingest may leave), and
:func:`topic_batches` reads a samples topic from the start with a consumer group of its own; both
yield :class:`~pipeline.model.SampleBatch` es in event-time order for a
:class:`~detectors.chain.DetectionChain`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import numpy as np

from pipeline.bus.base import Bus
from pipeline.errors import QueryError
from pipeline.metrics import METRIC_ID
from pipeline.model import SampleBatch
from pipeline.store.base import Store, literal
from pipeline.wire.deadletter import DeadLetter, DeadLetters
from pipeline.wire.samples import decode_samples


def store_batches(store: Store, start_ns: int, end_ns: int, window_s: float = 10.0,
                  devices: tuple[str, ...] = ()) -> Iterator[SampleBatch]:
    """The stored samples of ``[start_ns, end_ns)``, a window at a time, oldest first."""
    if end_ns <= start_ns:
        raise QueryError("the replay's end must be after its start")
    d = store.dialect
    where_dev = f" AND device IN ({', '.join(literal(x) for x in devices)})" if devices else ""
    step = int(window_s * 1e9)
    lo = start_ns
    while lo < end_ns:
        hi = min(lo + step, end_ns)
        sql = (f"SELECT {d.time_ns('ts')} AS ts_ns, device, port, metric, qual, value, flags "
               f"FROM {store.database}.samples FINAL "
               f"WHERE {d.time_cmp('ts')} >= {d.ns_to_time(lo)} "
               f"AND {d.time_cmp('ts')} < {d.ns_to_time(hi)}{where_dev} ORDER BY ts_ns")
        batch = to_batch(store.query(sql))
        if len(batch):
            yield batch
        lo = hi


def to_batch(cols: dict[str, np.ndarray]) -> SampleBatch:
    """Query columns (``ts_ns, device, port, metric, qual, value, flags``) as a batch."""
    n = len(cols.get("ts_ns", ()))
    if n == 0:
        return SampleBatch.empty()
    devices, dev_codes = np.unique(cols["device"].astype(str), return_inverse=True)
    ports, port_codes = np.unique(cols["port"].astype(str), return_inverse=True)
    names = cols["metric"].astype(str)
    known = np.fromiter((name in METRIC_ID for name in names), bool, n)
    metric = np.fromiter((METRIC_ID.get(name, 0) for name in names), np.int64, n)
    batch = SampleBatch(
        cols["ts_ns"].astype(np.int64), dev_codes.astype(np.int32), port_codes.astype(np.int32),
        metric.astype(np.uint16), cols["qual"].astype(np.int16),
        cols["value"].astype(np.float64), cols["flags"].astype(np.uint8),
        tuple(devices.tolist()), tuple(ports.tolist()))
    return batch if known.all() else batch.take(known)


def topic_batches(bus: Bus, topic: str, idle_s: float = 5.0, end_ns: int | None = None,
                  decode_errors: list[str] | None = None) -> Iterator[SampleBatch]:
    """Every batch of a samples topic from its start (a fresh consumer group), until nothing new
    arrives for ``idle_s`` or the batches pass ``end_ns``. What cannot be read (whole messages,
    or rows of a message whose other rows are replayed) follows the wire's one policy except that
    a replay only reads: nothing is sent to the dead-letter topic (the live consumers parked it
    when they first read it); each dead letter's origin and reason is appended to
    ``decode_errors``."""
    group = f"replay-{uuid.uuid4().hex[:8]}"
    report = None if decode_errors is None else \
        (lambda letter: decode_errors.append(letter.summary()))
    letters = DeadLetters(group, listener=report)
    consumer = bus.consumer([topic], group)
    try:
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < idle_s:
            msgs = consumer.poll(timeout_s=0.5, max_records=2000)
            if msgs:
                quiet_since = time.monotonic()
            for msg in msgs:
                decoded = letters.read_items(msg, decode_samples)
                if isinstance(decoded, DeadLetter):
                    continue
                batch = decoded.items
                if end_ns is not None and len(batch) and int(batch.ts_ns.min()) >= end_ns:
                    return
                yield batch
    finally:
        consumer.close()
