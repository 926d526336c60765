"""The simulation's index of a topology: every port as an integer, its peer, speed and tier.

A *port* is a switch port or a host NIC. Each port's egress is one *channel* (the direction of a
link leaving that port), so channel ``c`` is port ``c`` sending to ``peer[c]``. Channels sit on one
of six tiers that every up-down path in a Clos of AI zones visits in order, which lets the physics
process a whole tier at once; a path inside a zone skips tiers 2 and 3, a path under one leaf
skips 1 to 4 (a two-tier fabric has no channel on tiers 2 and 3 at all):

====  ======================  =========================================
tier  channel                 example
====  ======================  =========================================
0     host NIC -> leaf        ``host5:nic`` sending to ``leaf2:Ethernet1``
1     leaf -> spine           ``leaf2:Ethernet5``
2     spine -> aggregation    ``z3-spine1:Ethernet193``
3     aggregation -> spine    ``agg2:Ethernet34``
4     spine -> leaf           ``spine1:Ethernet2``
5     leaf -> host            ``leaf2:Ethernet1``
====  ======================  =========================================

Links are numbered fabric links first (topology order), then one per host (named by the host, with
the leaf port as its ``a`` end and the NIC as ``b``). Leaves and spines have a global index
(topology order, zone by zone) and a local one within their zone; ECMP groups use the local one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import LabError
from pipeline.topology.model import AGG, LEAF, SPINE, Port, Topology, parallel_index, port_number

TIER_HOST_UP = 0
TIER_LEAF_UP = 1
TIER_SPINE_UP = 2
TIER_AGG_DOWN = 3
TIER_SPINE_DOWN = 4
TIER_LEAF_DOWN = 5
N_TIERS = 6
N_PRIO = 8
NIC_PORT_NAME = "nic"

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


def sum_by_key(keys: IntArray, weights: FloatArray, minlength: int) -> FloatArray:
    """The weights summed per integer key (``np.bincount`` with weights), typed as the float array
    it returns: how per-entry amounts become per-channel (or per-unit) ones."""
    return np.asarray(np.bincount(keys, weights, minlength=minlength), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Wiring:
    topology: Topology
    switches: tuple[str, ...]
    hosts: tuple[str, ...]
    port_device: IntArray      # device index: switches first, then hosts
    port_name: tuple[str, ...]  # "Ethernet5", or "nic" for a host NIC
    port_number: IntArray      # k of "Ethernet<k>" (the ifIndex); 0 for NICs
    peer: IntArray
    tier: IntArray
    bps: FloatArray            # line rate of the port's egress, bits/s
    port_link: IntArray
    link_ids: tuple[str, ...]
    link_a: IntArray
    link_b: IntArray
    switch_ports: tuple[IntArray, ...]
    host_nic: IntArray         # NIC port per host
    host_leaf: IntArray        # global leaf index per host
    host_leaf_port: IntArray   # the leaf port facing each host
    leaf_uplinks: IntArray     # (leaves, spines per zone * upp): member m = local spine * upp + k
    spine_downlinks: IntArray  # (spines, leaves per zone, upp): [global spine, local leaf, k]
    spine_uplinks: IntArray    # (spines, aggs * agg upp): member m = agg * agg_upp + k
    agg_downlinks: IntArray    # (aggs, spines, agg upp): [agg, global spine, k]
    device_of: dict[str, int]
    port_of: dict[tuple[str, str], int]
    link_of: dict[str, int]
    n_zones: int = 1
    spines_per_zone: int = 0
    leaves_per_zone: int = 0

    @property
    def n_ports(self) -> int:
        return len(self.port_name)

    @property
    def n_links(self) -> int:
        return len(self.link_ids)

    @property
    def n_fabric_links(self) -> int:
        return len(self.topology.links)

    @property
    def n_spines(self) -> int:
        """Every spine of every zone."""
        return len(self.topology.spines)

    @property
    def n_leaves(self) -> int:
        """Every leaf of every zone."""
        return len(self.topology.leaves)

    @property
    def n_aggs(self) -> int:
        return len(self.topology.aggs)

    @property
    def uplinks_per_pair(self) -> int:
        return int(self.spine_downlinks.shape[2])

    @property
    def agg_uplinks_per_spine(self) -> int:
        return int(self.agg_downlinks.shape[2]) if self.agg_downlinks.size else 1

    def leaf_zone(self, leaf: IntArray) -> IntArray:
        """0-based zone of global leaf indices."""
        return np.asarray(leaf // self.leaves_per_zone, dtype=np.int64)

    def leaf_local(self, leaf: IntArray) -> IntArray:
        return np.asarray(leaf % self.leaves_per_zone, dtype=np.int64)

    def zone_spines(self, zone: IntArray) -> IntArray:
        """(k, spines per zone): the global spine indices of each 0-based zone."""
        return np.asarray(zone[:, None] * self.spines_per_zone
                          + np.arange(self.spines_per_zone)[None, :], dtype=np.int64)

    @cached_property
    def leaf_index(self) -> dict[str, int]:
        return {leaf: i for i, leaf in enumerate(self.topology.leaves)}

    @cached_property
    def spine_index(self) -> dict[str, int]:
        return {s: i for i, s in enumerate(self.topology.spines)}

    def device_index(self, name: str) -> int:
        return self.device_of[name]

    def port_index(self, device: str, port: str) -> int:
        return self.port_of[(device, port)]

    def port_label(self, p: int) -> str:
        return f"{self.device_name(int(self.port_device[p]))}:{self.port_name[p]}"

    def device_name(self, d: int) -> str:
        return self.switches[d] if d < len(self.switches) else self.hosts[d - len(self.switches)]

    def link_index(self, link_id: str) -> int:
        return self.link_of[link_id]

    def link_channels(self, link: int) -> tuple[int, int]:
        """The link's two channels: a->b (egress of the a end) and b->a."""
        return int(self.link_a[link]), int(self.link_b[link])

    def is_switch_port(self, p: int) -> bool:
        return int(self.port_device[p]) < len(self.switches)


