"""The fabric as the read side walks it: switches in groups (AI zones, the aggregation tier), every
connected switch port in one array, and which switches an entity touches.

Built once per topology (:func:`index_of` keeps the last one) so that rolling health up, ranking
81,920 ports or drawing a pause tree costs array lookups, not walks over the topology's objects.

Groups: a three-tier fabric is its zones ``z1..zN`` and the aggregation tier ``agg``; a two-tier
fabric is one group, ``fabric`` (its spines and leaves). A group lists its switches in topology
order (aggregation switches, spines, leaves; by number).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from pipeline.topology.model import Topology
from pipeline.topology.names import AGG, port_number, zone_name
from ui.query.views import GroupKind

#: the group of a fabric of one zone, and of the aggregation tier
FABRIC, AGGREGATION = "fabric", "agg"


@dataclass(frozen=True)
class Group:
    """Switches shown together: one AI zone, the aggregation tier, or a whole two-tier fabric."""

    id: str
    kind: GroupKind
    zone: int | None
    switches: tuple[int, ...]
    hosts: int


@dataclass(frozen=True)
class FabricIndex:
    """Arrays over the topology's switches and connected ports (see the module doc)."""

    topology: Topology
    switches: tuple[str, ...]
    roles: tuple[str, ...]
    group_of: tuple[str, ...]
    groups: tuple[Group, ...]
    #: per connected switch port: its switch (index), name, entity, peer switch (-1: a host)
    port_switch: NDArray[np.int32]
    port_names: tuple[str, ...]
    port_entities: tuple[str, ...]
    port_peer: NDArray[np.int32]
    port_gbps: NDArray[np.float64]
    switch_idx: dict[str, int] = field(repr=False)
    port_idx: dict[tuple[str, str], int] = field(repr=False)

    @property
    def tiers(self) -> int:
        return self.topology.tiers

    def group(self, gid: str) -> Group | None:
        return next((g for g in self.groups if g.id == gid), None)

    def port_label(self, i: int) -> str:
        return f"{self.switches[self.port_switch[i]]}:{self.port_names[i]}"

    @cached_property
    def switch_ports(self) -> dict[int, NDArray[np.int64]]:
        """Per switch, its connected ports' indexes in port order."""
        order = np.argsort(self.port_switch, kind="stable")
        bounds = np.searchsorted(self.port_switch[order], np.arange(len(self.switches) + 1))
        return {s: order[bounds[s]:bounds[s + 1]] for s in range(len(self.switches))}

    @cached_property
    def label_entity(self) -> dict[str, str]:
        """``device:port`` → the link or host on it."""
        return {self.port_label(i): e for i, e in enumerate(self.port_entities)}

    @cached_property
    def entity_ports(self) -> dict[str, tuple[int, ...]]:
        """Per link or host, the ports it owns (a link's two ends, a host's leaf port)."""
        out: dict[str, list[int]] = {}
        for i, entity in enumerate(self.port_entities):
            out.setdefault(entity, []).append(i)
        return {k: tuple(v) for k, v in out.items()}

    def switches_of(self, entity: str) -> tuple[int, ...]:
        """The switches an entity touches: a switch itself, a link's two ends, a host's leaf, a
        port's switch; () for a name the fabric does not have."""
        s = self.switch_idx.get(entity)
        if s is not None:
            return (s,)
        ports = self.entity_ports.get(entity)
        if ports is not None:
            return tuple(dict.fromkeys(int(self.port_switch[i]) for i in ports))
        device, sep, name = entity.partition(":")
        if sep and (device, name) in self.port_idx:
            return (self.switch_idx[device],)
        return ()


def build_index(topology: Topology) -> FabricIndex:
    switches = topology.switches
    switch_idx = {s: i for i, s in enumerate(switches)}
    roles = tuple(topology.role(s) or "other" for s in switches)
    zoned = topology.tiers == 3
    group_of = tuple(
        AGGREGATION if role == AGG else (zone_name(topology.zone(s) or 1) if zoned else FABRIC)
        for s, role in zip(switches, roles, strict=True))
    hosts_per_group: dict[str, int] = {}
    for host in topology.hosts:
        leaf = switch_idx.get(host.port.device)
        if leaf is not None:
            gid = group_of[leaf]
            hosts_per_group[gid] = hosts_per_group.get(gid, 0) + 1
    members: dict[str, list[int]] = {}
    for i, gid in enumerate(group_of):
        members.setdefault(gid, []).append(i)
    groups = []
    if zoned:
        groups.append(Group(AGGREGATION, "aggregation", None,
                            tuple(members.get(AGGREGATION, ())), 0))
        groups.extend(Group(zone_name(z), "zone", z, tuple(members.get(zone_name(z), ())),
                            hosts_per_group.get(zone_name(z), 0)) for z in topology.zones)
    else:
        groups.append(Group(FABRIC, "fabric", 1, tuple(range(len(switches))),
                            len(topology.hosts)))
    ports: list[tuple[int, str, str, int, float]] = []
    for link in topology.links:
        a, b = switch_idx.get(link.a.device, -1), switch_idx.get(link.b.device, -1)
        ports.append((a, link.a.name, link.id, b, link.gbps))
        ports.append((b, link.b.name, link.id, a, link.gbps))
    ports.extend((switch_idx.get(h.port.device, -1), h.port.name, h.name, -1, h.gbps)
                 for h in topology.hosts)
    ports = [p for p in ports if p[0] >= 0]
    ports.sort(key=lambda p: (p[0], port_number(p[1]), p[1]))
    port_idx = {(switches[p[0]], p[1]): i for i, p in enumerate(ports)}
    return FabricIndex(
        topology=topology, switches=switches, roles=roles, group_of=group_of,
        groups=tuple(groups),
        port_switch=np.array([p[0] for p in ports], np.int32),
        port_names=tuple(p[1] for p in ports), port_entities=tuple(p[2] for p in ports),
        port_peer=np.array([p[3] for p in ports], np.int32),
        port_gbps=np.array([p[4] for p in ports], np.float64),
        switch_idx=switch_idx, port_idx=port_idx)


_last: tuple[Topology, FabricIndex] | None = None
_lock = threading.Lock()


def index_of(topology: Topology) -> FabricIndex:
    """The index of ``topology``, reused while the platform's topology is the same object."""
    global _last
    with _lock:
        if _last is not None and _last[0] is topology:
            return _last[1]
    index = build_index(topology)
    with _lock:
        _last = (topology, index)
    return index
