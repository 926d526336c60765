"""The fabric's topology built from what its devices say over LLDP.

Two steps, each the one rule for what it does:

* :func:`resolve` turns the devices' reports (:class:`~pipeline.topology.neighbors.NeighborReport`)
  into *sightings*: for every port of every reporting device, the far port it shows, named the way
  the far device names it. A neighbour is matched to a reporting device by its chassis id, then by
  its system name (with or without a domain); its port id to the far device's port by the port id
  that device says it sends (a SONiC switch sends its alias, ``etp5``, which its ``PORT_TABLE``
  maps to ``Ethernet5``; LLDP-MIB's ``lldpLocPortTable`` does the same), then by name. A neighbour
  that reports nothing itself (a host, a switch outside the inventory) keeps its system name and,
  for a port id that is a MAC address, its port description.
* :func:`discover` builds a :class:`~pipeline.topology.model.Topology` from them: roles from the
  inventory's labels or else the names (``leaf``/``spine``/``agg``/``host``,
  :mod:`pipeline.topology.names`), zones from labels or names; switch pairs seen over several
  ports are parallel links numbered by the first switch's port order; links and hosts in the order
  :mod:`pipeline.topology.shape` builds them, and, when the fabric is regular, its compact shape.
  A link one end shows and the other end contradicts is left out (a conflict, reported); one that
  only one end shows is kept (and reported).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pipeline.errors import ConfigError
from pipeline.topology.model import AGG, HOST, LEAF, SPINE, Host, Link, Port, Topology
from pipeline.topology.names import link_id, natural_key, parse_name, port_number
from pipeline.topology.neighbors import (
    MAC,
    NAMED_PORT_TYPES,
    NeighborReport,
    RemoteEnd,
    short_name,
)
from pipeline.topology.shape import FabricShape

SWITCH_ROLES = (LEAF, SPINE, AGG)


@dataclass(frozen=True)
class Sighting:
    """What one local port shows: the far port (None: no neighbour), its state and speed."""

    port: Port
    far: Port | None
    oper_up: bool | None = None
    speed_bps: float = 0.0
    remote: RemoteEnd | None = None


@dataclass(frozen=True)
class Resolved:
    """Every port of every reporting device and what it shows."""

    sightings: dict[Port, Sighting]
    reported: frozenset[str]

    def seen_from(self, port: Port) -> Sighting | None:
        return self.sightings.get(port)


def resolve(reports: Iterable[NeighborReport]) -> Resolved:
    """The sightings of the latest report of each device (see the module docstring)."""
    latest: dict[str, NeighborReport] = {}
    for r in reports:
        if r.device not in latest or r.ts_ns >= latest[r.device].ts_ns:
            latest[r.device] = r
    by_chassis = {r.chassis_id: d for d, r in latest.items() if r.chassis_id}
    by_name: dict[str, str] = {}
    for d, r in latest.items():
        for name in (d, short_name(d), r.system_name, short_name(r.system_name)):
            if name:
                by_name.setdefault(name, d)
    port_ids: dict[str, dict[str, str]] = {
        d: {p.port_id: p.name for p in r.ports if p.port_id} for d, r in latest.items()}
    names: dict[str, set[str]] = {d: {p.name for p in r.ports} for d, r in latest.items()}
    out: dict[Port, Sighting] = {}
    for d, r in latest.items():
        for p in r.ports:
            local = Port(d, p.name)
            remote = p.neighbors[0] if p.neighbors else None
            far = None if remote is None else _far(remote, by_chassis, by_name, port_ids, names)
            out[local] = Sighting(local, far, p.oper_up, p.speed_bps, remote)
    return Resolved(out, frozenset(latest))


def _far(remote: RemoteEnd, by_chassis: Mapping[str, str], by_name: Mapping[str, str],
         port_ids: Mapping[str, Mapping[str, str]], names: Mapping[str, set[str]]) -> Port:
    device = (by_chassis.get(remote.chassis_id) or by_name.get(remote.system_name)
              or by_name.get(short_name(remote.system_name)))
    if device is not None:
        port = port_ids[device].get(remote.port_id)
        if port is None and remote.port_id in names[device]:
            port = remote.port_id
        if port is not None:
            return Port(device, port)
    else:
        device = short_name(remote.system_name) or remote.chassis_id
    named = remote.port_id_type in NAMED_PORT_TYPES or not remote.port_description
    return Port(device, remote.port_id if named and remote.port_id_type != MAC
                else remote.port_description or remote.port_id)


@dataclass(frozen=True)
class Hints:
    """What the inventory says about devices whose names may not: roles and zones."""

    roles: Mapping[str, str] = field(default_factory=dict)
    zones: Mapping[str, int] = field(default_factory=dict)

    def role(self, device: str) -> str | None:
        if self.roles.get(device) in (*SWITCH_ROLES, HOST):
            return self.roles[device]
        parsed = parse_name(device)
        return parsed.role if parsed is not None else None


@dataclass(frozen=True)
class Discovery:
    """A topology from LLDP, and what did not fit in it."""

    topology: Topology
    #: links only one end shows (the other shows nothing, or does not report)
    one_sided: tuple[str, ...] = ()
    #: sightings the far end contradicts (``a:p sees b:q, b:q sees c:r``): left out
    conflicts: tuple[str, ...] = ()
    #: devices seen whose role neither a label nor the name gives: left out
    unplaced: tuple[str, ...] = ()


def discover(reports: Iterable[NeighborReport], hints: Hints | None = None) -> Discovery:
    """The topology the reports describe (see the module docstring)."""
    hints = hints or Hints()
    res = resolve(reports)
    pairs: dict[frozenset[Port], set[Port]] = {}
    conflicts: list[str] = []
    for s in res.sightings.values():
        if s.far is None:
            continue
        back = res.sightings.get(s.far)
        if back is not None and back.far is not None and back.far != s.port:
            conflicts.append(f"{s.port} sees {s.far}, which sees {back.far}")
            continue
        pairs.setdefault(frozenset((s.port, s.far)), set()).add(s.port)
    switch_pairs: dict[tuple[str, str], list[tuple[Port, Port]]] = {}
    hosts: list[Host] = []
    unplaced: set[str] = set()
    one_sided: list[tuple[Port, Port]] = []
    for key, sides in pairs.items():
        x, y = sorted(key)
        rx, ry = hints.role(x.device), hints.role(y.device)
        for port, role in ((x, rx), (y, ry)):
            if role is None:
                unplaced.add(port.device)
        if rx is None or ry is None:
            continue
        if rx in SWITCH_ROLES and ry in SWITCH_ROLES:
            a, b = sorted((x, y), key=lambda p: p.device)
            switch_pairs.setdefault((a.device, b.device), []).append((a, b))
            if len(sides) == 1:
                one_sided.append((a, b))
        elif {rx, ry} == {LEAF, HOST}:
            leaf_port, host = (x, y) if rx == LEAF else (y, x)
            seen = res.sightings.get(leaf_port)
            hosts.append(Host(host.device, leaf_port,
                              (seen.speed_bps if seen else 0.0) / 1e9))
    links: list[Link] = []
    one_sided_ids: list[str] = []
    for (da, db), ends in switch_pairs.items():
        ends.sort(key=lambda e: (port_number(e[0].name), e[0].name))
        for k, (a, b) in enumerate(ends, start=1):
            lid = link_id(da, db, k)
            links.append(Link(lid, a, b, _gbps(res, a, b)))
            if (a, b) in one_sided:
                one_sided_ids.append(lid)
    roles = {d: hints.role(d) for pair in switch_pairs for d in pair}
    roles.update({h.port.device: LEAF for h in hosts})
    spines = _sorted(d for d, r in roles.items() if r == SPINE)
    leaves = _sorted(d for d, r in roles.items() if r == LEAF)
    aggs = _sorted(d for d, r in roles.items() if r == AGG)
    links.sort(key=lambda ln: _link_order(ln, roles))
    hosts.sort(key=lambda h: natural_key(h.name))
    zone_of = {d: int(z) for d, z in hints.zones.items() if d in roles}
    topo = Topology(spines=spines, leaves=leaves, hosts=tuple(hosts), links=tuple(links),
                    aggs=aggs, zone_of=zone_of)
    return Discovery(_with_shape(topo), tuple(sorted(one_sided_ids)), tuple(sorted(conflicts)),
                     tuple(sorted(unplaced, key=natural_key)))


def _gbps(res: Resolved, a: Port, b: Port) -> float:
    for end in (a, b):
        s = res.sightings.get(end)
        if s is not None and s.speed_bps > 0:
            return s.speed_bps / 1e9
    return 0.0


def _sorted(devices: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(devices), key=natural_key))


def _link_order(link: Link, roles: Mapping[str, str | None]) -> tuple[object, ...]:
    """The shape builder's order: leaf-spine links zone by zone, leaf by leaf, spine by spine,
    parallel link; then spine-aggregation links spine by spine, aggregation switch, parallel
    link; anything else after, by name."""
    ends = {roles.get(link.a.device): link.a.device, roles.get(link.b.device): link.b.device}
    k = int(link.id.partition("#")[2] or 1)
    if set(ends) == {LEAF, SPINE}:
        return (0, natural_key(ends[LEAF]), natural_key(ends[SPINE]), k)
    if set(ends) == {SPINE, AGG}:
        return (1, natural_key(ends[SPINE]), natural_key(ends[AGG]), k)
    return (2, natural_key(link.a.device), natural_key(link.b.device), k)


def _with_shape(topo: Topology) -> Topology:
    """The topology with its compact shape when the fabric is a regular one the shape builder
    makes exactly (the same names, ports, links and speeds); else as it is."""
    try:
        shape = _infer_shape(topo)
    except (ConfigError, ValueError, KeyError, ZeroDivisionError):
        return topo
    if shape is None:
        return topo
    try:
        built = shape.build()
    except ConfigError:
        return topo
    return built if built == topo else topo


def _infer_shape(topo: Topology) -> FabricShape | None:
    if not topo.leaves or not topo.spines or topo.zone_of:
        return None
    zones = topo.zones
    spines = {z: [s for s in topo.spines if topo.zone(s) == z] for z in zones}
    leaves = {z: [leaf for leaf in topo.leaves if topo.zone(leaf) == z] for z in zones}
    first = zones[0]
    hpl = len(topo.host_ports(topo.leaves[0]))
    upp = len(topo.links_between(leaves[first][0], spines[first][0]))
    aggs = len(topo.aggs)
    aupp = len(topo.links_between(topo.aggs[0], spines[first][0])) if aggs else 1
    ls_links = [ln for ln in topo.links if {topo.role(ln.a.device), topo.role(ln.b.device)}
                == {LEAF, SPINE}]
    agg_links = [ln for ln in topo.links if AGG in (topo.role(ln.a.device),
                                                     topo.role(ln.b.device))]
    if not ls_links or not topo.hosts or upp < 1:
        return None
    link_gbps = ls_links[0].gbps
    agg_gbps = agg_links[0].gbps if agg_links else None
    return FabricShape(len(spines[first]), len(leaves[first]), hpl, upp, link_gbps,
                       topo.hosts[0].gbps, len(zones), aggs, aupp,
                       None if agg_gbps in (None, link_gbps) else agg_gbps)
