"""What each port id is in the fabric: host-facing, fabric link end, or a device-level row.

:class:`PortIndex` extends :class:`~detectors.series.SeriesIndex` with the topology, in arrays
indexed by port id: the kind of port, its line rate (from the topology, else learned from
``if_speed``), the port at the other end of its link, and the switch it is on. Detectors read
them to judge rates against line rate and to pick the ports a rule applies to.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

from detectors.series import SeriesIndex
from pipeline.topology.model import Host, Link, Port, Topology


class PortKind(IntEnum):
    UNKNOWN = 0
    HOST = 1  # a leaf port facing a host NIC
    FABRIC = 2  # one end of a switch-to-switch link
    DEVICE = 3  # a device-level row (collector health, counter resets): no port name


class PortIndex:
    """Topology facts per port id, kept in step with a :class:`SeriesIndex`."""

    def __init__(self, names: SeriesIndex, topology: Topology | None) -> None:
        self.names = names
        self.topology = topology
        self.kind = np.empty(0, np.int8)
        self.line_bps = np.empty(0, np.float64)
        self.peer = np.empty(0, np.int64)
        #: device id of each port
        self.device_id = np.empty(0, np.int64)
        self._by_device: dict[int, NDArray[np.int64]] = {}
        self._synced = 0

    @property
    def n(self) -> int:
        return self._synced

    def sync(self) -> None:
        """Describe the port ids the series index has added since the last call."""
        total = self.names.n_ports
        if total == self._synced:
            return
        new = range(self._synced, total)
        kinds = np.zeros(len(new), np.int8)
        line = np.full(len(new), np.nan)
        for i, pid in enumerate(new):
            device = self.names.device_of(pid)
            name = self.names.port_name[pid]
            if not name:
                kinds[i] = PortKind.DEVICE
                continue
            att = self.topology.attachment(Port(device, name)) if self.topology else None
            if isinstance(att, Link):
                kinds[i] = PortKind.FABRIC
                line[i] = att.gbps * 1e9 if att.gbps else np.nan
            elif isinstance(att, Host):
                kinds[i] = PortKind.HOST
                line[i] = att.gbps * 1e9 if att.gbps else np.nan
        self.kind = np.concatenate([self.kind, kinds])
        self.line_bps = np.concatenate([self.line_bps, line])
        self.peer = np.concatenate([self.peer, np.full(len(new), -1, np.int64)])
        self.device_id = np.asarray(self.names.port_device[:total], np.int64)
        self._by_device.clear()
        self._synced = total
        self._link_peers()

    def _link_peers(self) -> None:
        if self.topology is None:
            return
        for pid in np.flatnonzero((self.kind == PortKind.FABRIC) & (self.peer < 0)):
            port = Port(self.names.device_of(int(pid)), self.names.port_name[int(pid)])
            other = self.topology.peer(port)
            if other is None:
                continue
            opid = self.names.find_port(other.device, other.name)
            if opid is not None and opid < self._synced:
                self.peer[pid] = opid
                self.peer[opid] = pid

    def set_speed(self, pids: NDArray[np.int64], bps: NDArray[np.float64]) -> None:
        """Learn line rates the topology did not give (from ``if_speed`` samples)."""
        ok = np.isfinite(bps) & (bps > 0) & ~np.isfinite(self.line_bps[pids])
        self.line_bps[pids[ok]] = bps[ok]

    def label(self, pid: int) -> str:
        return self.names.port_label(pid)

    def device(self, pid: int) -> str:
        return self.names.device_of(pid)

    def ports_of(self, device: str) -> NDArray[np.int64]:
        """Port ids (with a port name) of one device."""
        did = self.names.find_device(device)
        return np.empty(0, np.int64) if did is None else self.ports_of_id(did)

    def ports_of_id(self, did: int) -> NDArray[np.int64]:
        cached = self._by_device.get(did)
        if cached is None:
            cached = np.flatnonzero((self.device_id == did) &
                                    (self.kind != PortKind.DEVICE)).astype(np.int64)
            self._by_device[did] = cached
        return cached

    def is_switch(self, did: int) -> bool:
        name = self.names.devices[did]
        topo = self.topology
        return name in topo.switches if topo else name.startswith(("leaf", "spine"))
