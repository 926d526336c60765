"""Issue 11's first failure, on a real broker: a tombstone (a record with a null value) and a
garbage record on the samples topic. Both go to the dead-letter topic with their origin and the
reason, from every consumer group that read them; ingest goes on storing the records after them
(on their own partition and on the others) and commits past them; the detect role's consumer goes
on detecting past them."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from detectors.chain import DetectionChain
from detectors.loop import Engine
from detectors.settings import DetectionSettings
from pipeline.bus.base import Topics
from pipeline.ingest.loop import Ingest
from pipeline.model import SampleBatch
from pipeline.wire.deadletter import DeadLetter, decode_dead_letter
from pipeline.wire.publish import publish_batches
from tests.pipeline.ingest.test_kafka import count_final, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NS = 1_000_000_000


def test_a_tombstone_and_garbage_are_dead_lettered_and_the_consumers_go_on(
        kafka_settings: Any, clickhouse_store: Any, batch_factory: Any,
        unique_name: Any) -> None:
    from pipeline.bus.kafka import KafkaBus

    topics = Topics(unique_name("rw") + ".")
    bus = KafkaBus(kafka_settings)
    bus.ensure_topics(topics.all())
    start = (time.time_ns() // NS - 300) * NS
    before: SampleBatch = batch_factory(devices=3, ports=2, seconds=10, start_ns=start, seed=1)
    after: SampleBatch = batch_factory(devices=3, ports=2, seconds=10, start_ns=start + 10 * NS,
                                       seed=2)
    garbage = np.random.default_rng(5).bytes(333)
    producer = bus.producer()
    sent = publish_batches(producer, topics, [before])
    producer.send(topics.samples, None, key=b"leaf0")  # the tombstone, on leaf0's partition
    producer.send(topics.samples, garbage, key=b"leaf0")
    sent += 2 + publish_batches(producer, topics, [after])  # leaf0's later records come after
    producer.flush(60)
    producer.close()

    watcher = bus.consumer([topics.deadletter], "watch")
    ingest = Ingest(bus, clickhouse_store, topics, group="ingest", max_wait_s=0.3)
    stop = threading.Event()
    runner = threading.Thread(target=ingest.run, args=(stop,), daemon=True)
    runner.start()
    engine = Engine(bus.consumer([topics.samples], "detect"), bus.producer(), topics,
                    DetectionChain(DetectionSettings(), None), group="detect")
    try:
        deadline = time.monotonic() + 90
        while engine.stats.messages < sent and time.monotonic() < deadline:
            engine.step(timeout_s=0.5)
        wait_for(lambda: count_final(clickhouse_store) == len(before) + len(after), 90,
                 "ingest to store every good record")
        wait_for(lambda: ingest.stats.messages == sent, 30, "ingest to commit every record")
    finally:
        stop.set()
        runner.join(30)
        engine.close()
    # detect went on: it judged every message and reached the newest sample's event time
    assert engine.stats.messages == sent and engine.stats.undecodable == 2
    assert engine.chain.now_ns == int(after.ts_ns.max())
    assert ingest.stats.dead_letters.unreadable == 2 and ingest.stats.samples == \
        len(before) + len(after)

    letters: list[DeadLetter] = []
    deadline = time.monotonic() + 30
    while len(letters) < 4 and time.monotonic() < deadline:
        letters.extend(decode_dead_letter(m.value) for m in watcher.poll(timeout_s=0.5))
    watcher.close()
    assert sorted(d.group for d in letters) == ["detect", "detect", "ingest", "ingest"]
    for group in ("detect", "ingest"):
        tombstone, junk = sorted((d for d in letters if d.group == group),
                                 key=lambda d: d.offset)
        assert tombstone.topic == junk.topic == topics.samples
        assert tombstone.partition == junk.partition and junk.offset == tombstone.offset + 1
        assert tombstone.key == junk.key == "leaf0"
        assert tombstone.value() is None and "tombstone" in tombstone.reason
        assert junk.value() == garbage and junk.value_size == 333 and junk.reason

    # ingest committed past the bad records: its offsets cover every record sent
    group = kafka_settings.kafka.group_prefix + "ingest"
    committed = bus._admin_client().list_group_offsets({group: None})[group]
    assert sum(o.offset for tp, o in committed.items() if tp.topic == topics.samples) == sent
    bus.close()
