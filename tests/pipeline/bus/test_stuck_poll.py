"""A Kafka consumer whose poll never returns is given up and replaced, never a silent stall.

kafka-python 3.0.12's poll was seen blocked for good on the test cluster; that cannot be caused
on demand, so the client here is a stand-in whose poll blocks until it is closed (as the real
one's waiter is answered when its selector closes). Everything else is the bus's own code."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import pytest

from pipeline.bus import kafka as kafka_bus
from pipeline.config import BusSettings
from pipeline.errors import BusError


class _Record:
    def __init__(self, offset: int) -> None:
        self.offset, self.key, self.value = offset, b"k", b"v%d" % offset


class _TP:
    def __init__(self, topic: str, partition: int) -> None:
        self.topic, self.partition = topic, partition


class _Client:
    """A kafka-python consumer stand-in: the first one made hangs in its first poll."""

    made: ClassVar[list[_Client]] = []

    def __init__(self, **config: Any) -> None:
        self.config = config
        self.closed = threading.Event()
        self.subscribed: list[str] = []
        self.hangs = not _Client.made
        self.polls = 0
        _Client.made.append(self)

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0}

    def topics(self) -> set[str]:
        return {"t"}

    def subscribe(self, topics: list[str], listener: Any = None) -> None:
        self.subscribed = topics

    def poll(self, timeout_ms: int, max_records: int) -> dict[Any, list[_Record]]:
        self.polls += 1
        if self.hangs:
            self.closed.wait()  # as the real one: answered only when its selector closes
            raise RuntimeError("NetworkSelector closed!")
        return {_TP("t", 0): [_Record(7)]}

    def assignment(self) -> set[Any]:
        return set()

    def commit(self, offsets: Any = None, timeout_ms: int = 0) -> None: ...

    def close(self, autocommit: bool = False) -> None:
        self.closed.set()


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> type[_Client]:
    _Client.made = []
    monkeypatch.setattr(kafka_bus, "_KafkaConsumer", _Client)
    return _Client


def _settings() -> BusSettings:
    return BusSettings.model_validate({"kind": "kafka", "kafka": {"poll_deadline_ms": 300}})


def test_a_poll_that_does_not_return_is_given_up_and_the_member_replaced(
        client: type[_Client]) -> None:
    consumer = kafka_bus.KafkaConsumer(_settings(), ("t",), "g")
    started = time.monotonic()
    with pytest.raises(BusError, match=r"did not return.*replaced"):
        consumer.poll(0.1)
    waited = time.monotonic() - started
    assert waited < 5, f"the stuck poll held the caller {waited:.1f} s"
    first, second = client.made
    assert first.closed.is_set(), "the stuck member was not closed (it would stay in the group)"
    assert second.subscribed == ["t"] and second.config["group_id"] == "g"
    assert consumer.replaced == 1
    got = consumer.poll(0.1)
    assert [(m.topic, m.partition, m.offset, m.value) for m in got] == [("t", 0, 7, b"v7")]
    consumer.close()
    assert second.closed.is_set()


def test_a_poll_within_its_deadline_replaces_nothing(client: type[_Client]) -> None:
    client.made.append(_Client.__new__(_Client))  # the next one made does not hang
    consumer = kafka_bus.KafkaConsumer(_settings(), ("t",), "g")
    for _ in range(3):
        assert len(consumer.poll(0.05)) == 1
    assert consumer.replaced == 0 and len(client.made) == 2
    consumer.close()
