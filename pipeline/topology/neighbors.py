"""What a device says about its LLDP neighbours: the observation collectors make, the bus carries
(:mod:`pipeline.wire.neighbors`) and the store keeps (:mod:`pipeline.store.neighbors`), and the
rules that read its fields the same way whoever reported them.

A :class:`NeighborReport` is one device's LLDP table at one instant of its own clock: its chassis
id and name, and per local port the port id it sends, its operational state and speed (read in
the same request, so a port that is down explains a missing neighbour), and the neighbours it
shows. Observations are data like samples: event time is the device's.

Normalisation, applied by every reader through :func:`normalize_id`:

* a MAC address (chassis or port id of that type) is lower-case colon form, ``4c:d9:8f:fb:1e:fe``,
  however it came (six octets over SNMP, ``4CD98FFB1EFE``, ``4cd9.8ffb.1efe``, ``4c-d9-...``);
* id types are OpenConfig's enumeration names (``openconfig-lldp-types``); LLDP-MIB's numbers
  map onto them (:func:`chassis_type`, :func:`port_type`);
* a TLV the device says it did not receive (Dell OS10 answers ``Not Advertised``) is empty.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

#: LldpChassisIdSubtype and LldpPortIdSubtype (LLDP-MIB) → OpenConfig's names
CHASSIS_TYPES = {1: "CHASSIS_COMPONENT", 2: "INTERFACE_ALIAS", 3: "PORT_COMPONENT",
                 4: "MAC_ADDRESS", 5: "NETWORK_ADDRESS", 6: "INTERFACE_NAME", 7: "LOCAL"}
PORT_TYPES = {1: "INTERFACE_ALIAS", 2: "PORT_COMPONENT", 3: "MAC_ADDRESS", 4: "NETWORK_ADDRESS",
              5: "INTERFACE_NAME", 6: "AGENT_CIRCUIT_ID", 7: "LOCAL"}
MAC = "MAC_ADDRESS"
#: a port id the sending device assigned itself: only its own report says which port it is
LOCAL = "LOCAL"
#: what devices answer for a TLV their neighbour did not send
NOT_ADVERTISED = frozenset({"not advertised", "not-advertised", "n/a"})
#: id types whose value names a port the far device also knows by that text
NAMED_PORT_TYPES = frozenset({"INTERFACE_NAME", "INTERFACE_ALIAS", "LOCAL", ""})

_HEX12 = re.compile(r"^[0-9a-fA-F]{12}$")
_SEPARATED = re.compile(r"^[0-9a-fA-F]{1,2}([:\-. ][0-9a-fA-F]{1,2}){5}$")
_DOTTED = re.compile(r"^[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}$")


class RemoteEnd(BaseModel):
    """One neighbour a port shows: what it sent about itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chassis_id: str
    chassis_id_type: str = ""
    port_id: str
    port_id_type: str = ""
    port_description: str = ""
    system_name: str = ""
    system_description: str = ""


class LocalPort(BaseModel):
    """One port of the reporting device: what it sends, its state, and what it sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    #: the port id this device sends on the port ("" when the device does not say)
    port_id: str = ""
    #: operationally up, down, or not known
    oper_up: bool | None = None
    speed_bps: float = Field(0.0, ge=0)
    neighbors: tuple[RemoteEnd, ...] = ()


class NeighborReport(BaseModel):
    """One device's LLDP table at ``ts_ns`` (the device's clock)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    ts_ns: int
    chassis_id: str = ""
    system_name: str = ""
    ports: tuple[LocalPort, ...] = ()
    #: who read it and how: ``gnmi/openconfig``, ``gnmi/sonic``, ``snmp``
    source: str = ""
    #: read from an ON_CHANGE stream, or read whenever the table changes (an SNMP target whose
    #: polls watch ``lldpStatsRemTablesLastChangeTime``): every change is reported as it
    #: happens, so the table holds from ``ts_ns`` until the device's next report. False: a
    #: periodic read, a snapshot known at ``ts_ns`` only
    streamed: bool = False

    def port(self, name: str) -> LocalPort | None:
        return next((p for p in self.ports if p.name == name), None)


def normalize_mac(value: str | bytes) -> str | None:
    """A MAC address in lower-case colon form, or None when ``value`` is not one."""
    if isinstance(value, bytes):
        if len(value) != 6:
            return None
        return ":".join(f"{b:02x}" for b in value)
    text = value.strip()
    if _HEX12.match(text):
        digits = text
    elif _DOTTED.match(text):
        digits = text.replace(".", "")
    elif _SEPARATED.match(text):
        digits = "".join(part.zfill(2) for part in re.split(r"[:\-. ]", text))
    else:
        return None
    digits = digits.lower()
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def normalize_id(value: str | bytes, id_type: str) -> str:
    """A chassis or port id as every reader spells it: MAC addresses normalised, text as sent
    (octets that are not text as lower-case hex)."""
    if id_type == MAC:
        mac = normalize_mac(value)
        if mac is not None:
            return mac
    if isinstance(value, bytes):
        try:
            return value.decode().strip()
        except UnicodeDecodeError:
            return value.hex()
    return value.strip()


def advertised(text: str) -> str:
    """A TLV's text, or "" when the device says it was not advertised."""
    clean = text.strip()
    return "" if clean.lower() in NOT_ADVERTISED else clean


def chassis_type(number: int | str) -> str:
    """OpenConfig's name of an LLDP-MIB chassis id subtype ("" when unknown)."""
    try:
        return CHASSIS_TYPES.get(int(number), "")
    except ValueError:
        return ""


def port_type(number: int | str) -> str:
    """OpenConfig's name of an LLDP-MIB port id subtype ("" when unknown)."""
    try:
        return PORT_TYPES.get(int(number), "")
    except ValueError:
        return ""


def short_name(name: str) -> str:
    """A system name without its domain (``leaf1.pod2.example.net`` → ``leaf1``)."""
    return name.split(".", 1)[0]


class NeighborChange(BaseModel):
    """What one port shows from ``ts_ns`` on: a neighbour (``present``) or none any more. The
    store keeps one row per change (:mod:`pipeline.store.neighbors`), so the fabric at time T has
    the neighbours of time T."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ts_ns: int
    device: str
    port: str
    present: bool
    chassis_id: str = ""
    chassis_id_type: str = ""
    port_id: str = ""
    port_id_type: str = ""
    port_description: str = ""
    system_name: str = ""

    @classmethod
    def of(cls, ts_ns: int, device: str, port: LocalPort) -> NeighborChange:
        """What ``port`` of a report shows (its first neighbour; ports rarely have two)."""
        if not port.neighbors:
            return cls(ts_ns=ts_ns, device=device, port=port.name, present=False)
        n = port.neighbors[0]
        return cls(ts_ns=ts_ns, device=device, port=port.name, present=True,
                   chassis_id=n.chassis_id, chassis_id_type=n.chassis_id_type,
                   port_id=n.port_id, port_id_type=n.port_id_type,
                   port_description=n.port_description, system_name=n.system_name)

    def same_as(self, other: NeighborChange) -> bool:
        """The same neighbour (or the same absence), whenever it was seen."""
        return self.model_dump(exclude={"ts_ns"}) == other.model_dump(exclude={"ts_ns"})
