"""The SNMP collector against the lab's SNMP agents, and both collectors in the collect role."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors import loop as runner
from collectors.snmp.collector import SnmpCollector, SnmpOptions
from lab.runtime import Lab
from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.config import PluginSpec
from pipeline.model import FLAG_COUNTER32, FLAG_RESET
from pipeline.stage import StageContext
from pipeline.wire.samples import decode_batch
from rocewatch.settings import Settings
from tests.collectors.conftest import Running, Sink

SCENARIO = """
format: 1
name: collectors-snmp
seed: 5
duration_s: 900
sample_interval_s: 1
fabric:
  spines: 2
  leaves: 2
  hosts_per_leaf: 2
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {gnmi: 0.5, snmp: 0.5}
  profiles: [openconfig, arista, sonic]
routing: ecmp
traffic:
  - {pattern: allreduce, hosts: all, load: 0.3, qps_per_flow: 2}
"""
#: the snmp profile's metrics; SNMP has no ECN marks, occupancy or watermarks
SNMP_METRICS = {"if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts", "if_speed",
                "if_admin_status", "if_oper_status", "if_last_change", "if_in_discards",
                "if_in_errors", "if_out_discards", "if_out_errors", "if_in_fcs_errors",
                "if_in_symbol_errors", "pfc_tx_frames", "pfc_rx_frames", "pfc_rx_pause_us",
                "pfc_tx_pause_us", "queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts"}


def start_lab(tmp: Path, name: str, **kwargs: Any) -> Any:
    scenario = tmp / f"{name}.yaml"
    scenario.write_text(SCENARIO)
    return Lab(scenario, speed=20.0, out_dir=tmp / name, **kwargs).start()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    running = start_lab(tmp_path_factory.mktemp("lab"), "mixed")
    yield running
    running.stop()


def snmp_switches(lab: Any) -> list[str]:
    return [s["name"] for s in lab.agents()["switches"] if s["snmp"]]


def polls(rows: list[Any], device: str) -> list[int]:
    return sorted({r[0] for r in rows if r[1] == device and not r[3].startswith("collector_")})


def collector(lab: Any, sink: Sink) -> Running:
    return Running(SnmpCollector("lab", SnmpOptions(agents=str(lab.out_dir / "agents.json")),
                                 emit=sink))


def test_polls_every_snmp_switch_with_its_clock(lab: Any, sink: Sink) -> None:
    switches = snmp_switches(lab)
    assert switches
    with collector(lab, sink) as running:
        rows = sink.wait_for(lambda rows: all(len(polls(rows, s)) >= 3 for s in switches),
                             what="three polls of every SNMP switch")
        health = running.health()["targets"]
    end = lab.epoch_ns + int((lab.sim_time() + 1) * 1e9)
    for switch in switches:
        mine = [r for r in rows if r[1] == switch and not r[3].startswith("collector_")]
        assert {r[3] for r in mine} == SNMP_METRICS
        assert health[switch]["clock"] == "device" and health[switch]["errors"] == {}
        # hrSystemDate anchored to sysUpTime: the lab's simulated time (DateAndTime counts
        # deciseconds, so the anchor may sit up to 0.1 s before the true time)
        assert all(lab.epoch_ns - 10**8 <= r[0] <= end for r in mine)
        assert all(r[6] == FLAG_COUNTER32 for r in mine if r[3] == "if_in_discards")
        assert not any(r[6] for r in mine if r[3] == "if_in_octets")
        assert {r[4] for r in mine if r[3] == "queue_tx_pkts"} == set(range(8))
        assert {r[4] for r in mine if r[3] == "pfc_rx_frames"} == set(range(8))
        octets = [r[5] for r in sorted(mine, key=lambda r: r[0])
                  if r[3] == "if_out_octets" and r[2] == "Ethernet1"]
        assert octets == sorted(octets)


def test_reboot_marks_counter_resets(lab: Any, sink: Sink) -> None:
    switch = snmp_switches(lab)[0]
    with collector(lab, sink):
        before = len(polls(sink.wait_for(lambda rows: len(polls(rows, switch)) >= 2,
                                         what="polls"), switch))
        lab.reset_counters(switch)
        rows = sink.wait_for(lambda rows: any(r[1] == switch and r[3] == "counter_reset"
                                              for r in rows)
                             and len(polls(rows, switch)) >= before + 2, what="the reboot")
    at = next(r[0] for r in rows if r[1] == switch and r[3] == "counter_reset")
    flagged = [r for r in rows if r[1] == switch and r[0] == at and r[3] == "if_in_octets"]
    assert flagged and all(r[6] & FLAG_RESET for r in flagged)
    assert not any(r[6] & FLAG_RESET for r in rows if r[1] == switch and r[0] > at)


def test_v3_auth_priv_against_the_lab(tmp_path: Path, sink: Sink) -> None:
    lab = start_lab(tmp_path, "v3", snmp_version="3")
    try:
        assert all(s["snmp"]["version"] == "3" for s in lab.agents()["switches"] if s["snmp"])
        switches = snmp_switches(lab)
        with collector(lab, sink) as running:
            sink.wait_for(lambda rows: all(len(polls(rows, s)) >= 2 for s in switches),
                          timeout=30, what="v3 polls")
            health = running.health()["targets"]
        assert all(health[s]["errors"] == {} for s in switches), health
    finally:
        lab.stop()


def test_collect_role_runs_both_collectors_against_the_lab(lab: Any) -> None:
    agents = str(lab.out_dir / "agents.json")
    specs = (PluginSpec.model_validate({"type": "gnmi", "name": "g", "agents": agents}),
             PluginSpec.model_validate({"type": "snmp", "name": "s", "agents": agents}))
    bus = MemoryBus(partitions=2)
    topics = Topics("lab.")
    bus.ensure_topics(topics.all())
    ctx = StageContext(Settings(collectors=specs), bus, topics)
    consumer = bus.consumer([topics.samples], "test")
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(ctx, stop), daemon=True)
    thread.start()
    every = {s["name"] for s in lab.agents()["switches"]}
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 30
        while seen != every and time.monotonic() < deadline:
            for msg in consumer.poll(0.5):
                batch = decode_batch(msg.value)
                if any(not m.startswith("collector_") for m in batch.metric_names()):
                    seen.update(batch.devices)
    finally:
        stop.set()
        thread.join(20)
    assert not thread.is_alive()
    assert seen == every
