"""``no_data`` through the real path (issue 10.1): the lab's agents → the collectors → detection.

A control run raises no ``no_data``; a switch that really stops (its agent frozen or killed,
through a proxy in front of it) is ``no_data`` within 3 of its intervals and clears within 2
after it resumes. Both are measured as the scenario scorer measures detection: the event time the
alert says it was raised (resolved) at, from the device's time at the moment of the fault (of the
resume).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from collectors.snmp.collector import SnmpCollector, SnmpOptions
from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from lab.runtime import Lab
from pipeline.config import PluginSpec
from pipeline.kinds import NO_DATA
from pipeline.model import Alert, SampleBatch
from tests.collectors.conftest import Running, Sink
from tests.collectors.proxy import Proxy

INTERVAL_S = 1.0
SCENARIO = """
format: 1
name: no-data-{name}
seed: 5
duration_s: 3600
sample_interval_s: {interval}
fabric:
  spines: 2
  leaves: 2
  hosts_per_leaf: 2
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {{gnmi: {gnmi}, snmp: {snmp}}}
  profiles: [openconfig, arista, sonic]
routing: ecmp
traffic:
  - {{pattern: allreduce, hosts: all, load: 0.3, qps_per_flow: 2}}
"""


class Watch:
    """Detection fed from what the collectors emitted, in arrival order (as the detect role
    reads the bus): the ``no_data`` alert changes, each with the chain's event time then."""

    def __init__(self, sink: Sink, lab: Lab) -> None:
        spec = PluginSpec(type=NO_DATA)
        self.chain = DetectionChain(DetectionSettings(detectors=(spec,)), lab.topology)
        self.sink = sink
        self.fed = 0
        self.changes: list[tuple[int, Alert]] = []

    def pump(self) -> None:
        with self.sink._cond:
            batches: list[SampleBatch] = self.sink.batches[self.fed:]
            self.fed += len(batches)
        for alert in self.chain.observe(batches):
            if alert.name == NO_DATA:
                self.changes.append((self.chain.now_ns, alert))

    def until(self, predicate: Any, timeout: float, what: str) -> None:
        done = threading.Event()
        deadline = timeout
        while not done.wait(0.05):
            self.pump()
            if predicate():
                return
            deadline -= 0.05
            if deadline <= 0:
                raise AssertionError(f"timed out waiting for {what}; no_data changes: "
                                     f"{[(t, a.entity, a.ends_ns) for t, a in self.changes]}")

    def fired(self, device: str) -> list[tuple[int, Alert]]:
        return [(t, a) for t, a in self.changes if a.entity == device and a.ends_ns is None]

    def resolved(self, device: str) -> list[tuple[int, Alert]]:
        return [(t, a) for t, a in self.changes if a.entity == device and a.ends_ns is not None]


def start_lab(tmp: Path, name: str, speed: float, gnmi: float, snmp: float) -> Lab:
    path = tmp / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name, gnmi=gnmi, snmp=snmp, interval=INTERVAL_S))
    return Lab(path, speed=speed, out_dir=tmp / name).start()


#: control runs (gNMI share, SNMP share, interval, speed asked): gNMI only at speed 10 (its agents
#: keep that schedule here), and a mixed fabric at what the scenario runner lowers speed 1 to for
#: its SNMP agents (``harness_speed``), polled every 2 s: the lab's SNMP agents share one event
#: loop with everything else the lab serves and stall for a second and more on a busy machine
CONTROLS = {"gnmi": (1.0, 0.0, 1.0, 10.0), "mixed": (0.5, 0.5, 2.0, 1.0)}


@pytest.fixture(params=sorted(CONTROLS))
def control_lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    from lab.scenario.load import load_scenario
    from rocewatch.scenario.runner import harness_speed

    gnmi, snmp, interval, asked = CONTROLS[request.param]
    path = tmp_path / "control.yaml"
    path.write_text(SCENARIO.format(name=request.param, gnmi=gnmi, snmp=snmp,
                                    interval=interval))
    speed = harness_speed(load_scenario(path), asked)
    lab = Lab(path, speed=speed, out_dir=tmp_path / "control").start()
    yield lab
    lab.stop()


