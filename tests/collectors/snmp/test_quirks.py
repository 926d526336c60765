"""Odd SNMP devices against snmpsim serving real recordings (issues 11.3-11.5 and 15): a device
clock that is off, a device without hrSystemDate, a device without ifName, a device whose profile
matches nothing."""

from __future__ import annotations

import itertools
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from collectors.snmp.collector import SnmpCollector, SnmpOptions
from pipeline.model import FLAG_COUNTER32
from pipeline.rates.rule import RATED, intervals
from tests.collectors.conftest import Running, Sink, wait_until, write_targets
from tests.collectors.snmp_agents import SnmpSim

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _communities(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("leaf9", "linux-full-walk", "winxp-full-walk", "linksys-system"):
        monkeypatch.setenv(f"T_{name.upper().replace('-', '_')}", name)


def target(name: str, sim: SnmpSim, interval: float = 0.5) -> dict[str, Any]:
    return {"name": name, "address": sim.address, "protocol": "snmp", "profile": "snmp",
            "sample_interval_s": interval,
            "snmp": {"version": "2c", "community_env": f"T_{name.upper().replace('-', '_')}",
                     "timeout_s": 1.0, "retries": 1}}


def collector(tmp_path: Path, sink: Sink, targets: list[dict[str, Any]]) -> Running:
    path = write_targets(tmp_path / "targets.yaml", targets)
    return Running(SnmpCollector("quirks", SnmpOptions(targets=str(path),
                                                       bind_address="127.0.0.1"), emit=sink))


def data(rows: list[Any], device: str) -> list[Any]:
    return [r for r in rows if r[1] == device and not r[3].startswith("collector_")]


def test_a_device_clock_that_is_off_falls_back_to_the_collectors(
        tmp_path: Path, sink: Sink, snmpsim_bundled: SnmpSim) -> None:
    """linux-full-walk's hrSystemDate says 2010: stamped with it, every sample would be dropped by
    retention (issue 11.3); the collector stamps the polls itself and says why."""
    with collector(tmp_path, sink, [target("linux-full-walk", snmpsim_bundled)]) as running:
        rows = sink.wait_for(lambda rows: len({r[0] for r in data(rows, "linux-full-walk")}) >= 2,
                             what="two polls of linux-full-walk")
        health = running.health()["targets"]["linux-full-walk"]
    now = time.time_ns()
    mine = data(rows, "linux-full-walk")
    assert {r[2] for r in mine if r[3] == "if_in_octets"} == {"lo", "eth0"}
    assert all(abs(r[0] - now) < 60 * 10**9 for r in mine)  # the collector's clock, not 2010
    assert health["clock"] == "collector"
    assert health["clock_note"].startswith("device clock off by -")
    assert health["errors"].get("device_clock_off") == 1
    assert health["state"] == "up" and health["up"]


def test_a_device_without_hrsystemdate_is_stamped_at_each_polls_start(
        tmp_path: Path, sink: Sink, snmpsim_bundled: SnmpSim) -> None:
    """One clock rule for collector-stamped samples (issue 11.4): intervals are the poll
    interval, so rates are unbiased (snmpsim counts leaf9's Ethernet1 octets at 1.25 MB/s)."""
    interval = 1.0
    with collector(tmp_path, sink, [target("leaf9", snmpsim_bundled, interval)]) as running:
        rows = sink.wait_for(lambda rows: len({r[0] for r in data(rows, "leaf9")}) >= 8,
                             timeout=40, what="eight polls of leaf9")
        health = running.health()["targets"]["leaf9"]
    octets = sorted((r[0], r[5], r[6]) for r in data(rows, "leaf9")
                    if r[3] == "if_in_octets" and r[2] == "Ethernet1")
    times = [t for t, _, _ in octets]
    gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(times)]
    # a poll that overran its turn on a busy machine skips one: whole multiples of the interval
    turns = [g / interval for g in gaps]
    assert all(abs(t - round(t)) < 0.02 for t in turns), gaps
    assert statistics.median(gaps) == pytest.approx(interval, rel=0.02), gaps
    n = len(octets)
    judged = intervals(np.zeros(n, np.int64), np.array(times, np.int64),
                       np.array([v for _, v, _ in octets]), np.array([f for *_, f in octets],
                                                                      np.uint8),
                       np.ones(n, bool))
    rates = judged.rate[np.isin(judged.status, RATED)]
    assert len(rates) >= 5
    assert float(np.mean(rates)) == pytest.approx(1_250_000, rel=0.03)
    assert health["clock"] == "collector" and health["clock_note"] == "no hrSystemDate"


def test_a_device_without_ifname_names_its_ports_by_ifdescr(
        tmp_path: Path, sink: Sink, snmpsim_bundled: SnmpSim) -> None:
    """winxp-full-walk has ifTable and no ifXTable (issue 11.5): 0 samples and 168
    unknown_ifindex errors before; now its ports are named by ifDescr, its octets come from the
    Counter32 ifTable columns, and its health says so."""
    with collector(tmp_path, sink, [target("winxp-full-walk", snmpsim_bundled)]) as running:
        rows = sink.wait_for(lambda rows: len({r[0] for r in data(rows, "winxp-full-walk")}) >= 2,
                             what="two polls of winxp-full-walk")
        health = running.health()["targets"]["winxp-full-walk"]
    mine = data(rows, "winxp-full-walk")
    ports = {r[2] for r in mine}
    assert "MS TCP Loopback interface" in ports
    assert any(p.startswith("Intel(R) PRO/Wireless 2200BG") for p in ports)
    octets = [r for r in mine if r[3] == "if_in_octets"]
    assert octets and all(r[6] & FLAG_COUNTER32 for r in octets)
    assert {r[3] for r in mine} >= {"if_in_octets", "if_out_octets", "if_oper_status",
                                    "if_speed"}
    assert "unknown_ifindex" not in health["errors"]
    assert health["port_names"] == "ifDescr" and health["errors"].get("no_ifname") == 1
    assert health["clock"] == "collector"  # its hrSystemDate says 2013


def test_a_device_whose_profile_maps_nothing_is_not_up(
        tmp_path: Path, sink: Sink, snmpsim_bundled: SnmpSim) -> None:
    """linksys-system answers (the system group) but has no IF-MIB at all (issue 15): its health
    says "no mapped data", not up, and its health samples say down."""
    targets = [target("linksys-system", snmpsim_bundled), target("leaf9", snmpsim_bundled)]
    with collector(tmp_path, sink, targets) as running:
        wait_until(lambda: running.health()["targets"]["linksys-system"]["state"]
                   == "no_mapped_data", "the no-mapped-data state", timeout=20)
        rows = sink.wait_for(lambda rows: any(
            r[1] == "linksys-system" and r[3] == "collector_up" for r in rows),
            what="health samples of linksys-system")
        health = running.health()
    mine = health["targets"]["linksys-system"]
    assert not mine["up"] and mine["connected"] and mine["expected"] == 0
    assert health["targets_up"] <= 1
    assert not data(rows, "linksys-system")
    assert all(r[5] == 0 for r in rows if r[1] == "linksys-system" and r[3] == "collector_up")
