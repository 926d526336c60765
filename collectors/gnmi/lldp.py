"""LLDP neighbours over gNMI: what is asked for, one read (a Get, or a ONCE subscription on
targets that serve no Get), and how notifications decode into a
:class:`~pipeline.topology.neighbors.NeighborReport`.

What is read, by the profile's ``lldp.dialect`` (``docs/telemetry-dialects.md``, "LLDP"):

* ``openconfig`` (OpenConfig, Arista EOS, Cumulus): under ``/lldp``, the switch's chassis id (and
  its type) and name, and per interface its neighbours' chassis id, port id, their types, port
  description, system name and description, each leaf asked for by name (wildcard keys), with
  ``/interfaces/interface[name=*]/state/oper-status`` and ``.../ethernet/state/port-speed`` in
  the same request. The answer may be a JSON tree or one
  update per leaf; both decode the same. The neighbour list's key is the target's own (a number,
  or chassis and port ids): it is never interpreted. OpenConfig does not say which port id a
  switch sends; these send their interface name;
* ``sonic``: ``APPL_DB`` ``LLDP_ENTRY_TABLE/*`` (per port with a neighbour, LLDP-MIB subtype
  numbers as strings), ``LLDP_LOC_CHASSIS`` and ``PORT_TABLE/*`` (``oper_status``, ``speed`` in
  Mb/s, and ``alias``: the port id a SONiC switch sends).

The report is stamped with the notifications' own timestamps (the device's clock), else with
the collector's. The running collector's readers (periodic, or an ON_CHANGE stream) are in
:mod:`collectors.gnmi.lldp_readers` and :mod:`collectors.gnmi.lldp_stream`; they decode through
:func:`report_of`, one table's leaves into one report.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

import grpc
from pygnmi.spec.v080 import gnmi_pb2 as pb

from collectors.gnmi.channel import metadata
from collectors.gnmi.subscription import ENCODINGS, parse_path
from collectors.profile import GnmiProfile
from pipeline.errors import CollectorError
from pipeline.inventory import Target
from pipeline.topology.neighbors import (
    LocalPort,
    NeighborReport,
    RemoteEnd,
    advertised,
    chassis_type,
    normalize_id,
    port_type,
)

log = logging.getLogger("rocewatch.collectors.gnmi.lldp")

GET = "/gnmi.gNMI/Get"
SUBSCRIBE = "/gnmi.gNMI/Subscribe"
#: the leaves a report is made of, each asked for by name: ``/lldp`` whole would also bring
#: what changes at every read (a neighbour's ``age`` and ``last-update``, counters), so no two
#: replies would say the same and every one would be decoded
_OC_NEIGHBOR = "/lldp/interfaces/interface[name=*]/neighbors/neighbor[id=*]/state/"
OC_PATHS = (*(f"/lldp/state/{leaf}" for leaf in ("chassis-id", "chassis-id-type", "system-name")),
            *(_OC_NEIGHBOR + leaf for leaf in ("chassis-id", "chassis-id-type", "port-id",
                                                "port-id-type", "port-description",
                                                "system-name", "system-description")),
            "/interfaces/interface[name=*]/state/oper-status",
            "/interfaces/interface[name=*]/ethernet/state/port-speed")
SONIC_PATHS = ("LLDP_ENTRY_TABLE/*", "LLDP_LOC_CHASSIS", "PORT_TABLE/*")
_SPEED = re.compile(r"SPEED_(\d+(?:\.\d+)?)(G|M)B")
#: a path as (element name, sorted keys) pairs, without origin or target
PathKey = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
Leaf = tuple[PathKey, Any]


def requests(profile: GnmiProfile, encoding: str) -> tuple[pb.Path, list[pb.Path]]:
    """The prefix and paths one LLDP read asks for."""
    if profile.lldp.dialect == "sonic":
        return pb.Path(target="APPL_DB"), [parse_path(p) for p in SONIC_PATHS]
    return pb.Path(origin=profile.origin), [parse_path(p) for p in OC_PATHS]


async def read_neighbors(channel: grpc.aio.Channel, target: Target, profile: GnmiProfile,
                         secrets: Any, timeout_s: float = 10.0) -> NeighborReport:
    """One LLDP read of ``target`` over ``channel``."""
    notes = await fetch(channel, profile, secrets, timeout_s)
    return decode_report(target.name, profile, stamp(notes), notes)


async def fetch(channel: grpc.aio.Channel, profile: GnmiProfile, secrets: Any,
                timeout_s: float = 10.0) -> list[pb.Notification]:
    """The notifications of one LLDP read: a Get for ``rpc: get``, else a ONCE subscription (a
    target that streams its LLDP ON_CHANGE serves ONCE on the same paths)."""
    prefix, paths = requests(profile, profile.encoding)
    enc = ENCODINGS[profile.encoding]
    md = metadata(secrets)
    notes: list[pb.Notification] = []
    if profile.lldp.rpc == "get":
        rpc = channel.unary_unary(GET, request_serializer=pb.GetRequest.SerializeToString,
                                  response_deserializer=pb.GetResponse.FromString)
        reply: pb.GetResponse = await rpc(pb.GetRequest(prefix=prefix, path=paths, encoding=enc),
                                          metadata=md, timeout=timeout_s)
        notes = list(reply.notification)
    else:
        sub = channel.stream_stream(SUBSCRIBE,
                                    request_serializer=pb.SubscribeRequest.SerializeToString,
                                    response_deserializer=pb.SubscribeResponse.FromString)
        slist = pb.SubscriptionList(prefix=prefix, mode=pb.SubscriptionList.ONCE, encoding=enc,
                                    subscription=[pb.Subscription(path=p) for p in paths])
        call = sub(iter([pb.SubscribeRequest(subscribe=slist)]), metadata=md, timeout=timeout_s)
        async for resp in call:
            if resp.sync_response:
                break
            if resp.HasField("update"):
                notes.append(resp.update)
    return notes


def stamp(notes: list[pb.Notification]) -> int:
    """The read's time: its newest notification's (the device's clock), else the collector's."""
    return max((n.timestamp for n in notes), default=0) or time.time_ns()


def content_digest(notes: list[pb.Notification]) -> bytes:
    """A digest of what the notifications say, whatever their timestamps (cleared in place:
    take :func:`stamp` first)."""
    h = hashlib.blake2b(digest_size=16)
    for n in notes:
        n.ClearField("timestamp")
        h.update(n.SerializeToString(deterministic=True))
    return h.digest()


def decode_report(device: str, profile: GnmiProfile, ts: int,
                  notes: list[pb.Notification]) -> NeighborReport:
    """The report the notifications of one read make, stamped ``ts``."""
    return report_of(device, profile, ts, [leaf for n in notes for leaf in leaves_of(n)])


def report_of(device: str, profile: GnmiProfile, ts: int, leaves: list[Leaf]) -> NeighborReport:
    """The report a table's leaves make, stamped ``ts`` (a read's, or a stream's table)."""
    if profile.lldp.dialect == "sonic":
        return _sonic_report(device, ts, leaves)
    return _oc_report(device, ts, leaves)


# -- decoding ------------------------------------------------------------------------------------


def scalar(val: pb.TypedValue) -> Any:
    kind = val.WhichOneof("value")
    if kind in ("json_ietf_val", "json_val"):
        try:
            return json.loads(getattr(val, kind))
        except ValueError as exc:
            raise CollectorError(f"an LLDP value is not JSON: {exc}") from exc
    return getattr(val, kind) if kind else None


def elems(path: pb.Path) -> PathKey:
    return tuple((e.name.split(":", 1)[-1], tuple(sorted(e.key.items()))) for e in path.elem)


def leaves_of(note: pb.Notification) -> list[Leaf]:
    """Every leaf of a notification as (path, value); JSON trees are walked into leaves (a list
    entry's key is its ``name`` or ``id``)."""
    out: list[Leaf] = []
    base = elems(note.prefix)
    for u in note.update:
        walk(base + elems(u.path), scalar(u.val), out)
    return out


def walk(path: PathKey, value: Any, out: list[Leaf]) -> None:
    """``value`` at ``path`` as leaves, appended to ``out`` (JSON trees walked)."""
    if isinstance(value, dict):
        for key, child in value.items():
            name = key.split(":", 1)[-1]
            if isinstance(child, list):
                for entry in child:
                    if isinstance(entry, dict):
                        k = next((f for f in ("name", "id") if f in entry), None)
                        keys = ((k, str(entry[k])),) if k else ()
                        walk((*path, (name, keys)), entry, out)
            else:
                walk((*path, (name, ())), child, out)
    else:
        out.append((path, value))


def _speed_bps(text: Any) -> float:
    m = _SPEED.search(str(text))
    if not m:
        return 0.0
    return float(m.group(1)) * (1e9 if m.group(2) == "G" else 1e6)


def _oc_report(device: str, ts: int, leaves: list[Leaf]) -> NeighborReport:
    own: dict[str, Any] = {}
    oper: dict[str, bool | None] = {}
    speed: dict[str, float] = {}
    neighbors: dict[str, dict[str, dict[str, Any]]] = {}
    for path, value in leaves:
        names = [e[0] for e in path]
        if "lldp" in names:
            rest = path[names.index("lldp") + 1:]
            rnames = [e[0] for e in rest]
            if rnames[:1] == ["state"] and len(rest) == 2:
                own[rnames[1]] = value
            elif rnames[:2] == ["interfaces", "interface"] and "neighbor" in rnames \
                    and rnames[-2:-1] == ["state"]:
                intf = dict(rest[1][1]).get("name", "")
                nid = dict(rest[rnames.index("neighbor")][1]).get("id", "")
                neighbors.setdefault(intf, {}).setdefault(nid, {})[rnames[-1]] = value
        elif names[:2] == ["interfaces", "interface"]:
            intf = dict(path[1][1]).get("name", "")
            if names[-2:] == ["state", "oper-status"]:
                oper[intf] = None if value is None else str(value).upper() == "UP"
            elif names[-3:] == ["ethernet", "state", "port-speed"]:
                speed[intf] = _speed_bps(value)
    ports = []
    for name in sorted(set(oper) | set(speed) | set(neighbors)):
        remotes = tuple(_oc_remote(fields) for fields in neighbors.get(name, {}).values()
                        if fields.get("chassis-id") is not None)
        ports.append(LocalPort(name=name, port_id=name, oper_up=oper.get(name),
                               speed_bps=speed.get(name, 0.0), neighbors=remotes))
    chassis_kind = str(own.get("chassis-id-type", ""))
    return NeighborReport(device=device, ts_ns=ts,
                          chassis_id=normalize_id(str(own.get("chassis-id", "")), chassis_kind),
                          system_name=str(own.get("system-name", "")), ports=tuple(ports),
                          source="gnmi/openconfig")


def _oc_remote(f: Mapping[str, Any]) -> RemoteEnd:
    ck, pk = str(f.get("chassis-id-type", "")), str(f.get("port-id-type", ""))
    return RemoteEnd(chassis_id=normalize_id(str(f.get("chassis-id", "")), ck),
                     chassis_id_type=ck,
                     port_id=normalize_id(str(f.get("port-id", "")), pk), port_id_type=pk,
                     port_description=advertised(str(f.get("port-description", ""))),
                     system_name=advertised(str(f.get("system-name", ""))),
                     system_description=advertised(str(f.get("system-description", ""))))


def _table(leaves: list[Leaf], table: str) -> dict[str, dict[str, Any]]:
    """A SONiC table of ports as ``{port: {field: value}}``, from a wildcard path's map
    (``PORT_TABLE/*`` → ``{port: {...}}``) or one port's (``PORT_TABLE/Ethernet4``)."""
    out: dict[str, dict[str, Any]] = {}
    for path, value in leaves:
        names = [e[0] for e in path]
        if table not in names:
            continue
        rest = names[names.index(table) + 1:]
        if len(rest) >= 3 and "*" in rest[0]:
            out.setdefault(rest[1], {})[rest[-1]] = value
        elif len(rest) >= 2 and "*" not in rest[0]:
            out.setdefault(rest[0], {})[rest[-1]] = value
    return out


def _hash(leaves: list[Leaf], table: str) -> dict[str, Any]:
    """A SONiC hash (``LLDP_LOC_CHASSIS``) as ``{field: value}``."""
    out: dict[str, Any] = {}
    for path, value in leaves:
        names = [e[0] for e in path]
        if table in names and names[-1] != table:
            out[names[-1]] = value
    return out


def _sonic_report(device: str, ts: int, leaves: list[Leaf]) -> NeighborReport:
    own = _hash(leaves, "LLDP_LOC_CHASSIS")
    entries = _table(leaves, "LLDP_ENTRY_TABLE")
    ports_table = _table(leaves, "PORT_TABLE")
    ports = []
    for name in sorted(set(entries) | set(ports_table)):
        p = ports_table.get(name, {})
        e = entries.get(name, {})
        remotes: tuple[RemoteEnd, ...] = ()
        if e.get("lldp_rem_chassis_id"):
            ck = chassis_type(str(e.get("lldp_rem_chassis_id_subtype", "")))
            pk = port_type(str(e.get("lldp_rem_port_id_subtype", "")))
            remotes = (RemoteEnd(
                chassis_id=normalize_id(str(e["lldp_rem_chassis_id"]), ck), chassis_id_type=ck,
                port_id=normalize_id(str(e.get("lldp_rem_port_id", "")), pk), port_id_type=pk,
                port_description=advertised(str(e.get("lldp_rem_port_desc", ""))),
                system_name=advertised(str(e.get("lldp_rem_sys_name", ""))),
                system_description=advertised(str(e.get("lldp_rem_sys_desc", "")))),)
        status = str(p.get("oper_status", "")).lower()
        try:
            speed = float(p.get("speed", 0) or 0) * 1e6
        except ValueError:
            speed = 0.0
        ports.append(LocalPort(name=name, port_id=str(p.get("alias") or name),
                               oper_up=None if not status else status == "up",
                               speed_bps=speed, neighbors=remotes))
    kind = chassis_type(str(own.get("lldp_loc_chassis_id_subtype", "")))
    return NeighborReport(device=device, ts_ns=ts,
                          chassis_id=normalize_id(str(own.get("lldp_loc_chassis_id", "")), kind),
                          system_name=str(own.get("lldp_loc_sys_name", "")), ports=tuple(ports),
                          source="gnmi/sonic")
