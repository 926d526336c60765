"""What every simulated device says over LLDP (IEEE 802.1AB), as a function of simulated time.

Every switch and every host runs an LLDP agent on each of its ports; the agents of a switch serve
what its neighbours sent them (OpenConfig ``/lldp``, SONiC's ``LLDP_ENTRY_TABLE``, LLDP-MIB: see
``docs/telemetry-dialects.md``). What a port sends:

* **chassis id**: the device's base MAC (:func:`chassis_mac`, subtype MAC address); **system name**
  the device's name; **system description** the device's kind;
* **port id**: a switch sends its interface name (subtype interface name, ``Ethernet5``), except a
  SONiC switch, which sends its port alias (subtype local, ``etp5``: SONiC's lldpmgrd has lldpd
  advertise the alias, and its ``APPL_DB`` ``PORT_TABLE`` says which port that is); a host's NIC
  sends its MAC (subtype MAC address) with the description ``eth0``, as lldpd on Linux does;
* **port description**: a switch port's cable, the link id (the ifAlias the agents serve).

A port shows the neighbour at its cable's far end while it is operationally up and the far end
is too (an agent drops what it learnt when its port goes down, as 802.1AB's receive machine does).
The two topology faults change only this, never the wiring the simulation runs:

* ``miswired_cable`` (target L, ``swap_with`` M): the far (``b``) ends of the two cables trade
  places, so L's ``a`` end sees M's ``b`` end and the other way round, and M's ``a`` end sees L's
  ``b`` end;
* ``lldp_neighbor_drop`` (target L, ``side`` a | b | both): that end of L (or both) shows no
  neighbour while the link carries traffic (the far agent stopped sending on that port, or its
  frames are filtered).

A neighbour's **age** runs from the latest of the two ports' last state change and the last fault
boundary that touched them, so the state is a pure function of the snapshot (nothing is kept
between requests): ``lldpRemTimeMark`` and OpenConfig's ``age`` are honest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from lab import counters as cf
from lab.counters import Layout
from lab.scenario.spec import Scenario
from lab.wiring import Wiring
from pipeline.kinds import FAULT_LLDP_NEIGHBOR_DROP, FAULT_MISWIRED_CABLE

#: seconds an advertisement is valid (802.1AB's default msgTxHold 4 x msgTxInterval 30)
TTL_S = 120
TX_INTERVAL_S = 30
SONIC = "sonic"
HOST_PORT_DESCRIPTION = "eth0"
#: LLDP-MIB's numbering of OpenConfig's chassis and port id types (LldpChassisIdSubtype,
#: LldpPortIdSubtype)
CHASSIS_SUBTYPE = {"CHASSIS_COMPONENT": 1, "INTERFACE_ALIAS": 2, "PORT_COMPONENT": 3,
                   "MAC_ADDRESS": 4, "NETWORK_ADDRESS": 5, "INTERFACE_NAME": 6, "LOCAL": 7}
PORT_SUBTYPE = {"INTERFACE_ALIAS": 1, "PORT_COMPONENT": 2, "MAC_ADDRESS": 3, "NETWORK_ADDRESS": 4,
                "INTERFACE_NAME": 5, "AGENT_CIRCUIT_ID": 6, "LOCAL": 7}
#: LldpSystemCapabilitiesMap (BITS, bit 0 the first octet's high bit): bridge (2) and router (4)
#: for a switch, station only (7) for a host
CAPS_BRIDGE_ROUTER = bytes([0x28, 0x00])
CAPS_STATION = bytes([0x01, 0x00])


_SWITCH_OUI, _HOST_OUI, _NIC_OUI = (0x02, 0x72, 0x77), (0x02, 0x68, 0x6F), (0x02, 0x6E, 0x63)


def _mac(head: tuple[int, int, int], device: int) -> str:
    octets = (*head, (device >> 16) & 0xFF, (device >> 8) & 0xFF, device & 0xFF)
    return ":".join(f"{b:02x}" for b in octets)


def chassis_mac(device: int, host: bool = False) -> str:
    """A device's base MAC: locally administered, ``02:72:77`` for switches (``02:68:6f`` for
    hosts), then the device's index."""
    return _mac(_HOST_OUI if host else _SWITCH_OUI, device)


def nic_mac(host_device: int) -> str:
    """A host NIC's MAC (one NIC per host): ``02:6e:63`` and the host's device index."""
    return _mac(_NIC_OUI, host_device)


def port_alias(port_name: str) -> str:
    """A SONiC port's alias: ``Ethernet5`` is ``etp5``."""
    digits = "".join(ch for ch in port_name if ch.isdigit())
    return f"etp{digits}" if digits else port_name


@dataclass(frozen=True)
class Advert:
    """What one port's LLDP agent sends (the TLVs the platform reads). Types are OpenConfig's
    enumeration names (``openconfig-lldp-types``)."""

    chassis_id: str
    chassis_id_type: str
    system_name: str
    system_description: str
    port_id: str
    port_id_type: str
    port_description: str
    #: sent by an end station (a host), not a bridge
    station: bool = False


@dataclass(frozen=True)
class Seen:
    """A neighbour a port shows: what it sent, and since when (simulated seconds)."""

    advert: Advert
    since_s: float


