"""The SNMP LLDP reader against snmpsim serving a real device's recording (LibreNMS's Dell OS10
switch, tests/collectors/data/README.md): a real agent's LLDP-MIB, with what the lab's does not
do: local port numbers that are not ifIndexes, no local chassis id, "Not Advertised" TLVs."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator

import pytest

from collectors.snmp.client import V2cChannel
from collectors.snmp.lldp import read_neighbors
from pipeline.inventory import Secrets, Target
from pipeline.topology.discover import Hints, discover, resolve
from pipeline.topology.model import Port
from pipeline.topology.neighbors import NeighborReport
from tests.collectors.snmp_agents import DATA, SNMPSIM, SnmpSim

RECORDING = "dell-os10-lldp"


@pytest.fixture(scope="module")
def dell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SnmpSim]:
    if not SNMPSIM.exists():
        pytest.skip("snmpsim is not installed in .venv")
    data = tmp_path_factory.mktemp("dell")
    for name in ("leaf9", RECORDING):
        shutil.copy(DATA / f"{name}.snmprec", data / f"{name}.snmprec")
    sim = SnmpSim(data, tmp_path_factory.mktemp("dell-cache")).start()
    yield sim
    sim.stop()


def _read(sim: SnmpSim, max_repetitions: int = 10) -> NeighborReport:
    target = Target(name="os10", address=sim.address, protocol="snmp", profile="snmp",
                    snmp={"version": "2c", "community_env": "X"})

    async def run() -> NeighborReport:
        channel = V2cChannel()
        await channel.open()
        try:
            client = channel.target(target, Secrets(community=RECORDING))
            return await read_neighbors(client, "os10", 1_700_000_000_000_000_000,
                                        max_repetitions)
        finally:
            channel.close()

    return asyncio.run(run())


def test_a_real_lldp_mib_reads_into_a_report(dell: SnmpSim) -> None:
    report = _read(dell)
    assert report.source == "snmp" and report.chassis_id == "" and report.system_name == ""
    # lldpLocPortNum 612 is ifIndex 37: the port is named by lldpLocPortId, not by number
    assert len(report.ports) == 31
    seen = {p.name: p for p in report.ports if p.neighbors}
    assert sorted(seen) == ["ethernet1/1/25", "ethernet1/1/26", "ethernet1/1/29",
                            "ethernet1/1/30", "mgmt1/1/1"]
    p25 = seen["ethernet1/1/25"]
    assert (p25.oper_up, p25.speed_bps, p25.port_id) == (True, 100e9, "ethernet1/1/25")
    (n25,) = p25.neighbors
    assert (n25.chassis_id, n25.chassis_id_type) == ("4c:d9:8f:fb:1e:fe", "MAC_ADDRESS")
    assert (n25.port_id, n25.port_id_type, n25.system_name) == (
        "ethernet1/1/25", "INTERFACE_NAME", "1007-lan-2")
    assert n25.system_description == "Dell EMC Networking OS10 Enterprise."
    (junos,) = seen["ethernet1/1/29"].neighbors
    assert (junos.port_id, junos.port_id_type, junos.port_description) == ("517", "LOCAL", "ae3")
    assert seen["ethernet1/1/29"].speed_bps == 10e9
    (hidden,) = seen["ethernet1/1/30"].neighbors
    assert hidden.system_name == "" and hidden.port_description == ""      # Not Advertised
    assert hidden.port_id == "TenGigabitEthernet 1/43"
    down = [p for p in report.ports if p.name == "ethernet1/1/1"]
    assert down[0].oper_up is False and down[0].neighbors == ()


def test_small_bulk_answers_read_the_same(dell: SnmpSim) -> None:
    assert _read(dell, max_repetitions=2).ports == _read(dell, max_repetitions=25).ports


def test_its_neighbours_resolve_and_a_vlt_pair_is_two_parallel_links(dell: SnmpSim) -> None:
    report = _read(dell)
    sightings = resolve([report]).sightings
    assert sightings[Port("os10", "ethernet1/1/26")].far == Port("1007-lan-2", "ethernet1/1/26")
    # a neighbour that does not say its name is known by its chassis id
    assert sightings[Port("os10", "ethernet1/1/30")].far == Port("f4:8e:38:55:de:f6",
                                                                 "TenGigabitEthernet 1/43")
    roles = {"os10": "spine", "1007-lan-2": "leaf", "core-1": "agg"}
    topo = discover([report], Hints(roles=roles)).topology
    assert [ln.id for ln in topo.links] == ["1007-lan-2~os10", "1007-lan-2~os10#2",
                                            "core-1~os10"]
    assert topo.link_by_id["1007-lan-2~os10#2"].a == Port("1007-lan-2", "ethernet1/1/26")
    assert topo.link_by_id["core-1~os10"].gbps == 10.0
