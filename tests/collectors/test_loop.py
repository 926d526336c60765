"""The collect role: collectors from the config, through the registry, onto the bus, with a
Prometheus endpoint of per-target health."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors import loop as runner
from collectors.base import Collector, Emit
from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.config import PluginSpec
from pipeline.errors import CollectorError
from pipeline.registry import Registry
from pipeline.retry import RetryPolicy
from pipeline.stage import StageContext
from pipeline.wire.samples import decode_batch
from rocewatch.settings import Settings
from tests.collectors.conftest import write_targets
from tests.collectors.gnmi_target import SYNC, ScriptedTarget, hold, notification

T0 = 1_800_000_000_000_000_000


def test_builtins_are_registered_as_entry_points() -> None:
    registry = Registry("rocewatch.collectors")  # type: ignore[var-annotated]
    assert {"gnmi", "snmp"} <= set(registry.names())
    assert registry.get("gnmi").name == "gnmi"


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def counting(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
    path = "/interfaces/interface[name=Ethernet1]/state/counters/in-octets"
    yield notification(T0, [(path, pb.TypedValue(uint_val=1))])
    yield SYNC
    for i in range(1, 200):
        time.sleep(0.02)
        yield notification(T0 + i * 10**8, [(path, pb.TypedValue(uint_val=i))])
    yield from hold(target)


def test_collect_role_publishes_per_device_batches(tmp_path: Path,
                                                   gnmi_targets: list[ScriptedTarget],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("R_USER", "admin")
    monkeypatch.setenv("R_PASS", "admin")
    gnmi_targets.extend(ScriptedTarget(counting).start() for _ in range(2))
    targets = write_targets(tmp_path / "targets.yaml", [
        {"name": f"leaf{i}", "address": t.address, "protocol": "gnmi", "profile": "openconfig",
         "sample_interval_s": 0.1,
         "credentials": {"username_env": "R_USER", "password_env": "R_PASS"}}
        for i, t in enumerate(gnmi_targets, 1)])
    port = free_tcp_port()
    spec = PluginSpec.model_validate({"type": "gnmi", "name": "fabric", "targets": str(targets),
                                      "flush_interval_s": 0.05,
                                      "metrics_listen": f"127.0.0.1:{port}"})
    bus = MemoryBus(partitions=4)
    topics = Topics("t.")
    bus.ensure_topics(topics.all())
    ctx = StageContext(Settings(collectors=(spec,)), bus, topics)
    consumer = bus.consumer([topics.samples], "test")
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(ctx, stop), daemon=True)
    thread.start()
    seen: dict[str, set[str]] = {}
    keys_ok = True
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
                {"leaf1", "leaf2"} <= set(seen)
                and all("if_in_octets" in m and "collector_up" in m for m in seen.values())):
            for msg in consumer.poll(0.5):
                batch = decode_batch(msg.value)
                assert len(batch.devices) == 1
                keys_ok &= msg.key == batch.devices[0].encode()
                seen.setdefault(batch.devices[0], set()).update(batch.metric_names().tolist())
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        health = ctx.health["collector.fabric"]()
    finally:
        stop.set()
        thread.join(20)
    assert not thread.is_alive()
    assert keys_ok, "batches must be keyed by their device"
    assert {"leaf1", "leaf2"} <= set(seen)
    text = body.decode()
    assert 'rocewatch_collector_up{collector="fabric",profile="openconfig",protocol="gnmi",' \
           'target="leaf1"} 1.0' in text
    assert "rocewatch_collector_samples_total" in text
    assert health["targets_up"] == 2 and health["alive"]
    with pytest.raises(OSError):  # the endpoint went away with the role
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


class FlakyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: how many of the first instances break
    breaks: int = 2


class Flaky(Collector):
    """A collector whose first instances break as soon as they run (test-only, no entry point)."""

    name = "flaky"
    Options = FlakyOptions
    built: ClassVar[list[Flaky]] = []
    #: set when an instance runs without breaking
    running: ClassVar[threading.Event] = threading.Event()

    def __init__(self, instance: str, options: FlakyOptions, *, emit: Emit) -> None:
        super().__init__(instance, options, emit=emit)
        self.breaks = options.breaks
        Flaky.built.append(self)
        self.number = len(Flaky.built)

    def run(self, stop: threading.Event) -> None:
        if self.number <= self.breaks:
            raise CollectorError(f"instance {self.number} broke")
        Flaky.running.set()
        stop.wait()

    def health(self) -> dict[str, Any]:
        return {"collector": "flaky", "instance_number": self.number}


def test_a_crashed_collector_is_rebuilt_and_its_health_counts_the_restarts() -> None:
    registry: Registry[Collector] = Registry("rocewatch.collectors")
    registry._loaded["flaky"] = Flaky  # a test plugin, without an entry point
    Flaky.built.clear()
    Flaky.running.clear()
    bus = MemoryBus()
    publisher = runner.Publisher(bus.producer(), Topics())
    sup = runner.Supervised(PluginSpec(type="flaky", name="f"), "collectors[0]", registry,
                            publisher, policy=RetryPolicy(initial_s=0.0005, cap_s=0.001))
    stop = threading.Event()
    sup.start(stop)
    try:
        assert Flaky.running.wait(15.0), "the collector was not rebuilt and restarted"
        health = sup.health()
    finally:
        stop.set()
    assert sup.join(15.0)
    assert [c.number for c in Flaky.built] == [1, 2, 3], "each restart builds a new instance"
    assert sup.collector is Flaky.built[2]
    assert health["instance_number"] == 3 and health["alive"] and health["restarts"] == 2
    assert health["last_error"] == "CollectorError: instance 2 broke"
    assert health["crashes_without_progress"] == 2
