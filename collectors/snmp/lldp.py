"""LLDP neighbours over SNMP: the LLDP-MIB (IEEE 802.1AB-2005, ``1.0.8802.1.1.2``) walked into a
:class:`~pipeline.topology.neighbors.NeighborReport`.

One read GETs ``lldpLocChassisIdSubtype``, ``lldpLocChassisId`` and ``lldpLocSysName``, and walks
``lldpLocPortTable`` (``lldpLocPortIdSubtype``, ``lldpLocPortId``: what each port sends),
``lldpRemTable`` (chassis id subtype and id, port id subtype and id, port description, system
name and description), with IF-MIB's ``ifName`` (``ifDescr`` on devices without it),
``ifOperStatus`` and ``ifHighSpeed`` in the same walk.

``lldpRemTable`` is indexed ``(lldpRemTimeMark, lldpRemLocalPortNum, lldpRemIndex)``; a row
indexed by the local port number alone (SONiC's snmpagent) is read the same way.
``lldpRemLocalPortNum`` is an ``lldpLocPortNum``, which is *not* always the ifIndex (Dell OS10
numbers its ports 4, 516, 520... against ifIndex 10, 13, 14...): a local port is named by its
``lldpLocPortId`` when that is one of the device's interface names, else by the ifName of that
number, else by the id itself; its state and speed come from the interface of that name.
"""

from __future__ import annotations

from collections.abc import Mapping

from collectors.snmp.ber import NO_SUCH_INSTANCE, NO_SUCH_OBJECT, NUMERIC, oid_bytes, subids
from collectors.snmp.client import SnmpClient
from collectors.snmp.walk import Rows, walk_columns
from pipeline.topology.neighbors import (
    LocalPort,
    NeighborReport,
    RemoteEnd,
    advertised,
    chassis_type,
    normalize_id,
    port_type,
)

LLDP = "1.0.8802.1.1.2.1"
#: lldpStatsRemTablesLastChangeTime: sysUpTime when a remote table row was last created,
#: modified or deleted (a TimeStamp; one GET tells whether the table needs reading)
REM_TABLES_LAST_CHANGE = oid_bytes(f"{LLDP}.2.1.0")
LOC_CHASSIS_SUBTYPE = oid_bytes(f"{LLDP}.3.1.0")
LOC_CHASSIS_ID = oid_bytes(f"{LLDP}.3.2.0")
LOC_SYS_NAME = oid_bytes(f"{LLDP}.3.3.0")
LOC_PORT_SUBTYPE = oid_bytes(f"{LLDP}.3.7.1.2")
LOC_PORT_ID = oid_bytes(f"{LLDP}.3.7.1.3")
#: lldpRemTable columns read, by column number
REM = {col: oid_bytes(f"{LLDP}.4.1.1.{col}") for col in (4, 5, 6, 7, 8, 9, 10)}
IF_NAME = oid_bytes("1.3.6.1.2.1.31.1.1.1.1")
IF_DESCR = oid_bytes("1.3.6.1.2.1.2.2.1.2")
IF_OPER = oid_bytes("1.3.6.1.2.1.2.2.1.8")
IF_HIGH_SPEED = oid_bytes("1.3.6.1.2.1.31.1.1.1.15")
COLUMNS = (LOC_PORT_SUBTYPE, LOC_PORT_ID, *REM.values(), IF_NAME, IF_DESCR, IF_OPER,
           IF_HIGH_SPEED)


