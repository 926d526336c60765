"""The bus on the 3-broker Kafka cluster (KRaft, replication 3, min.insync.replicas 2) through a
broker's crash, while a producer publishes samples as the collect role does
(:func:`pipeline.wire.publish.publish_batches`, keyed by device) and two ingest consumers share
the partitions into the ClickHouse server.

Mid-stream the broker that leads most of the samples partitions is killed by PID with SIGKILL,
and started again later. Against the known produced set: 0 samples lost and 0 doubled in the
store (read with ``FINAL``), and the topic holds every message exactly once (the producer is
idempotent); the producer's stall, at the crash and after the broker's return, is what its
health (:meth:`pipeline.bus.kafka.KafkaProducer.health`) reports, and is bounded.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from typing import Any

import pytest

from pipeline.bus.base import Topics
from pipeline.bus.kafka import KafkaBus
from pipeline.config import BusSettings, KafkaSettings
from pipeline.ingest.loop import Ingest
from pipeline.wire.publish import publish_batches
from tests.cluster.known_set import keys_of, polls, stored_count, tally, wait_for
from tests.conftest import need_control

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: what a producer may stall once the killed broker is back (reconnect_backoff_max_ms is 1 s)
STALL_AFTER_RETURN_MAX_S = 5.0
#: and at the crash: until the controller fences the broker (broker.session.timeout.ms, 2 s
#: here; Kafka's default is 9 s) and the partitions it led have new leaders
STALL_AT_CRASH_MAX_S = 20.0


class StallWatch:
    """Samples the producer's health every 50 ms: the longest ``stalled_s`` after a moment."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.seen: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.seen.append((time.monotonic(), float(self.producer.health()["stalled_s"])))

    def longest(self, since: float, until: float = float("inf")) -> float:
        return max((s for t, s in self.seen if since <= t < until), default=0.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def leader_of_most(bus: KafkaBus, topic: str, cluster: Any) -> str:
    """The broker (node name) that leads most of ``topic``'s partitions."""
    described = bus._admin_client().describe_topics([topic])[0]
    leaders = Counter(p["leader_id"] for p in described["partitions"])
    node_id = leaders.most_common(1)[0][0]
    return cluster.nodes[int(node_id) - 1].name  # b1 b2 b3 are node ids 1 2 3


def topic_copies(settings: BusSettings, topic: str, expected: int) -> Counter[bytes]:
    """Every message of ``topic`` read from the start by a group of its own: a hash of each
    message's key and value, and how often it is there."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=settings.kafka.bootstrap.split(","),
                             group_id=None, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    copies: Counter[bytes] = Counter()
    deadline = time.monotonic() + 60
    while sum(copies.values()) < expected and time.monotonic() < deadline:
        for record in consumer:
            copies[hashlib.blake2b((record.key or b"") + b"\0" + (record.value or b""),
                                   digest_size=16).digest()] += 1
    consumer.close()
    return copies


def test_a_broker_killed_mid_stream_loses_and_doubles_nothing_and_the_stall_is_bounded(
        kafka_cluster: Any, clickhouse_store: Any, unique_name: Any) -> None:
    need_control(kafka_cluster)
    store = clickhouse_store
    settings = BusSettings(kind="kafka", topic_prefix=unique_name("rw") + ".", kafka=KafkaSettings(
        bootstrap=",".join(n.address for n in kafka_cluster.nodes), partitions=6, replication=3,
        linger_ms=5, group_prefix=unique_name("g") + "-", session_timeout_ms=6000,
        heartbeat_interval_ms=500, bootstrap_timeout_ms=10_000))
    topics = Topics(settings.topic_prefix)
    bus = KafkaBus(settings)
    bus.ensure_topics(topics.all())
    victim = leader_of_most(bus, topics.samples, kafka_cluster)
    batches = polls(devices=12, rounds=40)
    produced = keys_of(batches)
    stop = threading.Event()
    ingests = [Ingest(KafkaBus(settings), store, topics, max_wait_s=0.3) for _ in range(2)]
    runners = [threading.Thread(target=i.run, args=(stop,), daemon=True) for i in ingests]
    for runner in runners:
        runner.start()
    producer = bus.producer()
    watch = StallWatch(producer)
    moments: dict[str, float] = {}
    restart: threading.Thread | None = None

    def back() -> None:
        kafka_cluster.start(victim)
        moments["up"] = time.monotonic()

    try:
        for i, batch in enumerate(batches):
            if i == len(batches) // 4:
                moments["kill"] = time.monotonic()
                kafka_cluster.kill(victim)
            elif i == len(batches) // 2:
                restart = threading.Thread(target=back, daemon=True)
                restart.start()
            publish_batches(producer, topics, [batch])
            time.sleep(20 / len(batches))  # pacing the stream over 20 s, not a synchronisation
        assert restart is not None
        restart.join(120)
        producer.flush(120)
        time.sleep(3)  # the producer's health after the return, for the record below
        health = producer.health()
        wait_for(lambda: stored_count(store) >= len(produced), 120, "ingest to store everything")
        result = tally(store, produced)
        copies = topic_copies(settings, topics.samples, health["acked"])
    finally:
        stop.set()
        for runner in runners:
            runner.join(60)
        watch.stop()
        producer.close()
        bus.close()
    at_crash = watch.longest(moments["kill"], moments["up"])
    after_return = watch.longest(moments["up"])
    print(f"\nkilled {victim} (leader of most samples partitions); back "
          f"{moments['up'] - moments['kill']:.1f}s later")
    print(f"producer stall: at the crash {at_crash:.2f}s, after the return {after_return:.2f}s; "
          f"health {health}")
    print(f"store: {result}; topic: {sum(copies.values())} messages, "
          f"{sum(n - 1 for n in copies.values())} repeated; ingest "
          f"{[i.stats.bus_errors for i in ingests]} bus errors, "
          f"{[i.stats.commit_failures for i in ingests]} failed commits")
    assert (result.lost, result.doubled, result.unknown) == (0, 0, 0)
    assert result.stored == len(produced)
    assert health["failed"] == 0 and health["pending"] == 0
    assert health["acked"] == sum(copies.values()) == len(copies), "a message is in the topic twice"
    assert health["longest_stall_s"] >= at_crash > 0
    assert after_return <= STALL_AFTER_RETURN_MAX_S
    assert at_crash <= STALL_AT_CRASH_MAX_S