class LldpFabric:
    """The LLDP state of every device of one simulated fabric."""

    def __init__(self, scenario: Scenario, wiring: Wiring, layout: Layout,
                 dialects: Mapping[str, str]) -> None:
        self.scenario = scenario
        self.w = wiring
        self.layout = layout
        self.dialects = dict(dialects)
        self._faults = [f for f in scenario.faults
                        if f.kind in (FAULT_MISWIRED_CABLE, FAULT_LLDP_NEIGHBOR_DROP)]
        self._cache: dict[tuple[str, int], tuple[dict[int, Seen], float]] = {}

    # -- what a device sends -----------------------------------------------------------------

    def is_host(self, device: int) -> bool:
        return device >= len(self.w.switches)

    def device_name(self, device: int) -> str:
        w = self.w
        return w.switches[device] if device < len(w.switches) else \
            w.hosts[device - len(w.switches)]

    def chassis(self, device: int) -> str:
        return chassis_mac(device, host=self.is_host(device))

    def description(self, device: int) -> str:
        if self.is_host(device):
            return f"Linux {self.device_name(device)} (rocewatch lab host, lldpd)"
        name = self.device_name(device)
        return f"rocewatch lab simulated RoCE switch {name} ({self.dialects.get(name, 'snmp')})"

    def local_port_id(self, port: int) -> tuple[str, str]:
        """``(port id, its OpenConfig type)`` a port sends."""
        w = self.w
        device = int(w.port_device[port])
        if self.is_host(device):
            return nic_mac(device), "MAC_ADDRESS"
        name = w.port_name[port]
        if self.dialects.get(w.switches[device]) == SONIC:
            return port_alias(name), "LOCAL"
        return name, "INTERFACE_NAME"

    def port_description(self, port: int) -> str:
        w = self.w
        if self.is_host(int(w.port_device[port])):
            return HOST_PORT_DESCRIPTION
        return w.link_ids[int(w.port_link[port])]

    @cached_property
    def adverts(self) -> tuple[Advert, ...]:
        """What each port sends, by port index."""
        out = []
        for p in range(self.w.n_ports):
            device = int(self.w.port_device[p])
            port_id, port_type = self.local_port_id(p)
            out.append(Advert(self.chassis(device), "MAC_ADDRESS", self.device_name(device),
                              self.description(device), port_id, port_type,
                              self.port_description(p), self.is_host(device)))
        return tuple(out)

    # -- what a switch shows -----------------------------------------------------------------

    def neighbors(self, switch: str, snap: NDArray[np.float64]) -> dict[int, Seen]:
        """The neighbour each port of ``switch`` shows in this snapshot, by port index (ports
        that show none are absent)."""
        return self._view(switch, snap)[0]

    def table_changed_s(self, switch: str, snap: NDArray[np.float64]) -> float:
        """When (simulated seconds) a neighbour of ``switch`` last came, went or changed: the
        latest state change of any of its cabled ports, their far ends and the topology faults
        touching them (0.0 when none since the start)."""
        return self._view(switch, snap)[1]

    def _view(self, switch: str, snap: NDArray[np.float64]) -> tuple[dict[int, Seen], float]:
        key = (switch, int(snap[cf.H_TICK]))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if len(self._cache) > 4096:
            self._cache.clear()
        t = float(snap[cf.H_TIME])
        faces, dropped, changed = self._state(t)
        lay = self.layout
        out: dict[int, Seen] = {}
        latest = 0.0
        for p in self.w.switch_ports[self.w.device_index(switch)].tolist():
            far = faces.get(p, int(self.w.peer[p]))
            if far < 0:
                continue
            since = min(max(float(snap[lay.port_index(p, cf.P_LAST_CHANGE)]),
                            float(snap[lay.port_index(far, cf.P_LAST_CHANGE)]),
                            changed.get(p, 0.0), 0.0), t)
            latest = max(latest, since)
            if p in dropped or not (self._up(snap, p) and self._up(snap, far)):
                continue
            out[p] = Seen(self.adverts[far], since)
        self._cache[key] = (out, latest)
        return out, latest

    def _up(self, snap: NDArray[np.float64], port: int) -> bool:
        return bool(round(float(snap[self.layout.port_index(port, cf.P_OPER)])) == cf.OPER_UP)

    def _state(self, t: float) -> tuple[dict[int, int], set[int], dict[int, float]]:
        """At simulated time ``t``: who faces whom where a miswire moved a cable, the ports that
        show no neighbour, and when each touched port's state last changed."""
        w = self.w
        faces: dict[int, int] = {}
        dropped: set[int] = set()
        changed: dict[int, float] = {}
        duration = self.scenario.duration_s
        for f in self._faults:
            link = w.link_index(f.target)
            ends = [int(w.link_a[link]), int(w.link_b[link])]
            if f.kind == FAULT_MISWIRED_CABLE:
                other = w.link_index(str(f.params["swap_with"]))
                ends += [int(w.link_a[other]), int(w.link_b[other])]
            last = max((b for b in (f.at_s, f.end_s(duration)) if b <= t + 1e-9), default=None)
            if last is not None:
                for p in ends:
                    changed[p] = max(changed.get(p, 0.0), last)
            if not f.active(t, duration):
                continue
            if f.kind == FAULT_MISWIRED_CABLE:
                x, y = ends[0], ends[2]
                bx, by = faces.get(x, int(w.peer[x])), faces.get(y, int(w.peer[y]))
                faces.update({x: by, by: x, y: bx, bx: y})
            else:
                side = str(f.params["side"])
                dropped.update(p for p, s in zip(ends, ("a", "b"), strict=True)
                               if side in (s, "both"))
        return faces, dropped, changed
