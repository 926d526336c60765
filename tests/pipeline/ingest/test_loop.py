"""The ingest loop on the in-process bus and chDB: dead letters, outages, redelivery."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.errors import StoreError
from pipeline.ingest.loop import Ingest
from pipeline.model import ActionResult, SampleBatch
from pipeline.store.base import Store
from pipeline.wire.actions import encode_actions
from pipeline.wire.alerts import encode_alerts
from pipeline.wire.deadletter import decode_dead_letter
from pipeline.wire.publish import publish_batches
from pipeline.wire.samples import decode_batch, encode_batch


def count_final(store: Store) -> int:
    return int(store.query(f"SELECT count() AS n FROM {store.database}.samples FINAL")["n"][0])


def wait_until(check: Any, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


@pytest.fixture
def bus() -> MemoryBus:
    return MemoryBus(partitions=4, capacity=10_000)


@pytest.fixture
def topics() -> Topics:
    return Topics("t.")


def per_device(batch: SampleBatch) -> list[SampleBatch]:
    return [batch.take(np.flatnonzero(batch.device == d)) for d in range(len(batch.devices))]


def test_batches_reach_the_store_and_are_committed(bus: MemoryBus, topics: Topics,
                                                   chdb_store: Store, batch: SampleBatch) -> None:
    ingest = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    publish_batches(bus.producer(), topics, per_device(batch))
    while ingest.step():
        pass
    assert count_final(chdb_store) == len(batch)
    assert ingest.stats.samples == len(batch) and ingest.stats.dead_letters.parked == 0
    ingest.close()
    again = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    assert again.step() == 0, "committed messages came back"
    again.close()


def test_garbage_goes_to_the_dead_letter_topic_and_the_rest_goes_on(
        bus: MemoryBus, topics: Topics, chdb_store: Store, batch: SampleBatch) -> None:
    watcher = bus.consumer([topics.deadletter], "watch")
    ingest = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    producer = bus.producer()
    producer.send(topics.samples, b"not a batch", key=b"leaf9")
    producer.send(topics.samples, None, key=b"leaf8")  # a tombstone
    publish_batches(producer, topics, per_device(batch))
    producer.send(topics.alerts, b"[{\"name\": 1}]")
    producer.send(topics.actions, b"{oops")
    good = encode_batch(batch)
    producer.send(topics.samples, good[:-3], key=b"leaf0")  # truncated
    while ingest.step():
        pass
    assert count_final(chdb_store) == len(batch)
    assert ingest.stats.dead_letters.parked == 5
    letters = [decode_dead_letter(m.value) for m in watcher.poll(timeout_s=1.0)]
    assert len(letters) == 5 and {d.group for d in letters} == {"ingest"}
    assert sorted(d.topic for d in letters) == ["t.actions", "t.alerts"] + ["t.samples"] * 3
    tombstone = next(d for d in letters if d.key == "leaf8")
    assert tombstone.value() is None and "tombstone" in tombstone.reason
    first = next(d for d in letters if d.key == "leaf9")
    assert first.value() == b"not a batch" and "too short" in first.reason
    truncated = next(d for d in letters if d.key == "leaf0")
    assert "should be" in truncated.reason and truncated.value() == good[:-3]
    alert = next(d for d in letters if d.topic == "t.alerts")
    assert alert.kept == 0 and [i.index for i in alert.items] == [0]
    assert "name: Input should be a valid string" in alert.items[0].reason
    action = next(d for d in letters if d.topic == "t.actions")
    assert "not JSON" in action.items[0].reason
    ingest.close()


class FlakyStore:
    """A store whose next ``failures`` sample inserts fail as an outage would."""

    def __init__(self, store: Store, failures: int) -> None:
        self._store = store
        self.failures = failures
        self.dialect = store.dialect
        self.database = store.database

    def insert_samples(self, batch: SampleBatch, event_ns: int | None = None) -> int:
        if self.failures > 0:
            self.failures -= 1
            raise StoreError("connection refused (simulated outage)")
        return self._store.insert_samples(batch, event_ns)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_store_outage_is_retried_and_nothing_is_committed_before(
        bus: MemoryBus, topics: Topics, chdb_store: Store, batch: SampleBatch) -> None:
    flaky = FlakyStore(chdb_store, failures=3)
    ingest = Ingest(bus, flaky, topics, max_wait_s=0.1)
    publish_batches(bus.producer(), topics, per_device(batch))
    stop = threading.Event()
    # a second member of the group would see the messages if they had been committed
    runner = threading.Thread(target=ingest.run, args=(stop,), daemon=True)
    runner.start()
    try:
        assert wait_until(lambda: ingest.stats.samples == len(batch), 30)
    finally:
        stop.set()
        runner.join(10)
    assert ingest.stats.store_errors == 3
    assert count_final(chdb_store) == len(batch)


def test_redelivery_after_a_crash_before_the_commit_is_collapsed(
        bus: MemoryBus, topics: Topics, chdb_store: Store, batch: SampleBatch) -> None:
    first = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    publish_batches(bus.producer(), topics, per_device(batch))
    pending = first.gather()
    first.flush(pending)  # inserted ...
    first.close()  # ... and gone before the commit
    second = Ingest(bus, chdb_store, topics, max_wait_s=0.2, max_rows=500)  # other boundaries
    handled = 0
    while (n := second.step()):
        handled += n
    assert handled == pending.messages
    assert count_final(chdb_store) == len(batch)
    second.close()


def test_alerts_and_actions_are_ingested(bus: MemoryBus, topics: Topics,
                                         chdb_store: Store) -> None:
    from pipeline.model import Alert

    now = time.time_ns()
    alert = Alert(name="PfcStorm", entity="leaf0:Ethernet0", starts_ns=now, updated_ns=now)
    action = ActionResult(action="notify", target="oncall", outcome="done", at_ns=now)
    producer = bus.producer()
    producer.send(topics.alerts, encode_alerts([alert]))
    producer.send(topics.actions, encode_actions([action]) + b"\n")
    ingest = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    while ingest.step():
        pass
    db = chdb_store.database
    assert list(chdb_store.query(f"SELECT name FROM {db}.alerts")["name"]) == ["PfcStorm"]
    assert list(chdb_store.query(f"SELECT id FROM {db}.actions")["id"]) == [action.id]
    ingest.close()


def test_publishing_keys_by_device_and_splits_what_is_too_big(
        bus: MemoryBus, topics: Topics, batch_factory: Any) -> None:
    batch = batch_factory(devices=3, ports=2, seconds=300)
    watcher = bus.consumer([topics.samples], "watch")
    sent = publish_batches(bus.producer(), topics, [batch], max_bytes=20_000)
    msgs = watcher.poll(timeout_s=1.0, max_records=10_000)
    assert sent == len(msgs) > 3
    decoded = [(m.key, decode_batch(m.value)) for m in msgs]
    for key, piece in decoded:
        assert piece.devices == (key.decode(),) if key else False
        assert len(encode_batch(piece)) <= 20_000
    rows = sorted(r for _, piece in decoded for r in piece.rows())
    assert rows == sorted(batch.rows())
    for device in batch.devices:  # a device's samples stay in order in one partition
        mine = [m for m in msgs if m.key == device.encode()]
        assert len({m.partition for m in mine}) == 1
        ts = np.concatenate([decode_batch(m.value).ts_ns for m in mine])
        want = batch.ts_ns[np.asarray(batch.device_names()) == device]
        assert ts.tolist() == want.tolist()


def test_the_ingest_role_rolls_up_what_it_stores(bus: MemoryBus, topics: Topics, store: Store,
                                                 batch_factory: Any) -> None:
    """The role runs the rollup job beside the loop: three minutes of event time in, the first
    two minutes rolled (the third is still open), on every backend."""
    from pipeline.ingest.loop import run
    from pipeline.stage import StageContext
    from pipeline.store.rollup.sql import floor_to
    from rocewatch.settings import Settings

    ns, minute = 1_000_000_000, 60_000_000_000
    start = floor_to(time.time_ns() - 3600 * ns, minute)
    batch = batch_factory(devices=2, ports=2, seconds=180, start_ns=start)
    settings = store.settings.model_copy(
        update={"rollup_every_s": 0.2, "rollup_lateness_s": 0})
    ctx = StageContext(Settings(store=settings), bus, topics, store=store)
    publish_batches(bus.producer(), topics, per_device(batch))
    stop = threading.Event()
    role = threading.Thread(target=run, args=(ctx, stop), daemon=True)
    role.start()

    def rolled_to() -> int:
        probe = ctx.health.get("rollup")
        return int(probe()["done_ns"].get("samples_1m", 0)) if probe else 0

    try:
        assert wait_until(lambda: rolled_to() == start + 2 * minute, 30)
    finally:
        stop.set()
        role.join(30)
    assert ctx.health["ingest"]()["samples"] == len(batch)
    rows = store.query(f"SELECT count() AS k, sum(n) AS samples FROM {store.database}.samples_1m "
                       f"FINAL")
    series = 2 * 2 * 2
    assert int(rows["k"][0]) == 2 * series and int(rows["samples"][0]) == 2 * 60 * series


def test_the_rollups_go_by_the_slowest_partition(bus: MemoryBus, topics: Topics,
                                                 chdb_store: Store, batch_factory: Any) -> None:
    """Marks carry the event time every partition has reached, not the newest sample: a device
    far ahead of the others does not complete buckets the others are still filling."""
    from pipeline.bus.memory import partition_for
    from pipeline.store.rollup.sql import floor_to

    ns, minute = 1_000_000_000, 60_000_000_000
    start = floor_to(time.time_ns() - 3600 * ns, minute)
    behind = batch_factory(devices=1, ports=1, seconds=60, start_ns=start)
    ahead = batch_factory(devices=1, ports=1, seconds=60, start_ns=start + 3 * minute)
    other = next(f"leaf{i}" for i in range(1, 50)  # a device on another partition
                 if partition_for(f"leaf{i}".encode(), 4, 0) != partition_for(b"leaf0", 4, 0))
    ahead = SampleBatch(ahead.ts_ns, ahead.device, ahead.port, ahead.metric, ahead.qual,
                        ahead.value, ahead.flags, (other,), ahead.ports)
    producer = bus.producer()
    assert publish_batches(producer, topics, [behind]) == 1
    assert publish_batches(producer, topics, [ahead]) == 1
    ingest = Ingest(bus, chdb_store, topics, max_wait_s=0.2)
    while ingest.step():
        pass
    ingest.close()
    event = chdb_store.query(f"SELECT max(event_ns) AS e FROM {chdb_store.database}.rollup_marks")
    assert int(event["e"][0]) == int(behind.ts_ns.max())
    lone = Ingest(MemoryBus(partitions=1), chdb_store, Topics("u."), max_wait_s=0.2)
    assert lone.clock.watermark() is None
    lone.clock.saw("u.samples", 0, ahead.ts_ns)
    lone.clock.saw("u.samples", 1, behind.ts_ns)
    assert lone.clock.watermark() == int(behind.ts_ns.max())
    lone.clock.max_skew_ns = minute  # no partition holds the rest back more than this
    assert lone.clock.watermark() == int(ahead.ts_ns.max()) - minute
    lone.clock.idle_s = 0.0  # nor one that went quiet
    assert lone.clock.watermark() is None
    lone.close()
