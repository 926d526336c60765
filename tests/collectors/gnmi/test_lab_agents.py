"""The collectors against the lab's simulated switches: every dialect, TLS, resets, restarts."""

from __future__ import annotations

import itertools
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from lab.runtime import Lab
from pipeline.model import FLAG_RESET
from pipeline.rates.rule import Status, intervals
from tests.collectors.conftest import Running, Sink, wait_until

SCENARIO = """
format: 1
name: collectors-{name}
seed: 3
duration_s: 900
sample_interval_s: 1
fabric:
  spines: 2
  leaves: 2
  hosts_per_leaf: 2
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {{gnmi: 1.0, snmp: 0.0}}
  profiles: [openconfig, arista, sonic]
routing: ecmp
traffic:
  - {{pattern: allreduce, hosts: all, load: 0.3, qps_per_flow: 2}}
"""
SPEED = 20.0
#: what each dialect can say (docs/telemetry-dialects.md), beyond the common interface counters
COMMON = {"if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts", "if_in_errors",
          "if_out_errors", "if_in_discards", "if_out_discards", "if_in_fcs_errors",
          "if_in_symbol_errors", "fec_corrected_blocks", "fec_uncorrectable_blocks",
          "if_carrier_transitions", "if_oper_status", "if_admin_status", "pfc_rx_frames",
          "pfc_tx_frames", "queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts",
          "queue_ecn_marked_pkts"}
BY_PROFILE = {
    "openconfig": COMMON | {"queue_watermark_bytes"},
    "arista": COMMON | {"queue_watermark_bytes", "queue_occupancy_bytes", "pfc_rx_pause_us"},
    "sonic": COMMON | {"queue_watermark_bytes", "queue_occupancy_bytes", "pfc_rx_pause_us",
                       "pfc_tx_pause_us", "if_speed"},
}


def scenario_file(tmp: Path, name: str) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name))
    return path


def start_lab(tmp: Path, name: str, speed: float = SPEED, **kwargs: Any) -> Any:
    return Lab(scenario_file(tmp, name), speed=speed, out_dir=tmp / name,
                           **kwargs).start()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    running = start_lab(tmp_path_factory.mktemp("lab"), "plain")
    yield running
    running.stop()


def collector(agents: Path, sink: Sink, **options: Any) -> Running:
    opts = GnmiOptions(agents=str(agents), flush_interval_s=0.05, backoff_initial_s=0.1,
                       backoff_max_s=0.5, connect_timeout_s=2, **options)
    return Running(GnmiCollector("lab", opts, emit=sink))


def switch_ports(lab: Any, device: str) -> set[str]:
    topo = lab.topology
    ends = [p for link in topo.links for p in link.ends()] + [h.port for h in topo.hosts]
    return {p.name for p in ends if p.device == device}


def judged(rows: list[Any], device: str, metric: str = "if_in_octets") -> dict[str, list[Status]]:
    """The rate rule's status of every interval of a device's counter, per port."""
    out: dict[str, list[Status]] = {}
    for port in sorted({r[2] for r in rows if r[1] == device and r[3] == metric}):
        mine = sorted({r[0]: r for r in rows if r[1] == device and r[3] == metric
                       and r[2] == port}.values())
        n = len(mine)
        got = intervals(np.zeros(n, np.int64), np.array([r[0] for r in mine], np.int64),
                        np.array([r[5] for r in mine]), np.array([r[6] for r in mine], np.uint8),
                        np.ones(n, bool))
        out[port] = [Status(x) for x in got.status]
    return out


def data_rows(rows: list[Any], device: str | None = None) -> list[Any]:
    return [r for r in rows if not r[3].startswith("collector_")
            and (device is None or r[1] == device)]


def test_every_dialect_maps_onto_the_catalog(lab: Any, sink: Sink) -> None:
    agents = lab.agents()
    profiles = {s["name"]: s["gnmi"]["profile"] for s in agents["switches"]}
    assert set(profiles.values()) == set(BY_PROFILE)
    with collector(lab.out_dir / "agents.json", sink) as running:
        rows = sink.wait_for(lambda rows: all(
            len({r[0] for r in data_rows(rows, dev)}) >= 3 for dev in profiles),
            what="three samples from every switch")
        health = running.health()["targets"]
    end_ns = lab.epoch_ns + int(lab.sim_time() * 1e9) + 10**9
    for device, profile in profiles.items():
        mine = data_rows(rows, device)
        assert {r[3] for r in mine} == BY_PROFILE[profile], (device, profile)
        # device time: the lab's simulated clock, not ours
        assert all(lab.epoch_ns <= r[0] <= end_ns for r in mine)
        assert {r[4] for r in mine if r[3] == "pfc_rx_frames"} == set(range(8))
        assert not any(r[6] & FLAG_RESET for r in mine)
        assert {r[2] for r in mine if r[3] == "if_in_octets"} == switch_ports(lab, device)
        assert health[device]["errors"] == {}, (device, health[device]["errors"])
        assert health[device]["up"] and health[device]["synced"]
        octets: dict[str, list[float]] = {}
        for r in sorted(mine, key=lambda r: r[0]):
            if r[3] == "if_in_octets":
                octets.setdefault(r[2], []).append(r[5])
        assert all(b >= a for vals in octets.values() for a, b in itertools.pairwise(vals))
        assert any(vals[-1] > vals[0] for vals in octets.values())  # traffic flows


