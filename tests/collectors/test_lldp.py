"""The collectors read LLDP: over gNMI in every dialect the lab speaks (OpenConfig, Arista EOS,
SONiC's APPL_DB) and over SNMP (LLDP-MIB), once (``collectors.neighbors``) and on their own
schedule inside the running collectors, into reports the topology is built from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.gnmi.collector import GnmiCollector, GnmiOptions
from collectors.neighbors import read_all
from collectors.snmp.collector import SnmpCollector, SnmpOptions
from lab.lldp import chassis_mac, port_alias
from lab.runtime import Lab
from pipeline.inventory import from_lab
from pipeline.topology.discover import discover, resolve
from pipeline.topology.neighbors import NeighborReport
from rocewatch.bench.lldp import periodic_profiles
from tests.collectors.conftest import Reports, Running, running_lab, wait_until
from tests.lab.conftest import MIXED

#: spine1 openconfig, spine2 SNMP, leaf1 arista, leaf2 SNMP, leaf3 sonic, leaf4 SNMP
SOURCES = {"spine1": "gnmi/openconfig", "leaf1": "gnmi/openconfig", "leaf3": "gnmi/sonic",
           "spine2": "snmp", "leaf2": "snmp", "leaf4": "snmp"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(MIXED, 20.0, tmp_path_factory.mktemp("lldp")) as running:
        yield running


def _far(report: NeighborReport) -> dict[str, tuple[str, str]]:
    return {p.name: (p.neighbors[0].system_name, p.neighbors[0].port_id)
            for p in report.ports if p.neighbors}


def test_every_dialect_reports_what_the_cables_say(lab: Lab) -> None:
    inventory, env = from_lab(lab.agents())
    read = read_all(inventory.targets, env)
    assert read.failed == {}
    by_device = {r.device: r for r in read.reports}
    assert {d: r.source for d, r in by_device.items()} == SOURCES
    topo = lab.topology
    w = lab.wiring
    for device, report in by_device.items():
        assert report.chassis_id == chassis_mac(w.device_index(device))
        assert report.system_name == device
        assert {p.name for p in report.ports} == {p.name for p in topo.ports(device)}
        assert all(p.oper_up is True and p.speed_bps == 400e9 for p in report.ports)
        for port, (system, _pid) in _far(report).items():
            peer = topo.peer(next(p for p in topo.ports(device) if p.name == port))
            want = peer.device if peer is not None else topo.entity_of(
                next(p for p in topo.ports(device) if p.name == port))
            assert system == want, (device, port)
    # SONiC says the alias it sends on each port; its neighbours see that alias
    leaf3 = {p.name: p.port_id for p in by_device["leaf3"].ports}
    assert leaf3["Ethernet3"] == port_alias("Ethernet3")
    assert _far(by_device["spine1"])["Ethernet3"] == ("leaf3", port_alias("Ethernet3"))
    # every far end resolves to the declared port, hosts included
    sightings = resolve(read.reports).sightings
    for link in topo.links:
        assert sightings[link.a].far == link.b and sightings[link.b].far == link.a
    assert discover(read.reports).topology.to_json() == topo.to_json()


def test_the_running_collectors_report_on_their_own_schedule(lab: Lab, tmp_path: Path) -> None:
    """SNMP targets are read every LLDP interval; gNMI targets stream their table ON_CHANGE
    (one report, their sync, while nothing changes), or are read every interval with a Get."""
    got, polled = Reports(), Reports()
    agents = str(lab.out_dir / "agents.json")
    # LLDP every 2 simulated seconds: 0.1 s of wall time at speed 20
    gnmi = GnmiCollector("lab", GnmiOptions(agents=agents, lldp_interval_s=2), emit=lambda b: None)
    snmp = SnmpCollector("lab", SnmpOptions(agents=agents, lldp_interval_s=2),
                         emit=lambda b: None)
    gets = GnmiCollector("get", GnmiOptions(agents=agents, lldp_interval_s=2,
                                            profile_dirs=periodic_profiles(tmp_path)),
                         emit=lambda b: None)
    for c in (gnmi, snmp):
        c.emit_neighbors = got.take
    gets.emit_neighbors = polled.take
    gnmi_devices = {d for d, s in SOURCES.items() if s.startswith("gnmi/")}
    with Running(gnmi), Running(snmp), Running(gets):
        def twice_each() -> bool:
            reports, again = got.all(), polled.all()
            return min(sum(r.device == d for r in reports) for d in SOURCES
                       if d not in gnmi_devices) >= 2 and min(
                sum(r.device == d for r in again) for d in gnmi_devices) >= 2 and (
                {r.device for r in reports} >= gnmi_devices)
        wait_until(twice_each, "two LLDP reports from every switch read periodically, "
                   "and every streamed switch's sync", timeout=60)
    reports = got.all()
    for device, source in SOURCES.items():
        mine = [r for r in reports if r.device == device] if device not in gnmi_devices else [
            r for r in polled.all() if r.device == device]
        times = [r.ts_ns for r in mine]
        assert times == sorted(times) and times[0] < times[-1]    # the device's own clock
        # a Get is a snapshot; an SNMP target whose polls watch its table's change time is
        # read as it changes, its reports live tables (once a poll has read that time)
        assert mine[-1].streamed if source == "snmp" else not any(r.streamed for r in mine)
    streamed = [r for r in reports if r.device in gnmi_devices]
    assert sorted(r.device for r in streamed) == sorted(gnmi_devices)   # one each: nothing moved
    assert all(r.streamed for r in streamed)
    health: dict[str, Any] = gnmi.health()["lldp"]
    assert (health["targets"], health["streamed"], health["syncs"], health["reports"]) == (
        3, 3, 3, 3) and health["failing"] == []
    assert snmp.health()["lldp"]["reports"] >= 6 and gets.health()["lldp"]["reports"] >= 6


def test_no_reader_runs_when_nothing_listens(lab: Lab) -> None:
    agents = str(lab.out_dir / "agents.json")
    gnmi = GnmiCollector("quiet", GnmiOptions(agents=agents, lldp_interval_s=1),
                         emit=lambda b: None)
    with Running(gnmi):
        wait_until(lambda: gnmi.health()["targets_up"] == 3, "the sessions", timeout=30)
    assert gnmi.health()["lldp"]["reports"] == 0


def test_an_unreachable_target_is_named_and_the_others_read(lab: Lab) -> None:
    inventory, env = from_lab(lab.agents())
    dead = inventory.targets[0].model_copy(update={"name": "gone", "address": "127.0.0.1:9"})
    read = read_all([*inventory.targets, dead], env, timeout_s=2.0)
    assert set(read.failed) == {"gone"}
    assert len(read.reports) == len(inventory.targets)


def _content(report: NeighborReport) -> dict[str, Any]:
    return report.model_dump(exclude={"ts_ns"})


def test_an_unchanged_reply_is_restamped_and_a_changed_one_decoded(lab: Lab,
                                                                   tmp_path: Path) -> None:
    """A reader decodes a reply only when what it says changed: the reports it restamps are what
    a fresh read decodes, and a port taken down shows in the next report."""
    got = Reports()
    agents = str(lab.out_dir / "agents.json")
    gnmi = GnmiCollector("restamp", GnmiOptions(agents=agents, lldp_interval_s=2,
                                                profile_dirs=periodic_profiles(tmp_path)),
                         emit=lambda b: None)
    gnmi.emit_neighbors = got.take
    devices = {d for d, s in SOURCES.items() if s.startswith("gnmi/")}
    inventory, env = from_lab(lab.agents())
    port = next(p.name for p in lab.topology.ports("spine1")
                if lab.topology.peer(p) is not None)
    with Running(gnmi):
        wait_until(lambda: gnmi.health()["lldp"]["reused"] >= 2 * len(devices),
                   "LLDP replies unchanged since the last read", timeout=60)
        fresh = {r.device: r for r in read_all(inventory.targets, env).reports}
        latest = {r.device: r for r in got.all()}
        for device in devices:
            assert _content(latest[device]) == _content(fresh[device]), device
        seen = len(got.all())
        lab.set_admin("spine1", port, False)
        try:
            def shows_down() -> bool:
                later = [r for r in got.all()[seen:] if r.device == "spine1"]
                return any(p.name == port and p.oper_up is False
                           for r in later for p in r.ports)
            wait_until(shows_down, f"a report of spine1 with {port} down", timeout=60)
        finally:
            lab.set_admin("spine1", port, True)
    spine1 = [r for r in got.all() if r.device == "spine1"]
    assert [r.ts_ns for r in spine1] == sorted(r.ts_ns for r in spine1)
    assert len({r.ts_ns for r in spine1}) == len(spine1)  # each restamped with its own read


def test_an_snmp_target_is_read_again_as_soon_as_its_lldp_table_changes(lab: Lab) -> None:
    """With the LLDP interval a day away, only the change time read with each poll's clock
    (``lldpStatsRemTablesLastChangeTime``) can have the collector read a table: it reads every
    SNMP switch once at its first poll, not again while nothing changes, and again as soon as a
    cable's port goes down (at both SNMP ends) and comes back."""
    got = Reports()
    polls: dict[str, int] = {}

    def count(batch: Any) -> None:
        for device in batch.devices:
            polls[device] = polls.get(device, 0) + 1

    snmp = SnmpCollector("watch", SnmpOptions(agents=str(lab.out_dir / "agents.json"),
                                              lldp_interval_s=86_400), emit=count)
    snmp.emit_neighbors = got.take
    devices = sorted(d for d, s in SOURCES.items() if s == "snmp")
    # a cable between two SNMP switches
    port = next(p.name for p in lab.topology.ports("spine2")
                if (far := lab.topology.peer(p)) is not None and far.device == "leaf2")
    far = lab.topology.peer(next(p for p in lab.topology.ports("spine2") if p.name == port))
    assert far is not None

    def shows(device: str, name: str, up: bool, after: int) -> bool:
        later = got.of(device)[after:]
        return any(p.name == name and p.oper_up is up and bool(p.neighbors) is up
                   for r in later for p in r.ports)

    with Running(snmp):
        wait_until(lambda: all(got.of(d) for d in devices), "a first read of every SNMP switch",
                   timeout=60)
        first = {d: len(got.of(d)) for d in devices}
        base = dict(polls)
        wait_until(lambda: all(polls.get(d, 0) >= base.get(d, 0) + 5 for d in devices),
                   "five more polls of each", timeout=60)
        assert {d: len(got.of(d)) for d in devices} == first      # nothing moved: no read
        lab.set_admin("spine2", port, False)
        try:
            wait_until(lambda: shows("spine2", port, False, first["spine2"])
                       and shows("leaf2", far.name, False, first["leaf2"]),
                       f"spine2 {port} and leaf2 {far.name} read down", timeout=60)
        finally:
            lab.set_admin("spine2", port, True)
        down = {d: len(got.of(d)) for d in devices}
        wait_until(lambda: shows("spine2", port, True, down["spine2"]),
                   f"spine2 {port} read up again", timeout=60)
        health = snmp.health()["lldp"]
    assert health["watched"] == len(devices)
    assert health["on_change"] >= len(devices) + 3 and health["errors"] == 0