def collectors(agents: Path, sink: Sink) -> list[Running]:
    return [Running(GnmiCollector("lab-gnmi", GnmiOptions(agents=str(agents)), emit=sink)),
            Running(SnmpCollector("lab-snmp", SnmpOptions(agents=str(agents)), emit=sink))]


def test_a_control_run_raises_no_no_data(control_lab: Lab, sink: Sink) -> None:
    """Every switch streams or answers normally at the speed the scenario runner would run it:
    not one no_data, and every switch reported interval after interval."""
    mixed_lab = control_lab
    agents = mixed_lab.out_dir / "agents.json"
    switches = {s["name"] for s in mixed_lab.agents()["switches"]}
    watch = Watch(sink, mixed_lab)
    running = collectors(agents, sink)
    for r in running:
        r.__enter__()
    try:
        interval = mixed_lab.scenario.sample_interval_s
        start = mixed_lab.sim_time()
        watch.until(lambda: mixed_lab.sim_time() >= start + 25 * interval, timeout=120,
                    what="25 intervals of simulated time")
    finally:
        for r in running:
            r.__exit__()
    watch.pump()
    assert watch.changes == [], [(a.entity, a.evidence) for _, a in watch.changes]
    health = [r for r in sink.rows() if r[3] == "collector_received"]
    for switch in switches:
        mine = [r for r in health if r[1] == switch]
        assert len(mine) >= 20, (switch, len(mine))


def test_a_frozen_or_killed_agent_is_no_data_within_3_intervals_and_clears_within_2(
        tmp_path: Path, sink: Sink) -> None:
    lab = start_lab(tmp_path, "stops", speed=2.0, gnmi=1.0, snmp=0.0)
    proxy: Proxy | None = None
    try:
        doc = lab.agents()
        victim = doc["switches"][0]
        proxy = Proxy(victim["gnmi"]["address"]).start()
        victim["gnmi"]["address"] = proxy.address
        agents = tmp_path / "agents-proxied.json"
        agents.write_text(json.dumps(doc))
        device = victim["name"]
        step = int(INTERVAL_S * 1e9)
        watch = Watch(sink, lab)
        with Running(GnmiCollector("lab-gnmi", GnmiOptions(agents=str(agents)), emit=sink)):
            start = lab.sim_time()
            watch.until(lambda: lab.sim_time() >= start + 8, 30, "a steady start")
            assert watch.changes == []
            for fault in (proxy.freeze, proxy.kill):
                before = len(watch.fired(device))
                fault()
                at = lab.epoch_ns + int(lab.sim_time() * 1e9)  # the device's time: the fault
                watch.until(lambda: len(watch.fired(device)) > before, 30,  # noqa: B023
                            f"no_data after {fault.__name__}")
                _, alert = watch.fired(device)[before]
                detected = (alert.updated_ns - at) / step
                assert detected <= 3, (fault.__name__, detected)
                assert alert.root_cause is False
                settle = lab.sim_time()
                watch.until(lambda: lab.sim_time() >= settle + 3, 30,  # noqa: B023
                            "the fault to last a while")
                assert len(watch.resolved(device)) == before  # still no data
                proxy.resume()
                back = lab.epoch_ns + int(lab.sim_time() * 1e9)
                watch.until(lambda: len(watch.resolved(device)) > before, 30,  # noqa: B023
                            f"no_data to clear after {fault.__name__}")
                _, cleared = watch.resolved(device)[before]
                assert cleared.ends_ns is not None
                recovered = (cleared.ends_ns - back) / step
                assert recovered <= 2, (fault.__name__, recovered)
            # nobody else was ever called silent
            assert {a.entity for _, a in watch.changes} == {device}
    finally:
        if proxy is not None:
            proxy.stop()
        lab.stop()