def test_health_reports_expected_and_received(lab: Any, sink: Sink) -> None:
    with collector(lab.out_dir / "agents.json", sink):
        rows = sink.wait_for(lambda rows: sum(
            1 for r in rows if r[3] == "collector_received" and r[5] > 0) >= 8,
            what="health samples")
    received = [r for r in rows if r[3] == "collector_received" and r[5] > 0]
    for r in received:
        expected = next(e[5] for e in rows if e[3] == "collector_expected" and e[1] == r[1]
                        and e[0] == r[0])
        assert expected > 0
    assert all(lab.epoch_ns <= r[0] for r in received)


def test_reboot_and_admin_down_seen_through_the_stream(lab: Any, sink: Sink) -> None:
    switch = next(s["name"] for s in lab.agents()["switches"]
                  if s["gnmi"]["profile"] == "arista")
    with collector(lab.out_dir / "agents.json", sink):
        sink.wait_for(lambda rows: len({r[0] for r in data_rows(rows, switch)}) >= 2,
                      what="samples before the reset")
        lab.reset_counters(switch)
        rows = sink.wait_for(lambda rows: any(Status.RESET in v for v in judged(
            rows, switch).values()), what="the rate rule seeing the reboot as a reset")
        lab.set_admin(switch, "Ethernet1", False)
        rows = sink.wait_for(lambda rows: any(
            r[1] == switch and r[2] == "Ethernet1" and r[3] == "if_admin_status" and r[5] == 2
            for r in rows), what="admin-status DOWN on change")
        lab.set_admin(switch, "Ethernet1", True)
    # the collector stamps no resets of its own: the one rule judges the fall, once per series
    assert not any(r[6] & FLAG_RESET for r in data_rows(rows, switch))
    assert all(v.count(Status.RESET) <= 1 and Status.GAP not in v
               for v in judged(rows, switch).values())
    down = [r for r in rows if r[1] == switch and r[2] == "Ethernet1"
            and r[3] == "if_oper_status" and r[5] == 2]
    assert down, "oper-status follows admin-status down"


@pytest.mark.parametrize("mode", ["tls", "mtls"])
def test_tls_and_mutual_tls(tmp_path: Path, sink: Sink, mode: str) -> None:
    lab = start_lab(tmp_path, f"tls-{mode}", tls=mode)
    try:
        assert lab.agents()["switches"][0]["gnmi"]["tls"]["ca"]
        with collector(lab.out_dir / "agents.json", sink) as running:
            sink.wait_for(lambda rows: {r[1] for r in data_rows(rows)} >= {
                s["name"] for s in lab.agents()["switches"]}, what=f"data over {mode}")
            health = running.health()["targets"]
        assert all(t["errors"] == {} for t in health.values()), health
    finally:
        lab.stop()


def free_port_block(count: int) -> int:
    """A base port with ``count`` free TCP ports after it (the lab's fixed port layout)."""
    rng = random.Random()
    for _ in range(50):
        base = rng.randrange(20000, 60000 - count)
        sockets = []
        try:
            for port in range(base, base + count + 1):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise AssertionError("no free block of ports")


def test_reconnects_when_the_lab_restarts(tmp_path: Path, sink: Sink) -> None:
    base = free_port_block(8)
    # counter values only go backwards (a visible restart) when the first lab ran well past the
    # time the second has reached when the collector is back: the first runs 20 simulated seconds
    # at speed 5, the second at speed 1, so only a reconnect slower than 20 wall seconds could let
    # the second's counters pass the first's on a busy machine
    first = start_lab(tmp_path, "first", speed=5.0, base_port=base)
    agents = tmp_path / "agents.json"
    agents.write_text((first.out_dir / "agents.json").read_text())
    second = None
    try:
        with collector(agents, sink) as running:
            sink.wait_for(lambda rows: len({r[1] for r in data_rows(rows)}) == 4,
                          what="data from the first lab")
            assert first.wait_until(20.0, timeout=30)
            first.stop()
            wait_until(lambda: not any(t["connected"] for t in
                                       running.health()["targets"].values()),
                       "every session to notice the restart")
            sink.wait_for(lambda rows: any(r[3] == "collector_up" and r[5] == 0 for r in rows),
                          what="collector_up = 0 while the lab is down")
            marker = len(sink.rows())
            second = start_lab(tmp_path, "second", speed=1.0, base_port=base)
            # the interface counters of every switch: a switch's other paths may come first
            rows = sink.wait_for(lambda rows: {r[1] for r in data_rows(rows[marker:])
                                               if r[3] == "if_in_octets"} ==
                                 {s["name"] for s in second.agents()["switches"]},
                                 timeout=30, what="counters from the restarted lab")
            health = running.health()["targets"]
    finally:
        first.stop()
        if second is not None:
            second.stop()
    after = data_rows(rows[marker:])
    assert all(r[0] >= second.epoch_ns for r in after)
    device = next(r[1] for r in after if r[3] == "if_in_octets")
    assert any(Status.RESET in v for v in judged(rows, device).values()), \
        "counters restarted from zero: the rate rule reads a reset"
    assert all(t["connects"] >= 2 for t in health.values())
