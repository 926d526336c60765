"""The topology from LLDP (pipeline.topology.discover) and where it disagrees with the declared one
(pipeline.topology.drift), on reports made from a known fabric: what each port would show."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pipeline.topology.discover import Hints, discover, resolve
from pipeline.topology.drift import EXTRA, MISSING, MISWIRED, ONE_SIDED, compare
from pipeline.topology.model import FabricShape, Port, Topology, spine_leaf
from pipeline.topology.neighbors import (
    LocalPort,
    NeighborReport,
    RemoteEnd,
    advertised,
    normalize_id,
    normalize_mac,
)

T0 = 1_700_000_000_000_000_000


def _mac(i: int) -> str:
    return f"02:00:00:00:{i >> 8 & 0xFF:02x}:{i & 0xFF:02x}"


def reports_of(topo: Topology, sonic: Iterable[str] = (), rename: dict[str, str] | None = None,
               faces: dict[Port, Port | None] | None = None, down: Iterable[Port] = (),
               skip: Iterable[str] = (), ts: int = T0) -> list[NeighborReport]:
    """What every switch of ``topo`` reports: SONiC switches send an alias (``etp<k>``) as a
    local port id, hosts send a MAC; ``faces`` overrides who a port sees (None: nobody),
    ``down`` ports are down, ``rename`` gives devices other names, ``skip`` devices report
    nothing."""
    sonic, down, skip = set(sonic), set(down), set(skip)
    rename = rename or {}
    chassis = {d: _mac(i) for i, d in enumerate([*topo.switches, *(h.name for h in topo.hosts)])}

    def sent(port: Port) -> tuple[str, str]:
        if port.device in sonic:
            return "etp" + port.name.removeprefix("Ethernet"), "LOCAL"
        return port.name, "INTERFACE_NAME"

    out = []
    for sw in topo.switches:
        if sw in skip:
            continue
        ports = []
        for port in topo.ports(sw):
            far = topo.peer(port)
            if faces and port in faces:
                far = faces[port]
            remote = None
            if far is not None and far.device in chassis and far.device in topo.switches:
                pid, kind = sent(far)
                remote = RemoteEnd(chassis_id=chassis[far.device], chassis_id_type="MAC_ADDRESS",
                                   port_id=pid, port_id_type=kind,
                                   system_name=rename.get(far.device, far.device))
            host = topo.attachment(port)
            if far is None and not (faces and port in faces) and host is not None:
                name = getattr(host, "name", "")
                remote = RemoteEnd(chassis_id=chassis[name], chassis_id_type="MAC_ADDRESS",
                                   port_id=_mac(999), port_id_type="MAC_ADDRESS",
                                   port_description="eth0", system_name=name)
            if port in down:
                remote = None
            gbps = (topo.attachment(port).gbps  # type: ignore[union-attr]
                    if topo.attachment(port) is not None else 0.0)
            ports.append(LocalPort(name=port.name, port_id=sent(port)[0],
                                   oper_up=port not in down, speed_bps=gbps * 1e9,
                                   neighbors=(remote,) if remote else ()))
        out.append(NeighborReport(device=rename.get(sw, sw), ts_ns=ts, chassis_id=chassis[sw],
                                  system_name=rename.get(sw, sw), ports=tuple(ports)))
    return out


@pytest.mark.parametrize("shape", [
    FabricShape(2, 4, 2),
    FabricShape(4, 8, 4, uplinks_per_pair=2),
    FabricShape(2, 2, 2, uplinks_per_pair=2, zones=3, aggs=2, agg_uplinks_per_spine=2,
                agg_gbps=800),
], ids=["2-tier", "parallel", "3-tier"])
def test_discovery_reproduces_the_fabric_exactly(shape: FabricShape) -> None:
    topo = shape.build()
    found = discover(reports_of(topo, sonic=topo.switches[::3]))
    assert found.topology.to_json() == topo.to_json()
    assert found.topology.links == topo.links and found.topology.hosts == topo.hosts
    assert found.topology.shape == (shape if shape.aggs else found.topology.shape)
    assert (found.one_sided, found.conflicts, found.unplaced) == ((), (), ())
    assert compare(topo, resolve(reports_of(topo))) == []


def test_names_without_roles_take_them_and_zones_from_labels() -> None:
    topo = spine_leaf(2, 2, 1)
    names = {"spine1": "core-a", "spine2": "core-b", "leaf1": "tor-1", "leaf2": "tor-2"}
    reports = reports_of(topo, rename=names)
    bare = discover(reports)
    assert bare.topology.links == () and set(bare.unplaced) >= {"core-a", "tor-1"}
    hints = Hints(roles={"core-a": "spine", "core-b": "spine", "tor-1": "leaf", "tor-2": "leaf"},
                  zones={"tor-1": 2, "tor-2": 2, "core-a": 2, "core-b": 2})
    found = discover(reports, hints).topology
    assert found.spines == ("core-a", "core-b") and found.leaves == ("tor-1", "tor-2")
    assert {ln.id for ln in found.links} == {"core-a~tor-1", "core-a~tor-2", "core-b~tor-1",
                                             "core-b~tor-2"}
    assert found.zone("tor-1") == 2 and Topology.from_json(found.to_json()).zone("core-b") == 2
    assert [h.name for h in found.hosts] == ["host1", "host2"]


def test_a_domain_in_the_system_name_still_resolves() -> None:
    topo = spine_leaf(1, 2, 0)
    reports = reports_of(topo)
    # chassis ids unknown (another system), names with a domain: matched by the short name
    fixed = [r.model_copy(update={"chassis_id": ""}) for r in reports]
    fqdn = [r.model_copy(update={"ports": tuple(
        p.model_copy(update={"neighbors": tuple(n.model_copy(update={
            "chassis_id": "x", "system_name": n.system_name + ".pod1.example.net"})
            for n in p.neighbors)}) for p in r.ports)}) for r in fixed]
    assert discover(fqdn).topology.links == topo.links


def test_a_link_only_one_end_shows_is_kept_and_said() -> None:
    topo = spine_leaf(2, 2, 0)
    link = topo.link_by_id["leaf1~spine1"]
    found = discover(reports_of(topo, faces={link.b: None}))
    assert found.topology.links == topo.links
    assert found.one_sided == ("leaf1~spine1",)


def test_a_sighting_the_far_end_contradicts_is_left_out() -> None:
    topo = spine_leaf(2, 2, 0)
    l11, l22 = topo.link_by_id["leaf1~spine1"], topo.link_by_id["leaf2~spine2"]
    # leaf1's port claims spine2's port, whose own report says it sees leaf2
    found = discover(reports_of(topo, faces={l11.a: l22.b}))
    assert found.conflicts == (f"{l11.a} sees {l22.b}, which sees {l22.a}",
                               f"{l11.b} sees {l11.a}, which sees {l22.b}")
    ids = {ln.id for ln in found.topology.links}
    assert "leaf2~spine2" in ids and "leaf1~spine1" not in ids and "leaf1~spine2#2" not in ids


def test_a_swapped_pair_of_cables_is_one_miswire_named_by_both_links() -> None:
    topo = spine_leaf(2, 2, 1)
    l11, l22 = topo.link_by_id["leaf1~spine1"], topo.link_by_id["leaf2~spine2"]
    faces = {l11.a: l22.b, l22.b: l11.a, l22.a: l11.b, l11.b: l22.a}
    (m,) = compare(topo, resolve(reports_of(topo, faces=faces)))
    assert (m.kind, m.entity) == (MISWIRED, "leaf1~spine1,leaf2~spine2")
    assert set(m.ports) == {str(p) for p in (l11.a, l11.b, l22.a, l22.b)}
    assert f"{l11.a} -> {l22.b}" in m.seen


def test_a_cable_moved_to_a_spare_port_is_a_miswire_of_its_link() -> None:
    topo = spine_leaf(2, 2, 0)
    link = topo.link_by_id["leaf1~spine1"]
    spare = Port("spine1", "Ethernet9")
    mismatches = compare(topo, resolve(reports_of(topo, faces={link.a: spare})))
    assert [(m.kind, m.entity) for m in mismatches] == [(MISWIRED, "leaf1~spine1")]


def test_one_blind_end_is_one_sided_and_two_are_missing() -> None:
    topo = spine_leaf(2, 2, 0)
    link = topo.link_by_id["leaf2~spine1"]
    one = compare(topo, resolve(reports_of(topo, faces={link.a: None})))
    assert [(m.kind, m.entity, m.seen) for m in one] == [
        (ONE_SIDED, "leaf2~spine1", (f"{link.a} -> nothing",))]
    both = compare(topo, resolve(reports_of(topo, faces={link.a: None, link.b: None})))
    assert [(m.kind, m.entity) for m in both] == [(MISSING, "leaf2~spine1")]


def test_a_link_that_is_down_is_not_a_topology_question() -> None:
    topo = spine_leaf(2, 2, 0)
    link = topo.link_by_id["leaf2~spine1"]
    assert compare(topo, resolve(reports_of(topo, down=[link.a, link.b]))) == []
    # an end that does not report is no evidence either way
    assert compare(topo, resolve(reports_of(topo, skip=["spine1"]))) == []


def test_a_local_port_id_waits_for_its_own_devices_report() -> None:
    """A SONiC spine sends its alias (subtype local) as its port id: before the spine itself has
    reported, its leaves' sightings name no known port, which is not a miswire (the CI's false
    ``topology_mismatch`` on every SONiC link, a platform starting under load); once it has,
    its aliases place them, and a real miswire to it is seen. A far end outside the declared
    fabric that sends a local id is still judged."""
    topo = spine_leaf(2, 2, 0)
    sonic = ["spine2"]
    assert compare(topo, resolve(reports_of(topo, sonic=sonic, skip=sonic))) == []
    assert compare(topo, resolve(reports_of(topo, sonic=sonic))) == []
    link = topo.link_by_id["leaf1~spine2"]
    swapped = {link.a: Port("spine2", "Ethernet9")}
    assert compare(topo, resolve(reports_of(topo, sonic=sonic, faces=swapped, skip=sonic))) == []
    assert [(m.kind, m.entity) for m in compare(topo, resolve(reports_of(
        topo, sonic=sonic, faces=swapped)))] == [(MISWIRED, "leaf1~spine2")]
    stranger = [r.model_copy(update={"ports": tuple(
        p.model_copy(update={"neighbors": (RemoteEnd(
            chassis_id=_mac(77), chassis_id_type="MAC_ADDRESS", port_id="port-3",
            port_id_type="LOCAL", system_name="unknown-box"),)})
        if p.name == link.a.name else p for p in r.ports)})
        if r.device == "leaf1" else r for r in reports_of(topo, sonic=sonic, skip=sonic)]
    assert [(m.kind, m.entity) for m in compare(topo, resolve(stranger))] == [
        (MISWIRED, "leaf1~spine2")]


def test_a_cable_the_declared_fabric_lacks_is_extra() -> None:
    declared = spine_leaf(2, 2, 0)
    reports = reports_of(declared)
    chassis = {r.device: r.chassis_id for r in reports}

    def plug(report: NeighborReport, port: str, far: Port) -> NeighborReport:
        seen = RemoteEnd(chassis_id=chassis[far.device], chassis_id_type="MAC_ADDRESS",
                         port_id=far.name, port_id_type="INTERFACE_NAME",
                         system_name=far.device)
        return report.model_copy(update={"ports": (*report.ports, LocalPort(
            name=port, port_id=port, oper_up=True, neighbors=(seen,)))})

    extra = [plug(r, "Ethernet9", Port("spine1" if r.device == "leaf1" else "leaf1",
                                         "Ethernet9"))
             if r.device in ("leaf1", "spine1") else r for r in reports]
    (m,) = compare(declared, resolve(extra))
    assert (m.kind, m.entity) == (EXTRA, "leaf1~spine1#2")
    assert m.ports == ("leaf1:Ethernet9", "spine1:Ethernet9")
    # and discovery keeps it, as the pair's second link
    assert "leaf1~spine1#2" in {ln.id for ln in discover(extra).topology.links}


def test_ids_are_normalised_whoever_spelled_them() -> None:
    want = "4c:d9:8f:fb:1e:fe"
    for raw in ("4CD98FFB1EFE", "4c:d9:8f:fb:1e:fe", "4cd9.8ffb.1efe", "4C-D9-8F-FB-1E-FE",
                bytes.fromhex("4cd98ffb1efe")):
        assert normalize_mac(raw) == want
    assert normalize_id(bytes.fromhex("4cd98ffb1efe"), "MAC_ADDRESS") == want
    assert normalize_id(b"ethernet1/1/25", "INTERFACE_NAME") == "ethernet1/1/25"
    assert normalize_id("Ethernet5", "MAC_ADDRESS") == "Ethernet5"   # not a MAC: kept as sent
    assert advertised("Not Advertised") == "" and advertised(" core-1 ") == "core-1"