def _text(value: int | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace").strip("\x00").strip()
    return "" if value is None else str(value)


def _by_index(rows: Rows) -> dict[tuple[int, ...], int | bytes | None]:
    return {subids(index): value for index, tag, value in rows
            if tag not in (NO_SUCH_OBJECT, NO_SUCH_INSTANCE)}


def _ints(rows: Rows) -> dict[int, int]:
    return {subids(i)[0]: int(v) for i, tag, v in rows
            if tag in NUMERIC and isinstance(v, int) and len(subids(i)) == 1}


async def read_neighbors(client: SnmpClient, device: str, ts_ns: int, max_repetitions: int = 50,
                         columns_per_request: int = 4) -> NeighborReport:
    """One LLDP read of a device (``ts_ns``: the device's time of the read)."""
    scalars = await client.get([LOC_CHASSIS_SUBTYPE, LOC_CHASSIS_ID, LOC_SYS_NAME])
    found = {oid: value for oid, tag, value in scalars
             if tag not in (NO_SUCH_OBJECT, NO_SUCH_INSTANCE)}
    walked = (await walk_columns(client, COLUMNS, max_repetitions, columns_per_request)).rows
    subtype = found.get(LOC_CHASSIS_SUBTYPE)
    kind = chassis_type(subtype) if isinstance(subtype, int) else ""
    raw_chassis = found.get(LOC_CHASSIS_ID)
    chassis = normalize_id(raw_chassis, kind) if isinstance(raw_chassis, bytes) else ""
    names = {i[0]: _text(v) for i, v in _by_index(walked[IF_NAME]).items() if len(i) == 1}
    if not names:
        names = {i[0]: _text(v) for i, v in _by_index(walked[IF_DESCR]).items() if len(i) == 1}
    ifindex = {name: i for i, name in names.items() if name}
    oper = _ints(walked[IF_OPER])
    speed = _ints(walked[IF_HIGH_SPEED])
    loc_kind = {i[0]: port_type(int(v)) for i, v in _by_index(walked[LOC_PORT_SUBTYPE]).items()
                if isinstance(v, int) and len(i) == 1}
    loc_id: dict[int, str] = {}
    for i, v in _by_index(walked[LOC_PORT_ID]).items():
        if len(i) == 1 and isinstance(v, bytes):
            loc_id[i[0]] = normalize_id(v, loc_kind.get(i[0], ""))
    remotes = _remotes(walked)
    ports: list[LocalPort] = []
    for num in sorted(set(loc_id) | set(remotes)):
        name = _port_name(num, loc_id.get(num, ""), names, ifindex)
        k = ifindex.get(name)
        status = oper.get(k) if k is not None else None
        ports.append(LocalPort(
            name=name, port_id=loc_id.get(num, ""),
            oper_up=None if status is None else status == 1,
            speed_bps=float(speed.get(k, 0)) * 1e6 if k is not None else 0.0,
            neighbors=tuple(remotes.get(num, ()))))
    return NeighborReport(device=device, ts_ns=ts_ns, chassis_id=chassis,
                          system_name=_text(found.get(LOC_SYS_NAME)), ports=tuple(ports),
                          source="snmp")


def _port_name(num: int, port_id: str, names: Mapping[int, str],
               ifindex: Mapping[str, int]) -> str:
    if port_id and port_id in ifindex:
        return port_id
    return names.get(num) or port_id or str(num)


def _remotes(walked: dict[bytes, Rows]) -> dict[int, list[RemoteEnd]]:
    """lldpRemTable's rows by local port number."""
    cols = {col: _by_index(walked[oid]) for col, oid in REM.items()}
    out: dict[int, list[RemoteEnd]] = {}
    for index in sorted(cols[5]):               # a row exists when it has a chassis id
        local = index[1] if len(index) >= 3 else index[0]
        ck = chassis_type(_num(cols[4].get(index)))
        pk = port_type(_num(cols[6].get(index)))
        chassis, port = cols[5].get(index), cols[7].get(index)
        if not isinstance(chassis, bytes):
            continue
        out.setdefault(local, []).append(RemoteEnd(
            chassis_id=normalize_id(chassis, ck), chassis_id_type=ck,
            port_id=normalize_id(port, pk) if isinstance(port, bytes) else "",
            port_id_type=pk,
            port_description=advertised(_text(cols[8].get(index))),
            system_name=advertised(_text(cols[9].get(index))),
            system_description=advertised(_text(cols[10].get(index)))))
    return out


def _num(value: int | bytes | None) -> int:
    return value if isinstance(value, int) else 0
