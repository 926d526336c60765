"""Streams that restart, and a whole fabric that reconnects at once (issue 13.1): no interval lost
or doubled, no target lost, connects spread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from collectors.gnmi.connects import ConnectGate
from collectors.gnmi.recording import Recording
from collectors.gnmi.replay import PacedReplay
from pipeline.rates.rule import Status, intervals
from tests.collectors.conftest import Running, Sink, wait_until, write_targets
from tests.collectors.gnmi_target import SYNC, ReplayThread, ScriptedTarget, notification

INTERVAL_S = 0.5
RATE = 1000.0  # the counter's increase per second of device time
OCTETS = "/interfaces/interface[name=Ethernet1]/state/counters/in-octets"


@pytest.fixture(autouse=True)
def _creds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_GNMI_USER", "admin")
    monkeypatch.setenv("T_GNMI_PASS", "admin")


def gnmi_target(name: str, address: str) -> dict[str, Any]:
    return {"name": name, "address": address, "protocol": "gnmi", "profile": "openconfig",
            "sample_interval_s": INTERVAL_S,
            "credentials": {"username_env": "T_GNMI_USER", "password_env": "T_GNMI_PASS"}}


def make(tmp_path: Path, sink: Sink, targets: list[dict[str, Any]], **opts: Any) -> Running:
    path = write_targets(tmp_path / "targets.yaml", targets)
    options = GnmiOptions(targets=str(path), flush_interval_s=0.05, connect_timeout_s=2, **opts)
    return Running(GnmiCollector("test", options, emit=sink))


def sampled_device(samples_per_stream: int) -> Any:
    """A device on the wall clock that samples every INTERVAL_S from each subscription's start
    (as SAMPLE subscriptions do), sends its current value first, and ends every stream after a
    few samples (as some devices do): its counter runs on, whatever the streams do."""
    step = int(INTERVAL_S * 1e9)
    born = time.time_ns()

    def value(ts: int) -> pb.TypedValue:
        return pb.TypedValue(uint_val=int((ts - born) / 1e9 * RATE))

    def script(request: pb.SubscribeRequest, target: ScriptedTarget) -> Iterator[bytes]:
        start = time.time_ns()
        yield notification(start, [(OCTETS, value(start))])
        yield SYNC
        for k in range(1, samples_per_stream + 1):
            due = start + k * step
            time.sleep(max(0.0, (due - time.time_ns()) / 1e9))
            yield notification(due, [(OCTETS, value(due))])

    return script


def test_a_restarted_stream_loses_and_doubles_no_interval(
        tmp_path: Path, sink: Sink, gnmi_targets: list[ScriptedTarget]) -> None:
    target = ScriptedTarget(sampled_device(samples_per_stream=4)).start()
    gnmi_targets.append(target)

    def octets(rows: list[Any]) -> list[Any]:
        return sorted({r[0]: r for r in rows if r[3] == "if_in_octets"}.values())

    with make(tmp_path, sink, [gnmi_target("leaf1", target.address)]) as collector:
        rows = sink.wait_for(lambda rows: target.subscribes >= 5 and len(octets(rows)) >= 22,
                             timeout=30, what="samples across four stream restarts")
        health = collector.health()["targets"]["leaf1"]
    got = octets(rows)
    n = len(got)
    times = np.array([r[0] for r in got], np.int64)
    values = np.array([r[5] for r in got])
    judged = intervals(np.zeros(n, np.int64), times, values, np.zeros(n, np.uint8),
                       np.ones(n, bool))
    statuses = [Status(s) for s in judged.status[1:]]
    lengths = np.diff(times) / 1e9 / INTERVAL_S
    assert statuses == [Status.OK] * (n - 1), (statuses, lengths)  # no gap, no reset
    # nothing doubled: no interval is a fraction of the cadence; nothing lost: none is a gap
    assert lengths.min() >= 0.75 and lengths.max() <= 2.0, lengths
    assert health["connects"] >= 5
    # every count the device made between the first and the last sample is in the rates
    assert float(np.nansum(judged.increase[1:])) == values[-1] - values[0]
    assert np.nanmean(judged.rate) == pytest.approx(RATE, rel=0.02)


def test_the_connect_gate_spaces_a_crowd_evenly() -> None:
    """A thousand sessions asking at the same instant: a burst, then one every 1/rate."""
    clock = [100.0]
    gate = ConnectGate(rate=200.0, burst=50, concurrent=64, clock=lambda: clock[0])
    waits = [gate.reserve() for _ in range(1000)]
    assert waits[:50] == [0.0] * 50
    steps = np.diff(waits[49:])
    assert np.allclose(steps, 1 / 200.0)
    assert waits[-1] == pytest.approx(950 / 200.0)
    # tokens come back with time, up to the burst
    clock[0] += 1000.0
    assert [gate.reserve() for _ in range(50)] == [0.0] * 50
    assert gate.reserve() > 0


def recording(groups: int = 50) -> Recording:
    """A small openconfig stream: initial value, sync, then one notification per interval."""
    messages = [notification(1, [(OCTETS, pb.TypedValue(uint_val=0))]), SYNC]
    messages += [notification(1 + k, [(OCTETS, pb.TypedValue(uint_val=100 * k))])
                 for k in range(1, groups)]
    return Recording("openconfig", "leaf", tuple(messages))


def test_a_fabric_wide_reconnect_loses_no_target_and_is_spread(
        tmp_path: Path, sink: Sink) -> None:
    count, rate, burst = 40, 20.0, 5
    replay = ReplayThread(PacedReplay([recording()], count, INTERVAL_S)).start()
    try:
        targets = [gnmi_target(t["name"], t["address"]) for t in replay.replay.targets()]
        with make(tmp_path, sink, targets, connect_rate=rate, connect_burst=burst,
                  backoff_initial_s=0.05, backoff_max_s=0.5) as collector:
            wait_until(lambda: collector.health()["targets_up"] == count,
                       "every target up", timeout=30)
            before = {n: t["connects"] for n, t in collector.health()["targets"].items()}
            dropped = replay.drop_all()
            wait_until(lambda: all(
                t["connects"] > before[n] and t["up"]
                for n, t in collector.health()["targets"].items()),
                "every target back after the fabric-wide drop", timeout=60)
            marker = time.time_ns()
            rows = sink.wait_for(lambda rows: {r[1] for r in rows if r[0] > marker and
                                               r[3] == "if_in_octets"} == set(before),
                                 what="data from every target after the drop")
            health = collector.health()
    finally:
        replay.stop()
    arrivals = sorted(t - dropped for t in replay.replay.arrivals if t >= dropped)
    assert len(arrivals) == count  # each came back exactly once
    # the gate lets no more than the burst in at once and the rest one per 1/rate: however slow
    # the machine, the connects cannot come back faster than that
    assert arrivals[-1] - arrivals[0] >= (count - burst - 1) / rate
    assert max(sum(1 for b in arrivals if a <= b < a + 1 / rate) for a in arrivals) <= burst + 1
    assert health["targets_up"] == count
    assert {r[1] for r in rows if r[3] == "if_in_octets"} == set(before)