def build_wiring(topo: Topology) -> Wiring:
    """Index a Clos topology as :class:`~pipeline.topology.shape.FabricShape` builds it (two tiers,
    or AI zones of equal size joined by an aggregation tier)."""
    switches = topo.switches
    hosts = tuple(h.name for h in topo.hosts)
    dev_of = {n: i for i, n in enumerate(switches + hosts)}
    names: list[str] = []
    numbers: list[int] = []
    devices: list[int] = []
    index: dict[Port, int] = {}
    switch_ports: list[IntArray] = []
    for sw in switches:
        mine = []
        for port in topo.ports(sw):
            index[port] = len(names)
            mine.append(len(names))
            names.append(port.name)
            numbers.append(port_number(port.name))
            devices.append(dev_of[sw])
        switch_ports.append(np.asarray(mine, dtype=np.int64))
    host_nic = list(range(len(names), len(names) + len(hosts)))
    names += [NIC_PORT_NAME] * len(hosts)
    numbers += [0] * len(hosts)
    devices += [dev_of[h] for h in hosts]
    n = len(names)
    peer = np.full(n, -1, dtype=np.int64)
    tier = np.full(n, -1, dtype=np.int64)
    bps = np.zeros(n)
    port_link = np.full(n, -1, dtype=np.int64)
    link_ids: list[str] = []
    link_a: list[int] = []
    link_b: list[int] = []
    zones = max(1, len(topo.zones))
    n_sp, n_lf = len(topo.spines) // zones, len(topo.leaves) // zones
    shape = topo.shape
    upp = shape.uplinks_per_pair if shape is not None else max(
        1, len(topo.links) // max(1, len(topo.spines) * len(topo.leaves)))
    aupp = shape.agg_uplinks_per_spine if shape is not None else 1
    leaf_of = {leaf: i for i, leaf in enumerate(topo.leaves)}
    spine_of = {s: i for i, s in enumerate(topo.spines)}
    agg_of = {a: i for i, a in enumerate(topo.aggs)}
    leaf_uplinks = np.full((len(topo.leaves), n_sp * upp), -1, dtype=np.int64)
    spine_downlinks = np.full((len(topo.spines), n_lf, upp), -1, dtype=np.int64)
    spine_uplinks = np.full((len(topo.spines), len(topo.aggs) * aupp), -1, dtype=np.int64)
    agg_downlinks = np.full((len(topo.aggs), len(topo.spines), aupp), -1, dtype=np.int64)
    for li, link in enumerate(topo.links):
        a, b = index[link.a], index[link.b]
        peer[a], peer[b] = b, a
        bps[a] = bps[b] = link.gbps * 1e9
        port_link[a] = port_link[b] = li
        link_ids.append(link.id)
        link_a.append(a)
        link_b.append(b)
        k = parallel_index(link.id) - 1
        ra, rb = topo.role(link.a.device), topo.role(link.b.device)
        if {ra, rb} == {LEAF, SPINE}:
            (lp, ld), (sp, sd) = ((a, link.a.device), (b, link.b.device)) if ra == LEAF else (
                (b, link.b.device), (a, link.a.device))
            tier[lp], tier[sp] = TIER_LEAF_UP, TIER_SPINE_DOWN
            gl, gs = leaf_of[ld], spine_of[sd]
            leaf_uplinks[gl, (gs % n_sp) * upp + k] = lp
            spine_downlinks[gs, gl % n_lf, k] = sp
        elif {ra, rb} == {SPINE, AGG}:
            (sp, sd), (ap, ad) = ((a, link.a.device), (b, link.b.device)) if ra == SPINE else (
                (b, link.b.device), (a, link.a.device))
            tier[sp], tier[ap] = TIER_SPINE_UP, TIER_AGG_DOWN
            gs, ga = spine_of[sd], agg_of[ad]
            spine_uplinks[gs, ga * aupp + k] = sp
            agg_downlinks[ga, gs, k] = ap
        else:
            raise LabError(f"the lab simulates leaf-spine and spine-aggregation links, "
                                   f"not {link.id}")
    host_leaf_port = []
    host_leaf = []
    for hi, host in enumerate(topo.hosts):
        lp, nic = index[host.port], host_nic[hi]
        peer[lp], peer[nic] = nic, lp
        bps[lp] = bps[nic] = host.gbps * 1e9
        tier[lp], tier[nic] = TIER_LEAF_DOWN, TIER_HOST_UP
        port_link[lp] = port_link[nic] = len(link_ids)
        link_ids.append(host.name)
        link_a.append(lp)
        link_b.append(nic)
        host_leaf_port.append(lp)
        host_leaf.append(leaf_of[host.port.device])
    port_of = {(sw, names[p]): p for sw, ports in zip(switches, switch_ports, strict=True)
               for p in ports.tolist()}
    port_of.update({(h, NIC_PORT_NAME): p for h, p in zip(hosts, host_nic, strict=True)})
    return Wiring(
        device_of=dev_of, port_of=port_of, link_of={lid: i for i, lid in enumerate(link_ids)},
        topology=topo, switches=switches, hosts=hosts,
        port_device=np.asarray(devices, dtype=np.int64), port_name=tuple(names),
        port_number=np.asarray(numbers, dtype=np.int64), peer=peer, tier=tier, bps=bps,
        port_link=port_link, link_ids=tuple(link_ids),
        link_a=np.asarray(link_a, dtype=np.int64), link_b=np.asarray(link_b, dtype=np.int64),
        switch_ports=tuple(switch_ports), host_nic=np.asarray(host_nic, dtype=np.int64),
        host_leaf=np.asarray(host_leaf, dtype=np.int64),
        host_leaf_port=np.asarray(host_leaf_port, dtype=np.int64),
        leaf_uplinks=leaf_uplinks, spine_downlinks=spine_downlinks,
        spine_uplinks=spine_uplinks, agg_downlinks=agg_downlinks,
        n_zones=zones, spines_per_zone=n_sp, leaves_per_zone=n_lf,
    )
