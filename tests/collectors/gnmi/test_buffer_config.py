"""The buffer configuration collector against the lab's switches: every dialect, a fault's span."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.gnmi.buffer_config import BufferConfigOptions, GnmiBufferConfig
from lab.runtime import Lab
from tests.collectors.conftest import Running, Sink

SCENARIO = """
format: 1
name: buffer-config
seed: 3
duration_s: 900
sample_interval_s: 1
fabric:
  spines: 2
  leaves: 3
  hosts_per_leaf: 2
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {gnmi: 0.8, snmp: 0.2}
  profiles: [openconfig, arista, sonic]
routing: ecmp
traffic:
  - {pattern: allreduce, hosts: all, load: 0.3, qps_per_flow: 2}
faults:
  - {kind: buffer_misconfig, target: leaf1, at_s: 20, until_s: 40, params: {xoff_fraction: 0.3}}
"""
KB = 1000.0


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("buffer-config")
    (tmp / "s.yaml").write_text(SCENARIO)
    running = Lab(tmp / "s.yaml", speed=5.0, out_dir=tmp / "lab").start()
    yield running
    running.stop()


def readings(rows: list[Any], device: str, metric: str) -> list[tuple[float, float]]:
    return sorted({(r[0], r[5]) for r in rows if r[1] == device and r[3] == metric})


def test_every_gnmi_dialect_serves_its_thresholds_and_a_fault_lowers_them(lab: Any) -> None:
    agents = lab.agents()
    gnmi = {s["name"]: s["gnmi"]["profile"] for s in agents["switches"] if s.get("gnmi")}
    snmp = [s["name"] for s in agents["switches"] if not s.get("gnmi")]
    assert {"openconfig", "arista", "sonic"} <= set(gnmi.values()) and snmp
    sink = Sink()
    opts = BufferConfigOptions(agents=str(Path(lab.out_dir) / "agents.json"))
    with Running(GnmiBufferConfig("lab", opts, emit=sink)) as running:
        # leaf1's thresholds before, during and after its fault's window (simulated 20-40 s)
        after = lab.epoch_ns + 41 * 10**9
        rows = sink.wait_for(lambda rows: any(r[1] == "leaf1" and r[0] > after for r in rows),
                             timeout=60.0, what="leaf1's configuration after the fault")
        health = running.health()["targets"]
    assert set(health) == set(gnmi)  # SNMP switches have no buffer model to read
    for device in gnmi:
        assert health[device]["reads"] > 0 and health[device]["errors"] == 0, health[device]
        mine = [r for r in rows if r[1] == device]
        assert {r[2] for r in mine} == {""}  # device-level rows
        assert {(r[3], r[4]) for r in mine} == {
            (m, 3) for m in ("pfc_xoff_bytes", "pfc_xon_bytes", "pfc_headroom_bytes",
                             "ecn_kmin_bytes", "ecn_kmax_bytes")}, device
        kmin = readings(rows, device, "ecn_kmin_bytes")
        assert {v for _, v in kmin} == {50 * KB}
        # device time: the lab's simulated clock
        assert all(lab.epoch_ns <= r[0] for r in mine)
    xoff = readings(rows, "leaf1", "pfc_xoff_bytes")
    during = {v for t, v in xoff if 20.5e9 < t - lab.epoch_ns < 39.5e9}
    outside = {v for t, v in xoff if not 19.5e9 < t - lab.epoch_ns < 40.5e9}
    assert during == {0.3 * 400 * KB} and outside == {400 * KB}
    headroom = readings(rows, "leaf1", "pfc_headroom_bytes")
    assert {v for _, v in headroom} == {200 * KB}
    # once an interval of device time: the fault's start is seen within about one interval
    first_low = min(t for t, v in xoff if v < 400 * KB) - lab.epoch_ns
    assert 20e9 <= first_low <= 21.5e9
