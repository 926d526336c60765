"""The simulation's index of a topology: every port as an integer, its peer, speed and tier.

A *port* is a switch port or a host NIC. Each port's egress is one *channel* (the direction of a
link leaving that port), so channel ``c`` is port ``c`` sending to ``peer[c]``. Channels sit on one
of four tiers that every up-down path in a two-tier Clos visits in order, which lets the physics
process a whole tier at once:

====  ==================  ===================================
tier  channel             example
====  ==================  ===================================
0     host NIC -> leaf    ``host5:nic`` sending to ``leaf2:Ethernet1``
1     leaf -> spine       ``leaf2:Ethernet5``
2     spine -> leaf       ``spine1:Ethernet2``
3     leaf -> host        ``leaf2:Ethernet1``
====  ==================  ===================================

Links are numbered fabric links first (topology order), then one per host (named by the host, with
the leaf port as its ``a`` end and the NIC as ``b``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pipeline.topology.model import Port, Topology

TIER_HOST_UP = 0
TIER_LEAF_UP = 1
TIER_SPINE_DOWN = 2
TIER_LEAF_DOWN = 3
N_TIERS = 4
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
    host_leaf: IntArray        # leaf index (0-based among leaves) per host
    host_leaf_port: IntArray   # the leaf port facing each host
    leaf_uplinks: IntArray     # (leaves, spines * uplinks_per_pair): member m = spine * upp + k
    spine_downlinks: IntArray  # (spines, leaves, uplinks_per_pair)
    device_of: dict[str, int]
    port_of: dict[tuple[str, str], int]
    link_of: dict[str, int]

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
        return len(self.topology.spines)

    @property
    def n_leaves(self) -> int:
        return len(self.topology.leaves)

    @property
    def uplinks_per_pair(self) -> int:
        return int(self.spine_downlinks.shape[2])

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
    """Index a spine-leaf topology (as built by :func:`pipeline.topology.model.spine_leaf`)."""
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
            numbers.append(int("".join(ch for ch in port.name if ch.isdigit()) or 0))
            devices.append(dev_of[sw])
        switch_ports.append(np.asarray(mine, dtype=np.int64))
    host_nic = []
    for h in hosts:
        host_nic.append(len(names))
        names.append(NIC_PORT_NAME)
        numbers.append(0)
        devices.append(dev_of[h])
    n = len(names)
    peer = np.full(n, -1, dtype=np.int64)
    tier = np.full(n, -1, dtype=np.int64)
    bps = np.zeros(n)
    port_link = np.full(n, -1, dtype=np.int64)
    link_ids: list[str] = []
    link_a: list[int] = []
    link_b: list[int] = []
    spine_set = set(topo.spines)
    for li, link in enumerate(topo.links):
        a, b = index[link.a], index[link.b]
        peer[a], peer[b] = b, a
        bps[a] = bps[b] = link.gbps * 1e9
        port_link[a] = port_link[b] = li
        for p, dev in ((a, link.a.device), (b, link.b.device)):
            tier[p] = TIER_SPINE_DOWN if dev in spine_set else TIER_LEAF_UP
        link_ids.append(link.id)
        link_a.append(a)
        link_b.append(b)
    leaf_of = {leaf: i for i, leaf in enumerate(topo.leaves)}
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
    upp = max(1, len(topo.links) // max(1, len(topo.spines) * len(topo.leaves)))
    leaf_uplinks = np.full((len(topo.leaves), len(topo.spines) * upp), -1, dtype=np.int64)
    spine_downlinks = np.full((len(topo.spines), len(topo.leaves), upp), -1, dtype=np.int64)
    spine_of = {s: i for i, s in enumerate(topo.spines)}
    for link in topo.links:
        k = int(link.id.split("#")[1]) - 1 if "#" in link.id else 0
        leaf_end, spine_end = (link.a, link.b) if link.a.device in leaf_of else (link.b, link.a)
        li, si = leaf_of[leaf_end.device], spine_of[spine_end.device]
        leaf_uplinks[li, si * upp + k] = index[leaf_end]
        spine_downlinks[si, li, k] = index[spine_end]
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
    )
