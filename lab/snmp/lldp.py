"""LLDP-MIB (IEEE 802.1AB-2005, ``1.0.8802.1.1.2``) of a simulated switch, from the fabric's LLDP
state (:mod:`lab.lldp`) in each snapshot.

* ``lldpLocalSystemData`` (``.1.3``): ``lldpLocChassisIdSubtype`` (4, MAC address),
  ``lldpLocChassisId`` (the six octets), ``lldpLocSysName``, ``lldpLocSysDesc``,
  ``lldpLocSysCapSupported`` / ``Enabled`` (bridge and router);
* ``lldpLocPortTable`` (``.1.3.7.1``), index ``lldpLocPortNum`` (the port's ifIndex): the port id
  subtype and port id the switch sends (interface name, or a SONiC switch's alias as a local
  id) and its description;
* ``lldpStatsRemTablesLastChangeTime`` (``.1.2.1.0``): the switch's ``sysUpTime`` when a
  neighbour last came, went or changed (0 when none has since it booted), so a poller can GET it
  beside its clock and walk the table only when it moves;
* ``lldpRemTable`` (``.1.4.1.1``), index ``(lldpRemTimeMark, lldpRemLocalPortNum,
  lldpRemIndex)``: one row per neighbour. The time mark is the switch's ``sysUpTime`` (in
  centiseconds) when the neighbour appeared, so it changes when the neighbour does; the remote
  index is 1 (one neighbour per port). A MAC chassis or port id is its six octets, other ids
  their text.

Rows exist only while the neighbour does: a walk sees neighbours come and go.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pysnmp.proto import rfc1902

from lab import counters as cf
from lab.counters import Layout
from lab.lldp import CAPS_BRIDGE_ROUTER, CAPS_STATION, CHASSIS_SUBTYPE, PORT_SUBTYPE, LldpFabric
from lab.wiring import Wiring

Oid = tuple[int, ...]
Snap = NDArray[np.float64]

LLDP_MIB = (1, 0, 8802, 1, 1, 2)
LOC_SYSTEM = (*LLDP_MIB, 1, 3)
LOC_PORT = (*LOC_SYSTEM, 7, 1)
REM_ENTRY = (*LLDP_MIB, 1, 4, 1, 1)
REM_TABLES_LAST_CHANGE = (*LLDP_MIB, 1, 2, 1, 0)


def _octets(value: str, kind: str) -> bytes:
    """An id as LLDP sends it: a MAC address as six octets, anything else as its text."""
    if kind == "MAC_ADDRESS":
        return bytes(int(b, 16) for b in value.split(":"))
    return value.encode()


class LldpMib:
    """The LLDP-MIB objects of one switch; the neighbour rows are built per snapshot tick."""

    def __init__(self, fabric: LldpFabric, switch: str, wiring: Wiring, layout: Layout) -> None:
        self.fabric = fabric
        self.switch = switch
        self.layout = layout
        self.device = wiring.device_index(switch)
        self.ports = wiring.switch_ports[self.device].tolist()
        self.ifindex = {p: int(wiring.port_number[p]) for p in self.ports}
        local: dict[Oid, Any] = {
            (*LOC_SYSTEM, 1, 0): rfc1902.Integer32(CHASSIS_SUBTYPE["MAC_ADDRESS"]),
            (*LOC_SYSTEM, 2, 0): rfc1902.OctetString(
                _octets(fabric.chassis(self.device), "MAC_ADDRESS")),
            (*LOC_SYSTEM, 3, 0): rfc1902.OctetString(switch),
            (*LOC_SYSTEM, 4, 0): rfc1902.OctetString(fabric.description(self.device)),
            (*LOC_SYSTEM, 5, 0): rfc1902.OctetString(CAPS_BRIDGE_ROUTER),
            (*LOC_SYSTEM, 6, 0): rfc1902.OctetString(CAPS_BRIDGE_ROUTER),
        }
        for p in self.ports:
            k = self.ifindex[p]
            port_id, kind = fabric.local_port_id(p)
            local[(*LOC_PORT, 2, k)] = rfc1902.Integer32(PORT_SUBTYPE[kind])
            local[(*LOC_PORT, 3, k)] = rfc1902.OctetString(_octets(port_id, kind))
            local[(*LOC_PORT, 4, k)] = rfc1902.OctetString(fabric.port_description(p))
        self._local = local
        self._tick = -1
        self._oids: list[Oid] = []
        self._values: list[Any] = []

    def _rows(self, snap: Snap) -> tuple[list[Oid], list[Any]]:
        tick = int(snap[cf.H_TICK])
        if tick == self._tick:
            return self._oids, self._values
        rows = dict(self._local)
        boot = float(snap[self.layout.dev_index(self.device, cf.D_BOOT_S)])
        rows[REM_TABLES_LAST_CHANGE] = self._last_change(snap)
        for p, nb in self.fabric.neighbors(self.switch, snap).items():
            a = nb.advert
            mark = int(max(nb.since_s - boot, 0.0) * 100) % 2**32
            index = (mark, self.ifindex[p], 1)
            caps = CAPS_STATION if a.station else CAPS_BRIDGE_ROUTER
            for col, value in (
                    (4, rfc1902.Integer32(CHASSIS_SUBTYPE[a.chassis_id_type])),
                    (5, rfc1902.OctetString(_octets(a.chassis_id, a.chassis_id_type))),
                    (6, rfc1902.Integer32(PORT_SUBTYPE[a.port_id_type])),
                    (7, rfc1902.OctetString(_octets(a.port_id, a.port_id_type))),
                    (8, rfc1902.OctetString(a.port_description)),
                    (9, rfc1902.OctetString(a.system_name)),
                    (10, rfc1902.OctetString(a.system_description)),
                    (11, rfc1902.OctetString(caps)), (12, rfc1902.OctetString(caps))):
                rows[(*REM_ENTRY, col, *index)] = value
        self._oids = sorted(rows)
        self._values = [rows[o] for o in self._oids]
        self._tick = tick
        return self._oids, self._values

    def _last_change(self, snap: Snap) -> rfc1902.TimeTicks:
        boot = float(snap[self.layout.dev_index(self.device, cf.D_BOOT_S)])
        changed = self.fabric.table_changed_s(self.switch, snap)
        return rfc1902.TimeTicks(int(max(changed - boot, 0.0) * 100) % 2**32)

    def get(self, oid: Oid, snap: Snap) -> Any | None:
        if oid == REM_TABLES_LAST_CHANGE:
            # read with every poll: answered without building the neighbour rows
            return self._last_change(snap)
        oids, values = self._rows(snap)
        i = bisect.bisect_left(oids, oid)
        return values[i] if i < len(oids) and oids[i] == oid else None

    def next(self, oid: Oid, snap: Snap) -> tuple[Oid, Any] | None:
        oids, values = self._rows(snap)
        i = bisect.bisect_right(oids, oid)
        return (oids[i], values[i]) if i < len(oids) else None
