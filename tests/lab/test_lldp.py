"""LLDP served honestly: every port shows the neighbour at its cable's far end, over every dialect
and SNMP; the two topology faults change what LLDP says (and only that), in their window."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from pygnmi.client import gNMIclient
from pygnmi.spec.v080 import gnmi_pb2 as pb
from pygnmi.spec.v080 import gnmi_pb2_grpc as pb_grpc
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    bulk_walk_cmd,
)

from lab import counters as cf
from lab.lldp import LldpFabric, chassis_mac, port_alias
from lab.runtime import Lab
from lab.scenario.load import parse_scenario
from lab.sim.simulation import Simulation
from pipeline.errors import ConfigError
from pipeline.topology.model import Topology
from tests.lab.conftest import gnmi_target, make_scenario, scenario_dict, snmp_target

FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 2}


def _fabric(faults: list[dict[str, Any]], dialects: dict[str, str] | None = None
            ) -> tuple[Simulation, LldpFabric]:
    sc = make_scenario(fabric=FABRIC, faults=faults, traffic=[{"pattern": "none"}])
    sim = Simulation(sc)
    lldp = LldpFabric(sc, sim.wiring, sim.counters.layout, dialects or {})
    return sim, lldp


def _seen(sim: Simulation, lldp: LldpFabric, switch: str) -> dict[str, tuple[str, str]]:
    """port -> (system name, port id) each port of ``switch`` shows now."""
    w = sim.wiring
    out = {}
    for p, nb in lldp.neighbors(switch, sim.counters.vector).items():
        out[w.port_name[p]] = (nb.advert.system_name, nb.advert.port_id)
    return out


def _peer_view(topo: Topology, switch: str) -> dict[str, tuple[str, str]]:
    """What the topology says each port of ``switch`` should show (hosts: their name)."""
    out = {}
    for port in topo.ports(switch):
        peer = topo.peer(port)
        if peer is not None:
            out[port.name] = (peer.device, peer.name)
        else:
            host = topo.attachment(port)
            out[port.name] = (getattr(host, "name", ""), "")
    return out


def _strip_hosts(view: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {k: (n, "" if n.startswith("host") else p) for k, (n, p) in view.items()}


def test_every_port_shows_the_far_end_of_its_cable() -> None:
    sim, lldp = _fabric([])
    sim.run_until(0.2)
    topo = sim.wiring.topology
    for switch in topo.switches:
        assert _strip_hosts(_seen(sim, lldp, switch)) == _peer_view(topo, switch), switch
    # a host sends its NIC's MAC as its port id, a switch its interface name
    nb = lldp.neighbors("leaf1", sim.counters.vector)
    first = nb[sim.wiring.port_index("leaf1", "Ethernet1")].advert
    assert first.system_name == "host1" and first.port_id_type == "MAC_ADDRESS"
    assert first.station and first.chassis_id != first.port_id


def test_a_sonic_switch_sends_its_alias_as_a_local_port_id() -> None:
    sim, lldp = _fabric([], {"spine1": "sonic"})
    sim.run_until(0.2)
    seen = lldp.neighbors("leaf1", sim.counters.vector)
    up = seen[sim.wiring.port_index("leaf1", "Ethernet3")].advert   # leaf1's uplink to spine1
    assert (up.system_name, up.port_id, up.port_id_type) == ("spine1", port_alias("Ethernet1"),
                                                             "LOCAL")
    assert up.chassis_id == chassis_mac(sim.wiring.device_index("spine1"))


def test_a_miswired_cable_swaps_two_far_ends_in_its_window_only() -> None:
    sim, lldp = _fabric([{"kind": "miswired_cable", "target": "leaf1~spine1", "at_s": 1.0,
                          "until_s": 2.0, "params": {"swap_with": "leaf2~spine2"}}])
    topo = sim.wiring.topology
    sim.run_until(0.5)
    before = {s: _seen(sim, lldp, s) for s in topo.switches}
    sim.run_until(1.5)
    l1s1, l2s2 = topo.link_by_id["leaf1~spine1"], topo.link_by_id["leaf2~spine2"]
    assert _seen(sim, lldp, "leaf1")[l1s1.a.name] == (l2s2.b.device, l2s2.b.name)
    assert _seen(sim, lldp, "spine2")[l2s2.b.name] == (l1s1.a.device, l1s1.a.name)
    assert _seen(sim, lldp, "leaf2")[l2s2.a.name] == (l1s1.b.device, l1s1.b.name)
    assert _seen(sim, lldp, "spine1")[l1s1.b.name] == (l2s2.a.device, l2s2.a.name)
    # the other ports, and the simulation's own wiring, are untouched
    assert _seen(sim, lldp, "leaf1")["Ethernet4"] == before["leaf1"]["Ethernet4"]
    assert sim.wiring.peer[sim.wiring.port_index("leaf1", l1s1.a.name)] == \
        sim.wiring.port_index("spine1", l1s1.b.name)
    sim.run_until(2.5)
    assert {s: _seen(sim, lldp, s) for s in topo.switches} == before
    # the neighbour that came back is young again
    nb = lldp.neighbors("leaf1", sim.counters.vector)[sim.wiring.port_index("leaf1", l1s1.a.name)]
    assert nb.since_s == pytest.approx(2.0)


@pytest.mark.parametrize(("side", "gone"), [("a", {"leaf1"}), ("b", {"spine1"}),
                                            ("both", {"leaf1", "spine1"})])
def test_a_dropped_neighbour_leaves_only_its_side_blind(side: str, gone: set[str]) -> None:
    sim, lldp = _fabric([{"kind": "lldp_neighbor_drop", "target": "leaf1~spine1", "at_s": 1.0,
                          "params": {"side": side}}])
    link = sim.wiring.topology.link_by_id["leaf1~spine1"]
    sim.run_until(1.5)
    for end in (link.a, link.b):
        assert (end.name in _seen(sim, lldp, end.device)) == (end.device not in gone)
    # the link itself still carries its state: up
    a = sim.wiring.port_index(link.a.device, link.a.name)
    assert sim.counters.vector[sim.counters.layout.port_index(a, cf.P_OPER)] == cf.OPER_UP


def test_a_link_that_goes_down_shows_no_neighbour_at_either_end() -> None:
    sim, lldp = _fabric([{"kind": "link_down", "target": "leaf2~spine1", "at_s": 1.0}])
    link = sim.wiring.topology.link_by_id["leaf2~spine1"]
    sim.run_until(0.5)
    assert link.a.name in _seen(sim, lldp, link.a.device)
    sim.run_until(1.5)
    assert link.a.name not in _seen(sim, lldp, link.a.device)
    assert link.b.name not in _seen(sim, lldp, link.b.device)


@pytest.mark.parametrize(("params", "target", "where"), [
    ({}, "leaf1~spine1", "faults[0].params"),
    ({"swap_with": "leaf1~spine1"}, "leaf1~spine1", "faults[0].params.swap_with"),
    ({"swap_with": "host1"}, "leaf1~spine1", "faults[0].params.swap_with"),
    ({"swap_with": "leaf2~spine2"}, "host1", "faults[0].target"),
])
def test_bad_miswires_name_their_key_path(params: dict[str, Any], target: str,
                                          where: str) -> None:
    doc = scenario_dict(faults=[{"kind": "miswired_cable", "target": target, "at_s": 0,
                                 "params": params}])
    with pytest.raises(ConfigError) as info:
        parse_scenario(doc)
    assert str(info.value).startswith(where), info.value


def test_a_drop_names_a_side() -> None:
    doc = scenario_dict(faults=[{"kind": "lldp_neighbor_drop", "target": "leaf1~spine1",
                                 "at_s": 0, "params": {"side": "left"}}])
    with pytest.raises(ConfigError, match=r"faults\[0\]\.params\.side"):
        parse_scenario(doc)
    ok = parse_scenario(scenario_dict(faults=[{"kind": "lldp_neighbor_drop",
                                               "target": "leaf1~spine1", "at_s": 0}]))
    assert ok.faults[0].params == {"side": "both"}


# -- the agents --------------------------------------------------------------------------------


def _client(lab: Lab, switch: str) -> gNMIclient:
    host, port = gnmi_target(lab, switch)
    return gNMIclient(target=(host, port), username="admin", password="admin", insecure=True,
                      gnmi_timeout=10)


def _want(lab: Lab, switch: str) -> dict[str, str]:
    """port -> the name of what the topology puts at its far end."""
    topo = lab.topology
    out = {}
    for port in topo.ports(switch):
        peer = topo.peer(port)
        out[port.name] = peer.device if peer is not None else topo.entity_of(port)
    return out


@pytest.mark.parametrize("switch", ["spine1", "leaf1"])   # openconfig, arista
def test_openconfig_lldp_tree_names_every_neighbour(mixed_lab: Lab, switch: str) -> None:
    with _client(mixed_lab, switch) as gc:
        tree = gc.get(path=["/lldp"], encoding="json_ietf")
        leaf = gc.get(path=["/lldp/interfaces/interface[name=*]/neighbors/neighbor/state/"
                            "port-id"], encoding="proto")
    root = tree["notification"][0]["update"][0]["val"]
    state = root["openconfig-lldp:state"]
    assert state["system-name"] == switch and state["chassis-id-type"] == "MAC_ADDRESS"
    seen = {}
    for intf in root["openconfig-lldp:interfaces"]["interface"]:
        (nb,) = intf["neighbors"]["neighbor"]
        st = nb["state"]
        assert st["id"] == nb["id"] and isinstance(st["age"], str) and st["ttl"] == 120
        seen[intf["name"]] = st["system-name"]
    assert seen == _want(mixed_lab, switch)
    ports = [u["val"] for n in leaf["notification"] for u in n["update"]]
    assert len(ports) == len(seen)


def test_sonic_appl_db_lldp_tables(mixed_lab: Lab) -> None:
    with _client(mixed_lab, "leaf3") as gc:
        entries = gc.get(path=["LLDP_ENTRY_TABLE/*"], target="APPL_DB", encoding="json_ietf")
        local = gc.get(path=["LLDP_LOC_CHASSIS"], target="APPL_DB", encoding="json_ietf")
        ports = gc.get(path=["PORT_TABLE/Ethernet*"], target="APPL_DB", encoding="json_ietf")
    table = entries["notification"][0]["update"][0]["val"]
    assert {p: e["lldp_rem_sys_name"] for p, e in table.items()} == _want(mixed_lab, "leaf3")
    assert all(e["lldp_rem_chassis_id_subtype"] == "4" for e in table.values())
    own = local["notification"][0]["update"][0]["val"]
    assert own["lldp_loc_sys_name"] == "leaf3"
    assert own["lldp_loc_chassis_id"] == chassis_mac(mixed_lab.wiring.device_index("leaf3"))
    # the alias a SONiC switch advertises is the one its PORT_TABLE names
    aliases = {p: f["alias"] for p, f in ports["notification"][0]["update"][0]["val"].items()}
    assert aliases["Ethernet3"] == port_alias("Ethernet3")


async def _walk(host: str, port: int, root: str) -> list[tuple[tuple[int, ...], Any]]:
    engine = SnmpEngine()
    rows: list[tuple[tuple[int, ...], Any]] = []
    target = await UdpTransportTarget.create((host, port), timeout=2, retries=2)
    async for err, status, _i, binds in bulk_walk_cmd(
            engine, CommunityData("rocewatch", mpModel=1), target, ContextData(), 0, 25,
            ObjectType(ObjectIdentity(root)), lookupMib=False, lexicographicMode=False):
        assert not err and not status, (err, status)
        rows.extend((tuple(name), val) for name, val in binds)
    engine.close_dispatcher()
    return rows


def test_lldp_mib_rem_and_loc_port_tables(mixed_lab: Lab) -> None:
    host, port = snmp_target(mixed_lab, "spine2")
    rem = asyncio.run(_walk(host, port, "1.0.8802.1.1.2.1.4.1.1"))
    loc = asyncio.run(_walk(host, port, "1.0.8802.1.1.2.1.3.7.1"))
    base = (1, 0, 8802, 1, 1, 2, 1, 4, 1, 1)
    names = {oid[len(base) + 2]: str(v) for oid, v in rem if oid[len(base)] == 9}
    marks = {oid[len(base) + 1] for oid, _v in rem}
    assert all(oid[len(base) + 3] == 1 and len(oid) == len(base) + 4 for oid, _v in rem)
    # lldpRemLocalPortNum is the ifIndex (Ethernet<k>), lldpLocPortTable says what it sends
    assert {f"Ethernet{k}": n for k, n in names.items()} == _want(mixed_lab, "spine2")
    assert all(m >= 0 for m in marks)
    lbase = (1, 0, 8802, 1, 1, 2, 1, 3, 7, 1)
    ids = {oid[len(lbase) + 1]: str(v) for oid, v in loc if oid[len(lbase)] == 3}
    assert ids == {k: f"Ethernet{k}" for k in range(1, 5)}


@pytest.fixture
def drop_lab(tmp_path: Any) -> Iterator[Lab]:
    doc = scenario_dict(name="lldp-drop", duration_s=120,
                        fabric={"spines": 2, "leaves": 2, "hosts_per_leaf": 1},
                        traffic=[{"pattern": "none"}],
                        faults=[{"kind": "lldp_neighbor_drop", "target": "leaf1~spine1",
                                 "at_s": 3, "params": {"side": "a"}}])
    lab = Lab(parse_scenario(doc), speed=10.0, out_dir=tmp_path)
    lab.start()
    try:
        yield lab
    finally:
        lab.stop()


def test_on_change_subscription_deletes_a_neighbour_that_went(drop_lab: Lab) -> None:
    host, port = gnmi_target(drop_lab, "leaf1")
    port_name = drop_lab.topology.link_by_id["leaf1~spine1"].a.name
    path = pb.Path(elem=[pb.PathElem(name="lldp"), pb.PathElem(name="interfaces"),
                         pb.PathElem(name="interface", key={"name": port_name}),
                         pb.PathElem(name="neighbors")])
    request = pb.SubscribeRequest(subscribe=pb.SubscriptionList(
        mode=pb.SubscriptionList.STREAM, encoding=pb.JSON_IETF,
        subscription=[pb.Subscription(path=path, mode=pb.ON_CHANGE)]))
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        stub = pb_grpc.gNMIStub(channel)
        stream = stub.Subscribe(iter([request]), metadata=[("username", "admin"),
                                                           ("password", "admin")], timeout=60)
        initial: list[str] = []
        deleted: list[str] = []
        for resp in stream:
            if resp.sync_response:
                assert initial, "the neighbour was there at the start"
                continue
            note = resp.update
            initial += [json.loads(u.val.json_ietf_val) for u in note.update
                        if u.path.elem[-1].name == "system-name"]
            deleted += ["/".join(e.name for e in d.elem) for d in note.delete]
            if deleted:
                stream.cancel()
                break
    assert initial[0] == "spine1"
    assert any(d.endswith("state/system-name") for d in deleted)
    assert drop_lab.sim_time() >= 3.0


def test_host_ports_resolve_to_the_topology(mixed_lab: Lab) -> None:
    # every host port's neighbour is the host the topology puts there
    with _client(mixed_lab, "leaf1") as gc:
        names = gc.get(path=["/lldp/interfaces/interface[name=*]/neighbors/neighbor/state/"
                             "system-name"], encoding="proto")
    got = {u["path"].split("name=")[1].split("]")[0]: u["val"]
           for n in names["notification"] for u in n["update"]}
    hosts = mixed_lab.topology.host_ports("leaf1")
    assert hosts and all(got[h.port.name] == h.name for h in hosts)
