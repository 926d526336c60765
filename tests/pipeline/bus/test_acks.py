"""The producer state every bus reports (pipeline.bus.acks): acks counted, stalls measured from
the later of the last ack and the send that found nothing pending, the longest one kept; and the
same fields from the in-process bus and from a real broker."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.bus.acks import AckClock
from pipeline.bus.base import Bus


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_stall_runs_from_the_send_that_found_nothing_pending_to_the_next_ack() -> None:
    clock = Clock()
    acks = AckClock(clock)
    clock.t = 110.0  # idle for 10 s: not a stall
    acks.on_send()
    assert acks.health()["pending"] == 1 and acks.stalled_s() == 0.0
    clock.t = 113.0
    acks.on_send()
    assert acks.stalled_s() == 3.0
    acks.on_ack()  # one of two acknowledged after 3 s
    assert acks.longest_stall_s == 3.0 and acks.stalled_s() == 0.0
    clock.t = 118.0  # the other waits on, from that ack
    assert acks.stalled_s() == 5.0
    assert acks.health()["longest_stall_s"] == 5.0  # a stall still going counts
    acks.on_ack()
    clock.t = 200.0
    health = acks.health()
    assert (health["sent"], health["acked"], health["pending"]) == (2, 2, 0)
    assert health["stalled_s"] == 0.0 and health["longest_stall_s"] == 5.0
    assert health["last_ack_age_s"] == 82.0


def test_a_failure_is_counted_and_ends_the_wait_when_nothing_else_is_pending() -> None:
    clock = Clock()
    acks = AckClock(clock)
    acks.on_send()
    clock.t = 130.0
    acks.on_error(TimeoutError("delivery timed out"))
    health = acks.health()
    assert (health["failed"], health["pending"], health["stalled_s"]) == (1, 0, 0.0)
    assert health["last_error"] == "TimeoutError: delivery timed out"


@pytest.fixture(params=["memory", "kafka"])
def bus(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        from pipeline.bus.memory import MemoryBus

        return MemoryBus(partitions=2)
    return request.getfixturevalue("kafka_bus")


def test_every_bus_reports_its_producers_acks(bus: Bus, unique_name: Any) -> None:
    topic = unique_name("acks") + ".samples"
    bus.ensure_topics([topic])
    producer = bus.producer()
    for i in range(20):
        producer.send(topic, b"x", key=str(i).encode())
    producer.flush(30)
    health = producer.health()
    producer.close()
    assert (health["sent"], health["acked"], health["failed"], health["pending"]) == (20, 20, 0,
                                                                                     0)
    assert health["stalled_s"] == 0.0 and health["last_error"] == ""
    assert set(health) == set(AckClock().health())
