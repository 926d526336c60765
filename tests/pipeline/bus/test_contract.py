"""The bus contract: the same tests on the in-process bus and on a real Kafka broker."""

from __future__ import annotations

import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.bus.base import Bus, Consumer, Message
from pipeline.bus.memory import MemoryBus
from pipeline.config import BusSettings, KafkaSettings
from pipeline.errors import BusError


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["memory", "kafka"])
def bus(request: pytest.FixtureRequest) -> Iterator[Bus]:
    if request.param == "memory":
        memory = MemoryBus(partitions=4, capacity=10_000)
        yield memory
        memory.close()
    else:
        yield request.getfixturevalue("kafka_bus")


@pytest.fixture
def topic(bus: Bus) -> str:
    name = unique("topic") + ".samples"
    bus.ensure_topics([name])
    return name


def drain(consumer: Consumer, want: int, timeout_s: float = 30.0) -> list[Message]:
    """Poll until ``want`` messages arrived (or the time is up); returns what arrived."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got.extend(consumer.poll(timeout_s=0.5))
    return got


def settle(consumers: list[Any], partitions: int, timeout_s: float = 60.0) -> None:
    """Poll until every member holds a share and together they hold every partition (Kafka
    members join in poll; a poll must last long enough for a join and sync to complete on a
    loaded machine). Nothing is produced yet, so these polls return nothing."""
    if not all(hasattr(c, "assignment") for c in consumers):
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            assert c.poll(timeout_s=1.0) == []
        held = [set(c.assignment()) for c in consumers]
        if all(held) and len(set().union(*held)) == partitions == sum(len(h) for h in held):
            return
    raise AssertionError(f"the group did not settle: {[c.assignment() for c in consumers]}")


def send(bus: Bus, topic: str, items: list[tuple[bytes, bytes]]) -> None:
    producer = bus.producer()
    for key, value in items:
        producer.send(topic, value, key=key)
    producer.flush()
    producer.close()


def test_keyed_messages_keep_their_order_within_one_partition(bus: Bus, topic: str) -> None:
    items = [(f"dev{i % 3}".encode(), f"{i % 3}:{i // 3}".encode()) for i in range(60)]
    consumer = bus.consumer([topic], unique("g"))
    send(bus, topic, items)
    got = drain(consumer, 60)
    consumer.close()
    assert len(got) == 60
    by_key: dict[bytes, list[Message]] = {}
    for m in got:
        assert m.key is not None
        by_key.setdefault(m.key, []).append(m)
    for key, msgs in by_key.items():
        assert len({m.partition for m in msgs}) == 1, f"{key!r} spread over partitions"
        assert [m.value for m in msgs] == [f"{key.decode()[3:]}:{j}".encode() for j in range(20)]


def test_a_group_shares_partitions_and_gets_each_message_once(bus: Bus, topic: str) -> None:
    group = unique("g")
    a, b = bus.consumer([topic], group), bus.consumer([topic], group)
    settle([a, b], partitions=4)
    items = [(f"dev{i}".encode(), f"m{i}".encode()) for i in range(64)]
    send(bus, topic, items)
    seen: Counter[bytes] = Counter()
    per_member = [0, 0]
    refused = 0
    deadline = time.monotonic() + 30
    while len(seen) < 64 and time.monotonic() < deadline:
        for i, member in enumerate((a, b)):
            msgs = member.poll(timeout_s=0.2)
            try:
                member.commit()
            except BusError:  # the group rebalanced meanwhile: that work is redone
                refused += 1
            per_member[i] += len(msgs)
            seen.update(m.value for m in msgs)
    a.close()
    b.close()
    assert set(seen) == {v for _, v in items}
    if not refused:  # with every commit accepted, nothing may come twice
        assert max(seen.values()) == 1, "a message reached the group twice"
    assert min(per_member) > 0, f"one member got nothing: {per_member}"


def test_uncommitted_messages_go_to_the_next_member(bus: Bus, topic: str) -> None:
    group = unique("g")
    first = bus.consumer([topic], group)
    send(bus, topic, [(b"dev", f"m{i}".encode()) for i in range(10)])
    assert len(drain(first, 10)) == 10
    first.close()  # crashed before its commit
    second = bus.consumer([topic], group)
    again = drain(second, 10)
    second.close()
    assert sorted(m.value for m in again) == sorted(f"m{i}".encode() for i in range(10))


def test_committed_messages_are_not_delivered_again(bus: Bus, topic: str) -> None:
    group = unique("g")
    first = bus.consumer([topic], group)
    send(bus, topic, [(b"dev", f"old{i}".encode()) for i in range(10)])
    assert len(drain(first, 10)) == 10
    first.commit()
    first.close()
    send(bus, topic, [(b"dev", f"new{i}".encode()) for i in range(5)])
    second = bus.consumer([topic], group)
    got = drain(second, 5)
    got += second.poll(timeout_s=1.0)  # nothing more may come
    second.close()
    assert [m.value for m in got] == [f"new{i}".encode() for i in range(5)]


def test_each_group_gets_every_message(bus: Bus, topic: str) -> None:
    one, two = bus.consumer([topic], unique("g")), bus.consumer([topic], unique("g"))
    send(bus, topic, [(f"d{i}".encode(), f"m{i}".encode()) for i in range(20)])
    got_one, got_two = drain(one, 20), drain(two, 20)
    one.close()
    two.close()
    assert sorted(m.value for m in got_one) == sorted(m.value for m in got_two)
    assert len(got_one) == 20


def test_ensure_topics_is_idempotent(bus: Bus, topic: str) -> None:
    bus.ensure_topics([topic, topic])
    bus.ensure_topics([topic])
    consumer = bus.consumer([topic], unique("g"))
    send(bus, topic, [(None, b"x")])  # type: ignore[list-item]
    assert [m.value for m in drain(consumer, 1)] == [b"x"]
    consumer.close()


# -- Kafka only ---------------------------------------------------------------------------------


def test_kafka_topics_get_the_configured_partitions(kafka_bus: Any) -> None:
    name = unique("topic")
    kafka_bus.ensure_topics([name])
    described = kafka_bus._admin_client().describe_topics([name])
    assert len(described[0]["partitions"]) == kafka_bus.settings.kafka.partitions


def test_kafka_without_a_broker_fails_fast_with_a_bus_error() -> None:
    from pipeline.bus.kafka import KafkaBus

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bus = KafkaBus(BusSettings(kind="kafka", kafka=KafkaSettings(
        bootstrap=f"127.0.0.1:{port}", bootstrap_timeout_ms=500)))
    started = time.monotonic()
    with pytest.raises(BusError, match=f"127.0.0.1:{port}"):
        bus.ensure_topics(["x"])
    assert time.monotonic() - started < 10
