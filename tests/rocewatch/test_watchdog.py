"""Issue 11.1's second half: a loop that keeps crashing on the same input is reported (its health,
``/healthz``, an alert on the alerts topic), and the alert resolves once the loop makes progress
again or the process stops. On the in-process bus with a real consumer group, and on the real
broker with the platform's own remediate loop crash-looping on a damaged state file."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.errors import DecodeError
from pipeline.model import Alert, Severity
from pipeline.retry import RetryPolicy
from pipeline.supervisor import Supervisor
from pipeline.wire.alerts import decode_alerts
from rocewatch.app import Platform
from rocewatch.settings import Settings
from rocewatch.watchdog import CRASH_LOOP_ALERT, Watchdog

QUICK = RetryPolicy(initial_s=0.001, cap_s=0.002)


def wait_until(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def alerts_from(consumer: Any, want: int, timeout_s: float = 30) -> list[Alert]:
    out: list[Alert] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < want and time.monotonic() < deadline:
        for msg in consumer.poll(timeout_s=0.5):
            out.extend(decode_alerts(msg.value).whole("alerts"))
    return out


class PoisonedReader:
    """A loop of a consumer group that cannot handle one record (a bug, until ``fixed``): it
    crashes before committing, so every restart reads the same record again."""

    def __init__(self, bus: MemoryBus, topic: str) -> None:
        self.bus = bus
        self.topic = topic
        self.fixed = threading.Event()
        self.committed = 0

    def __call__(self, stop: threading.Event) -> None:
        consumer = self.bus.consumer([self.topic], "reader")
        try:
            while not stop.is_set():
                msgs = consumer.poll(timeout_s=0.05)
                for msg in msgs:
                    if msg.value == b"poison" and not self.fixed.is_set():
                        raise DecodeError("cannot read this record")
                if msgs:
                    consumer.commit()
                    self.committed += len(msgs)
        finally:
            consumer.close()


def test_a_loop_crashing_on_the_same_record_raises_an_alert_that_resolves_on_progress() -> None:
    bus, topics = MemoryBus(partitions=1), Topics("w.")
    bus.ensure_topics([*topics.all(), "w.input"])
    producer = bus.producer()
    for value in (b"good", b"poison", b"good"):
        producer.send("w.input", value, key=b"k")
    reader = PoisonedReader(bus, "w.input")
    stop = threading.Event()
    sup = Supervisor("reader loop", reader, stop, policy=QUICK, rng=random.Random(1),
                     progress=lambda: reader.committed).start()
    watched = bus.consumer([topics.alerts], "watch")
    watchdog = Watchdog({"reader": sup}, bus.producer(), topics, site="lab1", host="node7",
                        wall=lambda: 42)
    try:
        assert watchdog.check() == []  # nothing wrong yet, or not for long enough
        wait_until(lambda: sup.stalled >= 3, 30, "three crashes on the poisoned record")
        health = sup.health()
        assert health["crash_looping"] is True and "cannot read this record" in \
            health["last_error"]
        assert reader.committed == 0  # the good record before it is never committed either
        fired = watchdog.check()
        assert watchdog.check() == []  # raised once
        (alert,) = fired
        assert (alert.name, alert.entity, alert.severity) == (CRASH_LOOP_ALERT, "reader",
                                                              Severity.CRITICAL)
        assert alert.labels == {"host": "node7", "site": "lab1"} and alert.firing
        assert "DecodeError: cannot read this record" in alert.annotations["last_error"]
        assert int(alert.annotations["crashes_without_progress"]) >= 3
        assert alerts_from(watched, 1) == [alert]

        reader.fixed.set()  # the bug is fixed: the restarted loop reads past the record
        wait_until(lambda: reader.committed == 3, 30, "the loop to commit the three records")
        (resolved,) = watchdog.check()
        assert resolved.fingerprint == alert.fingerprint and not resolved.firing
        assert resolved.ends_ns == 42 and sup.health()["crash_looping"] is False
        assert alerts_from(watched, 1) == [resolved]
    finally:
        stop.set()
        sup.join(30)
        watchdog.close()


def test_the_watchdog_retries_a_publish_the_bus_refused() -> None:
    # a bounded bus whose alerts topic is full: a reader that lags blocks every producer
    bus, topics = MemoryBus(partitions=1, capacity=10, max_block_s=0.1), Topics("r.")
    bus.ensure_topics(topics.all())
    lagging = bus.consumer([topics.alerts], "slow reader")
    filler = bus.producer()
    for _ in range(10):
        filler.send(topics.alerts, b"[]", key=b"other")
    stop = threading.Event()

    def crash(_: threading.Event) -> None:
        raise DecodeError("same record")

    sup = Supervisor("crasher", crash, stop, policy=QUICK, rng=random.Random(2)).start()
    watchdog = Watchdog({"crasher": sup}, bus.producer(), topics, site="s")
    try:
        wait_until(lambda: sup.crash_looping, 30, "the loop to crash-loop")
        assert watchdog.check() == [] and watchdog.publish_failures == 1
        assert not watchdog.firing  # not published, so not raised: the next look tries again
        assert len(lagging.poll(timeout_s=1, max_records=100)) == 10
        lagging.commit()  # the reader caught up: there is room again
        (alert,) = watchdog.check()
        assert alert.name == CRASH_LOOP_ALERT and watchdog.firing == {"crasher": alert}
        assert alerts_from(lagging, 1) == [alert]
    finally:
        stop.set()
        sup.join(30)


@pytest.mark.integration
@pytest.mark.slow
def test_the_platform_reports_a_crash_looping_role_on_the_real_broker(
        kafka_settings: Any, clickhouse_address: Any, tmp_path: Path, unique_name: Any) -> None:
    import httpx

    from pipeline.bus.kafka import KafkaBus
    from tests.conftest import clickhouse_settings

    damaged = tmp_path / "state.json"
    damaged.write_text('{"version": 2, "drains": ')  # the remediate loop cannot start on it
    prefix = unique_name("wd") + "."
    settings = Settings(site="lab1", bus=kafka_settings.model_copy(
        update={"topic_prefix": prefix}),
        store=clickhouse_settings(clickhouse_address, unique_name("db")), api={"port": 0},
        remediation={"state_path": str(damaged), "receivers": []})
    bus = KafkaBus(settings.bus)
    bus.ensure_topics(Topics(prefix).all())
    watched = bus.consumer([Topics(prefix).alerts], "watch")
    platform = Platform(settings, ("remediate", "api"))
    platform.start()
    try:
        wait_until(lambda: platform.health()["remediate"]["crash_looping"], 60,
                   "the remediate loop to crash-loop")
        wait_until(lambda: "url" in platform.health().get("api", {}), 60, "the API")
        healthz = httpx.get(platform.health()["api"]["url"] + "/healthz", timeout=30)
        assert healthz.status_code == 503 and healthz.json()["status"] == "degraded"
        assert healthz.json()["loops"]["remediate loop"]["crash_looping"] is True
        (alert,) = alerts_from(watched, 1, 60)
        assert (alert.name, alert.entity) == (CRASH_LOOP_ALERT, "remediate") and alert.firing
        assert "remediation state" in alert.annotations["last_error"]
        assert alert.labels["site"] == "lab1"
    finally:
        platform.stop()
    (resolved,) = alerts_from(watched, 1, 60)  # the process stopped: the alert is resolved
    assert resolved.fingerprint == alert.fingerprint and not resolved.firing
    watched.close()
    bus.close()
